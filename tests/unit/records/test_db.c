/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The database driver (records/db.h) on its own: statements and their
 * cache, binds and columns of every type, stepping, transactions, read
 * snapshots, the savepoints of units, and the mapping of engine errors to
 * zonecast codes. Written against the interface only, so that the same
 * test runs against every driver: SQLite in a temporary directory by
 * default, or the target in ZC_TEST_RDB_TARGET (a postgresql:// URI for
 * the libpq driver), or a database of its own on $ZC_TEST_PGHOST when
 * ZC_TEST_BACKEND=pg (records_target.h; meson's db@pg).
 */
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/db.h"
#include "tests/unit/test.h"
#include "tests/unit/records_target.h"

/* The test table, in each dialect's type names. */
static int create_table(rdb_t *db)
{
	rdb_exec(db, "DROP TABLE IF EXISTS rdb_test");
	return rdb_exec(db, rdb_kind(db) == RDB_PG ?
	                "CREATE TABLE rdb_test (id BIGINT PRIMARY KEY,"
	                " name TEXT UNIQUE, data BYTEA, n BIGINT)" :
	                "CREATE TABLE rdb_test (id INTEGER PRIMARY KEY,"
	                " name TEXT UNIQUE, data BLOB, n INTEGER)");
}

/* Inserts a row (name and data NULL when NULL). */
static int insert(rdb_t *db, int64_t id, const char *name,
                  const void *data, size_t len)
{
	rdb_stmt_t *st;
	int ret = rdb_prepare(db, RDB_SQL("INSERT INTO rdb_test(id, name, data,"
	                                  " n) VALUES (?1, ?2, ?3, ?4)"), &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(st, 1, id);
	rdb_bind_text(st, 2, name);
	rdb_bind_blob(st, 3, data, len);
	rdb_bind_int64(st, 4, id % 100000 * 10); /* No overflow at INT64_MAX. */
	ret = rdb_run(st);
	rdb_done(st);
	return ret;
}

/* The number of rows (-1 on a failure). */
static int64_t count_rows(rdb_t *db)
{
	rdb_stmt_t *st;
	if (rdb_prepare(db, RDB_SQL("SELECT count(*) FROM rdb_test"),
	                &st) != ZC_EOK) {
		return -1;
	}
	int64_t n = rdb_step(st) == RDB_ROW ? rdb_col_int64(st, 0) : -1;
	rdb_done(st);
	return n;
}

/* Does the row exist? */
static bool has_row(rdb_t *db, int64_t id)
{
	rdb_stmt_t *st;
	if (rdb_prepare(db, RDB_SQL("SELECT 1 FROM rdb_test WHERE id = ?1"),
	                &st) != ZC_EOK) {
		return false;
	}
	rdb_bind_int64(st, 1, id);
	bool found = rdb_step(st) == RDB_ROW;
	rdb_done(st);
	return found;
}

static void test_binds_and_columns(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	const uint8_t blob[5] = { 0, 1, 0xff, 0, 7 };
	CHECK_EQ(insert(db, 1, "one", blob, sizeof(blob)), ZC_EOK);
	CHECK_EQ(insert(db, 2, NULL, NULL, 0), ZC_EOK);
	CHECK_EQ(insert(db, 3, "three", "", 0), ZC_EOK);
	CHECK_EQ(rdb_changes(db), 1);

	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT id, name, data, n FROM rdb_test"
	                                 " WHERE id >= ?1 ORDER BY id"), &st),
	         ZC_EOK);
	rdb_bind_int64(st, 1, 1);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 1);
	CHECK(strcmp(rdb_col_text(st, 1), "one") == 0);
	size_t len = 0;
	const uint8_t *p = rdb_col_blob(st, 2, &len);
	CHECK_EQ(len, sizeof(blob));
	CHECK(p != NULL && memcmp(p, blob, sizeof(blob)) == 0);
	CHECK_EQ(rdb_col_bytes(st, 2), sizeof(blob));
	CHECK_EQ(rdb_col_int64(st, 3), 10);
	CHECK(!rdb_col_is_null(st, 1));

	/* NULLs: text NULL, blob of length 0, int64 0. */
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 2);
	CHECK(rdb_col_is_null(st, 1));
	CHECK(rdb_col_is_null(st, 2));
	CHECK(rdb_col_text(st, 1) == NULL);
	CHECK_EQ(rdb_col_bytes(st, 2), 0);

	/* An empty blob is not NULL. */
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK(!rdb_col_is_null(st, 2));
	CHECK_EQ(rdb_col_bytes(st, 2), 0);
	CHECK_EQ(rdb_step(st), RDB_DONE);

	/* Reset keeps the bindings: the same three rows again. */
	rdb_reset(st);
	int rows = 0;
	while (rdb_step(st) == RDB_ROW) {
		rows++;
	}
	CHECK_EQ(rows, 3);
	rdb_done(st);

	/* An explicit NULL, and a value read back as NULL through a
	 * parameter. */
	CHECK_EQ(rdb_prepare(db, RDB_SQL("UPDATE rdb_test SET n = ?1"
	                                 " WHERE id = ?2"), &st), ZC_EOK);
	rdb_bind_null(st, 1);
	rdb_bind_int64(st, 2, 3);
	CHECK_EQ(rdb_run(st), ZC_EOK);
	rdb_done(st);
	CHECK_EQ(rdb_changes(db), 1);
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT n FROM rdb_test WHERE id = 3"),
	                     &st), ZC_EOK);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK(rdb_col_is_null(st, 0));
	CHECK_EQ(rdb_col_int64(st, 0), 0);
	rdb_done(st);

	/* Large and negative values survive the round trip (PostgreSQL
	 * takes integers as the decimal text pg_int64_text() writes). */
	const int64_t extremes[] = { INT64_MAX, INT64_MIN, -1, -10, 0,
	                             INT64_MIN + 1, 1000000000000 };
	for (size_t i = 0; i < sizeof(extremes) / sizeof(extremes[0]); i++) {
		CHECK_EQ(insert(db, extremes[i], NULL, NULL, 0), ZC_EOK);
		CHECK(has_row(db, extremes[i]));
	}
	/* rdb_status: a step's result as a code. */
	CHECK_EQ(rdb_status(RDB_ROW), ZC_EOK);
	CHECK_EQ(rdb_status(RDB_DONE), ZC_EOK);
	CHECK_EQ(rdb_status(ZC_EBUSY), ZC_EBUSY);
}

