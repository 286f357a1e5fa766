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

/* Looks up a query argument (header false) or a header of the request,
 * the index-th (from 0) of those with that name (any case); NULL when
 * there are not that many. With key NULL: the name of the index-th
 * argument or header (NULL past the last). */
typedef const char *(*api_lookup_fn)(void *ctx, bool header,
                                     const char *key, unsigned index);

typedef struct {
	api_t *api;
	api_lookup_fn lookup;   /* libmicrohttpd's connection values. */
	void *lookup_ctx;
	const char *method;
	char *body;
	size_t body_len;
	bool too_big;
	bool args_checked;      /* The handler checked the query's names. */
	size_t discarded;       /* Body bytes read past the limit. */
	bool answered;          /* A response is queued. */
	/* Authorisation of the bearer token. */
	bool read_only;
	int64_t token_zone;     /* 0: every zone. */
	int64_t token_id;       /* 0: no valid token (audit lines). */
	char client[64];        /* "ADDR#PORT" ("": unknown). */
	records_store_t *rs;    /* Pooled read connection. */
	/* The response being built. */
	unsigned status;
	json_t *result;         /* Owned; NULL: null. */
	json_t *result_info;    /* Owned; optional. */
	json_t *errors;         /* Owned array. */
	int64_t version;        /* Zone version produced (0: none). */
	bool wait_live;         /* ?wait=live: answer once it is served. */
	int live;               /* With wait_live: 1 served, 0 not (yet). */
	int64_t live_zone_id;   /* The zone the version belongs to. */
	uint8_t live_apex[KNOT_DNAME_MAXLEN];
	char note[512];         /* A message for the envelope ("": none). */
	int note_code;          /* Its code (0: 1202). */
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

/* The audit line of a request (audit.c): every write's outcome, and
 * every request refused for its credentials. */
void api_audit(const api_req_t *req, const char *url);

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
/* The index-th argument of that name (repeated filters), or NULL. */
const char *api_query_arg_nth(api_req_t *req, const char *key,
                              unsigned index);
/* Whether the query has the argument, with or without a value. */
bool api_query_has(api_req_t *req, const char *key);
/* Checks that every query argument is one of allowed (NULL-ended; NULL:
 * none; "wait" is always allowed on a write, api_wait_arg()); false
 * after a 400 naming the first other one: a parameter zonecast does not
 * implement is refused, never ignored. A GET whose handler took no
 * arguments gets this check from api_dispatch(). */
bool api_args_only(api_req_t *req, const char *const *allowed);
/* The first header field of that name; api_header_nth() the index-th,
 * api_header_count() how many the request has. */
const char *api_header(api_req_t *req, const char *key);
const char *api_header_nth(api_req_t *req, const char *key, unsigned index);
unsigned api_header_count(api_req_t *req, const char *key);

/* If-Match (RFC 9110 §13.1.1), every field of it in the request. */
#define API_IF_MATCH_MAX 64
#define API_ETAG_MAX 64

typedef struct {
	bool present;            /* The request has If-Match. */
	bool any;                /* "*" */
	unsigned count;          /* Strong entity tags in tags[]. */
	char tags[API_IF_MATCH_MAX][API_ETAG_MAX]; /* With their quotes. */
} api_if_match_t;

/* Reads the request's If-Match fields into m; false after a 400 for one
 * that is no list of entity tags (conditional.c). */
bool api_if_match_parse(api_req_t *req, api_if_match_t *m);

/* Whether a resource with this (strong) ETag meets m: no If-Match, "*",
 * or one of the strong tags is identical (the strong comparison: a weak
 * tag never matches). */
bool api_if_match_ok(const api_if_match_t *m, const char *etag);

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
/* /user/tokens (api/tokens.c). */
void api_user(api_req_t *req, char **parts, int count);
/* GET /fleet (api/fleet.c). */
void api_fleet(api_req_t *req, char **parts, int count);

void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count);
/* A record in Cloudflare's shape (dns_records.c). */
json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec);
/* GET /zones/{id}/dns_records: filters, order, page (record_list.c). */
void api_record_list(api_req_t *req, const records_zone_t *zone);
void api_tsig_keys(api_req_t *req, const records_zone_t *zone, char **parts,
                   int count);
void api_dnssec(api_req_t *req, const records_zone_t *zone);
void api_secondaries(api_req_t *req, const records_zone_t *zone);

/* What is served (live.c). The zone's quarantine as JSON (null: none). */
json_t *api_quarantine_json(api_req_t *req, int64_t zone_id);
/* false after a 409: the zone is quarantined and takes no writes. */
bool api_zone_writable(api_req_t *req, const records_zone_t *zone);
/* Reads ?wait= of a write ("live" only); false after a 400. */
bool api_wait_arg(api_req_t *req);
/* With ?wait=live: waits until the edge store serves req->version of
 * req->live_zone_id (or live-wait passes: 202 and a note). */
void api_wait_live(api_req_t *req);
/* GET /zones/{id}/propagation. */
void api_propagation(api_req_t *req, const records_zone_t *zone);
/* POST /zones/{id}/retry; zone_json renders the zone. */
void api_zone_retry(api_req_t *req, const records_zone_t *zone,
                    json_t *(*zone_json)(api_req_t *, const records_zone_t *));

/* Token hashing (auth.c). */
int api_token_hash(const char *token, uint8_t out[32]);
int api_authenticate(api_req_t *req);
