/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Counters and histograms for the metrics endpoint (src/metrics).
 *
 * Two kinds, by how often they move:
 *
 * - Events off the query path (a group commit, a builder pass, a zone
 *   transfer, a NOTIFY, a TSIG refusal) go to process-wide counters and
 *   histograms here: one relaxed atomic add each, from whichever thread
 *   sees the event. They are rare next to queries, so sharing a cache line
 *   costs nothing measurable. One process runs one server, so "the
 *   process" and "the server" are the same thing.
 * - Query-path counts are per worker (server/stats.h): each worker writes
 *   its own block with zc_local_add() (a plain load and store, no locked
 *   instruction) and the metrics thread only reads.
 *
 * A few gauges (a state only one thread knows, such as whether the records
 * store answers) are kept here too, one relaxed store each.
 *
 * Names and help texts for the exposition live in src/metrics; this file
 * only keeps the numbers.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

typedef enum {
	/* Group committer (writer/writer.c). */
	ZC_COUNT_WRITER_BATCHES,
	ZC_COUNT_WRITER_UNITS_OK,
	ZC_COUNT_WRITER_UNITS_FAILED,
	/* Builder (builder/follow.c). */
	ZC_COUNT_BUILDER_PASSES,
	ZC_COUNT_BUILDER_PASSES_FAILED,
	/* TSIG refusals (dns/tsig.c), by the error answered. */
	ZC_COUNT_TSIG_BADKEY,
	ZC_COUNT_TSIG_BADSIG,
	ZC_COUNT_TSIG_BADTIME,
	ZC_COUNT_TSIG_BADTRUNC,
	ZC_COUNT_TSIG_FORMERR,
	/* Transfers out (transfer/transfer.c), by outcome. */
	ZC_COUNT_XFR_AXFR,          /* AXFR sent whole */
	ZC_COUNT_XFR_IXFR,          /* IXFR sent as differences */
	ZC_COUNT_XFR_IXFR_AXFR,     /* IXFR answered with the whole zone */
	ZC_COUNT_XFR_UP_TO_DATE,    /* IXFR: the client has the serial */
	ZC_COUNT_XFR_REFUSED,       /* ACL, key rights, class, busy */
	ZC_COUNT_XFR_NOTAUTH,       /* not our zone, TSIG failure */
	ZC_COUNT_XFR_FAILED,        /* aborted: client gone, store error */
	/* NOTIFY to secondaries (transfer/notify.c), by outcome. */
	ZC_COUNT_NOTIFY_SENT,       /* every datagram, resends included */
	ZC_COUNT_NOTIFY_ACKED,      /* answered NOERROR */
	ZC_COUNT_NOTIFY_ERROR,      /* answered with another RCODE */
	ZC_COUNT_NOTIFY_TIMEOUT,    /* no answer after every resend */
	ZC_COUNTERS
} zc_counter_t;

/* Upper bounds of histogram buckets, in the histogram's unit. */
#define ZC_HIST_MAX_BUCKETS 16

typedef enum {
	ZC_HIST_WRITER_BATCH_UNITS,   /* units per group commit */
	ZC_HIST_WRITER_COMMIT_NS,     /* COMMIT with its fsync */
	ZC_HIST_BUILDER_PASS_NS,      /* one builder pass that did work */
	/* The records store's latencies (SQLite or PostgreSQL, whichever the
	 * process uses): the writer's batch from BEGIN to the COMMIT
	 * acknowledged, and the builder's read of the change log (the
	 * snapshot opened and the events since the last pass read, every
	 * pass). */
	ZC_HIST_RECORDS_WRITE_NS,
	ZC_HIST_RECORDS_READ_NS,
	ZC_HISTOGRAMS
} zc_histogram_t;

/* Process-wide gauges: set by the one thread that knows the value. */
typedef enum {
	/* 1 while the records store answers (the node's heartbeat on
	 * PostgreSQL, cli/heartbeat.c), 0 while it does not. */
	ZC_GAUGE_RECORDS_STORE_UP,
	ZC_GAUGES
} zc_gauge_t;

/* A histogram as read: per-bucket counts (not cumulative), the last for
 * values above every bound; bounds point to static storage. */
typedef struct {
	unsigned buckets;                        /* finite bounds */
	const uint64_t *bounds;
	uint64_t counts[ZC_HIST_MAX_BUCKETS + 1];
	uint64_t sum;
} zc_hist_read_t;

/* Adds n to a process-wide counter (any thread). */
void zc_count_add(zc_counter_t c, uint64_t n);

static inline void zc_count(zc_counter_t c)
{
	zc_count_add(c, 1);
}

uint64_t zc_counter_get(zc_counter_t c);

/* Records one value in a process-wide histogram (any thread). */
void zc_observe(zc_histogram_t h, uint64_t value);

void zc_histogram_get(zc_histogram_t h, zc_hist_read_t *out);

void zc_gauge_set(zc_gauge_t g, int64_t value);
int64_t zc_gauge_get(zc_gauge_t g);

/* Index of the bucket value falls in, among n ascending bounds (n when
 * above them all). */
static inline unsigned zc_bucket(const uint64_t *bounds, unsigned n,
                                 uint64_t value)
{
	unsigned i = 0;
	while (i < n && value > bounds[i]) {
		i++;
	}
	return i;
}

/*
 * Adds n to a counter that only the calling thread writes (a worker's
 * own block) while others may read it: a relaxed load and store, which
 * compile to plain moves, never a locked instruction.
 */
static inline void zc_local_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) +
	                      n, memory_order_relaxed);
}

static inline uint64_t zc_local_get(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t zc_clock_ns(void);
