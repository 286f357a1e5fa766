/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Two nodes' group committers on one records store write to two zones in
 * opposite orders at once (writer.h, records.h "Concurrency"): node A's
 * batch is [zone 1, zone 2], node B's [zone 2, zone 1], and each holds its
 * first zone while the other asks for it. Without care the two batches
 * wait for each other, and PostgreSQL breaks the cycle after
 * deadlock_timeout by failing one of them. Here no unit fails: the unit
 * that finds its zone held by the other node (while its batch keeps a
 * unit) gives way at once, its batch commits what it did, and it runs
 * again first in the next batch. Checked: every unit succeeds, each
 * zone's versions step by one (two more each, none lost or doubled), both
 * records of each zone are there, at least one batch was cut, and
 * PostgreSQL counted no deadlock in the test's database.
 *
 * Runs on SQLite too (as zonelock), where writers take turns and nothing
 * is cut; as zonelock@pg on PostgreSQL (records_target.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"
#include "writer/writer.h"

/* How long a unit holds its zone after both first units took theirs:
 * the other node's batch asks for it meanwhile. */
#define HOLD_MS 100

typedef struct {
	int64_t zone_id;
	const char *name;
	bool hold;           /* Sleep HOLD_MS after the writes. */
	uint32_t version;    /* Out. */
	atomic_int runs;     /* Times fn ran (a cut unit runs again). */
} zunit_t;

static atomic_int holding;

static int zone_unit(records_store_t *rs, void *ctx)
{
	zunit_t *u = ctx;
	atomic_fetch_add(&u->runs, 1);
	records_zone_t zone;
	int ret = fx_unit_start(rs, u->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = fx_insert_a(rs, &zone, u->name, 7, NULL);
	}
	u->version = zone.serial;
	if (ret == ZC_EOK && u->hold) {
		/* Both nodes hold their first zone before either asks for
		 * the other's (at most 5 s, however loaded the machine; on
		 * SQLite the other waits for the database's write lock). */
		atomic_fetch_add(&holding, 1);
		for (int i = 0; i < 5000 && test_backend_is_pg() &&
		     atomic_load(&holding) < 2; i++) {
			usleep(1000);
		}
		usleep(HOLD_MS * 1000);
	}
	return ret;
}

/* The first unit of each node: holds its writer until both nodes have
 * their batch queued behind it. */
static atomic_bool go;
static int gate_unit(records_store_t *rs, void *ctx)
{
	(void)rs, (void)ctx;
	while (!atomic_load(&go)) {
		usleep(1000);
	}
	return ZC_EOK;
}

static atomic_int settled;

static void done(writer_unit_t *unit, int result)
{
	(void)unit;
	CHECK_EQ(result, ZC_EOK);
	atomic_fetch_add(&settled, 1);
}

/* Deadlocks PostgreSQL has counted in the test's database (0 on
 * SQLite). */
static long long deadlocks(records_store_t *rs)
{
	(void)rs;
#ifdef ZC_HAVE_LIBPQ
	if (test_backend_is_pg()) {
		PGconn *c = PQconnectdb(test_records_target(NULL));
		PGresult *r = PQexec(c, "SELECT pg_stat_clear_snapshot();"
		                     " SELECT deadlocks FROM pg_stat_database"
		                     " WHERE datname = current_database()");
		long long n = PQresultStatus(r) == PGRES_TUPLES_OK ?
		              atoll(PQgetvalue(r, 0, 0)) : -1;
		PQclear(r);
		PQfinish(c);
		return n;
	}
#endif
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(void)
{
	const char *dir = test_tmpdir();
	const char *target = test_records_target(dir);
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, target), ZC_EOK);
	records_zone_t z1, z2;
	CHECK_EQ(fx_zone_create(rs, "one.test.", 10, &z1), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "two.test.", 20, &z2), ZC_EOK);
	long long deadlocks_before = deadlocks(rs);
	writer_config_t cfg = { .data_dir = target };
	writer_t *a, *b;
	CHECK_EQ(writer_start(&cfg, &a), ZC_EOK);
	CHECK_EQ(writer_start(&cfg, &b), ZC_EOK);

	zunit_t work[4] = {
		{ .zone_id = z1.id, .name = "a.one.test.", .hold = true },
		{ .zone_id = z2.id, .name = "a.two.test." },
		{ .zone_id = z2.id, .name = "b.two.test.", .hold = true },
		{ .zone_id = z1.id, .name = "b.one.test." },
	};
	writer_unit_t gates[2], units[4];
	writer_t *node[4] = { a, a, b, b };
	for (int i = 0; i < 2; i++) {
		gates[i] = (writer_unit_t){ .fn = gate_unit, .done = done };
		CHECK_EQ(writer_submit(i == 0 ? a : b, &gates[i]), ZC_EOK);
	}
	/* Each gate taken (its writer busy with it): the batches queue. */
	for (int i = 0; i < 2; i++) {
		writer_stats_t st = { .queued = 1 };
		while (st.queued > 0) {
			usleep(1000);
			writer_stats(i == 0 ? a : b, &st);
		}
	}
	for (int i = 0; i < 4; i++) {
		units[i] = (writer_unit_t){ .fn = zone_unit, .ctx = &work[i],
		                            .done = done };
		CHECK_EQ(writer_submit(node[i], &units[i]), ZC_EOK);
	}
	int64_t start = mono_ms();
	atomic_store(&go, true);
	while (atomic_load(&settled) < 6) {
		usleep(1000);
	}
	int64_t took = mono_ms() - start;
	writer_stats_t sa, sb;
	writer_stats(a, &sa);
	writer_stats(b, &sb);
	writer_stop(b);
	writer_stop(a);
	printf("both batches settled in %lld ms; batches cut: A %llu, B %llu;"
	       " runs %d %d %d %d\n", (long long)took,
	       (unsigned long long)sa.splits, (unsigned long long)sb.splits,
	       atomic_load(&work[0].runs), atomic_load(&work[1].runs),
	       atomic_load(&work[2].runs), atomic_load(&work[3].runs));

	/* Every unit made one version of its zone: two each, in order. */
	records_zone_t now;
	CHECK_EQ(records_zone_get(rs, z1.id, &now), ZC_EOK);
	CHECK_EQ(now.serial, z1.serial + 2);
	CHECK_EQ(records_zone_get(rs, z2.id, &now), ZC_EOK);
	CHECK_EQ(now.serial, z2.serial + 2);
	CHECK(work[0].version != work[3].version);
	CHECK(work[1].version != work[2].version);
	CHECK_EQ(fx_count(rs, z1.id, "a.one.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z1.id, "b.one.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z2.id, "a.two.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z2.id, "b.two.test.", 0), 1);
	if (test_backend_is_pg()) {
		/* The opposite orders met: a batch gave way, and no
		 * deadlock was left for PostgreSQL to break. */
		CHECK(sa.splits + sb.splits >= 1);
		CHECK_EQ(deadlocks(rs), deadlocks_before);
		CHECK(took < 1000); /* deadlock_timeout: 1 s */
	}
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
