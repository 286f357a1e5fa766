/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast dnssec enable|disable|ds|keys: online signing of a zone
 * (docs/dnssec.md). enable and disable change the records store in one
 * transaction and rebuild the zone into the edge store, as `zone import`
 * does: a running server answers signed (or unsigned) at once.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "common/error.h"
#include "signer/zone.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast dnssec enable  [--data-dir DIR] ZONE "
	      "[--algorithm ALG] [--split]\n"
	      "       zonecast dnssec disable [--data-dir DIR] ZONE\n"
	      "       zonecast dnssec ds      [--data-dir DIR] ZONE\n"
	      "       zonecast dnssec keys    [--data-dir DIR] ZONE\n"
	      "       zonecast dnssec rollover [--data-dir DIR] ZONE ksk|zsk "
	      "prepublish|activate|retire\n"
	      "\n"
	      "enable signs ZONE online (ALG: ecdsap256sha256, the default, or\n"
	      "ed25519; one combined key, or a KSK and a ZSK with --split) and\n"
	      "prints the DS records for the parent zone; ds prints them again.\n"
	      "rollover runs one step of a key rollover (docs/dnssec.md).\n"
	      "See docs/dnssec.md.\n", out);
}

static int print_ds(const signer_key_info_t *info, void *ctx)
{
	const records_zone_t *zone = ctx;
	char line[512];
	if (info->flags == SIGNER_FLAGS_KSK &&
	    signer_ds_format(zone, info, line, sizeof(line)) == ZC_EOK) {
		printf("%s\n", line);
	}
	return 0;
}

static int print_key(const signer_key_info_t *info, void *ctx)
{
	(void)ctx;
	printf("tag=%u\tflags=%u (%s)\talgorithm=%u (%s)\t%s\n", info->tag,
	       info->flags, info->flags == SIGNER_FLAGS_KSK ? "KSK/CSK" : "ZSK",
	       info->algorithm, signer_algorithm_name(info->algorithm),
	       info->active ? "active" : "published");
	return 0;
}

typedef enum { DO_ENABLE, DO_DISABLE, DO_ROLL } action_t;

/* Runs one change in one write transaction, then the build. */
static int change(records_store_t *rs, edge_store_t *es, records_zone_t *zone,
                  action_t action, uint8_t alg, bool split, uint16_t roll_flags,
                  signer_roll_step_t roll_step)
{
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		ret = action == DO_ENABLE ? signer_zone_enable(rs, zone, alg, split) :
		      action == DO_DISABLE ? signer_zone_disable(rs, zone) :
		      signer_zone_rollover(rs, zone, roll_flags, roll_step);
		ret = ret == ZC_EOK ? records_write_commit(rs) :
		      (records_write_rollback(rs), ret);
	}
	if (ret == ZC_EOK) {
		ret = builder_full_build(rs, es, zone->apex, NULL, NULL, NULL);
	}
	if (ret == ZC_EEXISTS) {
		fprintf(stderr, "zonecast dnssec: %s is signed already\n",
		        zone->name);
	} else if (ret == ZC_ENOKEY && action == DO_ROLL) {
		fprintf(stderr, "zonecast dnssec: nothing to do for that step "
		        "(unsigned zone, or no key in that state)\n");
	} else if (ret == ZC_ENOKEY) {
		fprintf(stderr, "zonecast dnssec: %s is not signed\n", zone->name);
	} else if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast dnssec: %s\n", zc_strerror(ret));
	}
	return ret;
}

int cmd_dnssec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "algorithm", required_argument, NULL, 'a' },
		{ "split", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL, *alg_name = NULL;
	bool split = false;
	int c;
	while ((c = getopt_long(argc, argv, "d:c:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'a': alg_name = optarg; break;
		case 's': split = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	bool roll = optind < argc && strcmp(argv[optind], "rollover") == 0;
	if (optind + (roll ? 4 : 2) != argc) {
		usage(stderr);
		return 2;
	}
	const char *verb = argv[optind], *name = argv[optind + 1];
	uint16_t roll_flags = 0;
	signer_roll_step_t roll_step = SIGNER_ROLL_PREPUBLISH;
	if (roll) {
		const char *role = argv[optind + 2], *step = argv[optind + 3];
		roll_flags = strcmp(role, "ksk") == 0 ? SIGNER_FLAGS_KSK :
		             strcmp(role, "zsk") == 0 ? SIGNER_FLAGS_ZSK : 0;
		bool ok = true;
		if (strcmp(step, "prepublish") == 0) {
			roll_step = SIGNER_ROLL_PREPUBLISH;
		} else if (strcmp(step, "activate") == 0) {
			roll_step = SIGNER_ROLL_ACTIVATE;
		} else if (strcmp(step, "retire") == 0) {
			roll_step = SIGNER_ROLL_RETIRE;
		} else {
			ok = false;
		}
		if (roll_flags == 0 || !ok) {
			usage(stderr);
			return 2;
		}
	}
	uint8_t alg = signer_algorithm_parse(alg_name);
	if (alg == 0) {
		fprintf(stderr, "zonecast dnssec: unknown algorithm '%s' "
		        "(ecdsap256sha256 or ed25519)\n", alg_name);
		return 2;
	}
	dir = dir ? dir : cfg.data_dir;
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	records_zone_t zone;
	int ret = cli_find_zone(rs, "dnssec", name, &zone);
	if (ret != ZC_EOK) {
		/* Reported. */
	} else if (strcmp(verb, "enable") == 0) {
		ret = change(rs, es, &zone, DO_ENABLE, alg, split, 0, roll_step);
		if (ret == ZC_EOK) {
			ret = signer_zone_keys(rs, &zone, print_ds, &zone);
		}
	} else if (strcmp(verb, "disable") == 0) {
		ret = change(rs, es, &zone, DO_DISABLE, alg, split, 0, roll_step);
	} else if (roll) {
		ret = change(rs, es, &zone, DO_ROLL, alg, split, roll_flags,
		             roll_step);
		if (ret == ZC_EOK) {
			ret = signer_zone_keys(rs, &zone, print_key, NULL);
		}
	} else if (strcmp(verb, "ds") == 0) {
		ret = signer_zone_keys(rs, &zone, print_ds, &zone);
	} else if (strcmp(verb, "keys") == 0) {
		ret = signer_zone_keys(rs, &zone, print_key, NULL);
	} else {
		usage(stderr);
		ret = ZC_EUSAGE;
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}
