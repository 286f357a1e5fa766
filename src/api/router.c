/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The request path without the HTTP server: the API object (its
 * configuration and its pool of read connections, pool.c), and the
 * dispatch of a complete request: the body limit, authentication, the
 * path table (404, 405, 414) and the handler, the ?wait=live wait and the
 * audit line.
 * The libmicrohttpd callbacks (server.c) and the api_request fuzz target
 * both call api_dispatch().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "api/audit.h"
#include "api/auth.h"
#include "api/fleet.h"
#include "api/live.h"
#include "api/pool.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/router.h"
#include "api/tokens.h"
#include "api/zones.h"
#include "common/error.h"

#define PREFIX "/client/v4/"
#define MAX_PARTS 8

/* Splits the path after the prefix into segments (modifies path); more
 * than MAX_PARTS gives MAX_PARTS + 1, which no path of the table has
 * (the rest was dropped, and a longer path taken for a shorter one). */
static int split(char *path, char **parts)
{
	int n = 0;
	char *save = NULL;
	for (char *p = strtok_r(path, "/", &save); p != NULL;
	     p = strtok_r(NULL, "/", &save)) {
		if (n == MAX_PARTS) {
			return MAX_PARTS + 1;
		}
		parts[n++] = p;
	}
	return n;
}

/* The route table: the first path segment after the prefix names the
 * handler, which routes the rest. */
static const struct {
	const char *segment;
	void (*handler)(api_req_t *req, char **parts, int count);
} routes[] = {
	{ "zones", api_zones },   /* zones.c, with a zone's resources */
	{ "user", api_user },     /* tokens.c */
	{ "fleet", api_fleet },   /* fleet.c */
};

/* Every path of the API and the methods it takes, as its Allow field: the
 * one list a 405 is answered from, before any lookup, so a method a path
 * does not take gets 405 (not the 404 of a handler matching method and
 * path together) whatever its ids. "*" stands for one segment (an id);
 * the first path that matches counts, so names come before "*". HEAD is
 * listed wherever GET is (api_dispatch() answers it as the GET). */
static const struct {
	const char *path;
	const char *allow;
} paths[] = {
	{ "zones", "GET, HEAD, POST" },
	{ "zones/*", "GET, HEAD, PATCH, DELETE" },
	{ "zones/*/dns_records", "GET, HEAD, POST" },
	{ "zones/*/dns_records/batch", "POST" },
	{ "zones/*/dns_records/import", "POST" },
	{ "zones/*/dns_records/export", "GET, HEAD" },
	{ "zones/*/dns_records/*", "GET, HEAD, PUT, PATCH, DELETE" },
	{ "zones/*/dnssec", "GET, HEAD, PATCH, DELETE" },
	{ "zones/*/secondaries", "GET, HEAD, PUT, PATCH" },
	{ "zones/*/tsig_keys", "GET, HEAD, POST" },
	{ "zones/*/tsig_keys/*", "DELETE" },
	{ "zones/*/propagation", "GET, HEAD" },
	{ "zones/*/retry", "POST" },
	{ "user/tokens", "GET, HEAD, POST" },
	{ "user/tokens/verify", "GET, HEAD" },
	{ "user/tokens/permission_groups", "GET, HEAD" },
	{ "user/tokens/*", "GET, HEAD, DELETE" },
	{ "fleet", "GET, HEAD" },
};

/* Whether the n segments have the shape of pattern: its segments parted
 * by '/', each the same or "*", which takes any. */
static bool path_matches(const char *pattern, char **parts, int n)
{
	int i = 0;
	for (const char *p = pattern; *p != '\0'; i++) {
		size_t len = strcspn(p, "/");
		if (i == n || (strncmp(p, "*", len) != 0 &&
		               (strlen(parts[i]) != len ||
		                strncmp(p, parts[i], len) != 0))) {
			return false;
		}
		p += len + (p[len] == '/');
	}
	return i == n;
}

/* Whether method is one of allow's comma-separated methods. */
static bool method_listed(const char *allow, const char *method)
{
	size_t len = strlen(method);
	for (const char *p = allow; *p != '\0'; p += strspn(p, ", ")) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, method, len) == 0) {
			return true;
		}
		p += n;
	}
	return false;
}

/* Splits the URL path into parts and finds it in the table: false, with
 * 404, 405 or 414 answered, when no handler takes the request. */
