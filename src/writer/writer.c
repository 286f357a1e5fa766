/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The group committer (see writer.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "writer/writer.h"

/* How often the journal is trimmed, at most. */
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
};

/* Runs one batch in one transaction. */
static void run_batch(writer_t *w, writer_unit_t *batch)
{
	int ret = records_write_begin(w->rs);
	for (writer_unit_t *u = batch; u != NULL; u = u->next) {
		if (ret != ZC_EOK) {
			u->result = ret;
			continue;
		}
		u->result = records_savepoint(w->rs);
		if (u->result == ZC_EOK) {
			u->result = u->fn(w->rs, u->ctx);
			if (u->result == ZC_EOK) {
				u->result = records_savepoint_release(w->rs);
			} else {
				records_savepoint_rollback(w->rs);
			}
		}
	}
	if (ret == ZC_EOK) {
		ret = records_write_commit(w->rs);
		if (ret != ZC_EOK) {
			zc_error("writer: commit failed: %s", zc_strerror(ret));
			for (writer_unit_t *u = batch; u != NULL; u = u->next) {
				u->result = (u->result == ZC_EOK) ? ret : u->result;
			}
		}
	}
}

/* Trims the journal now and then: events older than the retention that
 * the builder has applied. */
static void maybe_trim(writer_t *w)
{
	time_t now = time(NULL);
	if (w->cfg.journal_retention_s == 0 ||
	    now - w->last_trim < TRIM_INTERVAL_S) {
		return;
	}
	w->last_trim = now;
	uint64_t applied = builder_follower_applied(w->cfg.follower);
	uint64_t removed = 0;
	int ret = records_journal_trim(w->rs, (int64_t)(now -
	                               w->cfg.journal_retention_s) * 1000,
	                               applied, &removed);
	if (ret != ZC_EOK) {
		zc_warn("writer: journal trim failed: %s", zc_strerror(ret));
	} else if (removed > 0) {
		zc_info("writer: trimmed %llu journal events",
		        (unsigned long long)removed);
	}
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
			until.tv_sec += TRIM_INTERVAL_S;
			if (pthread_cond_timedwait(&w->queued, &w->lock, &until) != 0) {
				pthread_mutex_unlock(&w->lock);
				maybe_trim(w);
				pthread_mutex_lock(&w->lock);
			}
		}
		if (w->head == NULL && w->stop) {
			break;
		}
		writer_unit_t *batch = w->head;
		w->head = w->tail = NULL;
		pthread_mutex_unlock(&w->lock);
		run_batch(w, batch);
		builder_follower_wake(w->cfg.follower);
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
		maybe_trim(w);
		pthread_mutex_lock(&w->lock);
		for (writer_unit_t *u = sync; u != NULL; u = u->next) {
			u->settled = true;
		}
		pthread_cond_broadcast(&w->settled);
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
	records_set_max_records(w->rs, cfg->max_records);
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
	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->queued);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
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
	if (w->tail != NULL) {
		w->tail->next = u;
	} else {
		w->head = u;
	}
	w->tail = u;
	pthread_cond_signal(&w->queued);
	return true;
}

int writer_run(writer_t *w, writer_fn fn, void *ctx)
{
	writer_unit_t u = { .fn = fn, .ctx = ctx };
	pthread_mutex_lock(&w->lock);
	if (!enqueue(w, &u)) {
		pthread_mutex_unlock(&w->lock);
		return ZC_EBUSY;
	}
	while (!u.settled) {
		pthread_cond_wait(&w->settled, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return u.result;
}

int writer_submit(writer_t *w, writer_unit_t *unit)
{
	pthread_mutex_lock(&w->lock);
	bool ok = enqueue(w, unit);
	pthread_mutex_unlock(&w->lock);
	return ok ? ZC_EOK : ZC_EBUSY;
}
