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
#include "records/store.h"

/* Bumps the version the notifier watches. */
static int bump_version(records_store_t *store)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO counters VALUES"
		" ('secondaries', 1) ON CONFLICT(name)"
		" DO UPDATE SET value = counters.value + 1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_secondaries_set(records_store_t *store, int64_t zone_id,
                            records_secondary_kind_t kind,
                            const char *const *specs, size_t count)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"DELETE FROM zone_secondaries"
		" WHERE zone_id = ?1 AND kind = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, (int)kind);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		ret = rdb_prepare(store->db, RDB_SQL(
			"INSERT INTO zone_secondaries"
			"(zone_id, kind, position, spec)"
			" VALUES (?1, ?2, ?3, ?4)"), &stmt);
		if (ret != ZC_EOK) {
			break;
		}
		rdb_bind_int64(stmt, 1, zone_id);
		rdb_bind_int64(stmt, 2, (int)kind);
		rdb_bind_int64(stmt, 3, (int64_t)i);
		rdb_bind_text(stmt, 4, specs[i]);
		ret = rdb_run(stmt);
		rdb_done(stmt);
	}
	return ret == ZC_EOK ? bump_version(store) : ret;
}

int records_secondaries_foreach(records_store_t *store, int64_t zone_id,
                                int (*cb)(int64_t zone_id,
                                          records_secondary_kind_t kind,
                                          const char *spec, void *ctx),
                                void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT zone_id, kind, spec FROM"
		" zone_secondaries WHERE ?1 = 0 OR"
		" zone_id = ?1 ORDER BY zone_id, kind,"
		" position"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		const char *spec = rdb_col_text(stmt, 2);
		if (cb(rdb_col_int64(stmt, 0),
		       (records_secondary_kind_t)(int)rdb_col_int64(stmt, 1),
		       spec ? spec : "", ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_secondaries_version(records_store_t *store, uint64_t *version)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT value FROM counters WHERE"
		" name = 'secondaries'"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = rdb_step(stmt);
	*version = rc == RDB_ROW ? (uint64_t)rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW || rc == RDB_DONE ? ZC_EOK :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}
