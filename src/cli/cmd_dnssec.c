/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast dnssec enable|disable|ds|keys|rollover: online signing of a zone
 * (docs/dnssec.md). enable, disable and rollover are writes (cli/admin.h,
 * admin_dnssec.c; the safety rails of rollovers and disable are
 * admin/dnssec.c's, which the API's PATCH .../dnssec takes too):
 * the running server carries them out and answers once it serves the
 * change, or this process does, with no server, under the data
 * directory's lock. ds and keys read the records store.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "common/error.h"
#include "signer/zone.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast dnssec enable   [--data-dir DIR] ZONE "
	      "[--algorithm ALG] [--split]\n"
	      "       zonecast dnssec disable  [--data-dir DIR] ZONE "
	      "[--ds-ttl S] [--force]\n"
	      "       zonecast dnssec ds       [--data-dir DIR] ZONE\n"
	      "       zonecast dnssec keys     [--data-dir DIR] ZONE "
	      "[--ds-ttl S]\n"
	      "       zonecast dnssec rollover [--data-dir DIR] ZONE ksk|zsk "
	      "prepublish|activate|retire [--ds-ttl S] [--force]\n"
	      "\n"
	      "enable signs ZONE online (ALG: ecdsap256sha256, the default, or\n"
	      "ed25519; one combined key, or a KSK and a ZSK with --split) and\n"
	      "prints the DS records for the parent zone; ds prints them again.\n"
	      "keys lists each key's state and when its next step may run.\n"
	      "rollover runs one step of a key rollover, once the TTLs allow.\n"
	      "disable first publishes CDS/CDNSKEY DELETE (remove the DS at the\n"
	      "parent), then, run again after the DS TTL, removes the keys.\n"
	      "\n"
	      "  --ds-ttl S   the parent's DS TTL (default 86400)\n"
	      "  -f, --force  run a step before its wait has passed (validation\n"
	      "               may fail meanwhile)\n"
	      "See docs/dnssec.md.\n", out);
}

typedef struct {
	const char *verb;
	const char *name;
	uint8_t alg;
	bool split;
	bool keys_asked;        /* --algorithm or --split given */
	bool force;
	uint32_t ds_ttl;
	const char *role_text, *step_text;
} args_t;

/* --- arguments --- */

static bool parse_roll(char **argv, int at, args_t *a)
{
	a->role_text = argv[at];
	a->step_text = argv[at + 1];
	uint16_t flags;
	signer_roll_step_t step;
	return admin_dnssec_parse_roll(a->role_text, a->step_text, &flags, &step);
}

/* Parses options and operands into a; returns 0, or an exit status. */
static int parse_args(int argc, char **argv, config_t *cfg, const char **dir,
                      args_t *a)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "algorithm", required_argument, NULL, 'a' },
		{ "split", no_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "ds-ttl", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *alg_name = NULL;
	char *end;
	unsigned long ttl;
	int c;
	while ((c = getopt_long(argc, argv, "d:c:a:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': *dir = optarg; break;
		case 'c':
			if (config_load(cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'a': alg_name = optarg; break;
		case 's': a->split = true; break;
		case 'f': a->force = true; break;
		case 't':
			ttl = strtoul(optarg, &end, 10);
			if (*end != '\0' || optarg[0] == '\0' || ttl > 604800) {
				fprintf(stderr, "zonecast dnssec: --ds-ttl takes 0 to "
				        "604800 seconds\n");
				return 2;
			}
			a->ds_ttl = (uint32_t)ttl;
			break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return 2;
		}
	}
	bool roll = optind < argc && strcmp(argv[optind], "rollover") == 0;
	if (optind + (roll ? 4 : 2) != argc ||
	    (roll && !parse_roll(argv, optind + 2, a))) {
		usage(stderr);
		return 2;
	}
	a->verb = argv[optind];
	a->name = argv[optind + 1];
	a->alg = signer_algorithm_parse(alg_name);
	a->keys_asked = alg_name != NULL || a->split;
	if (a->alg == 0) {
		fprintf(stderr, "zonecast dnssec: unknown algorithm '%s' "
		        "(ecdsap256sha256 or ed25519)\n", alg_name);
		return 2;
	}
	static const char *const verbs[] = { "enable", "disable", "ds", "keys",
	                                     "rollover" };
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(a->verb, verbs[i]) == 0) {
			return 0;
		}
	}
	usage(stderr);
	return 2;
}

/* dnssec ds and keys: reads, here. */
static int show(const char *dir, const args_t *a)
{
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	admin_t view = { .rs = rs, .es = es, .out = stdout, .err = stderr };
	records_zone_t zone;
	int ret = admin_find_zone(&view, "dnssec", a->name, &zone);
	if (ret == ZC_EOK && strcmp(a->verb, "ds") == 0) {
		ret = admin_cmd_dnssec_ds(&view, &zone);
	} else if (ret == ZC_EOK) {
		ret = admin_cmd_dnssec_keys(&view, &zone, a->ds_ttl);
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}

int cmd_dnssec(int argc, char **argv)
{
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL;
	args_t a = { .ds_ttl = SIGNER_DEFAULT_DS_TTL };
	int ret = parse_args(argc, argv, &cfg, &dir, &a);
	if (ret != 0) {
		return ret < 0 ? 0 : ret;
	}
	dir = dir ? dir : cfg.data_dir;
	if (strcmp(a.verb, "ds") == 0 || strcmp(a.verb, "keys") == 0) {
		return show(dir, &a);
	}
	json_t *req = json_pack("{s:s, s:s, s:i, s:b, s:b, s:I, s:b}",
	                        "command", "dnssec", "verb", a.verb,
	                        "algorithm", a.alg, "split", a.split,
	                        "force", a.force, "ds_ttl", (json_int_t)a.ds_ttl,
	                        "keys_asked", a.keys_asked);
	bool ok = req != NULL && cli_json_set(req, "zone", cli_json_name(a.name));
	if (ok && a.role_text != NULL) {
		ok = cli_json_set(req, "role", cli_json_text("dnssec", "role",
		                                             a.role_text)) &&
		     cli_json_set(req, "step", cli_json_text("dnssec", "step",
		                                             a.step_text));
	}
	int status = ok ? admin_request(dir, false, cfg.zone_max_records, req,
	                                -1) : 2;
	json_decref(req);
	return status;
}
