/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One pass of the builder over the change log.
 *
 * Design
 *
 * A pass reads every event committed since the last pass (batching: under
 * load a pass takes thousands of events at once, idle it takes one).
 * Record events become one per-record build: each touched node is read
 * from the records store by index and written to the edge store, all
 * nodes of all zones in one LMDB transaction. Zone-level events (created,
 * imported, settings, deleted, and an SOA record change) queue a full
 * build of their zone, which also covers the zone's record events read so
 * far.
 *
 * A full build runs in steps of `budget` nodes, one LMDB transaction each,
 * one step per pass, so per-record builds of other zones go through
 * between steps: a full build of a large zone never stalls the others.
 * Fencing: while a zone's full build runs, that zone's record events are
 * deferred and rebuilt when it ends (the build read an older snapshot);
 * a zone-level event for it schedules another full build. applied_seq is
 * persisted only when nothing is deferred or pending, so a restart
 * replays from a point where the edge was complete; every build is
 * idempotent.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "builder/pass.h"
#include "common/error.h"
#include "common/log.h"

#define BATCH_LIMIT 65536

typedef struct {
	pass_state_t *st;
	builder_touch_t *touched;
	size_t count, cap;
	uint64_t last_seq;
} batch_t;

static bool is_zone_event(const records_change_t *chg)
{
	if (chg->kind == RECORDS_CHANGE_ZONE_TOUCHED) {
		return false; /* A touch of the apex node: the serial moves. */
	}
	return (chg->kind != RECORDS_CHANGE_RECORD_CREATED &&
	        chg->kind != RECORDS_CHANGE_RECORD_DELETED) ||
	       (chg->okey_len == 0 && chg->type == KNOT_RRTYPE_SOA);
}

static bool is_job_zone(const pass_state_t *st, const uint8_t *apex)
{
	return st->job != NULL &&
	       knot_dname_is_equal(builder_job_apex(st->job), apex);
}

static int pending_index(const pass_state_t *st, const uint8_t *apex)
{
	for (unsigned i = 0; i < st->full_count; i++) {
		if (knot_dname_is_equal(st->full[i], apex)) {
			return (int)i;
		}
	}
	return -1;
}

/* Queues a full build; false when the queue is full (retry next pass). */
static bool queue_full(pass_state_t *st, const uint8_t *apex, uint64_t seq)
{
	int i = pending_index(st, apex);
	if (i >= 0) {
		st->full_seq[i] = seq;
		return true;
	}
	if (st->full_count == PASS_MAX_FULL) {
		return false;
	}
	memcpy(st->full[st->full_count], apex, knot_dname_size(apex));
	st->full_seq[st->full_count++] = seq;
	return true;
}

static int push_touch(builder_touch_t **arr, size_t *count, size_t *cap,
                      const records_change_t *chg)
{
	if (*count == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		builder_touch_t *grown = realloc(*arr, ncap * sizeof(*grown));
		if (grown == NULL) {
			return 1;
		}
		*arr = grown;
		*cap = ncap;
	}
	builder_touch_t *t = &(*arr)[(*count)++];
	t->zone_id = chg->zone_id;
	memcpy(t->apex, chg->apex, knot_dname_size(chg->apex));
	memcpy(t->okey, chg->okey, chg->okey_len);
	t->okey_len = chg->okey_len;
	t->version = chg->version;
	return 0;
}

/* RFC 1982: is a newer than b? */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

static int collect(const records_change_t *chg, void *ctx)
{
	batch_t *b = ctx;
	pass_state_t *st = b->st;
	int stop = 0;
	if (is_zone_event(chg)) {
		if (is_job_zone(st, chg->apex)) {
			st->job_again = true;
		} else {
			stop = !queue_full(st, chg->apex, chg->seq);
		}
	} else if (is_job_zone(st, chg->apex)) {
		stop = push_touch(&st->deferred, &st->deferred_count,
		                  &st->deferred_cap, chg);
	} else {
		int pending = pending_index(st, chg->apex);
		if (pending < 0) {
			stop = push_touch(&b->touched, &b->count, &b->cap, chg);
		} else {
			/* The queued full build covers the event only if it
			 * runs: it must not be skipped as "already built" by a
			 * build (e.g. the CLI's after an import) older than it. */
			st->full_seq[pending] = chg->seq;
		}
	}
	if (!stop) {
		b->last_seq = chg->seq;
	}
	return stop;
}

static int touch_cmp(const void *pa, const void *pb)
{
	const builder_touch_t *a = pa, *b = pb;
	if (a->zone_id != b->zone_id) {
		return a->zone_id < b->zone_id ? -1 : 1;
	}
	size_t min = a->okey_len < b->okey_len ? a->okey_len : b->okey_len;
	int c = memcmp(a->okey, b->okey, min);
	return c != 0 ? c : (a->okey_len > b->okey_len) - (a->okey_len < b->okey_len);
}

/* Sorts, de-duplicates, and builds the touched nodes. */
static int build_touched(pass_state_t *st, builder_touch_t *t, size_t count)
{
	if (count == 0) {
		return ZC_EOK;
	}
	qsort(t, count, sizeof(*t), touch_cmp);
	size_t out = 0;
	for (size_t i = 0; i < count; i++) {
		if (pending_index(st, t[i].apex) >= 0) {
			continue;
		}
		if (out > 0 && touch_cmp(&t[out - 1], &t[i]) == 0) {
			/* Same node: keep one, with the newest version. */
			if (serial_newer(t[i].version, t[out - 1].version)) {
				t[out - 1].version = t[i].version;
			}
			continue;
		}
		t[out++] = t[i];
	}
	builder_stats_t stats;
	int ret = builder_record_build(st->rs, st->es, t, out, &stats);
	if (ret == ZC_ENOZONE) {
		/* A zone never built: build it whole. */
		for (size_t i = 0; i < out; i++) {
			queue_full(st, t[i].apex, st->read_seq);
		}
		return ZC_EOK;
	}
	if (ret == ZC_EOK) {
		zc_debug("builder: %zu nodes at seq %llu", out,
		         (unsigned long long)stats.seq);
	}
	return ret;
}

