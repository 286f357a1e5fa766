/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/dns_records: list, create, get, put, patch,
 * delete, batch (import and export: import_export.c).
 *
 * Every write is one unit of the group committer: it bumps the zone's
 * version once, checks the new state against the records already stored
 * with the zone-content rules of records/rules.h (CNAME alone at its name,
 * RFC 1034 §3.6.2 and RFC 2181 §10.1; no duplicate, names in rdata
 * compared ignoring case; the SOA and the last apex NS are not the API's
 * to remove), answering a broken rule with a 400 naming the field, and
 * logs an update as a delete of the old record and a create of the new
 * one, with the record keeping its id. RFC 2181 §5.2 wants one TTL per
 * RRset: a record written with a new TTL gives it to its whole RRset.
 *
 * A unit reads the records its ops address by id and the nodes they
 * check through a cache kept in step with the unit's own writes
 * (node_cache.h), filled before the first op: a batch of 1,000 changes
 * reads them in a few statements instead of one or more per change.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "api/audit.h"
#include "api/conditional.h"
#include "api/content.h"
#include "api/dns_records.h"
#include "api/format.h"
#include "api/live.h"
#include "api/match.h"
#include "api/node_cache.h"
#include "api/record_data.h"
#include "api/record_json.h"
#include "api/record_list.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/txt.h"
#include "common/arena.h"
#include "common/error.h"
#include "records/rules.h"
#include "zonefile/zonefile.h"

#define MAX_COMMENT 500 /* Bytes (Cloudflare: at most 500 characters). */

/* A record id that names no record of the zone: Cloudflare's 404, code
 * 81044 ("Record does not exist."), which clients test (cal.com takes it
 * on a DELETE as already deleted); the same for every method and a
 * batch's entries, the field first. */
#define RECORD_MISSING_CODE 81044
#define RECORD_MISSING "%s: Record does not exist (no record %s in this zone)"

/* The unit of work of a write request. */
typedef struct {
	api_req_t *req;
	records_zone_t zone;
	op_t *ops;
	size_t count;
	const api_if_match_t *if_match; /* Of the request (conditional.c). */
	const api_if_match_t *if_none_match;
	bool no_change;          /* Its ops write nothing: no new version. */
	zc_arena_t arena;
	api_wire_t *wire;
	int64_t last_id;         /* The record a single-record write touched. */
	bool import;             /* Identical records are skipped, not errors. */
	bool keep_deleted;       /* A batch: deletes render what they delete. */
	bool keep_written;       /* A single write: renders what it wrote. */
	char *tags;              /* The op's tags, JSON text (arena); NULL. */
	json_t *deleted;         /* What the op's delete rendered (owned). */
	int skipped;
	unsigned status;         /* HTTP status of a failure. */
	unsigned code;           /* Its error code; 0: by the status. */
	char err[512];
	/* What the unit's run read and wrote: its own, or the caller's (a
	 * batch answers from it what its read-back misses). */
	api_node_cache_t *cache;
	api_node_cache_t own;
} unit_t;

static void etag_of(int64_t id, int64_t modified, char *out, size_t size)
{
	snprintf(out, size, "\"%llx-%llx\"", (unsigned long long)id,
	         (unsigned long long)modified);
}

/* --- Reading --- */

typedef struct {
	const records_zone_t *zone;
	json_t *record;
	char etag[64];
} one_t;

static int one_record(const records_record_t *rec, void *ctx)
{
	one_t *o = ctx;
	o->record = api_record_json(o->zone, rec);
	etag_of(rec->id, rec->modified_on, o->etag, sizeof(o->etag));
	return 1;
}

static void get_record(api_req_t *req, const records_zone_t *zone,
                       int64_t id)
{
	one_t o = { .zone = zone };
	int ret = records_record_find(req->rs, zone->id, id, one_record, &o);
	if (ret == ZC_EOK && o.record == NULL) {
		ret = KNOT_ENOENT;
	}
	if (ret == KNOT_ENOENT) {
		char idtxt[33];
		api_id_format(id, idtxt);
		api_error(req, 404, RECORD_MISSING_CODE, RECORD_MISSING,
		          "dns_record_id", idtxt);
		return;
	}
	if (ret != ZC_EOK) {
		json_decref(o.record);
		api_error_code(req, ret, "dns_record_id");
		return;
	}
	req->result = o.record;
	snprintf(req->etag, sizeof(req->etag), "%s", o.etag);
}

/* A committed single write's answer: the record read back (as the store
 * has it now), or, when that read fails (the connection lost, the zone
 * deleted right after), the record as the unit wrote it: the write is
 * committed, and an error would tell the client that nothing was. */
static void answer_written(api_req_t *req, const records_zone_t *zone,
                           int64_t id, const op_t *op)
{
	one_t o = { .zone = zone };
	int ret = records_record_find(req->rs, zone->id, id, one_record, &o);
	if (ret == ZC_EOK && o.record != NULL) {
		req->result = o.record;
		snprintf(req->etag, sizeof(req->etag), "%s", o.etag);
		return;
	}
	json_decref(o.record);
	if (op->written != NULL) {
		req->result = json_incref(op->written);
		snprintf(req->etag, sizeof(req->etag), "%s", op->etag);
		return;
	}
	api_error_code(req, ret == ZC_EOK ? KNOT_ENOENT : ret, "dns_record_id");
}

