/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tsig create and tsig delete as administrative writes (admin.h): the
 * same units as the API's TSIG key endpoints run (records_tsig_create(),
 * records_tsig_delete()). The secret is printed once, at creation, on the
 * command's stdout.
 *
 * Request fields: tsig-create {"name", "zone", "algorithm", "grants"
 * (space-separated), "transfer", "format": "bind" | "knot"}; tsig-delete
 * {"name"}.
 */
#include <string.h>
#include <libknot/dname.h>

#include "cli/admin.h"
#include "common/error.h"
#include "dns/tsig_key.h"

static const char *field(const json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

typedef struct {
	int64_t zone_id;
	const char *name, *algorithm, *grants;
	bool transfer;
	records_tsig_key_t key;
	char err[300];
} create_t;

static int create_unit(records_store_t *rs, void *ctx)
{
	create_t *c = ctx;
	return records_tsig_create(rs, c->zone_id, c->name, c->algorithm,
	                           c->grants, c->transfer, &c->key, c->err,
	                           sizeof(c->err));
}

/* The key as the operator asked to see it. */
static int format_key(const create_t *c, bool knot_format, char *text,
                      size_t size)
{
	if (!knot_format) {
		return dns_tsig_key_format(c->key.name, c->key.algorithm,
		                           c->key.secret, c->key.secret_len, text,
		                           size);
	}
	char secret[256];
	int ret = dns_tsig_secret_b64(c->key.secret, c->key.secret_len, secret,
	                              sizeof(secret));
	snprintf(text, size, "%s:%s:%s\n", c->key.algorithm, c->name, secret);
	return ret;
}

int admin_tsig_create(admin_t *a, const json_t *req)
{
	create_t c = {
		.name = field(req, "name"), .algorithm = field(req, "algorithm"),
		.grants = field(req, "grants") ? field(req, "grants") : "",
		.transfer = !json_is_false(json_object_get(req, "transfer")),
	};
	const char *format = field(req, "format");
	records_zone_t zone;
	if (c.name == NULL) {
		fprintf(a->err, "zonecast tsig create: no key name\n");
		return ZC_EUSAGE;
	}
	int ret = admin_find_zone(a, "tsig", field(req, "zone"), &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	c.zone_id = zone.id;
	ret = writer_run(a->writer, create_unit, &c);
	char text[512];
	if (ret == ZC_EOK) {
		ret = format_key(&c, format != NULL && strcmp(format, "knot") == 0,
		                 text, sizeof(text));
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast tsig create: %s\n",
		        c.err[0] ? c.err : zc_strerror(ret));
		return ret;
	}
	fputs(text, a->out);
	return ZC_EOK;
}

typedef struct {
	int64_t id;
} delete_t;

static int delete_unit(records_store_t *rs, void *ctx)
{
	const delete_t *d = ctx;
	return records_tsig_delete(rs, 0, d->id);
}

int admin_tsig_delete(admin_t *a, const json_t *req)
{
	const char *name = field(req, "name");
	uint8_t wire[KNOT_DNAME_MAXLEN];
	records_tsig_key_t key;
	if (name == NULL || knot_dname_from_str(wire, name, sizeof(wire)) ==
	    NULL || records_tsig_find(a->rs, wire, &key) != ZC_EOK) {
		fprintf(a->err, "zonecast tsig delete: no key %s\n",
		        name ? name : "");
		return ZC_ENOKEY;
	}
	delete_t d = { .id = key.id };
	int ret = writer_run(a->writer, delete_unit, &d);
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast tsig delete: %s\n", zc_strerror(ret));
	}
	return ret;
}