static bool already_built(edge_store_t *es, const uint8_t *apex, uint64_t seq)
{
	edge_txn_t txn = { 0 };
	edge_zone_t zone;
	bool done = false;
	if (edge_txn_begin_read(es, &txn) == ZC_EOK) {
		done = edge_zone_get(&txn, apex, &zone) == ZC_EOK && zone.seq >= seq;
		edge_txn_abort(&txn);
	}
	return done;
}

static int save_applied(edge_store_t *es, uint64_t seq)
{
	edge_txn_t txn = { 0 };
	uint64_t old = 0;
	int ret = edge_txn_begin_write(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &old);
	}
	if (ret == ZC_EOK && seq > old) {
		ret = edge_meta_put(&txn, "applied_seq", seq);
	}
	if (ret == ZC_EOK) {
		return edge_txn_commit(&txn);
	}
	edge_txn_abort(&txn);
	return ret;
}

/* Starts the next queued full build, skipping ones already done. */
static int start_job(pass_state_t *st)
{
	while (st->job == NULL && st->full_count > 0) {
		uint8_t apex[KNOT_DNAME_MAXLEN];
		uint64_t seq = st->full_seq[0];
		memcpy(apex, st->full[0], knot_dname_size(st->full[0]));
		memmove(st->full, st->full + 1, (st->full_count - 1) * sizeof(st->full[0]));
		memmove(st->full_seq, st->full_seq + 1,
		        (st->full_count - 1) * sizeof(st->full_seq[0]));
		st->full_count--;
		if (already_built(st->es, apex, seq)) {
			continue; /* E.g. the CLI built it after an import. */
		}
		int ret = builder_full_begin(st->full_rs, st->es, apex, &st->job);
		if (ret != ZC_EOK) {
			return ret;
		}
		st->job_again = false;
	}
	return ZC_EOK;
}

/* One step of the running full build; ends it when complete. */
static int step_job(pass_state_t *st)
{
	int ret = builder_full_step(st->job, st->budget);
	if (ret == 1) {
		return ZC_EOK;
	}
	builder_stats_t stats;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	memcpy(apex, builder_job_apex(st->job),
	       knot_dname_size(builder_job_apex(st->job)));
	builder_full_end(st->job, &stats);
	st->job = NULL;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, apex, sizeof(name));
	if (ret < 0) {
		zc_error("zone %s: full build failed: %s", name, zc_strerror(ret));
		queue_full(st, apex, st->read_seq); /* Try again later. */
	} else {
		zc_info("zone %s: full build at seq %llu (%llu written, %llu "
		        "deleted)", name, (unsigned long long)stats.seq,
		        (unsigned long long)stats.nodes_written,
		        (unsigned long long)stats.nodes_deleted);
	}
	if (st->job_again) {
		queue_full(st, apex, st->read_seq);
		st->deferred_count = 0; /* The next full build covers them. */
		return ZC_EOK;
	}
	size_t n = st->deferred_count;
	st->deferred_count = 0;
	int bret = build_touched(st, st->deferred, n);
	if (bret != ZC_EOK) {
		/* The deferred events are gone from memory: rebuild the zone
		 * whole so the edge cannot keep disagreeing with the records. */
		queue_full(st, apex, st->read_seq);
	}
	return bret;
}

int pass_init(pass_state_t *st, records_store_t *rs, records_store_t *full_rs,
              edge_store_t *es, size_t budget)
{
	memset(st, 0, sizeof(*st));
	st->rs = rs;
	st->full_rs = full_rs;
	st->es = es;
	st->budget = budget;
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &st->applied);
		edge_txn_abort(&txn);
	}
	st->read_seq = st->applied;
	return ret;
}

void pass_deinit(pass_state_t *st)
{
	builder_full_end(st->job, NULL);
	st->job = NULL;
	free(st->deferred);
	st->deferred = NULL;
}

int pass_run(pass_state_t *st)
{
	batch_t b = { .st = st, .last_seq = st->read_seq };
	uint64_t before = st->read_seq;
	int ret = records_changes_since(st->rs, st->read_seq, BATCH_LIMIT, collect,
	                                &b);
	bool more_log = (b.last_seq - st->read_seq) >= BATCH_LIMIT;
	st->read_seq = b.last_seq;
	if (ret == ZC_EOK) {
		ret = build_touched(st, b.touched, b.count);
	}
	if (ret != ZC_EOK) {
		/* Read these events again next pass rather than lose the nodes
		 * they touched (a busy store, a map that had to grow): queueing
		 * and deferring them twice is harmless, builds are idempotent. */
		st->read_seq = before;
	}
	free(b.touched);
	if (ret == ZC_EOK) {
		ret = start_job(st);
	}
	if (ret == ZC_EOK && st->job != NULL) {
		ret = step_job(st);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bool busy = st->job != NULL || st->full_count > 0;
	if (!busy && st->read_seq > st->applied) {
		ret = save_applied(st->es, st->read_seq);
		if (ret == ZC_EOK) {
			st->applied = st->read_seq;
		}
	}
	return ret != ZC_EOK ? ret : (busy || more_log);
}
