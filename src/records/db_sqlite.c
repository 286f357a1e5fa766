/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The SQLite driver (db.h, db_driver.h): one connection with its pragmas,
 * the statement cache, transactions, savepoints and read snapshots, and
 * the one function that turns SQLite's result codes into zonecast's. The
 * only file of records/ that calls SQLite, besides schema.c's SQL
 * function (db_sqlite.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "records/db_driver.h"
#include "records/db_sqlite.h"

#define STMT_CACHE 48

typedef struct sqlite_db sqlite_db_t;

typedef struct {
	rdb_stmt_t base;
	sqlite_db_t *db;
	sqlite3_stmt *stmt;
	/* The cache's key (the text's address); NULL when not cached. */
	const char *sql;
	bool busy;
} sqlite_stmt_t;

struct sqlite_db {
	rdb_t base;
	sqlite3 *conn;
	const char *label;
	sqlite_stmt_t cache[STMT_CACHE];
};

static sqlite_db_t *db_of(rdb_t *db)
{
	return (sqlite_db_t *)db;
}

static sqlite3_stmt *stmt_of(rdb_stmt_t *st)
{
	return ((sqlite_stmt_t *)st)->stmt;
}

/* --- Errors --- */

/* Disk full, read-only or not permitted: what the operating system said
 * when SQLite failed (rc), as an errno code, or 0 for other failures. */
static int storage_errno(sqlite3 *conn, int rc)
{
	int primary = rc & 0xff;
	if (primary != SQLITE_FULL && primary != SQLITE_READONLY &&
	    primary != SQLITE_PERM && primary != SQLITE_IOERR &&
	    primary != SQLITE_CANTOPEN) {
		return 0; /* The OS error below may be an old one. */
	}
	int sys = conn != NULL ? sqlite3_system_errno(conn) : 0;
	if (primary == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT) {
		return -ENOSPC;
	}
	if (primary == SQLITE_READONLY || sys == EROFS) {
		return -EROFS;
	}
	if (primary == SQLITE_PERM || sys == EACCES || sys == EPERM) {
		return -EACCES;
	}
	/* SQLite's own errno is often lost (short writes, "disk I/O
	 * error"): look at the file system itself. */
	return conn != NULL ?
	       zc_fs_condition(sqlite3_db_filename(conn, "main")) : 0;
}

/* Logs a storage failure at most every 10 s (while the disk is full every
 * write fails the same way). */
static int storage_failure(sqlite_db_t *d, int code)
{
	static _Atomic int64_t last;
	if (zc_log_due(&last, 10000)) {
		zc_error("%s: %s (%s): writes fail until the data directory can"
		         " take them again", d->label, zc_strerror(code),
		         d->conn ? sqlite3_errmsg(d->conn) : "");
	}
	return code;
}

static int map_error(sqlite_db_t *d, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return ZC_EOK;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return ZC_EBUSY;
	case SQLITE_NOMEM:
		return KNOT_ENOMEM;
	case SQLITE_CONSTRAINT:
		return ZC_EEXISTS;
	default:
		break;
	}
	sqlite3 *conn = d->conn;
	int code = storage_errno(conn, rc);
	if (code != 0) {
		return storage_failure(d, code);
	}
	if ((rc & 0xff) == SQLITE_CANTOPEN) {
		zc_error("%s: %s", d->label, conn ? sqlite3_errmsg(conn) : "");
		return -EACCES;
	}
	zc_error("%s: %s (SQLite %d)", d->label,
	         conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc),
	         conn ? sqlite3_extended_errcode(conn) : rc);
	return ZC_ESQL;
}

int rdb_sqlite_error(rdb_t *db, int rc)
{
	return map_error(db_of(db), rc);
}

sqlite3 *rdb_sqlite_handle(rdb_t *db)
{
	return db != NULL && db->driver == &rdb_sqlite_driver ?
	       db_of(db)->conn : NULL;
}

/* --- Connections --- */

static int sqlite_exec(rdb_t *db, const char *sql)
{
	sqlite_db_t *d = db_of(db);
	return map_error(d, sqlite3_exec(d->conn, sql, NULL, NULL, NULL));
}

static void sqlite_close(rdb_t *db)
{
	sqlite_db_t *d = db_of(db);
	for (int i = 0; i < STMT_CACHE; i++) {
		sqlite3_finalize(d->cache[i].stmt);
	}
	sqlite3_close_v2(d->conn);
	free(d);
}

/* Tuning that must precede any SQLite use: no global allocation
 * statistics (they take a mutex on every malloc). */
