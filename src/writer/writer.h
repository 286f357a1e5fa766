/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The group committer: the one path by which the API and RFC 2136 UPDATE
 * write to the records store.
 *
 * One thread owns the write connection. Callers submit units of work; the
 * thread takes every unit queued, runs each in a savepoint of one
 * transaction (a failing unit is rolled back alone), commits once (one
 * fsync for all), reports each unit's result, and wakes the builder.
 * While it commits, new units queue up: under load batches grow by
 * themselves, with no timer. Units run in submission order, so two units
 * submitted one after the other by one caller commit in that order.
 *
 * A unit that commits by itself (a zone import: records_import_commit())
 * runs alone, between two batches (writer_run_alone()), so it is ordered
 * with every other write all the same.
 *
 * Several writers at once (PostgreSQL: one per node, each its own
 * connection) serialise per zone: a unit locks its zone's row
 * (records.h, "Concurrency"). A unit whose zone another transaction
 * holds, after units of this batch were kept, does not wait (which could
 * close a cycle with another node's batch holding the other zone): it
 * fails with ZC_EBUSY at once, and the writer rolls it back, commits the
 * units before it, and runs it and the units after it first, as the next
 * batch, where it waits holding nothing. The order of units is kept, and
 * no two writers ever wait for each other in a cycle through zone locks
 * (docs/design-postgresql.md §4.3). A unit's writes are not waited for
 * at its release (PostgreSQL: they are answered with the next unit's
 * first read, or the commit); should one fail then, the whole batch runs
 * again, unit by unit (writer.c run_batch()). So a unit may run twice:
 * its first run rolled back, fn must start afresh from ctx.
 *
 * Between batches the thread also trims the change log (the IXFR journal)
 * to its retention, never past what the builder has applied.
 *
 * The users: the API, RFC 2136 UPDATE, the signed view's serial touches,
 * and the administrative writes of the zonecast command (cli/admin.h),
 * run by the server for the command, or, when no server runs on the data
 * directory, by the command itself through a writer of its own (follower
 * NULL: it builds what it wrote itself).
 */
#pragma once

#include <stdbool.h>

#include "builder/builder.h"
#include "records/records.h"

typedef struct writer writer_t;

/* A unit of work: runs inside a savepoint; returns ZC_EOK or an error. */
typedef int (*writer_fn)(records_store_t *rs, void *ctx);

/*
 * An asynchronous unit, owned by the caller until `done` is called (on the
 * writer thread, after the commit, with the unit's outcome: ZC_EOK means
 * durably committed). `done` must be quick: it runs before the next batch.
 */
typedef struct writer_unit {
	writer_fn fn;
	void *ctx;
	void (*done)(struct writer_unit *unit, int result);
	/* Optional: called with ctx once the unit's transaction began, for
	 * every unit of the batch before the first runs, to name what fn
	 * will read (records_hint_node()). It must not write, nor fail. */
	void (*hint)(records_store_t *rs, void *ctx);
	bool alone;     /* Runs outside any transaction (writer_run_alone). */
	bool want_seq;  /* Fill seq (one query per batch on PostgreSQL). */
	/* Out, with want_seq, once done: the change-log position of the end
	 * of the commit that carried the unit (records_changelog_committed()),
	 * for waiting until the builder applied it; 0 on failure. */
	uint64_t seq;
	/* Out, once done: the unit ran, and its transaction was then lost
	 * whole (its commit failed, or SQLite rolled it back): result is that
	 * failure, and whatever the unit concluded from what it read in the
	 * transaction is void (earlier units' writes it saw never existed),
	 * so it must not answer from it (a prerequisite's rcode, a "record
	 * exists" message). */
	bool lost;
	/* Internal. */
	int result;
	bool settled;
	struct writer_unit *next;
} writer_unit_t;

typedef struct {
	const char *data_dir;
	builder_follower_t *follower;  /* NULL: no builder to wake or ask. */
	unsigned journal_retention_s;  /* 0: keep the log forever. */
	uint64_t max_records;          /* Per zone (zone-max-records); 0: none. */
} writer_config_t;

int writer_start(const writer_config_t *cfg, writer_t **out);
/* writer_halt() and writer_free(). */
void writer_stop(writer_t *w);
/* Stops and joins the writer's thread; w stays readable, and a unit
 * submitted from now on is refused (ZC_EBUSY): for the DNS workers that
 * still run until the server stops (one in an UPDATE's precheck went on
 * to writer_submit() on a writer freed: ASan, outside tester 42).
 * writer_free() frees it after them (NULL: no-op, both). */
void writer_halt(writer_t *w);
void writer_free(writer_t *w);

/* Runs fn(ctx) in the next group commit and waits for the outcome: the
 * unit's own error, or the commit's. ZC_EOK means durably committed. */
int writer_run(writer_t *w, writer_fn fn, void *ctx);

/* writer_run() that also gives the change-log position of the commit's
 * end (writer_unit_t.seq) in *seq. */
int writer_run_seq(writer_t *w, writer_fn fn, void *ctx, uint64_t *seq);

/* Runs the unit the caller filled (fn, ctx, want_seq) as writer_run()
 * does, and leaves its outcome in it (result, seq, lost). */
int writer_run_unit(writer_t *w, writer_unit_t *unit);

/*
 * As writer_run() for a unit that opens and commits its own transaction
 * (records_import_commit()): it runs alone between two batches, on the
 * writer thread, after the units queued before it and before those queued
 * after it; the builder is woken after it as after a batch. fn gets the
 * writer's connection (it may commit on another one, idle meanwhile).
 */
int writer_run_alone(writer_t *w, writer_fn fn, void *ctx);

/* The zone-max-records in force (a reload may change it). */
uint64_t writer_max_records(writer_t *w);

/* Applies a new journal retention and zone-max-records (a reload): the
 * next batch and the next trim use them. */
void writer_reconfigure(writer_t *w, unsigned journal_retention_s,
                        uint64_t max_records);

/* The queue and what went through it, for `zonecast status`. */
typedef struct {
	size_t queued;        /* Units waiting for the next batch. */
	uint64_t batches;     /* Transactions committed (or failed). */
	uint64_t units;       /* Units run in them. */
	uint64_t last_batch;  /* Units in the last one. */
	uint64_t splits;      /* Batches cut at a zone another writer held. */
	uint64_t replays;     /* Batches run again: a unit's write failed
	                         after its release (writer.c run_batch()). */
} writer_stats_t;

void writer_stats(writer_t *w, writer_stats_t *out);

/* Queues unit (fn, ctx and done set by the caller) and returns at once.
 * ZC_EBUSY when the writer is stopping (done is not called). */
int writer_submit(writer_t *w, writer_unit_t *unit);
