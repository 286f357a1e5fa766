/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The pool of transfer threads: requests (transfers and signed queries)
 * queued to max_concurrent threads, refused at once past that; start,
 * stop and reload. See transfer.h for the design; worker.c serves each
 * request, axfr.c and ixfr.c write the answers through out.c.
 *
 * Locking: transfer_t.lock guards queue, active and stopping; threads
 * wait on cond for jobs. Each thread's xfr_worker_t (records connection,
 * arenas, buffer) is its own; xfr_worker_serve() is the whole of what a
 * thread does with a job, so the fuzz target calls it directly.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/codes.h>
#include <libknot/errcode.h>

#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "transfer/internal.h"
#include "transfer/transfer.h"

/* A request waiting for a thread; owns its copy of the message. */
typedef struct job {
	struct job *next;
	bool query;              /* A signed query, not a transfer. */
	bool tcp;
	server_reply_t *reply;
	struct sockaddr_storage from;
	size_t len;
	uint8_t msg[];
} job_t;

typedef struct {
	transfer_t *t;
	pthread_t thread;
	bool started;
	xfr_worker_t w;
} xfr_thread_t;

struct transfer {
	transfer_config_t cfg;
	xfr_live_t live;         /* allow-transfer, fudge (reloads). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	job_t *head, *tail;      /* Queued jobs (lock). */
	unsigned active;         /* Queued plus running (lock). */
	bool stopping;           /* (lock) */
	atomic_bool stop;        /* Read by running transfers. */
	xfr_thread_t *threads;
	unsigned thread_count;
};

/* Takes the next job, or NULL when stopping. */
static job_t *next_job(transfer_t *t)
{
	pthread_mutex_lock(&t->lock);
	while (t->head == NULL && !t->stopping) {
		pthread_cond_wait(&t->cond, &t->lock);
	}
	job_t *job = t->head;
	if (job != NULL && !t->stopping) {
		t->head = job->next;
		if (t->head == NULL) {
			t->tail = NULL;
		}
	} else {
		job = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return job;
}

static void *thread_main(void *arg)
{
	xfr_thread_t *th = arg;
	transfer_t *t = th->t;
	pthread_setname_np(pthread_self(), "zc-xfr");
	job_t *job;
	while ((job = next_job(t)) != NULL) {
		xfr_worker_serve(&th->w, job->msg, job->len, &job->from,
		                 job->query, job->tcp, job->reply);
		free(job);
		pthread_mutex_lock(&t->lock);
		t->active--;
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

int transfer_start(const transfer_config_t *cfg, transfer_t **out)
{
	if (cfg == NULL || cfg->data_dir == NULL || cfg->edge == NULL ||
	    out == NULL) {
		return ZC_EUSAGE;
	}
	transfer_t *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		return KNOT_ENOMEM;
	}
	t->cfg = *cfg;
	if (t->cfg.max_concurrent == 0) {
		t->cfg.max_concurrent = TRANSFER_DEFAULT_CONCURRENT;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	xfr_live_init(&t->live, cfg);
	t->threads = calloc(t->cfg.max_concurrent, sizeof(*t->threads));
	if (t->threads == NULL) {
		transfer_free(t);
		return KNOT_ENOMEM;
	}
	t->thread_count = t->cfg.max_concurrent;
	for (unsigned i = 0; i < t->thread_count; i++) {
		xfr_thread_t *th = &t->threads[i];
		th->t = t;
		xfr_worker_init(&th->w, &t->cfg, &t->stop);
		th->w.live = &t->live;
		int ret = pthread_create(&th->thread, NULL, thread_main, th);
		if (ret != 0) {
			transfer_free(t);
			return -ret;
		}
		th->started = true;
	}
	*out = t;
	return ZC_EOK;
}

static void enqueue(transfer_t *t, const uint8_t *msg, size_t len,
                    const struct sockaddr_storage *from, bool query,
                    bool tcp, server_reply_t *reply)
{
	job_t *job = malloc(sizeof(*job) + len);
	pthread_mutex_lock(&t->lock);
	bool take = job != NULL && !t->stopping &&
	            t->active < t->cfg.max_concurrent;
	if (take) {
		job->next = NULL;
		job->query = query;
		job->tcp = tcp;
		job->reply = reply;
		job->from = *from;
		job->len = len;
		memcpy(job->msg, msg, len);
		if (t->tail != NULL) {
			t->tail->next = job;
		} else {
			t->head = job;
		}
		t->tail = job;
		t->active++;
		pthread_cond_signal(&t->cond);
	}
	pthread_mutex_unlock(&t->lock);
	if (!take) {
		/* Busy or stopping: the client retries later. */
		free(job);
		zc_debug("transfer: busy, request refused");
		if (!query) {
			zc_count(ZC_COUNT_XFR_REFUSED);
		}
		xfr_send_header_error(reply, msg, len, KNOT_RCODE_REFUSED);
	}
}

void transfer_handle(void *ctx, const uint8_t *msg, size_t len,
                     const struct sockaddr_storage *from,
                     server_reply_t *reply)
{
	enqueue(ctx, msg, len, from, false, true, reply);
}

void transfer_signed_query(void *ctx, const uint8_t *msg, size_t len,
                           const struct sockaddr_storage *from, bool tcp,
                           server_reply_t *reply)
{
	enqueue(ctx, msg, len, from, true, tcp, reply);
}

void transfer_stop(transfer_t *t)
{
	if (t == NULL) {
		return;
	}
	pthread_mutex_lock(&t->lock);
	bool was = t->stopping;
	t->stopping = true;
	atomic_store(&t->stop, true);
	pthread_cond_broadcast(&t->cond);
	job_t *job = t->head;
	t->head = t->tail = NULL;
	pthread_mutex_unlock(&t->lock);
	while (job != NULL) {
		job_t *next = job->next;
		xfr_send_header_error(job->reply, job->msg, job->len,
		                  KNOT_RCODE_REFUSED);
		free(job);
		job = next;
	}
	if (was) {
		return;
	}
	for (unsigned i = 0; i < t->thread_count; i++) {
		xfr_thread_t *th = &t->threads[i];
		if (th->started) {
			pthread_join(th->thread, NULL);
			th->started = false;
		}
	}
}

void transfer_free(transfer_t *t)
{
	if (t == NULL) {
		return;
	}
	transfer_stop(t);
	for (unsigned i = 0; t->threads != NULL && i < t->thread_count; i++) {
		xfr_worker_deinit(&t->threads[i].w);
	}
	free(t->threads);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	xfr_live_deinit(&t->live);
	free(t);
}

int transfer_reconfigure(transfer_t *t, const zc_acl_t *allow_transfer,
                         const secondary_keys_t *allow_transfer_keys,
                         unsigned tsig_max_fudge)
{
	if (t == NULL) {
		return ZC_EUSAGE;
	}
	xfr_live_set(&t->live, allow_transfer, allow_transfer_keys,
	             tsig_max_fudge);
	return ZC_EOK;
}
