/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Change-log follower: the builder's thread. It runs passes (pass.c) over
 * the log: woken at once by an in-process commit, polling every poll_ms
 * for other processes' commits (the CLI), and without waiting while a
 * full build still has steps to go. After each pass it publishes the
 * quarantined zones to the writers and answers the waiters whose zone
 * version is now served (an UPDATE is acknowledged only then).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "builder/fault.h"
#include "builder/pass.h"
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"

/* Nodes per full-build step: about a millisecond of LMDB writer time, the
 * most a per-record build of another zone waits behind a full build
 * (20,000 nodes let them wait up to 40 ms in bench/propagation). */
#define FULL_STEP_NODES 2000

struct builder_follower {
	pthread_t thread;
	char *data_dir;
	edge_store_t *es;
	unsigned poll_ms;
	/* Guards stop, woken, exited, passes, waiters and quarantined. */
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* Wakes the follower. */
	pthread_cond_t done;   /* Signals a completed pass. */
	bool stop;
	bool woken;
	bool exited;           /* The thread ended: waiters fail at once. */
	uint64_t passes;
	builder_waiter_t *waiters;       /* In the order they were registered. */
	builder_waiter_t **waiters_tail; /* &last->next, or &waiters. */
	uint64_t *quarantined; /* Ids of the quarantined zones. */
	size_t quarantined_count, quarantined_cap;
	_Atomic size_t quarantined_any; /* quarantined_count, lock-free. */
	_Atomic uint64_t applied;              /* st.applied after the last pass. */
	_Atomic int stalled;                   /* Storage error it is stuck on. */
	int failing;                           /* Error of the last pass. */
	_Atomic int64_t logged;                /* When failing was last logged. */
	void (*on_pass)(void *ctx);            /* After each pass with work. */
	void *on_pass_ctx;
	builder_hear_t *hear;                  /* Other nodes' commits. */
};

/* Map doublings a catch-up may ask for. */
#define MAX_GROWS 24

int builder_catch_up(records_store_t *rs, edge_store_t *es, uint64_t *applied)
{
	pass_state_t st;
	builder_fault_init();
	int ret = pass_init(&st, rs, rs, es, SIZE_MAX, true);
	int grows = 0;
	while (ret == ZC_EOK) {
		ret = pass_run(&st);
		if (ret == ZC_EMAPFULL && grows++ < MAX_GROWS) {
			ret = edge_grow(es); /* Then read the events again. */
			continue;
		}
		if (ret == 0) {
			break;
		}
		ret = ret > 0 ? ZC_EOK : ret;
	}
	if (applied != NULL) {
		*applied = st.applied;
	}
	pass_deinit(&st);
	return ret;
}

/* Logs a failing pass when the failure starts, changes or has lasted
 * another minute, and its end: a full disk fails every pass. */
static void report(builder_follower_t *f, const pass_state_t *st, int err)
{
	if (err == ZC_EOK) {
		if (f->failing != ZC_EOK) {
			zc_info("builder: applying the change log again (seq %llu) "
			        "after: %s", (unsigned long long)st->read_seq,
			        zc_strerror(f->failing));
		}
		f->failing = ZC_EOK;
		return;
	}
	bool due = zc_log_due(&f->logged, 60000);
	if (err != f->failing || due) {
		zc_error("builder: cannot apply the change log past seq %llu: "
		         "%s; retrying every %u ms (the records store keeps every "
		         "change)", (unsigned long long)st->read_seq,
		         zc_strerror(err), f->poll_ms);
	}
	f->failing = err;
}

/* After a pass: grows a full map (1: run again at once), keeps the edge
 * store's space reserve, logs, and notes a storage error for the writer. */
static int after_pass(builder_follower_t *f, const pass_state_t *st, int ret)
{
	if (ret == ZC_EMAPFULL && edge_grow(f->es) == ZC_EOK) {
		return 1;
	}
	int space = edge_reserve_check(f->es);
	int err = (ret < 0 && ret != ZC_EBUSY) ? ret : ZC_EOK;
	report(f, st, err);
	atomic_store(&f->stalled, zc_storage_error(err) ? err : space);
	return ret;
}

