/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Builder: turns the records store into the edge store.
 *
 * Design
 *
 * A full build reads one zone from the records store in (okey, type) order
 * and walks the zone's edge nodes in the same (key) order, so the two
 * streams merge like two sorted files: a node only in the records is
 * written, one only in the edge is deleted, one in both is rewritten only
 * if its content differs. Memory is bounded by the largest node, whatever
 * the zone's size.
 *
 * Fencing: the build is stamped with the newest change-log sequence of its
 * records snapshot. Each step runs in one LMDB write transaction (LMDB has
 * one writer across all processes); the build is skipped when the edge
 * already holds the zone from a newer snapshot, every node write is fenced
 * by the node's own sequence (edge_txn_put_node) and the metadata write by
 * the zone's (edge_txn_put_zone). A build in steps checks the zone's fence
 * again at every step and gives up, its stage cleared, once a newer build
 * of the zone (or its deletion) got there between two steps.
 *
 * The follower (follow.c) tails the change log from the edge store's
 * "applied_seq" and runs the builds each event calls for, so changes made
 * by another process (the zonecast CLI) reach a running server, and a
 * restarted server resumes where it stopped.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <libknot/dname.h>

#include "edge/edge.h"
#include "records/records.h"

typedef struct {
	uint64_t nodes_written;
	uint64_t nodes_deleted;
	uint64_t nodes_unchanged;
	uint64_t records;
	uint64_t seq;       /* Snapshot sequence the build was stamped with. */
	bool skipped;       /* The edge already had a newer build. */
} builder_stats_t;

/* Reports one difference found by builder_verify(). */
typedef void (*builder_diff_cb)(const knot_dname_t *owner, const char *what,
                                void *ctx);

/*
 * Full build of one zone: makes the edge store equal to the records store
 * for `apex` (deleting the zone from the edge if it no longer exists),
 * and ends its quarantine if it had one. progress, when not NULL, is
 * called every 65536 records.
 */
int builder_full_build(records_store_t *rs, edge_store_t *es,
                       const knot_dname_t *apex, builder_stats_t *stats,
                       void (*progress)(uint64_t records, void *ctx),
                       void *ctx);

/*
 * Brings the edge store to this program's key format (edge.h): when it was
 * written in another one, or lost while the records store holds zones, or
 * it applied less of the change log than was trimmed since, it is emptied
 * and every zone fully built again. Call after opening both stores, before
 * serving or building. ZC_ESCHEMA for a newer format.
 */
int builder_edge_prepare(records_store_t *rs, edge_store_t *es);

/*
 * zonecast migrate (cli/cmd_migrate.c) carries the edge store of a data
 * directory over to its records store moved to the other engine, so that
 * the next start goes on as after a restart (no full build: a quarantined
 * zone stays served from its last good build, in quarantine). First
 * builder_edge_applied_by(): the position es applied, when es is in this
 * program's key format and applied the log by `numbering` (the old
 * store's, records_changelog_numbering()); else *usable is false and the
 * next start builds it again, as it would have. Then, once the new store
 * is in place, builder_edge_migrated() with that position translated into
 * the new store's numbering (records_copy()): every fence is capped at it
 * (edge_txn_renumber()), applied_seq set to it and the numbering stamped,
 * in one write transaction (ZC_ESTALE, nothing written, when es no longer
 * applied `from`).
 */
int builder_edge_applied_by(edge_store_t *es, unsigned numbering,
                            uint64_t *applied, bool *usable);
int builder_edge_migrated(edge_store_t *es, unsigned from, unsigned to,
                          uint64_t applied);

/*
 * A full build in steps (chunks), so that a full build of a large zone
 * never holds the edge store's single writer lock for long: between
 * steps, per-record builds of other zones go through. The records
 * snapshot stays open across steps (use a connection of its own); each
 * step writes at most `budget` nodes in one LMDB transaction and the
 * zone's new serial goes live with the last step. The caller must not run
 * other builds of the same zone between steps (follow.c defers them).
 */
typedef struct builder_job builder_job_t;

int builder_full_begin(records_store_t *rs, edge_store_t *es,
                       const knot_dname_t *apex, builder_job_t **out);

/* Returns 1 while more steps are needed, 0 when done, or an error. */
int builder_full_step(builder_job_t *job, size_t budget);

/* The zone being built, and its id (0 when it no longer exists). */
const knot_dname_t *builder_job_apex(const builder_job_t *job);
uint64_t builder_job_zone_id(const builder_job_t *job);

/* Ends the build (its snapshot), copying its stats; NULL is a no-op. */
void builder_full_end(builder_job_t *job, builder_stats_t *stats);

/*
 * Compares the edge store with a full build of the records store for
 * `apex`, without writing. Calls diff for every difference and returns the
 * number of differences (0: identical) or a negative code.
 */
