/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones: list, create, get, patch settings, delete; the
 * routes of a zone's resources (records, DNSSEC, TSIG keys, propagation
 * receipts and the retry of a quarantined zone, live.c). A zone's
 * deletion is admin/'s (admin_zone_delete()), as `zonecast zone delete`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>

#include "admin/admin.h"
#include "api/auth.h"
#include "api/content.h"
#include "api/dns_records.h"
#include "api/dnssec.h"
#include "api/format.h"
#include "api/import_export.h"
#include "api/live.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/secondaries.h"
#include "api/tsig_keys.h"
#include "api/zones.h"
#include "common/error.h"
#include "dns/name.h"

static int add_ns(const records_record_t *rec, void *ctx)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	api_name_format(rec->rdata, name, sizeof(name));
	json_array_append_new(ctx, json_string(name));
	return 0;
}

static json_t *zone_json(api_req_t *req, const records_zone_t *zone)
{
	char id[33], name[KNOT_DNAME_TXT_MAXLEN + 1];
	api_id_format(zone->id, id);
	api_name_format(zone->apex, name, sizeof(name));
	json_t *ns = json_array();
	records_record_foreach(req->rs, zone->id, zone->apex, KNOT_RRTYPE_NS,
	                       add_ns, ns);
	json_t *quarantine = api_quarantine_json(req, zone->id);
	/* owner, account and plan as Cloudflare's clients expect them. */
	return json_pack("{s:s, s:s, s:s, s:b, s:s, s:o, s:o, s:o, s:I, s:I,"
	                 " s:s, s:o, s:{s:n, s:s, s:s}, s:{s:s, s:s},"
	                 " s:{s:s, s:s}}",
	                 "id", id, "name", name, "status",
	                 json_is_null(quarantine) ? "active" : "quarantined",
	                 "paused", 0, "type", "full", "name_servers", ns,
	                 "created_on", api_time(zone->created_on),
	                 "modified_on", api_time(zone->modified_on),
	                 "serial", (json_int_t)zone->serial,
	                 "default_ttl", (json_int_t)zone->default_ttl,
	                 "serial_policy", zone->serial_policy ==
	                 RECORDS_SERIAL_UNIXTIME ? "unixtime" : "increment",
	                 "quarantine", quarantine,
	                 "owner", "id", "type", "user", "name", "zonecast",
	                 "account", "id", "", "name", "zonecast",
	                 "plan", "id", "", "name", "zonecast");
}

/* Cloudflare's operators of List Zones' name filter ("contains:x"). */
typedef enum { NAME_EQUAL, NAME_NOT_EQUAL, NAME_STARTS, NAME_ENDS,
               NAME_CONTAINS } name_op_t;

/* A zone the list's filters kept: its id and what an order sorts by. */
typedef struct {
	int64_t id;
	bool quarantined;
	uint32_t rank;           /* Its place in name order. */
} kept_t;

typedef struct {
	api_req_t *req;
	/* ?name=, compared on wire names (any spelling of the zone's
	 * name, with its final dot or not); filter_ok false: no zone has
	 * that name, as it is none. */
	const char *name_filter;
	uint8_t filter[KNOT_DNAME_MAXLEN];
	bool filter_ok;
	name_op_t op;            /* ?name=OP:VALUE, Cloudflare's operators. */
	bool case_sensitive;
	char operand[KNOT_DNAME_TXT_MAXLEN + 1];
	const char *status;      /* ?status=: "active", "quarantined"... */
	bool any;                /* ?match=any: one filter is enough. */
	bool need_status;        /* A filter or the order reads it. */
	kept_t *kept;
	size_t count, cap;
	int ret;
} list_t;

/* Whether the zone's name meets ?name= (equal: any spelling of the
 * name; the text operators on its name as listed, without the final
 * dot, ignoring case unless _case_sensitive). */
