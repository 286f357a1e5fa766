/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: one request being handled, the request path without
 * the HTTP server (what the libmicrohttpd callbacks and the api_request
 * fuzz target run), and the handlers. */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <microhttpd.h>

#include "api/api.h"
#include "writer/writer.h"
#include "records/records.h"

#define API_POOL_SIZE 16

struct api {
	api_config_t cfg;
	struct MHD_Daemon *daemon;
	writer_t *writer;
	pthread_mutex_t pool_lock;               /* Guards pool and pool_used. */
	records_store_t *pool[API_POOL_SIZE];    /* Read connections. */
	bool pool_used[API_POOL_SIZE];
};

/* Looks up a query argument (header false) or a header of the request;
 * NULL when absent. */
typedef const char *(*api_lookup_fn)(void *ctx, bool header,
                                     const char *key);

typedef struct {
	api_t *api;
	api_lookup_fn lookup;   /* libmicrohttpd's connection values. */
	void *lookup_ctx;
	const char *method;
	char *body;
	size_t body_len;
	bool too_big;
	size_t discarded;       /* Body bytes read past the limit. */
	bool answered;          /* A response is queued. */
	/* Authorisation of the bearer token. */
	bool read_only;
	int64_t token_zone;     /* 0: every zone. */
	records_store_t *rs;    /* Pooled read connection. */
	/* The response being built. */
	unsigned status;
	json_t *result;         /* Owned; NULL: null. */
	json_t *result_info;    /* Owned; optional. */
	json_t *errors;         /* Owned array. */
	int64_t version;        /* Zone version produced (0: none). */
	char etag[64];
	char *raw;              /* Non-JSON body (export), owned. */
	size_t raw_len;
} api_req_t;

/* The API without its HTTP server: the configuration and the records
 * connection pool. api_start() is api_new() and the daemon. */
int api_new(const api_config_t *cfg, api_t **out);
void api_free(api_t *api);

/* Appends a piece of the request body (kept NUL-terminated); past the
 * body limit the request is only marked too big. KNOT_ENOMEM or ZC_EOK. */
int api_req_body(api_req_t *req, const char *data, size_t size);

/* Answers a request whose body is complete: 413 when too big, else
 * authentication, routing on the (unescaped) URL path and the handler,
 * which fill in the response part of req. */
void api_dispatch(api_req_t *req, const char *url);

/* The response body: the export's text (*json false) or the JSON
 * envelope; the caller frees it. NULL when out of memory. */
char *api_response(api_req_t *req, size_t *len, bool *json);

/* Frees what req owns (not req). */
void api_req_clear(api_req_t *req);

/* Records an error (HTTP status, Cloudflare-style code, message). */
void api_error(api_req_t *req, unsigned status, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Maps a zonecast code to an HTTP status and message (one table). */
void api_error_code(api_req_t *req, int ret, const char *what);

const char *api_query_arg(api_req_t *req, const char *key);
const char *api_header(api_req_t *req, const char *key);

/* Parses the JSON body; on failure records a 400 and returns NULL. */
json_t *api_body_json(api_req_t *req);

/* Zone and record ids as 32 hex digits. */
void api_id_format(int64_t id, char out[33]);
int64_t api_id_parse(const char *text);

/* Reads page (1 to 2^31-1, default 1) and per_page (1 to 50000, default
 * 100); false after a 400. */
bool api_paging(api_req_t *req, long *page, long *per_page);

/* Sets a listing's result and Cloudflare's result_info (takes list), or
 * the error for ret. */
void api_list_result(api_req_t *req, int ret, json_t *list, long page,
                     long per_page, long total, const char *what);

/* Checks the token's scope for a zone (0: account-level) and writes. */
bool api_allowed(api_req_t *req, int64_t zone_id, bool write);

/* ISO 8601 time from Unix milliseconds. */
json_t *api_time(int64_t ms);

/* Handlers (zones.c, dns_records.c, tsig_keys.c). parts[] are the URL's
 * path segments after /client/v4/ (after the zone for zone resources). */
void api_zones(api_req_t *req, char **parts, int count);
void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count);
void api_tsig_keys(api_req_t *req, const records_zone_t *zone, char **parts,
                   int count);
void api_dnssec(api_req_t *req, const records_zone_t *zone);
void api_secondaries(api_req_t *req, const records_zone_t *zone);

/* Token hashing (auth.c). */
int api_token_hash(const char *token, uint8_t out[32]);
int api_authenticate(api_req_t *req);
