/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Metrics and health over HTTP: Prometheus text format on /metrics,
 * liveness on /healthz, readiness on /readyz, on a listener of its own
 * (metrics-listen, off by default).
 *
 * Design
 *
 * Nothing is counted here: every stage keeps its own numbers (the DNS
 * workers per worker, server/stats.h; the writer, builder, transfers,
 * NOTIFY and TSIG in process-wide counters, common/counters.h) and a
 * scrape reads them all and formats them (collect.c, text.c). So a scrape
 * costs the query path nothing, and an idle endpoint costs nothing at all.
 *
 * The listener is unauthenticated, as node_exporter's: metrics say how
 * busy the server is and which zones it serves (the DNS tells as much),
 * never a record, key or token. Bind it to loopback or a management
 * network (docs/metrics.md). It runs one thread (libmicrohttpd, internal
 * polling), so scrapes are serialised and a slow client holds up only
 * other scrapes, never DNS.
 *
 * Readiness (/readyz, 200 or 503 with the reasons): for `zonecast serve`,
 * the DNS workers run, the builder is not stalled on a storage error and
 * has applied every change committed more than ready_lag_ms ago; for
 * `zonecast edge`, it has loaded the fleet's data and its NATS connection
 * is up.
 *
 * Order: metrics_start() after the stages it reads have started,
 * metrics_stop() before any of them stops.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "builder/builder.h"
#include "edge/edge.h"
#include "fleet/fleet.h"
#include "server/server.h"

/* Per-zone series (serial, changes) for this many zones by default. */
#define METRICS_DEFAULT_ZONE_LIMIT 1000
/* Builder lag /readyz accepts by default. */
#define METRICS_DEFAULT_READY_LAG_MS 2000

typedef struct {
	const char *listen;          /* "ADDR:PORT", for the log */
	int listen_fd;               /* metrics_bind()'s socket (taken) */
	const char *data_dir;        /* Records store (builder lag, zone
	                              * changes); NULL: none (an edge). */
	server_t *server;            /* DNS workers (required) */
	edge_store_t *edge;          /* Required */
	builder_follower_t *follower;/* NULL on an edge */
	fleet_primary_t *fleet;      /* The primary's publisher, or NULL */
	fleet_edge_t *fleet_edge;    /* An edge's follower, or NULL */
	unsigned zone_limit;         /* 0: no per-zone series */
	unsigned ready_lag_ms;       /* 0: METRICS_DEFAULT_READY_LAG_MS */
} metrics_config_t;

typedef struct metrics metrics_t;

/*
 * Binds listen ("ADDR:PORT", "[V6]:PORT") for the endpoint: call it with
 * the other listeners, before privileges are dropped. Logs why not
 * (-EADDRINUSE: another process has it).
 */
int metrics_bind(const char *listen, int *fd);

/* Starts serving on cfg->listen_fd (taken, also on failure). cfg's
 * pointers must outlive the metrics_t. */
int metrics_start(const metrics_config_t *cfg, metrics_t **out);

/* Stops the listener and frees m (NULL: no-op). */
void metrics_stop(metrics_t *m);

/* --- For the listener and the tests (collect.c) --- */

/*
 * Formats every metric in Prometheus text format (version 0.0.4) into
 * *text (malloc'd, the caller frees) of *len bytes. ZC_EOK or KNOT_ENOMEM.
 */
int metrics_collect(metrics_t *m, char **text, size_t *len);

/* Whether the server is ready; why not, when not, in why. */
bool metrics_ready(metrics_t *m, char *why, size_t why_size);
