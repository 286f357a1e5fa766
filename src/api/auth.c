/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bearer tokens: created once (shown once), stored as SHA-256 hashes, so
 * the store never holds a usable secret. A request's token is hashed and
 * looked up by that hash: SQLite's index search compares hash bytes in
 * variable time, which can tell an attacker at most how many leading bytes
 * of SHA-256(guess) some stored hash shares. That is no step towards a
 * token: a token is 160 random bits, and even a whole stored hash gives
 * none without a SHA-256 preimage. So no constant-time comparison is needed
 * here (one after the lookup would add nothing: the lookup has compared).
 */
#include <gnutls/crypto.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <libknot/errcode.h>

#include "api/internal.h"
#include "common/error.h"
#include "records/sqlite.h"

int api_token_hash(const char *token, uint8_t out[32])
{
	return gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), out) == 0 ?
	       ZC_EOK : ZC_EUSAGE;
}

int api_token_create(const char *data_dir, int read_only, int64_t zone_id,
                     char *out, size_t out_size)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
	uint8_t rnd[32];
	if (out_size < 64 || getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		return ZC_EUSAGE;
	}
	int n = snprintf(out, out_size, "zc_");
	for (size_t i = 0; i < sizeof(rnd); i++) {
		out[n++] = alphabet[rnd[i] % 32];
	}
	out[n] = '\0';
	uint8_t hash[32];
	records_store_t *rs;
	int ret = api_token_hash(out, hash);
	if (ret != ZC_EOK || (ret = records_open(&rs, data_dir)) != ZC_EOK) {
		return ret;
	}
	sqlite3_stmt *st;
	ret = records_sql_prepare(rs, "INSERT INTO tokens(hash, read_only, zone_id,"
	                          " created_on) VALUES (?, ?, ?, ?)", &st);
	if (ret == ZC_EOK) {
		sqlite3_bind_blob(st, 1, hash, sizeof(hash), SQLITE_STATIC);
		sqlite3_bind_int(st, 2, read_only ? 1 : 0);
		if (zone_id != 0) {
			sqlite3_bind_int64(st, 3, zone_id);
		}
		sqlite3_bind_int64(st, 4, records_now_ms());
		ret = records_sql_error(rs->db, sqlite3_step(st));
		records_sql_done(rs, st);
	}
	records_close(rs);
	return ret;
}

/*
 * The token of "Bearer TOKEN" (RFC 6750 §2.1), or NULL. The scheme is
 * case-insensitive (RFC 9110 §11.1: "bearer", "BEARER" are the same) and
 * is separated from the token by one or more spaces (§11.4: 1*SP).
 */
static const char *bearer_token(const char *auth)
{
	static const char scheme[] = "Bearer";
	size_t n = sizeof(scheme) - 1;
	if (strncasecmp(auth, scheme, n) != 0 || auth[n] != ' ') {
		return NULL;
	}
	const char *token = auth + n + strspn(auth + n, " ");
	return *token != '\0' ? token : NULL;
}

int api_authenticate(api_req_t *req)
{
	/* Two credentials: which one is meant? Neither is tried. */
	if (api_header_count(req, "Authorization") > 1) {
		api_error(req, 400, 6003, "Authorization: more than one such "
		          "header field; send exactly one");
		return ZC_EUSAGE;
	}
	const char *auth = api_header(req, "Authorization");
	const char *token = auth != NULL ? bearer_token(auth) : NULL;
	if (token == NULL) {
		api_error(req, 401, 10000, "Authorization: a bearer token is "
		          "required");
		return ZC_EUSAGE;
	}
	uint8_t hash[32];
	if (api_token_hash(token, hash) != ZC_EOK) {
		api_error(req, 401, 10000, "Authorization: invalid token");
		return ZC_EUSAGE;
	}
	sqlite3_stmt *st;
	int ret = records_sql_prepare(req->rs, "SELECT read_only,"
	                              " coalesce(zone_id, 0) FROM tokens"
	                              " WHERE hash = ?", &st);
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "Authorization");
		return ret;
	}
	sqlite3_bind_blob(st, 1, hash, sizeof(hash), SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		req->read_only = sqlite3_column_int(st, 0) != 0;
		req->token_zone = sqlite3_column_int64(st, 1);
		ret = ZC_EOK;
	} else {
		api_error(req, 401, 10000, "Authorization: invalid token");
		ret = ZC_EUSAGE;
	}
	records_sql_done(req->rs, st);
	if (ret == ZC_EOK && req->read_only && strcmp(req->method, "GET") != 0) {
		api_error(req, 403, 9109, "Authorization: read-only token");
		ret = ZC_EUSAGE;
	}
	return ret;
}