static void configure_sqlite(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int sqlite_open(rdb_t **out, const char *path,
                       const rdb_options_t *opts)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, configure_sqlite);
	sqlite_db_t *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		return KNOT_ENOMEM;
	}
	d->base.driver = &rdb_sqlite_driver;
	d->label = opts->label != NULL ? opts->label : "database";
	/* Readers too open it read-write (a WAL file needs its -shm) and
	 * then refuse to write (query_only). */
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
	            (opts->read_only ? 0 : SQLITE_OPEN_CREATE);
	/* Root opens it as the directory's owner: SQLite resolves a link at
	 * the database's name (its O_NOFOLLOW then holds for the name it
	 * resolved), and a link of the owner's to a file of root's would
	 * have made root write a database there. */
	char dir[4096], files[3][300];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
	         slash ? path : ".");
	snprintf(files[0], sizeof(files[0]), "%s", base);
	snprintf(files[1], sizeof(files[1]), "%s-wal", base);
	snprintf(files[2], sizeof(files[2]), "%s-shm", base);
	const char *const names[] = { files[0], files[1], files[2], NULL };
	zc_fs_ids_t ids;
	zc_fs_as_owner(dir[0] ? dir : "/", names, &ids);
	int rc = sqlite3_open_v2(path, &d->conn, flags, NULL);
	if (rc != SQLITE_OK) {
		zc_fs_as_root(&ids);
		int ret = map_error(d, rc);
		sqlite3_close(d->conn);
		free(d);
		return ret;
	}
	sqlite3_busy_timeout(d->conn, (int)opts->busy_timeout_ms);
	/* journal_size_limit: a checkpoint that empties the WAL cuts its
	 * file back to 64 MiB (a large import or signing pass left 150 MB
	 * of records.db-wal and 414 MB of signed.db-wal on disk for good:
	 * outside tester 40). */
	const char *setup =
		opts->read_only ? "PRAGMA query_only = 1;" :
		opts->derived ? "PRAGMA journal_mode = WAL;"
		                "PRAGMA journal_size_limit = 67108864;"
		                "PRAGMA synchronous = OFF;" :
		"PRAGMA journal_mode = WAL;"
		"PRAGMA journal_size_limit = 67108864;"
		"PRAGMA synchronous = FULL;"
		"PRAGMA foreign_keys = ON;"
		"PRAGMA cache_size = -65536;";
	int ret = sqlite_exec(&d->base, setup);
	zc_fs_as_root(&ids);
	if (ret != ZC_EOK) {
		sqlite_close(&d->base);
		return ret;
	}
	*out = &d->base;
	return ZC_EOK;
}

/* --- Statements --- */

static int sqlite_prepare(rdb_t *db, const char *sql, bool cached,
                          rdb_stmt_t **out)
{
	sqlite_db_t *d = db_of(db);
	sqlite_stmt_t *free_slot = NULL;
	for (int i = 0; cached && i < STMT_CACHE; i++) {
		sqlite_stmt_t *c = &d->cache[i];
		if (c->sql == sql && !c->busy) {
			c->busy = true;
			*out = &c->base;
			return ZC_EOK;
		}
		if (c->sql == NULL && free_slot == NULL) {
			free_slot = c;
		}
	}
	sqlite_stmt_t *s = free_slot;
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL) {
			return KNOT_ENOMEM;
		}
	}
	int rc = sqlite3_prepare_v3(d->conn, sql, -1,
	                            free_slot ? SQLITE_PREPARE_PERSISTENT : 0,
	                            &s->stmt, NULL);
	if (rc != SQLITE_OK) {
		int ret = map_error(d, rc);
		if (free_slot == NULL) {
			free(s);
		}
		return ret;
	}
	s->base.driver = &rdb_sqlite_driver;
	s->db = d;
	s->sql = free_slot ? sql : NULL;
	s->busy = true;
	*out = &s->base;
	return ZC_EOK;
}

static void sqlite_bind_int64(rdb_stmt_t *st, int i, int64_t v)
{
	sqlite3_bind_int64(stmt_of(st), i, v);
}

static void sqlite_bind_blob(rdb_stmt_t *st, int i, const void *p,
                             size_t len)
{
	sqlite3_bind_blob(stmt_of(st), i, p, (int)len, SQLITE_STATIC);
}

static void sqlite_bind_text(rdb_stmt_t *st, int i, const char *s)
{
	sqlite3_bind_text(stmt_of(st), i, s, -1, SQLITE_STATIC);
}

static void sqlite_bind_null(rdb_stmt_t *st, int i)
{
	sqlite3_bind_null(stmt_of(st), i);
}

static int sqlite_step(rdb_stmt_t *st)
{
	sqlite_stmt_t *s = (sqlite_stmt_t *)st;
	int rc = sqlite3_step(s->stmt);
	if (rc == SQLITE_ROW) {
		return RDB_ROW;
	}
	if (rc == SQLITE_DONE) {
		return RDB_DONE;
	}
	return map_error(s->db, rc);
}

static int64_t sqlite_col_int64(rdb_stmt_t *st, int i)
{
	return sqlite3_column_int64(stmt_of(st), i);
}

