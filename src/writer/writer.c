/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The group committer (see writer.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "writer/writer.h"

/* How often the journal is trimmed, at most (more often when
 * journal-retention is shorter: trim_interval_s()). */
#define TRIM_INTERVAL_S 60

struct writer {
	pthread_t thread;
	records_store_t *rs;
	writer_config_t cfg;
	pthread_mutex_t lock;   /* Guards head, tail, stop and settled flags. */
	pthread_cond_t queued;  /* Signals the thread: work or stop. */
	pthread_cond_t settled; /* Signals synchronous callers. */
	writer_unit_t *head, *tail;
	bool stop;
	time_t last_trim;
	/* Reloads (writer_reconfigure()): read by the writer thread. */
	_Atomic unsigned retention_s;
	_Atomic uint64_t max_records;
	uint64_t applied_max_records;    /* Writer thread only. */
	size_t units_max;       /* A batch's units at most; 0: no bound. */
	/* writer_stats(): waiting under lock, the rest written by the writer
	 * thread only. */
	size_t waiting;
	_Atomic uint64_t batches, units, last_batch, splits, replays;
	/* Batches still to run with releases that wait, after a replay
	 * (writer thread only). */
	unsigned safe_batches;
};

/* After a batch had to run again, this many run with every unit's
 * release waiting for its answers: a write the server keeps refusing
 * costs one replay, not one per batch. */
#define SAFE_BATCHES 8

/* Runs one unit in a savepoint of the open transaction; when `later`,
 * a savepoint sent only with the unit's first statement that is not a
 * row it writes, released without waiting for its writes' answers. */
static int run_unit(records_store_t *rs, writer_unit_t *u, bool later)
{
	int ret = later ? records_savepoint_later(rs) : records_savepoint(rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = u->fn(rs, u->ctx);
	if (ret == ZC_EOK) {
		ret = later ? records_savepoint_release_later(rs) :
		      records_savepoint_release(rs);
	}
	if (ret != ZC_EOK) {
		records_savepoint_rollback(rs);
	}
	return ret;
}

/* Gives ret to every unit of the batch, its own failures included: their
 * transaction is gone, and with it the state each judged by (a unit that
 * failed a prerequisite because of an earlier unit's write must not say
 * so: that write never existed). */
static void fail_done(writer_unit_t *batch, int ret)
{
	for (writer_unit_t *u = batch; u != NULL; u = u->next) {
		u->result = ret;
		u->lost = true;
	}
}

/* ZC_EOK, or why no write may be accepted now: the builder cannot apply
 * the change log (disk full, read-only), so an acknowledged change would
 * not be served. */
static int refusal(writer_t *w)
{
	static _Atomic int64_t logged;
	if (w->cfg.follower == NULL) {
		return ZC_EOK; /* The caller builds what it writes. */
	}
	int ret = builder_follower_stalled(w->cfg.follower);
	if (ret != ZC_EOK && zc_log_due(&logged, 10000)) {
		zc_error("writer: refusing writes: the edge store cannot take "
		         "them (%s)", zc_strerror(ret));
	}
	return ret;
}

/* Counts a batch and its units' outcomes for the metrics. */
static void count_batch(const writer_unit_t *batch)
{
	uint64_t ok = 0, failed = 0;
	for (const writer_unit_t *u = batch; u != NULL; u = u->next) {
		if (u->result == ZC_EOK) {
			ok++;
		} else {
			failed++;
		}
	}
	zc_count(ZC_COUNT_WRITER_BATCHES);
	zc_count_add(ZC_COUNT_WRITER_UNITS_OK, ok);
	zc_count_add(ZC_COUNT_WRITER_UNITS_FAILED, failed);
	zc_observe(ZC_HIST_WRITER_BATCH_UNITS, ok + failed);
}

/* Runs a unit that commits by itself, outside any transaction. */
static void run_alone(writer_t *w, writer_unit_t *u)
{
	int ret = refusal(w);
	u->lost = false; /* Its own transaction: its own outcome. */
	u->result = ret == ZC_EOK ? u->fn(w->rs, u->ctx) : ret;
	count_batch(u);
}

/* Whether a unit that succeeded wants the position of its commit. */
static bool seq_wanted(const writer_unit_t *batch)
{
	for (const writer_unit_t *u = batch; u != NULL; u = u->next) {
		if (u->want_seq && u->result == ZC_EOK) {
			return true;
		}
	}
	return false;
}

/* Gives the units that succeeded the position of their commit (seq, as
 * records_write_commit_seq() read it; 0: not read or none), when one of
 * them wants it. */
static void give_seq(writer_t *w, writer_unit_t *batch, bool wanted,
                     uint64_t seq)
{
	if (wanted && seq == 0 && records_last_seq(w->rs, &seq) != ZC_EOK) {
		/* No event in this commit (PostgreSQL names none then): the
		 * newest position, at or past every commit its units read. */
		seq = 0;
	}
	for (writer_unit_t *u = batch; u != NULL; u = u->next) {
		u->seq = u->result == ZC_EOK ? seq : 0;
	}
}

/*
 * Runs the batch's units in one transaction and commits it; `later`:
 * units released without waiting (records_savepoint_release_later()).
 * ZC_EREPLAY: a unit's write failed after its release, and the
 * transaction was rolled back; the units' results mean nothing then.
 * Otherwise each unit's result is set. *rest and *cut: as run_batch()
 * returns them, and the unit before the cut.
 */
static int attempt(writer_t *w, writer_unit_t *batch, bool later,
                   writer_unit_t **rest, writer_unit_t **cut)
{
	for (writer_unit_t *u = batch; u != NULL; u = u->next) {
		u->result = ZC_EOK;
		u->lost = false;
	}
	int ret = refusal(w);
	uint64_t begun = zc_clock_ns(); /* The store's write latency. */
	if (ret == ZC_EOK) {
		ret = records_write_begin(w->rs);
	}
	for (writer_unit_t *u = batch; u != NULL && ret == ZC_EOK; u = u->next) {
		if (u->hint != NULL) {
			u->hint(w->rs, u->ctx); /* Read ahead (prefetch.c). */
		}
	}
	for (writer_unit_t *u = batch, *prev = NULL; u != NULL;
	     prev = u, u = u->next) {
		if (ret != ZC_EOK) {
			u->result = ret;
			continue;
		}
		bool held = records_write_holds_units(w->rs);
		u->result = run_unit(w->rs, u, later);
		if (later && records_write_replay(w->rs)) {
			records_write_rollback(w->rs);
			return ZC_EREPLAY;
		}
		if (u->result == ZC_EBUSY && held && records_write_open(w->rs)) {
			/* Rolled back to its savepoint: the next batch. */
			*rest = u;
			*cut = prev;
			prev->next = NULL;
			break;
		}
		if (u->result != ZC_EOK && !records_write_open(w->rs)) {
			/* SQLite rolled the whole transaction back (disk full,
			 * I/O error): the units before this one are undone. */
			ret = u->result;
			fail_done(batch, ret);
			records_write_rollback(w->rs);
		}
	}
	bool wanted = seq_wanted(batch);
	uint64_t seq = 0;
	if (ret == ZC_EOK) {
		uint64_t start = zc_clock_ns();
		ret = wanted ? records_write_commit_seq(w->rs, &seq) :
		      records_write_commit(w->rs);
		uint64_t end = zc_clock_ns();
		if (ret == ZC_EREPLAY && later) {
			return ret; /* Rolled back: no commit to count. */
		}
		zc_observe(ZC_HIST_WRITER_COMMIT_NS, end - start);
		if (ret == ZC_EOK) {
			zc_observe(ZC_HIST_RECORDS_WRITE_NS, end - begun);
		}
		if (ret != ZC_EOK && !zc_storage_error(ret)) {
			zc_error("writer: commit failed: %s", zc_strerror(ret));
		}
		if (ret != ZC_EOK) {
			fail_done(batch, ret); /* The records store logged why. */
		}
	}
	if (ret == ZC_EOK) {
		give_seq(w, batch, wanted, seq);
	}
	return ZC_EOK;
}

/*
 * Runs one batch in one transaction. Returns the units it did not run
 * (NULL: none), cut off the batch at a unit that could not take a lock
 * without waiting while the transaction held earlier units' (writer.h):
 * they run first in the next batch.
 *
 * Units are released without waiting for their writes' answers (on
 * PostgreSQL a unit of writes then costs the round trip of its reads
 * only). Should one of those writes fail later, the batch runs again
 * from its start with releases that wait, so that each unit gets its
 * own outcome, and so do the next SAFE_BATCHES batches.
 */
static writer_unit_t *run_batch(writer_t *w, writer_unit_t *batch)
{
	if (batch->alone) {
		run_alone(w, batch);
		return NULL;
	}
	bool later = w->safe_batches == 0;
	if (!later) {
		w->safe_batches--;
	}
	writer_unit_t *rest = NULL, *cut = NULL;
	while (attempt(w, batch, later, &rest, &cut) == ZC_EREPLAY) {
		if (rest != NULL) {
			cut->next = rest; /* The same units, the same order. */
			rest = NULL;
		}
		atomic_fetch_add(&w->replays, 1);
		w->safe_batches = SAFE_BATCHES;
		later = false;
	}
	count_batch(batch);
	return rest;
}

/* Puts units a batch did not run back at the head of the queue, in their
 * order; returns how many. */
static size_t requeue(writer_t *w, writer_unit_t *rest)
{
	size_t n = 1;
	writer_unit_t *last = rest;
	while (last->next != NULL) {
		last = last->next;
		n++;
	}
	pthread_mutex_lock(&w->lock);
	last->next = w->head;
	w->head = rest;
	if (w->tail == NULL) {
		w->tail = last;
	}
	w->waiting += n;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/* Seconds between two trims: TRIM_INTERVAL_S, or the retention when it
 * is shorter (what it keeps is due for trimming that soon). */
static unsigned trim_interval_s(unsigned retention)
{
	return retention != 0 && retention < TRIM_INTERVAL_S ? retention :
	       TRIM_INTERVAL_S;
}

/* Trims the journal now and then: events older than the retention that
 * the builder has applied. */
static void maybe_trim(writer_t *w)
{
	time_t now = time(NULL);
	unsigned retention = atomic_load(&w->retention_s);
	if (retention == 0 || now - w->last_trim < trim_interval_s(retention)) {
		return;
	}
	w->last_trim = now;
	if (w->cfg.follower == NULL) {
		return; /* Nothing says what the builder has applied. */
	}
	uint64_t applied = builder_follower_applied(w->cfg.follower);
	uint64_t removed = 0;
	int ret = records_journal_trim(w->rs, (int64_t)(now - retention) *
	                               1000, applied, &removed);
	if (ret != ZC_EOK) {
		zc_warn("writer: journal trim failed: %s", zc_strerror(ret));
	} else if (removed > 0) {
		zc_info("writer: trimmed %llu journal events",
		        (unsigned long long)removed);
	}
}

/*
 * Takes the next batch off the queue (under lock): every unit queued up
 * to the first that runs alone, or that one by itself when it is first,
 * and no more than the records store's transactions should hold
 * (records_write_units_max()). *units gets the count.
 */
static writer_unit_t *take_batch(writer_t *w, size_t *units)
{
	writer_unit_t *batch = w->head, *last = batch;
	size_t n = 1;
	if (!batch->alone) {
		while (last->next != NULL && !last->next->alone &&
		       (w->units_max == 0 || n < w->units_max)) {
			last = last->next;
			n++;
		}
	}
	w->head = last->next;
	if (w->head == NULL) {
		w->tail = NULL;
	}
	last->next = NULL;
	w->waiting -= n;
	*units = n;
	return batch;
}

static void *writer_main(void *arg)
{
	writer_t *w = arg;
	pthread_setname_np(pthread_self(), "zc-writer");
	w->last_trim = time(NULL);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->head == NULL && !w->stop) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += trim_interval_s(
				atomic_load(&w->retention_s));
			if (pthread_cond_timedwait(&w->queued, &w->lock, &until) != 0) {
				pthread_mutex_unlock(&w->lock);
				maybe_trim(w);
				pthread_mutex_lock(&w->lock);
			}
		}
		if (w->head == NULL && w->stop) {
			break;
		}
		size_t units;
		writer_unit_t *batch = take_batch(w, &units);
		pthread_mutex_unlock(&w->lock);
		uint64_t max = atomic_load(&w->max_records);
		if (max != w->applied_max_records) {
			records_set_max_records(w->rs, max);
			w->applied_max_records = max;
		}
		writer_unit_t *rest = run_batch(w, batch);
		if (rest != NULL) {
			units -= requeue(w, rest);
			atomic_fetch_add(&w->splits, 1);
			zc_debug("writer: batch cut after %zu units: a zone was"
			         " locked by another writer", units);
		}
		atomic_fetch_add(&w->batches, 1);
		atomic_fetch_add(&w->units, units);
		atomic_store(&w->last_batch, units);
		if (w->cfg.follower != NULL) {
			builder_follower_wake(w->cfg.follower);
		}
		/* Asynchronous units first: done() may free the unit. */
		writer_unit_t *sync = NULL;
		for (writer_unit_t *u = batch, *next; u != NULL; u = next) {
			next = u->next;
			if (u->done != NULL) {
				u->done(u, u->result);
			} else {
				u->next = sync;
				sync = u;
			}
		}
		pthread_mutex_lock(&w->lock);
		for (writer_unit_t *u = sync; u != NULL; u = u->next) {
			u->settled = true;
		}
		pthread_cond_broadcast(&w->settled);
		/* Upkeep after the answers: none waits for it. */
		pthread_mutex_unlock(&w->lock);
		maybe_trim(w);
		records_keep_stats(w->rs);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int writer_start(const writer_config_t *cfg, writer_t **out)
{
	writer_t *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = records_open(&w->rs, cfg->data_dir);
	if (ret != ZC_EOK) {
		free(w);
		return ret;
	}
	w->cfg = *cfg;
	w->units_max = records_write_units_max(w->rs);
	records_set_max_records(w->rs, cfg->max_records);
	atomic_init(&w->retention_s, cfg->journal_retention_s);
	atomic_init(&w->max_records, cfg->max_records);
	w->applied_max_records = cfg->max_records;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->queued, NULL);
	pthread_cond_init(&w->settled, NULL);
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
		records_close(w->rs);
		free(w);
		return KNOT_ENOMEM;
	}
	*out = w;
	return ZC_EOK;
}