/* The cache: a statement done comes back for the same text; a text in
 * use gets a second statement; many texts at once overflow the cache
 * into statements of their own (finalized at done). */
static void test_cache(rdb_t *db)
{
	static const char *const text = "SELECT count(*) FROM rdb_test";
	rdb_stmt_t *a, *b, *c;
	CHECK_EQ(rdb_prepare(db, RDB_SQL(text), &a), ZC_EOK);
	rdb_done(a);
	CHECK_EQ(rdb_prepare(db, RDB_SQL(text), &b), ZC_EOK);
	CHECK(a == b);
	CHECK_EQ(rdb_prepare(db, RDB_SQL(text), &c), ZC_EOK);
	CHECK(c != b);
	CHECK_EQ(rdb_step(b), RDB_ROW);
	CHECK_EQ(rdb_step(c), RDB_ROW);
	CHECK_EQ(rdb_col_int64(b, 0), rdb_col_int64(c, 0));
	rdb_done(b);
	rdb_done(c);
	rdb_done(NULL);

	enum { MANY = 80 };
	static char texts[MANY][64];
	rdb_stmt_t *st[MANY];
	int ok = 0;
	for (int i = 0; i < MANY; i++) {
		snprintf(texts[i], sizeof(texts[i]), "SELECT %d + ?1", i);
		if (rdb_prepare(db, RDB_SQL(texts[i]), &st[i]) != ZC_EOK) {
			st[i] = NULL;
			continue;
		}
		rdb_bind_int64(st[i], 1, 1000);
		ok += rdb_step(st[i]) == RDB_ROW &&
		      rdb_col_int64(st[i], 0) == 1000 + i;
	}
	CHECK_EQ(ok, MANY);
	for (int i = 0; i < MANY; i++) {
		rdb_done(st[i]);
	}

	/* A one-off statement. */
	CHECK_EQ(rdb_prepare_once(db, RDB_SQL("SELECT 42"), &a), ZC_EOK);
	CHECK_EQ(rdb_step(a), RDB_ROW);
	CHECK_EQ(rdb_col_int64(a, 0), 42);
	rdb_done(a);
}