static const void *sqlite_col_blob(rdb_stmt_t *st, int i, size_t *len)
{
	const void *p = sqlite3_column_blob(stmt_of(st), i);
	if (len != NULL) {
		*len = (size_t)sqlite3_column_bytes(stmt_of(st), i);
	}
	return p;
}

static size_t sqlite_col_bytes(rdb_stmt_t *st, int i)
{
	return (size_t)sqlite3_column_bytes(stmt_of(st), i);
}

static const char *sqlite_col_text(rdb_stmt_t *st, int i)
{
	return (const char *)sqlite3_column_text(stmt_of(st), i);
}

static bool sqlite_col_is_null(rdb_stmt_t *st, int i)
{
	return sqlite3_column_type(stmt_of(st), i) == SQLITE_NULL;
}

static void sqlite_reset(rdb_stmt_t *st)
{
	sqlite3_reset(stmt_of(st));
}

static void sqlite_done(rdb_stmt_t *st)
{
	sqlite_stmt_t *s = (sqlite_stmt_t *)st;
	if (s->sql == NULL) {
		sqlite3_finalize(s->stmt);
		free(s);
		return;
	}
	sqlite3_reset(s->stmt);
	sqlite3_clear_bindings(s->stmt);
	s->busy = false;
}

static int64_t sqlite_changes(rdb_t *db)
{
	return sqlite3_changes(db_of(db)->conn);
}

static int64_t sqlite_last_insert_id(rdb_t *db)
{
	return sqlite3_last_insert_rowid(db_of(db)->conn);
}

/* --- Transactions --- */

static bool sqlite_in_txn(rdb_t *db)
{
	return !sqlite3_get_autocommit(db_of(db)->conn);
}

static int sqlite_begin_write(rdb_t *db)
{
	return sqlite_exec(db, "BEGIN IMMEDIATE");
}

static int sqlite_commit(rdb_t *db)
{
	return sqlite_exec(db, "COMMIT");
}

static void sqlite_rollback(rdb_t *db)
{
	if (sqlite_in_txn(db)) {
		sqlite_exec(db, "ROLLBACK");
	}
}

static int sqlite_begin_read(rdb_t *db)
{
	return sqlite_exec(db, "BEGIN");
}

static void sqlite_end_read(rdb_t *db)
{
	sqlite_exec(db, "COMMIT");
}

/* Runs one statement without parameters or results from the statement
 * cache (sql a string literal): for the statements of every unit, which
 * sqlite3_exec() would parse each time. */
static int run_cached(rdb_t *db, const char *sql)
{
	rdb_stmt_t *st;
	int ret = sqlite_prepare(db, sql, true, &st);
	if (ret == ZC_EOK) {
		ret = sqlite_step(st);
		ret = ret < 0 ? ret : ZC_EOK;
		sqlite_done(st);
	}
	return ret;
}

/* The statements of each savepoint level, as literals: the statement
 * cache keys on their addresses. */
static const char *const savepoint_sql[2] = {
	"SAVEPOINT unit", "SAVEPOINT inner",
};
static const char *const release_sql[2] = {
	"RELEASE unit", "RELEASE inner",
};
static const char *const rollback_to_sql[2] = {
	"ROLLBACK TO unit", "ROLLBACK TO inner",
};

static int sqlite_savepoint(rdb_t *db, rdb_level_t level)
{
	return run_cached(db, savepoint_sql[level]);
}

static int sqlite_release(rdb_t *db, rdb_level_t level)
{
	return run_cached(db, release_sql[level]);
}

static void sqlite_rollback_to(rdb_t *db, rdb_level_t level)
{
	if (sqlite_in_txn(db)) {
		run_cached(db, rollback_to_sql[level]);
		run_cached(db, release_sql[level]);
	}
}

const rdb_driver_t rdb_sqlite_driver = {
	.kind = RDB_SQLITE,
	.open = sqlite_open,
	.close = sqlite_close,
	.exec = sqlite_exec,
	.prepare = sqlite_prepare,
	.bind_int64 = sqlite_bind_int64,
	.bind_blob = sqlite_bind_blob,
	.bind_text = sqlite_bind_text,
	.bind_null = sqlite_bind_null,
	.step = sqlite_step,
	.col_int64 = sqlite_col_int64,
	.col_blob = sqlite_col_blob,
	.col_bytes = sqlite_col_bytes,
	.col_text = sqlite_col_text,
	.col_is_null = sqlite_col_is_null,
	.reset = sqlite_reset,
	.done = sqlite_done,
	.changes = sqlite_changes,
	.last_insert_id = sqlite_last_insert_id,
	.begin_write = sqlite_begin_write,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.begin_read = sqlite_begin_read,
	.end_read = sqlite_end_read,
	.in_txn = sqlite_in_txn,
	.savepoint = sqlite_savepoint,
	.release = sqlite_release,
	.rollback_to = sqlite_rollback_to,
};
