/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast tsig create|list|delete: TSIG keys for RFC 2136 updates and
 * zone transfers. The secret is printed once, at creation, in the form
 * `nsupdate -k` and `knsupdate -k` read; `list` never shows it. create
 * and delete are writes (cli/admin.h, admin_tsig.c): the running server
 * carries them out, or this process when none runs.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>

#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "common/error.h"
#include "records/records.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast tsig create [--data-dir DIR] NAME --zone ZONE\n"
	      "                            [--algorithm ALG] [--grant GRANT]...\n"
	      "                            [--no-transfer] [--format bind|knot]\n"
	      "       zonecast tsig list   [--data-dir DIR] [--zone ZONE]\n"
	      "       zonecast tsig delete [--data-dir DIR] NAME\n"
	      "\n"
	      "create prints the new key as  key \"NAME\" { algorithm ...; secret "
	      "\"...\"; };\n"
	      "(for nsupdate -k / knsupdate -k). ALG: hmac-sha256 (default),\n"
	      "hmac-sha512, hmac-sha384, hmac-sha224, hmac-sha1, hmac-md5 (for\n"
	      "clients that know no other, e.g. certbot's dns-rfc2136 when its\n"
	      "credentials name no algorithm). By default the\n"
	      "key may update anything in ZONE and transfer it; each --grant\n"
	      "(zone[:TYPES], subdomain:NAME[:TYPES], name:NAME[:TYPES],\n"
	      "self[:TYPES]) narrows what it may update. --format knot prints\n"
	      "ALG:NAME:SECRET instead, the form of knsupdate -y and of\n"
	      "the files Knot 3.2's knsupdate -k reads. See\n"
	      "docs/dynamic-updates.md.\n", out);
}

static int find_zone(records_store_t *rs, const char *zone, int64_t *id)
{
	records_zone_t z;
	int ret = cli_find_zone(rs, "tsig", zone, &z);
	*id = ret == ZC_EOK ? z.id : 0;
	return ret;
}

static int create(const char *dir, const char *name, const char *zone,
                  const char *alg, const char *grants, bool transfer,
                  bool knot_format)
{
	if (zone == NULL) {
		fprintf(stderr, "zonecast tsig create: --zone is required\n");
		return 2;
	}
	json_t *req = json_pack("{s:s, s:b, s:s}", "command", "tsig-create",
	                        "transfer", transfer,
	                        "format", knot_format ? "knot" : "bind");
	bool ok = req != NULL &&
	          cli_json_set(req, "name", cli_json_name(name)) &&
	          cli_json_set(req, "zone", cli_json_name(zone)) &&
	          cli_json_set(req, "grants", cli_json_text("tsig", "--grant",
	                                                    grants)) &&
	          (alg == NULL || cli_json_set(req, "algorithm",
	                                       cli_json_text("tsig", "--algorithm",
	                                                     alg)));
	int status = ok ? admin_request(dir, false, 0, req, -1) : 2;
	json_decref(req);
	return status;
}

/* One key: name, algorithm, its zone by name, transfer right, grants. */
static int print_key(const records_tsig_key_t *key, void *ctx)
{
	records_store_t *rs = ctx;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	records_zone_t zone;
	knot_dname_to_str(name, key->name, sizeof(name));
	if (records_zone_get(rs, key->zone_id, &zone) != ZC_EOK) {
		snprintf(zone.name, sizeof(zone.name), "(zone id %lld)",
		         (long long)key->zone_id);
	}
	printf("%s\t%s\tzone=%s\ttransfer=%s\tgrants=%s\n", name,
	       key->algorithm, zone.name, key->transfer ? "yes" : "no",
	       key->grants[0] ? key->grants : "zone");
	return 0;
}

static int delete(const char *dir, const char *name)
{
	json_t *req = json_pack("{s:s}", "command", "tsig-delete");
	bool ok = req != NULL && cli_json_set(req, "name", cli_json_name(name));
	int status = ok ? admin_request(dir, false, 0, req, -1) : 2;
	json_decref(req);
	return status;
}

int cmd_tsig(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "zone", required_argument, NULL, 'z' },
		{ "algorithm", required_argument, NULL, 'a' },
		{ "grant", required_argument, NULL, 'g' },
		{ "no-transfer", no_argument, NULL, 'T' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL, *zone = NULL, *alg = NULL;
	char grants[RECORDS_TSIG_GRANTS_MAX] = "";
	bool transfer = true, knot_format = false;
	int c;
	while ((c = getopt_long(argc, argv, "d:c:z:a:g:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'z': zone = optarg; break;
		case 'a': alg = optarg; break;
		case 'g':
			if (strlen(grants) + strlen(optarg) + 2 > sizeof(grants)) {
				fprintf(stderr, "zonecast tsig: too many grants\n");
				return 2;
			}
			if (grants[0] != '\0') {
				strcat(grants, " ");
			}
			strcat(grants, optarg);
			break;
		case 'T': transfer = false; break;
		case 'f':
			if (strcmp(optarg, "knot") != 0 && strcmp(optarg, "bind") != 0) {
				fprintf(stderr, "zonecast tsig: --format bind or knot\n");
				return 2;
			}
			knot_format = optarg[0] == 'k';
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	const char *verb = optind < argc ? argv[optind] : "";
	const char *name = optind + 1 < argc ? argv[optind + 1] : NULL;
	bool list = strcmp(verb, "list") == 0;
	if ((!list && (name == NULL || optind + 2 != argc)) ||
	    (list && optind + 1 != argc)) {
		usage(stderr);
		return 2;
	}
	dir = dir ? dir : cfg.data_dir;
	if (strcmp(verb, "create") == 0) {
		return create(dir, name, zone, alg, grants, transfer, knot_format);
	}
	if (strcmp(verb, "delete") == 0) {
		return delete(dir, name);
	}
	if (!list) {
		usage(stderr);
		return 2;
	}
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	int64_t zone_id = 0;
	int ret = zone && find_zone(rs, zone, &zone_id) != ZC_EOK ? 1 :
	          records_tsig_list(rs, zone_id, print_key, rs) == ZC_EOK ? 0 : 1;
	edge_close(es);
	records_close(rs);
	return ret;
}
