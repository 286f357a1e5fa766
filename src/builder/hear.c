/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Hearing commits of other nodes (builder.h, builder_hear_*): a thread
 * that waits on the records store's commit signal (records_listen_*:
 * PostgreSQL's LISTEN) and wakes the follower at each one, so that a
 * change written through another node sharing the store is built here
 * within milliseconds rather than at the next poll. When the connection is
 * lost it reconnects every second and wakes the follower once more (a
 * commit may have passed unheard meanwhile); the poll stays as the net.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "common/error.h"
#include "common/log.h"

#define WAIT_MS 250
#define RECONNECT_MS 1000

struct builder_hear {
	pthread_t thread;
	char *target;
	records_listen_t *listen;
	void (*wake)(void *ctx);
	void *ctx;
	atomic_bool stop;
};

/* Sleeps ms unless told to stop. */
static void nap(builder_hear_t *h, unsigned ms)
{
	for (unsigned t = 0; t < ms && !atomic_load(&h->stop); t += 50) {
		usleep(50 * 1000);
	}
}

static void *hear(void *arg)
{
	builder_hear_t *h = arg;
	pthread_setname_np(pthread_self(), "zc-hear");
	while (!atomic_load(&h->stop)) {
		if (h->listen == NULL) {
			if (records_listen_open(h->target, &h->listen) != ZC_EOK ||
			    h->listen == NULL) {
				nap(h, RECONNECT_MS);
				continue;
			}
			zc_debug("builder: hearing commits of other nodes again");
			h->wake(h->ctx);
		}
		struct pollfd p = { .fd = records_listen_fd(h->listen),
		                    .events = POLLIN };
		if (poll(&p, 1, WAIT_MS) <= 0) {
			continue;
		}
		int heard = records_listen_drain(h->listen);
		if (heard < 0) {
			zc_warn("builder: lost the records store's commit"
			           " signal; polling until it is back");
			records_listen_close(h->listen);
			h->listen = NULL;
		}
		if (heard != 0) {
			h->wake(h->ctx);
		}
	}
	return NULL;
}

int builder_hear_start(const char *target, void (*wake)(void *ctx), void *ctx,
                       builder_hear_t **out)
{
	*out = NULL;
	records_listen_t *l = NULL;
	int ret = records_listen_open(target, &l);
	if (ret == ZC_EOK && l == NULL) {
		return ZC_EOK; /* SQLite: nothing to hear. */
	}
	builder_hear_t *h = calloc(1, sizeof(*h));
	if (h == NULL || (h->target = strdup(target)) == NULL) {
		free(h);
		records_listen_close(l);
		return KNOT_ENOMEM;
	}
	h->listen = l; /* NULL when PostgreSQL is down: the thread retries. */
	h->wake = wake;
	h->ctx = ctx;
	if (pthread_create(&h->thread, NULL, hear, h) != 0) {
		records_listen_close(l);
		free(h->target);
		free(h);
		return KNOT_ENOMEM;
	}
	*out = h;
	return ZC_EOK;
}

void builder_hear_stop(builder_hear_t *h)
{
	if (h == NULL) {
		return;
	}
	atomic_store(&h->stop, true);
	pthread_join(h->thread, NULL);
	records_listen_close(h->listen);
	free(h->target);
	free(h);
}
