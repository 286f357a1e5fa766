/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * API bearer tokens in the records store: the SHA-256 hash of the secret
 * (never the secret), read-only or not, the zone it is limited to (or
 * every zone), a name, an expiry and a revocation time. A request looks
 * its token up by hash on every call, so a revocation or an expiry takes
 * effect with the next request, and a token of a deleted zone goes with
 * it (ON DELETE CASCADE).
 */
#include <stdio.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/id_text.h"
#include "records/store.h"

#define TOKEN_COLUMNS "id, name, read_only, coalesce(zone_id, 0), created_on," \
	" coalesce(modified_on, created_on), coalesce(expires_on, 0)," \
	" coalesce(revoked_on, 0)"

static void token_from_stmt(rdb_stmt_t *stmt, records_token_t *tok)
{
	memset(tok, 0, sizeof(*tok));
	tok->id = rdb_col_int64(stmt, 0);
	const char *name = rdb_col_text(stmt, 1);
	snprintf(tok->name, sizeof(tok->name), "%s", name ? name : "");
	tok->read_only = rdb_col_int64(stmt, 2) != 0;
	tok->zone_id = rdb_col_int64(stmt, 3);
	tok->created_on = rdb_col_int64(stmt, 4);
	tok->modified_on = rdb_col_int64(stmt, 5);
	tok->expires_on = rdb_col_int64(stmt, 6);
	tok->revoked_on = rdb_col_int64(stmt, 7);
}

bool records_token_name_valid(const char *text)
{
	size_t len = strlen(text);
	if (len == 0 || len > RECORDS_TOKEN_NAME_MAX || strcmp(text, "-") == 0) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c < 0x20 || c == 0x7f) {
			return false;
		}
	}
	return !zc_id_text_form(text);
}

int records_token_add(records_store_t *store, const uint8_t hash[32],
                      records_token_t *tok)
{
	if (store == NULL || hash == NULL || tok == NULL) {
		return KNOT_EINVAL;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO tokens(hash, read_only,"
		" zone_id, created_on, modified_on, name,"
		" expires_on) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	tok->created_on = tok->modified_on = records_now_ms();
	tok->revoked_on = 0;
	rdb_bind_blob(stmt, 1, hash, 32);
	rdb_bind_int64(stmt, 2, tok->read_only ? 1 : 0);
	if (tok->zone_id != 0) {
		rdb_bind_int64(stmt, 3, tok->zone_id);
	}
	rdb_bind_int64(stmt, 4, tok->created_on);
	rdb_bind_int64(stmt, 5, tok->modified_on);
	rdb_bind_text(stmt, 6, tok->name);
	if (tok->expires_on != 0) {
		rdb_bind_int64(stmt, 7, tok->expires_on);
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		tok->id = rdb_last_insert_id(store->db);
	}
	return ret;
}

/* Runs a one-row token query bound to key (a hash or an id). */
static int find_one(records_store_t *store, const rdb_sql_t *sql,
		    const uint8_t *hash, int64_t id, records_token_t *tok)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (hash != NULL) {
		rdb_bind_blob(stmt, 1, hash, 32);
	} else {
		rdb_bind_int64(stmt, 1, id);
	}
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		token_from_stmt(stmt, tok);
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? ZC_ENOKEY :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_token_find(records_store_t *store, const uint8_t hash[32],
                       records_token_t *tok)
{
	return find_one(store, RDB_SQL("SELECT " TOKEN_COLUMNS " FROM tokens"
	                " WHERE hash = ?1"), hash, 0, tok);
}

int records_token_get(records_store_t *store, int64_t id,
                      records_token_t *tok)
{
	return find_one(store, RDB_SQL("SELECT " TOKEN_COLUMNS " FROM tokens"
	                " WHERE id = ?1"), NULL, id, tok);
}

int records_token_list(records_store_t *store,
                       int (*cb)(const records_token_t *tok, void *ctx),
                       void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT " TOKEN_COLUMNS
		" FROM tokens ORDER BY id"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_token_t tok;
		token_from_stmt(stmt, &tok);
		if (cb(&tok, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_token_revoke(records_store_t *store, int64_t id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE tokens SET revoked_on ="
		" coalesce(revoked_on, ?1), modified_on ="
		" coalesce(revoked_on, ?1) WHERE id = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, records_now_ms());
	rdb_bind_int64(stmt, 2, id);
	ret = rdb_run(stmt);
	if (ret == ZC_EOK && rdb_changes(store->db) == 0) {
		ret = ZC_ENOKEY;
	}
	rdb_done(stmt);
	return ret;
}

records_token_status_t records_token_status(const records_token_t *tok,
                                            int64_t now_ms)
{
	if (tok->revoked_on != 0) {
		return RECORDS_TOKEN_REVOKED;
	}
	if (tok->expires_on != 0 && now_ms >= tok->expires_on) {
		return RECORDS_TOKEN_EXPIRED;
	}
	return RECORDS_TOKEN_ACTIVE;
}
