/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The SQL core of the records store (sqlite.h): the connection and its
 * pragmas, the statement cache, savepoints, read snapshots, and the one
 * function that turns SQLite's result codes into zonecast's. It calls
 * nothing else in records/.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "records/sqlite.h"

/* Disk full, read-only or not permitted: what the operating system said
 * when SQLite failed (rc), as an errno code, or 0 for other failures. */
static int storage_errno(sqlite3 *db, int rc)
{
	int primary = rc & 0xff;
	if (primary != SQLITE_FULL && primary != SQLITE_READONLY &&
	    primary != SQLITE_PERM && primary != SQLITE_IOERR &&
	    primary != SQLITE_CANTOPEN) {
		return 0; /* The OS error below may be an old one. */
	}
	int sys = db != NULL ? sqlite3_system_errno(db) : 0;
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
	return db != NULL ? zc_fs_condition(sqlite3_db_filename(db, "main")) : 0;
}

/* Logs a storage failure at most every 10 s (while the disk is full every
 * write fails the same way). */
static int storage_failure(sqlite3 *db, int code)
{
	static _Atomic int64_t last;
	if (zc_log_due(&last, 10000)) {
		zc_error("records store: %s (%s): writes fail until the data "
		         "directory can take them again", zc_strerror(code),
		         db ? sqlite3_errmsg(db) : "");
	}
	return code;
}

int records_sql_error(sqlite3 *db, int rc)
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
	int code = storage_errno(db, rc);
	if (code != 0) {
		return storage_failure(db, code);
	}
	if ((rc & 0xff) == SQLITE_CANTOPEN) {
		zc_error("records store: %s", db ? sqlite3_errmsg(db) : "");
		return -EACCES;
	}
	zc_error("records store: %s (SQLite %d)", db ? sqlite3_errmsg(db) :
	         sqlite3_errstr(rc), db ? sqlite3_extended_errcode(db) : rc);
	return ZC_ESQL;
}

int records_sql_exec(records_store_t *store, const char *sql)
{
	int rc = sqlite3_exec(store->db, sql, NULL, NULL, NULL);
	return records_sql_error(store->db, rc);
}

int records_sql_run(records_store_t *store, const char *sql)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, sql, &stmt);
	if (ret == ZC_EOK) {
		ret = records_sql_error(store->db, sqlite3_step(stmt));
		records_sql_done(store, stmt);
	}
	return ret;
}

int records_sql_prepare(records_store_t *store, const char *sql,
                        sqlite3_stmt **stmt)
{
	records_cached_stmt_t *free_slot = NULL;
	for (int i = 0; i < RECORDS_STMT_CACHE; i++) {
		records_cached_stmt_t *c = &store->cache[i];
		if (c->sql == sql && !c->busy) {
			c->busy = true;
			*stmt = c->stmt;
			return ZC_EOK;
		}
		if (c->sql == NULL && free_slot == NULL) {
			free_slot = c;
		}
	}
	int rc = sqlite3_prepare_v3(store->db, sql, -1,
	                            free_slot ? SQLITE_PREPARE_PERSISTENT : 0,
	                            stmt, NULL);
	if (rc == SQLITE_OK && free_slot != NULL) {
		free_slot->sql = sql;
		free_slot->stmt = *stmt;
		free_slot->busy = true;
	}
	return records_sql_error(store->db, rc);
}

void records_sql_done(records_store_t *store, sqlite3_stmt *stmt)
{
	if (stmt == NULL) {
		return;
	}
	for (int i = 0; i < RECORDS_STMT_CACHE; i++) {
		records_cached_stmt_t *c = &store->cache[i];
		if (c->stmt == stmt) {
			sqlite3_reset(stmt);
			sqlite3_clear_bindings(stmt);
			c->busy = false;
			return;
		}
	}
	sqlite3_finalize(stmt);
}

/* Tuning that must precede any SQLite use: no global allocation
 * statistics (they take a mutex on every malloc). */
static void configure_sqlite(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int64_t records_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int records_sql_open(records_store_t **out, const char *path)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, configure_sqlite);
	records_store_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE |
	                         SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		int ret = records_sql_error(s->db, rc);
		sqlite3_close(s->db);
		free(s);
		return ret;
	}
	sqlite3_busy_timeout(s->db, 10000);
	int ret = records_sql_exec(s, "PRAGMA journal_mode = WAL;"
	                           "PRAGMA synchronous = FULL;"
	                           "PRAGMA foreign_keys = ON;"
	                           "PRAGMA cache_size = -65536;");
	if (ret != ZC_EOK) {
		records_sql_close(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

void records_sql_close(records_store_t *store)
{
	if (store == NULL) {
		return;
	}
	for (int i = 0; i < RECORDS_STMT_CACHE; i++) {
		sqlite3_finalize(store->cache[i].stmt);
	}
	sqlite3_close_v2(store->db);
	free(store);
}

int records_read_begin(records_store_t *store)
{
	return records_sql_exec(store, "BEGIN");
}

void records_read_end(records_store_t *store)
{
	records_sql_exec(store, "COMMIT");
}

bool records_write_open(records_store_t *store)
{
	return !sqlite3_get_autocommit(store->db);
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

int records_sql_savepoint(records_store_t *store, int level)
{
	return records_sql_run(store, savepoint_sql[level]);
}

int records_sql_release(records_store_t *store, int level)
{
	return records_sql_run(store, release_sql[level]);
}

void records_sql_rollback_to(records_store_t *store, int level)
{
	if (records_write_open(store)) {
		records_sql_run(store, rollback_to_sql[level]);
		records_sql_run(store, release_sql[level]);
	}
}
