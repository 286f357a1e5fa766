/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The group committer (see writer.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "api/writer.h"
#include "common/error.h"
#include "common/log.h"

typedef struct unit {
	api_unit_fn fn;
	void *ctx;
	int result;
	bool done;
	struct unit *next;
} unit_t;

struct api_writer {
	pthread_t thread;
	records_store_t *rs;
	builder_follower_t *follower;
	pthread_mutex_t lock;   /* Guards head, tail, stop and units' done. */
	pthread_cond_t queued;  /* Signals the thread: work or stop. */
	pthread_cond_t settled; /* Signals callers: a batch finished. */
	unit_t *head, *tail;
	bool stop;
};

/* Runs one batch in one transaction. */
static void run_batch(api_writer_t *w, unit_t *batch)
{
	int ret = records_write_begin(w->rs);
	for (unit_t *u = batch; u != NULL; u = u->next) {
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
			zc_error("api: commit failed: %s", zc_strerror(ret));
			for (unit_t *u = batch; u != NULL; u = u->next) {
				u->result = (u->result == ZC_EOK) ? ret : u->result;
			}
		}
	}
}

static void *writer_main(void *arg)
{
	api_writer_t *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->head == NULL && !w->stop) {
			pthread_cond_wait(&w->queued, &w->lock);
		}
		if (w->head == NULL && w->stop) {
			break;
		}
		unit_t *batch = w->head;
		w->head = w->tail = NULL;
		pthread_mutex_unlock(&w->lock);
		run_batch(w, batch);
		builder_follower_wake(w->follower);
		pthread_mutex_lock(&w->lock);
		for (unit_t *u = batch; u != NULL; u = u->next) {
			u->done = true;
		}
		pthread_cond_broadcast(&w->settled);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int api_writer_start(const char *data_dir, builder_follower_t *follower,
                     api_writer_t **out)
{
	api_writer_t *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = records_open(&w->rs, data_dir);
	if (ret != ZC_EOK) {
		free(w);
		return ret;
	}
	w->follower = follower;
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

void api_writer_stop(api_writer_t *w)
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

int api_writer_run(api_writer_t *w, api_unit_fn fn, void *ctx)
{
	unit_t u = { .fn = fn, .ctx = ctx };
	pthread_mutex_lock(&w->lock);
	if (w->stop) {
		pthread_mutex_unlock(&w->lock);
		return ZC_EBUSY;
	}
	if (w->tail != NULL) {
		w->tail->next = &u;
	} else {
		w->head = &u;
	}
	w->tail = &u;
	pthread_cond_signal(&w->queued);
	while (!u.done) {
		pthread_cond_wait(&w->settled, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return u.result;
}