/* Engine errors as zonecast codes. */
static void test_errors(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK_EQ(insert(db, 1, "dup", NULL, 0), ZC_EOK);
	/* Unique violations: the primary key and a UNIQUE column. */
	CHECK_EQ(insert(db, 1, "other", NULL, 0), ZC_EEXISTS);
	CHECK_EQ(insert(db, 2, "dup", NULL, 0), ZC_EEXISTS);
	CHECK_EQ(count_rows(db), 1);
	/* SQL the engine cannot parse, or a table it does not have. */
	rdb_stmt_t *st = NULL;
	if (rdb_kind(db) == RDB_PG) {
		/* Prepared at its first step (types from the bindings). */
		CHECK_EQ(rdb_prepare(db, RDB_SQL("SELEKT 1"), &st), ZC_EOK);
		CHECK_EQ(rdb_step(st), ZC_ESQL);
		rdb_done(st);
	} else {
		CHECK_EQ(rdb_prepare(db, RDB_SQL("SELEKT 1"), &st), ZC_ESQL);
	}
	CHECK_EQ(rdb_exec(db, "SELECT * FROM no_such_table"), ZC_ESQL);
	/* No text for this engine. */
	CHECK_EQ(rdb_prepare(db, RDB_SQL2(NULL, NULL), &st), KNOT_ENOTSUP);
	/* An unknown target kind and bad arguments. */
	rdb_t *other;
	CHECK_EQ(rdb_open(NULL, "x", NULL), KNOT_EINVAL);
	CHECK_EQ(rdb_open(&other, NULL, NULL), KNOT_EINVAL);
}

/* Write transactions, read snapshots, and a second connection. */
static void test_transactions(rdb_t *db, rdb_t *other)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK(!rdb_in_txn(db));
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK(rdb_in_txn(db));
	CHECK_EQ(insert(db, 1, "a", NULL, 0), ZC_EOK);
	if (rdb_kind(db) == RDB_SQLITE) {
		/* PostgreSQL: only of identity columns (lastval()). */
		CHECK_EQ(rdb_last_insert_id(db), 1);
	}
	/* Not visible to the other connection before the commit. */
	CHECK_EQ(count_rows(other), 0);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK(!rdb_in_txn(db));
	CHECK_EQ(count_rows(other), 1);

	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert(db, 2, "b", NULL, 0), ZC_EOK);
	rdb_rollback(db);
	CHECK(!rdb_in_txn(db));
	CHECK(!has_row(db, 2));
	rdb_rollback(db); /* None open: nothing to do. */

	/* A read snapshot keeps seeing one state. */
	CHECK_EQ(rdb_begin_read(other), ZC_EOK);
	CHECK_EQ(count_rows(other), 1);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert(db, 3, "c", NULL, 0), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK_EQ(count_rows(other), 1);
	rdb_end_read(other);
	CHECK_EQ(count_rows(other), 2);

	if (rdb_kind(db) == RDB_SQLITE) {
		/* SQLite takes the write lock at BEGIN: a second writer
		 * (without a busy timeout) is refused at once. */
		CHECK_EQ(rdb_begin_write(db), ZC_EOK);
		CHECK_EQ(rdb_begin_write(other), ZC_EBUSY);
		CHECK(!rdb_in_txn(other));
		rdb_rollback(db);
		CHECK_EQ(rdb_begin_write(other), ZC_EOK);
		rdb_rollback(other);
	}
}

/* The savepoints of units: a unit and an inner one, each released or
 * rolled back; a failed statement inside leaves the transaction usable
 * after the rollback to its savepoint. */
