/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A record's JSON fields, for the write unit (record_write.c): name, type,
 * content, ttl, priority, comment, tags, proxied and Cloudflare's data
 * parsed into wire form (u->wire) and checked, over the stored record for
 * PATCH; and the members a record body may have, checked by the endpoints
 * (dns_records.c) before the unit runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "api/content.h"
#include "api/format.h"
#include "api/record_data.h"
#include "api/record_fields.h"
#include "api/record_unit.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/arena.h"
#include "common/error.h"
#include "records/rules.h"

#define MAX_COMMENT 500 /* Bytes (Cloudflare: at most 500 characters). */

#define MAX_TAGS 64
#define MAX_TAG_LEN 500

/* Whether a tag is Cloudflare's "name" or "name:value", the name of
 * letters, digits, '_' and '-'. */
static bool is_tag(const char *tag)
{
	size_t name = strspn(tag, "abcdefghijklmnopqrstuvwxyz"
	                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
	return name > 0 && (tag[name] == '\0' || tag[name] == ':') &&
	       strlen(tag) <= MAX_TAG_LEN;
}

/* Checks the tags of a write; u->tags gets them as JSON text (NULL for
 * none or null). */
static int parse_tags(unit_t *u, json_t *tags)
{
	u->tags = NULL;
	if (tags == NULL || json_is_null(tags)) {
		return ZC_EOK;
	}
	if (!json_is_array(tags) || json_array_size(tags) > MAX_TAGS) {
		return api_record_unit_fail(u, 400, "tags: an array of at most "
		                            "%d strings is required", MAX_TAGS);
	}
	size_t i;
	json_t *t;
	json_array_foreach(tags, i, t) {
		if (!json_is_string(t) || !is_tag(json_string_value(t))) {
			return api_record_unit_fail(u, 400, "tags[%zu]: "
			                            "\"name\" or "
			                            "\"name:value\" is "
			                            "required (the name of "
			                            "letters, digits, '_' and "
			                            "'-'; at most %d bytes)", i,
			                            MAX_TAG_LEN);
		}
	}
	if (json_array_size(tags) == 0) {
		return ZC_EOK;
	}
	char *text = json_dumps(tags, JSON_COMPACT);
	if (text != NULL) {
		u->tags = zc_arena_alloc(&u->arena, strlen(text) + 1);
		if (u->tags != NULL) {
			strcpy(u->tags, text);
		}
	}
	free(text);
	return u->tags != NULL ? ZC_EOK : KNOT_ENOMEM;
}

/* Whether the content data stands for (text) is the record the body's
 * content made (u->wire); false after a 400. */
static bool data_agrees(unit_t *u, const char *name, const char *type,
                        const char *text, uint32_t ttl)
{
	static __thread api_wire_t other;
	char err[300];
	if (api_content_parse(u->zone.apex, name, type, text, -1, ttl, &other,
	                      err, sizeof(err)) != ZC_EOK) {
		api_record_unit_fail(u, 400, "data: %s",
		                     strncmp(err, "content: ", 9) == 0 ?
		                     err + 9 : err);
		return false;
	}
	if (other.type != u->wire->type ||
	    !records_rules_rdata_equal(u->wire->type, u->wire->rdata,
	                               u->wire->rdata_len, other.rdata,
	                               other.rdata_len)) {
		api_record_unit_fail(u, 400, "data: disagrees with content "
		                     "(zonecast takes either, or both when "
		                     "they say the same)");
		return false;
	}
	return true;
}

/* An SRV record's data may name its owner (data.service, data.proto,
 * data.name: api_data_srv_owner()): then it is the record's name, written
 * into srv_name as an FQDN, and a name given beside it must be the same
 * owner. srv_name is "" when data names none. */
static int data_names_owner(unit_t *u, const char *type, const json_t *data,
                            const char *name, char *srv_name, size_t size)
{
	srv_name[0] = '\0';
	if (data == NULL || strcasecmp(type, "SRV") != 0 ||
	    !json_is_object(data)) {
		return ZC_EOK;
	}
	uint8_t owner[KNOT_DNAME_MAXLEN], named[KNOT_DNAME_MAXLEN];
	char err[300];
	int ret = api_data_srv_owner(u->zone.apex, data, owner, err,
	                             sizeof(err));
	if (ret == -ENOENT) {
		return ZC_EOK;
	}
	if (ret != ZC_EOK) {
		return api_record_unit_fail(u, 400, "%s", err);
	}
	if (name != NULL &&
	    (api_name_parse(u->zone.apex, name, named, err, sizeof(err)) !=
	     ZC_EOK || !knot_dname_is_equal(named, owner))) {
		return api_record_unit_fail(u, 400, "name: disagrees with the "
		                            "owner data.service, data.proto "
		                            "and data.name make");
	}
	knot_dname_to_str(srv_name, owner, size);
	return ZC_EOK;
}

/* Parses a record's JSON fields (over a base record for PATCH). */
int api_record_fields_parse(unit_t *u, json_t *f, const copy_t *base)
{
	static __thread char content_buf[API_CONTENT_MAX];
	char base_name[KNOT_DNAME_TXT_MAXLEN + 1] = "", base_type[32] = "";
	const char *name = json_string_value(json_object_get(f, "name"));
	const char *type = json_string_value(json_object_get(f, "type"));
	const char *content = json_string_value(json_object_get(f, "content"));
	json_t *jttl = json_object_get(f, "ttl");
	json_t *jprio = json_object_get(f, "priority");
	if (json_is_null(jprio)) {
		jprio = NULL; /* As a record without one reads back. */
	}
	int priority = -1;
	int64_t ttl = base ? base->rec.ttl : 1;
	if (base != NULL) {
		knot_dname_to_str(base_name, base->rec.owner, sizeof(base_name));
		knot_rrtype_to_string(base->rec.type, base_type, sizeof(base_type));
		int bp;
		api_content_format(base->rec.owner, base->rec.type, base->rec.rdata,
		                   base->rec.rdata_len, base->rec.api_form,
		                   content_buf, sizeof(content_buf), &bp);
		name = name ? name : base_name;
		type = type ? type : base_type;
		content = content ? content : content_buf;
		priority = bp;
	}
	static const char *const strings[] = { "name", "type", "content",
	                                       "comment" };
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		json_t *v = json_object_get(f, strings[i]);
		if (v != NULL && !json_is_string(v) &&
		    !(json_is_null(v) && i == 3)) {
			return api_record_unit_fail(u, 400, "%s: a string is "
			                            "required", strings[i]);
		}
	}
	if (type == NULL) {
		return api_record_unit_fail(u, 400, "type: required");
	}
	json_t *data = json_object_get(f, "data");
	if (json_is_null(data)) {
		data = NULL;
	}
	char srv_name[KNOT_DNAME_TXT_MAXLEN + 1];
	if (data_names_owner(u, type, data, json_object_get(f, "name") ?
	                     name : NULL, srv_name, sizeof(srv_name)) !=
	    ZC_EOK) {
		return ZC_EUSAGE;
	}
	if (srv_name[0] != '\0') {
		name = srv_name;
	}
	if (name == NULL || name[0] == '\0') {
		return api_record_unit_fail(u, 400, "name: required (@ for the "
		                            "zone apex)");
	}
	if (content == NULL && data == NULL) {
		return api_record_unit_fail(u, 400, "content: required (or "
		                            "Cloudflare's data)");
	}
	json_t *comment = json_object_get(f, "comment");
	if (json_is_string(comment) &&
	    json_string_length(comment) > MAX_COMMENT) {
		return api_record_unit_fail(u, 400, "comment: longer than %d "
		                            "bytes", MAX_COMMENT);
	}
	json_t *proxied = json_object_get(f, "proxied");
	if (proxied != NULL && !json_is_null(proxied) &&
	    !json_is_false(proxied)) {
		return api_record_unit_fail(u, 400, "proxied: false only "
		                            "(zonecast does not proxy)");
	}
	if (parse_tags(u, json_object_get(f, "tags")) != ZC_EOK) {
		return ZC_EUSAGE;
	}
	if (jttl != NULL) {
		if (!json_is_integer(jttl) || json_integer_value(jttl) < 0 ||
		    json_integer_value(jttl) > INT32_MAX) {
			return api_record_unit_fail(u, 400, "ttl: 1 "
			                            "(automatic) or a number "
			                            "of seconds from 0 to "
			                            "2^31-1 (RFC 2181 "
			                            "section 8)");
		}
		ttl = json_integer_value(jttl);
	}
	/* Cloudflare's "automatic": a POST without a TTL, a TTL of 1, or a
	 * write without one over a record written so; a master file's 1 is
	 * 1 second. */
	bool automatic = !u->import &&
	                 (jttl != NULL ? ttl == 1 :
	                  base == NULL || (base->rec.api_form &
	                                   RECORDS_API_TTL_AUTO));
	if (automatic && (jttl != NULL || base == NULL)) {
		ttl = u->zone.default_ttl;
	}
	if (jprio != NULL) {
		if (!json_is_integer(jprio) || json_integer_value(jprio) < 0 ||
		    json_integer_value(jprio) > 65535) {
			return api_record_unit_fail(u, 400, "priority: "
			                            "0 to 65535");
		}
		priority = (int)json_integer_value(jprio);
	}
	char err[300];
	/* Cloudflare's data: the content it stands for. Given beside a
	 * content (the body's; a PATCH's stored one is replaced), the two
	 * must agree, as must its priority and the top-level one. */
	static __thread char data_buf[8192];
	bool data_only = data != NULL &&
	                 (json_object_get(f, "content") == NULL ||
	                  json_is_null(json_object_get(f, "content")));
	if (data != NULL) {
		uint16_t rtype = 0;
		int own = -1;
		if (knot_rrtype_from_string(type, &rtype) != 0) {
			return api_record_unit_fail(u, 400, "type: unknown or "
			                            "unsupported record type");
		}
		if (api_data_content(rtype, data, priority,
		                     data_buf, sizeof(data_buf), &own, err,
		                     sizeof(err)) != ZC_EOK) {
			return api_record_unit_fail(u, 400, "%s", err);
		}
		if (jprio != NULL && own >= 0 && own != priority) {
			return api_record_unit_fail(u, 400, "priority: "
			                            "disagrees with "
			                            "data.priority");
		}
		if (data_only) {
			content = data_buf;
			priority = -1; /* In the content. */
		}
	}
	if (strlen(content) > 4096) {
		return api_record_unit_fail(u, 400, "%s: longer than 4096 "
		                            "characters",
		                            data_only ? "data" : "content");
	}
	if (api_content_parse(u->zone.apex, name, type, content, priority,
	                      (uint32_t)ttl, u->wire, err, sizeof(err)) != ZC_EOK) {
		if (data_only && strncmp(err, "content: ", 9) == 0) {
			return api_record_unit_fail(u, 400, "data: %s",
			                            err + 9);
		}
		return api_record_unit_fail(u, 400, "%s", err);
	}
	if (data != NULL && !data_only &&
	    !data_agrees(u, name, type, data_buf, (uint32_t)ttl)) {
		return ZC_EUSAGE;
	}
	if (automatic) {
		u->wire->form |= RECORDS_API_TTL_AUTO;
	}
	if (jprio != NULL && (u->wire->type == KNOT_RRTYPE_SVCB ||
	                      u->wire->type == KNOT_RRTYPE_HTTPS) &&
	    u->wire->rdata_len >= 2 &&
	    (u->wire->rdata[0] << 8 | u->wire->rdata[1]) !=
	    json_integer_value(jprio)) {
		/* Their priority is in their content (or data.priority): a
		 * top-level one saying another went unsaid. */
		return api_record_unit_fail(u, 400, "priority: disagrees with "
		                            "the %s record's own (the "
		                            "content's first field, "
		                            "data.priority)", type);
	}
	if (u->wire->type == KNOT_RRTYPE_SOA) {
		/* A PATCH of the SOA's id that gave no type: the id is what
		 * named it. */
		bool by_id = base != NULL && json_object_get(f, "type") == NULL;
		return api_record_unit_fail(u, 400, "%s: the SOA is managed "
		                            "through the zone's settings",
		                            by_id ? "id" : "type");
	}
	if (records_rules_is_signer_type(u->wire->type)) {
		return api_record_unit_fail(u, 400, "type: DNSSEC records are "
		                            "made by zonecast's online signer "
		                            "(PATCH .../dnssec)");
	}
	return ZC_EOK;
}

