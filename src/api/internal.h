/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: the types every file of the API shares, the API object
 * and one request being handled. The functions are declared by the file
 * that defines them (request.h, reply.h, router.h, ...); docs/architecture.md
 * ("The API's files") shows which depends on which.
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api/api.h"
#include "writer/writer.h"
#include "records/records.h"

#define API_POOL_SIZE 16

/* Whether a request of this method only reads (GET, HEAD; NULL: no): it
 * takes a read connection of the pool (pool.c) and is not told "nothing
 * was written" (reply.c, router.c); audit.c lines read alike. */
static inline bool api_method_reads(const char *method)
{
	return method != NULL &&
	       (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
}

struct MHD_Daemon;

struct api {
	api_config_t cfg;
	struct MHD_Daemon *daemon;
	writer_t *writer;
	pthread_mutex_t pool_lock;               /* Guards pool_used. */
	pthread_cond_t pool_free;                /* Signals a slot freed. */
	records_store_t *pool[API_POOL_SIZE];    /* Read connections. */
	bool pool_used[API_POOL_SIZE];
	_Atomic bool stopping;                   /* api_stop() began: waits end. */
	_Atomic int in_flight;                   /* Requests not yet completed. */
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
	const char *allow;      /* The methods the URL path takes, as an
	                           Allow field (router.c's table; NULL: no
	                           such path). */
	char *body;
	size_t body_len;
	bool too_big;
	bool args_checked;      /* The handler checked the query's names. */
	size_t discarded;       /* Body bytes read past the limit. */
	bool answered;          /* A response is queued. */
	bool close;             /* The response closes the connection. */
	bool in_flight;         /* Counted in api_t.in_flight (server.c). */
	/* Authorisation of the bearer token. */
	bool read_only;
	int64_t token_zone;     /* 0: every zone. */
	int64_t token_id;       /* 0: no valid token (audit lines). */
	char client[64];        /* "ADDR#PORT" ("": unknown). */
	records_store_t *rs;    /* Pooled read connection (NULL once */
	int pool_slot;          /* given back: api_store_release()). */
	/* The response being built. */
	unsigned status;
	json_t *result;         /* Owned; NULL: null. */
	char *result_text;      /* Owned: the result written as JSON text */
	size_t result_text_len; /* (json_text.h), used instead of result. */
	/* The record ids a result written as text names, for the audit line
	 * (api_audit_id(); audit.c reads those of a jansson result itself). */
	struct {
		char text[720];     /* 20 ids of 32 characters and "+N more" */
		size_t len;
		unsigned count, shown;
	} audit_ids;
	json_t *result_info;    /* Owned; optional. */
	json_t *errors;         /* Owned array. */
	int64_t version;        /* Zone version produced, when versioned */
	bool versioned;         /* (a serial may be 0: RFC 1982 wraps). */
	bool wait_live;         /* ?wait=live: answer once it is served. */
	int live;               /* With wait_live: 1 served, 0 not (yet). */
	int64_t live_zone_id;   /* The zone the version belongs to. */
	uint8_t live_apex[KNOT_DNAME_MAXLEN];
	uint64_t live_seq;      /* The write's commit position (api_write();
	                           0: unknown). */
	bool write_lost;        /* api_write(): the unit ran, and its transaction
	                         * was lost after (writer_unit_t.lost): what
	                         * it concluded (its message) is void. */
	char note[512];         /* A message for the envelope ("": none). */
	int note_code;          /* Its code (0: 1202). */
	char etag[64];
	char *raw;              /* Non-JSON body (export), owned. */
	size_t raw_len;
} api_req_t;