/* --- Writing --- */

static int fail(unit_t *u, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records the unit's first failure (status and message naming the field). */
static int fail(unit_t *u, unsigned status, const char *fmt, ...)
{
	if (u->err[0] == '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(u->err, sizeof(u->err), fmt, ap);
		va_end(ap);
		u->status = status;
	}
	return ZC_EUSAGE;
}

/* A stored record; its pointers into the unit's node cache, valid for
 * the rest of the unit's run. */
typedef struct {
	records_record_t rec;
	bool found;
} copy_t;

/* The record id names (op: the op naming it, for the field of a 404;
 * NULL: a record of a node the unit read). */
static int load_record(unit_t *u, int64_t id, const op_t *op, copy_t *c)
{
	c->found = false;
	int ret = api_node_cache_find(u->cache, id, &c->rec);
	if (ret == KNOT_ENOENT) {
		char idtxt[33], field[48];
		api_id_format(id, idtxt);
		if (op != NULL && op->list != NULL) {
			snprintf(field, sizeof(field), "%s[%zu].id", op->list,
			         op->index);
		} else {
			snprintf(field, sizeof(field), "%s", op != NULL ?
			         "dns_record_id" : "id");
		}
		if (u->err[0] == '\0') {
			u->code = RECORD_MISSING_CODE;
		}
		return fail(u, 404, RECORD_MISSING, field, idtxt);
	}
	c->found = ret == ZC_EOK;
	return ret;
}

/* The records stored at a name (less the one a write replaces), as the
 * rules see them (records/rules.h): the arrays in the unit's arena, the
 * rdata in its node cache. */
typedef struct {
	unit_t *u;
	int64_t exclude;
	int64_t *ids;
	records_rules_rr_t *rr;
	size_t count, cap;
	bool failed;
} node_t;

static int collect(const records_record_t *rec, void *ctx)
{
	node_t *n = ctx;
	if (rec->id == n->exclude) {
		return 0;
	}
	if (n->count == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 16;
		int64_t *ids = zc_arena_alloc(&n->u->arena, cap * sizeof(*ids));
		records_rules_rr_t *rr = zc_arena_alloc(&n->u->arena,
		                                        cap * sizeof(*rr));
		if (ids == NULL || rr == NULL) {
			n->failed = true;
			return 1;
		}
		if (n->count > 0) {
			memcpy(ids, n->ids, n->count * sizeof(*ids));
			memcpy(rr, n->rr, n->count * sizeof(*rr));
		}
		n->ids = ids;
		n->rr = rr;
		n->cap = cap;
	}
	n->ids[n->count] = rec->id;
	n->rr[n->count++] = (records_rules_rr_t){ .type = rec->type,
	                                          .ttl = rec->ttl,
	                                          .rdata = rec->rdata,
	                                          .rdata_len = rec->rdata_len };
	return 0;
}

/* Loads the records at owner (type 0: every type) but `exclude`. */
static int load_node(unit_t *u, const uint8_t *owner, uint16_t type,
                     int64_t exclude, node_t *n)
{
	*n = (node_t){ .u = u, .exclude = exclude };
	int ret = api_node_cache_foreach(u->cache, owner, type, collect, n);
	return ret == ZC_EOK && n->failed ? KNOT_ENOMEM : ret;
}

/* What a write does to the zone, for the wording of a refusal. */
typedef enum {
	ADDING,     /* The record of the body (POST, PUT, PATCH). */
	DELETING,   /* The record addressed by id (DELETE). */
	MOVING,     /* The same, rewritten by PUT or PATCH. */
} change_t;

/* A rule a write breaks, as a 400 naming the field. */
static int refuse(unit_t *u, records_verdict_t v, change_t change)
{
	bool removing = change != ADDING;
	switch (v) {
	case RECORDS_RULE_OK:
		return ZC_EOK;
	case RECORDS_RULE_OUTSIDE_ZONE:
		return fail(u, 400, "name: outside the zone");
	case RECORDS_RULE_SIGNER_TYPE:
		return removing ?
		       fail(u, 400, "id: DNSSEC records are managed by the "
		            "online signer (PATCH .../dnssec)") :
		       fail(u, 400, "type: DNSSEC records are made by zonecast's "
		            "online signer (PATCH .../dnssec)");
	case RECORDS_RULE_SOA_ELSEWHERE:
	case RECORDS_RULE_SECOND_SOA:
	case RECORDS_RULE_REMOVES_SOA:
		return fail(u, 400, "%s: the SOA is managed through the zone's "
		            "settings", removing ? "id" : "type");
	case RECORDS_RULE_CNAME_AT_APEX:
		return fail(u, 400, "name: a CNAME cannot be at the zone apex, "
		            "which holds the SOA and NS records (RFC 1034 "
		            "section 3.6.2)");
	case RECORDS_RULE_DS_AT_APEX:
		return fail(u, 400, "type: a DS record cannot be at the zone "
		            "apex: it belongs to the parent zone, at the "
		            "delegation (RFC 4035 section 2.4)");
	case RECORDS_RULE_CNAME_BESIDE_DATA:
	case RECORDS_RULE_DATA_BESIDE_CNAME:
		/* Cloudflare's codes: 81053 for a CNAME where other records
		 * are, 81054 for other data where a CNAME is. */
		if (u->err[0] == '\0') {
			u->code = v == RECORDS_RULE_CNAME_BESIDE_DATA ? 81053 : 81054;
		}
		return fail(u, 400, "name: a CNAME cannot share its name with "
		            "other records (RFC 1034 section 3.6.2)");
	case RECORDS_RULE_SECOND_CNAME:
		/* Cloudflare's 81053 ("An A, AAAA, or CNAME record with that
		 * host already exists"), as for a CNAME beside data. */
		if (u->err[0] == '\0') {
			u->code = 81053;
		}
		return fail(u, 400, "name: a name holds at most one CNAME "
		            "(RFC 2181 section 10.1)");
	case RECORDS_RULE_SECOND_DNAME:
		return fail(u, 400, "name: a name holds at most one DNAME "
		            "(RFC 6672 section 2.4)");
	case RECORDS_RULE_DUPLICATE:
		if (u->err[0] == '\0') {
			u->code = 81058; /* Cloudflare's, which clients test. */
		}
		return fail(u, 400, "content: an identical record already exists "
		            "(names in the content compare ignoring case, RFC 4034 "
		            "section 6.2)");
	case RECORDS_RULE_LAST_APEX_NS:
		return change == DELETING ?
		       fail(u, 400, "id: the last NS record at the zone apex "
		            "cannot be deleted") :
		       fail(u, 400, "name: the last NS record at the zone apex "
		            "cannot be moved away");
	case RECORDS_RULE_TOO_MANY_TYPES:
		return fail(u, 400, "type: a name holds at most %d record types",
		            RECORDS_RULES_MAX_TYPES);
	case RECORDS_RULE_RRSET_FULL:
		return fail(u, 400, "content: an RRset holds at most %d records",
		            RECORDS_RULES_MAX_RRSET);
	case RECORDS_RULE_RRSET_TOO_LARGE:
		return fail(u, 400, "content: the RRset would be larger than "
		            "one DNS message carries (%d octets of records, "
		            "its signature aside)",
		            RECORDS_RULES_MAX_RRSET_OCTETS);
	default:
		return fail(u, 400, "content: %s", records_rules_reason(v));
	}
}

/* Gives the RRset's other records the new TTL (RFC 2181 §5.2). */
static int retime(records_store_t *rs, unit_t *u, const node_t *n,
                  const records_rules_rr_t *added)
{
	bool explicit = !(u->wire->form & RECORDS_API_TTL_AUTO);
	for (size_t i = 0; i < n->count; i++) {
		bool other_ttl = records_rules_needs_retime(&n->rr[i], added);
		if (!other_ttl && !(explicit && n->rr[i].type == added->type)) {
			continue;
		}
		copy_t old;
		int ret = load_record(u, n->ids[i], NULL, &old);
		if (ret == ZC_EOK && !other_ttl &&
		    !(old.rec.api_form & RECORDS_API_TTL_AUTO)) {
			continue; /* The same TTL, given so: as it is. */
		}
		if (ret == ZC_EOK) {
			ret = records_record_delete(rs, &u->zone, old.rec.id);
		}
		if (ret == ZC_EOK) {
			api_node_cache_deleted(u->cache, old.rec.id);
			old.rec.ttl = added->ttl;
			/* A TTL of the RRset's own ends "automatic"; an
			 * automatic write's leaves each record as it was. */
			if (explicit) {
				old.rec.api_form &= ~RECORDS_API_TTL_AUTO;
			}
			ret = records_record_insert(rs, &u->zone, &old.rec);
		}
		if (ret == ZC_EOK) {
			ret = api_node_cache_inserted(u->cache, &old.rec);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ZC_EOK;
}

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
		return fail(u, 400, "tags: an array of at most %d strings is "
		            "required", MAX_TAGS);
	}
	size_t i;
	json_t *t;
	json_array_foreach(tags, i, t) {
		if (!json_is_string(t) || !is_tag(json_string_value(t))) {
			return fail(u, 400, "tags[%zu]: \"name\" or \"name:value\" "
			            "is required (the name of letters, digits, '_' "
			            "and '-'; at most %d bytes)", i, MAX_TAG_LEN);
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
		fail(u, 400, "data: %s", strncmp(err, "content: ", 9) == 0 ?
		     err + 9 : err);
		return false;
	}
	if (other.type != u->wire->type ||
	    !records_rules_rdata_equal(u->wire->type, u->wire->rdata,
	                               u->wire->rdata_len, other.rdata,
	                               other.rdata_len)) {
		fail(u, 400, "data: disagrees with content (zonecast takes "
		     "either, or both when they say the same)");
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
		return fail(u, 400, "%s", err);
	}
	if (name != NULL &&
	    (api_name_parse(u->zone.apex, name, named, err, sizeof(err)) !=
	     ZC_EOK || !knot_dname_is_equal(named, owner))) {
		return fail(u, 400, "name: disagrees with the owner data.service, "
		            "data.proto and data.name make");
	}
	knot_dname_to_str(srv_name, owner, size);
	return ZC_EOK;
}

/* Parses a record's JSON fields (over a base record for PATCH). */
static int parse_fields(unit_t *u, json_t *f, const copy_t *base)
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
			return fail(u, 400, "%s: a string is required",
			            strings[i]);
		}
	}
	if (type == NULL) {
		return fail(u, 400, "type: required");
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
		return fail(u, 400, "name: required (@ for the zone apex)");
	}
	if (content == NULL && data == NULL) {
		return fail(u, 400, "content: required (or Cloudflare's data)");
	}
	json_t *comment = json_object_get(f, "comment");
	if (json_is_string(comment) &&
	    json_string_length(comment) > MAX_COMMENT) {
		return fail(u, 400, "comment: longer than %d bytes",
		            MAX_COMMENT);
	}
	json_t *proxied = json_object_get(f, "proxied");
	if (proxied != NULL && !json_is_null(proxied) &&
	    !json_is_false(proxied)) {
		return fail(u, 400, "proxied: false only (zonecast does not "
		            "proxy)");
	}
	if (parse_tags(u, json_object_get(f, "tags")) != ZC_EOK) {
		return ZC_EUSAGE;
	}
	if (jttl != NULL) {
		if (!json_is_integer(jttl) || json_integer_value(jttl) < 0 ||
		    json_integer_value(jttl) > INT32_MAX) {
			return fail(u, 400, "ttl: 1 (automatic) or a number of "
			            "seconds from 0 to 2^31-1 (RFC 2181 section 8)");
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
			return fail(u, 400, "priority: 0 to 65535");
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
			return fail(u, 400, "type: unknown or unsupported record "
			            "type");
		}
		if (api_data_content(rtype, data, priority,
		                     data_buf, sizeof(data_buf), &own, err,
		                     sizeof(err)) != ZC_EOK) {
			return fail(u, 400, "%s", err);
		}
		if (jprio != NULL && own >= 0 && own != priority) {
			return fail(u, 400, "priority: disagrees with "
			            "data.priority");
		}
		if (data_only) {
			content = data_buf;
			priority = -1; /* In the content. */
		}
	}
	if (strlen(content) > 4096) {
		return fail(u, 400, "%s: longer than 4096 characters",
		            data_only ? "data" : "content");
	}
	if (api_content_parse(u->zone.apex, name, type, content, priority,
	                      (uint32_t)ttl, u->wire, err, sizeof(err)) != ZC_EOK) {
		if (data_only && strncmp(err, "content: ", 9) == 0) {
			return fail(u, 400, "data: %s", err + 9);
		}
		return fail(u, 400, "%s", err);
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
		return fail(u, 400, "priority: disagrees with the %s record's "
		            "own (the content's first field, data.priority)",
		            type);
	}
	if (u->wire->type == KNOT_RRTYPE_SOA) {
		return fail(u, 400, "type: the SOA is managed through the zone's "
		            "settings");
	}
	if (records_rules_is_signer_type(u->wire->type)) {
		return fail(u, 400, "type: DNSSEC records are made by zonecast's "
		            "online signer (PATCH .../dnssec)");
	}
	return ZC_EOK;
}

