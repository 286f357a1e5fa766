/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/user/tokens in Cloudflare's shape: verify the token of the
 * request, the permission groups a token may have, list, get, create (the secret is in the creation's response
 * and nowhere else, ever) and revoke (DELETE: refused from the next
 * request on; the token stays listed as "disabled").
 *
 * A zonecast token has one scope: read-only or read-write, one zone or
 * every zone. Its Cloudflare form is one policy: the resource
 * com.cloudflare.api.account.zone.ZONE_ID (or .zone.* for every zone) and
 * the permission groups "Zone Read" and "DNS Read", or "Zone Write" and
 * "DNS Write". Creation takes that form back. Listing, reading, creating
 * and revoking tokens need a token for every zone (and write access to
 * create and revoke); verify takes any valid token.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "api/auth.h"
#include "api/format.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/tokens.h"
#include "common/error.h"

#define RESOURCE_ZONE "com.cloudflare.api.account.zone."

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *status_text(const records_token_t *t)
{
	switch (records_token_status(t, now_ms())) {
	case RECORDS_TOKEN_REVOKED:
		return "disabled";
	case RECORDS_TOKEN_EXPIRED:
		return "expired";
	default:
		return "active";
	}
}

static json_t *policies_json(const records_token_t *t)
{
	char id[33], zid[33], resource[80];
	api_id_format(t->id, id);
	api_id_format(t->zone_id, zid);
	snprintf(resource, sizeof(resource), RESOURCE_ZONE "%s",
	         t->zone_id != 0 ? zid : "*");
	const char *zone = t->read_only ? "Zone Read" : "Zone Write";
	const char *dns = t->read_only ? "DNS Read" : "DNS Write";
	return json_pack("[{s:s, s:s, s:{s:s}, s:[{s:s, s:s}, {s:s, s:s}]}]",
	                 "id", id, "effect", "allow", "resources", resource, "*",
	                 "permission_groups", "id", zone, "name", zone,
	                 "id", dns, "name", dns);
}

static json_t *token_json(const records_token_t *t)
{
	char id[33];
	api_id_format(t->id, id);
	json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:n, s:o}", "id", id,
	                      "name", t->name, "status", status_text(t),
	                      "issued_on", api_time(t->created_on),
	                      "modified_on", api_time(t->modified_on),
	                      "last_used_on", "policies", policies_json(t));
	if (j != NULL && t->expires_on != 0) {
		json_object_set_new(j, "expires_on", api_time(t->expires_on));
	}
	if (j != NULL && t->revoked_on != 0) {
		json_object_set_new(j, "revoked_on", api_time(t->revoked_on));
	}
	return j;
}

/* Tokens are the account's: only a token for every zone handles them. */
static bool account_token(api_req_t *req)
{
	if (req->token_zone != 0) {
		api_error(req, 403, 9109, "token: limited to one zone; tokens are "
		          "handled with a token for every zone");
		return false;
	}
	return true;
}

/* GET /user/tokens/verify (what clients call to check a token). */
static void verify(api_req_t *req)
{
	records_token_t t;
	int ret = records_token_get(req->rs, req->token_id, &t);
	if (ret != ZC_EOK) {
		api_error_code(req, ret == ZC_ENOKEY ? KNOT_ENOENT : ret, "token");
		return;
	}
	char id[33];
	api_id_format(t.id, id);
	req->result = json_pack("{s:s, s:s}", "id", id, "status", "active");
	if (t.expires_on != 0) {
		json_object_set_new(req->result, "expires_on",
		                    api_time(t.expires_on));
	}
	req->note_code = 10000;
	snprintf(req->note, sizeof(req->note), "This API Token is valid and "
	         "active");
}

/* GET /user/tokens/permission_groups: the groups a new token's policy
 * may name. */
static void permission_groups(api_req_t *req)
{
	static const char *const names[] = { "Zone Read", "Zone Write",
	                                     "DNS Read", "DNS Write" };
	json_t *list = json_array();
	for (size_t i = 0; i < 4; i++) {
		json_array_append_new(list, json_pack("{s:s, s:s, s:[s]}", "id",
		                                      names[i], "name", names[i],
		                                      "scopes",
		                                      "com.cloudflare.api.account.zone"));
	}
	req->result = list;
}

typedef struct {
	json_t *list;
	int64_t skip, take, total;
} list_t;

static int list_token(const records_token_t *t, void *ctx)
{
	list_t *l = ctx;
	if (l->total >= l->skip && l->total < l->skip + l->take) {
		json_array_append_new(l->list, token_json(t));
	}
	l->total++;
	return 0;
}

