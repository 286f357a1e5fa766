/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast verify [ZONE]: compares the edge store with a full build of the
 * records store and prints every difference; exits 1 if there is any.
 * With --records, the edge store of any data directory (a fleet edge's)
 * against that records store, the edge store left as it is.
 */
#include <getopt.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "common/error.h"
#include "dns/name_text.h"

typedef struct {
	const char *zone;
	unsigned differences;
} verify_t;

static void usage(FILE *out)
{
	fputs("Usage: zonecast verify [--data-dir DIR] [--config FILE]\n"
	      "                       [--records TARGET] [ZONE]\n"
	      "\n"
	      "Compares the edge store (what DNS answers from) with a full build\n"
	      "of the records store, for ZONE or every zone, and prints each\n"
	      "difference. Exit status: 0 identical, 1 differences or errors.\n"
	      "\n"
	      "  --records TARGET  the records store to compare with (a data\n"
	      "                    directory, or postgresql://...): DIR's edge\n"
	      "                    store may then be any edge's (zonecast edge)\n",
	      out);
}

static void on_diff(const knot_dname_t *owner, const char *what, void *ctx)
{
	verify_t *v = ctx;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, owner, sizeof(name));
	printf("%s: %s: %s\n", v->zone, name, what);
	v->differences++;
}

typedef struct {
	records_store_t *rs;
	edge_store_t *es;
	int failures;
	unsigned differences;
} all_t;

static int verify_one(records_store_t *rs, edge_store_t *es,
                      const knot_dname_t *apex, const char *name,
                      uint64_t records, unsigned *differences)
{
	verify_t v = { .zone = name };
	cli_progress_t p;
	char what[KNOT_DNAME_TXT_MAXLEN + 16];
	snprintf(what, sizeof(what), "verifying %s", name);
	cli_progress_begin(&p, true, what, records);
	int ret = builder_verify_progress(rs, es, apex, on_diff, &v,
	                                  cli_progress_records, &p);
	cli_progress_set(&p, records);
	cli_progress_end(&p);
	if (ret < 0) {
		fprintf(stderr, "zonecast verify: %s: %s\n", name, zc_strerror(ret));
		return ret;
	}
	*differences += v.differences;
	return ZC_EOK;
}

static int verify_zone_cb(const records_zone_t *zone, void *ctx)
{
	all_t *all = ctx;
	edge_quarantine_t q;
	if (builder_quarantine_get(all->es, (uint64_t)zone->id, &q) == ZC_EOK) {
		printf("%s: quarantined (%s): the edge serves serial %u, changes "
		       "since wait; `zonecast zone retry %s` once fixed\n",
		       zone->name, q.reason, q.serial, zone->name);
		all->differences++;
	}
	if (verify_one(all->rs, all->es, zone->apex, zone->name,
	               (uint64_t)zone->record_count, &all->differences) != ZC_EOK) {
		all->failures++;
	}
	return 0;
}

static void on_count(const char *zone, int64_t kept, int64_t real, void *ctx)
{
	all_t *all = ctx;
	printf("%s: record count kept as %lld, the zone has %lld records\n",
	       zone, (long long)kept, (long long)real);
	all->differences++;
}

/* Zones at the edge that the records store no longer has. */
static int edge_zone_cb(const edge_zone_t *zone, void *ctx)
{
	all_t *all = ctx;
	records_zone_t rz;
	if (records_zone_find(all->rs, zone->apex, &rz) == ZC_ENOZONE) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, zone->apex, sizeof(name));
		printf("%s: zone deleted but still at the edge\n", name);
		all->differences++;
	}
	return 0;
}

/* A zone of the records store, or one the edge still has (a deleted zone
 * left at the edge is a difference to show); otherwise prints "no zone". */
static bool is_known_zone(records_store_t *rs, edge_store_t *es,
                          const char *name, uint8_t *apex, uint64_t *records)
{
	if (dns_name_from_text(apex, name, KNOT_DNAME_MAXLEN) == NULL) {
		fprintf(stderr, "zonecast verify: invalid zone name '%s'\n", name);
		return false;
	}
	knot_dname_to_lower(apex);
	records_zone_t rz = { .record_count = 0 };
	int ret = records_zone_find(rs, apex, &rz);
	*records = (uint64_t)rz.record_count;
	if (ret == ZC_ENOZONE) {
		edge_txn_t txn = { 0 };
		edge_zone_t ez;
		ret = edge_txn_begin_read(es, &txn);
		if (ret == ZC_EOK) {
			ret = edge_zone_get(&txn, apex, &ez);
			edge_txn_abort(&txn);
		}
	}
	if (ret == ZC_ENOZONE) {
		fprintf(stderr, "zonecast verify: no zone %s\n", name);
	} else if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast verify: %s: %s\n", name, zc_strerror(ret));
	}
	return ret == ZC_EOK;
}

/* The records store from target and DIR's edge store, opened as they
 * are: nothing is built or converted. */
static int open_apart(const char *target, const char *dir,
                      records_store_t **rs, edge_store_t **es)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/edge.mdb", dir);
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "zonecast verify: no edge store at %s\n", path);
		return KNOT_ENOENT;
	}
	int ret = records_open(rs, target);
	if (ret != ZC_EOK) {
		char shown[512];
		records_uri_redact(target, shown, sizeof(shown));
		fprintf(stderr, "zonecast verify: cannot open %s: %s\n", shown,
		        zc_strerror(ret));
		return ret;
	}
	ret = edge_open_readonly(es, dir);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast verify: cannot open %s/edge.mdb: %s\n",
		        dir, zc_strerror(ret));
		records_close(*rs);
	}
	return ret;
}

int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "records", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL, *target = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "d:c:r:h", opts, NULL)) != -1) {
		if (c == 'd') {
			dir = optarg;
		} else if (c == 'r') {
			target = optarg;
		} else if (c == 'c') {
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	all_t all = { 0 };
	if (optind + 1 < argc) {
		usage(stderr);
		return 2;
	}
	dir = dir ? dir : cfg.data_dir;
	if (target != NULL ? open_apart(target, dir, &all.rs, &all.es) :
	                     cli_open_stores(dir, false, &all.rs, &all.es)) {
		return 1;
	}
	if (optind < argc) {
		uint8_t apex[KNOT_DNAME_MAXLEN];
		uint64_t records = 0;
		if (!is_known_zone(all.rs, all.es, argv[optind], apex, &records)) {
			all.failures++;
		} else {
			all.failures += verify_one(all.rs, all.es, apex, argv[optind],
			                           records, &all.differences) != ZC_EOK;
		}
	} else {
		records_zone_list(all.rs, false, verify_zone_cb, &all);
		edge_txn_t txn = { 0 };
		if (edge_txn_begin_read(all.es, &txn) == ZC_EOK) {
			edge_zone_foreach(&txn, edge_zone_cb, &all);
			edge_txn_abort(&txn);
		}
	}
	if (records_counts_verify(all.rs, on_count, &all) != ZC_EOK) {
		all.failures++;
	}
	edge_close(all.es);
	records_close(all.rs);
	if (all.failures == 0 && all.differences == 0) {
		printf("no differences\n");
	}
	return (all.failures == 0 && all.differences == 0) ? 0 : 1;
}
