/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNSSEC signing keys of signed zones: flags, algorithm, the private key
 * as PKCS#8 PEM, active (signs) or only published. Read by the zone's
 * full build, which hands them to the edge store for the answer path.
 */
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/store.h"

int records_dnssec_key_add(records_store_t *store, records_dnssec_key_t *key)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO dnssec_keys(zone_id,"
		" flags, algorithm, pem, active,"
		" created_on, active_on) VALUES (?1, ?2, ?3,"
		" ?4, ?5, ?6, ?7)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	key->created_on = records_now_ms();
	key->active_on = key->active ? key->created_on : 0;
	key->retired_on = 0;
	rdb_bind_int64(stmt, 1, key->zone_id);
	rdb_bind_int64(stmt, 2, key->flags);
	rdb_bind_int64(stmt, 3, key->algorithm);
	rdb_bind_blob(stmt, 4, key->pem, (int)key->pem_len);
	rdb_bind_int64(stmt, 5, key->active ? 1 : 0);
	rdb_bind_int64(stmt, 6, key->created_on);
	if (key->active) {
		rdb_bind_int64(stmt, 7, key->active_on);
	} else {
		rdb_bind_null(stmt, 7);
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		key->id = rdb_last_insert_id(store->db);
	}
	return ret;
}

int records_dnssec_keys(records_store_t *store, int64_t zone_id,
                        int (*cb)(const records_dnssec_key_t *key, void *ctx),
                        void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT id, flags, algorithm, pem,"
		" active, created_on, coalesce(active_on,"
		" 0), coalesce(retired_on, 0) FROM"
		" dnssec_keys WHERE zone_id = ?1 ORDER BY"
		" id"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_dnssec_key_t key = {
			.id = rdb_col_int64(stmt, 0),
			.zone_id = zone_id,
			.flags = (uint16_t)rdb_col_int64(stmt, 1),
			.algorithm = (uint8_t)rdb_col_int64(stmt, 2),
			.pem = rdb_col_blob(stmt, 3, NULL),
			.pem_len = rdb_col_bytes(stmt, 3),
			.active = rdb_col_int64(stmt, 4) != 0,
			.created_on = rdb_col_int64(stmt, 5),
			.active_on = rdb_col_int64(stmt, 6),
			.retired_on = rdb_col_int64(stmt, 7),
		};
		if (cb(&key, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_dnssec_keys_delete(records_store_t *store, int64_t zone_id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"DELETE FROM dnssec_keys WHERE"
		" zone_id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_dnssec_key_set_active(records_store_t *store, int64_t id,
                                  bool active)
{
	rdb_stmt_t *stmt;
	/* The times a rollover waits from (signer/timing.c): when the key
	 * began signing, when it stopped. */
	int ret = rdb_prepare(store->db, active ?
	                      RDB_SQL("UPDATE dnssec_keys SET active = 1,"
	                              " active_on = ?1, retired_on = NULL"
	                              " WHERE id = ?2") :
	                      RDB_SQL("UPDATE dnssec_keys SET active = 0,"
	                              " retired_on = ?1 WHERE id = ?2 AND"
	                              " active = 1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, records_now_ms());
	rdb_bind_int64(stmt, 2, id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_dnssec_key_delete(records_store_t *store, int64_t id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"DELETE FROM dnssec_keys WHERE"
		" id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_zone_max_ttl(records_store_t *store, int64_t zone_id,
                         uint32_t *ttl)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT coalesce(max(ttl), 0) FROM"
		" records WHERE zone_id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	*ttl = rc == RDB_ROW ? (uint32_t)rdb_col_int64(stmt, 0) : 0;
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}