/* Copies the pass's quarantined zones for builder_follower_quarantined(). */
static void publish_quarantine(builder_follower_t *f, pass_state_t *st)
{
	if (!st->quarantine_changed) {
		return;
	}
	pthread_mutex_lock(&f->lock);
	size_t n = st->quarantined_count;
	if (n > f->quarantined_cap) {
		uint64_t *grown = realloc(f->quarantined, n * sizeof(*grown));
		if (grown == NULL) {
			pthread_mutex_unlock(&f->lock);
			return; /* Try again after the next pass. */
		}
		f->quarantined = grown;
		f->quarantined_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		f->quarantined[i] = st->quarantined[i].zone_id;
	}
	f->quarantined_count = n;
	atomic_store(&f->quarantined_any, n);
	pthread_mutex_unlock(&f->lock);
	st->quarantine_changed = false;
}

/* Counts a pass for the metrics; its time only when it did work (an idle
 * poll is not a pass worth timing). */
static void count_pass(uint64_t start, int ret, bool read)
{
	zc_count(ZC_COUNT_BUILDER_PASSES);
	if (ret < 0) {
		zc_count(ZC_COUNT_BUILDER_PASSES_FAILED);
	}
	if (read || ret > 0) {
		zc_observe(ZC_HIST_BUILDER_PASS_NS, zc_clock_ns() - start);
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 1982: is serial at least version? */
static bool serial_reached(uint32_t serial, uint32_t version)
{
	return (int32_t)(serial - version) >= 0;
}

/* A waiter's outcome now, or 1 while it must wait on. */
static int waiter_state(builder_follower_t *f, edge_txn_t *txn,
                        const builder_waiter_t *w, int64_t now, bool final)
{
	edge_zone_t zone;
	if (w->order_only) {
		return ZC_EOK;
	}
	if (builder_follower_quarantined(f, w->zone_id)) {
		return ZC_EQUARANTINED;
	}
	int got = edge_zone_get(txn, w->apex, &zone);
	bool here = got == ZC_EOK && zone.zone_id == w->zone_id;
	if (here && serial_reached(zone.serial, w->version)) {
		return ZC_EOK;
	}
	bool gone = got == ZC_ENOZONE || (got == ZC_EOK && !here);
	if (gone && w->seq != 0 && atomic_load(&f->applied) >= w->seq) {
		/* Applied past the commit, and the zone is not there: it was
		 * deleted since (perhaps made again under a new id). Its
		 * version will never be served; waiting changes nothing. */
		return ZC_ENOZONE;
	}
	if (now >= w->deadline_ms) {
		return -ETIMEDOUT;
	}
	return final ? ZC_EBUSY : 1;
}

/* Whether a waiter still pending (in list) shares w's order. */
static bool order_blocked(const builder_waiter_t *list,
                          const builder_waiter_t *w)
{
	for (const builder_waiter_t *p = list; w->order != NULL && p != NULL;
	     p = p->next) {
		if (p->order == w->order) {
			return true;
		}
	}
	return false;
}

/* Appends w to the list ending at *tail. */
static void append(builder_waiter_t ***tail, builder_waiter_t *w)
{
	w->next = NULL;
	**tail = w;
	*tail = &w->next;
}

/* Answers the waiters whose outcome is known (all of them when final), in
 * the order they came, none before an earlier one of the same order. */
static void settle_waiters(builder_follower_t *f, bool final)
{
	pthread_mutex_lock(&f->lock);
	builder_waiter_t *list = f->waiters;
	f->waiters = NULL;
	f->waiters_tail = &f->waiters;
	pthread_mutex_unlock(&f->lock);
	if (list == NULL) {
		return;
	}
	edge_txn_t txn = { 0 };
	bool readable = edge_txn_begin_read(f->es, &txn) == ZC_EOK;
	int64_t now = mono_ms();
	builder_waiter_t *keep = NULL, *ready = NULL;
	builder_waiter_t **keep_tail = &keep, **ready_tail = &ready;
	for (builder_waiter_t *w = list, *next; w != NULL; w = next) {
		next = w->next;
		if (order_blocked(keep, w) && !final) {
			w->result = 1;
		} else if (readable) {
			w->result = waiter_state(f, &txn, w, now, final);
		} else {
			w->result = final ? ZC_EBUSY : 1;
		}
		append(w->result == 1 ? &keep_tail : &ready_tail, w);
	}
	if (readable) {
		edge_txn_abort(&txn);
	}
	if (keep != NULL) {
		/* Before the ones registered meanwhile. */
		pthread_mutex_lock(&f->lock);
		*keep_tail = f->waiters;
		if (f->waiters == NULL) {
			f->waiters_tail = keep_tail;
		}
		f->waiters = keep;
		pthread_mutex_unlock(&f->lock);
	}
	for (builder_waiter_t *w = ready, *next; w != NULL; w = next) {
		next = w->next; /* done() may free w. */
		w->done(w, w->result);
	}
}

static bool has_waiters(builder_follower_t *f)
{
	pthread_mutex_lock(&f->lock);
	bool any = f->waiters != NULL;
	pthread_mutex_unlock(&f->lock);
	return any;
}

/* The thread ends: build what was committed last for the waiters, then
 * answer them all. */
static void finish(builder_follower_t *f, pass_state_t *st)
{
	if (has_waiters(f)) {
		int ret;
		do {
			ret = pass_run(st);
			publish_quarantine(f, st);
			atomic_store(&f->applied, st->applied);
		} while (ret == 1 && st->job == NULL && st->full_count == 0);
	}
	pthread_mutex_lock(&f->lock);
	f->exited = true;
	pthread_mutex_unlock(&f->lock);
	settle_waiters(f, true);
}

static void *follow(void *arg)
{
	builder_follower_t *f = arg;
	pthread_setname_np(pthread_self(), "zc-builder");
	records_store_t *rs = NULL, *full_rs = NULL;
	pass_state_t st;
	int ret = records_open(&rs, f->data_dir);
	if (ret == ZC_EOK) {
		ret = records_open(&full_rs, f->data_dir);
	}
	if (ret == ZC_EOK) {
		/* builder_catch_up() has just tried the quarantined zones. */
		ret = pass_init(&st, rs, full_rs, f->es, FULL_STEP_NODES, false);
	}
	if (ret != ZC_EOK) {
		zc_error("builder: cannot start: %s", zc_strerror(ret));
		records_close(full_rs);
		records_close(rs);
		pthread_mutex_lock(&f->lock);
		f->exited = true;
		pthread_mutex_unlock(&f->lock);
		settle_waiters(f, true);
		return NULL;
	}
	publish_quarantine(f, &st);
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		f->woken = false;
		pthread_mutex_unlock(&f->lock);
		uint64_t before = st.read_seq;
		uint64_t start = zc_clock_ns();
		ret = after_pass(f, &st, pass_run(&st));
		count_pass(start, ret, st.read_seq != before);
		/* The quarantine before the position: a reader that sees the
		 * position (api/live.c) sees the zones quarantined up to it,
		 * and does not take a zone whose build failed for gone. */
		publish_quarantine(f, &st);
		atomic_store(&f->applied, st.applied);
		settle_waiters(f, false);
		if (f->on_pass != NULL && (st.read_seq != before || ret > 0)) {
			f->on_pass(f->on_pass_ctx);
		}
		pthread_mutex_lock(&f->lock);
		f->passes++;
		pthread_cond_broadcast(&f->done);
		if (f->stop || f->woken || ret > 0) {
			continue; /* Work left: no waiting. */
		}
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)(f->poll_ms % 1000) * 1000000;
		until.tv_sec += f->poll_ms / 1000 + until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&f->cond, &f->lock, &until);
	}
	pthread_mutex_unlock(&f->lock);
	finish(f, &st);
	pass_deinit(&st);
	records_close(full_rs);
	records_close(rs);
	return NULL;
}

