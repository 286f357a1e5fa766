/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast token create|list|revoke: API bearer tokens. A token is stored
 * hashed, so its secret is printed once, at creation; it may read and
 * write every zone, or be read-only, limited to one zone, and expire. A
 * revoked or expired token is refused from the next request on (the API
 * looks tokens up on every request). Also makes the demo token of a fresh
 * data directory, written to DATA_DIR/demo-token and never to the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/json_args.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast token create [--read-only] [--zone ZONE] [--name NAME]\n"
	      "                        [--expires WHEN]\n"
	      "  zonecast token list\n"
	      "  zonecast token revoke ID|NAME\n"
	      "Options for all: --data-dir DIR, --config FILE.\n"
	      "\n"
	      "create prints a new API token for 'Authorization: Bearer TOKEN'.\n"
	      "Only its hash is stored: keep the printed value, it is shown once.\n"
	      "By default the token may read and write every zone; --read-only\n"
	      "allows GET only, --zone limits it to one zone. --expires takes a\n"
	      "duration (90m, 12h, 30d, 2w) or a UTC time (2027-01-31 or\n"
	      "2027-01-31T12:00:00Z). list shows every token (never a secret);\n"
	      "revoke refuses a token from its next request on.\n", out);
}

int cli_demo_token(const char *data_dir)
{
	char token[80], path[4200];
	records_token_t tok = { .name = "demo" };
	int ret = api_token_create(data_dir, &tok, token, sizeof(token));
	if (ret != ZC_EOK) {
		return ret;
	}
	snprintf(path, sizeof(path), "%s/demo-token", data_dir);
	int fd = zc_fs_create_new(path, 0600);
	if (fd < 0) {
		errno = -fd;
	}
	if (fd < 0 || dprintf(fd, "%s\n", token) < 0 || fsync(fd) != 0) {
		ret = -errno;
		zc_error("demo API token: cannot write %s: %s", path, strerror(errno));
	}
	if (fd >= 0) {
		close(fd);
	}
	explicit_bzero(token, sizeof(token));
	if (ret == ZC_EOK) {
		/* The secret goes to its file only: logs are read by more
		 * people, and kept longer, than a 0600 file. */
		zc_info("demo API token (read-write, all zones) written to %s",
		        path);
	}
	return ret;
}

/* A time in Unix milliseconds: a duration from now (90m, 12h, 30d, 2w,
 * 3600s) or a UTC time as the API takes it. */
static int parse_expiry(const char *text, int64_t *ms)
{
	char *end;
	errno = 0;
	long long n = strtoll(text, &end, 10);
	static const struct {
		char unit;
		long long seconds;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	              { 'w', 7 * 86400 } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (end != text && errno == 0 && n > 0 && end[0] == units[i].unit &&
		    end[1] == '\0' && n < 100LL * 365 * 86400 / units[i].seconds) {
			*ms = (int64_t)time(NULL) * 1000 + n * units[i].seconds * 1000;
			return ZC_EOK;
		}
	}
	return api_time_parse(text, ms);
}

static int create_token(const char *dir, records_token_t *tok, const char *zone,
                  const char *expires)
{
	if (expires != NULL && parse_expiry(expires, &tok->expires_on) != ZC_EOK) {
		fprintf(stderr, "zonecast token: --expires %s: a duration (90m, 12h, "
		        "30d, 2w) or a UTC time (2027-01-31T12:00:00Z)\n", expires);
		return 2;
	}
	if (expires != NULL && tok->expires_on <= (int64_t)time(NULL) * 1000) {
		fprintf(stderr, "zonecast token: --expires %s is in the past\n",
		        expires);
		return 2;
	}
	/* A write: the running server makes it (and audits it), or this
	 * process when none runs (admin_token.c). */
	json_t *req = json_pack("{s:s, s:b, s:I}", "command", "token-create",
	                        "read_only", tok->read_only,
	                        "expires_on", (json_int_t)tok->expires_on);
	bool ok = req != NULL &&
	          cli_json_set(req, "name", cli_json_text("token", "--name",
	                                                  tok->name)) &&
	          (zone == NULL || cli_json_set(req, "zone", cli_json_name(zone)));
	int status = ok ? admin_request(dir, false, 0, req, -1) : 2;
	json_decref(req);
	return status;
}