static void test_savepoints(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert(db, 1, "before", NULL, 0), ZC_EOK);

	/* Unit 1: an inner savepoint rolled back, the unit released. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(insert(db, 2, "unit1", NULL, 0), ZC_EOK);
	CHECK_EQ(rdb_savepoint(db, RDB_SP_INNER), ZC_EOK);
	CHECK_EQ(insert(db, 3, "inner", NULL, 0), ZC_EOK);
	rdb_rollback_to(db, RDB_SP_INNER);
	CHECK(!has_row(db, 3));
	CHECK(has_row(db, 2));
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);

	/* Unit 2: a unique violation, then the unit rolled back. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(insert(db, 4, "unit2", NULL, 0), ZC_EOK);
	CHECK_EQ(insert(db, 5, "unit1", NULL, 0), ZC_EEXISTS);
	rdb_rollback_to(db, RDB_SP_UNIT);
	CHECK(rdb_in_txn(db));
	CHECK(!has_row(db, 4));

	/* Unit 3: an inner savepoint released inside a released unit. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(rdb_savepoint(db, RDB_SP_INNER), ZC_EOK);
	CHECK_EQ(insert(db, 6, "unit3", NULL, 0), ZC_EOK);
	CHECK_EQ(rdb_release(db, RDB_SP_INNER), ZC_EOK);
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);

	CHECK(has_row(db, 1));
	CHECK(has_row(db, 2));
	CHECK(!has_row(db, 3));
	CHECK(!has_row(db, 4));
	CHECK(!has_row(db, 5));
	CHECK(has_row(db, 6));
	CHECK_EQ(count_rows(db), 3);
	/* No transaction: rolling back to a savepoint does nothing. */
	rdb_rollback_to(db, RDB_SP_UNIT);
	CHECK_EQ(count_rows(db), 3);
}

/* Inserts a row with rdb_defer() (queued on PostgreSQL in a write
 * transaction). */
static int insert_deferred(rdb_t *db, int64_t id, const char *name)
{
	rdb_stmt_t *st;
	int ret = rdb_prepare(db, RDB_SQL("INSERT INTO rdb_test(id, name, data,"
	                                  " n) VALUES (?1, ?2, ?3, ?4)"), &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	char copy[32];
	snprintf(copy, sizeof(copy), "%s", name);
	rdb_bind_int64(st, 1, id);
	rdb_bind_text(st, 2, copy);
	rdb_bind_blob(st, 3, "a\0b", 3);
	rdb_bind_int64(st, 4, id);
	ret = rdb_defer(st);
	/* The bindings were copied: the caller's buffer may change. */
	memset(copy, 'x', sizeof(copy) - 1);
	rdb_done(st);
	return ret;
}

/* rdb_defer(): queued writes keep their order, read their own effect at
 * the next read, and a queued failure surfaces at the unit's next
 * synchronous call, fails that unit only, and leaves the transaction good
 * after the unit's rollback. */
static void test_deferred(rdb_t *db)
{
	CHECK_EQ(create_table(db), ZC_EOK);
	/* Outside a transaction it runs at once. */
	CHECK_EQ(insert_deferred(db, 1, "outside"), ZC_EOK);
	CHECK(has_row(db, 1));
	CHECK_EQ(insert_deferred(db, 2, "outside"), ZC_EEXISTS);

	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	/* Unit 1: many queued rows (past the pipeline's own sync), then a
	 * read that sees them all. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	int ok = 0;
	for (int i = 0; i < 700; i++) {
		char name[32];
		snprintf(name, sizeof(name), "u1-%d", i);
		ok += insert_deferred(db, 100 + i, name) == ZC_EOK;
	}
	CHECK_EQ(ok, 700);
	CHECK_EQ(count_rows(db), 701);
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);

	/* Unit 2: a queued clash; the release reports it. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 2000, "u2"), ZC_EOK);
	int ret = insert_deferred(db, 2001, "u1-5");
	if (ret == ZC_EOK) {
		CHECK_EQ(insert_deferred(db, 2002, "u2b"), ZC_EOK);
		ret = rdb_release(db, RDB_SP_UNIT);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	rdb_rollback_to(db, RDB_SP_UNIT);

	/* Unit 3: a queued clash surfaces at the next read instead. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	ret = insert_deferred(db, 3000, "u1-6");
	if (ret == ZC_EOK) {
		rdb_stmt_t *st;
		CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT count(*) FROM rdb_test"),
		                     &st), ZC_EOK);
		ret = rdb_step(st);
		rdb_done(st);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	rdb_rollback_to(db, RDB_SP_UNIT);

	/* Unit 4: fine again; a queued row that nothing reads commits. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 4000, "u4"), ZC_EOK);
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 4001, "last"), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	CHECK(has_row(db, 4000));
	CHECK(has_row(db, 4001));
	CHECK(!has_row(db, 2000));
	CHECK(!has_row(db, 3000));
	CHECK_EQ(count_rows(db), 703);

	/* The bindings were taken when queued. */
	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT name, data FROM rdb_test"
	                                 " WHERE id = 4000"), &st), ZC_EOK);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK(strcmp(rdb_col_text(st, 0), "u4") == 0);
	CHECK_EQ(rdb_col_bytes(st, 1), 3);
	CHECK(memcmp(rdb_col_blob(st, 1, NULL), "a\0b", 3) == 0);
	rdb_done(st);

	/* A queued failure at the commit: nothing of the transaction
	 * stays. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 5000, "five"), ZC_EOK);
	ret = insert_deferred(db, 5001, "u4");
	if (ret == ZC_EOK) {
		ret = rdb_commit(db);
	} else {
		rdb_rollback(db);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	CHECK(!rdb_in_txn(db));
	CHECK(!has_row(db, 5000));
	CHECK_EQ(count_rows(db), 703);
}

/* rdb_commit_then(): the read behind the COMMIT sees what it committed;
 * a queued failure keeps the commit from happening and the read from
 * running with it; the read failing does not undo the commit. */