static void list_tokens(api_req_t *req)
{
	static const char *const params[] = { "page", "per_page", NULL };
	long page, per_page;
	if (!api_args_only(req, params) || !api_paging(req, &page, &per_page)) {
		return;
	}
	list_t l = { .list = json_array(), .skip = (int64_t)(page - 1) * per_page,
	             .take = per_page };
	int ret = records_token_list(req->rs, list_token, &l);
	api_list_result(req, ret, l.list, page, per_page, (long)l.total, "tokens");
}

static void get_token(api_req_t *req, int64_t id)
{
	records_token_t t;
	int ret = records_token_get(req->rs, id, &t);
	if (ret == ZC_ENOKEY) {
		api_error(req, 404, 1003, "token_id: no such token");
	} else if (ret != ZC_EOK) {
		api_error_code(req, ret, "token_id");
	} else {
		req->result = token_json(&t);
	}
}

/* --- Creation --- */

typedef struct {
	records_token_t tok;
	uint8_t hash[32];
} add_t;

static int add_unit(records_store_t *rs, void *ctx)
{
	add_t *a = ctx;
	return records_token_add(rs, a->hash, &a->tok);
}

static bool is_group(const char *name)
{
	return strcmp(name, "DNS Write") == 0 || strcmp(name, "Zone Write") == 0 ||
	       strcmp(name, "DNS Read") == 0 || strcmp(name, "Zone Read") == 0;
}

/* A permission group's name (or id: zonecast's ids are the names; given
 * both, they name one group: {"id": "DNS Write", "name": "DNS Read"} made
 * a read-only token unsaid). Members other than id, name and Cloudflare's
 * meta are refused, never ignored. */
static bool read_group(json_t *g, bool *writes)
{
	const char *name = json_string_value(json_object_get(g, "name"));
	const char *id = json_string_value(json_object_get(g, "id"));
	const char *key;
	json_t *v;
	json_object_foreach(json_is_object(g) ? g : NULL, key, v) {
		if (strcmp(key, "id") != 0 && strcmp(key, "name") != 0 &&
		    strcmp(key, "meta") != 0) {
			return false;
		}
	}
	if (name != NULL && id != NULL && strcmp(name, id) != 0 &&
	    is_group(id)) {
		return false; /* (Cloudflare's own hex ids name no group here.) */
	}
	name = name ? name : id;
	if (name == NULL) {
		return false;
	}
	if (strcmp(name, "DNS Write") == 0 || strcmp(name, "Zone Write") == 0) {
		*writes = true;
		return true;
	}
	return strcmp(name, "DNS Read") == 0 || strcmp(name, "Zone Read") == 0;
}

/* The one policy of a new token: its zone (0: every zone) and access. */
static bool read_policy(api_req_t *req, json_t *policies, records_token_t *t)
{
	json_t *p = json_array_get(policies, 0);
	json_t *res = json_object_get(p, "resources");
	json_t *groups = json_object_get(p, "permission_groups");
	const char *effect = json_string_value(json_object_get(p, "effect"));
	static const char *const members[] = { "id", "effect", "resources",
	                                       "permission_groups", NULL };
	if (json_array_size(policies) != 1 || !json_is_object(p) ||
	    (effect != NULL && strcmp(effect, "allow") != 0)) {
		api_error(req, 400, 1004, "policies: one policy with effect "
		          "\"allow\" (a zonecast token has one scope)");
		return false;
	}
	if (!api_members_only(req, p, "policies[0].", members, "a policy takes "
	                      "effect, resources, permission_groups and id")) {
		return false;
	}
	const char *key = json_object_size(res) == 1 ?
	                  json_object_iter_key(json_object_iter(res)) : NULL;
	if (key == NULL || strncmp(key, RESOURCE_ZONE, strlen(RESOURCE_ZONE))) {
		api_error(req, 400, 1004, "policies[0].resources: one of "
		          "{\"" RESOURCE_ZONE "ZONE_ID\": \"*\"} or {\""
		          RESOURCE_ZONE "*\": \"*\"}");
		return false;
	}
	const char *zone = key + strlen(RESOURCE_ZONE);
	t->zone_id = strcmp(zone, "*") == 0 ? 0 : api_id_parse(zone);
	records_zone_t z;
	if (strcmp(zone, "*") != 0 &&
	    (t->zone_id <= 0 || records_zone_get(req->rs, t->zone_id, &z) != ZC_EOK)) {
		api_error(req, 400, 1004, "policies[0].resources: no zone %.40s",
		          zone);
		return false;
	}
	bool writes = false;
	size_t i;
	json_t *g;
	bool ok = json_array_size(groups) > 0;
	json_array_foreach(groups, i, g) {
		ok = ok && read_group(g, &writes);
	}
	if (!ok) {
		api_error(req, 400, 1004, "policies[0].permission_groups: "
		          "\"Zone Read\", \"DNS Read\", \"Zone Write\" or \"DNS "
		          "Write\" (by name or id, both the same when both are "
		          "given; no other member)");
		return false;
	}
	t->read_only = !writes;
	return true;
}

