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
#include "records/sqlite.h"

#define KEY_COLUMNS "id, name, algorithm, secret, zone_id, grants, transfer," \
	" created_on"

static void key_from_stmt(sqlite3_stmt *stmt, records_tsig_key_t *key)
{
	memset(key, 0, sizeof(*key));
	key->id = sqlite3_column_int64(stmt, 0);
	size_t len = (size_t)sqlite3_column_bytes(stmt, 1);
	if (len <= sizeof(key->name)) {
		memcpy(key->name, sqlite3_column_blob(stmt, 1), len);
	}
	const char *alg = (const char *)sqlite3_column_text(stmt, 2);
	snprintf(key->algorithm, sizeof(key->algorithm), "%s", alg ? alg : "");
	len = (size_t)sqlite3_column_bytes(stmt, 3);
	if (len <= sizeof(key->secret)) {
		memcpy(key->secret, sqlite3_column_blob(stmt, 3), len);
		key->secret_len = len;
	}
	key->zone_id = sqlite3_column_int64(stmt, 4);
	const char *grants = (const char *)sqlite3_column_text(stmt, 5);
	snprintf(key->grants, sizeof(key->grants), "%s", grants ? grants : "");
	key->transfer = sqlite3_column_int(stmt, 6) != 0;
	key->created_on = sqlite3_column_int64(stmt, 7);
}

int records_tsig_add(records_store_t *store, records_tsig_key_t *key)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, key->name);
	records_tsig_key_t old;
	if (records_tsig_find(store, lower, &old) == ZC_EOK) {
		return ZC_EEXISTS;
	}
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT INTO tsig_keys(name,"
	                              " algorithm, secret, zone_id, grants,"
	                              " transfer, created_on)"
	                              " VALUES (?, ?, ?, ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	key->created_on = records_now_ms();
	sqlite3_bind_blob(stmt, 1, lower, knot_dname_size(lower), SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, key->algorithm, -1, SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 3, key->secret, (int)key->secret_len,
	                  SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 4, key->zone_id);
	sqlite3_bind_text(stmt, 5, key->grants, -1, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 6, key->transfer ? 1 : 0);
	sqlite3_bind_int64(stmt, 7, key->created_on);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		key->id = sqlite3_last_insert_rowid(store->db);
		memcpy(key->name, lower, knot_dname_size(lower));
	}
	return ret;
}

int records_tsig_find(records_store_t *store, const knot_dname_t *name,
                      records_tsig_key_t *key)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, name);
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT " KEY_COLUMNS
	                              " FROM tsig_keys WHERE name = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_blob(stmt, 1, lower, knot_dname_size(lower), SQLITE_STATIC);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		key_from_stmt(stmt, key);
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : rc == SQLITE_DONE ? ZC_ENOKEY :
	      records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_tsig_list(records_store_t *store, int64_t zone_id,
                      int (*cb)(const records_tsig_key_t *key, void *ctx),
                      void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT " KEY_COLUMNS
	                              " FROM tsig_keys WHERE ?1 = 0 OR"
	                              " zone_id = ?1 ORDER BY name", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_tsig_key_t key;
		key_from_stmt(stmt, &key);
		if (cb(&key, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

int records_tsig_delete(records_store_t *store, int64_t zone_id, int64_t id)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "DELETE FROM tsig_keys WHERE id = ?1"
	                              " AND (?2 = 0 OR zone_id = ?2)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, zone_id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	if (ret == ZC_EOK && sqlite3_changes(store->db) == 0) {
		ret = ZC_ENOKEY;
	}
	records_sql_done(store, stmt);
	return ret;
}
