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
 *
 * Positions. The pass follows the change log by position (changelog.h,
 * "Positions"): the order of commits, which on PostgreSQL is not the order
 * of the events' sequences, so no event that commits late is skipped.
 * read_seq, applied_seq and the fences of full and per-record builds
 * (records_last_seq() in the build's snapshot) are all positions; a pass
 * may stop inside a commit and the next resumes there.
 *
 * Versions stay whole: a pass reads the log and the records it builds
 * from in one snapshot of the records store, and it stops reading only
 * between two versions (a version: the events of one zone with one
 * serial), past BATCH_LIMIT events or when it cannot take an event. So a
 * build never moves a zone's serial over half a version, nor writes the
 * nodes of a version it has not read. (A pass cut at BATCH_LIMIT can still
 * show a node at a newer version of the same snapshot, one pass early:
 * the price of bounding a pass's memory.)
 *
 * Failures: a zone whose build fails with an error of its own is rolled
 * back alone (builder_record_build()) and quarantined (quarantine.c): its
 * record events are skipped from then on and its full build, when it
 * succeeds, releases it. A store-wide error fails the pass, which the
 * follower retries from the same place. A log trimmed past read_seq (by
 * another node sharing a PostgreSQL store, while this one was not live)
 * cannot be followed: every zone is built again in place and the pass
 * starts over from there (rebuild_all()).
 *
 * A records store that went back to an earlier state (a backup restored,
 * a failover to a replica that lost commits) numbers new commits with
 * positions this edge already applied: following on by position would
 * take them for applied. Every pass checks, in its snapshot, that the
 * log's head is not before read_seq and that the commit at read_seq is
 * the one read there (its identity, records_changelog_mark(), kept with
 * applied_seq as meta applied_id; read with the events, so a pass that
 * reads some makes no query for it: check_log()); when not,
 * builder_edge_diverged() builds every zone again, and first gives each
 * zone a version past both the served serial and the store's
 * (rebuild_all()).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "builder/pass.h"
#include "common/counters.h"
#include "common/error.h"
#include "dns/name.h"
#include "common/log.h"

#define BATCH_LIMIT 65536

typedef struct {
	pass_state_t *st;
	builder_touch_t *touched;
	size_t count, cap;
	uint64_t last_seq;       /* The last event taken. */
	uint64_t last_id;        /* The identity of its commit. */
	uint64_t from_id;        /* That of the commit at read_seq, as read. */
	unsigned taken;          /* Events taken. */
	bool cut;                /* Stopped early: more log to read. */
	/* The first event does not follow read_seq: the log may have been
	 * trimmed past it (read_and_build()); hole_seen once checked. */
	bool hole, hole_seen;
	/* The version being read, and the state before its first event (to
	 * drop a version whose reading has to stop part-way). */
	int64_t zone_id;
	uint32_t version;
	uint64_t version_seq, version_id;
	size_t version_count, version_deferred;
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

bool pass_full_pending(const pass_state_t *st, const uint8_t *apex)
{
	return pending_index(st, apex) >= 0 || is_job_zone(st, apex);
}

bool pass_queue_full(pass_state_t *st, const uint8_t *apex, uint64_t seq)
{
	int i = pending_index(st, apex);
	if (i >= 0) {
		if (seq > st->full_seq[i]) {
			st->full_seq[i] = seq;
		}
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

/* Takes one event into the batch; false when it cannot (the full-build
 * queue is full, no memory). */
static bool take(pass_state_t *st, batch_t *b, const records_change_t *chg)
{
	bool quarantined = quarantine_find(st, (uint64_t)chg->zone_id) >= 0;
	if (is_zone_event(chg)) {
		if (is_job_zone(st, chg->apex)) {
			st->job_again = true;
			return true;
		}
		/* A quarantined zone's build is never skipped as done: it is
		 * the retry that may release it. */
		return pass_queue_full(st, chg->apex, quarantined ? UINT64_MAX :
		                       chg->seq);
	}
	if (is_job_zone(st, chg->apex)) {
		return push_touch(&st->deferred, &st->deferred_count,
		                  &st->deferred_cap, chg) == 0;
	}
	if (quarantined) {
		return true; /* Skipped: its release builds the whole zone. */
	}
	int pending = pending_index(st, chg->apex);
	if (pending >= 0) {
		/* The queued full build covers the event only if it runs: it
		 * must not be skipped as "already built" by a build (e.g. the
		 * CLI's after an import) older than it. */
		if (chg->seq > st->full_seq[pending]) {
			st->full_seq[pending] = chg->seq;
		}
		return true;
	}
	return push_touch(&b->touched, &b->count, &b->cap, chg) == 0;
}

/* Reads events into the batch, stopping only between two versions. */
static int collect(const records_change_t *chg, void *ctx)
{
	batch_t *b = ctx;
	pass_state_t *st = b->st;
	if (b->taken == 0) {
		b->from_id = chg->from_id;
	}
	if (b->taken == 0 && !b->hole_seen &&
	    !records_changelog_follows(st->rs, st->read_seq, chg->seq)) {
		b->hole = true;
		return 1; /* Nothing taken: read_and_build() looks first. */
	}
	bool new_version = b->taken == 0 || chg->zone_id != b->zone_id ||
	                   chg->version != b->version;
	if (new_version && b->taken >= BATCH_LIMIT) {
		b->cut = true;
		return 1;
	}
	if (new_version) {
		b->zone_id = chg->zone_id;
		b->version = chg->version;
		b->version_seq = b->last_seq;
		b->version_id = b->last_id;
		b->version_count = b->count;
		b->version_deferred = st->deferred_count;
	}
	if (!take(st, b, chg)) {
		/* Drop what was read of this version; read it whole again
		 * next pass. (Full builds it queued are harmless.) */
		b->last_seq = b->version_seq;
		b->last_id = b->version_id;
		b->count = b->version_count;
		st->deferred_count = b->version_deferred;
		b->cut = true;
		return 1;
	}
	b->last_seq = chg->seq;
	b->last_id = chg->log_id;
	b->taken++;
	return 0;
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

/* The owner name of a touch (root when its key does not decode). */
static void touch_owner(const builder_touch_t *t, uint8_t *owner)
{
	uint8_t lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(t->apex, lf);
	owner[0] = '\0';
	if (apex_len + t->okey_len <= sizeof(lf)) {
		memcpy(lf + apex_len, t->okey, t->okey_len);
		if (dns_name_from_lf(lf, apex_len + t->okey_len, owner) < 0) {
			owner[0] = '\0';
		}
	}
}

/* builder_record_build()'s report of a zone it could not build. */
static void on_zone_failed(const builder_touch_t *node, int error, void *ctx)
{
	pass_state_t *st = ctx;
	if (error == ZC_ENOZONE) {
		/* A zone never built: build it whole. */
		pass_queue_full(st, node->apex, st->read_seq);
		return;
	}
	if (st->failed_count == st->failed_cap) {
		size_t cap = st->failed_cap ? st->failed_cap * 2 : 8;
		pass_failed_t *grown = realloc(st->failed, cap * sizeof(*grown));
		if (grown == NULL) {
			st->failed_cap = SIZE_MAX; /* Noted: the pass fails. */
			return;
		}
		st->failed = grown;
		st->failed_cap = cap;
	}
	pass_failed_t *f = &st->failed[st->failed_count++];
	f->zone_id = (uint64_t)node->zone_id;
	memcpy(f->apex, node->apex, knot_dname_size(node->apex));
	touch_owner(node, f->owner);
	f->code = error;
}

/* Quarantines the zones whose per-record build failed. */
static int quarantine_failed(pass_state_t *st)
{
	int ret = ZC_EOK;
	for (size_t i = 0; i < st->failed_count && ret == ZC_EOK; i++) {
		pass_failed_t *f = &st->failed[i];
		ret = quarantine_enter(st, f->zone_id, f->apex, f->code,
		                       "per-record build", f->owner);
	}
	if (ret == ZC_EOK && st->failed_cap == SIZE_MAX) {
		ret = KNOT_ENOMEM; /* A failure went unrecorded: read again. */
	}
	if (st->failed_cap == SIZE_MAX) {
		st->failed_cap = st->failed_count;
	}
	st->failed_count = 0;
	return ret;
}

/* Sorts, de-duplicates, and builds the touched nodes, in the records
 * snapshot the caller holds (in_snapshot) or in one of their own. */
static int build_touched(pass_state_t *st, builder_touch_t *t, size_t count,
                         bool in_snapshot)
{
	if (count == 0) {
		return ZC_EOK;
	}
	qsort(t, count, sizeof(*t), touch_cmp);
	size_t out = 0;
	for (size_t i = 0; i < count; i++) {
		if (pending_index(st, t[i].apex) >= 0 ||
		    quarantine_find(st, (uint64_t)t[i].zone_id) >= 0) {
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
	st->failed_count = 0;
	int ret = in_snapshot ?
	          builder_record_build_in(st->rs, st->es, t, out, &stats,
	                                  on_zone_failed, st) :
	          builder_record_build(st->rs, st->es, t, out, &stats,
	                               on_zone_failed, st);
	if (ret == ZC_EOK) {
		zc_debug("builder: %zu nodes at seq %llu", out,
		         (unsigned long long)stats.seq);
		ret = quarantine_failed(st);
	}
	st->failed_count = 0;
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

static int save_applied(edge_store_t *es, uint64_t seq, uint64_t id)
{
	edge_txn_t txn = { 0 };
	uint64_t old = 0;
	int ret = edge_txn_begin_write(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &old);
	}
	if (ret == ZC_EOK && seq > old) {
		ret = edge_meta_put(&txn, "applied_seq", seq);
		if (ret == ZC_EOK) {
			ret = edge_meta_put(&txn, "applied_id", id);
		}
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
			/* Queued again, as a failed build is (full_failed()):
			 * the pass fails and the next one starts it afresh.
			 * Dropped here, the pass went on past the zone's
			 * event, and an acknowledged zone create or import
			 * was never served (PostgreSQL's session lost at the
			 * build's first read). */
			pass_queue_full(st, apex, UINT64_MAX);
			return ret;
		}
		st->job_again = false;
	}
	return ZC_EOK;
}

/* Index of the quarantined zone with this apex, or -1. */
static int quarantine_find_apex(const pass_state_t *st, const uint8_t *apex)
{
	for (size_t i = 0; i < st->quarantined_count; i++) {
		if (knot_dname_is_equal(st->quarantined[i].apex, apex)) {
			return (int)i;
		}
	}
	return -1;
}

/* After a full build that failed: a store-wide error fails the pass (the
 * build is queued again); the zone's own error quarantines it. Either way
 * its deferred events are dropped: the next full build covers them. */
static int full_failed(pass_state_t *st, const uint8_t *apex,
                       uint64_t zone_id, int ret)
{
	st->deferred_count = 0;
	if (builder_error_is_store_wide(ret) || zone_id == 0) {
		pass_queue_full(st, apex, UINT64_MAX);
		return ret;
	}
	return quarantine_enter(st, zone_id, apex, ret, "full build", NULL);
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
	uint64_t zone_id = builder_job_zone_id(st->job);
	builder_full_end(st->job, &stats);
	st->job = NULL;
	if (ret < 0) {
		return full_failed(st, apex, zone_id, ret);
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, apex, sizeof(name));
	zc_info("zone %s: full build at seq %llu (%llu written, %llu deleted)",
	        name, (unsigned long long)stats.seq,
	        (unsigned long long)stats.nodes_written,
	        (unsigned long long)stats.nodes_deleted);
	int q = quarantine_find_apex(st, apex);
	if (q >= 0 && (ret = quarantine_release(st, q)) != ZC_EOK) {
		pass_queue_full(st, apex, UINT64_MAX); /* Release it next time. */
		return ret;
	}
	if (st->job_again) {
		pass_queue_full(st, apex, st->read_seq);
		st->deferred_count = 0; /* The next full build covers them. */
		return ZC_EOK;
	}
	size_t n = st->deferred_count;
	st->deferred_count = 0;
	int bret = build_touched(st, st->deferred, n, false);
	if (bret != ZC_EOK) {
		/* The deferred events are gone from memory: rebuild the zone
		 * whole so the edge cannot keep disagreeing with the records. */
		pass_queue_full(st, apex, st->read_seq);
	}
	return bret;
}

int pass_init(pass_state_t *st, records_store_t *rs, records_store_t *full_rs,
              edge_store_t *es, size_t budget, bool retry_quarantined)
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
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "applied_id",
			                    &st->applied_id);
		}
		edge_txn_abort(&txn);
	}
	st->read_seq = st->applied;
	st->read_id = st->applied_id;
	return ret == ZC_EOK ? quarantine_load(st, retry_quarantined) : ret;
}

void pass_deinit(pass_state_t *st)
{
	builder_full_end(st->job, NULL);
	st->job = NULL;
	free(st->deferred);
	st->deferred = NULL;
	free(st->quarantined);
	st->quarantined = NULL;
	st->quarantined_count = st->quarantined_cap = 0;
	free(st->failed);
	st->failed = NULL;
}

/* Is the log read in this snapshot, from `from` to b->last_seq, the one
 * read so far (its head not before `from`, the commit at `from` the one
 * read there)? ZC_ETRIMMED with st->diverged when not; else the identity
 * of the commit at b->last_seq becomes read_id. A pass that read events
 * has the identity at `from` with them (records_change_t.from_id): equal
 * to read_id, the log goes on from what was read, and no query is made.
 * Otherwise one query (records_changelog_mark()) decides: when nothing
 * was read too, every pass (a log that went back before `from` has
 * nothing to read until it passes `from` again; a check skipped then let
 * the store's serial pass the served one unseen, and one serial named
 * two contents: outside tester 29). */
static int check_log(pass_state_t *st, uint64_t from, const batch_t *b)
{
	if (st->read_id != 0 && b->taken > 0 && b->from_id == st->read_id &&
	    (b->last_seq == from || b->last_id != 0)) {
		st->read_id = b->last_seq != from ? b->last_id : st->read_id;
		return ZC_EOK;
	}
	uint64_t head = 0, id_from = 0, id_last = 0, trimmed = 0;
	int ret = records_changelog_mark(st->rs, from, b->last_seq, &head,
	                                 &id_from, &id_last, &trimmed);
	if (ret != ZC_EOK) {
		return ret;
	}
	char why[160];
	if (builder_log_diverged(st->rs, from, st->read_id, head, id_from,
	                         trimmed, why, sizeof(why))) {
		zc_error("builder: the change log is not the one applied here"
		         " (%s): the records store went back to an earlier"
		         " state (a backup restored, or a failover to a replica"
		         " that lost commits); building every zone again from"
		         " the records store, zones served at a newer serial"
		         " get a version past it", why);
		st->diverged = true;
		return ZC_ETRIMMED;
	}
	if (b->last_seq != from || st->read_id == 0) {
		st->read_id = b->last_seq != from ? id_last : id_from;
	}
	return ZC_EOK;
}

/* Reads the log and builds what it touched, in one records snapshot. */
static int read_and_build(pass_state_t *st, batch_t *b)
{
	uint64_t began = zc_clock_ns(); /* The store's read latency. */
	uint64_t from = st->read_seq;
	int ret = records_read_begin(st->rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* No limit here: collect() stops at a version boundary. */
	ret = records_changes_since(st->rs, st->read_seq, 0, collect, b);
	if (ret == ZC_EOK) {
		zc_observe(ZC_HIST_RECORDS_READ_NS, zc_clock_ns() - began);
	}
	if (ret == ZC_EOK && b->hole) {
		/* A hole after read_seq: a position drawn by a transaction
		 * that then failed to commit (PostgreSQL), or another node
		 * sharing the store trimmed the log past what this one read
		 * (this node was paused or cut off longer than the liveness
		 * window, so the trim did not wait for it). Then the events
		 * are gone and following on would serve a wrong zone:
		 * ZC_ETRIMMED, and pass_run() builds every zone again.
		 * Checked only at a hole: no query per pass. */
		uint64_t trimmed = 0;
		ret = records_trimmed_seq(st->rs, &trimmed);
		if (ret == ZC_EOK && trimmed > st->read_seq) {
			zc_warn("builder: the change log now starts after seq"
			        " %llu, past seq %llu read here (another node"
			        " trimmed it while this one was not live):"
			        " building every zone again from the records"
			        " store", (unsigned long long)trimmed,
			        (unsigned long long)st->read_seq);
			ret = ZC_ETRIMMED;
		}
		b->hole_seen = true;
		if (ret == ZC_EOK) {
			ret = records_changes_since(st->rs, st->read_seq, 0,
			                            collect, b);
		}
	}
	if (ret == ZC_EOK) {
		ret = check_log(st, from, b);
	}
	st->read_seq = b->last_seq;
	if (ret == ZC_EOK) {
		ret = build_touched(st, b->touched, b->count, true);
	}
	records_read_end(st->rs);
	return ret;
}

/* The log cannot be followed from read_seq: trimmed past it (what went
 * is gone: builder_edge_rebuild()), or not the one applied
 * (check_log(): builder_edge_diverged()). Every zone is built again in
 * place and the pass starts over from where those builds began,
 * quarantined zones tried again at once. 1 (run again) or an error (the
 * next pass finds the hole again). */
static int rebuild_all(pass_state_t *st,
                       int (*rebuild)(records_store_t *, edge_store_t *))
{
	records_store_t *rs = st->rs, *full_rs = st->full_rs;
	edge_store_t *es = st->es;
	size_t budget = st->budget;
	pass_deinit(st);
	int ret = rebuild(rs, es);
	int init = pass_init(st, rs, full_rs, es, budget, true);
	st->quarantine_changed = true;
	return ret != ZC_EOK ? ret : init != ZC_EOK ? init : 1;
}

int pass_run(pass_state_t *st)
{
	batch_t b = { .st = st, .last_seq = st->read_seq,
	              .last_id = st->read_id };
	uint64_t before = st->read_seq, before_id = st->read_id;
	int ret = read_and_build(st, &b);
	if (ret != ZC_EOK) {
		/* Read these events again next pass rather than lose the nodes
		 * they touched (a busy store, a map that had to grow): queueing
		 * and deferring them twice is harmless, builds are idempotent. */
		st->read_seq = before;
		st->read_id = before_id;
	}
	free(b.touched);
	if (ret == ZC_ETRIMMED && st->diverged) {
		return rebuild_all(st, builder_edge_diverged);
	}
	if (ret == ZC_ETRIMMED) {
		return rebuild_all(st, builder_edge_rebuild);
	}
	if (ret == ZC_EOK) {
		ret = quarantine_schedule(st);
	}
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
		ret = save_applied(st->es, st->read_seq, st->read_id);
		if (ret == ZC_EOK) {
			st->applied = st->read_seq;
			st->applied_id = st->read_id;
		}
	}
	return ret != ZC_EOK ? ret : (busy || b.cut);
}
