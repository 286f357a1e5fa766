/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The request path without the HTTP server: the API object (its
 * configuration and the pool of read connections), and the dispatch of a
 * complete request: the body limit, authentication, the route table on
 * the URL path and the handler, the ?wait=live wait and the audit line.
 * The libmicrohttpd callbacks (server.c) and the api_request fuzz target
 * both call api_dispatch().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "api/audit.h"
#include "api/auth.h"
#include "api/fleet.h"
#include "api/live.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/router.h"
#include "api/tokens.h"
#include "api/zones.h"
#include "common/error.h"

#define PREFIX "/client/v4/"
#define MAX_PARTS 8

/* A free read connection of the pool (opened at its first use) and its
 * slot, or NULL when every one is taken. */
static records_store_t *pool_get(api_t *api, int *slot)
{
	pthread_mutex_lock(&api->pool_lock);
	for (int i = 0; i < API_POOL_SIZE; i++) {
		if (!api->pool_used[i]) {
			api->pool_used[i] = true;
			if (api->pool[i] == NULL &&
			    records_open(&api->pool[i], api->cfg.data_dir) != ZC_EOK) {
				api->pool_used[i] = false;
				break;
			}
			*slot = i;
			pthread_mutex_unlock(&api->pool_lock);
			return api->pool[i];
		}
	}
	pthread_mutex_unlock(&api->pool_lock);
	return NULL;
}

static void pool_put(api_t *api, int slot)
{
	pthread_mutex_lock(&api->pool_lock);
	api->pool_used[slot] = false;
	pthread_mutex_unlock(&api->pool_lock);
}

/* Splits the path after the prefix into segments (modifies path). */
static int split(char *path, char **parts)
{
	int n = 0;
	char *save = NULL;
	for (char *p = strtok_r(path, "/", &save); p != NULL && n < MAX_PARTS;
	     p = strtok_r(NULL, "/", &save)) {
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

static void route(api_req_t *req, const char *url)
{
	if (strncmp(url, PREFIX, strlen(PREFIX)) != 0) {
		api_error(req, 404, 7003, "url: no route for %s", url);
		return;
	}
	char path[1024];
	snprintf(path, sizeof(path), "%s", url + strlen(PREFIX));
	char *parts[MAX_PARTS];
	int n = split(path, parts);
	for (size_t i = 0; n >= 1 && i < sizeof(routes) / sizeof(routes[0]);
	     i++) {
		if (strcmp(parts[0], routes[i].segment) == 0) {
			routes[i].handler(req, parts, n);
			return;
		}
	}
	api_error(req, 404, 7003, "url: no route for %s", url);
}

void api_dispatch(api_req_t *req, const char *url)
{
	if (req->too_big) {
		api_error(req, 413, 1413, "body: larger than the limit of %zu "
		          "bytes (api-max-body)", api_max_body(req->api));
		return;
	}
	int slot = -1;
	req->rs = pool_get(req->api, &slot);
	if (req->rs == NULL) {
		api_error(req, 503, 1503, "server: no database connection free");
		return;
	}
	bool get = strcmp(req->method, "GET") == 0;
	if (api_authenticate(req) == ZC_EOK && api_wait_arg(req) &&
	    (get || api_args_only(req, NULL))) {
		route(req, url);
		/* A GET whose handler takes no arguments: any given is one
		 * zonecast does not implement (a GET has changed nothing). */
		if (get && !req->args_checked && req->errors == NULL) {
			api_args_only(req, NULL);
		}
	}
	pool_put(req->api, slot);
	/* After the connection went back: waiting holds none. */
	api_wait_live(req);
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
	pthread_mutex_destroy(&api->pool_lock);
	free(api);
}
