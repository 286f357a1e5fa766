/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast secondaries: a zone's own secondaries (notify targets and
 * allow-transfer entries, on top of the server-wide config keys), on a
 * data directory, whether or not a server runs on it: a running server
 * reads them within a second, no restart. The API has the same at
 * /zones/{id}/secondaries.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>

#include "cli/commands.h"
#include "common/error.h"
#include "transfer/secondary.h"

#define LIST_MAX 64

static void usage(FILE *out)
{
	fputs("Usage: zonecast secondaries [--data-dir DIR] ZONE\n"
	      "           [--notify 'ADDR[:PORT] [key NAME]']...\n"
	      "           [--allow-transfer 'ADDR[/PREFIX]' | 'key NAME']...\n"
	      "           [--no-notify] [--no-allow-transfer]\n"
	      "\n"
	      "Without options, prints ZONE's own secondaries. --notify\n"
	      "replaces the zone's notify targets with the ones given (NOTIFY\n"
	      "signed with TSIG key NAME when given), --allow-transfer its\n"
	      "allow-transfer entries; --no-notify and --no-allow-transfer\n"
	      "empty them. They add to the server-wide notify and\n"
	      "allow-transfer keys. A running server applies a change within\n"
	      "a second. See docs/dynamic-updates.md.\n", out);
}

typedef struct {
	const char *spec[LIST_MAX];
	size_t count;
	bool set;
} list_t;

static int print_entry(int64_t zone_id, records_secondary_kind_t kind,
                       const char *spec, void *ctx)
{
	(void)zone_id;
	(void)ctx;
	printf("%s\t%s\n", kind == RECORDS_SECONDARY_NOTIFY ? "notify" :
	       "allow-transfer", spec);
	return 0;
}

/* Checks an entry's syntax and that the key it names exists. */
static int check(records_store_t *rs, const char *spec, bool notify)
{
	char err[1600] = "";
	secondary_notify_t target;
	zc_acl_t acl = { .count = 0 };
	secondary_keys_t keys = { .count = 0 };
	int ret = notify ? secondary_notify_parse(spec, &target, err, sizeof(err)) :
	          secondary_acl_parse(spec, &acl, &keys, err, sizeof(err));
	const uint8_t *key = notify ? (target.has_key ? target.key : NULL) :
	                     (keys.count > 0 ? keys.name[0] : NULL);
	records_tsig_key_t found;
	if (ret == ZC_EOK && key != NULL &&
	    records_tsig_find(rs, key, &found) != ZC_EOK) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, key, sizeof(name));
		snprintf(err, sizeof(err), "'%s': no TSIG key %s (zonecast tsig "
		         "create)", spec, name);
		ret = ZC_EUSAGE;
	}
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast secondaries: %s\n", err);
	}
	return ret;
}

static int apply(records_store_t *rs, const records_zone_t *zone,
                 const list_t *notify, const list_t *transfer)
{
	for (size_t i = 0; i < notify->count; i++) {
		if (check(rs, notify->spec[i], true) != ZC_EOK) {
			return ZC_EUSAGE;
		}
	}
	for (size_t i = 0; i < transfer->count; i++) {
		if (check(rs, transfer->spec[i], false) != ZC_EOK) {
			return ZC_EUSAGE;
		}
	}
	records_zone_t locked;
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		/* The zone's row first (records_secondaries_set()). */
		ret = records_zone_get(rs, zone->id, &locked);
	}
	if (ret == ZC_EOK && notify->set) {
		ret = records_secondaries_set(rs, zone->id,
		                              RECORDS_SECONDARY_NOTIFY,
		                              notify->spec, notify->count);
	}
	if (ret == ZC_EOK && transfer->set) {
		ret = records_secondaries_set(rs, zone->id,
		                              RECORDS_SECONDARY_TRANSFER,
		                              transfer->spec, transfer->count);
	}
	if (ret == ZC_EOK) {
		return records_write_commit(rs);
	}
	records_write_rollback(rs);
	fprintf(stderr, "zonecast secondaries: %s\n", zc_strerror(ret));
	return ret;
}

static bool add(list_t *l, const char *spec)
{
	if (l->count == LIST_MAX) {
		fprintf(stderr, "zonecast secondaries: more than %d entries\n",
		        LIST_MAX);
		return false;
	}
	l->spec[l->count++] = spec;
	l->set = true;
	return true;
}

int cmd_secondaries(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "notify", required_argument, NULL, 'n' },
		{ "allow-transfer", required_argument, NULL, 't' },
		{ "no-notify", no_argument, NULL, 'N' },
		{ "no-allow-transfer", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL;
	list_t notify = { .count = 0 }, transfer = { .count = 0 };
	int c;
	while ((c = getopt_long(argc, argv, "d:c:h", opts, NULL)) != -1) {
		bool ok = true;
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c': ok = config_load(&cfg, optarg) == ZC_EOK; break;
		case 'n': ok = add(&notify, optarg); break;
		case 't': ok = add(&transfer, optarg); break;
		case 'N': notify.set = true; break;
		case 'T': transfer.set = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok) {
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir ? dir : cfg.data_dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	records_zone_t zone;
	int ret = cli_find_zone(rs, "secondaries", argv[optind], &zone);
	if (ret == ZC_EOK && (notify.set || transfer.set)) {
		ret = apply(rs, &zone, &notify, &transfer);
	}
	if (ret == ZC_EOK) {
		ret = records_secondaries_foreach(rs, zone.id, print_entry, NULL);
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}