/* A name as the API writes it: without its final dot (the root: "."). */
static void api_name(const knot_dname_t *name, char *out, size_t size)
{
	knot_dname_to_str(out, name, size);
	size_t len = strlen(out);
	if (len > 1 && out[len - 1] == '.') {
		out[len - 1] = '\0';
	}
}

/* The subtree rules of DNAME (RFC 6672 section 2.4, records/rules.h): the
 * parsed record is not below a DNAME, nor a DNAME above records (the
 * record `exclude` rewrites not counted). */
static int check_subtree(records_store_t *rs, unit_t *u, int64_t exclude)
{
	uint8_t at[KNOT_DNAME_MAXLEN];
	char owner[KNOT_DNAME_TXT_MAXLEN + 1], other[KNOT_DNAME_TXT_MAXLEN + 1];
	bool found = false;
	int ret = records_dname_above(rs, &u->zone, u->wire->owner, exclude,
	                              &found, at);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (found) {
		api_name(u->wire->owner, owner, sizeof(owner));
		api_name(at, other, sizeof(other));
		return fail(u, 400, "name: %s is below the DNAME at %s, where no "
		            "record may be (RFC 6672 section 2.4)", owner, other);
	}
	if (u->wire->type != KNOT_RRTYPE_DNAME) {
		return ZC_EOK;
	}
	ret = records_data_below(rs, &u->zone, u->wire->owner, exclude, &found,
	                         at);
	if (ret == ZC_EOK && found) {
		api_name(u->wire->owner, owner, sizeof(owner));
		api_name(at, other, sizeof(other));
		return fail(u, 400, "name: a DNAME at %s would have records below "
		            "it, such as at %s (RFC 6672 section 2.4)", owner,
		            other);
	}
	return ret;
}

