/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The nodes sharing a PostgreSQL records store (records/nodes.c): a
 * heartbeat inserts then updates its row; a second process beating the
 * same name is refused while the first is live (RECORDS_NODE_DOWN_MS) and
 * takes the row once it is not; a leave deletes only its own row; the
 * leader row reads as written (by hand here: the leader election writes
 * it). On SQLite (the default run) every call is KNOT_ENOTSUP; the @pg run
 * needs ZC_TEST_PGHOST (records_target.h).
 */
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/records.h"
#include "tests/unit/records_target.h"
#include "tests/unit/test.h"

#define MAX_ROWS 4

typedef struct {
	size_t count;
	char name[MAX_ROWS][64];
	int pid[MAX_ROWS];
	uint64_t applied[MAX_ROWS];
	int stalled[MAX_ROWS];
	int64_t started_ms[MAX_ROWS], seen_ago_ms[MAX_ROWS];
} rows_t;

static int take_row(const records_node_t *n, void *ctx)
{
	rows_t *r = ctx;
	if (r->count < MAX_ROWS) {
		snprintf(r->name[r->count], sizeof(r->name[0]), "%s", n->name);
		r->pid[r->count] = n->pid;
		r->applied[r->count] = n->applied_seq;
		r->stalled[r->count] = n->stalled;
		r->started_ms[r->count] = n->started_ms;
		r->seen_ago_ms[r->count] = n->seen_ago_ms;
	}
	r->count++;
	return 0;
}

static rows_t list(records_store_t *rs)
{
	rows_t r = { 0 };
	CHECK_EQ(records_nodes_list(rs, take_row, &r), ZC_EOK);
	return r;
}

static void test_sqlite_has_none(records_store_t *rs)
{
	records_node_t self = { .name = "a", .role = "serve", .version = "x" };
	records_leader_row_t leader;
	rows_t r = { 0 };
	CHECK_EQ(records_node_beat(rs, &self), KNOT_ENOTSUP);
	CHECK_EQ(records_node_leave(rs, &self), KNOT_ENOTSUP);
	CHECK_EQ(records_nodes_list(rs, take_row, &r), KNOT_ENOTSUP);
	CHECK_EQ(records_leader_row_get(rs, &leader), KNOT_ENOTSUP);
}

static void test_beats(records_store_t *rs, const char *dir)
{
	const int64_t started = 1796000000123; /* ms: kept to the ms */
	records_node_t a = { .name = "host:/data/a", .role = "serve",
	                     .version = "0.1.0", .pid = 4711,
	                     .started_ms = started, .applied_seq = 7 };
	CHECK_EQ(records_node_beat(rs, &a), ZC_EOK);
	rows_t r = list(rs);
	CHECK_EQ(r.count, 1);
	CHECK(strcmp(r.name[0], "host:/data/a") == 0);
	CHECK_EQ(r.pid[0], 4711);
	CHECK_EQ(r.applied[0], 7);
	CHECK_EQ(r.stalled[0], 0);
	CHECK_EQ(r.started_ms[0], started);
	CHECK(r.seen_ago_ms[0] >= 0 && r.seen_ago_ms[0] < 1000);

	/* The next beat updates the row: what the builder applied, its
	 * stall. */
	a.applied_seq = 12;
	a.stalled = ZC_ETRIMMED;
	CHECK_EQ(records_node_beat(rs, &a), ZC_EOK);
	r = list(rs);
	CHECK_EQ(r.count, 1);
	CHECK_EQ(r.applied[0], 12);
	CHECK_EQ(r.stalled[0], ZC_ETRIMMED);

	/* Another process with the same name while a is live: refused,
	 * nothing written. */
	records_node_t b = a;
	b.pid = 815;
	b.started_ms = started + 5000;
	b.applied_seq = 99;
	CHECK_EQ(records_node_beat(rs, &b), ZC_EEXISTS);
	r = list(rs);
	CHECK_EQ(r.pid[0], 4711);
	CHECK_EQ(r.applied[0], 12);
	/* b's leave does not delete a's row. */
	CHECK_EQ(records_node_leave(rs, &b), ZC_EOK);
	CHECK_EQ(list(rs).count, 1);

	/* a falls silent for longer than RECORDS_NODE_DOWN_MS: b takes the
	 * name (a node restarted after a crash). */
	CHECK_EQ(test_records_exec(dir, "UPDATE nodes SET last_seen ="
	                           " now() - interval '6 seconds'"), 0);
	r = list(rs);
	CHECK(r.seen_ago_ms[0] > RECORDS_NODE_DOWN_MS);
	CHECK_EQ(records_node_beat(rs, &b), ZC_EOK);
	r = list(rs);
	CHECK_EQ(r.count, 1);
	CHECK_EQ(r.pid[0], 815);
	CHECK_EQ(r.applied[0], 99);

	/* A second name is a second row, listed in name order. */
	records_node_t c = { .name = "host:/data/0", .role = "serve",
	                     .version = "0.1.0", .pid = 1, .started_ms = 1 };
	CHECK_EQ(records_node_beat(rs, &c), ZC_EOK);
	r = list(rs);
	CHECK_EQ(r.count, 2);
	CHECK(strcmp(r.name[0], "host:/data/0") == 0);

	/* A clean stop deletes its own row only. */
	CHECK_EQ(records_node_leave(rs, &a), ZC_EOK);
	CHECK_EQ(list(rs).count, 2);
	CHECK_EQ(records_node_leave(rs, &b), ZC_EOK);
	r = list(rs);
	CHECK_EQ(r.count, 1);
	CHECK(strcmp(r.name[0], "host:/data/0") == 0);
}

static void test_leader(records_store_t *rs, const char *dir)
{
	records_leader_row_t leader;
	CHECK_EQ(records_leader_row_get(rs, &leader), ZC_EOK);
	CHECK_EQ(leader.epoch, 0);
	CHECK_EQ(leader.node[0], '\0');
	CHECK_EQ(leader.since_ms, 0);
	/* As the leader election takes it (docs/design-postgresql.md §3). */
	CHECK_EQ(test_records_exec(dir, "UPDATE leader SET epoch = epoch + 1,"
	                           " node = 'host:/data/a',"
	                           " since = to_timestamp(1796000000.5)"), 0);
	CHECK_EQ(records_leader_row_get(rs, &leader), ZC_EOK);
	CHECK_EQ(leader.epoch, 1);
	CHECK(strcmp(leader.node, "host:/data/a") == 0);
	CHECK_EQ(leader.since_ms, 1796000000500);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	int ret = records_open(&rs, test_records_target(dir));
	CHECK_EQ(ret, ZC_EOK);
	if (ret == ZC_EOK && !test_backend_is_pg()) {
		test_sqlite_has_none(rs);
	} else if (ret == ZC_EOK) {
		test_beats(rs, dir);
		test_leader(rs, dir);
	}
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