void writer_stop(writer_t *w)
{
	writer_halt(w);
	writer_free(w);
}

void writer_halt(writer_t *w)
{
	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->queued);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
}

void writer_free(writer_t *w)
{
	if (w == NULL) {
		return;
	}
	pthread_cond_destroy(&w->settled);
	pthread_cond_destroy(&w->queued);
	pthread_mutex_destroy(&w->lock);
	records_close(w->rs);
	free(w);
}

/* Appends u to the queue; false when stopping. */
static bool enqueue(writer_t *w, writer_unit_t *u)
{
	if (w->stop) {
		return false;
	}
	u->next = NULL;
	u->settled = false;
	w->waiting++;
	if (w->tail != NULL) {
		w->tail->next = u;
	} else {
		w->head = u;
	}
	w->tail = u;
	pthread_cond_signal(&w->queued);
	return true;
}

int writer_run_unit(writer_t *w, writer_unit_t *u)
{
	u->done = NULL;
	u->seq = 0;
	u->lost = false;
	pthread_mutex_lock(&w->lock);
	if (!enqueue(w, u)) {
		pthread_mutex_unlock(&w->lock);
		u->result = ZC_EBUSY;
		return ZC_EBUSY;
	}
	while (!u->settled) {
		pthread_cond_wait(&w->settled, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return u->result;
}

int writer_run(writer_t *w, writer_fn fn, void *ctx)
{
	writer_unit_t u = { .fn = fn, .ctx = ctx };
	return writer_run_unit(w, &u);
}

int writer_run_seq(writer_t *w, writer_fn fn, void *ctx, uint64_t *seq)
{
	writer_unit_t u = { .fn = fn, .ctx = ctx, .want_seq = true };
	int ret = writer_run_unit(w, &u);
	*seq = u.seq;
	return ret;
}

int writer_run_alone(writer_t *w, writer_fn fn, void *ctx)
{
	writer_unit_t u = { .fn = fn, .ctx = ctx, .alone = true };
	return writer_run_unit(w, &u);
}

uint64_t writer_max_records(writer_t *w)
{
	return atomic_load(&w->max_records);
}

int writer_submit(writer_t *w, writer_unit_t *unit)
{
	pthread_mutex_lock(&w->lock);
	bool ok = enqueue(w, unit);
	pthread_mutex_unlock(&w->lock);
	return ok ? ZC_EOK : ZC_EBUSY;
}

void writer_reconfigure(writer_t *w, unsigned journal_retention_s,
                        uint64_t max_records)
{
	if (w != NULL) {
		atomic_store(&w->retention_s, journal_retention_s);
		atomic_store(&w->max_records, max_records);
	}
}

void writer_stats(writer_t *w, writer_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->lock);
	out->queued = w->waiting;
	pthread_mutex_unlock(&w->lock);
	out->batches = atomic_load(&w->batches);
	out->units = atomic_load(&w->units);
	out->last_batch = atomic_load(&w->last_batch);
	out->splits = atomic_load(&w->splits);
	out->replays = atomic_load(&w->replays);
}