static void test_commit_then(rdb_t *db)
{
	rdb_stmt_t *after;
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 6000, "six"), ZC_EOK);
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT count(*) FROM rdb_test"
	                                 " WHERE id >= 6000"), &after), ZC_EOK);
	CHECK_EQ(rdb_commit_then(db, after), ZC_EOK);
	CHECK(!rdb_in_txn(db));
	CHECK_EQ(rdb_step(after), RDB_ROW);
	CHECK_EQ(rdb_col_int64(after, 0), 1);
	CHECK_EQ(rdb_step(after), RDB_DONE);
	rdb_done(after);

	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert_deferred(db, 6001, "six-one"), ZC_EOK);
	int ret = insert_deferred(db, 6002, "six"); /* name is UNIQUE */
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT count(*) FROM rdb_test"
	                                 " WHERE id >= 6000"), &after), ZC_EOK);
	if (ret == ZC_EOK) {
		ret = rdb_commit_then(db, after);
	} else {
		rdb_rollback(db);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	CHECK(!rdb_in_txn(db));
	/* It did not run with the failed commit: stepping runs it now. */
	CHECK_EQ(rdb_step(after), RDB_ROW);
	CHECK_EQ(rdb_col_int64(after, 0), 1);
	rdb_done(after);

	if (rdb_kind(db) == RDB_PG) {
		CHECK_EQ(rdb_begin_write(db), ZC_EOK);
		CHECK_EQ(insert_deferred(db, 6003, "six-three"), ZC_EOK);
		CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT 1 / (id - id) FROM"
		                                 " rdb_test WHERE id = 6003"),
		                     &after), ZC_EOK);
		CHECK_EQ(rdb_commit_then(db, after), ZC_EOK);
		CHECK(rdb_step(after) < 0);
		rdb_done(after);
		CHECK(has_row(db, 6003));
	}
}

/* --- rdb_defer_row(): rows of one INSERT gathered into one statement --- */

static int create_gather_tables(rdb_t *db)
{
	rdb_exec(db, "DROP TABLE IF EXISTS rdb_gather");
	rdb_exec(db, "DROP TABLE IF EXISTS rdb_other");
	int ret = rdb_exec(db, rdb_kind(db) == RDB_PG ?
		"CREATE TABLE rdb_gather (seq BIGINT GENERATED ALWAYS AS IDENTITY,"
		" id BIGINT PRIMARY KEY, name TEXT, data BYTEA, n BIGINT)" :
		"CREATE TABLE rdb_gather (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
		" id INTEGER NOT NULL UNIQUE, name TEXT, data BLOB, n INTEGER)");
	return ret == ZC_EOK ? rdb_exec(db, "CREATE TABLE rdb_other (id BIGINT"
	                                " PRIMARY KEY, note TEXT)") : ret;
}

