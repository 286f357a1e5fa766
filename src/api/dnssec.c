/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/dnssec, in Cloudflare's shape: GET shows the
 * zone's signing state and the DS for the parent; PATCH {"status":
 * "active"|"disabled"} (zonecast also takes "algorithm" and "split", and
 * "force" and "ds_ttl") turns online signing on or off (docs/dnssec.md):
 * disabled goes through "pending-disabled" (CDS and CDNSKEY DELETE) and
 * removes the keys when asked again after the DS TTL, as Cloudflare's
 * API and `zonecast dnssec disable` do. Private keys never leave.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <libdnssec/binary.h>

#include "admin/admin.h"
#include "api/dnssec.h"
#include "api/format.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"
#include "signer/zone.h"

typedef struct {
	const records_zone_t *zone;
	json_t *obj;
	bool found;
} show_t;

static int show_key(const signer_key_info_t *info, void *ctx)
{
	show_t *s = ctx;
	if (info->flags != SIGNER_FLAGS_KSK || s->found) {
		return 0; /* The parent's DS is for the KSK (or CSK). */
	}
	s->found = true;
	char ds[512], alg[8], digest[160] = "";
	signer_ds_format(s->zone, info, ds, sizeof(ds));
	snprintf(alg, sizeof(alg), "%u", info->algorithm);
	for (size_t i = 4; i < info->ds_len && 2 * i < sizeof(digest); i++) {
		snprintf(digest + 2 * (i - 4), 3, "%02X", info->ds[i]);
	}
	char pub[512] = "";
	if (info->dnskey_len > 4) {
		dnssec_binary_t bin = { .data = (uint8_t *)info->dnskey + 4,
		                        .size = info->dnskey_len - 4 };
		dnssec_binary_t b64 = { 0 };
		if (dnssec_binary_to_base64(&bin, &b64) == 0 &&
		    b64.size < sizeof(pub)) {
			memcpy(pub, b64.data, b64.size);
			pub[b64.size] = '\0';
		}
		dnssec_binary_free(&b64);
	}
	json_object_set_new(s->obj, "status", json_string("active"));
	json_object_set_new(s->obj, "algorithm", json_string(alg));
	json_object_set_new(s->obj, "digest_type", json_string("2"));
	json_object_set_new(s->obj, "digest_algorithm", json_string("SHA256"));
	json_object_set_new(s->obj, "digest", json_string(digest));
	json_object_set_new(s->obj, "ds", json_string(ds));
	json_object_set_new(s->obj, "key_tag", json_integer(info->tag));
	json_object_set_new(s->obj, "key_type",
	                    json_string(signer_algorithm_name(info->algorithm)));
	json_object_set_new(s->obj, "flags", json_integer(info->flags));
	json_object_set_new(s->obj, "public_key", json_string(pub));
	json_object_set_new(s->obj, "modified_on", api_time(info->created_on));
	return 0;
}

/* The zone's state; "pending-disabled" between the two steps of a
 * disable (CDS and CDNSKEY DELETE published, the keys still signing). */
static json_t *state_json(records_store_t *rs, const records_zone_t *zone)
{
	show_t s = { .zone = zone, .obj = json_object() };
	signer_zone_keys(rs, zone, show_key, &s);
	int64_t since;
	if (!s.found) {
		json_object_set_new(s.obj, "status", json_string("disabled"));
	} else if (signer_zone_disable_since(rs, zone, &since) == ZC_EOK) {
		json_object_set_new(s.obj, "status",
		                    json_string("pending-disabled"));
	}
	return s.obj;
}

/* The algorithm asked for: a name, or its number as GET gives it ("13")
 * or as a JSON number; 0 when none of those. */
static uint8_t algorithm_of(json_t *alg)
{
	if (json_is_integer(alg)) {
		char num[24];
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		         json_integer_value(alg));
		return signer_algorithm_parse(num);
	}
	return json_is_string(alg) ? signer_algorithm_parse(json_string_value(alg)) :
	       0;
}

/* Reads the body's zonecast fields: "force" and "ds_ttl" (for disable),
 * "algorithm" and "split" (for enable: a field the other status does not
 * apply is refused, not ignored); false after a 400. */
