/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * PostgreSQL's planner statistics kept in step with growth
 * (records/planner_stats.c). A connection that planned the builder's node
 * read while the tables were empty keeps a generic plan that walks the
 * whole zone by records_type; once the store grew, records_keep_stats()
 * analyzes the tables (on a connection of its own), and the same
 * prepared statement is planned again as a lookup by records_node. Once
 * another node (here the test's own ANALYZE) analyzed the grown table,
 * a process whose own count is due skips its ANALYZE. PostgreSQL only (exit 77 elsewhere).
 */
#include "records/internal.h"
#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

#define GROWN 20000

/* The builder's node read (records/scan.c records_nodes_foreach()). */
#define NODES_SQL \
	"PREPARE nodes_q(bigint, bytea[]) AS SELECT id, okey, owner, type," \
	" ttl, rdata FROM records WHERE zone_id = $1 AND okey = ANY($2)" \
	" ORDER BY okey, type"

static void plan_of(records_store_t *rs, int64_t zone_id, char *out,
                    size_t size)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "EXPLAIN (COSTS OFF) EXECUTE nodes_q(%lld,"
	         " '{\"\\\\x0102\",\"\\\\x0304\"}')", (long long)zone_id);
	rdb_stmt_t *st;
	out[0] = '\0';
	CHECK_EQ(rdb_prepare_once(rs->db, RDB_SQL2(NULL, sql), &st), ZC_EOK);
	size_t len = 0;
	while (rdb_step(st) == RDB_ROW) {
		len += (size_t)snprintf(out + len, size - len, "%s\n",
		                        rdb_col_text(st, 0));
		if (len >= size) {
			break;
		}
	}
	rdb_done(st);
}

static int grow_unit(records_store_t *rs, void *ctx)
{
	int64_t *zone_id = ctx;
	records_zone_t zone;
	int ret = fx_unit_start(rs, *zone_id, &zone);
	for (int i = 0; i < GROWN && ret == ZC_EOK; i++) {
		char name[64];
		snprintf(name, sizeof(name), "n%d.stats.test.", i);
		ret = fx_insert_a(rs, &zone, name, (uint8_t)i, NULL);
	}
	return ret;
}

/* GROWN more names, after grow_unit's. */
static int grow_unit2(records_store_t *rs, void *ctx)
{
	int64_t *zone_id = ctx;
	records_zone_t zone;
	int ret = fx_unit_start(rs, *zone_id, &zone);
	for (int i = 0; i < 2 * GROWN && ret == ZC_EOK; i++) {
		char name[64];
		snprintf(name, sizeof(name), "m%d.stats.test.", i);
		ret = fx_insert_a(rs, &zone, name, (uint8_t)i, NULL);
	}
	return ret;
}

/* ANALYZE statements of records so far (zonecast's and the test's own;
 * not autovacuum's, which may analyze the grown table at any moment). */
static int64_t analyses(records_store_t *rs)
{
	int64_t n = -1;
	CHECK_EQ(rdb_query_int64(rs->db, RDB_SQL2(NULL,
		"SELECT analyze_count FROM"
		" pg_stat_user_tables WHERE relid = 'records'::regclass"), &n),
		ZC_EOK);
	return n;
}

int main(void)
{
	if (!test_backend_is_pg()) {
		return 77;
	}
	const char *dir = test_tmpdir();
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, test_records_target(dir)), ZC_EOK);
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "stats.test.", 1, &z), ZC_EOK);
	/* Nothing due yet: no ANALYZE, no error. */
	CHECK_EQ(records_keep_stats(rs), ZC_EOK);

	/* A generic plan made while the zone is nearly empty, kept by the
	 * connection as the driver's prepared statements are (the sixth
	 * run takes the generic plan). */
	CHECK_EQ(rdb_exec(rs->db, NODES_SQL), ZC_EOK);
	char plan[2048];
	for (int i = 0; i < 6; i++) {
		plan_of(rs, z.id, plan, sizeof(plan));
	}
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, grow_unit, &z.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(fx_kept(rs, z.id), GROWN + 2);
	plan_of(rs, z.id, plan, sizeof(plan));
	fprintf(stderr, "before:\n%s", plan);

	CHECK_EQ(records_keep_stats(rs), ZC_EOK);
	/* It runs on a thread and connection of its own. */
	for (int i = 0; i < 600 && records_stats_running(); i++) {
		usleep(50 * 1000);
	}
	CHECK(!records_stats_running());
	int64_t tuples = 0;
	CHECK_EQ(rdb_query_int64(rs->db, RDB_SQL2(NULL,
		"SELECT reltuples::bigint FROM pg_class"
		" WHERE oid = 'records'::regclass"), &tuples), ZC_EOK);
	CHECK(tuples >= GROWN);
	plan_of(rs, z.id, plan, sizeof(plan));
	fprintf(stderr, "after:\n%s", plan);
	CHECK(strstr(plan, "records_node") != NULL);
	CHECK(strstr(plan, "records_type") == NULL);

	/* Another node analyzed after the table grew again: this process,
	 * whose own count is due too, skips its ANALYZE. */
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, grow_unit2, &z.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	records_stats_grew(rs, 2 * GROWN);
	/* The rows' counts reach the server's statistics when this session
	 * flushes them (at most once a second, PostgreSQL 15): flushed after
	 * the ANALYZE, they would make the table look changed since it and
	 * the ANALYZE below due (seen in CI). Flushed first, then. */
	CHECK_EQ(rdb_exec(rs->db, "SELECT pg_stat_force_next_flush()"), ZC_EOK);
	CHECK_EQ(rdb_exec(rs->db, "ANALYZE records, changes"), ZC_EOK);
	int64_t before = analyses(rs);
	CHECK_EQ(records_keep_stats(rs), ZC_EOK);
	for (int i = 0; i < 600 && records_stats_running(); i++) {
		usleep(50 * 1000);
	}
	CHECK(!records_stats_running());
	CHECK_EQ(analyses(rs), before);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