/* Writes the parsed record (new, or replacing `old` under its id). */
static int write_record(records_store_t *rs, unit_t *u, json_t *f,
                        const copy_t *old)
{
	node_t n;
	int ret = load_node(u, u->wire->owner, 0, old ? old->rec.id : 0, &n);
	if (ret != ZC_EOK) {
		return ret;
	}
	records_rules_node_t node = { .apex = u->zone.apex,
	                              .owner = u->wire->owner, .rr = n.rr,
	                              .count = n.count };
	records_rules_rr_t added = { .type = u->wire->type, .ttl = u->wire->ttl,
	                             .rdata = u->wire->rdata,
	                             .rdata_len = u->wire->rdata_len };
	records_verdict_t v = records_rules_check_add(&node, &added, NULL);
	if (v == RECORDS_RULE_DUPLICATE && u->import) {
		u->skipped++; /* An import adds only what is not there yet. */
		return ZC_EOK;
	}
	if (v != RECORDS_RULE_OK) {
		return refuse(u, v, ADDING);
	}
	ret = check_subtree(rs, u, old ? old->rec.id : 0);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (old != NULL) {
		ret = records_record_delete(rs, &u->zone, old->rec.id);
		if (ret == ZC_EOK) {
			api_node_cache_deleted(u->cache, old->rec.id);
		}
	}
	const char *comment = json_string_value(json_object_get(f, "comment"));
	records_record_t rec = {
		.id = old ? old->rec.id : 0, .owner = u->wire->owner,
		.type = u->wire->type, .ttl = u->wire->ttl, .rdata = u->wire->rdata,
		.rdata_len = u->wire->rdata_len, .api_form = u->wire->form,
		.comment = json_object_get(f, "comment") ? comment :
		           (old ? old->rec.comment : NULL),
		.tags = json_object_get(f, "tags") ? u->tags :
		        (old ? old->rec.tags : NULL),
		.created_on = old ? old->rec.created_on : 0,
	};
	if (ret == ZC_EOK) {
		ret = records_record_insert(rs, &u->zone, &rec);
	}
	if (ret == ZC_EOK) {
		ret = api_node_cache_inserted(u->cache, &rec);
	}
	if (ret == ZC_EOK) {
		ret = retime(rs, u, &n, &added);
	}
	u->last_id = rec.id;
	return ret;
}

