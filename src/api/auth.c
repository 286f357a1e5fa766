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
#include <time.h>
#include <libknot/errcode.h>

#include "api/auth.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"

/* The wall clock in Unix milliseconds (token expiry times are). */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int api_token_hash(const char *token, uint8_t out[32])
{
	return gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), out) == 0 ?
	       ZC_EOK : ZC_EUSAGE;
}

int api_token_secret(char *out, size_t out_size, uint8_t hash[32])
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
	return api_token_hash(out, hash);
}

int api_token_create(const char *data_dir, records_token_t *tok, char *out,
                     size_t out_size)
{
	uint8_t hash[32];
	records_store_t *rs;
	int ret = api_token_secret(out, out_size, hash);
	if (ret != ZC_EOK || (ret = records_open(&rs, data_dir)) != ZC_EOK) {
		return ret;
	}
	ret = records_token_add(rs, hash, tok);
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

/* The request's bearer token, or NULL with an error recorded (no store
 * needed). */
static const char *token_of(api_req_t *req)
{
	/* Two credentials: which one is meant? Neither is tried. */
	if (api_header_count(req, "Authorization") > 1) {
		api_error(req, 400, 6003, "Authorization: more than one such "
		          "header field; send exactly one");
		return NULL;
	}
	const char *auth = api_header(req, "Authorization");
	const char *token = auth != NULL ? bearer_token(auth) : NULL;
	if (token == NULL) {
		api_error(req, 401, 10000, "Authorization: a bearer token is "
		          "required");
	}
	return token;
}

int api_credentials_present(api_req_t *req)
{
	return token_of(req) != NULL ? ZC_EOK : ZC_EUSAGE;
}

int api_authenticate(api_req_t *req)
{
	const char *token = token_of(req);
	if (token == NULL) {
		return ZC_EUSAGE;
	}
	uint8_t hash[32];
	if (api_token_hash(token, hash) != ZC_EOK) {
		api_error(req, 401, 10000, "Authorization: invalid token");
		return ZC_EUSAGE;
	}
	int ret;
	records_token_t tok;
	ret = records_token_find(req->rs, hash, &tok);
	if (ret == ZC_ENOKEY) {
		api_error(req, 401, 10000, "Authorization: invalid token");
		return ZC_EUSAGE;
	}
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "Authorization");
		return ret;
	}
	/* Looked up on every request: a revocation or an expiry stops the
	 * token at its next request. */
	switch (records_token_status(&tok, now_ms())) {
	case RECORDS_TOKEN_REVOKED:
		api_error(req, 401, 10000, "Authorization: the token was revoked");
		return ZC_EUSAGE;
	case RECORDS_TOKEN_EXPIRED:
		api_error(req, 401, 10000, "Authorization: the token has expired");
		return ZC_EUSAGE;
	case RECORDS_TOKEN_ACTIVE:
		break;
	}
	req->token_id = tok.id;
	req->read_only = tok.read_only;
	req->token_zone = tok.zone_id;
	return ret;
}

/* Apart from api_authenticate() so that it comes after the route table:
 * a method the path does not take is 405 for every token, and a read-only
 * one is refused any other method but GET before a handler runs. */
bool api_method_permitted(api_req_t *req)
{
	if (req->read_only && strcmp(req->method, "GET") != 0) {
		api_error(req, 403, 9109, "Authorization: read-only token");
		return false;
	}
	return true;
}

bool api_allowed(api_req_t *req, int64_t zone_id, bool write)
{
	if (write && req->read_only) {
		api_error(req, 403, 9109, "token: read-only token");
		return false;
	}
	if (req->token_zone != 0 && req->token_zone != zone_id) {
		api_error(req, 403, 9109, "token: not valid for this zone");
		return false;
	}
	return true;
}
