/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Process-wide counters and histograms (see counters.h). */
#include <time.h>

#include "common/counters.h"

static _Atomic uint64_t counters[ZC_COUNTERS];

/* Group sizes: 1 to 10,000 units. */
static const uint64_t batch_bounds[] = {
	1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 10000,
};

/* Commits: an fsync takes 0.1 ms on a fast SSD, 10 ms on a disk. */
static const uint64_t commit_bounds[] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};

/* Builder passes: tens of microseconds idle, up to seconds for a pass
 * that takes 65,536 events. */
static const uint64_t pass_bounds[] = {
	25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 25000000, 100000000, 250000000, 1000000000,
};

/* Records store round trips: microseconds for SQLite in the page cache,
 * a fraction of a millisecond to PostgreSQL on a local network, more for
 * a batch of thousands of writes or a store far away. */
static const uint64_t store_bounds[] = {
	10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
	5000000, 10000000, 25000000, 100000000, 1000000000,
};

typedef struct {
	const uint64_t *bounds;
	unsigned n;
	_Atomic uint64_t counts[ZC_HIST_MAX_BUCKETS + 1];
	_Atomic uint64_t sum;
} histogram_t;

#define BOUNDS(a) a, sizeof(a) / sizeof(a[0])

static histogram_t histograms[ZC_HISTOGRAMS] = {
	[ZC_HIST_WRITER_BATCH_UNITS] = { BOUNDS(batch_bounds) },
	[ZC_HIST_WRITER_COMMIT_NS] = { BOUNDS(commit_bounds) },
	[ZC_HIST_BUILDER_PASS_NS] = { BOUNDS(pass_bounds) },
	[ZC_HIST_RECORDS_WRITE_NS] = { BOUNDS(store_bounds) },
	[ZC_HIST_RECORDS_READ_NS] = { BOUNDS(store_bounds) },
};

static _Atomic int64_t gauges[ZC_GAUGES] = {
	/* Up until a heartbeat fails: a server starts serving only once it
	 * has read its records store. */
	[ZC_GAUGE_RECORDS_STORE_UP] = 1,
};

void zc_count_add(zc_counter_t c, uint64_t n)
{
	atomic_fetch_add_explicit(&counters[c], n, memory_order_relaxed);
}

uint64_t zc_counter_get(zc_counter_t c)
{
	return atomic_load_explicit(&counters[c], memory_order_relaxed);
}

void zc_observe(zc_histogram_t h, uint64_t value)
{
	histogram_t *hist = &histograms[h];
	unsigned i = zc_bucket(hist->bounds, hist->n, value);
	atomic_fetch_add_explicit(&hist->counts[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hist->sum, value, memory_order_relaxed);
}

void zc_histogram_get(zc_histogram_t h, zc_hist_read_t *out)
{
	const histogram_t *hist = &histograms[h];
	out->buckets = hist->n;
	out->bounds = hist->bounds;
	for (unsigned i = 0; i <= hist->n; i++) {
		out->counts[i] = atomic_load_explicit(&hist->counts[i],
		                                      memory_order_relaxed);
	}
	out->sum = atomic_load_explicit(&hist->sum, memory_order_relaxed);
}

void zc_gauge_set(zc_gauge_t g, int64_t value)
{
	atomic_store_explicit(&gauges[g], value, memory_order_relaxed);
}

int64_t zc_gauge_get(zc_gauge_t g)
{
	return atomic_load_explicit(&gauges[g], memory_order_relaxed);
}

uint64_t zc_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