/* What the rules say to removing the stored record old (rules.h). */
static int check_removal(unit_t *u, const copy_t *old,
                         const uint8_t *new_owner, uint16_t new_type)
{
	node_t n;
	int ret = load_node(u, old->rec.owner, old->rec.type, 0, &n);
	if (ret != ZC_EOK) {
		return ret;
	}
	size_t index = 0;
	while (index < n.count && n.ids[index] != old->rec.id) {
		index++;
	}
	records_rules_node_t node = { .apex = u->zone.apex,
	                              .owner = old->rec.owner, .rr = n.rr,
	                              .count = n.count };
	records_verdict_t v = new_owner == NULL ?
	                      records_rules_check_remove(&node, index) :
	                      records_rules_check_replace(&node, index, new_owner,
	                                                  new_type);
	return refuse(u, v, new_owner == NULL ? DELETING : MOVING);
}

static int delete_record(records_store_t *rs, unit_t *u, const copy_t *old)
{
	int ret = check_removal(u, old, NULL, 0);
	if (ret != ZC_EOK) {
		return ret;
	}
	u->last_id = old->rec.id;
	if (u->keep_deleted && (u->deleted = api_record_json(&u->zone,
	                                                     &old->rec)) == NULL) {
		return KNOT_ENOMEM;
	}
	ret = records_record_delete(rs, &u->zone, old->rec.id);
	if (ret == ZC_EOK) {
		api_node_cache_deleted(u->cache, old->rec.id);
	}
	return ret;
}

static int check_if_match(unit_t *u, const copy_t *old)
{
	char etag[API_ETAG_MAX];
	etag_of(old->rec.id, old->rec.modified_on, etag, sizeof(etag));
	if (!api_if_match_ok(u->if_match, etag)) {
		return fail(u, 412, "If-Match: the record changed since it was "
		            "read (no entity tag given is its ETag)");
	}
	if (!api_if_none_match_ok(u->if_none_match, etag)) {
		return fail(u, 412, "If-None-Match: the record exists%s; nothing "
		            "was changed", u->if_none_match->any ? "" :
		            " and has one of the entity tags given");
	}
	return ZC_EOK;
}

/* The members of a record body that write something; the others are
 * Cloudflare's read-only ones, and proxied and settings, false only. */
static const char *const writing[] = { "name", "type", "content",
                                       "priority", "ttl", "comment", "tags",
                                       "data", NULL };

/* Whether a PATCH body names nothing to write. */
static bool writes_nothing(json_t *fields)
{
	for (size_t i = 0; writing[i] != NULL; i++) {
		if (json_object_get(fields, writing[i]) != NULL) {
			return false;
		}
	}
	return true;
}

