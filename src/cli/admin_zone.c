/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zone import and zone delete as administrative writes (admin.h).
 *
 * An import reads and checks the zone file in the caller's thread (the
 * server's control thread, or the command), collecting it in memory
 * (records_import_t); only its commit, one transaction that replaces the
 * zone's records and logs zone_imported, runs on the writer thread, alone
 * between two batches (admin_zone_import_commit()), so a large zone's
 * parsing never holds up other writes. The deletion is admin/'s unit
 * (admin_zone_delete()), as the API's DELETE /zones/{id}.
 *
 * Request fields: zone-import {"zone", "path" (the name in messages),
 * "include_dir" (for relative $INCLUDE), "quiet"} and the file's
 * descriptor; zone-delete {"zone"}.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "cli/admin.h"
#include "cli/zone_load.h"
#include "common/error.h"
#include "dns/name_text.h"

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

static bool abandoned(void *ctx)
{
	return admin_abandoned(ctx);
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
		.abandoned = abandoned, .abandoned_ctx = a,
	};
	int problems = zone_load(imp, apex, &src, a->err, progress, records);
	if (problems == 0 && !admin_abandoned(a)) {
		return ZC_EOK; /* Read whole, and still wanted: committed. */
	}
	if (problems == 0 || problems == -ECANCELED) {
		return -ECANCELED; /* Said by admin_abandoned(). */
	}
	fprintf(a->err, "zonecast: zone %s not imported, nothing changed\n",
	        name);
	return problems < 0 ? problems : ZC_EZONEFILE;
}

/* Commits the loaded import and makes it served; says how it went. */
static int store_and_build(admin_t *a, records_import_t *imp,
                           const uint8_t *apex, const char *name,
                           bool progress, bool quiet, uint64_t records)
{
	double start = now_s();
	zone_load_phase(progress, records, "storing");
	uint64_t seq = 0;
	records_zone_t zone;
	int ret = admin_zone_import_commit(a->writer, imp, &seq, &zone);
	zone_load_phase(progress, records, NULL);
	double stored = now_s();
	builder_stats_t stats = { 0 };
	char why[EDGE_QUARANTINE_REASON_MAX + 64] = "";
	if (ret == ZC_EOK) {
		admin_change_t change = {
			.apex = apex, .zone_id = (uint64_t)zone.id,
			.version = zone.serial, .seq = seq,
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
		        "%.2f s, built in %.2f s\n", zone.name,
		        (unsigned long long)records, zone.serial,
		        stored - start, now_s() - stored);
	}
	return ret;
}

int admin_cmd_zone_import(admin_t *a, const json_t *req, int fd)
{
	const char *name = field(req, "zone");
	bool quiet = json_is_true(json_object_get(req, "quiet"));
	bool progress = a->progress && !quiet;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	if (name == NULL || dns_name_from_text(apex, name, sizeof(apex)) ==
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
	records_import_t *imp = NULL;
	int ret = records_import_begin(a->rs, apex, &imp);
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: cannot start the import: %s\n",
		        zc_strerror(ret));
		return ret;
	}
	uint64_t records = 0;
	ret = load(a, imp, apex, req, fd, progress, &records);
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	return store_and_build(a, imp, apex, name, progress, quiet, records);
}

/* --- zone delete --- */

int admin_cmd_zone_delete(admin_t *a, const json_t *req)
{
	const char *name = field(req, "zone");
	records_zone_t zone;
	uint64_t seq = 0;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = name != NULL && dns_name_from_text(apex, name, sizeof(apex)) ?
	          ZC_EOK : ZC_EUSAGE;
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: invalid zone name '%s'\n",
		        name ? name : "");
		return ret;
	}
	knot_dname_to_lower(apex);
	ret = records_zone_find(a->rs, apex, &zone);
	if (ret == ZC_EOK) {
		ret = admin_zone_delete(a->writer, &zone, &seq);
	}
	if (ret == ZC_ENOZONE) {
		fprintf(a->err, "zonecast: no zone %s\n", name);
		return ret;
	}
	char why[EDGE_QUARANTINE_REASON_MAX + 64] = "";
	if (ret == ZC_EOK) {
		/* Off the edge now, as the old version of the zone would be. */
		admin_change_t change = {
			.apex = apex, .zone_id = (uint64_t)zone.id, .seq = seq,
			.deleted = true,
		};
		ret = admin_settle(a, &change, NULL, NULL, why, sizeof(why));
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast: delete failed: %s\n",
		        why[0] ? why : zc_strerror(ret));
		return ret;
	}
	fprintf(a->out, "zone %s deleted\n", zone.name);
	return ZC_EOK;
}