static void wake_cb(void *ctx)
{
	builder_follower_wake(ctx);
}

int builder_follower_start(const char *data_dir, edge_store_t *es,
                           unsigned poll_ms, builder_follower_t **out)
{
	builder_follower_t *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		return KNOT_ENOMEM;
	}
	f->data_dir = strdup(data_dir);
	f->es = es;
	f->poll_ms = poll_ms;
	f->waiters_tail = &f->waiters;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	pthread_cond_init(&f->done, NULL);
	if (f->data_dir == NULL ||
	    pthread_create(&f->thread, NULL, follow, f) != 0) {
		free(f->data_dir);
		free(f);
		return KNOT_ENOMEM;
	}
	if (builder_hear_start(data_dir, wake_cb, f, &f->hear) != ZC_EOK) {
		zc_warn("builder: cannot hear other nodes' commits; "
		           "polling every %u ms", poll_ms);
	}
	*out = f;
	return ZC_EOK;
}

void builder_follower_on_pass(builder_follower_t *f, void (*cb)(void *ctx),
                              void *ctx)
{
	pthread_mutex_lock(&f->lock);
	f->on_pass = cb;
	f->on_pass_ctx = ctx;
	pthread_mutex_unlock(&f->lock);
}

int builder_follower_stalled(builder_follower_t *f)
{
	return f != NULL ? atomic_load(&f->stalled) : ZC_EOK;
}