static int run_op(records_store_t *rs, unit_t *u, const op_t *op)
{
	u->last_id = 0;
	copy_t old;
	int ret = ZC_EOK;
	if (op->op != OP_POST) {
		ret = load_record(u, op->id, op, &old);
		if (ret == ZC_EOK) {
			ret = check_if_match(u, &old);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	if (op->op == OP_PATCH && writes_nothing(op->fields)) {
		u->last_id = old.rec.id; /* Nothing to change: left as it is. */
		return ZC_EOK;
	}
	switch (op->op) {
	case OP_DELETE:
		return delete_record(rs, u, &old);
	case OP_POST:
		ret = parse_fields(u, op->fields, NULL);
		return ret == ZC_EOK ? write_record(rs, u, op->fields, NULL) : ret;
	case OP_PUT:
		ret = parse_fields(u, op->fields, NULL);
		break;
	case OP_PATCH:
		ret = parse_fields(u, op->fields, &old);
		break;
	}
	if (ret == ZC_EOK) {
		ret = check_removal(u, &old, u->wire->owner, u->wire->type);
	}
	return ret == ZC_EOK ? write_record(rs, u, op->fields, &old) : ret;
}

/* Reads what the unit's ops are going to read, in a few statements
 * (on PostgreSQL: one or two a kind) instead of one or more per op: the
 * records they address by id, then the nodes they check, at the old
 * records' owners and at the names in the bodies. Whatever this misses
 * (a PATCH's name made from a record an earlier op rewrote, a name that
 * does not parse) is read from the store when an op asks for it. */
static int prefetch(unit_t *u)
{
	size_t count = u->count ? u->count : 1;
	int64_t *ids = malloc(count * sizeof(*ids));
	const knot_dname_t **owners = malloc(2 * count * sizeof(*owners));
	uint8_t (*names)[KNOT_DNAME_MAXLEN] = malloc(count * sizeof(*names));
	int ret = ids && owners && names ? ZC_EOK : KNOT_ENOMEM;
	size_t n_ids = 0, n_owners = 0, n_names = 0;
	for (size_t i = 0; i < u->count && ret == ZC_EOK; i++) {
		if (u->ops[i].op != OP_POST) {
			ids[n_ids++] = u->ops[i].id;
		}
	}
	if (ret == ZC_EOK) {
		ret = api_node_cache_load_ids(u->cache, ids, n_ids);
	}
	for (size_t i = 0; i < u->count && ret == ZC_EOK; i++) {
		const op_t *op = &u->ops[i];
		records_record_t old;
		if (op->op != OP_POST &&
		    api_node_cache_known(u->cache, op->id, &old)) {
			owners[n_owners++] = old.owner;
		}
		const char *name = op->op == OP_DELETE ? NULL :
		                   json_string_value(json_object_get(op->fields,
		                                                     "name"));
		char err[256];
		if (name != NULL && api_name_parse(u->zone.apex, name,
		                                   names[n_names], err,
		                                   sizeof(err)) == ZC_EOK) {
			owners[n_owners++] = names[n_names++];
		}
	}
	if (ret == ZC_EOK) {
		ret = api_node_cache_load_owners(u->cache, owners, n_owners);
	}
	size_t posts = 0;
	for (size_t i = 0; i < u->count; i++) {
		posts += u->ops[i].op == OP_POST;
	}
	if (ret == ZC_EOK && posts > 0) {
		/* The new records' ids in one draw: each draw is a read, which
		 * would send the records gathered so far in a statement of
		 * their own. */
		ret = records_ids_reserve(u->cache->rs, posts);
	}
	free(names);
	free(owners);
	free(ids);
	return ret;
}

static int write_unit(records_store_t *rs, void *ctx)
{
	unit_t *u = ctx;
	/* Afresh: the writer runs a unit again after a zone lock it could
	 * not take, or its whole batch (writer.h), its first run rolled
	 * back; nothing read, written or answered in that run is kept. */
	u->skipped = 0;
	u->err[0] = '\0';
	u->status = 0;
	u->code = 0;
	api_node_cache_reset(u->cache, rs, u->zone.id);
	int ret = records_zone_get(rs, u->zone.id, &u->zone);
	if (ret == ZC_EOK && !u->no_change) {
		/* A unit that writes nothing makes no version: its answer's
		 * is the zone's current one, which holds what it asked for. */
		ret = records_zone_bump(rs, &u->zone);
	}
	/* On SQLite each op reads what it needs when it first needs it: the
	 * same lookups, in-process, without parsing the names twice. */
	if (ret == ZC_EOK && records_reads_at_once(rs)) {
		ret = prefetch(u);
	}
	for (size_t i = 0; i < u->count && ret == ZC_EOK; i++) {
		zc_arena_reset(&u->arena);
		op_t *op = &u->ops[i];
		u->deleted = NULL;
		ret = run_op(rs, u, op);
		op->result_id = u->last_id;
		json_decref(op->deleted);
		op->deleted = u->deleted;
		records_record_t rec;
		if (ret == ZC_EOK && u->keep_written && op->op != OP_DELETE &&
		    op->result_id > 0 &&
		    api_node_cache_known(u->cache, op->result_id, &rec)) {
			json_decref(op->written);
			op->written = api_record_json(&u->zone, &rec);
			etag_of(rec.id, rec.modified_on, op->etag,
			        sizeof(op->etag));
		}
	}
	return ret;
}

/* Runs ops in one unit; fills errors or the version into the response.
 * *last_id receives the record a single-record write touched. cache (set
 * up and torn down by the caller; NULL: the unit's own) is left holding
 * what the unit's committed run read and wrote. */
static int run_unit(api_req_t *req, const records_zone_t *zone, op_t *ops,
                    size_t count, int64_t *last_id, int *skipped,
                    api_node_cache_t *cache)
{
	unit_t *u = calloc(1, sizeof(*u));
	api_wire_t *wire = malloc(sizeof(*wire));
	if (u == NULL || wire == NULL) {
		free(u);
		free(wire);
		api_error(req, 500, 1500, "server: out of memory");
		return KNOT_ENOMEM;
	}
	u->req = req;
	u->zone = *zone;
	u->ops = ops;
	u->count = count;
	u->wire = wire;
	api_if_match_t *if_match = malloc(2 * sizeof(*if_match));
	if (if_match == NULL || !api_if_match_parse(req, if_match) ||
	    !api_if_none_match_parse(req, if_match + 1)) {
		if (if_match == NULL) {
			api_error(req, 500, 1500, "server: out of memory");
		}
		free(if_match);
		free(wire);
		free(u);
		return if_match == NULL ? KNOT_ENOMEM : ZC_EUSAGE;
	}
	u->if_match = if_match;
	u->if_none_match = if_match + 1;
	u->no_change = true;
	for (size_t i = 0; i < count; i++) {
		u->no_change &= ops[i].op == OP_PATCH &&
		                writes_nothing(ops[i].fields);
	}
	u->import = (skipped != NULL);
	u->keep_deleted = last_id == NULL && skipped == NULL;
	u->keep_written = last_id != NULL && skipped == NULL;
	zc_arena_init(&u->arena, 64 * 1024);
	u->cache = cache != NULL ? cache : &u->own; /* Set up by its owner. */
	if (cache == NULL) {
		api_node_cache_init(u->cache);
	}
	int ret = api_write(req, write_unit, u);
	if (skipped != NULL) {
		*skipped = u->skipped;
	}
	if (ret != ZC_EOK && u->err[0] != '\0' && !req->write_lost) {
		api_error(req, u->status, u->code != 0 ? u->code :
		          u->status == 412 ? 1412 : 1004, "%s", u->err);
	} else if (ret != ZC_EOK) {
		api_error_code(req, ret, "dns_records");
	} else {
		req->version = u->zone.serial;
		req->versioned = true;
	}
	if (last_id != NULL) {
		*last_id = u->last_id;
	}
	zc_arena_deinit(&u->arena);
	if (cache == NULL) {
		api_node_cache_deinit(u->cache);
	}
	free(if_match);
	free(wire);
	free(u);
	return ret;
}

/* Checks the members of a record body (where: "" or "patches[2]."): the
 * members of the record object the API returns, so that a record read
 * can be written back, and Cloudflare's members of one. The read-only
 * ones (the server's) are not read; proxied and settings must say what
 * zonecast does; an "id" must be path_id when that is not 0 (PUT and
 * PATCH of one record). False after a 400 naming the member. */
static bool record_members(api_req_t *req, json_t *f, const char *where,
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

/* Single-record write: POST, PUT, PATCH, DELETE; answers with the record
 * as stored (read back, so the id and times are the store's). */
static void single(api_req_t *req, const records_zone_t *zone, int kind,
                   int64_t id)
{
	json_t *body = NULL;
	if (kind != OP_DELETE && (body = api_body_json(req)) == NULL) {
		return;
	}
	if (body != NULL &&
	    !record_members(req, body, "", kind == OP_POST ? 0 : id,
	                    kind == OP_POST ? 0 : zone->id)) {
		json_decref(body);
		return;
	}
	op_t op = { .op = kind, .id = id, .fields = body };
	int64_t last = 0;
	if (run_unit(req, zone, &op, 1, &last, NULL, NULL) == ZC_EOK) {
		if (kind == OP_DELETE) {
			char rid[33];
			api_id_format(id, rid);
			req->result = json_pack("{s:s}", "id", rid);
		} else {
			answer_written(req, zone, last, &op);
		}
	}
	json_decref(op.written);
	json_decref(body);
}

/* Appends the ops of one batch list ("deletes", "patches", ...). */
static bool batch_ops(api_req_t *req, int64_t zone_id, json_t *body,
                      const char *key, int kind, op_t *ops, size_t *count)
{
	json_t *list = json_object_get(body, key);
	if (list == NULL) {
		return true;
	}
	if (!json_is_array(list)) {
		api_error(req, 400, 1004, "%s: an array is required", key);
		return false;
	}
	size_t i;
	json_t *item;
	json_array_foreach(list, i, item) {
		if (*count == MAX_BATCH || !json_is_object(item)) {
			api_error(req, 400, 1004, "%s[%zu]: an object is required "
			          "(at most %d changes a batch)", key, i, MAX_BATCH);
			return false;
		}
		char where[32];
		snprintf(where, sizeof(where), "%s[%zu].", key, i);
		static const char *const id_only[] = { "id", NULL };
		if (kind == OP_DELETE ?
		    !api_members_only(req, item, where, id_only, "a delete takes "
		                      "the record's id") :
		    !record_members(req, item, where, 0,
		                    kind == OP_POST ? 0 : zone_id)) {
			return false;
		}
		op_t *op = &ops[(*count)++];
		op->op = kind;
		op->fields = item;
		op->list = key;
		op->index = i;
		op->id = 0;
		if (kind != OP_POST) {
			op->id = api_id_parse(json_string_value(json_object_get(item,
			                                                        "id")));
			if (op->id <= 0) {
				api_error(req, 400, 1004, "%s[%zu].id: a record id is "
				          "required", key, i);
				return false;
			}
		}
	}
	return true;
}

/* The result of a batch in Cloudflare's shape: per list, the records as
 * they were deleted and as the unit wrote them, from the node cache it
 * kept in step with its writes (after all its ops: an id written twice
 * is answered twice as it ends). Not read back after the commit: that
 * cost a statement and a decoding per record, and would answer with
 * another request's change to a record made between the commit and the
 * read instead of what this batch did. Written as text (json_text.h):
 * the jansson objects of 1,000 records cost more than the rest of the
 * answer. */
static void batch_result(api_req_t *req, const records_zone_t *zone,
                         op_t *ops, size_t count,
                         const api_node_cache_t *cache)
{
	static const char *const keys[] = { [OP_DELETE] = "deletes",
	                                    [OP_PATCH] = "patches",
	                                    [OP_PUT] = "puts",
	                                    [OP_POST] = "posts" };
	static const int order[] = { OP_DELETE, OP_PATCH, OP_PUT, OP_POST };
	json_text_t t = { 0 };
	json_text_lit(&t, "{");
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		if (k > 0) {
			json_text_lit(&t, ",");
		}
		json_text_str(&t, keys[order[k]]);
		json_text_lit(&t, ":[");
		bool first = true;
		for (size_t i = 0; i < count; i++) {
			if ((int)ops[i].op != order[k]) {
				continue;
			}
			records_record_t rec;
			bool deleted = ops[i].op == OP_DELETE &&
			               ops[i].deleted != NULL;
			bool written = ops[i].op != OP_DELETE &&
			               ops[i].result_id > 0 &&
			               api_node_cache_known(cache,
			                                    ops[i].result_id,
			                                    &rec);
			if (!deleted && !written) {
				continue;
			}
			if (!first) {
				json_text_lit(&t, ",");
			}
			first = false;
			if (deleted) {
				json_text_value(&t, ops[i].deleted);
				api_audit_id(req, json_string_value(
					json_object_get(ops[i].deleted, "id")));
			} else {
				char id[33];
				api_id_format(rec.id, id);
				api_record_json_text(&t, zone, &rec);
				api_audit_id(req, id);
			}
		}
		json_text_lit(&t, "]");
	}
	json_text_lit(&t, "}");
	req->result_text = json_text_take(&t, &req->result_text_len);
	if (req->result_text == NULL) {
		api_error(req, 500, 1500, "server: out of memory");
	}
}

/* POST .../batch: deletes, patches, puts, posts in that order, all or
 * nothing, one zone version. */
static void batch(api_req_t *req, const records_zone_t *zone)
{
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	static const char *const lists[] = { "deletes", "patches", "puts",
	                                     "posts", NULL };
	op_t *ops = calloc(MAX_BATCH, sizeof(*ops));
	size_t count = 0;
	bool ok = ops != NULL &&
	          api_members_only(req, body, "", lists, "a batch takes deletes, "
	                           "patches, puts and posts") &&
	          batch_ops(req, zone->id, body, "deletes", OP_DELETE, ops, &count) &&
	          batch_ops(req, zone->id, body, "patches", OP_PATCH, ops, &count) &&
	          batch_ops(req, zone->id, body, "puts", OP_PUT, ops, &count) &&
	          batch_ops(req, zone->id, body, "posts", OP_POST, ops, &count);
	api_node_cache_t *cache = ok ? malloc(sizeof(*cache)) : NULL;
	if (cache != NULL) {
		api_node_cache_init(cache);
	}
	if (ops == NULL || (ok && cache == NULL)) {
		api_error(req, 500, 1500, "server: out of memory");
	} else if (ok && run_unit(req, zone, ops, count, NULL, NULL,
	                          cache) == ZC_EOK) {
		batch_result(req, zone, ops, count, cache);
	}
	if (cache != NULL) {
		api_node_cache_deinit(cache);
		free(cache);
	}
	for (size_t i = 0; i < count; i++) {
		json_decref(ops[i].deleted);
	}
	free(ops);
	json_decref(body);
}

/* For import_export.c: ops in one unit, as run_unit() runs them. */
int api_dns_records_run(api_req_t *req, const records_zone_t *zone,
                        op_t *ops, size_t count, int64_t *last_id,
                        int *skipped)
{
	return run_unit(req, zone, ops, count, last_id, skipped, NULL);
}

void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count)
{
	records_zone_t zone;
	int ret = records_zone_get(req->rs, zone_id, &zone);
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "zone_id");
		return;
	}
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
	if (count == 0 && get) {
		api_record_list(req, &zone);
	} else if (count == 0 && post) {
		single(req, &zone, OP_POST, 0);
	} else if (count == 1 && strcmp(parts[0], "batch") == 0 && post) {
		batch(req, &zone);
	} else if (count == 1) {
		int64_t id = api_id_parse(parts[0]);
		if (id <= 0) {
			/* Not an id's form: no record has it. */
			api_error(req, 404, RECORD_MISSING_CODE, RECORD_MISSING,
			          "dns_record_id", "of that id");
		} else if (get) {
			get_record(req, &zone, id);
		} else if (strcmp(m, "PUT") == 0) {
			single(req, &zone, OP_PUT, id);
		} else if (strcmp(m, "PATCH") == 0) {
			single(req, &zone, OP_PATCH, id);
		} else if (strcmp(m, "DELETE") == 0) {
			single(req, &zone, OP_DELETE, id);
		} else {
			api_method_not_allowed(req);
		}
	} else {
		api_error(req, 404, 7003, "url: no such resource");
	}
}