/* Row i's values: NULL names and data now and then, an empty blob apart
 * from NULL, octets 0 and 0xff, the integers' extremes. */
static void gather_values(int64_t i, char *name, size_t size,
                          const char **name_p, const void **data, size_t *len,
                          int64_t *n)
{
	snprintf(name, size, "n\\%lld'\"", (long long)i);
	*name_p = i % 3 == 0 ? NULL : name;
	*data = i % 5 == 0 ? "" : i % 7 == 0 ? NULL : "\0x\xff";
	*len = i % 5 == 0 ? 0 : 3;
	*n = i % 2 ? INT64_MIN + i : INT64_MAX - i;
}

static int insert_row(rdb_t *db, int64_t id)
{
	rdb_stmt_t *st;
	int ret = rdb_prepare(db, RDB_SQL("INSERT INTO rdb_gather(id, name,"
	                                  " data, n) VALUES (?1, ?2, ?3, ?4)"),
	                      &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	char name[48];
	const char *name_p;
	const void *data;
	size_t len;
	int64_t n;
	gather_values(id, name, sizeof(name), &name_p, &data, &len, &n);
	rdb_bind_int64(st, 1, id);
	rdb_bind_text(st, 2, name_p);
	rdb_bind_blob(st, 3, data, len);
	rdb_bind_int64(st, 4, n);
	ret = rdb_defer_row(st, "itbi");
	memset(name, 'x', sizeof(name) - 1); /* Taken when deferred. */
	rdb_done(st);
	return ret;
}

static int insert_other(rdb_t *db, int64_t id, bool constant)
{
	rdb_stmt_t *st;
	/* A constant in VALUES: not the single-row form; deferred as is. */
	int ret = rdb_prepare(db, constant ?
		RDB_SQL("INSERT INTO rdb_other(id, note) VALUES (?1, 'c')") :
		RDB_SQL("INSERT INTO rdb_other(id, note) VALUES (?1, ?2)"), &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(st, 1, id);
	rdb_bind_text(st, 2, "o");
	ret = rdb_defer_row(st, constant ? "i" : "it");
	rdb_done(st);
	return ret;
}

static int64_t count_of(rdb_t *db, const char *table)
{
	char sql[64];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	rdb_stmt_t *st;
	if (rdb_prepare_once(db, RDB_SQL(sql), &st) != ZC_EOK) {
		return -1;
	}
	int64_t n = rdb_step(st) == RDB_ROW ? rdb_col_int64(st, 0) : -1;
	rdb_done(st);
	return n;
}

/* Every row as inserted, in insertion order (seq): ids from..to-1. */
static void check_rows(rdb_t *db, int64_t from, int64_t to)
{
	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL("SELECT id, name, data, n FROM"
	                                 " rdb_gather ORDER BY seq"), &st),
	         ZC_EOK);
	int64_t want = from, bad = 0;
	while (rdb_step(st) == RDB_ROW) {
		char name[48];
		const char *name_p;
		const void *data;
		size_t len;
		int64_t n;
		gather_values(want, name, sizeof(name), &name_p, &data, &len, &n);
		bad += rdb_col_int64(st, 0) != want;
		bad += name_p == NULL ? !rdb_col_is_null(st, 1) :
		       rdb_col_is_null(st, 1) || strcmp(rdb_col_text(st, 1), name_p);
		bad += data == NULL ? !rdb_col_is_null(st, 2) :
		       rdb_col_is_null(st, 2) || rdb_col_bytes(st, 2) != len ||
		       (len > 0 && memcmp(rdb_col_blob(st, 2, NULL), data, len));
		bad += rdb_col_int64(st, 3) != n;
		if (bad != 0) {
			fprintf(stderr, "row %lld differs\n", (long long)want);
			break;
		}
		want++;
	}
	rdb_done(st);
	CHECK_EQ(bad, 0);
	CHECK_EQ(want, to);
}

