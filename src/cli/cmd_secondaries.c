/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast secondaries: a zone's own secondaries (notify targets and
 * allow-transfer entries, on top of the server-wide config keys), on a
 * data directory, whether or not a server runs on it: a change is a write
 * (admin_secondaries.c) that a running server makes and applies within a
 * second, no restart. The API has the same at /zones/{id}/secondaries.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>

#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "common/error.h"

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

/* The change as a write: the running server makes it (and audits it),
 * or this process when none runs (admin_secondaries.c). */
static int apply(const char *dir, const char *zone, const list_t *notify,
                 const list_t *transfer)
{
	json_t *req = json_pack("{s:s}", "command", "secondaries-set");
	bool ok = req != NULL && cli_json_set(req, "zone", cli_json_name(zone));
	const list_t *lists[] = { notify, transfer };
	const char *keys[] = { "notify", "allow_transfer" };
	for (int k = 0; k < 2 && ok; k++) {
		if (!lists[k]->set) {
			continue;
		}
		json_t *a = json_array();
		for (size_t i = 0; i < lists[k]->count && ok; i++) {
			json_t *spec = cli_json_text("secondaries", keys[k],
			                             lists[k]->spec[i]);
			ok = spec != NULL && json_array_append_new(a, spec) == 0;
		}
		if (!ok) {
			json_decref(a);
		} else {
			ok = cli_json_set(req, keys[k], a);
		}
	}
	int status = ok ? admin_request(dir, false, 0, req, -1) : 2;
	json_decref(req);
	return status;
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
	dir = dir ? dir : cfg.data_dir;
	if (notify.set || transfer.set) {
		return apply(dir, argv[optind], &notify, &transfer);
	}
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	records_zone_t zone;
	int ret = cli_find_zone(rs, "secondaries", argv[optind], &zone);
	if (ret == ZC_EOK) {
		ret = admin_secondaries_print(rs, zone.id, stdout);
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}
