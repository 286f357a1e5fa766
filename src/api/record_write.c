/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The write unit of the dns_records endpoints (dns_records.c) and of the
 * import (import_export.c): one request's ops run in one records-store
 * unit with the zone rules; a record's fields are parsed by
 * record_fields.c.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "api/conditional.h"
#include "api/content.h"
#include "api/format.h"
#include "api/live.h"
#include "api/node_cache.h"
#include "api/record_fields.h"
#include "api/record_json.h"
#include "api/record_unit.h"
#include "api/record_write.h"
#include "api/reply.h"
#include "common/arena.h"
#include "common/error.h"
#include "records/rules.h"

void api_record_write_etag(int64_t id, int64_t modified, char *out, size_t size)
{
	snprintf(out, size, "\"%llx-%llx\"", (unsigned long long)id,
	         (unsigned long long)modified);
}

/* The record id names (op: the op naming it, for the field of a 404;
 * NULL: a record of a node the unit read). */
static int load_record(unit_t *u, int64_t id, const op_t *op, copy_t *c)
{
	c->found = false;
	int ret = api_node_cache_find(u->cache, id, &c->rec);
	if (ret == KNOT_ENOENT) {
		char idtxt[33], field[48];
		api_id_format(id, idtxt);
		/* A batch's op: "deletes[3].id" (its place comes first). */
		snprintf(field, sizeof(field), "%s", op != NULL &&
		         op->list == NULL ? "dns_record_id" : "id");
		if (u->err[0] == '\0') {
			u->code = RECORD_MISSING_CODE;
		}
		return api_record_unit_fail(u, 404, RECORD_MISSING, field,
		                            idtxt);
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
		return api_record_unit_fail(u, 400, "name: outside the zone");
	case RECORDS_RULE_SIGNER_TYPE:
		return removing ?
		       api_record_unit_fail(u, 400, "id: DNSSEC records are "
		                            "managed by the online signer "
		                            "(PATCH .../dnssec)") :
		       api_record_unit_fail(u, 400, "type: DNSSEC records are "
		                            "made by zonecast's online signer "
		                            "(PATCH .../dnssec)");
	case RECORDS_RULE_SOA_ELSEWHERE:
	case RECORDS_RULE_SECOND_SOA:
	case RECORDS_RULE_REMOVES_SOA:
		return api_record_unit_fail(u, 400, "%s: the SOA is managed "
		                            "through the zone's settings",
		                            removing ? "id" : "type");
	case RECORDS_RULE_CNAME_AT_APEX:
		return api_record_unit_fail(u, 400, "name: a CNAME cannot be "
		                            "at the zone apex, which holds the "
		                            "SOA and NS records (RFC 1034 "
		                            "section 3.6.2)");
	case RECORDS_RULE_DS_AT_APEX:
		return api_record_unit_fail(u, 400, "type: a DS record cannot "
		                            "be at the zone apex: it belongs "
		                            "to the parent zone, at the "
		                            "delegation "
		                            "(RFC 4035 section 2.4)");
	case RECORDS_RULE_CNAME_BESIDE_DATA:
	case RECORDS_RULE_DATA_BESIDE_CNAME:
		/* Cloudflare's codes: 81053 for a CNAME where other records
		 * are, 81054 for other data where a CNAME is. */
		if (u->err[0] == '\0') {
			u->code = v == RECORDS_RULE_CNAME_BESIDE_DATA ? 81053 : 81054;
		}
		return api_record_unit_fail(u, 400, "name: a CNAME cannot "
		                            "share its name with other records "
		                            "(RFC 1034 section 3.6.2)");
	case RECORDS_RULE_SECOND_CNAME:
		/* Cloudflare's 81053 ("An A, AAAA, or CNAME record with that
		 * host already exists"), as for a CNAME beside data. */
		if (u->err[0] == '\0') {
			u->code = 81053;
		}
		return api_record_unit_fail(u, 400, "name: a name holds at "
		                            "most one CNAME "
		                            "(RFC 2181 section 10.1)");
	case RECORDS_RULE_SECOND_DNAME:
		return api_record_unit_fail(u, 400, "name: a name holds at "
		                            "most one DNAME "
		                            "(RFC 6672 section 2.4)");
	case RECORDS_RULE_DUPLICATE:
		if (u->err[0] == '\0') {
			u->code = 81058; /* Cloudflare's, which clients test. */
		}
		return api_record_unit_fail(u, 400, "content: an identical "
		                            "record already exists (names in "
		                            "the content compare ignoring "
		                            "case, RFC 4034 section 6.2)");
	case RECORDS_RULE_LAST_APEX_NS:
		return change == DELETING ?
		       api_record_unit_fail(u, 400, "id: the last NS record at "
		                            "the zone apex cannot be deleted") :
		       api_record_unit_fail(u, 400, "name: the last NS record "
		                            "at the zone apex cannot be "
		                            "moved away");
	case RECORDS_RULE_TOO_MANY_TYPES:
		return api_record_unit_fail(u, 400, "type: a name holds at "
		                            "most %d record types",
		                            RECORDS_RULES_MAX_TYPES);
	case RECORDS_RULE_RRSET_FULL:
		return api_record_unit_fail(u, 400, "content: an RRset holds "
		                            "at most %d records",
		                            RECORDS_RULES_MAX_RRSET);
	case RECORDS_RULE_RRSET_TOO_LARGE:
		return api_record_unit_fail(u, 400, "content: the RRset would "
		                            "be larger than one DNS message "
		                            "carries (%d octets of records, "
		                            "its signature aside)",
		                            RECORDS_RULES_MAX_RRSET_OCTETS);
	default:
		return api_record_unit_fail(u, 400, "content: %s",
		                            records_rules_reason(v));
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
		api_name_format(u->wire->owner, owner, sizeof(owner));
		api_name_format(at, other, sizeof(other));
		return api_record_unit_fail(u, 400, "name: %s is below the "
		                            "DNAME at %s, where no record may "
		                            "be (RFC 6672 section 2.4)", owner,
		                            other);
	}
	if (u->wire->type != KNOT_RRTYPE_DNAME) {
		return ZC_EOK;
	}
	ret = records_data_below(rs, &u->zone, u->wire->owner, exclude, &found,
	                         at);
	if (ret == ZC_EOK && found) {
		api_name_format(u->wire->owner, owner, sizeof(owner));
		api_name_format(at, other, sizeof(other));
		return api_record_unit_fail(u, 400, "name: a DNAME at %s would "
		                            "have records below it, such as at "
		                            "%s (RFC 6672 section 2.4)", owner,
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
	api_record_write_etag(old->rec.id, old->rec.modified_on, etag,
	                      sizeof(etag));
	if (!api_if_match_ok(u->if_match, etag)) {
		return api_record_unit_fail(u, 412, "If-Match: the record "
		                            "changed since it was read (no "
		                            "entity tag given is its ETag)");
	}
	if (!api_if_none_match_ok(u->if_none_match, etag)) {
		return api_record_unit_fail(u, 412, "If-None-Match: the record "
		                            "exists%s; nothing was changed",
		                            u->if_none_match->any ? "" :
		                            " and has one of the entity "
		                            "tags given");
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
		ret = api_record_fields_parse(u, op->fields, NULL);
		return ret == ZC_EOK ? write_record(rs, u, op->fields, NULL) : ret;
	case OP_PUT:
		ret = api_record_fields_parse(u, op->fields, NULL);
		break;
	case OP_PATCH:
		ret = api_record_fields_parse(u, op->fields, &old);
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
		u->op = op;
		ret = run_op(rs, u, op);
		u->op = NULL;
		op->result_id = u->last_id;
		json_decref(op->deleted);
		op->deleted = u->deleted;
		records_record_t rec;
		if (ret == ZC_EOK && u->keep_written && op->op != OP_DELETE &&
		    op->result_id > 0 &&
		    api_node_cache_known(u->cache, op->result_id, &rec)) {
			json_decref(op->written);
			op->written = api_record_json(&u->zone, &rec);
			api_record_write_etag(rec.id, rec.modified_on, op->etag,
			                      sizeof(op->etag));
		}
	}
	return ret;
}

/* Runs ops in one unit; fills errors or the version into the response.
 * *last_id receives the record a single-record write touched. cache (set
 * up and torn down by the caller; NULL: the unit's own) is left holding
 * what the unit's committed run read and wrote. */
int api_record_write_run(api_req_t *req, const records_zone_t *zone, op_t *ops,
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
