/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The group committer on a real records store, with no follower (the
 * zonecast command's own writer): units queued while one runs commit
 * together in one transaction, in order; a unit that runs alone
 * (writer_run_alone(), an import's commit) runs between two batches,
 * outside any transaction, after the units queued before it and before
 * those queued after it.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "common/error.h"
#include "records/records.h"
#include "tests/unit/test.h"
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

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK); /* Makes the schema. */
	records_close(rs);
	writer_config_t cfg = { .data_dir = dir, .max_records = 7 };
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

	writer_stop(w);
	test_rmdir(dir);
	return test_done();
}
