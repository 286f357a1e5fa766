/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Inside fleet/: an edge's state shared by its follower and its reporter. */
#pragma once

#include <pthread.h>

#include "fleet/internal.h"

struct fleet_edge {
	fleet_config_t cfg;
	fleet_names_t names;
	edge_store_t *es;
	natsConnection *nc;  /* the follower's (its thread replaces it) */
	jsCtx *js;
	natsConnection *rnc; /* the reporter's own (same) */
	jsCtx *rjs;
	pthread_t thread, reporter;
	bool started, reporter_started;
	_Atomic bool stop;
	/* Applied position (the follower thread writes, the reporter reads). */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	bool dirty;
	uint64_t epoch, commit, seq;
	/* The commit being applied (its parts so far). */
	edge_applier_t ap;
	bool open;
	uint64_t open_commit;
	uint64_t open_seq;   /* stream sequence of its part 0 */
	int64_t open_ms;     /* when its last part came (OPEN_MAX_MS) */
	uint64_t abandoned_seq; /* open_seq of the last one abandoned */
	_Atomic int64_t abandon_logged;
	uint32_t next_part;
	uint64_t delivered;  /* stream sequence of the last message taken */
	/* When the stream followed was made (NATS's Created, ns; 0:
	 * unknown): a stream made again under its name can hold the same
	 * sequence numbers, and a position alone does not tell them apart. */
	int64_t stream_created;
	uint64_t ahead_seq;  /* the last message idle_check() resynced for */
	_Atomic int64_t report_logged;
	_Atomic int64_t paused_logged;
	uint64_t instance;   /* random: tells two edges of one name apart */
	_Atomic int64_t bad_logged;
	/* A message that left a gap even right after a snapshot load cannot
	 * be followed (forged, or outside the history): skipped. */
	uint64_t gap_seq;        /* stream sequence of the last gap */
	bool loaded_since_gap;   /* a snapshot was loaded after it */
	unsigned backoff_ms;     /* between snapshot loads in a row */
	int64_t last_load_ms;
	/* Fencing (fleet.h): the highest leader term seen (kept in the
	 * store's meta "fleet_term"), and what older terms sent (dropped). */
	_Atomic uint64_t term;
	_Atomic uint64_t fenced;
	_Atomic int64_t fenced_logged;
};

/* Reports right after each applied commit and every second (report.c);
 * started by the follower once connected. */
void *fleet_reporter_main(void *arg);
