/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: an HTTP API request through the request path the
 * libmicrohttpd callbacks run (api_req_body(), api_dispatch(),
 * api_response()): bearer token check, routing, every handler, writes
 * through the real group committer, and the change-log follower building
 * what was written into the edge store. Every input starts from the same
 * stores (fuzz_zone.h's zone and three tokens): after an input that
 * changed them, the harness waits for the follower to build the change,
 * then stops the API, puts the first copy of the stores back and starts
 * again.
 *
 * Input: "METHOD\nURL\nHEADER: VALUE\n...\n\nBODY". The URL's path and
 * query arguments are unescaped as libmicrohttpd does (MHD_http_unescape,
 * '+' as space in arguments). Without an Authorization header the request
 * carries the admin token; "Authorization: ro" and "Authorization: zone"
 * give the read-only and the example.-only tokens, any other value goes
 * as it is. The query argument "wait" is dropped (it sleeps by design).
 *
 * Every response must be a JSON envelope (or an export's text) whose
 * "success" agrees with the HTTP status, and a failure must say why.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <microhttpd.h>

#include "api/reply.h"
#include "api/request.h"
#include "api/router.h"
#include "common/log.h"
#include "fuzz/fuzz.h"
#include "fuzz/fuzz_zone.h"
#include "records/store.h"

#define MAX_ARGS 32
#define MAX_HEADERS 16
/* Longest wait for the follower to build an input's writes. */
#define SETTLE_MS 60000

static char pristine[sizeof(fuzz_zone_dir) + 16];
static edge_store_t *es;
static builder_follower_t *follower;
static writer_t *writer;
static api_t *api;
static records_store_t *watch;  /* The harness's own connection. */
static char token_admin[80], token_ro[80], token_zone[80];

static const char *const zone_ns[] = { "ns1.example.net.", "ns2.example.net.",
                                       NULL };

/* Copies every file of one directory into another (or deletes every
 * file of `from` when `to` is NULL). */
static void copy_files(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char src[4096], dst[4096];
		snprintf(src, sizeof(src), "%s/%s", from, e->d_name);
		struct stat st;
		if (stat(src, &st) != 0 || !S_ISREG(st.st_mode)) {
			continue;
		}
		if (to == NULL) {
			unlink(src);
			continue;
		}
		snprintf(dst, sizeof(dst), "%s/%s", to, e->d_name);
		FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
		char buf[65536];
		size_t n;
		while (in != NULL && out != NULL &&
		       (n = fread(buf, 1, sizeof(buf), in)) > 0) {
			if (fwrite(buf, 1, n, out) != n) {
				abort();
			}
		}
		if (in == NULL || out == NULL) {
			abort();
		}
		fclose(in);
		fclose(out);
	}
	if (d != NULL) {
		closedir(d);
	}
}

/* Opens the stores in fuzz_zone_dir and starts what the API runs on. */
static void services_start(void)
{
	const char *dir = fuzz_zone_dir;
	if (edge_open(&es, dir, (size_t)1 << 30) != 0 ||
	    records_open(&watch, dir) != 0 ||
	    builder_follower_start(dir, es, 1000, &follower) != 0) {
		abort();
	}
	writer_config_t wcfg = { .data_dir = dir, .follower = follower };
	api_config_t cfg = { .data_dir = dir, .edge = es, .writer = writer,
	                     .default_ttl = 300, .ns = zone_ns,
	                     .hostmaster = "hostmaster.example.net." };
	if (writer_start(&wcfg, &writer) != 0) {
		abort();
	}
	cfg.follower = follower;
	cfg.writer = writer;
	if (api_new(&cfg, &api) != 0) {
		abort();
	}
}

static void services_stop(void)
{
	api_free(api);
	writer_stop(writer);
	builder_follower_stop(follower);
	builder_follower_free(follower);
	records_close(watch);
	edge_close(es);
}

/* What API writes change: the newest change-log event and the TSIG and
 * DNSSEC keys (failed writes roll back, and leave all of them alone). */
#define STATE_COLUMNS 6
typedef struct {
	int64_t v[STATE_COLUMNS];
} state_t;

static state_t state(void)
{
	state_t st = { { -1 } };
	rdb_stmt_t *stmt;
	uint64_t last_seq;
	if (records_last_seq(watch, &last_seq) != 0 ||
	    rdb_prepare(watch->db, RDB_SQL("SELECT"
	                " (SELECT count(*) FROM tsig_keys),"
	                " (SELECT coalesce(max(id), 0) FROM tsig_keys),"
	                " (SELECT count(*) FROM dnssec_keys),"
	                " (SELECT coalesce(max(id), 0) FROM dnssec_keys),"
	                " (SELECT coalesce(sum(active), 0)"
	                " FROM dnssec_keys)"), &stmt) != 0) {
		abort();
	}
	st.v[0] = (int64_t)last_seq; /* The change log's own reader. */
	if (rdb_step(stmt) == RDB_ROW) {
		for (int i = 1; i < STATE_COLUMNS; i++) {
			st.v[i] = rdb_col_int64(stmt, i - 1);
		}
	}
	rdb_done(stmt);
	return st;
}

/* Waits for the follower to build every change committed. */
static void settle(void)
{
	uint64_t last = 0;
	for (int waited = 0; records_last_seq(watch, &last) == 0 &&
	     builder_follower_applied(follower) < last; waited++) {
		if (waited >= SETTLE_MS) {
			fprintf(stderr, "api_request: the follower did not build "
			        "change %llu\n", (unsigned long long)last);
			abort();
		}
		usleep(1000);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	zc_log_set_level(getenv("FUZZ_LOG") ? ZC_LOG_DEBUG : ZC_LOG_ERROR);
	es = fuzz_zone_open();
	const char *dir = fuzz_zone_dir;
	records_token_t admin = { .name = "admin" };
	records_token_t ro = { .name = "ro", .read_only = true };
	records_token_t zone = { .name = "zone", .zone_id = 1 };
	if (es == NULL || api_token_create(dir, &admin, token_admin,
	                                   sizeof(token_admin)) != 0 ||
	    api_token_create(dir, &ro, token_ro, sizeof(token_ro)) != 0 ||
	    api_token_create(dir, &zone, token_zone, sizeof(token_zone)) != 0) {
		abort();
	}
	edge_close(es);
	snprintf(pristine, sizeof(pristine), "%s/pristine", dir);
	if (mkdir(pristine, 0700) != 0) {
		abort();
	}
	copy_files(dir, pristine);
	services_start();
	/* Stopped at exit as cmd_serve stops them, before LeakSanitizer's
	 * check (which took a running follower's connections for leaks). */
	atexit(services_stop);
	return 0;
}

/* The request's query arguments and headers. */
typedef struct {
	char *arg_key[MAX_ARGS], *arg_value[MAX_ARGS];
	size_t args;
	char *header_key[MAX_HEADERS], *header_value[MAX_HEADERS];
	size_t headers;
} values_t;

static const char *lookup(void *ctx, bool header, const char *key,
                          unsigned index)
{
	values_t *v = ctx;
	size_t n = header ? v->headers : v->args;
	if (key == NULL) {
		return index >= n ? NULL : header ? v->header_key[index] :
		       v->arg_key[index];
	}
	for (size_t i = 0; i < n; i++) {
		const char *k = header ? v->header_key[i] : v->arg_key[i];
		if (strcasecmp(k, key) == 0 && index-- == 0) {
			return header ? v->header_value[i] : v->arg_value[i];
		}
	}
	return NULL;
}

/* Splits a query string into unescaped arguments (modifies it). */
static void parse_args(char *query, values_t *v)
{
	char *save = NULL;
	for (char *a = strtok_r(query, "&", &save); a != NULL &&
	     v->args < MAX_ARGS; a = strtok_r(NULL, "&", &save)) {
		for (char *p = a; *p != '\0'; p++) {
			*p = *p == '+' ? ' ' : *p;
		}
		char *eq = strchr(a, '=');
		if (eq != NULL) {
			*eq = '\0';
			MHD_http_unescape(eq + 1);
		}
		MHD_http_unescape(a);
		if (strcmp(a, "wait") != 0) {
			v->arg_key[v->args] = a;
			v->arg_value[v->args++] = eq != NULL ? eq + 1 : NULL;
		}
	}
}

/* An Authorization value: "ro", "zone" and "admin" name a token. */
static char *token(char *value, char *auth, size_t size)
{
	const char *t = strcmp(value, "ro") == 0 ? token_ro :
	                strcmp(value, "zone") == 0 ? token_zone :
	                strcmp(value, "admin") == 0 ? token_admin : NULL;
	if (t == NULL) {
		return value;
	}
	snprintf(auth, size, "Bearer %s", t);
	return auth;
}

/* Reads "Name: value" lines up to an empty one; returns the body. */
static char *parse_headers(char *p, values_t *v, char *auth, size_t size)
{
	bool has_auth = false;
	while (p != NULL && *p != '\0' && *p != '\n') {
		char *end = strchr(p, '\n');
		if (end != NULL) {
			*end = '\0';
		}
		char *colon = strchr(p, ':');
		if (colon != NULL && v->headers < MAX_HEADERS) {
			*colon = '\0';
			char *value = colon + 1 + strspn(colon + 1, " ");
			if (strcasecmp(p, "Authorization") == 0) {
				has_auth = true;
				value = token(value, auth, size);
			}
			v->header_key[v->headers] = p;
			v->header_value[v->headers++] = value;
		}
		p = end != NULL ? end + 1 : NULL;
	}
	if (!has_auth && v->headers < MAX_HEADERS) {
		snprintf(auth, size, "Bearer %s", token_admin);
		v->header_key[v->headers] = "Authorization";
		v->header_value[v->headers++] = auth;
	}
	return p != NULL && *p == '\n' ? p + 1 : p;
}

/* The response must be the envelope, agreeing with the status. */
static void check_response(const api_req_t *req, const char *text,
                           size_t len, bool json)
{
	unsigned status = req->status ? req->status : 200;
	if (status < 200 || status > 599) {
		fprintf(stderr, "api_request: HTTP status %u\n", status);
		abort();
	}
	if (!json) {
		return;
	}
	json_error_t err;
	json_t *env = json_loadb(text, len, 0, &err);
	json_t *success = json_object_get(env, "success");
	json_t *errors = json_object_get(env, "errors");
	if (env == NULL || !json_is_boolean(success) || !json_is_array(errors) ||
	    json_is_true(success) != (status < 400) ||
	    (status >= 400 && json_array_size(errors) == 0)) {
		fprintf(stderr, "api_request: HTTP %u with %.*s\n", status,
		        (int)(len < 2000 ? len : 2000), text);
		abort();
	}
	size_t i;
	json_t *e;
	json_array_foreach(errors, i, e) {
		if (!json_is_string(json_object_get(e, "message"))) {
			fprintf(stderr, "api_request: error without a message: "
			        "%.*s\n", (int)(len < 2000 ? len : 2000), text);
			abort();
		}
	}
	json_decref(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	state_t before = state();
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* The method and the URL: the first two lines. */
	char *method = buf;
	char *url = memchr(buf, '\n', size);
	char *rest = NULL;
	if (url != NULL) {
		*url++ = '\0';
		rest = strchr(url, '\n');
		if (rest != NULL) {
			*rest++ = '\0';
		}
	} else {
		url = buf + size;
	}
	values_t v = { .args = 0 };
	char auth[128];
	char *body = parse_headers(rest, &v, auth, sizeof(auth));
	size_t body_len = body != NULL ? size - (size_t)(body - buf) : 0;
	char *query = strchr(url, '?');
	if (query != NULL) {
		*query++ = '\0';
		parse_args(query, &v);
	}
	MHD_http_unescape(url);
	api_req_t req = { .api = api, .lookup = lookup, .lookup_ctx = &v,
	                  .method = method };
	/* As libmicrohttpd hands it over: in pieces. */
	size_t half = body_len / 2;
	if ((half > 0 && api_req_body(&req, body, half) != 0) ||
	    (body_len > 0 && api_req_body(&req, body + half,
	                                  body_len - half) != 0)) {
		abort();
	}
	api_dispatch(&req, url);
	size_t len;
	bool json;
	char *text = api_response(&req, &len, &json);
	if (text == NULL) {
		abort();
	}
	check_response(&req, text, len, json);
	free(text);
	api_req_clear(&req);
	free(buf);
	state_t after = state();
	if (memcmp(&before, &after, sizeof(before)) != 0) {
		/* Built, then back to the first stores. */
		settle();
		services_stop();
		copy_files(fuzz_zone_dir, NULL);
		copy_files(pristine, fuzz_zone_dir);
		services_start();
	}
	return 0;
}