static bool name_matches(const list_t *l, const records_zone_t *zone)
{
	if (l->op == NAME_EQUAL || l->op == NAME_NOT_EQUAL) {
		bool equal = l->filter_ok &&
		             knot_dname_is_equal(l->filter, zone->apex);
		return equal == (l->op == NAME_EQUAL);
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	api_name_format(zone->apex, name, sizeof(name));
	const char *v = l->name_filter;
	size_t n = strlen(name), m = strlen(v);
	if (m > n) {
		return false;
	}
	int (*cmp)(const char *, const char *, size_t) =
		l->case_sensitive ? strncmp : strncasecmp;
	switch (l->op) {
	case NAME_STARTS:
		return cmp(name, v, m) == 0;
	case NAME_ENDS:
		return cmp(name + n - m, v, m) == 0;
	default:
		for (size_t i = 0; i + m <= n; i++) {
			if (cmp(name + i, v, m) == 0) {
				return true;
			}
		}
		return false;
	}
}

/* Splits ?name=OP:VALUE into l->op and the value; a name without a
 * known operator is compared whole (equal). */
static void read_name_op(list_t *l)
{
	static const struct {
		const char *prefix;
		name_op_t op;
		bool case_sensitive;
	} ops[] = {
		{ "equal:", NAME_EQUAL, false },
		{ "not_equal:", NAME_NOT_EQUAL, false },
		{ "starts_with_case_sensitive:", NAME_STARTS, true },
		{ "ends_with_case_sensitive:", NAME_ENDS, true },
		{ "contains_case_sensitive:", NAME_CONTAINS, true },
		{ "starts_with:", NAME_STARTS, false },
		{ "ends_with:", NAME_ENDS, false },
		{ "contains:", NAME_CONTAINS, false },
	};
	for (size_t i = 0; l->name_filter != NULL &&
	     i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t len = strlen(ops[i].prefix);
		if (strncmp(l->name_filter, ops[i].prefix, len) == 0) {
			l->name_filter += len;
			l->op = ops[i].op;
			l->case_sensitive = ops[i].case_sensitive;
			/* Names are listed without their final dot: a text
			 * operator's final dot goes too (ends_with:test.). */
			size_t n = strlen(l->name_filter);
			if (l->op != NAME_EQUAL && l->op != NAME_NOT_EQUAL &&
			    n > 1 && l->name_filter[n - 1] == '.' &&
			    l->name_filter[n - 2] != '\\') {
				snprintf(l->operand, sizeof(l->operand), "%.*s",
				         (int)(n - 1), l->name_filter);
				l->name_filter = l->operand;
			}
			return;
		}
	}
}

/* Whether the zone passes the filters given (match=all: each of them;
 * match=any: one). ?account.id= and ?account.name= name zonecast's one
 * account whatever they say: they pass every zone. */
static bool passes(list_t *l, const records_zone_t *zone, bool quarantined)
{
	int given = 0, met = 0;
	if (l->name_filter != NULL) {
		given++;
		met += name_matches(l, zone);
	}
	if (l->status != NULL) {
		given++;
		met += strcmp(l->status, quarantined ? "quarantined" :
		              "active") == 0;
	}
	return given == 0 || (l->any ? met > 0 : met == given);
}

static int list_zone(const records_zone_t *zone, void *ctx)
{
	list_t *l = ctx;
	if (l->req->token_zone != 0 && l->req->token_zone != zone->id) {
		return 0;
	}
	json_t *q = l->need_status ? api_quarantine_json(l->req, zone->id) :
	            json_null();
	bool quarantined = !json_is_null(q);
	json_decref(q);
	if (!passes(l, zone, quarantined)) {
		return 0;
	}
	if (l->count == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		kept_t *grown = realloc(l->kept, cap * sizeof(*grown));
		if (grown == NULL) {
			l->ret = KNOT_ENOMEM;
			return KNOT_ENOMEM;
		}
		l->kept = grown;
		l->cap = cap;
	}
	l->kept[l->count] = (kept_t){ .id = zone->id,
	                              .quarantined = quarantined,
	                              .rank = (uint32_t)l->count };
	l->count++;
	return 0;
}

/* ?order=status: active before quarantined, then by name. */
static int by_status(const void *a, const void *b)
{
	const kept_t *x = a, *y = b;
	if (x->quarantined != y->quarantined) {
		return x->quarantined - y->quarantined;
	}
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Reads ?status=, ?match=, ?order= and ?direction= (Cloudflare's List
 * Zones); false (answered 400) when one is not of their values. */
static bool read_order(api_req_t *req, list_t *l, bool *status_order,
                       bool *desc)
{
	const char *match = api_query_arg(req, "match");
	const char *order = api_query_arg(req, "order");
	const char *dir = api_query_arg(req, "direction");
	l->status = api_query_arg(req, "status");
	static const char *const statuses[] = {
		"initializing", "pending", "active", "moved", "quarantined",
	};
	bool known = l->status == NULL;
	for (size_t i = 0; !known && i < 5; i++) {
		known = strcmp(l->status, statuses[i]) == 0;
	}
	if (!known) {
		api_error(req, 400, 1004, "status: initializing, pending, active "
		          "or moved (zonecast's zones are active, or quarantined)");
		return false;
	}
	if (match != NULL && strcmp(match, "all") != 0 &&
	    strcmp(match, "any") != 0) {
		api_error(req, 400, 1004, "match: all or any");
		return false;
	}
	l->any = match != NULL && strcmp(match, "any") == 0;
	if (order != NULL && strcmp(order, "name") != 0 &&
	    strcmp(order, "status") != 0 && strcmp(order, "account.id") != 0 &&
	    strcmp(order, "account.name") != 0) {
		api_error(req, 400, 1004, "order: name, status, account.id or "
		          "account.name");
		return false;
	}
	if (dir != NULL && strcmp(dir, "asc") != 0 && strcmp(dir, "desc") != 0) {
		api_error(req, 400, 1004, "direction: asc or desc");
		return false;
	}
	*status_order = order != NULL && strcmp(order, "status") == 0;
	*desc = dir != NULL && strcmp(dir, "desc") == 0;
	l->need_status = l->status != NULL || *status_order;
	return true;
}

static void list_zones(api_req_t *req)
{
	static const char *const params[] = {
		"name", "status", "match", "order", "direction", "account.id",
		"account.name", "page", "per_page", NULL,
	};
	long page, per_page;
	bool status_order, desc;
	list_t l = { .req = req, .name_filter = api_query_arg(req, "name") };
	if (!api_args_only(req, params) || !api_paging(req, &page, &per_page) ||
	    !read_order(req, &l, &status_order, &desc)) {
		return;
	}
	read_name_op(&l);
	if (l.name_filter != NULL && l.name_filter[0] == '\0') {
		api_error(req, 400, 1004, "name: empty (a zone's name is "
		          "required)");
		return;
	}
	l.filter_ok = l.name_filter != NULL &&
	              api_fqdn_parse(l.name_filter, l.filter);
	int ret = records_zone_list(req->rs, false, list_zone, &l);
	ret = ret != ZC_EOK ? ret : l.ret;
	if (ret == ZC_EOK && status_order) {
		qsort(l.kept, l.count, sizeof(*l.kept), by_status);
	}
	json_t *list = json_array();
	for (long i = (page - 1) * per_page; ret == ZC_EOK &&
	     i < (long)l.count && i < page * per_page; i++) {
		const kept_t *k = &l.kept[desc ? l.count - 1 - (size_t)i :
		                          (size_t)i];
		records_zone_t zone;
		ret = records_zone_get(req->rs, k->id, &zone);
		if (ret == ZC_ENOZONE) {
			ret = ZC_EOK; /* Deleted meanwhile: as if listed before. */
			continue;
		}
		if (ret == ZC_EOK) {
			json_array_append_new(list, zone_json(req, &zone));
		}
	}
	free(l.kept);
	api_list_result(req, ret, list, page, per_page, (long)l.count, "zones");
}

/* A new zone's SOA rdata: primary NS, hostmaster, serial 1, RFC 1912
 * timers (refresh 2 h, retry 1 h, expire 2 weeks, negative TTL 5 min). */
/* (The serial starts at the Unix time; see below.) */
static uint16_t make_soa(const knot_dname_t *primary, const knot_dname_t *rname,
                         uint8_t *out)
{
	size_t p = knot_dname_size(primary), r = knot_dname_size(rname);
	memcpy(out, primary, p);
	memcpy(out + p, rname, r);
	/* Serial: the current Unix time, so a zone deleted and created again
	 * never goes back to a serial its secondaries already hold. */
	uint32_t f[5] = { (uint32_t)time(NULL), 7200, 3600, 1209600, 300 };
	uint8_t *q = out + p + r;
	for (int i = 0; i < 5; i++) {
		q[4 * i] = (uint8_t)(f[i] >> 24);
		q[4 * i + 1] = (uint8_t)(f[i] >> 16);
		q[4 * i + 2] = (uint8_t)(f[i] >> 8);
		q[4 * i + 3] = (uint8_t)f[i];
	}
	return (uint16_t)(p + r + 20);
}

typedef struct {
	api_t *api;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	records_zone_t zone;
} create_t;

/* Names for new zones: from the config, else ns1/ns2 inside the zone. */
static int create_unit(records_store_t *rs, void *ctx)
{
	create_t *c = ctx;
	uint8_t ns[8][KNOT_DNAME_MAXLEN];
	const knot_dname_t *nsp[8];
	unsigned count = 0;
	const char *const *cfg_ns = c->api->cfg.ns;
	char text[2 * KNOT_DNAME_TXT_MAXLEN + 16];
	char apex_txt[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(apex_txt, c->apex, sizeof(apex_txt));
	for (; cfg_ns != NULL && cfg_ns[count] != NULL && count < 8; count++) {
		if (knot_dname_from_str(ns[count], cfg_ns[count], KNOT_DNAME_MAXLEN)
		    == NULL) {
			return ZC_EINVAL_CONFIG;
		}
		nsp[count] = ns[count];
	}
	for (; count < 2; count++) {
		snprintf(text, sizeof(text), "ns%u.%s", count + 1, apex_txt);
		if (knot_dname_from_str(ns[count], text, KNOT_DNAME_MAXLEN) == NULL) {
			return ZC_EUSAGE;
		}
		nsp[count] = ns[count];
	}
	uint8_t rname[KNOT_DNAME_MAXLEN];
	if (c->api->cfg.hostmaster != NULL) {
		snprintf(text, sizeof(text), "%s", c->api->cfg.hostmaster);
	} else {
		snprintf(text, sizeof(text), "hostmaster.%s", apex_txt);
	}
	if (knot_dname_from_str(rname, text, sizeof(rname)) == NULL) {
		return ZC_EUSAGE;
	}
	uint8_t soa[2 * KNOT_DNAME_MAXLEN + 20];
	uint16_t soa_len = make_soa(nsp[0], rname, soa);
	uint32_t ttl = c->api->cfg.default_ttl ? c->api->cfg.default_ttl : 3600;
	int ret = records_zone_create(rs, c->apex, ttl, soa, soa_len, nsp, count,
	                              &c->zone);
	if (ret == ZC_EOK && c->api->cfg.serial_policy != 0) {
		ret = records_zone_set_serial_policy(rs, &c->zone,
		                                     c->api->cfg.serial_policy);
	}
	return ret;
}

/* A new zone's name, as a record's name is taken (api_content_parse()):
 * spaces and control characters only as \DDD. A wildcard cannot be a
 * zone: its apex NS would stand at a wildcard name (RFC 4592 §4.2), which
 * no record rule lets stand, and its export would not import.
 * NULL when taken, else why not. */
static const char *api_zone_name_parse(const char *name,
                                       uint8_t apex[KNOT_DNAME_MAXLEN])
{
	if (name == NULL || name[0] == '\0') {
		return "a valid domain name is required";
	}
	for (const char *c = name; *c != '\0'; c++) {
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			return "a space or control character (write it as \\DDD)";
		}
	}
	if (!api_fqdn_parse(name, apex)) {
		return "a valid domain name is required";
	}
	if (knot_dname_is_wildcard(apex)) {
		return "a wildcard ('*' as the first label) cannot be a zone";
	}
	return NULL;
}

static void create_zone(api_req_t *req)
{
	if (!api_allowed(req, 0, true)) {
		return;
	}
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	/* Cloudflare's own members: "account" (zonecast has one; not read),
	 * "type" "full" and "jump_start" false are what zonecast does. */
	static const char *const members[] = { "name", "account", "type",
	                                       "jump_start", NULL };
	json_t *type = json_object_get(body, "type");
	json_t *jump = json_object_get(body, "jump_start");
	json_t *account = json_object_get(body, "account");
	const char *why_not = NULL;
	if (!api_members_only(req, body, "", members, "a zone takes name, "
	                      "and Cloudflare's account, type and jump_start")) {
		why_not = "";
	} else if (type != NULL && !json_is_null(type) &&
	           (!json_is_string(type) ||
	            strcmp(json_string_value(type), "full") != 0)) {
		why_not = "type: \"full\" only (zonecast is the zone's primary)";
	} else if (jump != NULL && !json_is_null(jump) && !json_is_false(jump)) {
		why_not = "jump_start: false only (zonecast does not scan for "
		          "existing records)";
	} else if (account != NULL && !json_is_null(account) &&
	           !json_is_object(account)) {
		why_not = "account: an object is required";
	}
	if (why_not != NULL) {
		if (why_not[0] != '\0') {
			api_error(req, 400, 1004, "%s", why_not);
		}
		json_decref(body);
		return;
	}
	const char *name = json_string_value(json_object_get(body, "name"));
	create_t c = { .api = req->api };
	const char *why = api_zone_name_parse(name, c.apex);
	if (why != NULL) {
		api_error(req, 400, 1097, "name: %s", why);
		json_decref(body);
		return;
	}
	json_decref(body);
	int ret = api_write(req, create_unit, &c);
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "name");
		return;
	}
	req->status = 200;
	req->version = c.zone.serial;
	req->versioned = true;
	req->live_zone_id = c.zone.id;
	memcpy(req->live_apex, c.zone.apex, knot_dname_size(c.zone.apex));
	req->result = zone_json(req, &c.zone);
}

