/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to the database driver (db.c and db_<engine>.c): what a driver
 * provides. Each driver's connection starts with a struct rdb and each of
 * its statements with a struct rdb_stmt, so that db.c finds the driver of
 * any handle; the rest of both is the driver's own. db.c does what every
 * engine shares (picking the dialect's text, rdb_run()); a driver does the
 * rest, and maps its engine's errors in one function of its own.
 *
 * What db.h promises, each driver keeps: a NULL column reads as 0, NULL
 * text and a NULL pointer of length 0; a NULL pointer bound binds NULL;
 * prepare(cached) keys on the text's address and gives a busy cached
 * statement's text a second statement; done() on an uncached statement
 * finalizes it; rollback() and rollback_to() do nothing outside a
 * transaction. tests/unit/records/test_db.c checks all of it.
 */
#pragma once

#include "records/db.h"

typedef struct rdb_driver rdb_driver_t;
typedef struct rdb_copy_ops rdb_copy_ops_t;

struct rdb {
	const rdb_driver_t *driver;
};

struct rdb_stmt {
	const rdb_driver_t *driver;
};

/* A bulk load (db.h, rdb_copy_*()). db_copy.c keeps what every engine
 * shares (the sticky error, counting a row's values) in this head; the
 * rest of a load is its driver's. */
struct rdb_copy {
	const rdb_copy_ops_t *ops;
	int error;
	/* Values per row, and the current row's so far. */
	int columns;
	int given;
};

/* A driver's bulk load. begin() gets the number of columns counted in
 * the list. A value's or a row's failure sets the load's sticky error
 * (db_copy.c); end() and abort() free the load. */
struct rdb_copy_ops {
	int (*begin)(rdb_t *db, const char *table, const char *columns,
	             int ncolumns, rdb_copy_t **out);
	int (*put_int64)(rdb_copy_t *c, int64_t v);
	int (*put_blob)(rdb_copy_t *c, const void *p, size_t len);
	int (*put_text)(rdb_copy_t *c, const char *s);
	int (*put_null)(rdb_copy_t *c);
	int (*row)(rdb_copy_t *c);
	int (*end)(rdb_copy_t *c);
	void (*abort)(rdb_copy_t *c);
};

struct rdb_driver {
	rdb_kind_t kind;
	int (*open)(rdb_t **out, const char *target, const rdb_options_t *opts);
	void (*close)(rdb_t *db);
	int (*exec)(rdb_t *db, const char *sql);
	/* cached: keep it in the statement cache, keyed by sql's address. */
	int (*prepare)(rdb_t *db, const char *sql, bool cached,
	               rdb_stmt_t **st);

	void (*bind_int64)(rdb_stmt_t *st, int i, int64_t v);
	void (*bind_blob)(rdb_stmt_t *st, int i, const void *p, size_t len);
	void (*bind_text)(rdb_stmt_t *st, int i, const char *s);
	void (*bind_null)(rdb_stmt_t *st, int i);
	int (*step)(rdb_stmt_t *st);
	int64_t (*col_int64)(rdb_stmt_t *st, int i);
	const void *(*col_blob)(rdb_stmt_t *st, int i, size_t *len);
	size_t (*col_bytes)(rdb_stmt_t *st, int i);
	const char *(*col_text)(rdb_stmt_t *st, int i);
	bool (*col_is_null)(rdb_stmt_t *st, int i);
	void (*reset)(rdb_stmt_t *st);
	void (*done)(rdb_stmt_t *st);
	int64_t (*changes)(rdb_t *db);
	int64_t (*last_insert_id)(rdb_t *db);

	int (*begin_write)(rdb_t *db);
	int (*commit)(rdb_t *db);
	/* Commits and runs `after` in the same round trip (NULL: commit,
	 * and the caller runs `after` when it steps it). */
	int (*commit_then)(rdb_t *db, rdb_stmt_t *after);
	void (*rollback)(rdb_t *db);
	int (*begin_read)(rdb_t *db);
	void (*end_read)(rdb_t *db);
	bool (*in_txn)(rdb_t *db);
	int (*savepoint)(rdb_t *db, rdb_level_t level);
	int (*release)(rdb_t *db, rdb_level_t level);
	/* Releases without waiting (NULL: release), and whether a statement
	 * released so failed since (db.h, rdb_release_later()). */
	int (*release_later)(rdb_t *db, rdb_level_t level);
	/* A savepoint sent with its unit's first statement that is not a
	 * gathered row (NULL: savepoint; db.h, rdb_savepoint_later()). */
	int (*savepoint_later)(rdb_t *db, rdb_level_t level);
	bool (*txn_replay)(rdb_t *db);
	void (*rollback_to)(rdb_t *db, rdb_level_t level);
	/* Queues a statement (NULL: the driver runs it at once). */
	int (*defer)(rdb_stmt_t *st);
	/* Queues a single-row INSERT, maybe with others (NULL: defer). */
	int (*defer_row)(rdb_stmt_t *st, const char *types);
	/* Queues a statement of units released already (NULL: defer). */
	int (*defer_released)(rdb_stmt_t *st);
	/* Array parameters (NULL: the engine has none; db.h). */
	void (*bind_int64_array)(rdb_stmt_t *st, int i, const int64_t *v,
	                         size_t n);
	void (*bind_blob_array)(rdb_stmt_t *st, int i, const void *const *v,
	                        const size_t *lens, size_t n);
	/* Bulk loads of the engine's own; NULL: a prepared INSERT per row
	 * (db_copy.c). */
	const rdb_copy_ops_t *copy;
};

/* The drivers (db.c picks one by target). db_pg.c, the libpq driver,
 * defines rdb_pg_driver; records/meson.build compiles it, when libpq is found
 * (meson defines ZC_HAVE_LIBPQ). */
extern const rdb_driver_t rdb_sqlite_driver;
#ifdef ZC_HAVE_LIBPQ
extern const rdb_driver_t rdb_pg_driver;
#endif
