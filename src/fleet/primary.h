/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Inside fleet/: the primary's state shared by its publisher and receipts. */
#pragma once

#include <pthread.h>

#include "fleet/internal.h"

/* Which commit made which zone version, as the publisher sends them. */
typedef struct {
	uint64_t commit;
	uint64_t zone_id;
	uint32_t serial;
	int64_t sent_ms;
} fleet_ring_entry_t;

#define FLEET_RING 65536
#define FLEET_MAX_EDGES 1024

typedef struct {
	char name[FLEET_NAME_MAX];
	uint64_t epoch;
	uint64_t commit;
	/* When this process saw its last report (fleet_mono_ms(): this
	 * host's monotonic clock, never the NATS server's or the edge's). */
	int64_t seen_mono;
	uint64_t revision; /* the bucket revision of its last report */
	uint64_t instance; /* the reporting process (random at its start) */
	uint64_t prev_instance; /* the one it replaced (0: none) */
	uint64_t term;     /* the highest leader term it saw (0: none, or an
	                    * edge from before reports had it) */
	int64_t duplicate_mono; /* a replaced process reported again then
	                         * (0: never) */
} fleet_edge_report_t;

struct fleet_primary {
	fleet_config_t cfg;
	fleet_names_t names;
	edge_store_t *es;
	natsConnection *nc;       /* the publisher's (its thread replaces it) */
	jsCtx *js;
	natsConnection *wnc;      /* the receipts watcher's own */
	jsCtx *wjs;
	pthread_t publisher, watcher;
	bool publisher_started, watcher_started;
	_Atomic bool stop;
	fleet_leadership_t lead;  /* lead.take NULL: always publishes */

	pthread_mutex_t lock;     /* everything below */
	pthread_cond_t wake;      /* publisher: the outbox has more */
	pthread_cond_t changed;   /* receipts: a report or a publish */
	bool pending;
	bool leading;             /* publishes now (its term below) */
	uint64_t term;
	uint64_t epoch;
	uint64_t committed;       /* last commit id given out (seen) */
	uint64_t published;       /* last commit fully sent */
	bool connected;
	fleet_ring_entry_t *ring;
	size_t ring_head, ring_len;
	fleet_edge_report_t edges[FLEET_MAX_EDGES];
	size_t edge_count;
	/* The watcher reads the edges' reports now: its connection is up
	 * and its watch past the replay of the bucket (receipts call
	 * nothing live while it is not: fleet_edges_seen()). */
	bool watching;
	char blind_why[512];      /* why not, when not */
	int64_t blind_mono;       /* since when not (monotonic ms) */
	_Atomic bool rewatch;     /* the bucket was made again: watch anew */
	_Atomic int64_t dup_logged;
	_Atomic int64_t paused_logged;
	_Atomic int64_t rewatch_logged;
	_Atomic int64_t foreign_logged;
};

void *fleet_publisher_main(void *arg);
void *fleet_watcher_main(void *arg);

/* --- catchup.c: the leader's own build against the records store --- */

/* After take(): waits (at most 3 s) until this node's build reached the
 * records store's head. ZC_EOK; ZC_EBUSY when it did not in time (then
 * *behind is that head: lead again once built, fleet_wait_built()) or
 * when stopping; another error when the lead was lost meanwhile. */
int fleet_catch_up(fleet_primary_t *fp, uint64_t term, uint64_t *behind);

/* What a leader knows of its build's progress. */
typedef struct {
	uint64_t built, commit;  /* applied position, edge store commit */
	int64_t moved_ms;        /* when either last moved (or was caught up) */
	int64_t checked_ms;
} fleet_build_watch_t;

void fleet_build_watch_start(fleet_primary_t *fp, fleet_build_watch_t *w);

/* Whether the build has not moved for 3 s while the records store's head
 * is ahead of it (then *head is that head; logged). Cheap between its
 * looks (every 500 ms, a query on the lock session each). */
bool fleet_build_stalled(fleet_primary_t *fp, fleet_build_watch_t *w,
                         uint64_t *head);

/* Waits until this node's build reached pos (0: at once) or stopping. */
void fleet_wait_built(fleet_primary_t *fp, uint64_t pos);

/* The highest leader term an edge that is up reports (0: none), and
 * that edge's name. */
uint64_t fleet_edges_top_term(fleet_primary_t *fp, char *name, size_t size);

/* Records a sent commit's zone versions (lock held). */
void fleet_ring_add(fleet_primary_t *fp, uint64_t commit, uint64_t zone_id,
                    uint32_t serial, int64_t sent_ms);