static void test_gathered(rdb_t *db)
{
	CHECK_EQ(create_gather_tables(db), ZC_EOK);
	/* Outside a transaction: at once. */
	CHECK_EQ(insert_row(db, 0), ZC_EOK);
	CHECK_EQ(count_of(db, "rdb_gather"), 1);
	CHECK_EQ(insert_row(db, 0), ZC_EEXISTS);

	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	/* Unit 1: past one statement's rows, two statements interleaved,
	 * and a row of another form among them; a read sees them all, in
	 * order, byte for byte. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	int ok = 0;
	for (int64_t i = 1; i < 5000; i++) {
		ok += insert_row(db, i) == ZC_EOK;
		if (i % 2 == 0) {
			ok += insert_other(db, i, i % 10 == 0) == ZC_EOK;
		}
	}
	CHECK_EQ(ok, 4999 + 2499);
	CHECK_EQ(count_of(db, "rdb_other"), 2499);
	check_rows(db, 0, 5000);
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);

	/* Unit 2: a clash among gathered rows fails at the release; the
	 * unit's rollback takes its rows, not unit 1's. */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	int ret = ZC_EOK;
	for (int64_t i = 5000; i < 5010 && ret == ZC_EOK; i++) {
		ret = insert_row(db, i == 5005 ? 17 : i);
	}
	if (ret == ZC_EOK) {
		ret = rdb_release(db, RDB_SP_UNIT);
	}
	CHECK_EQ(ret, ZC_EEXISTS);
	rdb_rollback_to(db, RDB_SP_UNIT);

	/* Unit 3: rows before an inner savepoint stay, rows after it go
	 * with its rollback (held, never sent). */
	CHECK_EQ(rdb_savepoint(db, RDB_SP_UNIT), ZC_EOK);
	for (int64_t i = 5000; i < 5003; i++) {
		CHECK_EQ(insert_row(db, i), ZC_EOK);
	}
	CHECK_EQ(rdb_savepoint(db, RDB_SP_INNER), ZC_EOK);
	CHECK_EQ(insert_row(db, 9000), ZC_EOK);
	CHECK_EQ(insert_row(db, 9001), ZC_EOK);
	rdb_rollback_to(db, RDB_SP_INNER);
	CHECK_EQ(rdb_release(db, RDB_SP_UNIT), ZC_EOK);
	/* Lone rows, each sent by the read after it as the plain INSERT:
	 * a NULL name, an empty blob, NULL data, both integer extremes. */
	for (int64_t i = 5003; i < 5010; i++) {
		CHECK_EQ(insert_row(db, i), ZC_EOK);
		CHECK_EQ(count_of(db, "rdb_gather"), i + 1);
	}
	/* After the last release: held until the commit sends it. */
	CHECK_EQ(insert_row(db, 5010), ZC_EOK);
	CHECK_EQ(rdb_commit(db), ZC_EOK);
	check_rows(db, 0, 5011);

	/* A transaction rolled back: its held rows never arrive. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert_row(db, 6000), ZC_EOK);
	CHECK_EQ(insert_other(db, 6000, false), ZC_EOK);
	rdb_rollback(db);
	CHECK_EQ(count_of(db, "rdb_gather"), 5011);
	CHECK_EQ(count_of(db, "rdb_other"), 2499);

	/* A clash found only at the commit: nothing of it stays. */
	CHECK_EQ(rdb_begin_write(db), ZC_EOK);
	CHECK_EQ(insert_row(db, 7000), ZC_EOK);
	ret = insert_row(db, 3);
	CHECK_EQ(ret == ZC_EOK ? rdb_commit(db) : ret, ZC_EEXISTS);
	if (rdb_in_txn(db)) {
		rdb_rollback(db);
	}
	CHECK_EQ(count_of(db, "rdb_gather"), 5011);
}

/* Array parameters (PostgreSQL): "= ANY(?)" over int8[] and bytea[],
 * empty arrays, and odd octets in the elements. */
