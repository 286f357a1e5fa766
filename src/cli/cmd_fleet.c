/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast fleet status: the primary's position and each edge's lag and
 * last contact, from the API (GET /fleet). zonecast fleet digest: the
 * position and a digest of an edge store's replicated tables, to compare
 * a primary's data directory with an edge's.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "common/error.h"
#include "edge/repl.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast fleet status [--api ADDR:PORT] [--token TOKEN] "
	      "[--data-dir DIR] [--json]\n"
	      "  zonecast fleet digest --data-dir DIR\n"
	      "\n"
	      "status lists the edges of the primary at --api (default "
	      "127.0.0.1:8053)\nwith their lag in commits and ms and their last "
	      "contact; the token\ncomes from --token, $ZONECAST_TOKEN or "
	      "DIR/demo-token.\n"
	      "digest prints the position and a digest of the edge store in DIR\n"
	      "(a primary's or an edge's): equal digests at one position, equal "
	      "data.\n", out);
}

static int digest(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/edge.mdb", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "zonecast fleet digest: no edge store at %s\n", path);
		return 1;
	}
	fclose(f);
	edge_store_t *es = NULL;
	int ret = edge_open_readonly(&es, dir);
	uint64_t d = 0, entries = 0, epoch = 0, commit = 0, seq = 0;
	edge_repl_pos_t pos = { 0 };
	if (ret == ZC_EOK) {
		ret = edge_repl_digest(es, &d, &entries);
	}
	if (ret == ZC_EOK) {
		ret = edge_repl_pos(es, &pos);
	}
	if (ret == ZC_EOK) {
		ret = edge_applied_pos(es, &epoch, &commit, &seq);
	}
	edge_close(es);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast fleet digest: %s\n", zc_strerror(ret));
		return 1;
	}
	bool primary = pos.on || epoch == 0;
	printf("{\"role\": \"%s\", \"history\": \"%016" PRIx64 "\", \"commit\": %"
	       PRIu64 ", \"entries\": %" PRIu64 ", \"digest\": \"%016" PRIx64
	       "\"}\n", primary ? "primary" : "edge", primary ? pos.epoch : epoch,
	       primary ? pos.commit : commit, entries, d);
	return 0;
}

static const char *read_token(const char *dir, char *buf, size_t size)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/demo-token", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return NULL;
	}
	const char *t = fgets(buf, (int)size, f);
	fclose(f);
	if (t != NULL) {
		buf[strcspn(buf, "\r\n")] = '\0';
	}
	return t;
}

static void print_status(const json_t *r)
{
	json_t *edges = json_object_get(r, "edges");
	printf("history %s, commit %" JSON_INTEGER_FORMAT ", published %"
	       JSON_INTEGER_FORMAT ", nats %s\n",
	       json_string_value(json_object_get(r, "history")),
	       json_integer_value(json_object_get(r, "commit")),
	       json_integer_value(json_object_get(r, "published")),
	       json_is_true(json_object_get(r, "connected")) ? "connected" :
	                                                      "NOT connected");
	printf("%-24s %-5s %10s %12s %10s  %s\n", "EDGE", "STATE", "COMMIT",
	       "LAG(commits)", "LAG(ms)", "LAST SEEN");
	size_t i;
	json_t *e;
	json_array_foreach(edges, i, e) {
		printf("%-24s %-5s %10" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT
		       " %10" JSON_INTEGER_FORMAT "  %s\n",
		       json_string_value(json_object_get(e, "name")),
		       json_is_true(json_object_get(e, "up")) ? "up" : "DOWN",
		       json_integer_value(json_object_get(e, "commit")),
		       json_integer_value(json_object_get(e, "lag_commits")),
		       json_integer_value(json_object_get(e, "lag_ms")),
		       json_string_value(json_object_get(e, "last_seen")));
	}
	if (json_array_size(edges) == 0) {
		printf("(no edge has reported)\n");
	}
	const char *unknown = json_string_value(json_object_get(r, "edges_unknown"));
	if (unknown != NULL) {
		printf("EDGES UNKNOWN: %s (their states above are not current)\n",
		       unknown);
	}
}

static int status(const char *api, const char *token, bool as_json)
{
	json_t *resp = NULL;
	int st = cli_api_request(api, token, "GET", "/fleet", NULL, &resp);
	if (st != 200) {
		if (st < 0) {
			fprintf(stderr, "zonecast fleet status: cannot reach the API "
			        "at %s: %s\n", api, zc_strerror(st));
		} else {
			cli_api_print_errors(resp, st);
		}
		json_decref(resp);
		return 1;
	}
	json_t *r = json_object_get(resp, "result");
	if (!json_is_true(json_object_get(r, "enabled"))) {
		fprintf(stderr, "zonecast fleet status: the server at %s has no "
		        "fleet (serve --nats)\n", api);
		json_decref(resp);
		return 1;
	}
	if (as_json) {
		char *text = json_dumps(r, JSON_INDENT(2));
		puts(text);
		free(text);
	} else {
		print_status(r);
	}
	json_decref(resp);
	return 0;
}

int cmd_fleet(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "api", required_argument, NULL, 'a' },
		{ "token", required_argument, NULL, 't' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *api = "127.0.0.1:8053", *token = getenv("ZONECAST_TOKEN");
	const char *dir = NULL;
	bool as_json = false;
	int c;
	while ((c = getopt_long(argc, argv, "a:t:d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'a': api = optarg; break;
		case 't': token = optarg; break;
		case 'd': dir = optarg; break;
		case 'j': as_json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	const char *sub = argv[optind];
	if (strcmp(sub, "digest") == 0) {
		if (dir == NULL) {
			fprintf(stderr, "zonecast fleet digest: --data-dir is "
			        "required\n");
			return 2;
		}
		return digest(dir);
	}
	if (strcmp(sub, "status") != 0) {
		usage(stderr);
		return 2;
	}
	char buf[256];
	if (token == NULL) {
		/* The token comes from the data directory: a mistyped one is
		 * said as such, not as a missing token. */
		dir = dir ? dir : "zonecast-data";
		if (cli_require_data_dir(dir) != ZC_EOK) {
			return 1;
		}
		token = read_token(dir, buf, sizeof(buf));
	}
	if (token == NULL) {
		fprintf(stderr, "zonecast fleet status: no token (--token, "
		        "$ZONECAST_TOKEN or DATA_DIR/demo-token)\n");
		return 2;
	}
	return status(api, token, as_json);
}
