/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zone import and zone delete as administrative writes (admin.h).
 *
 * An import reads and checks the zone file in the caller's thread (the
 * server's control thread, or the command), collecting it in memory
 * (records_import_t); only its commit, one transaction that replaces the
 * zone's records and logs zone_imported, runs on the writer thread, alone
 * between two batches (writer_run_alone()), so a large zone's parsing
 * never holds up other writes. The commit goes through the connection the
 * import was begun on (the records API binds it there); the writer thread
 * runs it while that connection is otherwise idle.
 *
 * Request fields: zone-import {"zone", "path" (the name in messages),
 * "include_dir" (for relative $INCLUDE), "quiet"} and the file's
 * descriptor; zone-delete {"zone"}.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "cli/admin.h"
#include "cli/zone_load.h"
#include "common/error.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *field(const json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

/* The import's commit, on the writer thread (writer_run_alone()). */
typedef struct {
	records_import_t *imp;   /* NULL once handed to the commit. */
	uint64_t seq;
	records_zone_t zone;
} commit_t;

static int commit_unit(records_store_t *rs, void *ctx)
{
	(void)rs; /* The import commits through its own connection. */
	commit_t *c = ctx;
	records_import_t *imp = c->imp;
	c->imp = NULL;
	return records_import_commit(imp, &c->seq, &c->zone);
}

/* Reads and checks the file into imp; says why not. */
static int load(admin_t *a, records_import_t *imp, const uint8_t *apex,
                const json_t *req, int fd, bool progress, uint64_t *records)
{
	const char *name = field(req, "zone");
	zone_source_t src = {
		.fd = fd,
		.name = field(req, "path") ? field(req, "path") : "-",
		.include_dir = field(req, "include_dir"),
	};
	int problems = zone_load(imp, apex, &src, a->err, progress, records);
	if (problems == 0) {
		return ZC_EOK;
	}
	fprintf(a->err, "zonecast: zone %s not imported, nothing changed\n",
	        name);
	return problems < 0 ? problems : ZC_EZONEFILE;
}

/* Commits the loaded import and makes it served; says how it went. */
static int store_and_build(admin_t *a, commit_t *c, const uint8_t *apex,
                           const char *name, bool progress, bool quiet,
                           uint64_t records)
{
	double start = now_s();
	zone_load_phase(progress, records, "storing");
	int ret = writer_run_alone(a->writer, commit_unit, c);
	zone_load_phase(progress, records, NULL);
	records_import_abort(c->imp); /* Never committed (refused). */
	double stored = now_s();
	builder_stats_t stats = { 0 };
	char why[EDGE_QUARANTINE_REASON_MAX + 64] = "";
	if (ret == ZC_EOK) {
		admin_change_t change = {
			.apex = apex, .zone_id = (uint64_t)c->zone.id,
			.version = c->zone.serial, .seq = c->seq,
		};
		cli_progress_t building;
		cli_progress_begin(&building, progress, "building", records);
		ret = admin_settle(a, &change, &stats, progress ? &building : NULL,
		                   why, sizeof(why));
		cli_progress_set(&building, stats.records);
		cli_progress_end(&building);
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: import of %s failed: %s\n", name,
		        why[0] ? why : zc_strerror(ret));
	} else if (!quiet) {
		fprintf(a->err, "zone %s: %llu records, serial %u, stored in "
		        "%.2f s, built in %.2f s\n", c->zone.name,
		        (unsigned long long)records, c->zone.serial,
		        stored - start, now_s() - stored);
	}
	return ret;
}

int admin_zone_import(admin_t *a, const json_t *req, int fd)
{
	const char *name = field(req, "zone");
	bool quiet = json_is_true(json_object_get(req, "quiet"));
	bool progress = a->progress && !quiet;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (name == NULL || knot_dname_from_str(apex, name, sizeof(apex)) ==
	    NULL) {
		fprintf(a->err, "zonecast: invalid zone name '%s'\n",
		        name ? name : "");
		return ZC_EUSAGE;
	}
	knot_dname_to_lower(apex);
	if (fd < 0) {
		fprintf(a->err, "zonecast: zone import of %s: no zone file came "
		        "with the request\n", name);
		return ZC_EUSAGE;
	}
	records_set_max_records(a->rs, a->max_records);
	commit_t c = { 0 };
	int ret = records_import_begin(a->rs, apex, &c.imp);
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: cannot start the import: %s\n",
		        zc_strerror(ret));
		return ret;
	}
	uint64_t records = 0;
	ret = load(a, c.imp, apex, req, fd, progress, &records);
	if (ret != ZC_EOK) {
		records_import_abort(c.imp);
		return ret;
	}
	return store_and_build(a, &c, apex, name, progress, quiet, records);
}

/* --- zone delete --- */

typedef struct {
	records_zone_t zone;
	uint64_t seq;
} delete_t;

static int delete_unit(records_store_t *rs, void *ctx)
{
	delete_t *d = ctx;
	int ret = records_zone_get(rs, d->zone.id, &d->zone);
	return ret == ZC_EOK ? records_zone_remove(rs, &d->zone, &d->seq) : ret;
}

int admin_zone_delete(admin_t *a, const json_t *req)
{
	const char *name = field(req, "zone");
	delete_t d;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = name != NULL && knot_dname_from_str(apex, name, sizeof(apex)) ?
	          ZC_EOK : ZC_EUSAGE;
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: invalid zone name '%s'\n",
		        name ? name : "");
		return ret;
	}
	knot_dname_to_lower(apex);
	ret = records_zone_find(a->rs, apex, &d.zone);
	if (ret == ZC_EOK) {
		ret = writer_run(a->writer, delete_unit, &d);
	}
	if (ret == ZC_ENOZONE) {
		fprintf(a->err, "zonecast: no zone %s\n", name);
		return ret;
	}
	char why[EDGE_QUARANTINE_REASON_MAX + 64] = "";
	if (ret == ZC_EOK) {
		/* Off the edge now, as the old version of the zone would be. */
		admin_change_t change = {
			.apex = apex, .zone_id = (uint64_t)d.zone.id, .seq = d.seq,
			.deleted = true,
		};
		ret = admin_settle(a, &change, NULL, NULL, why, sizeof(why));
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: delete failed: %s\n",
		        why[0] ? why : zc_strerror(ret));
		return ret;
	}
	fprintf(a->out, "zone %s deleted\n", d.zone.name);
	return ZC_EOK;
}
