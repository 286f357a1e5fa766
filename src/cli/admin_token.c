/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * token create and token revoke as administrative writes (admin.h): the
 * running server carries them out (and writes their audit line), or the
 * command itself when none runs. They wrote the store directly while a
 * server ran, and minting a read-write token for every zone left no line
 * in the server's log. The secret is printed once, on the command's
 * stdout (over the 0600 control socket when a server runs).
 *
 * Request fields: token-create {"name" (may be ""), "zone" (absent: every
 * zone), "read_only", "expires_on" (Unix ms, 0: never)}; token-revoke
 * {"which": an id (32 lower-case hex digits, whatever the names) or a
 * name}.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/auth.h"
#include "cli/admin.h"
#include "common/error.h"
#include "common/id_text.h"

/* 10000-01-01T00:00:00Z in Unix milliseconds. */
#define TOKEN_EXPIRES_MAX_MS 253402300800000LL

int admin_cmd_token_create(admin_t *a, const json_t *req)
{
	records_token_t tok = { 0 };
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *zone = json_string_value(json_object_get(req, "zone"));
	if (name != NULL && name[0] != '\0' && !records_token_name_valid(name)) {
		fprintf(a->err, "zonecast token: --name: not a token name\n");
		return ZC_EUSAGE;
	}
	snprintf(tok.name, sizeof(tok.name), "%s", name != NULL ? name : "");
	tok.read_only = json_is_true(json_object_get(req, "read_only"));
	tok.expires_on = json_integer_value(json_object_get(req, "expires_on"));
	/* The command refuses a past --expires; a request on the control
	 * socket is checked as well (a token born expired, or one expiring
	 * in the year 292278994). 0: never. */
	if (tok.expires_on != 0 &&
	    (tok.expires_on <= (int64_t)time(NULL) * 1000 ||
	     tok.expires_on >= TOKEN_EXPIRES_MAX_MS)) {
		fprintf(a->err, "zonecast token: the expiry is in the past or "
		        "after the year 9999\n");
		return ZC_EUSAGE;
	}
	int ret = ZC_EOK;
	if (zone != NULL) {
		records_zone_t z;
		ret = admin_find_zone(a, "token", zone, &z);
		tok.zone_id = ret == ZC_EOK ? z.id : 0;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	char secret[80];
	uint8_t hash[32];
	ret = api_token_secret(secret, sizeof(secret), hash);
	if (ret == ZC_EOK) {
		ret = records_token_add(a->rs, hash, &tok);
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast token: %s\n", zc_strerror(ret));
	} else {
		fprintf(a->out, "%s\n", secret);
	}
	explicit_bzero(secret, sizeof(secret));
	return ret;
}

typedef struct {
	/* The tokens of one name: those not revoked yet (found, matches)
	 * and those revoked already (revoked_id, revoked). */
	const char *name;
	int64_t found, revoked_id;
	int matches, revoked;
} by_name_t;

static int find_by_name(const records_token_t *tok, void *ctx)
{
	by_name_t *l = ctx;
	if (strcmp(tok->name, l->name) != 0) {
		return 0;
	}
	if (tok->revoked_on != 0) {
		l->revoked_id = tok->id;
		l->revoked++;
	} else {
		l->found = tok->id;
		l->matches++;
	}
	return 0;
}

int admin_cmd_token_revoke(admin_t *a, const json_t *req)
{
	/* An argument in the id's form (32 lower-case hex digits) is an id,
	 * whatever the names: a token named with another's id would have
	 * been revoked in its place, the other left active. No name may take
	 * that form now (records_token_name_valid()); tokens named before
	 * may have it. By name, the one token of that name not revoked yet:
	 * revoked ones count only when every token of that name is (revoking
	 * again changes nothing, as by id). */
	const char *which = json_string_value(json_object_get(req, "which"));
	if (which == NULL) {
		fprintf(a->err, "zonecast token: revoke what?\n");
		return ZC_EUSAGE;
	}
	by_name_t l = { .name = which };
	bool id_form = zc_id_text_form(which);
	int ret = id_form ? ZC_EOK : records_token_list(a->rs, find_by_name, &l);
	int64_t id = id_form ? api_id_value(which) :
	             l.matches == 1 ? l.found :
	             l.matches == 0 && l.revoked == 1 ? l.revoked_id : 0;
	if (ret == ZC_EOK && l.matches > 1) {
		fprintf(a->err, "zonecast token: %d tokens not revoked yet are "
		        "named %s: revoke one by its id (zonecast token list)\n",
		        l.matches, which);
		return ZC_EUSAGE;
	}
	if (ret == ZC_EOK && l.matches == 0 && l.revoked > 1) {
		fprintf(a->out, "the %d tokens named %s are revoked already\n",
		        l.revoked, which);
		return ZC_EOK;
	}
	ret = ret == ZC_EOK && id > 0 ? records_token_revoke(a->rs, id) :
	      ret == ZC_EOK ? ZC_ENOKEY : ret;
	if (ret == ZC_ENOKEY) {
		fprintf(a->err, "zonecast token: no token %s (zonecast token "
		        "list)\n", which);
		return ret;
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast token: %s\n", zc_strerror(ret));
		return ret;
	}
	char idtext[33];
	api_id_text(id, idtext);
	fprintf(a->out, "revoked %s\n", idtext);
	return ZC_EOK;
}