/* Settings of PATCH /zones/{id}, checked before the unit runs. */
typedef struct {
	records_zone_t zone;
	int64_t default_ttl;    /* -1: unchanged */
	int64_t soa[5];         /* refresh, retry, expire, minimum, ttl; -1 */
	int serial_policy;      /* -1: unchanged */
	int64_t soa_id;
	uint32_t soa_ttl;
	uint16_t soa_len;
	uint8_t soa_rdata[2 * KNOT_DNAME_MAXLEN + 20];
} patch_t;

static const char *const soa_fields[] = { "refresh", "retry", "expire",
                                          "minimum", "ttl" };

static int copy_soa(const records_record_t *rec, void *ctx)
{
	patch_t *p = ctx;
	if (rec->rdata_len <= sizeof(p->soa_rdata) && rec->rdata_len >= 22) {
		p->soa_id = rec->id;
		p->soa_ttl = rec->ttl;
		p->soa_len = rec->rdata_len;
		memcpy(p->soa_rdata, rec->rdata, rec->rdata_len);
	}
	return 1;
}

/* Rewrites the SOA (RFC 1035 §3.3.13 fields) keeping its record id: a
 * delete and a create in the log, which the builder turns into a full
 * build of the zone. */
static int rewrite_soa(records_store_t *rs, patch_t *p)
{
	p->soa_id = 0; /* Afresh: the unit may run twice (writer.h). */
	int ret = records_record_foreach(rs, p->zone.id, p->zone.apex,
	                                 KNOT_RRTYPE_SOA, copy_soa, p);
	if (ret != ZC_EOK || p->soa_id == 0) {
		return ret != ZC_EOK ? ret : KNOT_ENOENT;
	}
	uint8_t *q = p->soa_rdata + p->soa_len - 16;
	for (int i = 0; i < 4; i++) {
		if (p->soa[i] >= 0) {
			uint32_t x = (uint32_t)p->soa[i];
			q[4 * i] = x >> 24, q[4 * i + 1] = x >> 16;
			q[4 * i + 2] = x >> 8, q[4 * i + 3] = x;
		}
	}
	records_record_t rec = { .id = p->soa_id, .owner = p->zone.apex,
	                         .type = KNOT_RRTYPE_SOA,
	                         .ttl = p->soa[4] >= 0 ? (uint32_t)p->soa[4] :
	                                p->soa_ttl,
	                         .rdata = p->soa_rdata, .rdata_len = p->soa_len };
	ret = records_record_delete(rs, &p->zone, p->soa_id);
	return ret == ZC_EOK ? records_record_insert(rs, &p->zone, &rec) : ret;
}