/* A Unix-milliseconds time as the list shows it ("-": none). */
static void time_text(int64_t ms, char *out, size_t size)
{
	if (ms == 0) {
		snprintf(out, size, "-");
		return;
	}
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

typedef struct {
	records_store_t *rs;
	int64_t now;
} list_t;

static int print_token(const records_token_t *tok, void *ctx)
{
	list_t *l = ctx;
	static const char *const status[] = { "active", "expired", "revoked" };
	char id[33], zone[KNOT_DNAME_TXT_MAXLEN + 1] = "*", created[32],
	     expires[32];
	api_id_text(tok->id, id);
	records_zone_t z;
	if (tok->zone_id != 0 && records_zone_get(l->rs, tok->zone_id, &z) ==
	    ZC_EOK) {
		snprintf(zone, sizeof(zone), "%s", z.name);
	}
	time_text(tok->created_on, created, sizeof(created));
	time_text(tok->revoked_on ? tok->revoked_on : tok->expires_on, expires,
	          sizeof(expires));
	printf("%s %-8s %-10s %-20s %-20s %-20s %s\n", id,
	       status[records_token_status(tok, l->now)],
	       tok->read_only ? "read-only" : "read-write", zone, created,
	       expires, tok->name[0] ? tok->name : "-");
	return 0;
}

static int list_tokens(records_store_t *rs)
{
	list_t l = { .rs = rs, .now = (int64_t)time(NULL) * 1000 };
	printf("%-32s %-8s %-10s %-20s %-20s %-20s %s\n", "ID", "STATUS",
	       "ACCESS", "ZONE", "CREATED", "EXPIRES/REVOKED", "NAME");
	int ret = records_token_list(rs, print_token, &l);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast token: %s\n", zc_strerror(ret));
		return 1;
	}
	return 0;
}

/* A write: the running server revokes (and audits it), or this process
 * when none runs (admin_token.c: an id's form is always an id). */
static int revoke_token(const char *dir, const char *which)
{
	json_t *req = json_pack("{s:s}", "command", "token-revoke");
	bool ok = req != NULL &&
	          cli_json_set(req, "which", cli_json_text("token", "revoke",
	                                                   which));
	int status = ok ? admin_request(dir, false, 0, req, -1) : 2;
	json_decref(req);
	return status;
}

int cmd_token(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "zone", required_argument, NULL, 'z' },
		{ "name", required_argument, NULL, 'n' },
		{ "expires", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL, *zone = NULL, *expires = NULL;
	records_token_t tok = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "d:c:rz:n:e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'r': tok.read_only = true; break;
		case 'z': zone = optarg; break;
		case 'n':
			if (!records_token_name_valid(optarg)) {
				fprintf(stderr, "zonecast token: --name: 1 to %d "
				        "bytes, without control characters, not "
				        "\"-\" nor 32 lower-case hex digits (an "
				        "id's form)\n", RECORDS_TOKEN_NAME_MAX);
				return 2;
			}
			snprintf(tok.name, sizeof(tok.name), "%s", optarg);
			break;
		case 'e': expires = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	const char *sub = optind < argc ? argv[optind] : "";
	int rest = argc - optind - 1;
	dir = dir ? dir : cfg.data_dir;
	if (strcmp(sub, "create") == 0 && rest == 0) {
		return create_token(dir, &tok, zone, expires);
	}
	if (strcmp(sub, "revoke") == 0 && rest == 1) {
		return revoke_token(dir, argv[optind + 1]);
	}
	if (strcmp(sub, "list") != 0 || rest != 0) {
		usage(stderr);
		return 2;
	}
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	edge_close(es);
	int ret = list_tokens(rs);
	records_close(rs);
	return ret;
}
