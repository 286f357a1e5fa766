/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-zone secondaries in the records store: the zone's notify targets
 * and allow-transfer entries, as text (transfer/secondary.h gives their
 * syntax; the API and the CLI check it before storing). Every change bumps
 * counters.secondaries, which the notifier polls to reload them, so a
 * change takes effect without a restart.
 */
#include <string.h>

#include "common/error.h"
#include "records/sqlite.h"

/* Bumps the version the notifier watches. */
static int bump_version(records_store_t *store)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT INTO counters VALUES"
	                              " ('secondaries', 1) ON CONFLICT(name)"
	                              " DO UPDATE SET value = value + 1", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

int records_secondaries_set(records_store_t *store, int64_t zone_id,
                            records_secondary_kind_t kind,
                            const char *const *specs, size_t count)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "DELETE FROM zone_secondaries"
	                              " WHERE zone_id = ? AND kind = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int(stmt, 2, (int)kind);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		ret = records_sql_prepare(store, "INSERT INTO zone_secondaries"
		                          "(zone_id, kind, position, spec)"
		                          " VALUES (?, ?, ?, ?)", &stmt);
		if (ret != ZC_EOK) {
			break;
		}
		sqlite3_bind_int64(stmt, 1, zone_id);
		sqlite3_bind_int(stmt, 2, (int)kind);
		sqlite3_bind_int64(stmt, 3, (int64_t)i);
		sqlite3_bind_text(stmt, 4, specs[i], -1, SQLITE_STATIC);
		ret = records_sql_error(store->db, sqlite3_step(stmt));
		records_sql_done(store, stmt);
	}
	return ret == ZC_EOK ? bump_version(store) : ret;
}

int records_secondaries_foreach(records_store_t *store, int64_t zone_id,
                                int (*cb)(int64_t zone_id,
                                          records_secondary_kind_t kind,
                                          const char *spec, void *ctx),
                                void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT zone_id, kind, spec FROM"
	                              " zone_secondaries WHERE ?1 = 0 OR"
	                              " zone_id = ?1 ORDER BY zone_id, kind,"
	                              " position", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *spec = (const char *)sqlite3_column_text(stmt, 2);
		if (cb(sqlite3_column_int64(stmt, 0),
		       (records_secondary_kind_t)sqlite3_column_int(stmt, 1),
		       spec ? spec : "", ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_secondaries_version(records_store_t *store, uint64_t *version)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT value FROM counters WHERE"
	                              " name = 'secondaries'", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = sqlite3_step(stmt);
	*version = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = rc == SQLITE_ROW || rc == SQLITE_DONE ? ZC_EOK :
	      records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}
