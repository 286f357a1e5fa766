/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Read-only figures for `zonecast status`: how far the change log runs
 * ahead of a position (the builder's lag in events and in time), and a
 * zone's kept record count.
 */
#include "common/error.h"
#include "records/sqlite.h"

int records_backlog(records_store_t *store, uint64_t after,
                    records_backlog_t *out)
{
	*out = (records_backlog_t){ 0 };
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT coalesce(max(seq), 0),"
	                              " (SELECT at FROM changes WHERE seq > ?1"
	                              "  ORDER BY seq LIMIT 1) FROM changes",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, (sqlite3_int64)after);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		out->last_seq = (uint64_t)sqlite3_column_int64(stmt, 0);
		out->events = out->last_seq > after ? out->last_seq - after : 0;
		if (sqlite3_column_type(stmt, 1) != SQLITE_NULL) {
			out->oldest_ms = sqlite3_column_int64(stmt, 1);
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_zone_kept_count(records_store_t *store, int64_t zone_id,
                            int64_t *count)
{
	*count = 0;
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT record_count FROM zones"
	                              " WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*count = sqlite3_column_int64(stmt, 0);
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}
