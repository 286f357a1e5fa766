/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Change-log follower: applies committed changes to the edge store in log
 * order, from the edge store's "applied_seq" on (see builder.h).
 *
 * Batching: each pass takes everything already in the log (up to
 * BATCH_LIMIT events) at once. Record events become one per-record build
 * (one LMDB transaction for all touched nodes of all zones); zone-level
 * events (created, imported, settings, deleted, and any SOA record change)
 * call for a full build of their zone, which then also covers that zone's
 * record events. Builds read the records store's current state, so a node
 * touched many times is built once. A full build already done by another
 * process (the CLI after an import) is recognised by the zone's edge seq
 * and skipped. No timer runs while changes arrive: a commit wakes the
 * follower at once; the poll only notices other processes' commits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "common/error.h"
#include "common/log.h"

#define BATCH_LIMIT 65536
#define MAX_ZONES_PER_BATCH 64

struct builder_follower {
	pthread_t thread;
	char *data_dir;
	edge_store_t *es;
	unsigned poll_ms;
	pthread_mutex_t lock;  /* Guards stop, woken and passes. */
	pthread_cond_t cond;   /* Wakes the follower. */
	pthread_cond_t done;   /* Signals a completed pass. */
	bool stop;
	bool woken;
	uint64_t passes;
};

/* One pass's work: zones needing a full build, nodes needing a build. */
typedef struct {
	uint8_t apex[MAX_ZONES_PER_BATCH][KNOT_DNAME_MAXLEN];
	uint64_t seq[MAX_ZONES_PER_BATCH];
	unsigned count;
	builder_touch_t *touched;
	size_t touched_count;
	size_t touched_cap;
	uint64_t last_seq;
} batch_t;

static bool is_zone_event(const records_change_t *chg)
{
	return (chg->kind != RECORDS_CHANGE_RECORD_CREATED &&
	        chg->kind != RECORDS_CHANGE_RECORD_DELETED) ||
	       (chg->okey_len == 0 && chg->type == KNOT_RRTYPE_SOA);
}

static int add_full(batch_t *batch, const records_change_t *chg)
{
	for (unsigned i = 0; i < batch->count; i++) {
		if (knot_dname_is_equal(batch->apex[i], chg->apex)) {
			batch->seq[i] = chg->seq;
			return 0;
		}
	}
	if (batch->count == MAX_ZONES_PER_BATCH) {
		return 1; /* The rest waits for the next pass. */
	}
	memcpy(batch->apex[batch->count], chg->apex, knot_dname_size(chg->apex));
	batch->seq[batch->count++] = chg->seq;
	return 0;
}

static int add_touch(batch_t *batch, const records_change_t *chg)
{
	if (batch->touched_count == batch->touched_cap) {
		size_t cap = batch->touched_cap ? batch->touched_cap * 2 : 64;
		builder_touch_t *grown = realloc(batch->touched,
		                                 cap * sizeof(*grown));
		if (grown == NULL) {
			return 1;
		}
		batch->touched = grown;
		batch->touched_cap = cap;
	}
	builder_touch_t *t = &batch->touched[batch->touched_count++];
	t->zone_id = chg->zone_id;
	memcpy(t->apex, chg->apex, knot_dname_size(chg->apex));
	memcpy(t->okey, chg->okey, chg->okey_len);
	t->okey_len = chg->okey_len;
	return 0;
}

static int collect(const records_change_t *chg, void *ctx)
{
	batch_t *batch = ctx;
	int stop = is_zone_event(chg) ? add_full(batch, chg) :
	           add_touch(batch, chg);
	if (!stop) {
		batch->last_seq = chg->seq;
	}
	return stop;
}

static int touch_cmp(const void *pa, const void *pb)
{
	const builder_touch_t *a = pa, *b = pb;
	if (a->zone_id != b->zone_id) {
		return a->zone_id < b->zone_id ? -1 : 1;
	}
	int c = memcmp(a->okey, b->okey, a->okey_len < b->okey_len ?
	               a->okey_len : b->okey_len);
	return c != 0 ? c : (a->okey_len > b->okey_len) - (a->okey_len < b->okey_len);
}

static bool in_full(const batch_t *batch, const uint8_t *apex)
{
	for (unsigned i = 0; i < batch->count; i++) {
		if (knot_dname_is_equal(batch->apex[i], apex)) {
			return true;
		}
	}
	return false;
}

/* Sorts and de-duplicates touched nodes; drops zones built in full. */
static void compact_touched(batch_t *batch)
{
	if (batch->touched_count == 0) {
		return;
	}
	qsort(batch->touched, batch->touched_count, sizeof(builder_touch_t),
	      touch_cmp);
	size_t out = 0;
	for (size_t i = 0; i < batch->touched_count; i++) {
		builder_touch_t *t = &batch->touched[i];
		if (in_full(batch, t->apex) ||
		    (out > 0 && touch_cmp(&batch->touched[out - 1], t) == 0)) {
			continue;
		}
		batch->touched[out++] = *t;
	}
	batch->touched_count = out;
}

