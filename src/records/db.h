/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to records/ (and sigview/, whose signed.db it also opens): the
 * database driver. One connection to one engine behind one small
 * interface, so that the store's files hold SQL and logic and no engine
 * calls. db.c dispatches each call to the connection's driver:
 * db_sqlite.c today, db_pg.c (libpq) next (docs/design-postgresql.md
 * §5.1). A driver is a table of functions (db_driver.h); adding one adds
 * its file (and its line in meson.build).
 *
 * SQL text. Shared statements use numbered placeholders ?1, ?2, ...
 * (SQLite takes them as they are; the PostgreSQL driver rewrites them to
 * $1, $2, ... once, when it prepares). Where the dialects differ, one call
 * site gives both texts: RDB_SQL2(sqlite_text, pg_text); a NULL text
 * (RDB_SQLITE_ONLY) makes the statement fail with KNOT_ENOTSUP on that
 * engine. Texts must be string literals or otherwise live as long as the
 * connection: the statement cache keys on the address of the text the
 * driver uses.
 *
 * Results. rdb_step() returns RDB_ROW (1), RDB_DONE (0) or a negative
 * zonecast code. Every engine error becomes a zonecast code in exactly
 * one function per driver (unique or foreign-key violation: ZC_EEXISTS;
 * busy or locked: ZC_EBUSY; out of memory: KNOT_ENOMEM; disk full:
 * -ENOSPC; read-only: -EROFS; not permitted: -EACCES; anything else:
 * ZC_ESQL, logged with the engine's message).
 *
 * Threads: a connection and its statements belong to one thread at a time.
 *
 * Pipelined writes (rdb_defer()) and array parameters on PostgreSQL.
 *
 * Bulk loads. rdb_copy_begin() ... rdb_copy_end() stream rows into one
 * table: PostgreSQL's COPY FROM STDIN in binary (db_pg_copy.c), or, on an
 * engine without one (SQLite), the prepared INSERT of the same columns run
 * per row (db_copy.c), so that callers have one code path.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rdb rdb_t;
typedef struct rdb_stmt rdb_stmt_t;

typedef enum {
	RDB_SQLITE = 1,
	RDB_PG = 2,
} rdb_kind_t;

/* One statement's text in each dialect (NULL: not on that engine). */
typedef struct {
	const char *sqlite;
	const char *pg;
} rdb_sql_t;

#define RDB_SQL2(sqlite_text, pg_text) \
	(&(const rdb_sql_t){ (sqlite_text), (pg_text) })
/* The same text for both engines. */
#define RDB_SQL(text) RDB_SQL2(text, text)
/* Inherently SQLite (PRAGMA, EXPLAIN QUERY PLAN): none on PostgreSQL. */
#define RDB_SQLITE_ONLY(text) RDB_SQL2(text, NULL)

/* rdb_step()'s results besides errors. */
enum {
	RDB_DONE = 0,
	RDB_ROW = 1,
};

/* The savepoint levels of units: a unit's own ("unit") and the one inside
 * it ("inner"). */
typedef enum {
	RDB_SP_UNIT = 0,
	RDB_SP_INNER = 1,
} rdb_level_t;

/* How to open a connection (NULL: the records store's defaults). */
typedef struct {
	/* Names the store in log messages ("records store"). */
	const char *label;
	/* Derived data that a crash may lose (the signed view): SQLite
	 * without fsync at commit. */
	bool derived;
	/* Refuses writes (readers of a file another connection writes). */
	bool read_only;
	/* Waits this long for another writer's lock before ZC_EBUSY. */
	unsigned busy_timeout_ms;
} rdb_options_t;

/* --- Connections --- */

/*
 * Opens a connection. target: "postgresql://..." or "postgres://..." for
 * the libpq driver; otherwise the path of an SQLite database file,
 * created if missing (unless read_only). SQLite runs in WAL mode with
 * foreign keys on; the records store's defaults add synchronous=FULL and
 * a 64 MiB page cache. The schema is the caller's.
 */
int rdb_open(rdb_t **out, const char *target, const rdb_options_t *opts);

/* Finalizes every statement and closes; NULL is a no-op. */
void rdb_close(rdb_t *db);

rdb_kind_t rdb_kind(const rdb_t *db);

/* Runs SQL text without parameters or results (any number of
 * statements; parsed at each call: not for statements of every unit). */
int rdb_exec(rdb_t *db, const char *sql);

/* --- Statements --- */

/*
 * Takes the cached statement for this text, or prepares one (kept in the
 * cache while it has room). Release it with rdb_done(). Parsing SQL per
 * call cost more than the writes themselves.
 */
int rdb_prepare(rdb_t *db, const rdb_sql_t *sql, rdb_stmt_t **st);

/* Prepares a statement kept out of the cache (one-off text, such as a
 * query plan), finalized by rdb_done(). */
int rdb_prepare_once(rdb_t *db, const rdb_sql_t *sql, rdb_stmt_t **st);

/* Binds parameter i (from 1). Borrowed pointers must stay valid until the
 * statement's last rdb_step() before rdb_reset() or rdb_done(). A NULL
 * blob or text binds NULL; an unbound parameter is NULL; binding a number
 * past the statement's last parameter does nothing. */
void rdb_bind_int64(rdb_stmt_t *st, int i, int64_t v);
void rdb_bind_blob(rdb_stmt_t *st, int i, const void *p, size_t len);
void rdb_bind_text(rdb_stmt_t *st, int i, const char *s);
void rdb_bind_null(rdb_stmt_t *st, int i);

/*
 * Array parameters, where the engine has them (rdb_has_arrays():
 * PostgreSQL, as int8[] and bytea[], e.g. "id = ANY(?2)"): one statement
 * for many keys instead of one round trip each. The values are copied.
 * SQLite has none: callers loop over a one-key statement there, which
 * costs nothing in-process.
 */
bool rdb_has_arrays(const rdb_t *db);
void rdb_bind_int64_array(rdb_stmt_t *st, int i, const int64_t *v, size_t n);
void rdb_bind_blob_array(rdb_stmt_t *st, int i, const void *const *v,
                         const size_t *lens, size_t n);

/* Steps: RDB_ROW with a row to read, RDB_DONE at the end, or a negative
 * code (the statement is then only good for rdb_reset() or rdb_done()). */
int rdb_step(rdb_stmt_t *st);

/* A step's result as a code: ZC_EOK (0) for a row or the end. */
static inline int rdb_status(int step_result)
{
	return step_result < 0 ? step_result : 0;
}

/* Steps a statement once for its effect: ZC_EOK (a row, if any, is not
 * read) or a negative code. */
int rdb_run(rdb_stmt_t *st);

/*
 * Runs a statement for its effect, perhaps later. On PostgreSQL inside a
 * write transaction the statement is queued (libpq's pipeline mode) and
 * sent with the next one that waits for an answer; its outcome surfaces
 * at the connection's next synchronous call (a step, a release, the
 * commit), which then fails with its code. Elsewhere it runs at once, as
 * rdb_run(). Only for statements whose rows and row count nobody reads;
 * its bindings are copied when it is queued (rdb_done() may follow at
 * once). Returns ZC_EOK or an error known already.
 */
int rdb_defer(rdb_stmt_t *st);

/*
 * rdb_defer() of a single-row INSERT ("INSERT INTO t(c1, ..., cn) VALUES
 * (?1, ..., ?n)", every parameter once, in order). On PostgreSQL inside a
 * write transaction, rows of one such statement deferred one after
 * another are sent as one statement inserting them all from arrays,
 * before any other statement (db_pg_gather.c). types gives each column's
 * element type, one letter per parameter: 'i' int8 (bound with
 * rdb_bind_int64()), 'b' bytea (rdb_bind_blob()), 't' text
 * (rdb_bind_text()); NULLs anywhere. A row of another form, or a value
 * of another type, is deferred as rdb_defer() does.
 */
int rdb_defer_row(rdb_stmt_t *st, const char *types);

/*
 * rdb_defer() of a statement that finishes the work of units released
 * already (the zone row their versions moved, written when a later unit
 * reads another zone's). On PostgreSQL, while the current unit's
 * SAVEPOINT is pending (rdb_savepoint_later()), it goes ahead of that
 * SAVEPOINT with the released units' rows, and its failure is theirs
 * (ZC_EREPLAY, as for rdb_release_later()), not the current unit's: a
 * unit of another zone is not failed by them. Otherwise as rdb_defer().
 */
int rdb_defer_released(rdb_stmt_t *st);

/* Runs a query without parameters for one integer (its first row's first
 * column; 0 when it gives no row). */
int rdb_query_int64(rdb_t *db, const rdb_sql_t *sql, int64_t *value);

/* Is target a PostgreSQL connection URI ("postgresql://", "postgres://")? */
bool rdb_target_is_pg(const char *target);

/* Reads column i (from 0) of the current row. Pointers are borrowed until
 * the next step, reset or done. NULL reads as 0 (int64), a NULL pointer
 * of length 0 (blob) and NULL (text); an empty blob's pointer may be NULL
 * too (rdb_col_is_null() tells them apart). */
int64_t rdb_col_int64(rdb_stmt_t *st, int i);
const void *rdb_col_blob(rdb_stmt_t *st, int i, size_t *len);
size_t rdb_col_bytes(rdb_stmt_t *st, int i);
const char *rdb_col_text(rdb_stmt_t *st, int i);
bool rdb_col_is_null(rdb_stmt_t *st, int i);

/* Rewinds a statement to run it again, keeping its bindings. */
void rdb_reset(rdb_stmt_t *st);

/* Clears the statement and gives it back to the cache (a statement from
 * rdb_prepare_once() is finalized); NULL is a no-op. */
void rdb_done(rdb_stmt_t *st);

/* Rows changed by the last INSERT, UPDATE or DELETE. */
int64_t rdb_changes(rdb_t *db);

/* The id the last INSERT gave its row: SQLite's rowid; on PostgreSQL the
 * value its identity column drew (lastval(): only after an INSERT into a
 * table with one, or the transaction fails). */
int64_t rdb_last_insert_id(rdb_t *db);

/* --- Transactions --- */

/* A write transaction (SQLite: BEGIN IMMEDIATE, the write lock at once). */
int rdb_begin_write(rdb_t *db);
int rdb_commit(rdb_t *db);
/* Commits, and runs the read `after` (prepared and bound) right behind
 * the COMMIT where the engine can, in the same round trip (PostgreSQL's
 * pipeline); its rows are then stepped as usual (where it did not run,
 * or its answer was lost, stepping runs it). The outcome is the
 * commit's: `after` failing does not undo it. */
int rdb_commit_then(rdb_t *db, rdb_stmt_t *after);
/* Rolls back the open transaction; nothing when none is open (SQLite
 * rolls a transaction back itself after a disk-full or I/O error). */
void rdb_rollback(rdb_t *db);

/* A read snapshot: every read until rdb_end_read() sees one state. */
int rdb_begin_read(rdb_t *db);
void rdb_end_read(rdb_t *db);

/* Is a transaction open on this connection? */
bool rdb_in_txn(rdb_t *db);

/* Savepoints of units, at a level. rdb_rollback_to() rolls back to the
 * savepoint and releases it; nothing when the transaction is gone. */
int rdb_savepoint(rdb_t *db, rdb_level_t level);
int rdb_release(rdb_t *db, rdb_level_t level);
void rdb_rollback_to(rdb_t *db, rdb_level_t level);

/*
 * rdb_release() without waiting for the answers to the statements the
 * savepoint queued (rdb_defer()): on PostgreSQL inside a write
 * transaction the RELEASE is queued with them and answered with the
 * connection's next synchronous call, so a unit of writes costs no round
 * trip of its own. Should one of them fail then, that call returns
 * ZC_EREPLAY, whatever it was, and rdb_txn_replay() says so until the
 * transaction ends: it can only be rolled back, and the caller runs its
 * units again, each released with rdb_release() (the failure then
 * belongs to its own unit). Elsewhere the same as rdb_release().
 */
int rdb_release_later(rdb_t *db, rdb_level_t level);
bool rdb_txn_replay(rdb_t *db);

/*
 * rdb_savepoint() of a unit that rdb_release_later() will release: on
 * PostgreSQL inside a write transaction its SAVEPOINT is sent only with
 * the unit's first statement that is not a gathered row (rdb_defer_row()),
 * and the rows of the units released before it go ahead of it. A unit
 * whose statements are all gathered rows sends nothing of its own: its
 * release sends nothing, its rollback drops its rows unsent, and its rows
 * go with the other units' as one statement (db_pg_gather.c). A failure
 * of such rows is a released unit's: ZC_EREPLAY, as for
 * rdb_release_later(). Elsewhere the same as rdb_savepoint().
 */
int rdb_savepoint_later(rdb_t *db, rdb_level_t level);

/* --- Bulk loads --- */

typedef struct rdb_copy rdb_copy_t;

/*
 * Starts loading rows into `columns` of `table` (a list of plain column
 * names, "id, zone_id, okey"; both texts must stay valid until
 * rdb_copy_end() or rdb_copy_abort()), inside the open write transaction.
 * PostgreSQL: COPY table (columns) FROM STDIN (FORMAT binary), streamed;
 * each value is sent in its column's binary form (int8, int4, int2, bool,
 * bytea, text), looked up at the start. SQLite: INSERT INTO table
 * (columns) VALUES (...), prepared once and run per row.
 *
 * Until the load ends the connection does nothing else: no statement may
 * run on it (PostgreSQL's COPY holds the connection).
 *
 * Errors: ZC_EOK, or the driver's codes (ZC_EUNAVAILABLE, ZC_ESQL, ...).
 */
int rdb_copy_begin(rdb_t *db, const char *table, const char *columns,
                   rdb_copy_t **out);

/* The next value of the current row, in the columns' order. A NULL blob
 * or text is NULL; an empty blob is an empty value, not NULL. Values are
 * copied (or used) before the call returns. The load carries a sticky
 * error: after a failure these do nothing, and rdb_copy_row() and
 * rdb_copy_end() return the first failure. */
void rdb_copy_int64(rdb_copy_t *c, int64_t v);
void rdb_copy_blob(rdb_copy_t *c, const void *p, size_t len);
void rdb_copy_text(rdb_copy_t *c, const char *s);
void rdb_copy_null(rdb_copy_t *c);

/* Ends the current row: KNOT_EINVAL when it has not one value per
 * column. A failure of the row itself (a duplicate key, a value the
 * column refuses) may surface here (SQLite) or only at rdb_copy_end()
 * (PostgreSQL checks rows as they arrive, and reports at the end). */
int rdb_copy_row(rdb_copy_t *c);

/*
 * Ends the load and frees it: ZC_EOK when every row was stored, else the
 * first failure (a duplicate key: ZC_EEXISTS). After a failure the
 * caller rolls the transaction back, which takes every row of the load
 * with it (on PostgreSQL nothing else would run in it any more).
 */
int rdb_copy_end(rdb_copy_t *c);

/* Cancels the load (a failure of the caller's own) and frees it; the
 * caller rolls the transaction back. NULL is a no-op. */
void rdb_copy_abort(rdb_copy_t *c);