static bool read_change(api_req_t *req, json_t *body, bool active,
                        admin_dnssec_t *d)
{
	json_t *alg = json_object_get(body, "algorithm");
	json_t *force = json_object_get(body, "force");
	json_t *ttl = json_object_get(body, "ds_ttl");
	json_t *split = json_object_get(body, "split");
	d->split = json_is_true(split);
	d->algorithm = alg != NULL ? algorithm_of(alg) :
	               signer_algorithm_parse(NULL);
	d->keys_asked = alg != NULL || d->split;
	d->force = json_is_true(force);
	d->ds_ttl = ttl != NULL ? (uint32_t)json_integer_value(ttl) :
	            SIGNER_DEFAULT_DS_TTL;
	if (active && (force != NULL || ttl != NULL)) {
		api_error(req, 400, 1004, "%s: goes with \"status\": "
		          "\"disabled\" (it does nothing for \"active\")",
		          force != NULL ? "force" : "ds_ttl");
		return false;
	}
	if (!active && (alg != NULL || split != NULL)) {
		api_error(req, 400, 1004, "%s: goes with \"status\": \"active\" "
		          "(it does nothing for \"disabled\")",
		          alg != NULL ? "algorithm" : "split");
		return false;
	}
	if (alg != NULL && d->algorithm == 0) {
		api_error(req, 400, 1004, "algorithm: \"ecdsap256sha256\" or "
		          "\"ed25519\", or their numbers \"13\" or \"15\" (as GET "
		          "gives them)");
		return false;
	}
	if (split != NULL && !json_is_boolean(split)) {
		api_error(req, 400, 1004, "split: true or false is required");
		return false;
	}
	if (force != NULL && !json_is_boolean(force)) {
		api_error(req, 400, 1004, "force: true or false is required");
		return false;
	}
	if (ttl != NULL && (!json_is_integer(ttl) || json_integer_value(ttl) < 0 ||
	                    json_integer_value(ttl) > INT32_MAX)) {
		api_error(req, 400, 1004, "ds_ttl: a number of seconds (0 to "
		          "2^31-1) is required");
		return false;
	}
	return true;
}

/* A disable's second step asked for before its time: 409, saying when. */
static void too_early(api_req_t *req, const admin_dnssec_t *d)
{
	char at[32];
	signer_format_time(d->time.earliest_ms, at, sizeof(at));
	api_error(req, 409, 1004, "status: the zone is pending-disabled: %s. "
	          "Its keys may be removed from %s (PATCH \"disabled\" again "
	          "then), or now with \"force\": true (validating resolvers "
	          "may find the zone bogus meanwhile)", d->time.why, at);
}

/* PATCH: the change through admin/ (the command's `dnssec enable` and
 * `disable` take the same steps). Asking for the state the zone is in
 * changes nothing. */
static void change(api_req_t *req, const records_zone_t *zone, json_t *body)
{
	static const char *const members[] = { "status", "algorithm", "split",
	                                       "ds_ttl", "force", NULL };
	if (!api_members_only(req, body, "", members, "DNSSEC takes status, "
	                      "algorithm, split, ds_ttl and force")) {
		return;
	}
	const char *status = json_string_value(json_object_get(body, "status"));
	admin_dnssec_t d = { .zone = *zone };
	if (status == NULL || (strcmp(status, "active") != 0 &&
	                       strcmp(status, "disabled") != 0)) {
		api_error(req, 400, 1004, "status: \"active\" or \"disabled\"");
		return;
	}
	bool active = strcmp(status, "active") == 0;
	if (!read_change(req, body, active, &d)) {
		return;
	}
	int ret;
	if (strcmp(status, "active") == 0) {
		ret = admin_dnssec_enable(req->api->writer, &d);
		ret = ret == ZC_EEXISTS ? ZC_EOK : ret;
	} else {
		ret = admin_dnssec_disable(req->api->writer, &d);
		ret = ret == ZC_ENOKEY ? ZC_EOK : ret;
	}
	if (ret == -EAGAIN && d.early) {
		too_early(req, &d);
	} else if (ret == ZC_EDISABLING) {
		api_error(req, 409, 1004, "status: the zone is pending-disabled; "
		          "\"active\" cancels the disable and keeps its keys, so "
		          "\"algorithm\" and \"split\" would not apply: send "
		          "{\"status\": \"active\"} alone, or finish the disable "
		          "first");
	} else if (ret != ZC_EOK) {
		api_error_code(req, ret, "dnssec");
	} else {
		req->version = d.zone.serial;
		req->versioned = true;
		req->live_seq = d.seq; /* For ?wait=live (api_wait_live()). */
		req->result = state_json(req->rs, &d.zone);
	}
}

void api_dnssec(api_req_t *req, const records_zone_t *zone)
{
	const char *m = req->method;
	if (strcmp(m, "GET") == 0) {
		req->result = state_json(req->rs, zone);
		return;
	}
	if (strcmp(m, "DELETE") == 0) {
		/* Cloudflare's "Delete DNSSEC records" (the TypeScript SDK's
		 * dns.dnssec.delete()): PATCH {"status": "disabled"}, each
		 * call the next step; the result is the zone's id. */
		if (req->body_len > 0) {
			api_error(req, 400, 1004, "body: DELETE takes none");
			return;
		}
		json_t *body = json_pack("{s:s}", "status", "disabled");
		change(req, zone, body);
		json_decref(body);
		if (req->result != NULL) {
			char id[33];
			api_id_format(zone->id, id);
			json_decref(req->result);
			req->result = json_string(id);
		}
		return;
	}
	if (strcmp(m, "PATCH") != 0) {
		api_method_not_allowed(req);
		return;
	}
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	change(req, zone, body);
	json_decref(body);
}