int builder_verify(records_store_t *rs, edge_store_t *es,
                   const knot_dname_t *apex, builder_diff_cb diff, void *ctx);

/* builder_verify() calling progress (when not NULL) every 65536 records. */
int builder_verify_progress(records_store_t *rs, edge_store_t *es,
                            const knot_dname_t *apex, builder_diff_cb diff,
                            void *ctx,
                            void (*progress)(uint64_t records, void *pctx),
                            void *pctx);

/* A node touched by record events: zone and owner (relative LF). */
typedef struct {
	int64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint8_t okey[DNS_LF_KEY_MAXLEN];
	size_t okey_len;
	uint32_t version;   /* Zone version of the event that touched it. */
} builder_touch_t;

/*
 * Reports a zone whose nodes a per-record build could not write: `node` is
 * the node (or, for a failure past its nodes, the zone's last touch) it
 * failed at, `error` ZC_ENOZONE when the zone was never built (the caller
 * runs a full build instead) or the zone's own failure (the caller
 * quarantines the zone). Everything the build wrote for that zone was
 * rolled back; the other zones' nodes are committed.
 */
typedef void (*builder_zone_failed_cb)(const builder_touch_t *node, int error,
                                       void *ctx);

/*
 * Per-record build: rebuilds each touched node from the records store (one
 * indexed read each) and moves each zone's serial on to the newest version
 * among its touches (never to a version whose events were not read: a
 * propagation receipt must mean the data is there), all in one LMDB
 * transaction stamped with the records snapshot's newest sequence.
 * `touched` must be grouped by zone.
 *
 * Each zone is built in a transaction nested in that one (unless there is
 * only one): a zone whose build fails with an error of its own
 * (builder_error_is_store_wide() false) is rolled back alone and reported
 * to `failed`, and the others are committed. With failed NULL its error fails the whole build (nothing
 * is written). A store-wide error always fails the whole build.
 */
int builder_record_build(records_store_t *rs, edge_store_t *es,
                         const builder_touch_t *touched, size_t count,
                         builder_stats_t *stats, builder_zone_failed_cb failed,
                         void *ctx);

/*
 * Whether a build error is store-wide rather than the zone's own. Store
 * wide: the data directory (-ENOSPC, -EROFS, -EACCES, -EIO and other
 * errors of the operating system), memory, a full LMDB map, a busy or
 * failing database engine (ZC_EBUSY, ZC_ESQL, ZC_ELMDB): every zone would
 * fail alike, so no zone is quarantined and the whole pass is retried.
 * Anything else (stored data that does not build, a bug on one zone's
 * path, an injected failure) belongs to the zone, which is quarantined.
 */
bool builder_error_is_store_wide(int code);

/* --- Quarantined zones (quarantine.c) ---
 *
 * A zone whose build fails with an error of its own is quarantined: the
 * DNS server keeps answering from its last good build, the builder skips
 * its record events, writes to it are refused (API 409, UPDATE SERVFAIL),
 * and the reason is kept in the edge store (edge_quarantine_t). It is
 * released by the first full build of it that succeeds: tried again
 * after 10 s, then after twice as long each time up to 10 minutes, at
 * once after a zone-level change (an import, new settings, deletion),
 * when an operator asks (builder_quarantine_request_retry()) and when
 * zonecast starts. */

/* The zone's entry: ZC_EOK, or KNOT_ENOENT when it is not quarantined. */
int builder_quarantine_get(edge_store_t *es, uint64_t zone_id,
                           edge_quarantine_t *out);

/* Calls cb for every quarantined zone (cb returns non-zero to stop). */
int builder_quarantine_list(edge_store_t *es,
                            int (*cb)(const edge_quarantine_t *q, void *ctx),
                            void *ctx);

/*
 * Asks the builder of the running zonecast to build the zone again at its
 * next pass (zonecast zone retry, POST /zones/{id}/retry). *attempts
 * (may be NULL) receives the entry's attempts so far: the retry has run
 * when the entry is gone (released) or counts more. KNOT_ENOENT when the
 * zone is not quarantined.
 */
int builder_quarantine_request_retry(edge_store_t *es, uint64_t zone_id,
                                     uint32_t *attempts);

/* Change-log follower thread. */
typedef struct builder_follower builder_follower_t;

/*
 * Starts a thread that applies the change log to the edge store, polling
 * every poll_ms when idle. It opens its own records-store connection on
 * data_dir. The caller stops it with builder_follower_stop().
 */
int builder_follower_start(const char *data_dir, edge_store_t *es,
                           unsigned poll_ms, builder_follower_t **out);

/* Sets a callback run on the follower's thread after every pass that
 * read or built something (zone serials may have moved): the NOTIFY
 * sender's cue. cb must be quick. */