static bool read_new_token(api_req_t *req, json_t *body, records_token_t *t)
{
	const char *key;
	json_t *v;
	json_object_foreach(body, key, v) {
		if (strcmp(key, "name") != 0 && strcmp(key, "policies") != 0 &&
		    strcmp(key, "expires_on") != 0) {
			api_error(req, 400, 1004, "%.64s: not implemented (a token "
			          "takes name, policies and expires_on)", key);
			return false;
		}
	}
	const char *name = json_string_value(json_object_get(body, "name"));
	if (name == NULL || !records_token_name_valid(name)) {
		api_error(req, 400, 1004, "name: a string of 1 to %d bytes is "
		          "required, without control characters, not \"-\" "
		          "nor 32 lower-case hex digits (an id's form)",
		          RECORDS_TOKEN_NAME_MAX);
		return false;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	json_t *exp = json_object_get(body, "expires_on");
	if (exp != NULL && !json_is_null(exp) &&
	    (!json_is_string(exp) ||
	     api_time_parse(json_string_value(exp), &t->expires_on) != ZC_EOK ||
	     t->expires_on <= now_ms())) {
		api_error(req, 400, 1004, "expires_on: a time to come, in UTC "
		          "(2027-01-31T12:00:00Z)");
		return false;
	}
	return read_policy(req, json_object_get(body, "policies"), t);
}

static void create_token(api_req_t *req)
{
	json_t *body = api_body_json(req);
	add_t a = { 0 };
	char secret[80];
	if (body == NULL || !read_new_token(req, body, &a.tok)) {
		json_decref(body);
		return;
	}
	json_decref(body);
	int ret = api_token_secret(secret, sizeof(secret), a.hash);
	if (ret == ZC_EOK) {
		ret = writer_run(req->api->writer, add_unit, &a);
	}
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "token");
	} else {
		req->result = token_json(&a.tok);
		/* The only place the secret ever appears. */
		json_object_set_new(req->result, "value", json_string(secret));
	}
	explicit_bzero(secret, sizeof(secret));
}

/* --- Revocation --- */

typedef struct {
	int64_t id;
} revoke_t;

static int revoke_unit(records_store_t *rs, void *ctx)
{
	return records_token_revoke(rs, ((revoke_t *)ctx)->id);
}

static void revoke_token(api_req_t *req, int64_t id)
{
	revoke_t r = { .id = id };
	int ret = writer_run(req->api->writer, revoke_unit, &r);
	if (ret == ZC_ENOKEY) {
		api_error(req, 404, 1003, "token_id: no such token");
	} else if (ret != ZC_EOK) {
		api_error_code(req, ret, "token_id");
	} else {
		char text[33];
		api_id_format(id, text);
		req->result = json_pack("{s:s}", "id", text);
	}
}

void api_user(api_req_t *req, char **parts, int count)
{
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0;
	if (count < 2 || strcmp(parts[1], "tokens") != 0 || count > 3) {
		api_error(req, 404, 7003, "url: no such resource");
		return;
	}
	bool verifying = count == 3 && strcmp(parts[2], "verify") == 0;
	bool groups = count == 3 && strcmp(parts[2], "permission_groups") == 0;
	if ((verifying || groups) && !get) {
		api_method_not_allowed(req);
		return;
	}
	if (verifying || groups) {
		(verifying ? verify : permission_groups)(req);
		return;
	}
	if (!account_token(req)) {
		return;
	}
	int64_t id = count == 3 ? api_id_parse(parts[2]) : 0;
	if (count == 3 && id <= 0) {
		api_error(req, 404, 1003, "token_id: no such token");
	} else if (count == 2 && get) {
		list_tokens(req);
	} else if (count == 2 && strcmp(m, "POST") == 0) {
		create_token(req);
	} else if (count == 3 && get) {
		get_token(req, id);
	} else if (count == 3 && strcmp(m, "DELETE") == 0) {
		revoke_token(req, id);
	} else {
		api_method_not_allowed(req);
	}
}
