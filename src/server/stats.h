/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the DNS workers count for the metrics endpoint: answers by query
 * type and RCODE, answer time, messages handed to the hooks, RRL verdicts,
 * DNS Cookie outcomes.
 *
 * Design
 *
 * Each worker owns a server_worker_stats_t, allocated on a cache line of
 * its own and written only by that worker (zc_local_add(): a plain load
 * and store, no locked instruction, no line shared with another core).
 * server_counts_get() sums every worker's block when the metrics endpoint
 * is scraped; a sum read while workers count is off by at most the
 * queries answered meanwhile, as with any counter read.
 *
 * Answer time is the time a worker spends on one message: from the end of
 * the previous one (or the start of the batch) to the response being
 * ready, RRL included, the socket read and write excluded. One clock read
 * per message (about 25 ns on a vDSO clock), no more.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"

/* Query types counted by name; others are counted as "other". */
#define SERVER_STATS_TYPES 27
/* RCODEs counted by name (0-10, BADVERS); others as "other". */
#define SERVER_STATS_RCODES 13
/* Answer time buckets (upper bounds in ns, server_stats_latency_bounds). */
#define SERVER_STATS_LATENCY_BUCKETS 14

typedef enum {
	SERVER_STATS_UDP,
	SERVER_STATS_TCP,
	SERVER_STATS_PROTOS
} server_stats_proto_t;

/* Messages the workers hand to the hooks (server_hooks_t). */
typedef enum {
	SERVER_STATS_UPDATE,
	SERVER_STATS_TRANSFER,
	SERVER_STATS_SIGNED,
	SERVER_STATS_DEFERRED
} server_stats_deferred_t;

/* DNS Cookie outcomes: 0 unchecked (no EDNS, or cookies off), then
 * cookie_result_t + 1 (server/cookie.h): absent, new, valid, malformed. */
#define SERVER_STATS_COOKIES 5

typedef struct {
	_Atomic uint64_t answers[SERVER_STATS_TYPES][SERVER_STATS_RCODES];
	_Atomic uint64_t dropped;      /* no response (not a query, garbage) */
	_Atomic uint64_t deferred[SERVER_STATS_DEFERRED];
	_Atomic uint64_t rrl_dropped;
	_Atomic uint64_t rrl_slipped;
	_Atomic uint64_t cookies[SERVER_STATS_COOKIES];
	_Atomic uint64_t latency[SERVER_STATS_LATENCY_BUCKETS + 1];
	_Atomic uint64_t latency_sum_ns;
} server_worker_stats_t;

/* Sums over every worker of a server, by transport. */
typedef struct {
	uint64_t answers[SERVER_STATS_TYPES][SERVER_STATS_RCODES];
	uint64_t dropped;
	uint64_t deferred[SERVER_STATS_DEFERRED];
	uint64_t cookies[SERVER_STATS_COOKIES];
	zc_hist_read_t latency;
} server_proto_stats_t;

typedef struct {
	server_proto_stats_t proto[SERVER_STATS_PROTOS];
	uint64_t rrl_dropped;
	uint64_t rrl_slipped;
	uint64_t sigcache_hits;
	uint64_t sigcache_misses;
	unsigned workers;              /* UDP and TCP worker threads */
} server_counts_t;

/* The name of query type index i ("A", ..., "other", "none": no
 * question), of RCODE index i ("NOERROR", ..., "other"), of cookie
 * outcome i and of deferred message kind i. */
const char *server_stats_type_name(unsigned i);
const char *server_stats_rcode_name(unsigned i);
const char *server_stats_cookie_name(unsigned i);
const char *server_stats_deferred_name(unsigned i);

struct server;
/* Sums the workers' blocks (any thread, while the server runs). */
void server_counts_get(struct server *s, server_counts_t *out);

/* --- For the workers (udp.c, tcp.c) --- */

/*
 * Counts one answered message: resp/len the response (len 0: none sent),
 * the query type and RCODE read from it (the extended RCODE from
 * rcode_hint when not negative), cookie the cookie outcome, and the time
 * since `since` (a zc_clock_ns() value). Returns the clock now, the
 * `since` of the next message.
 */
uint64_t server_stats_answer(server_worker_stats_t *st, const uint8_t *resp,
                             size_t len, int rcode_hint, unsigned cookie,
                             uint64_t since);

/* Counts a message handed to a hook; returns the clock now. */
uint64_t server_stats_deferral(server_worker_stats_t *st,
                               server_stats_deferred_t kind);

static inline void server_stats_rrl(server_worker_stats_t *st, bool dropped)
{
	zc_local_add(dropped ? &st->rrl_dropped : &st->rrl_slipped, 1);
}