void builder_follower_on_pass(builder_follower_t *f, void (*cb)(void *ctx),
                              void *ctx);

/*
 * The storage error (-ENOSPC, -EROFS, -EACCES) that keeps the follower from
 * applying the change log or keeping the edge store's space reserve, or
 * ZC_EOK. The writer refuses writes meanwhile: an acknowledged change
 * must be one that DNS can serve.
 */
int builder_follower_stalled(builder_follower_t *f);

/* The change-log sequence up to which everything is built. */
uint64_t builder_follower_applied(builder_follower_t *f);

/*
 * The same, read from the edge store itself (its applied_seq, what the
 * follower persists after each pass that left nothing pending): for a
 * caller that has the store but not the follower (the fleet's leadership,
 * which starts before it).
 */
int builder_edge_applied(edge_store_t *es, uint64_t *applied);

/*
 * Whether the zone is quarantined (what the writers check before they
 * accept a write: a lock-free load while no zone is). f NULL: false.
 */
bool builder_follower_quarantined(builder_follower_t *f, uint64_t zone_id);

/* Passes completed so far (for builder_follower_wait_pass()). */
uint64_t builder_follower_passes(builder_follower_t *f);

/*
 * Waits until a pass completes after the one numbered *seen (taken from
 * builder_follower_passes() before the caller last looked at the edge
 * store, so no pass is missed), or timeout_ms passed; updates *seen.
 * Returns true if a pass completed.
 */
bool builder_follower_wait_pass(builder_follower_t *f, uint64_t *seen,
                                unsigned timeout_ms);

/*
 * Waiting for a zone version to be served (read your own write: an UPDATE
 * is answered once the edge store serves it). Waiters with the same
 * non-NULL `order` (the responses of one TCP connection) are answered in
 * the order they were registered; an `order_only` waiter waits for nothing
 * else (a response with no change to serve, kept behind the others). The
 * caller owns the waiter until `done` runs, exactly once, on the builder's
 * thread (or on the caller's, from builder_follower_stop()) with
 *   ZC_EOK           the edge store serves version (or newer) of the zone,
 *   ZC_EQUARANTINED  the zone is quarantined,
 *   -ETIMEDOUT       deadline passed first,
 *   ZC_EBUSY         the follower is stopping.
 * done must be quick (it runs between passes).
 */
typedef struct builder_waiter {
	uint64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint32_t version;
	/* The change-log position of the commit that made version
	 * (writer_unit_t.seq; 0: unknown). Once the follower applied it, a
	 * zone gone from the edge store, or there under another id, was
	 * deleted after the commit: the waiter settles with ZC_ENOZONE. */
	uint64_t seq;
	int64_t deadline_ms;      /* CLOCK_MONOTONIC milliseconds. */
	const void *order;        /* NULL: no order to keep. */
	bool order_only;          /* Nothing to wait for but the order. */
	void (*done)(struct builder_waiter *w, int result);
	/* Internal. */
	int result;
	struct builder_waiter *next;
} builder_waiter_t;

/* Registers w (fields above set) and wakes the follower. */
void builder_follower_await(builder_follower_t *f, builder_waiter_t *w);

/* Wakes the follower at once (a change was just committed). */
void builder_follower_wake(builder_follower_t *f);

/*
 * Hears commits of other nodes sharing the records store (hear.c): a
 * thread calls wake(ctx) at each commit to the change log that target's
 * store signals (PostgreSQL). *out is NULL when the store signals nothing
 * (SQLite): in-process commits wake the follower directly and the poll
 * finds the rest.
 */
typedef struct builder_hear builder_hear_t;
int builder_hear_start(const char *target, void (*wake)(void *ctx), void *ctx,
                       builder_hear_t **out);
void builder_hear_stop(builder_hear_t *h);

/*
 * Waits until the follower completes its next pass over the log, or
 * timeout_ms passed. Returns true if a pass completed. Callers re-check
 * what they wait for (propagation receipts) after each return.
 */
bool builder_follower_wait(builder_follower_t *f, unsigned timeout_ms);

/* Stops and joins the thread (NULL is a no-op). f stays readable:
 * builder_follower_quarantined() answers as the last pass left it, and
 * builder_follower_await() settles at once (ZC_EBUSY), for the DNS
 * workers that still run until the server stops; builder_follower_free()
 * frees it after them (a worker in an UPDATE's precheck read it freed:
 * ASan, outside tester 42). */
void builder_follower_stop(builder_follower_t *f);
void builder_follower_free(builder_follower_t *f);

/* Applies every pending change once, in the caller's thread (a zone whose
 * build fails with an error of its own is quarantined, not an error). */
int builder_catch_up(records_store_t *rs, edge_store_t *es,
                     uint64_t *applied);
