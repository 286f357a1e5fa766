/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bulk loads (records/db.h, rdb_copy_*()) on their own, against every
 * driver as test_db.c is: PostgreSQL's binary COPY (ZC_TEST_BACKEND=pg,
 * meson's copy@pg) and SQLite's INSERT per row. Values of every kind come
 * back byte for byte (every octet in a blob, text with tabs, newlines and
 * backslashes, integers at the limits of their columns, NULL against
 * empty); loads larger than one chunk of the stream; and a load that fails
 * half-way (a duplicate key, a row a CHECK refuses, a row of the wrong
 * width, a load cancelled) leaves nothing once its transaction is rolled
 * back, on a connection that stays usable; and statements queued in
 * PostgreSQL's pipeline (rdb_defer()) before a load are answered before it
 * starts.
 */
#include <stdint.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/db.h"
#include "tests/unit/test.h"
#include "tests/unit/records_target.h"

#define COLUMNS "id, name, data, small, tiny"

/* The test table, in each dialect's type names: small and tiny are int4
 * and int2 on PostgreSQL, so that integers go at those widths. */
static int create_table(rdb_t *db)
{
	rdb_exec(db, "DROP TABLE IF EXISTS rdb_copy");
	return rdb_exec(db, rdb_kind(db) == RDB_PG ?
	                "CREATE TABLE rdb_copy (id BIGINT PRIMARY KEY,"
	                " name TEXT, data BYTEA,"
	                " small INTEGER CHECK (small <> 13), tiny SMALLINT)" :
	                "CREATE TABLE rdb_copy (id INTEGER PRIMARY KEY,"
	                " name TEXT, data BLOB,"
	                " small INTEGER CHECK (small <> 13), tiny INTEGER)");
}

static int64_t count_rows(rdb_t *db)
{
	int64_t n = -1;
	if (rdb_query_int64(db, RDB_SQL("SELECT count(*) FROM rdb_copy"),
	                    &n) != ZC_EOK) {
		return -1;
	}
	return n;
}

/* One row of the load: id, name (NULL: NULL), data (NULL: NULL), small. */
static int load_row(rdb_copy_t *c, int64_t id, const char *name,
                    const void *data, size_t len, int64_t small)
{
	rdb_copy_int64(c, id);
	rdb_copy_text(c, name);
	rdb_copy_blob(c, data, len);
	rdb_copy_int64(c, small);
	rdb_copy_int64(c, small % 1000);
	return rdb_copy_row(c);
}

/* Rows first..first + n - 1 with 1 KiB of data each, one of them
 * (dup_at, unless -1) with the id `dup_id`; the first failure, from a
 * row or from the end. */
static int load_many(rdb_t *db, int64_t first, int n, int dup_at,
                     int64_t dup_id, int64_t small)
{
	rdb_copy_t *c;
	int ret = rdb_copy_begin(db, "rdb_copy", COLUMNS, &c);
	if (ret != ZC_EOK) {
		return ret;
	}
	uint8_t data[1024];
	for (int i = 0; i < n && ret == ZC_EOK; i++) {
		memset(data, i & 0xff, sizeof(data));
		int64_t id = i == dup_at ? dup_id : first + i;
		ret = load_row(c, id, "many", data, sizeof(data),
		               i == dup_at ? small : 1);
	}
	if (ret != ZC_EOK) {
		rdb_copy_abort(c);
		return ret;
	}
	return rdb_copy_end(c);
}

