/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast record list|add|edit|rm: record changes through the HTTP API
 * (so they take the same validation, versioning and propagation path as
 * any API client), with a token from --token, $ZONECAST_TOKEN or the data
 * directory's demo-token.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "common/error.h"

typedef struct {
	const char *api;
	const char *token;
	const char *name, *type, *content, *comment;
	long ttl, priority;
} opts_t;

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast record list ZONE [--name NAME] [--type TYPE]\n"
	      "  zonecast record add  ZONE NAME TYPE CONTENT [--ttl N] "
	      "[--priority N] [--comment TEXT]\n"
	      "  zonecast record edit ZONE ID [--name NAME] [--type TYPE] "
	      "[--content TEXT] [--ttl N] [--priority N]\n"
	      "  zonecast record rm   ZONE ID\n"
	      "\n"
	      "Options for all: --api ADDR:PORT (default: api-listen of the "
	      "config, 127.0.0.1:8053),\n"
	      "  --token TOKEN (default: $ZONECAST_TOKEN, else DATA_DIR/demo-token),"
	      "\n  --data-dir DIR, --config FILE.\n"
	      "Names are FQDNs (or relative to ZONE, or @); content is master-file "
	      "syntax.\n", out);
}

static const char *read_token(const char *dir, char *buf, size_t size)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/demo-token", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL || fgets(buf, (int)size, f) == NULL) {
		if (f != NULL) {
			fclose(f);
		}
		return NULL;
	}
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}

/* Resolves a zone name to its API id. */
static int zone_id(const opts_t *o, const char *zone, char *id, size_t size)
{
	char path[1100];
	json_t *resp;
	snprintf(path, sizeof(path), "/zones?name=%s", zone);
	size_t n = strlen(path);
	if (n > 0 && path[n - 1] == '.') {
		path[n - 1] = '\0';
	}
	int status = cli_api_request(o->api, o->token, "GET", path, NULL, &resp);
	const char *zid = json_string_value(json_object_get(
		json_array_get(json_object_get(resp, "result"), 0), "id"));
	int ret = ZC_EOK;
	if (status != 200 || zid == NULL) {
		if (status == 200) {
			fprintf(stderr, "zonecast: no zone %s\n", zone);
		} else if (status > 0) {
			cli_api_print_errors(resp, status);
		}
		ret = ZC_ENOZONE;
	} else {
		snprintf(id, size, "%s", zid);
	}
	json_decref(resp);
	return ret;
}

static void print_record(const json_t *r)
{
	json_t *prio = json_object_get(r, "priority");
	printf("%s %s %lld %s ", json_string_value(json_object_get(r, "id")),
	       json_string_value(json_object_get(r, "name")),
	       json_integer_value(json_object_get(r, "ttl")),
	       json_string_value(json_object_get(r, "type")));
	if (prio != NULL) {
		printf("%lld ", json_integer_value(prio));
	}
	printf("%s\n", json_string_value(json_object_get(r, "content")));
}

static json_t *fields(const opts_t *o)
{
	json_t *j = json_object();
	if (o->name) json_object_set_new(j, "name", json_string(o->name));
	if (o->type) json_object_set_new(j, "type", json_string(o->type));
	if (o->content) json_object_set_new(j, "content", json_string(o->content));
	if (o->comment) json_object_set_new(j, "comment", json_string(o->comment));
	if (o->ttl > 0) json_object_set_new(j, "ttl", json_integer(o->ttl));
	if (o->priority >= 0) {
		json_object_set_new(j, "priority", json_integer(o->priority));
	}
	return j;
}

static int call(const opts_t *o, const char *method, const char *path,
                json_t *body, bool print)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_t *resp;
	int status = cli_api_request(o->api, o->token, method, path, text, &resp);
	free(text);
	json_decref(body);
	if (status < 0) {
		return 1;
	}
	if (status != 200 || !json_is_true(json_object_get(resp, "success"))) {
		cli_api_print_errors(resp, status);
		json_decref(resp);
		return 1;
	}
	json_t *result = json_object_get(resp, "result");
	if (json_is_array(result)) {
		size_t i;
		json_t *r;
		json_array_foreach(result, i, r) {
			print_record(r);
		}
	} else if (print) {
		print_record(result);
	}
	json_t *version = json_object_get(resp, "zone_version");
	if (version != NULL) {
		fprintf(stderr, "zone version %lld\n", json_integer_value(version));
	}
	json_decref(resp);
	return 0;
}

static int run(opts_t *o, int argc, char **argv)
{
	const char *sub = argv[0];
	char zid[64], path[2048];
	if (argc < 2 || zone_id(o, argv[1], zid, sizeof(zid)) != ZC_EOK) {
		return argc < 2 ? (usage(stderr), 2) : 1;
	}
	if (strcmp(sub, "list") == 0 && argc == 2) {
		snprintf(path, sizeof(path), "/zones/%s/dns_records?per_page=50000%s%s"
		         "%s%s", zid, o->name ? "&name=" : "", o->name ? o->name : "",
		         o->type ? "&type=" : "", o->type ? o->type : "");
		return call(o, "GET", path, NULL, false);
	}
	if (strcmp(sub, "add") == 0 && argc == 5) {
		o->name = argv[2], o->type = argv[3], o->content = argv[4];
		snprintf(path, sizeof(path), "/zones/%s/dns_records", zid);
		return call(o, "POST", path, fields(o), true);
	}
	if (strcmp(sub, "edit") == 0 && argc == 3) {
		snprintf(path, sizeof(path), "/zones/%s/dns_records/%s", zid, argv[2]);
		return call(o, "PATCH", path, fields(o), true);
	}
	if (strcmp(sub, "rm") == 0 && argc == 3) {
		snprintf(path, sizeof(path), "/zones/%s/dns_records/%s", zid, argv[2]);
		return call(o, "DELETE", path, NULL, false);
	}
	usage(stderr);
	return 2;
}

int cmd_record(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "api", required_argument, NULL, 'a' },
		{ "token", required_argument, NULL, 't' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 'T' },
		{ "content", required_argument, NULL, 'C' },
		{ "comment", required_argument, NULL, 'm' },
		{ "ttl", required_argument, NULL, 'l' },
		{ "priority", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t cfg;
	config_defaults(&cfg);
	opts_t o = { .priority = -1 };
	const char *dir = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "a:t:d:c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': o.api = optarg; break;
		case 't': o.token = optarg; break;
		case 'd': dir = optarg; break;
		case 'c':
			if (config_load(&cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'n': o.name = optarg; break;
		case 'T': o.type = optarg; break;
		case 'C': o.content = optarg; break;
		case 'm': o.comment = optarg; break;
		case 'l': o.ttl = strtol(optarg, NULL, 10); break;
		case 'p': o.priority = strtol(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	char token[128];
	o.api = o.api ? o.api : cfg.api_listen;
	o.token = o.token ? o.token : getenv("ZONECAST_TOKEN");
	if (o.token == NULL) {
		/* The token comes from the data directory: a mistyped one is
		 * said as such, not as a missing token. */
		dir = dir ? dir : cfg.data_dir;
		if (cli_require_data_dir(dir) != ZC_EOK) {
			return 1;
		}
		o.token = read_token(dir, token, sizeof(token));
	}
	if (o.token == NULL) {
		fprintf(stderr, "zonecast record: no token (--token, "
		        "$ZONECAST_TOKEN, or DATA_DIR/demo-token)\n");
		return 2;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	return run(&o, argc - optind, argv + optind);
}
