/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * This node's heartbeat in a PostgreSQL records store: a thread of its own,
 * with a connection of its own, that upserts the node's row of `nodes`
 * (records_node_beat(): name, pid, version, start, what the builder has
 * applied and whether it is stalled) at start and every second, and
 * deletes it at a clean stop, so `zonecast status` on any node lists
 * every node sharing the store, and a node that stops beating (killed,
 * cut off) shows as down RECORDS_NODE_DOWN_MS later.
 *
 * Nothing waits for it: it is off the write path and the DNS path, and
 * PostgreSQL being away only fails a beat, which is logged once (again
 * each minute while it lasts) and retried a second later. Its outcome is
 * the metrics' zonecast_records_store_up. A store in SQLite has one node
 * (serve.lock): no thread, and the store counts as up.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "cli/serve.h"
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"

#define BEAT_EVERY_MS 1000

/* A name held by another live node for this long is a configuration
 * mistake (not a restart within RECORDS_NODE_DOWN_MS of a crash). */
#define NAME_CLASH_MS (2 * RECORDS_NODE_DOWN_MS)

struct serve_heartbeat {
	pthread_t thread;
	pthread_mutex_t lock;       /* Guards stop. */
	pthread_cond_t wake;        /* Signals stop (CLOCK_MONOTONIC). */
	bool stop;
	/* Set before the thread starts; read-only after. */
	char *data_dir;
	builder_follower_t *follower;
	/* The thread's own from here on. */
	records_node_t self;
	records_store_t *rs;        /* NULL until opened. */
	int failing;                /* Error of the last beat (ZC_EOK: none). */
	int64_t clash_since_ms;     /* Monotonic ms the name clash began. */
	_Atomic int64_t logged_clash, logged_failure; /* zc_log_due()'s. */
};

static int64_t mono_ms(void)
{
	return (int64_t)(zc_clock_ns() / 1000000);
}

/* One beat: the store opened if need be, the node's row upserted. */
static int beat(serve_heartbeat_t *hb)
{
	if (hb->rs == NULL) {
		int ret = records_open(&hb->rs, hb->data_dir);
		if (ret != ZC_EOK) {
			hb->rs = NULL;
			return ret;
		}
	}
	hb->self.applied_seq = builder_follower_applied(hb->follower);
	hb->self.stalled = builder_follower_stalled(hb->follower);
	return records_node_beat(hb->rs, &hb->self);
}

/* Logs a beat's outcome when it changes, and each minute while it fails. */
static void report(serve_heartbeat_t *hb, int ret)
{
	if (ret == ZC_EEXISTS) {
		int64_t now = mono_ms();
		if (hb->clash_since_ms == 0) {
			hb->clash_since_ms = now;
		}
		if (now - hb->clash_since_ms >= NAME_CLASH_MS &&
		    zc_log_due(&hb->logged_clash, 60000)) {
			zc_error("heartbeat: another zonecast serve sharing the "
			         "records store beats as node-name '%s': give each "
			         "node its own node-name (zonecast status shows the "
			         "other one's row, not this node's)", hb->self.name);
		}
	} else {
		hb->clash_since_ms = 0;
	}
	if (ret == ZC_EOK || ret == ZC_EEXISTS) {
		if (hb->failing != ZC_EOK) {
			zc_info("heartbeat: the records store answers again");
		}
		hb->failing = ZC_EOK;
		return;
	}
	/* Called at every failure, so that the first sets its clock. */
	bool due = zc_log_due(&hb->logged_failure, 60000);
	if (ret != hb->failing || due) {
		zc_warn("heartbeat: cannot write this node's row to the records "
		        "store: %s; retrying every second (zonecast status on "
		        "the other nodes shows this one down)", zc_strerror(ret));
	}
	hb->failing = ret;
}

/* Waits BEAT_EVERY_MS or until stopped; true when stopped. */
static bool wait_or_stop(serve_heartbeat_t *hb)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += BEAT_EVERY_MS / 1000;
	until.tv_nsec += (long)(BEAT_EVERY_MS % 1000) * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_mutex_lock(&hb->lock);
	while (!hb->stop &&
	       pthread_cond_timedwait(&hb->wake, &hb->lock, &until) == 0) {
	}
	bool stop = hb->stop;
	pthread_mutex_unlock(&hb->lock);
	return stop;
}

static void *heartbeat_main(void *arg)
{
	serve_heartbeat_t *hb = arg;
	pthread_setname_np(pthread_self(), "zc-heartbeat");
	do {
		int ret = beat(hb);
		zc_gauge_set(ZC_GAUGE_RECORDS_STORE_UP,
		             ret == ZC_EOK || ret == ZC_EEXISTS);
		report(hb, ret);
	} while (!wait_or_stop(hb));
	/* A clean stop leaves no row behind; a store that did not answer
	 * the last beat is not waited for. */
	if (hb->rs != NULL && hb->failing == ZC_EOK &&
	    records_node_leave(hb->rs, &hb->self) != ZC_EOK) {
		zc_debug("heartbeat: this node's row is left in the records "
		         "store");
	}
	records_close(hb->rs);
	hb->rs = NULL;
	return NULL;
}

static void heartbeat_free(serve_heartbeat_t *hb)
{
	pthread_cond_destroy(&hb->wake);
	pthread_mutex_destroy(&hb->lock);
	free((char *)hb->self.name);
	free(hb->data_dir);
	free(hb);
}

int serve_heartbeat_start(serve_ctx_t *ctx, serve_heartbeat_t **out)
{
	*out = NULL;
	char uri[4096];
	const config_t *cfg = ctx->boot;
	if (records_bound_target(cfg->data_dir, uri, sizeof(uri)) <= 0) {
		return ZC_EOK; /* SQLite: one node, no nodes table. */
	}
	serve_heartbeat_t *hb = calloc(1, sizeof(*hb));
	if (hb == NULL) {
		return KNOT_ENOMEM;
	}
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&hb->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&hb->lock, NULL);
	hb->data_dir = strdup(cfg->data_dir);
	hb->follower = ctx->follower;
	hb->self = (records_node_t){
		.name = strdup(cfg->node_name), .role = "serve",
		.version = ZONECAST_VERSION, .pid = (int)getpid(),
		.started_ms = ctx->started_ms,
	};
	if (hb->data_dir == NULL || hb->self.name == NULL ||
	    pthread_create(&hb->thread, NULL, heartbeat_main, hb) != 0) {
		heartbeat_free(hb);
		return KNOT_ENOMEM;
	}
	*out = hb;
	return ZC_EOK;
}

void serve_heartbeat_stop(serve_heartbeat_t *hb)
{
	if (hb == NULL) {
		return;
	}
	pthread_mutex_lock(&hb->lock);
	hb->stop = true;
	pthread_cond_signal(&hb->wake);
	pthread_mutex_unlock(&hb->lock);
	pthread_join(hb->thread, NULL);
	heartbeat_free(hb);
}