/* Every octet value, and text that a text-format COPY would escape. */
static void test_octets(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	uint8_t all[256];
	for (int i = 0; i < 256; i++) {
		all[i] = (uint8_t)i;
	}
	const uint8_t odd[] = { 0, '\\', '\t', '\n', '\r', 0xff, 0x80, '\\',
	                        'N', '\\', '.', 0 };
	const char *name = "tab\there\nnew\\line\\N\\.\r \xc3\xa9\xe2\x82\xac";

	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	rdb_copy_t *c;
	CHECK_EQ(rdb_copy_begin(db, "rdb_copy", COLUMNS, &c), ZC_EOK);
	CHECK_EQ(load_row(c, 1, name, all, sizeof(all), INT32_MIN), ZC_EOK);
	CHECK_EQ(load_row(c, 2, NULL, NULL, 0, 0), ZC_EOK);
	CHECK_EQ(load_row(c, 3, "", "", 0, INT32_MAX), ZC_EOK);
	CHECK_EQ(load_row(c, INT64_MAX, "max", odd, sizeof(odd), -1), ZC_EOK);
	/* A NULL given as such, and the limits of a smallint. */
	rdb_copy_int64(c, INT64_MIN);
	rdb_copy_null(c);
	rdb_copy_blob(c, odd, 1);
	rdb_copy_null(c);
	rdb_copy_int64(c, INT16_MIN);
	CHECK_EQ(rdb_copy_row(c), ZC_EOK);
	CHECK_EQ(rdb_copy_end(c), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);

	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT id, name, data, small, tiny"
	                                 " FROM rdb_copy ORDER BY id"), &st),
	         ZC_EOK);
	size_t len;
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), INT64_MIN);
	CHECK(rdb_col_is_null(st, 1));
	CHECK_EQ(rdb_col_bytes(st, 2), 1);
	CHECK(rdb_col_is_null(st, 3));
	CHECK_EQ(rdb_col_int64(st, 4), INT16_MIN);

	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 1);
	CHECK(strcmp(rdb_col_text(st, 1), name) == 0);
	const uint8_t *p = rdb_col_blob(st, 2, &len);
	CHECK_EQ(len, sizeof(all));
	CHECK(p != NULL && memcmp(p, all, sizeof(all)) == 0);
	CHECK_EQ(rdb_col_int64(st, 3), INT32_MIN);
	CHECK_EQ(rdb_col_int64(st, 4), INT32_MIN % 1000);

	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 2);
	CHECK(rdb_col_is_null(st, 1));
	CHECK(rdb_col_is_null(st, 2));

	/* Empty is not NULL. */
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 3);
	CHECK(!rdb_col_is_null(st, 1) && strcmp(rdb_col_text(st, 1), "") == 0);
	CHECK(!rdb_col_is_null(st, 2));
	CHECK_EQ(rdb_col_bytes(st, 2), 0);
	CHECK_EQ(rdb_col_int64(st, 3), INT32_MAX);

	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), INT64_MAX);
	p = rdb_col_blob(st, 2, &len);
	CHECK_EQ(len, sizeof(odd));
	CHECK(p != NULL && memcmp(p, odd, sizeof(odd)) == 0);
	CHECK_EQ(rdb_col_int64(st, 3), -1);
	CHECK_EQ(rdb_step(st), RDB_DONE);
	rdb_done(st);
}

/* A load of many chunks of the stream (20 MiB), checked by the sum of
 * its octets as the engine computes it. */
static void test_large(rdb_t *db)
{
	enum { ROWS = 20000 };
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(load_many(db, 1, ROWS, -1, 0, 0), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK_EQ(count_rows(db), ROWS);
	int64_t bytes = 0;
	CHECK_EQ(rdb_query_int64(db, RDB_SQL("SELECT sum(length(data))"
	                                     " FROM rdb_copy"), &bytes), ZC_EOK);
	CHECK_EQ(bytes, (int64_t)ROWS * 1024);
	/* Row i holds octet i mod 256: id 300 (i = 299) holds 43. */
	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT data FROM rdb_copy"
	                                 " WHERE id = 300"), &st), ZC_EOK);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	size_t len;
	const uint8_t *p = rdb_col_blob(st, 0, &len);
	CHECK(p != NULL && len == 1024 && p[0] == 43 && p[1023] == 43);
	rdb_done(st);
}

/* Loads that fail half-way, rolled back: nothing of them stays, what
 * was committed before does, and the connection goes on. */
