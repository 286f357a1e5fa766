/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Records store on SQLite: connection, zones and the change log
 * (see records.h for the design).
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
#include "dns/name.h"
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

int records_open(records_store_t **out, const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/records.db", dir) >= (int)sizeof(path)) {
		return -36; /* -ENAMETOOLONG */
	}
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
	if (ret == ZC_EOK) {
		ret = records_schema_migrate(s);
	}
	if (ret != ZC_EOK) {
		records_close(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

void records_close(records_store_t *store)
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

void records_zone_from_stmt(sqlite3_stmt *stmt, records_zone_t *zone)
{
	memset(zone, 0, sizeof(*zone));
	zone->id = sqlite3_column_int64(stmt, 0);
	snprintf(zone->name, sizeof(zone->name), "%s",
	         (const char *)sqlite3_column_text(stmt, 1));
	int len = sqlite3_column_bytes(stmt, 2);
	if (len > 0 && len <= KNOT_DNAME_MAXLEN) {
		memcpy(zone->apex, sqlite3_column_blob(stmt, 2), len);
	}
	zone->serial = (uint32_t)sqlite3_column_int64(stmt, 3);
	zone->default_ttl = (uint32_t)sqlite3_column_int64(stmt, 4);
	zone->created_on = sqlite3_column_int64(stmt, 5);
	zone->modified_on = sqlite3_column_int64(stmt, 6);
	zone->serial_policy = (records_serial_policy_t)sqlite3_column_int(stmt, 7);
}

int records_zone_find(records_store_t *store, const knot_dname_t *apex,
                      records_zone_t *zone)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT " RECORDS_ZONE_COLUMNS
	                              " FROM zones WHERE apex = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_blob(stmt, 1, apex, knot_dname_size(apex), SQLITE_STATIC);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		records_zone_from_stmt(stmt, zone);
		ret = ZC_EOK;
	} else {
		ret = (rc == SQLITE_DONE) ? ZC_ENOZONE :
		      records_sql_error(store->db, rc);
	}
	records_sql_done(store, stmt);
	return ret;
}

int records_zone_list(records_store_t *store, bool with_counts,
                      int (*cb)(const records_zone_t *zone, void *ctx),
                      void *ctx)
{
	/* Counting walks every record: only when asked (zone list CLI). */
	static const char *const sql[2] = {
		"SELECT " RECORDS_ZONE_COLUMNS ", 0 FROM zones ORDER BY name",
		"SELECT " RECORDS_ZONE_COLUMNS ", (SELECT count(*) FROM records r"
		" WHERE r.zone_id = zones.id) FROM zones ORDER BY name",
	};
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, sql[with_counts ? 1 : 0], &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_zone_t zone;
		records_zone_from_stmt(stmt, &zone);
		zone.record_count = sqlite3_column_int64(stmt, 8);
		if (cb(&zone, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_log_append(records_store_t *store, int64_t zone_id,
                       const uint8_t *apex, size_t apex_len, uint32_t version,
                       records_change_kind_t kind, uint64_t *seq)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT INTO changes"
	                              "(zone_id, apex, version, kind, at)"
	                              " VALUES (?, ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, apex, (int)apex_len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, version);
	sqlite3_bind_int(stmt, 4, kind);
	sqlite3_bind_int64(stmt, 5, records_now_ms());
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK && seq != NULL) {
		*seq = (uint64_t)sqlite3_last_insert_rowid(store->db);
	}
	if (ret == ZC_EOK && kind == RECORDS_CHANGE_ZONE_IMPORTED) {
		/* IXFR cannot span a whole-zone replacement. */
		ret = records_journal_restart(store, zone_id, version);
	}
	return ret;
}

int records_zone_remove(records_store_t *store, records_zone_t *zone,
                        uint64_t *seq)
{
	sqlite3_stmt *stmt;
	records_zrow_forget(store);
	int ret = records_sql_prepare(store, "DELETE FROM zones WHERE id = ?",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* Records and tokens go by ON DELETE CASCADE. */
	sqlite3_bind_int64(stmt, 1, zone->id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		ret = records_log_append(store, zone->id, zone->apex,
		                         knot_dname_size(zone->apex), zone->serial,
		                         RECORDS_CHANGE_ZONE_DELETED, seq);
	}
	return ret;
}

int records_zone_delete(records_store_t *store, const knot_dname_t *apex,
                        uint64_t *seq)
{
	int ret = records_sql_exec(store, "BEGIN IMMEDIATE");
	if (ret != ZC_EOK) {
		return ret;
	}
	records_zone_t zone;
	ret = records_zone_find(store, apex, &zone);
	if (ret == ZC_EOK) {
		ret = records_zone_remove(store, &zone, seq);
	}
	if (ret == ZC_EOK) {
		ret = records_sql_exec(store, "COMMIT");
	}
	if (ret != ZC_EOK) {
		records_sql_exec(store, "ROLLBACK");
	}
	return ret;
}

int records_zone_set_default_ttl(records_store_t *store,
                                 records_zone_t *zone, uint32_t ttl)
{
	sqlite3_stmt *stmt;
	records_zrow_forget(store);
	int ret = records_sql_prepare(store, "UPDATE zones SET default_ttl = ?"
	                              " WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, ttl);
	sqlite3_bind_int64(stmt, 2, zone->id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		zone->default_ttl = ttl;
	}
	return ret;
}

int records_last_seq(records_store_t *store, uint64_t *seq)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT coalesce(max(seq), 0)"
	                              " FROM changes", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = sqlite3_step(stmt);
	*seq = (rc == SQLITE_ROW) ? (uint64_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_changes_since(records_store_t *store, uint64_t after,
                          unsigned limit,
                          int (*cb)(const records_change_t *chg, void *ctx),
                          void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT seq, zone_id, apex,"
	                              " version, kind, okey, type FROM changes"
	                              " WHERE seq > ? ORDER BY seq LIMIT ?",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, (int64_t)after);
	sqlite3_bind_int64(stmt, 2, limit == 0 ? -1 : (int64_t)limit);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_change_t chg = {
			.seq = (uint64_t)sqlite3_column_int64(stmt, 0),
			.zone_id = sqlite3_column_int64(stmt, 1),
			.version = (uint32_t)sqlite3_column_int64(stmt, 3),
			.kind = sqlite3_column_int(stmt, 4),
		};
		int len = sqlite3_column_bytes(stmt, 2);
		if (len <= 0 || len > KNOT_DNAME_MAXLEN) {
			continue;
		}
		memcpy(chg.apex, sqlite3_column_blob(stmt, 2), len);
		int klen = sqlite3_column_bytes(stmt, 5);
		if (klen > 0 && klen <= (int)sizeof(chg.okey)) {
			memcpy(chg.okey, sqlite3_column_blob(stmt, 5), klen);
			chg.okey_len = (size_t)klen;
		}
		chg.type = (uint16_t)sqlite3_column_int(stmt, 6);
		if (cb(&chg, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}
