/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast token create: makes an API bearer token (stored hashed, shown
 * once), read-write or read-only, for every zone or one zone. Also makes
 * the demo token of a fresh data directory.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "cli/commands.h"
#include "common/error.h"
#include "common/log.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast token create [--data-dir DIR] [--config FILE]\n"
	      "                             [--read-only] [--zone ZONE]\n"
	      "\n"
	      "Prints a new API token for 'Authorization: Bearer TOKEN'. Only its\n"
	      "hash is stored: keep the printed value. By default the token may\n"
	      "read and write every zone; --read-only allows GET only, --zone\n"
	      "limits it to one zone.\n", out);
}

int cli_demo_token(const char *data_dir)
{
	char token[80], path[4200];
	int ret = api_token_create(data_dir, 0, 0, token, sizeof(token));
	if (ret != ZC_EOK) {
		return ret;
	}
	snprintf(path, sizeof(path), "%s/demo-token", data_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dprintf(fd, "%s\n", token);
		close(fd);
	}
	zc_info("demo API token (read-write, all zones), also in %s: %s", path,
	        token);
	return ZC_EOK;
}

int cmd_token(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "zone", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL, *zone = NULL;
	int read_only = 0, c;
	while ((c = getopt_long(argc, argv, "d:c:rz:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'r': read_only = 1; break;
		case 'z': zone = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc || strcmp(argv[optind], "create") != 0 ||
	    optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	dir = dir ? dir : cfg.data_dir;
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	int64_t zone_id = 0;
	int ret = ZC_EOK;
	if (zone != NULL) {
		records_zone_t z;
		ret = cli_find_zone(rs, "token", zone, &z);
		zone_id = ret == ZC_EOK ? z.id : 0;
	}
	edge_close(es);
	records_close(rs);
	char token[80];
	if (ret == ZC_EOK) {
		ret = api_token_create(dir, read_only, zone_id, token, sizeof(token));
	}
	if (ret != ZC_EOK) {
		return 1;
	}
	printf("%s\n", token);
	return 0;
}
