/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG key create and delete as writer units (admin.h), for the API's
 * /zones/{id}/tsig_keys and the command's `tsig create` and `tsig
 * delete`. The key's checks (name, algorithm, grants) and its secret are
 * records_tsig_create()'s (records/tsig_create.c).
 */
#include <libknot/errcode.h>

#include "admin/admin.h"
#include "common/error.h"

typedef struct {
	int64_t zone_id;
	const char *name, *algorithm, *grants;
	bool transfer;
	records_tsig_key_t *key;
	char *err;
	size_t err_size;
} create_t;

static int create_unit(records_store_t *rs, void *ctx)
{
	const create_t *c = ctx;
	c->err[0] = '\0'; /* Afresh: the writer may run it twice. */
	return records_tsig_create(rs, c->zone_id, c->name, c->algorithm,
	                           c->grants, c->transfer, c->key, c->err,
	                           c->err_size);
}

int admin_tsig_create(writer_t *w, int64_t zone_id, const char *name,
                      const char *algorithm, const char *grants,
                      bool transfer, records_tsig_key_t *key, char *err,
                      size_t err_size)
{
	if (w == NULL || name == NULL || key == NULL || err == NULL ||
	    err_size == 0) {
		return KNOT_EINVAL;
	}
	err[0] = '\0';
	create_t c = {
		.zone_id = zone_id, .name = name, .algorithm = algorithm,
		.grants = grants != NULL ? grants : "", .transfer = transfer,
		.key = key, .err = err, .err_size = err_size,
	};
	return writer_run(w, create_unit, &c);
}

typedef struct {
	int64_t zone_id, id;
} delete_t;

static int delete_unit(records_store_t *rs, void *ctx)
{
	const delete_t *d = ctx;
	return records_tsig_delete(rs, d->zone_id, d->id);
}

int admin_tsig_delete(writer_t *w, int64_t zone_id, int64_t id)
{
	if (w == NULL) {
		return KNOT_EINVAL;
	}
	if (id <= 0) {
		return ZC_ENOKEY;
	}
	delete_t d = { .zone_id = zone_id, .id = id };
	return writer_run(w, delete_unit, &d);
}