static void test_failures(rdb_t *db)
{
	enum { ROWS = 3000 };
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(load_many(db, 1, 10, -1, 0, 0), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);

	/* A duplicate key in the middle: refused (by its row on SQLite, at
	 * the end on PostgreSQL) as ZC_EEXISTS. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(load_many(db, 100, ROWS, ROWS / 2, 5, 1), ZC_EEXISTS);
	rdb_rollback(db);
	CHECK_EQ(count_rows(db), 10);

	/* A row that a CHECK refuses. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK(load_many(db, 100, ROWS, ROWS / 2, 100 + ROWS / 2, 13) !=
	      ZC_EOK);
	rdb_rollback(db);
	CHECK_EQ(count_rows(db), 10);

	/* Rows of the wrong width: one value short, one too many. */
	rdb_copy_t *c;
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(rdb_copy_begin(db, "rdb_copy", COLUMNS, &c), ZC_EOK);
	CHECK_EQ(load_row(c, 200, "ok", "x", 1, 1), ZC_EOK);
	rdb_copy_int64(c, 201);
	CHECK_EQ(rdb_copy_row(c), KNOT_EINVAL);
	CHECK_EQ(rdb_copy_end(c), KNOT_EINVAL);
	rdb_rollback(db);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(rdb_copy_begin(db, "rdb_copy", COLUMNS, &c), ZC_EOK);
	CHECK_EQ(load_row(c, 300, "ok", "x", 1, 1), ZC_EOK);
	rdb_copy_int64(c, 301);
	rdb_copy_text(c, "ok");
	rdb_copy_blob(c, "x", 1);
	rdb_copy_int64(c, 1);
	rdb_copy_int64(c, 1);
	rdb_copy_int64(c, 1);
	CHECK_EQ(rdb_copy_row(c), KNOT_EINVAL);
	rdb_copy_abort(c);
	rdb_rollback(db);
	CHECK_EQ(count_rows(db), 10);

	/* An integer its column cannot hold is refused, not cut. */
	if (rdb_kind(db) == RDB_PG) {
		CHECK_EQ(rdb_begin_write(db), ZC_EOK);
		CHECK_EQ(rdb_copy_begin(db, "rdb_copy", COLUMNS, &c), ZC_EOK);
		CHECK_EQ(load_row(c, 400, "big", "x", 1, INT64_C(1) << 32),
		         KNOT_ERANGE);
		rdb_copy_abort(c);
		rdb_rollback(db);
	}

	/* A load cancelled by its caller after many rows. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(rdb_copy_begin(db, "rdb_copy", COLUMNS, &c), ZC_EOK);
	uint8_t data[1024] = { 0 };
	for (int i = 0; i < ROWS; i++) {
		load_row(c, 1000 + i, "cancelled", data, sizeof(data), 1);
	}
	rdb_copy_abort(c);
	rdb_copy_abort(NULL);
	rdb_rollback(db);
	CHECK_EQ(count_rows(db), 10);

	/* No table of that name: refused at the start. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK(rdb_copy_begin(db, "no_such_table", "id", &c) != ZC_EOK);
	rdb_rollback(db);

	/* The connection goes on: a load commits. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(load_many(db, 100, 5, -1, 0, 0), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK_EQ(count_rows(db), 15);
}

/* Queues one row by rdb_defer() (PostgreSQL's pipeline, inside a write
 * transaction; elsewhere it runs at once). */
static int defer_row(rdb_t *db, int64_t id)
{
	rdb_stmt_t *st;
	int ret = rdb_prepare(db, RDB_SQL("INSERT INTO rdb_copy(id, name)"
	                                  " VALUES (?1, 'deferred')"), &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(st, 1, id);
	ret = rdb_defer(st);
	rdb_done(st);
	return ret;
}

/* Statements queued before a load are answered before it starts: their
 * rows are there, in order, and a failure among them fails the load's
 * start (not some later call). */
static void test_after_deferred(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(defer_row(db, 1), ZC_EOK);
	CHECK_EQ(defer_row(db, 2), ZC_EOK);
	CHECK_EQ(load_many(db, 3, 100, -1, 0, 0), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK_EQ(count_rows(db), 102);

	/* A duplicate queued: known at once on SQLite, at the load's start
	 * on PostgreSQL. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	int ret = defer_row(db, 1);
	rdb_copy_t *c = NULL;
	if (ret == ZC_EOK) {
		ret = rdb_copy_begin(db, "rdb_copy", COLUMNS, &c);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	rdb_rollback(db);
	CHECK_EQ(count_rows(db), 102);
}

int main(void)
{
	const char *target = getenv("ZC_TEST_RDB_TARGET");
	const char *dir = NULL;
	char path[512];
	if (target == NULL && test_backend_is_pg()) {
		target = test_records_target("");
	}
	if (target == NULL) {
		dir = test_tmpdir();
		snprintf(path, sizeof(path), "%s/test.db", dir);
		target = path;
	}
	const rdb_options_t opts = { .label = "test database" };
	rdb_t *db;
	if (rdb_open(&db, target, &opts) != ZC_EOK) {
		fprintf(stderr, "cannot open %s\n", target);
		return 1;
	}
	test_octets(db);
	test_large(db);
	test_failures(db);
	test_after_deferred(db);
	rdb_close(db);
	if (dir != NULL) {
		test_rmdir(dir);
	}
	return test_done();
}
