/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG keys (RFC 8945) in the records store: name (wire, lowercase, unique
 * across zones: a TSIG RR names its key), algorithm, secret, the zone the
 * key belongs to, its update grants and whether it may transfer the zone.
 * The secret never leaves through the API after creation.
 */
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"
#include "records/store.h"

#define KEY_COLUMNS "id, name, algorithm, secret, zone_id, grants, transfer," \
	" created_on"

static void key_from_stmt(rdb_stmt_t *stmt, records_tsig_key_t *key)
{
	memset(key, 0, sizeof(*key));
	key->id = rdb_col_int64(stmt, 0);
	size_t len = rdb_col_bytes(stmt, 1);
	if (len <= sizeof(key->name)) {
		memcpy(key->name, rdb_col_blob(stmt, 1, NULL), len);
	}
	const char *alg = rdb_col_text(stmt, 2);
	snprintf(key->algorithm, sizeof(key->algorithm), "%s", alg ? alg : "");
	len = rdb_col_bytes(stmt, 3);
	if (len <= sizeof(key->secret)) {
		memcpy(key->secret, rdb_col_blob(stmt, 3, NULL), len);
		key->secret_len = len;
	}
	key->zone_id = rdb_col_int64(stmt, 4);
	const char *grants = rdb_col_text(stmt, 5);
	snprintf(key->grants, sizeof(key->grants), "%s", grants ? grants : "");
	key->transfer = rdb_col_int64(stmt, 6) != 0;
	key->created_on = rdb_col_int64(stmt, 7);
}

int records_tsig_add(records_store_t *store, records_tsig_key_t *key)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, key->name);
	records_tsig_key_t old;
	if (records_tsig_find(store, lower, &old) == ZC_EOK) {
		return ZC_EEXISTS;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO tsig_keys(name,"
		" algorithm, secret, zone_id, grants,"
		" transfer, created_on)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	key->created_on = records_now_ms();
	rdb_bind_blob(stmt, 1, lower, knot_dname_size(lower));
	rdb_bind_text(stmt, 2, key->algorithm);
	rdb_bind_blob(stmt, 3, key->secret, (int)key->secret_len);
	rdb_bind_int64(stmt, 4, key->zone_id);
	rdb_bind_text(stmt, 5, key->grants);
	rdb_bind_int64(stmt, 6, key->transfer ? 1 : 0);
	rdb_bind_int64(stmt, 7, key->created_on);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		key->id = rdb_last_insert_id(store->db);
		memcpy(key->name, lower, knot_dname_size(lower));
	}
	return ret;
}

int records_tsig_find(records_store_t *store, const knot_dname_t *name,
                      records_tsig_key_t *key)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, name);
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT " KEY_COLUMNS
		" FROM tsig_keys WHERE name = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_blob(stmt, 1, lower, knot_dname_size(lower));
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		key_from_stmt(stmt, key);
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? ZC_ENOKEY :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_tsig_alive(records_store_t *store, int64_t id, bool *alive)
{
	for (size_t i = 0; store->in_write && i < store->tsig_alive_n; i++) {
		if (store->tsig_alive[i] == id) {
			*alive = true;
			return ZC_EOK;
		}
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT 1 FROM tsig_keys WHERE id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	int rc = rdb_step(stmt);
	*alive = rc == RDB_ROW;
	ret = rc == RDB_ROW || rc == RDB_DONE ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	if (*alive) {
		records_tsig_alive_seen(store, id);
	}
	return ret;
}

void records_tsig_alive_seen(records_store_t *store, int64_t id)
{
	if (store->in_write && store->tsig_alive_n < RECORDS_TSIG_ALIVE_MAX) {
		store->tsig_alive[store->tsig_alive_n++] = id;
	}
}

int records_tsig_list(records_store_t *store, int64_t zone_id,
                      int (*cb)(const records_tsig_key_t *key, void *ctx),
                      void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT " KEY_COLUMNS
		" FROM tsig_keys WHERE ?1 = 0 OR"
		" zone_id = ?1 ORDER BY name"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_tsig_key_t key;
		key_from_stmt(stmt, &key);
		if (cb(&key, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_tsig_delete(records_store_t *store, int64_t zone_id, int64_t id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"DELETE FROM tsig_keys WHERE id = ?1"
		" AND (?2 = 0 OR zone_id = ?2)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	rdb_bind_int64(stmt, 2, zone_id);
	ret = rdb_run(stmt);
	if (ret == ZC_EOK && rdb_changes(store->db) == 0) {
		ret = ZC_ENOKEY;
	}
	rdb_done(stmt);
	return ret;
}
