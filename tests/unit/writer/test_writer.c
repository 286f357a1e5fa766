/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The group committer on a real records store, with no follower (the
 * zonecast command's own writer): units queued while one runs commit
 * together in one transaction, in order; a unit that runs alone
 * (writer_run_alone(), an import's commit) runs between two batches,
 * outside any transaction, after the units queued before it and before
 * those queued after it. A unit that asks gets its commit's change-log
 * position; one that wrote nothing gets the newest position (on
 * PostgreSQL its commit names none: writer.c give_seq()). As writer@pg on
 * PostgreSQL (records_target.h).
 */
#include <stdatomic.h>
#include <unistd.h>

#include "common/error.h"
#include "records/changelog.h"
#include "records/records.h"
#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"
#include "writer/writer.h"

#define UNITS 6

static atomic_bool release;
static char order[UNITS + 1];
static atomic_int ran;
static bool in_txn[UNITS];

/* The unit's letter goes to `order`; the first waits for release. */
static int note(records_store_t *rs, void *ctx)
{
	int i = (int)(intptr_t)ctx;
	while (i == 0 && !atomic_load(&release)) {
		usleep(1000);
	}
	in_txn[i] = records_write_open(rs);
	order[atomic_fetch_add(&ran, 1)] = (char)('A' + i);
	return ZC_EOK;
}

static atomic_int settled;

static void done(writer_unit_t *unit, int result)
{
	(void)unit;
	CHECK_EQ(result, ZC_EOK);
	atomic_fetch_add(&settled, 1);
}

static int refused(records_store_t *rs, void *ctx)
{
	(void)rs, (void)ctx;
	return ZC_EEXISTS;
}

/* Adds one A record to the zone whose id is *ctx. */
static int add_one(records_store_t *rs, void *ctx)
{
	records_zone_t zone;
	int ret = fx_unit_start(rs, *(int64_t *)ctx, &zone);
	return ret == ZC_EOK ? fx_insert_a(rs, &zone, "seq.w.test.", 9, NULL) : ret;
}

static int nothing(records_store_t *rs, void *ctx)
{
	(void)rs, (void)ctx;
	return ZC_EOK;
}

/* Positions: a write gets its commit's end, the newest; a unit that
 * wrote nothing gets the newest too, never 0 (0 is "not to be waited
 * for": a waiter would sit out its whole live-wait). */
static void positions(writer_t *w, const char *target)
{
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, target), ZC_EOK);
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "w.test.", 1, &z), ZC_EOK);
	uint64_t wrote = 0, none = 0, last = 0;
	CHECK_EQ(writer_run_seq(w, add_one, &z.id, &wrote), ZC_EOK);
	CHECK_EQ(records_last_seq(rs, &last), ZC_EOK);
	CHECK(wrote != 0);
	CHECK_EQ(wrote, last);
	CHECK_EQ(writer_run_seq(w, nothing, NULL, &none), ZC_EOK);
	CHECK_EQ(none, last);
	records_close(rs);
}

#define MANY 100

static atomic_bool many_release;

/* The first of the many waits for many_release. */
static int many_unit(records_store_t *rs, void *ctx)
{
	(void)rs;
	while (ctx == NULL && !atomic_load(&many_release)) {
		usleep(1000);
	}
	return ZC_EOK;
}

/* Units queued behind a running one make batches of no more than the
 * store's bound each (records_write_units_max(): PostgreSQL's subtransaction
 * cache), in order; on SQLite one batch. */
static void bounded_batches(writer_t *w, const char *target)
{
	static writer_unit_t units[MANY + 1];
	writer_stats_t before;
	writer_stats(w, &before);
	atomic_store(&settled, 0);
	for (int i = 0; i <= MANY; i++) {
		units[i] = (writer_unit_t){ .fn = many_unit,
		                            .ctx = (void *)(intptr_t)i,
		                            .done = done };
		CHECK_EQ(writer_submit(w, &units[i]), ZC_EOK);
		writer_stats_t st = { .queued = 1 };
		while (i == 0 && st.queued > 0) { /* Until the first is taken. */
			usleep(1000);
			writer_stats(w, &st);
		}
	}
	atomic_store(&many_release, true);
	while (atomic_load(&settled) < MANY + 1) {
		usleep(1000);
	}
	writer_stats_t after;
	writer_stats(w, &after);
	CHECK_EQ(after.units - before.units, MANY + 1);
	/* The first alone, then the MANY: 32 + 32 + 32 + 4, or all at once. */
	CHECK_EQ(after.batches - before.batches,
	         records_target_is_pg(target) ? 5 : 2);
}

int main(void)
{
	const char *dir = test_tmpdir();
	const char *target = test_records_target(dir);
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, target), ZC_EOK); /* Makes the schema. */
	records_close(rs);
	writer_config_t cfg = { .data_dir = target, .max_records = 7 };
	writer_t *w;
	CHECK_EQ(writer_start(&cfg, &w), ZC_EOK);
	CHECK_EQ(writer_max_records(w), 7);

	/* A runs; B, C, then D alone, then E, F queue behind it. */
	writer_unit_t units[UNITS];
	for (int i = 0; i < UNITS; i++) {
		units[i] = (writer_unit_t){ .fn = note, .ctx = (void *)(intptr_t)i,
		                            .done = done, .alone = i == 3 };
		CHECK_EQ(writer_submit(w, &units[i]), ZC_EOK);
		writer_stats_t st = { .queued = 1 };
		while (i == 0 && st.queued > 0) { /* Until A is taken. */
			usleep(1000);
			writer_stats(w, &st);
		}
	}
	atomic_store(&release, true);
	while (atomic_load(&settled) < UNITS) {
		usleep(1000);
	}
	CHECK(strcmp(order, "ABCDEF") == 0);
	for (int i = 0; i < UNITS; i++) {
		CHECK_EQ(in_txn[i], i != 3);
	}
	writer_stats_t st;
	writer_stats(w, &st);
	CHECK_EQ(st.units, UNITS);
	CHECK_EQ(st.batches, 4); /* A, then B C, then D alone, then E F. */

	/* Synchronous: the unit's own outcome comes back. */
	CHECK_EQ(writer_run_alone(w, refused, NULL), ZC_EEXISTS);
	CHECK_EQ(writer_run(w, refused, NULL), ZC_EEXISTS);

	positions(w, target);
	bounded_batches(w, target);

	writer_stop(w);
	test_rmdir(dir);
	return test_done();
}
