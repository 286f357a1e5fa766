/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to builder/: one pass over the change log (see pass.c), the
 * quarantine of zones whose builds fail (quarantine.c), and the rebuild
 * of every zone when the log was trimmed past the pass (prepare.c).
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "builder/builder.h"

#define PASS_MAX_FULL 64

/* A quarantined zone as the builder tracks it (the edge store keeps the
 * entry, edge_quarantine_t). */
typedef struct {
	uint64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int64_t retry_at;      /* CLOCK_MONOTONIC ms of the next retry. */
	unsigned backoff_ms;   /* Wait before the retry after the next. */
	int code;              /* The last failure. */
	_Atomic int64_t logged; /* When a repeated failure was last logged. */
} pass_quarantined_t;

/* A zone whose per-record build failed this pass (quarantined after it). */
typedef struct {
	uint64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN]; /* Where it failed. */
	int code;
} pass_failed_t;

/* What the follower carries from pass to pass. */
typedef struct {
	records_store_t *rs;       /* Log reads and per-record builds. */
	records_store_t *full_rs;  /* The running full build's snapshot. */
	edge_store_t *es;
	size_t budget;             /* Nodes per full-build step. */
	uint64_t read_seq;         /* Log read up to here. */
	uint64_t applied;          /* Persisted: everything before is built. */
	/* The identities of the commits at read_seq and applied
	 * (records_changelog_mark(); 0: not known). */
	uint64_t read_id, applied_id;
	bool diverged;             /* The log is not the one applied. */
	builder_job_t *job;        /* Running full build, or NULL. */
	bool job_again;            /* Its zone changed again meanwhile. */
	builder_touch_t *deferred; /* Record events of the job's zone. */
	size_t deferred_count, deferred_cap;
	uint8_t full[PASS_MAX_FULL][KNOT_DNAME_MAXLEN]; /* Zones waiting. */
	uint64_t full_seq[PASS_MAX_FULL];
	unsigned full_count;
	pass_quarantined_t *quarantined; /* Zones quarantined. */
	size_t quarantined_count, quarantined_cap;
	bool quarantine_changed;   /* Set when the list changes. */
	int64_t requests_polled;   /* When retry requests were last read. */
	pass_failed_t *failed;     /* Failed zones of the current build. */
	size_t failed_count, failed_cap;
} pass_state_t;

/* Starts from the edge store's applied_seq and quarantine entries (tried
 * again at once with retry_quarantined, else after the first delay). */
int pass_init(pass_state_t *st, records_store_t *rs, records_store_t *full_rs,
              edge_store_t *es, size_t budget, bool retry_quarantined);
void pass_deinit(pass_state_t *st);

/*
 * Reads the log past read_seq, runs per-record builds, and one step of the
 * running full build. Returns 1 when work remains (call again without
 * waiting), 0 when idle, or an error.
 */
int pass_run(pass_state_t *st);

/* Queues a full build of apex, needed since log sequence seq (one already
 * as new is skipped; UINT64_MAX: never skipped). False when the queue is
 * full (retry next pass). */
bool pass_queue_full(pass_state_t *st, const uint8_t *apex, uint64_t seq);

/* Whether a full build of apex is queued or running. */
bool pass_full_pending(const pass_state_t *st, const uint8_t *apex);

/* Per-record build inside the caller's records snapshot
 * (records_read_begin()): builder_record_build() without its own. */
int builder_record_build_in(records_store_t *rs, edge_store_t *es,
                            const builder_touch_t *touched, size_t count,
                            builder_stats_t *stats,
                            builder_zone_failed_cb failed, void *ctx);

/* --- quarantine.c --- */

/* Loads the edge store's entries, each due for a retry at once (a restart
 * retries quarantined zones) or after the first delay. */
int quarantine_load(pass_state_t *st, bool retry_now);

/* Index of the zone in st->quarantined, or -1. */
int quarantine_find(const pass_state_t *st, uint64_t zone_id);

/*
 * Quarantines a zone (or counts one more failed attempt): stores the entry
 * with its reason (`stage` and `owner`, which may be NULL, say where it
 * failed) and schedules the next retry. Logs. Returns an error only when
 * the entry cannot be stored (then the pass fails and is retried).
 */
int quarantine_enter(pass_state_t *st, uint64_t zone_id, const uint8_t *apex,
                     int code, const char *stage, const uint8_t *owner);

/* Releases the zone at index i after a build of it succeeded. Logs. */
int quarantine_release(pass_state_t *st, int i);

/* Queues a full build of every quarantined zone whose retry is due or was
 * asked for (EDGE_QUARANTINE_RETRY). */
int quarantine_schedule(pass_state_t *st);

/* Stores a quarantine entry outside a pass (builder_edge_prepare()). */
int quarantine_store(edge_store_t *es, uint64_t zone_id, const uint8_t *apex,
                     int code, const char *stage, const uint8_t *owner,
                     uint64_t seq, edge_quarantine_t *out);

/* --- prepare.c --- */

/*
 * Builds every zone of the records store again into es, in place (each
 * zone's build replaces what es serves of it in one transaction), drops
 * the zones es serves that the records store no longer holds, and sets
 * applied_seq to the newest position read before the builds: for a pass
 * whose position the change log was trimmed past (ZC_ETRIMMED). A zone
 * failing with an error of its own is quarantined; a store-wide error is
 * returned.
 */
int builder_edge_rebuild(records_store_t *rs, edge_store_t *es);

/*
 * The records store went back to an earlier state than es applied (a
 * backup or dump restored, a failover to a replica that lost commits):
 * the log's positions name other commits than the ones es applied. Gives
 * every zone that es serves at a serial not older than the store's a new
 * version past that serial (a zone-wide one: IXFR restarts there), so
 * that no serial a secondary may hold ever names other contents; caps
 * es's positions at 0 (every build is newer); then builder_edge_rebuild().
 * Each step can be run again: a failure is retried by the next pass.
 */
int builder_edge_diverged(records_store_t *rs, edge_store_t *es);

/*
 * Whether the log has gone back past what an edge store applied: its
 * head is before `applied`, or the commit at `applied` is not the one of
 * identity `applied_id` (0: not known, not checked), or there is none
 * there (id 0) though the log was not trimmed past it (`trimmed`,
 * records_trimmed_seq()). *why receives the reason, for the log.
 */
bool builder_log_diverged(records_store_t *rs, uint64_t applied,
                          uint64_t applied_id, uint64_t head, uint64_t id,
                          uint64_t trimmed, char *why, size_t size);
