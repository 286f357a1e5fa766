/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Change-log follower: applies committed changes to the edge store in log
 * order, from the edge store's "applied_seq" on (see builder.h).
 *
 * Zone-level events (created, imported, settings, deleted) call for a full
 * build of their zone. Builds read the records store's current state, so
 * several events of one zone in a batch need one build; a build already
 * done by another process (the CLI after an import) is recognised by the
 * zone's edge seq and skipped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "common/error.h"
#include "common/log.h"

#define BATCH_LIMIT 1024
#define MAX_ZONES_PER_BATCH 64

struct builder_follower {
	pthread_t thread;
	char *data_dir;
	edge_store_t *es;
	unsigned poll_ms;
	pthread_mutex_t lock;  /* Guards stop and woken. */
	pthread_cond_t cond;
	bool stop;
	bool woken;
};

/* Distinct zones touched by one batch of events. */
typedef struct {
	uint8_t apex[MAX_ZONES_PER_BATCH][KNOT_DNAME_MAXLEN];
	uint64_t seq[MAX_ZONES_PER_BATCH];
	unsigned count;
	uint64_t last_seq;
	bool full;
} batch_t;

static int collect(const records_change_t *chg, void *ctx)
{
	batch_t *batch = ctx;
	for (unsigned i = 0; i < batch->count; i++) {
		if (knot_dname_is_equal(batch->apex[i], chg->apex)) {
			batch->seq[i] = chg->seq;
			batch->last_seq = chg->seq;
			return 0;
		}
	}
	if (batch->count == MAX_ZONES_PER_BATCH) {
		batch->full = true;
		return 1; /* The rest waits for the next batch. */
	}
	memcpy(batch->apex[batch->count], chg->apex, knot_dname_size(chg->apex));
	batch->seq[batch->count++] = chg->seq;
	batch->last_seq = chg->seq;
	return 0;
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
			break;
		}
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
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f->data_dir);
	free(f);
}
