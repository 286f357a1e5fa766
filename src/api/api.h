/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * HTTP/JSON API shaped like Cloudflare's API v4 DNS endpoints.
 *
 * Design
 *
 * libmicrohttpd runs a thread per connection; a handler reads with a
 * records-store connection from a small pool and writes through the group
 * committer (writer/writer.h): every write request is a unit of work run inside
 * a savepoint of the committer's current transaction, so concurrent
 * requests share one fsync while each keeps its own zone version and its
 * own outcome. After a commit the builder is woken at once; the response
 * carries the version the request produced (a propagation receipt), and
 * GET .../propagation?version=N&wait=S tells when the edge serves it; a
 * write with ?wait=live answers only once it is served (live.c). Writes
 * to a quarantined zone (builder.h) are refused with 409.
 *
 * Errors use the Cloudflare envelope: {"success": false, "errors":
 * [{"code": N, "message": "..."}]} with an HTTP 4xx naming the field.
 */
#pragma once

#include <stdint.h>

#include "builder/builder.h"
#include "edge/edge.h"
#include "fleet/fleet.h"
#include "records/records.h"
#include "writer/writer.h"

typedef struct {
	const char *listen;      /* "ADDR:PORT" */
	int listen_fd;           /* > 0: the socket api_bind() made for listen,
	                            taken over; 0: api_start() binds listen. */
	const char *data_dir;
	edge_store_t *edge;
	builder_follower_t *follower;
	writer_t *writer;        /* The group committer (shared with UPDATE). */
	fleet_primary_t *fleet;  /* Edges fed through NATS (NULL: none). */
	uint32_t default_ttl;    /* For zones created through the API. */
	const char *const *ns;   /* NS names for new zones (text), NULL-ended. */
	const char *hostmaster;  /* SOA RNAME for new zones. */
	int serial_policy;       /* records_serial_policy_t of new zones. */
	/* Limits (docs/configuration.md); 0 takes the API_DEFAULT_ value. */
	size_t max_body;         /* Largest request body accepted, bytes. */
	unsigned timeout_s;      /* Inactivity before a connection is closed. */
	unsigned max_clients;    /* Open connections in all. */
	unsigned max_clients_per_ip; /* Open connections from one address. */
	unsigned live_wait_ms;   /* Longest ?wait=live wait (0: default). */
} api_config_t;

#define API_DEFAULT_MAX_BODY (8u << 20)
#define API_DEFAULT_TIMEOUT_S 10u
#define API_DEFAULT_MAX_CLIENTS 512u
#define API_DEFAULT_MAX_CLIENTS_PER_IP 32u
#define API_DEFAULT_LIVE_WAIT_MS 5000u

typedef struct api api_t;

/*
 * Binds and listens on the API address ("ADDR:PORT") before the server
 * starts, so that a busy address stops a start before anything else is
 * done; *fd is for api_config_t.listen_fd. Logs why not (-EADDRINUSE:
 * another process listens there).
 */
int api_bind(const char *listen, int *fd);

/* Starts the API server. The caller stops it with api_stop(). */
int api_start(const api_config_t *cfg, api_t **out);

/* Stops the server, waits for requests in flight, frees api (NULL: no-op). */
void api_stop(api_t *api);

/* Applies a new body limit and ?wait=live bound (a reload; 0: the
 * defaults) to a running API: the next request is judged by them. */
void api_reconfigure(api_t *api, size_t max_body, unsigned live_wait_ms);

/*
 * Creates an API token and prints nothing: stores tok (its name,
 * read_only, zone_id (0: every zone) and expires_on; id and times are
 * set) with the hash of a new secret, and writes the secret (to show
 * once: only its hash is kept) into out (at least 64 bytes).
 */
int api_token_create(const char *data_dir, records_token_t *tok, char *out,
                     size_t out_size);

/* Ids as the API writes them (32 lower-case hex digits) and reads them
 * back, in that form only (0: not an id). */
void api_id_text(int64_t id, char out[33]);
int64_t api_id_value(const char *text);

/* A UTC time as the API takes it (RFC 3339: 2027-01-31T12:00:00Z, with
 * optional fractional seconds; or a date, 2027-01-31) in Unix
 * milliseconds. ZC_EUSAGE when it is none. */
int api_time_parse(const char *text, int64_t *ms);