static int patch_unit(records_store_t *rs, void *ctx)
{
	patch_t *p = ctx;
	int ret = records_zone_get(rs, p->zone.id, &p->zone);
	bool soa = false;
	for (int i = 0; i < 5; i++) {
		soa |= p->soa[i] >= 0;
	}
	if (p->serial_policy < 0 && p->default_ttl < 0 && !soa) {
		/* A PATCH that names no setting changes nothing: no version
		 * (the answer's is the zone's current one). */
		return ret;
	}
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, &p->zone);
	}
	if (ret == ZC_EOK && p->serial_policy >= 0) {
		ret = records_zone_set_serial_policy(rs, &p->zone,
		                                     p->serial_policy);
	}
	if (ret == ZC_EOK && p->default_ttl >= 0) {
		ret = records_zone_set_default_ttl(rs, &p->zone,
		                                   (uint32_t)p->default_ttl);
	}
	if (ret == ZC_EOK && soa) {
		ret = rewrite_soa(rs, p);
	}
	if (ret == ZC_EOK) {
		ret = records_log_zone_event(rs, &p->zone,
		                             RECORDS_CHANGE_ZONE_SETTINGS);
	}
	return ret;
}

/* Reads an optional number of seconds; false after recording an error. */
static bool seconds(api_req_t *req, json_t *obj, const char *key,
                    const char *field, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	*out = -1;
	if (v == NULL) {
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > INT32_MAX) {
		api_error(req, 400, 1004, "%s: a number of seconds (0 to 2^31-1) "
		          "is required", field);
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

static void patch_zone(api_req_t *req, records_zone_t *zone)
{
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	static const char *const members[] = { "default_ttl", "soa",
	                                       "serial_policy", NULL };
	static const char *const soa_members[] = { "refresh", "retry",
	                                           "expire", "minimum", "ttl",
	                                           NULL };
	patch_t *p = calloc(1, sizeof(*p));
	p->zone = *zone;
	json_t *soa = json_object_get(body, "soa");
	bool ok = api_members_only(req, body, "", members, "zone settings are "
	                           "default_ttl, soa and serial_policy") &&
	          (!json_is_object(soa) ||
	           api_members_only(req, soa, "soa.", soa_members, "the SOA "
	                            "takes refresh, retry, expire, minimum and "
	                            "ttl")) &&
	          seconds(req, body, "default_ttl", "default_ttl",
	                  &p->default_ttl);
	json_t *policy = json_object_get(body, "serial_policy");
	const char *ptext = json_string_value(policy);
	p->serial_policy = policy == NULL ? -1 :
	                   ptext && strcmp(ptext, "increment") == 0 ? 0 :
	                   ptext && strcmp(ptext, "unixtime") == 0 ? 1 : -2;
	if (ok && p->serial_policy == -2) {
		api_error(req, 400, 1004, "serial_policy: \"increment\" or "
		          "\"unixtime\"");
		ok = false;
	}
	if (soa != NULL && !json_is_object(soa)) {
		api_error(req, 400, 1004, "soa: an object is required");
		ok = false;
	}
	for (int i = 0; i < 5 && ok; i++) {
		char field[32];
		snprintf(field, sizeof(field), "soa.%s", soa_fields[i]);
		ok = seconds(req, soa, soa_fields[i], field, &p->soa[i]);
	}
	json_decref(body);
	if (ok) {
		int ret = api_write(req, patch_unit, p);
		if (ret != ZC_EOK) {
			api_error_code(req, ret, "zone");
		} else {
			req->version = p->zone.serial;
			req->versioned = true;
			req->result = zone_json(req, &p->zone);
		}
	}
	free(p);
}

/* Whether a write to this resource changes what the zone serves, so a
 * quarantined zone refuses it: records, settings, DNSSEC. Deleting the
 * zone, its retry and its TSIG keys (not served from the edge) go on. */
static bool takes_no_writes(char **parts, int count, const char *method)
{
	if (count == 2) {
		return strcmp(method, "DELETE") != 0;
	}
	return strcmp(parts[2], "dns_records") == 0 ||
	       strcmp(parts[2], "dnssec") == 0;
}

void api_zones(api_req_t *req, char **parts, int count)
{
	const char *m = req->method;
	if (count == 1) {
		if (strcmp(m, "GET") == 0) {
			list_zones(req);
		} else if (strcmp(m, "POST") == 0) {
			create_zone(req);
		} else {
			api_method_not_allowed(req);
		}
		return;
	}
	records_zone_t zone;
	int64_t id = api_id_parse(parts[1]);
	int ret = id > 0 ? records_zone_get(req->rs, id, &zone) : ZC_ENOZONE;
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "zone_id");
		return;
	}
	bool write = strcmp(m, "GET") != 0;
	if (!api_allowed(req, id, write)) {
		return;
	}
	req->live_zone_id = zone.id;
	memcpy(req->live_apex, zone.apex, knot_dname_size(zone.apex));
	if (write && takes_no_writes(parts, count, m) &&
	    !api_zone_writable(req, &zone)) {
		return;
	}
	if (count == 3 && strcmp(parts[2], "retry") == 0 &&
	    strcmp(m, "POST") == 0) {
		api_zone_retry(req, &zone, zone_json);
		return;
	}
	if (count == 4 && strcmp(parts[2], "dns_records") == 0 &&
	    strcmp(parts[3], "import") == 0 && strcmp(m, "POST") == 0) {
		api_dns_records_import(req, &zone);
		return;
	}
	if (count == 4 && strcmp(parts[2], "dns_records") == 0 &&
	    strcmp(parts[3], "export") == 0 && strcmp(m, "GET") == 0) {
		api_dns_records_export(req, &zone);
		return;
	}
	if (count >= 3 && strcmp(parts[2], "dns_records") == 0) {
		api_dns_records(req, id, parts + 3, count - 3);
		return;
	}
	if (count == 3 && strcmp(parts[2], "dnssec") == 0) {
		api_dnssec(req, &zone);
		return;
	}
	if (count == 3 && strcmp(parts[2], "secondaries") == 0) {
		api_secondaries(req, &zone);
		return;
	}
	if (count >= 3 && strcmp(parts[2], "tsig_keys") == 0) {
		api_tsig_keys(req, &zone, parts + 3, count - 3);
		return;
	}
	if (count == 3 && strcmp(parts[2], "propagation") == 0 &&
	    strcmp(m, "GET") == 0) {
		api_propagation(req, &zone);
		return;
	}
	if (count != 2) {
		api_error(req, 404, 7003, "url: no such resource");
	} else if (strcmp(m, "GET") == 0) {
		req->result = zone_json(req, &zone);
	} else if (strcmp(m, "PATCH") == 0) {
		patch_zone(req, &zone);
	} else if (strcmp(m, "DELETE") == 0) {
		uint64_t seq;
		ret = admin_zone_delete(req->api->writer, &zone, &seq);
		if (ret != ZC_EOK) {
			api_error_code(req, ret, "zone_id");
		} else {
			char zid[33];
			api_id_format(zone.id, zid);
			req->result = json_pack("{s:s}", "id", zid);
		}
	} else {
		api_method_not_allowed(req);
	}
}