/* Runs the per-record build; a zone never built gets a full build. */
static int run_record_builds(records_store_t *rs, edge_store_t *es,
                             batch_t *batch)
{
	if (batch->touched_count == 0) {
		return ZC_EOK;
	}
	builder_stats_t stats;
	int ret = builder_record_build(rs, es, batch->touched,
	                               batch->touched_count, &stats);
	if (ret == ZC_ENOZONE) {
		for (size_t i = 0; i < batch->touched_count; i++) {
			records_change_t chg = { .seq = batch->last_seq };
			memcpy(chg.apex, batch->touched[i].apex,
			       knot_dname_size(batch->touched[i].apex));
			add_full(batch, &chg);
		}
		return ZC_EOK;
	}
	if (ret == ZC_EOK) {
		zc_debug("builder: %zu nodes built at seq %llu",
		         batch->touched_count, (unsigned long long)stats.seq);
	}
	return ret;
}

/* True when the edge already holds the zone from a build at >= seq. */
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
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	uint64_t old = 0;
	ret = edge_meta_get(&txn, "applied_seq", &old);
	if (ret == ZC_EOK && seq > old) {
		ret = edge_meta_put(&txn, "applied_seq", seq);
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

static int applied_seq(edge_store_t *es, uint64_t *seq)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", seq);
		edge_txn_abort(&txn);
	}
	return ret;
}

int builder_catch_up(records_store_t *rs, edge_store_t *es, uint64_t *applied)
{
	uint64_t from = 0;
	int ret = applied_seq(es, &from);
	for (;;) {
		batch_t batch = { .last_seq = from };
		if (ret == ZC_EOK) {
			ret = records_changes_since(rs, from, BATCH_LIMIT, collect,
			                            &batch);
		}
		if (ret != ZC_EOK || batch.last_seq == from) {
			free(batch.touched);
			break;
		}
		compact_touched(&batch);
		ret = run_record_builds(rs, es, &batch);
		free(batch.touched);
		for (unsigned i = 0; i < batch.count && ret == ZC_EOK; i++) {
			if (already_built(es, batch.apex[i], batch.seq[i])) {
				continue;
			}
			builder_stats_t stats;
			ret = builder_full_build(rs, es, batch.apex[i], &stats,
			                         NULL, NULL);
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, batch.apex[i], sizeof(name));
			if (ret != ZC_EOK) {
				zc_error("zone %s: build failed: %s", name,
				         zc_strerror(ret));
			} else {
				zc_info("zone %s: built at seq %llu (%llu written, "
				        "%llu deleted)", name,
				        (unsigned long long)stats.seq,
				        (unsigned long long)stats.nodes_written,
				        (unsigned long long)stats.nodes_deleted);
			}
		}
		if (ret == ZC_EOK) {
			ret = save_applied(es, batch.last_seq);
			from = batch.last_seq;
		}
	}
	if (applied != NULL) {
		*applied = from;
	}
	return ret;
}

static void *follow(void *arg)
{
	builder_follower_t *f = arg;
	records_store_t *rs = NULL;
	int ret = records_open(&rs, f->data_dir);
	if (ret != ZC_EOK) {
		zc_error("builder: cannot open the records store: %s",
		         zc_strerror(ret));
		return NULL;
	}
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		f->woken = false;
		pthread_mutex_unlock(&f->lock);
		ret = builder_catch_up(rs, f->es, NULL);
		if (ret != ZC_EOK && ret != ZC_EBUSY) {
			zc_warn("builder: %s", zc_strerror(ret));
		}
		pthread_mutex_lock(&f->lock);
		f->passes++;
		pthread_cond_broadcast(&f->done);
		if (f->stop || f->woken) {
			continue;
		}
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)(f->poll_ms % 1000) * 1000000;
		until.tv_sec += f->poll_ms / 1000 + until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&f->cond, &f->lock, &until);
	}
	pthread_mutex_unlock(&f->lock);
	records_close(rs);
	return NULL;
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
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	pthread_cond_init(&f->done, NULL);
	if (f->data_dir == NULL ||
	    pthread_create(&f->thread, NULL, follow, f) != 0) {
		free(f->data_dir);
		free(f);
		return KNOT_ENOMEM;
	}
	*out = f;
	return ZC_EOK;
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
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	until.tv_sec += timeout_ms / 1000 + until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
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
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->done);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f->data_dir);
	free(f);
}
