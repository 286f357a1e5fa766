/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNSSEC signing keys of signed zones: flags, algorithm, the private key
 * as PKCS#8 PEM, active (signs) or only published. Read by the zone's
 * full build, which hands them to the edge store for the answer path.
 */
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/sqlite.h"

int records_dnssec_key_add(records_store_t *store, records_dnssec_key_t *key)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT INTO dnssec_keys(zone_id,"
	                              " flags, algorithm, pem, active,"
	                              " created_on, active_on) VALUES (?, ?, ?,"
	                              " ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	key->created_on = records_now_ms();
	key->active_on = key->active ? key->created_on : 0;
	key->retired_on = 0;
	sqlite3_bind_int64(stmt, 1, key->zone_id);
	sqlite3_bind_int(stmt, 2, key->flags);
	sqlite3_bind_int(stmt, 3, key->algorithm);
	sqlite3_bind_blob(stmt, 4, key->pem, (int)key->pem_len, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 5, key->active ? 1 : 0);
	sqlite3_bind_int64(stmt, 6, key->created_on);
	if (key->active) {
		sqlite3_bind_int64(stmt, 7, key->active_on);
	} else {
		sqlite3_bind_null(stmt, 7);
	}
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		key->id = sqlite3_last_insert_rowid(store->db);
	}
	return ret;
}

int records_dnssec_keys(records_store_t *store, int64_t zone_id,
                        int (*cb)(const records_dnssec_key_t *key, void *ctx),
                        void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT id, flags, algorithm, pem,"
	                              " active, created_on, coalesce(active_on,"
	                              " 0), coalesce(retired_on, 0) FROM"
	                              " dnssec_keys WHERE zone_id = ? ORDER BY"
	                              " id", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_dnssec_key_t key = {
			.id = sqlite3_column_int64(stmt, 0),
			.zone_id = zone_id,
			.flags = (uint16_t)sqlite3_column_int(stmt, 1),
			.algorithm = (uint8_t)sqlite3_column_int(stmt, 2),
			.pem = sqlite3_column_blob(stmt, 3),
			.pem_len = (size_t)sqlite3_column_bytes(stmt, 3),
			.active = sqlite3_column_int(stmt, 4) != 0,
			.created_on = sqlite3_column_int64(stmt, 5),
			.active_on = sqlite3_column_int64(stmt, 6),
			.retired_on = sqlite3_column_int64(stmt, 7),
		};
		if (cb(&key, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_dnssec_keys_delete(records_store_t *store, int64_t zone_id)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "DELETE FROM dnssec_keys WHERE"
	                              " zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

int records_dnssec_key_set_active(records_store_t *store, int64_t id,
                                  bool active)
{
	sqlite3_stmt *stmt;
	/* The times a rollover waits from (signer/timing.c): when the key
	 * began signing, when it stopped. */
	int ret = records_sql_prepare(store, active ?
	                              "UPDATE dnssec_keys SET active = 1,"
	                              " active_on = ?, retired_on = NULL"
	                              " WHERE id = ?" :
	                              "UPDATE dnssec_keys SET active = 0,"
	                              " retired_on = ? WHERE id = ? AND"
	                              " active = 1", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, records_now_ms());
	sqlite3_bind_int64(stmt, 2, id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

int records_dnssec_key_delete(records_store_t *store, int64_t id)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "DELETE FROM dnssec_keys WHERE"
	                              " id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

int records_zone_max_ttl(records_store_t *store, int64_t zone_id,
                         uint32_t *ttl)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT coalesce(max(ttl), 0) FROM"
	                              " records WHERE zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	*ttl = rc == SQLITE_ROW ? (uint32_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}
