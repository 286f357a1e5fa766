/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/tsig_keys: TSIG keys of a zone for RFC 2136
 * updates and zone transfers (zonecast's own resource; Cloudflare has no
 * such endpoint). POST creates a key and is the only response that ever
 * carries its secret; GET lists keys without secrets; DELETE .../{id}
 * removes one. The writes are admin/'s (admin_tsig_create(),
 * admin_tsig_delete()), as the command's `tsig create|delete`.
 */
#include <string.h>
#include <libknot/dname.h>

#include "admin/admin.h"
#include "api/format.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/tsig_keys.h"
#include "common/error.h"
#include "dns/tsig_key.h"

static json_t *key_json(const records_tsig_key_t *key, bool with_secret)
{
	char id[33], name[KNOT_DNAME_TXT_MAXLEN + 1];
	api_id_format(key->id, id);
	knot_dname_to_str(name, key->name, sizeof(name));
	size_t len = strlen(name);
	if (len > 1 && name[len - 1] == '.') {
		name[len - 1] = '\0'; /* As record names in this API. */
	}
	json_t *grants = json_array();
	char buf[RECORDS_TSIG_GRANTS_MAX], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", key->grants);
	for (char *g = strtok_r(buf, " ", &save); g != NULL;
	     g = strtok_r(NULL, " ", &save)) {
		json_array_append_new(grants, json_string(g));
	}
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:b, s:o}", "id", id,
	                      "name", name, "algorithm", key->algorithm,
	                      "grants", grants, "transfer", key->transfer,
	                      "created_on", api_time(key->created_on));
	char secret[256];
	if (with_secret && dns_tsig_secret_b64(key->secret, key->secret_len,
	                                       secret, sizeof(secret)) == ZC_EOK) {
		json_object_set_new(o, "secret", json_string(secret));
	}
	return o;
}

static int list_key(const records_tsig_key_t *key, void *ctx)
{
	json_array_append_new(ctx, key_json(key, false));
	return 0;
}

/* A key to create, as the request's body says. */
typedef struct {
	const char *name, *algorithm;
	char grants[RECORDS_TSIG_GRANTS_MAX];
	bool transfer;
	records_tsig_key_t key;
	char err[300];
} create_t;

/* Reads "grants": an array of strings, joined with spaces. */
static bool read_grants(api_req_t *req, json_t *body, create_t *c)
{
	json_t *grants = json_object_get(body, "grants");
	if (grants == NULL) {
		return true;
	}
	if (!json_is_array(grants)) {
		api_error(req, 400, 1004, "grants: an array of strings is required");
		return false;
	}
	size_t i;
	json_t *g;
	json_array_foreach(grants, i, g) {
		const char *text = json_string_value(g);
		if (text == NULL || strchr(text, ' ') != NULL ||
		    strlen(c->grants) + strlen(text) + 2 > sizeof(c->grants)) {
			api_error(req, 400, 1004, "grants[%zu]: a grant such as "
			          "\"subdomain:NAME:A,AAAA\" is required", i);
			return false;
		}
		if (c->grants[0] != '\0') {
			strcat(c->grants, " ");
		}
		strcat(c->grants, text);
	}
	return true;
}

static void create_key(api_req_t *req, const records_zone_t *zone)
{
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	static const char *const members[] = { "name", "algorithm", "grants",
	                                       "transfer", NULL };
	if (!api_members_only(req, body, "", members, "a TSIG key takes name, "
	                      "algorithm, grants and transfer")) {
		json_decref(body);
		return;
	}
	create_t *c = calloc(1, sizeof(*c));
	json_t *transfer = json_object_get(body, "transfer");
	json_t *alg = json_object_get(body, "algorithm");
	c->name = json_string_value(json_object_get(body, "name"));
	c->algorithm = json_string_value(alg);
	c->transfer = transfer == NULL || json_is_true(transfer);
	bool ok = true;
	if (c->name == NULL) {
		api_error(req, 400, 1004, "name: a key name is required");
		ok = false;
	} else if (alg != NULL && c->algorithm == NULL) {
		api_error(req, 400, 1004, "algorithm: a string is required");
		ok = false;
	} else if (transfer != NULL && !json_is_boolean(transfer)) {
		api_error(req, 400, 1004, "transfer: true or false is required");
		ok = false;
	}
	if (ok && read_grants(req, body, c)) {
		int ret = admin_tsig_create(req->api->writer, zone->id, c->name,
		                            c->algorithm, c->grants, c->transfer,
		                            &c->key, c->err, sizeof(c->err));
		if (ret == ZC_EOK) {
			req->status = 201;
			req->result = key_json(&c->key, true);
		} else if (c->err[0] != '\0') {
			api_error(req, ret == ZC_EEXISTS ? 409 : 400, 1004, "%s",
			          c->err);
		} else {
			api_error_code(req, ret, "tsig_key");
		}
	}
	free(c);
	json_decref(body);
}

/* A page of the zone's keys (page, per_page as every list takes them;
 * result_info's per_page said how many there were). */
static void list_keys(api_req_t *req, const records_zone_t *zone)
{
	static const char *const params[] = { "page", "per_page", NULL };
	long page, per_page;
	if (!api_args_only(req, params) || !api_paging(req, &page, &per_page)) {
		return;
	}
	json_t *all = json_array();
	int ret = records_tsig_list(req->rs, zone->id, list_key, all);
	long total = (long)json_array_size(all);
	json_t *list = json_array();
	for (long i = (page - 1) * per_page; ret == ZC_EOK && i < total &&
	     i < page * per_page; i++) {
		json_array_append(list, json_array_get(all, (size_t)i));
	}
	json_decref(all);
	api_list_result(req, ret, list, page, per_page, total, "tsig_keys");
}

void api_tsig_keys(api_req_t *req, const records_zone_t *zone, char **parts,
                   int count)
{
	const char *m = req->method;
	if (count == 0 && strcmp(m, "GET") == 0) {
		list_keys(req, zone);
	} else if (count == 0 && strcmp(m, "POST") == 0) {
		create_key(req, zone);
	} else if (count == 1 && strcmp(m, "DELETE") == 0) {
		int ret = admin_tsig_delete(req->api->writer, zone->id,
		                            api_id_parse(parts[0]));
		if (ret == ZC_ENOKEY) {
			api_error(req, 404, 1004, "id: no such key in this zone");
		} else if (ret != ZC_EOK) {
			api_error_code(req, ret, "tsig_key");
		} else {
			req->result = json_pack("{s:s}", "id", parts[0]);
		}
	} else if (count <= 1) {
		api_method_not_allowed(req);
	} else {
		api_error(req, 404, 7003, "url: no such resource");
	}
}