/* Checks the members of a record body (where: "" or "patches[2]."): the
 * members of the record object the API returns, so that a record read
 * can be written back, and Cloudflare's members of one. The read-only
 * ones (the server's) are not read; proxied and settings must say what
 * zonecast does; an "id" must be path_id when that is not 0 (PUT and
 * PATCH of one record). False after a 400 naming the member. */
bool api_record_fields_members(api_req_t *req, json_t *f, const char *where,
                               int64_t path_id, int64_t zone_id)
{
	static const char *const members[] = {
		"name", "type", "content", "priority", "ttl", "comment", "tags",
		"data", "proxied", "settings",
		/* Read-only: Cloudflare's, given back as read. */
		"id", "zone_id", "zone_name", "proxiable", "locked", "meta",
		"created_on", "modified_on", "comment_modified_on",
		"tags_modified_on", NULL
	};
	static const char *const settings[] = { "ipv4_only", "ipv6_only",
	                                        "flatten_cname", NULL };
	if (!api_members_only(req, f, where, members, "a record takes name, "
	                      "type, content, priority, ttl, comment, tags, data, "
	                      "proxied, settings and the read-only members of "
	                      "the record object")) {
		return false;
	}
	json_t *proxied = json_object_get(f, "proxied");
	if (proxied != NULL && !json_is_null(proxied) &&
	    !json_is_false(proxied)) {
		api_error(req, 400, 1004, "%sproxied: false only (zonecast does "
		          "not proxy)", where);
		return false;
	}
	json_t *set = json_object_get(f, "settings");
	char at[48];
	snprintf(at, sizeof(at), "%ssettings.", where);
	if (set != NULL && !json_is_null(set) && !json_is_object(set)) {
		api_error(req, 400, 1004, "%ssettings: an object is required",
		          where);
		return false;
	}
	if (json_is_object(set) &&
	    !api_members_only(req, set, at, settings, "Cloudflare's settings "
	                      "are ipv4_only, ipv6_only and flatten_cname")) {
		return false;
	}
	const char *key;
	json_t *v;
	json_object_foreach(json_is_object(set) ? set : NULL, key, v) {
		if (!json_is_null(v) && !json_is_false(v)) {
			api_error(req, 400, 1004, "%s%s: false only (zonecast "
			          "neither proxies nor flattens)", at, key);
			return false;
		}
	}
	json_t *id = json_object_get(f, "id");
	if (path_id > 0 && id != NULL && api_id_parse(json_string_value(id)) !=
	                                 path_id) {
		api_error(req, 400, 1004, "%sid: not the id of the record in the "
		          "path", where);
		return false;
	}
	/* A record written in place (PUT, PATCH) is of the path's zone; a
	 * new one may be a copy of another zone's (its zone_id not read). */
	json_t *zid = json_object_get(f, "zone_id");
	if (zone_id > 0 && zid != NULL && !json_is_null(zid) &&
	    api_id_parse(json_string_value(zid)) != zone_id) {
		api_error(req, 400, 1004, "%szone_id: not the zone in the path",
		          where);
		return false;
	}
	return true;
}