uint64_t builder_follower_applied(builder_follower_t *f)
{
	return atomic_load(&f->applied);
}

int builder_edge_applied(edge_store_t *es, uint64_t *applied)
{
	*applied = 0;
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", applied);
		edge_txn_abort(&txn);
	}
	return ret;
}

bool builder_follower_quarantined(builder_follower_t *f, uint64_t zone_id)
{
	if (f == NULL || atomic_load(&f->quarantined_any) == 0) {
		return false;
	}
	bool found = false;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->quarantined_count && !found; i++) {
		found = f->quarantined[i] == zone_id;
	}
	pthread_mutex_unlock(&f->lock);
	return found;
}

void builder_follower_await(builder_follower_t *f, builder_waiter_t *w)
{
	pthread_mutex_lock(&f->lock);
	if (f->exited) {
		pthread_mutex_unlock(&f->lock);
		w->done(w, ZC_EBUSY);
		return;
	}
	append(&f->waiters_tail, w);
	/* A pass settles it (the one that built it may be over already). */
	f->woken = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

uint64_t builder_follower_passes(builder_follower_t *f)
{
	pthread_mutex_lock(&f->lock);
	uint64_t passes = f->passes;
	pthread_mutex_unlock(&f->lock);
	return passes;
}

/* CLOCK_REALTIME timeout_ms from now (the condition variables' clock). */
static struct timespec deadline_in(unsigned timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	until.tv_sec += timeout_ms / 1000 + until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	return until;
}

bool builder_follower_wait_pass(builder_follower_t *f, uint64_t *seen,
                                unsigned timeout_ms)
{
	struct timespec until = deadline_in(timeout_ms);
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	while (f->passes <= *seen && !f->stop && !f->exited && rc == 0) {
		rc = pthread_cond_timedwait(&f->done, &f->lock, &until);
	}
	bool done = f->passes > *seen;
	*seen = f->passes;
	pthread_mutex_unlock(&f->lock);
	return done;
}

void builder_follower_wake(builder_follower_t *f)
{
	pthread_mutex_lock(&f->lock);
	f->woken = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

bool builder_follower_wait(builder_follower_t *f, unsigned timeout_ms)
{
	struct timespec until = deadline_in(timeout_ms);
	pthread_mutex_lock(&f->lock);
	uint64_t start = f->passes;
	int rc = 0;
	while (f->passes == start && !f->stop && rc == 0) {
		rc = pthread_cond_timedwait(&f->done, &f->lock, &until);
	}
	bool done = f->passes != start;
	pthread_mutex_unlock(&f->lock);
	return done;
}

void builder_follower_stop(builder_follower_t *f)
{
	if (f == NULL) {
		return;
	}
	builder_hear_stop(f->hear);
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	settle_waiters(f, true); /* Registered after the thread's last look. */
}

void builder_follower_free(builder_follower_t *f)
{
	if (f == NULL) {
		return;
	}
	pthread_cond_destroy(&f->done);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f->quarantined);
	free(f->data_dir);
	free(f);
}