static bool match(api_req_t *req, const char *url, char *path, size_t size,
                  char **parts, int *n)
{
	*n = 0;
	if (strncmp(url, PREFIX, strlen(PREFIX)) == 0) {
		/* Whole or not at all: cut at size, a path of a record with
		 * many '/' after the zone's id was the zone's. */
		const char *rest = url + strlen(PREFIX);
		size_t len = strlen(rest);
		if (len >= size) {
			api_error(req, 414, 1004, "url: a path longer than %zu "
			          "octets", size - 1);
			return false;
		}
		memcpy(path, rest, len + 1);
		*n = split(path, parts);
	}
	for (size_t i = 0; *n > 0 && *n <= MAX_PARTS &&
	     i < sizeof(paths) / sizeof(paths[0]);
	     i++) {
		if (path_matches(paths[i].path, parts, *n)) {
			req->allow = paths[i].allow;
			if (!method_listed(req->allow, req->method)) {
				api_method_not_allowed(req);
				return false;
			}
			return true;
		}
	}
	api_error(req, 404, 7003, "url: no route for %s", url);
	return false;
}

/* Hands a request match() let through to its handler. */
static void route(api_req_t *req, char **parts, int n)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(parts[0], routes[i].segment) == 0) {
			routes[i].handler(req, parts, n);
			return;
		}
	}
	api_error(req, 404, 7003, "url: no route for %s", parts[0]);
}

/* api_dispatch() but its audit line. */
static void dispatch(api_req_t *req, const char *url)
{
	if (req->too_big) {
		api_error(req, 413, 1413, "body: larger than the limit of %zu "
		          "bytes (api-max-body)", api_max_body(req->api));
		return;
	}
	/* Without credentials (none, two, not a token's form): answered
	 * at once, holding no store connection, waiting for none. */
	if (api_credentials_present(req) != ZC_EOK) {
		return;
	}
	int slot = -1;
	bool full;
	bool read = api_method_reads(req->method);
	int ret = api_pool_get(req->api, read, &slot, &req->rs, &full);
	int slots = read ? API_POOL_SIZE - API_POOL_WRITE_RESERVE :
	            API_POOL_SIZE - API_POOL_READ_RESERVE;
	/* A read is not told "nothing was written" (docs/api.md). */
	const char *written = read ? "" : "; nothing was written";
	if (full && atomic_load(&req->api->stopping)) {
		api_error(req, 503, 1503, "server: stopping, and all %d records "
		          "store connections %sare in use%s: retry", slots,
		          read ? "for reads " : "", written);
		return;
	}
	if (full) {
		api_error(req, 503, 1503, "server: busy, all %d records store "
		          "connections %sstayed in use for %d s%s: retry", slots,
		          read ? "for reads " : "", API_POOL_WAIT_S, written);
		return;
	}
	if (ret != ZC_EOK) {
		/* Opening the connection failed (PostgreSQL away). */
		api_error(req, 503, 1503, "records store: %s%s: retry",
		          zc_strerror(ret), written);
		return;
	}
	req->pool_slot = slot;
	/* A HEAD is answered as the GET of its URL (RFC 9110 section
	 * 9.3.2), libmicrohttpd leaving the body out and keeping its
	 * Content-Length: the handlers see GET, so a HEAD reaches GET's
	 * (read-only) handlers and no other; the audit line names HEAD. */
	const char *method = req->method;
	if (strcmp(method, "HEAD") == 0) {
		req->method = "GET";
	}
	bool get = strcmp(req->method, "GET") == 0;
	/* The path and its method before the query: a request no handler
	 * takes gets its 404 or 405 whatever its arguments. */
	char path[1024];
	char *parts[MAX_PARTS];
	int n;
	if (api_authenticate(req) == ZC_EOK &&
	    match(req, url, path, sizeof(path), parts, &n) &&
	    api_method_permitted(req) && api_wait_arg(req) &&
	    (get || api_args_only(req, NULL))) {
		route(req, parts, n);
		/* A GET whose handler takes no arguments: any given is one
		 * zonecast does not implement (a GET has changed nothing). */
		if (get && !req->args_checked && req->errors == NULL) {
			api_args_only(req, NULL);
		}
	}
	req->method = method;
	api_store_release(req);
	/* After the connection went back: waiting holds none. */
	api_wait_live(req);
}

void api_dispatch(api_req_t *req, const char *url)
{
	dispatch(req, url);
	/* Every answer, the early ones too (413, 503 for a busy or
	 * unreachable records store): a write answered with an error is
	 * audited as refused (docs/operations.md, "Audit lines"). */
	api_audit(req, url);
}

int api_new(const api_config_t *cfg, api_t **out)
{
	api_t *api = calloc(1, sizeof(*api));
	if (api == NULL) {
		return KNOT_ENOMEM;
	}
	api->cfg = *cfg;
	pthread_mutex_init(&api->pool_lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&api->pool_free, &attr);
	pthread_condattr_destroy(&attr);
	api->writer = cfg->writer;
	*out = api;
	return ZC_EOK;
}

void api_free(api_t *api)
{
	if (api == NULL) {
		return;
	}
	for (int i = 0; i < API_POOL_SIZE; i++) {
		records_close(api->pool[i]);
	}
	pthread_cond_destroy(&api->pool_free);
	pthread_mutex_destroy(&api->pool_lock);
	free(api);
}
