/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/dnssec, in Cloudflare's shape: GET shows the
 * zone's signing state and the DS for the parent; PATCH {"status":
 * "active"|"disabled"} (zonecast also takes "algorithm" and "split") turns
 * online signing on or off (docs/dnssec.md). Private keys never leave.
 */
#include <string.h>
#include <libdnssec/binary.h>

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

static json_t *state_json(records_store_t *rs, const records_zone_t *zone)
{
	show_t s = { .zone = zone, .obj = json_object() };
	signer_zone_keys(rs, zone, show_key, &s);
	if (!s.found) {
		json_object_set_new(s.obj, "status", json_string("disabled"));
	}
	return s.obj;
}

typedef struct {
	records_zone_t zone;
	bool enable;
	uint8_t algorithm;
	bool split;
} change_t;

static int change_unit(records_store_t *rs, void *ctx)
{
	change_t *c = ctx;
	int ret = records_zone_get(rs, c->zone.id, &c->zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = c->enable ? signer_zone_enable(rs, &c->zone, c->algorithm, c->split) :
	      signer_zone_disable(rs, &c->zone);
	/* Asking for the state the zone is in changes nothing. */
	return ret == ZC_EEXISTS || ret == ZC_ENOKEY ? ZC_EOK : ret;
}

void api_dnssec(api_req_t *req, const records_zone_t *zone)
{
	const char *m = req->method;
	if (strcmp(m, "GET") == 0) {
		req->result = state_json(req->rs, zone);
		return;
	}
	if (strcmp(m, "PATCH") != 0) {
		api_error(req, 405, 1000, "method: not allowed here");
		return;
	}
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	const char *status = json_string_value(json_object_get(body, "status"));
	json_t *alg = json_object_get(body, "algorithm");
	change_t c = { .zone = *zone,
	               .split = json_is_true(json_object_get(body, "split")),
	               .algorithm = signer_algorithm_parse(
	                        json_string_value(alg)) };
	if (status == NULL || (strcmp(status, "active") != 0 &&
	                       strcmp(status, "disabled") != 0)) {
		api_error(req, 400, 1004, "status: \"active\" or \"disabled\"");
	} else if (alg != NULL && (!json_is_string(alg) || c.algorithm == 0)) {
		api_error(req, 400, 1004, "algorithm: \"ecdsap256sha256\" or "
		          "\"ed25519\"");
	} else {
		c.enable = strcmp(status, "active") == 0;
		int ret = writer_run(req->api->writer, change_unit, &c);
		if (ret != ZC_EOK) {
			api_error_code(req, ret, "dnssec");
		} else {
			req->version = c.zone.serial;
			req->result = state_json(req->rs, &c.zone);
		}
	}
	json_decref(body);
}