static void test_arrays(rdb_t *db)
{
	if (!rdb_has_arrays(db)) {
		CHECK(rdb_kind(db) == RDB_SQLITE);
		return;
	}
	CHECK_EQ(create_table(db), ZC_EOK);
	static const uint8_t odd[][4] = { { 0, 0, 0, 0 }, { '\\', '\t', '\n', 0xff },
	                                  { 0xc3, 0x28, 0, 1 } };
	for (int i = 0; i < 3; i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(insert(db, i + 1, name, odd[i], 4), ZC_EOK);
	}
	CHECK_EQ(insert(db, 4, "short", odd[0], 2), ZC_EOK);
	rdb_stmt_t *st;
	CHECK_EQ(rdb_prepare(db, RDB_SQL2(NULL, "SELECT id FROM rdb_test"
	                     " WHERE id = ANY(?1) ORDER BY id"), &st), ZC_EOK);
	const int64_t ids[] = { 3, -1, 1, INT64_MAX };
	rdb_bind_int64_array(st, 1, ids, 4);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 1);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 3);
	CHECK_EQ(rdb_step(st), RDB_DONE);
	rdb_bind_int64_array(st, 1, ids, 0);
	CHECK_EQ(rdb_step(st), RDB_DONE);
	rdb_done(st);

	CHECK_EQ(rdb_prepare(db, RDB_SQL2(NULL, "SELECT id FROM rdb_test"
	                     " WHERE data = ANY(?1) ORDER BY id"), &st), ZC_EOK);
	const void *keys[] = { odd[1], odd[0], odd[2], "" };
	const size_t lens[] = { 4, 2, 3, 0 };
	rdb_bind_blob_array(st, 1, keys, lens, 4);
	/* odd[1] whole, odd[0]'s first two octets (row 4, not row 1). */
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 2);
	CHECK_EQ(rdb_step(st), RDB_ROW);
	CHECK_EQ(rdb_col_int64(st, 0), 4);
	CHECK_EQ(rdb_step(st), RDB_DONE);
	rdb_done(st);
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
	rdb_t *db, *other;
	if (rdb_open(&db, target, &opts) != ZC_EOK ||
	    rdb_open(&other, target, &opts) != ZC_EOK) {
		fprintf(stderr, "cannot open %s\n", target);
		return 1;
	}
	CHECK(rdb_kind(db) == RDB_SQLITE || rdb_kind(db) == RDB_PG);
	if (rdb_kind(db) == RDB_PG) {
		/* The session's settings come with the connection (and so
		 * with every reconnection): acknowledged = committed. */
		rdb_stmt_t *st;
		CHECK_EQ(rdb_prepare(db, RDB_SQL2(NULL, "SELECT current_setting("
		         "'synchronous_commit'), current_setting("
		         "'application_name')"), &st), ZC_EOK);
		CHECK_EQ(rdb_step(st), RDB_ROW);
		CHECK(strcmp(rdb_col_text(st, 0), "on") == 0);
		CHECK(strcmp(rdb_col_text(st, 1), "zonecast") == 0);
		rdb_done(st);
		/* A transaction inside a transaction is refused. */
		CHECK_EQ(rdb_begin_read(db), ZC_EOK);
		CHECK(rdb_begin_read(db) != ZC_EOK);
		rdb_end_read(db);
		CHECK(!rdb_in_txn(db));
	}
	if (rdb_kind(db) == RDB_SQLITE) {
		/* A checkpoint cuts the WAL file back to 64 MiB. */
		int64_t limit = 0;
		CHECK_EQ(rdb_query_int64(db, RDB_SQLITE_ONLY("PRAGMA "
		         "journal_size_limit"), &limit), ZC_EOK);
		CHECK_EQ(limit, 67108864);
	}
	test_binds_and_columns(db);
	test_cache(db);
	test_errors(db);
	test_transactions(db, other);
	test_savepoints(db);
	test_deferred(db);
	test_commit_then(db);
	test_gathered(db);
	test_arrays(db);
	rdb_close(other);
	rdb_close(db);
	rdb_close(NULL);
	if (dir != NULL) {
		/* A read-only open does not create a missing file. */
		snprintf(path, sizeof(path), "%s/missing.db", dir);
		const rdb_options_t ro = { .label = "test", .read_only = true };
		CHECK(rdb_open(&db, path, &ro) < 0);
		test_rmdir(dir);
	}
	return test_done();
}
