/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Inside fleet/, private to publisher*.c: the publisher's state and what
 * its three files call of each other. publisher.c runs the thread (the
 * loop and the outbox sent); it calls publisher_history.c (leadership,
 * terms, histories, snapshots), which calls publisher_guard.c (what the
 * leader checks and keeps right in NATS), which calls neither.
 */
#pragma once

#include "fleet/primary.h"

/* foreign() (publisher_guard.c): what came in between was stepped over,
 * publish again. */
#define STEPPED_OVER ZC_EBUSY

typedef struct {
	fleet_primary_t *fp;
	uint64_t term;       /* the leader's (0: no leadership) */
	uint64_t epoch;
	uint64_t commit;     /* last part sent */
	uint64_t ring_commit; /* the part being sent */
	uint32_t part;
	uint64_t last_seq;   /* stream sequence of the last message sent */
	int64_t txn_created; /* the txn stream's making time (NATS, ns; 0:
	                        unknown) when its snapshot was published */
	uint64_t head_seq;   /* snapshot stream sequence of the newest manifest */
	uint64_t bytes;      /* sent since the last snapshot */
	int ret;
	int64_t now_ms;
	bool stream_reset;   /* the txn stream was recreated: a new snapshot */
	uint64_t final_commit; /* last commit sent whole (the outbox trim) */
	uint64_t msg_commit; /* the commit msg_next numbers messages of */
	uint32_t msg_next;   /* its next message part number */
	size_t piece_max;    /* its messages' largest payload */
	/* Foreign content edges may have applied (pub_refused()): a new history
	 * is due then (FOREIGN_HISTORY_MS apart, publisher_guard.c). */
	int64_t history_due;
	int64_t history_forced;
	uint64_t stepped_over; /* foreign messages stepped over */
} pub_t;

/* --- publisher_history.c: leadership, terms and histories --- */

/* Waits to lead, takes the term, begins its history (ZC_EOK: leads). */
int pub_lead(pub_t *p, uint64_t *behind);

/* Connects the streams; publishes this history's snapshot if missing. */
int pub_start_epoch(pub_t *p, fleet_manifest_t *prev);

/* A new history after foreign messages edges may have applied. */
int pub_restart_history(pub_t *p);

/* Publishes a snapshot, then purges what it makes unnecessary. */
int pub_snapshot(pub_t *p, fleet_manifest_t *prev);

/* A term above one an edge that is up follows, with a new history. */
int pub_rise_above(pub_t *p);

/* The lowest term this node publishes with (0: none). */
uint64_t pub_term_floor(fleet_primary_t *fp);

/* --- publisher_guard.c: what the leader checks and keeps in NATS --- */

/* Whether this process still leads, as PostgreSQL says (ZC_EOK). */
int pub_still_leading(pub_t *p);

/* A publish JetStream refused: fenced, or what came in between. */
int pub_refused(pub_t *p);

/* A manifest came over this leader's: its snapshot goes again. */
int pub_manifest_refused(pub_t *p);

/* The txn stream's last sequence. */
int pub_stream_last_seq(fleet_primary_t *fp, uint64_t *seq);
/* The same, when the stream was made (NATS's Created, ns) and its first
 * sequence (either NULL: not wanted). */
int pub_stream_state(fleet_primary_t *fp, uint64_t *seq, int64_t *created,
                     uint64_t *first);

/* Makes again what the fleet needs in NATS (streams, bucket, snapshot). */
int pub_keep_objects(pub_t *p, const fleet_manifest_t *prev);

/* This leader's manifest is at the head of the snapshot stream. */
int pub_keep_head(pub_t *p, fleet_manifest_t *prev);
