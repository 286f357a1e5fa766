/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Zone delete and a zone import's commit as writer units (admin.h), for
 * the API's DELETE /zones/{id} and the command's `zone delete` and `zone
 * import`.
 *
 * An import's commit goes through the connection the import was begun on
 * (the records API binds it there): it runs on the writer thread alone
 * between two batches (writer_run_alone()), while that connection is
 * otherwise idle, so a large zone's parsing, done before in the caller's
 * thread, never holds up other writes.
 */
#include <libknot/errcode.h>

#include "admin/admin.h"
#include "common/error.h"

static int delete_unit(records_store_t *rs, void *ctx)
{
	records_zone_t *zone = ctx;
	int ret = records_zone_get(rs, zone->id, zone);
	return ret == ZC_EOK ? records_zone_remove(rs, zone) : ret;
}

int admin_zone_delete(writer_t *w, records_zone_t *zone, uint64_t *seq)
{
	if (w == NULL || zone == NULL || seq == NULL) {
		return KNOT_EINVAL;
	}
	return writer_run_seq(w, delete_unit, zone, seq);
}

typedef struct {
	records_import_t *imp;   /* NULL once handed to the commit. */
	uint64_t *seq;
	records_zone_t *zone;
} commit_t;

static int commit_unit(records_store_t *rs, void *ctx)
{
	(void)rs; /* The import commits through its own connection. */
	commit_t *c = ctx;
	records_import_t *imp = c->imp;
	c->imp = NULL;
	return records_import_commit(imp, c->seq, c->zone);
}

int admin_zone_import_commit(writer_t *w, records_import_t *imp,
                             uint64_t *seq, records_zone_t *zone)
{
	if (w == NULL || imp == NULL || seq == NULL || zone == NULL) {
		records_import_abort(imp);
		return KNOT_EINVAL;
	}
	commit_t c = { .imp = imp, .seq = seq, .zone = zone };
	int ret = writer_run_alone(w, commit_unit, &c);
	records_import_abort(c.imp); /* Never committed (refused). */
	return ret;
}
