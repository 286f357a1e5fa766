/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RFC 2136 inside the group committer: prerequisites (§3.2) and the
 * update section (§3.4) against the records store, plus the format
 * prescans done before a message is queued.
 *
 * Every added or deleted record goes through records_record_insert() and
 * records_record_delete(), so it has an id, shows in the API and is logged
 * for the builder and the IXFR journal like an API change. The serial
 * moves once per message, before its first write, and not at all when
 * nothing changes (§3.6).
 *
 * What a zone may hold (CNAME alone, duplicates in canonical form, one TTL
 * per RRset, the apex SOA and NS, the signer's types) is records/rules.h's
 * to say; this file maps its verdicts to RFC 2136's outcomes: ignored
 * (§3.4.2.2-4) or, for the signer's types, REFUSED.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset.h>
#include <libknot/rrtype/soa.h>

#include "common/error.h"
#include "common/log.h"
#include "records/rules.h"
#include "update/internal.h"
#include "zonefile/zonefile.h"

/* --- Prescans (on the DNS worker's thread) --- */

static bool is_meta(uint16_t type)
{
	return type == KNOT_RRTYPE_ANY || type == KNOT_RRTYPE_AXFR ||
	       type == KNOT_RRTYPE_IXFR || type == 253 /* MAILB */ ||
	       type == 254 /* MAILA */ || type == KNOT_RRTYPE_OPT ||
	       type == KNOT_RRTYPE_TSIG || type == 249 /* TKEY */;
}

static bool in_zone(const update_msg_t *m, const knot_dname_t *owner)
{
	return records_rules_in_zone(m->zone.apex, owner);
}

static uint16_t rdlen(const knot_rrset_t *rr)
{
	return rr->rrs.count > 0 ? rr->rrs.rdata->len : 0;
}

/* One prerequisite's form (RFC 2136 §3.2.1-3.2.4, §3.2.5's order): TTL
 * 0, owner in the zone, then by class: ANY or NONE without rdata, IN (the
 * zone's class); a meta-type only as ANY with class ANY or NONE. */
static uint8_t prereq_format(const knot_rrset_t *rr, const knot_dname_t *apex)
{
	if (rr->ttl != 0) {
		return KNOT_RCODE_FORMERR;
	}
	if (!dns_name_is_under(rr->owner, apex)) {
		return KNOT_RCODE_NOTZONE;
	}
	switch (rr->rclass) {
	case KNOT_CLASS_ANY:
	case KNOT_CLASS_NONE:
		if (rdlen(rr) != 0 || (is_meta(rr->type) &&
		                       rr->type != KNOT_RRTYPE_ANY)) {
			return KNOT_RCODE_FORMERR;
		}
		return KNOT_RCODE_NOERROR;
	case KNOT_CLASS_IN:
		return is_meta(rr->type) ? KNOT_RCODE_FORMERR : KNOT_RCODE_NOERROR;
	default:
		return KNOT_RCODE_FORMERR;
	}
}

uint8_t update_prereq_prescan(const knot_pktsection_t *sec,
                              const knot_dname_t *apex, bool *final)
{
	bool state_before = false;
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		uint8_t rcode = prereq_format(rr, apex);
		if (rcode != KNOT_RCODE_NOERROR) {
			/* An existence check before it may fail first. */
			*final = !state_before;
			return rcode;
		}
		state_before |= rr->rclass != KNOT_CLASS_IN;
	}
	*final = true;
	return KNOT_RCODE_NOERROR;
}

/* An added record's rdata and TTL (zonefile_record_check()): FORMERR for
 * rdata malformed for its type, as BIND's parser answers; REFUSED for
 * what zonecast does not store (a meta-type, a TTL over 2^31-1, rdata
 * without a master-file form that reads back the same). Logged, as the
 * response carries no reason. */
static uint8_t check_added(const update_msg_t *m, const knot_rrset_t *rr,
                           bool log)
{
	knot_rdata_t *rd = rr->rrs.rdata;
	for (uint16_t i = 0; i < rr->rrs.count; i++) {
		const char *why = NULL;
		int ret = zonefile_record_check(rr->owner, rr->type, rr->ttl,
		                                rd->data,
		                                rd->len, &why);
		if (ret != ZC_EOK && log) {
			char owner[KNOT_DNAME_TXT_MAXLEN + 1], type[32];
			knot_dname_to_str(owner, rr->owner, sizeof(owner));
			knot_rrtype_to_string(rr->type, type, sizeof(type));
			zc_info("update %s: %s %s not added: %s", m->zone.name,
			        owner, type, why);
		}
		if (ret == ZC_ERDATA) {
			return KNOT_RCODE_FORMERR;
		}
		if (ret != ZC_EOK) {
			return ret == ZC_EUNSTORABLE ? KNOT_RCODE_REFUSED :
			       KNOT_RCODE_SERVFAIL;
		}
		rd = knot_rdataset_next(rd);
	}
	return KNOT_RCODE_NOERROR;
}

/* Whether each rdata of a delete is well formed for its type (an empty
 * A is not): malformed, the message is (FORMERR, as BIND answers); a
 * record zonecast would not store is merely not there. */
static bool well_formed(const knot_rrset_t *rr)
{
	knot_rdata_t *rd = rr->rrs.rdata;
	for (uint16_t i = 0; i < rr->rrs.count; i++) {
		const char *why = NULL;
		if (zonefile_record_check(rr->owner, rr->type, 0, rd->data,
		                          rd->len, &why) == ZC_ERDATA) {
			return false;
		}
		rd = knot_rdataset_next(rd);
	}
	return true;
}

uint8_t update_prescan(const update_msg_t *m, bool log)
{
	const knot_pktsection_t *sec = knot_pkt_section(m->pkt, KNOT_AUTHORITY);
	uint8_t refusal = KNOT_RCODE_NOERROR;
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (!in_zone(m, rr->owner)) {
			return KNOT_RCODE_NOTZONE;
		}
		uint8_t rcode;
		switch (rr->rclass) {
		case KNOT_CLASS_IN:
			if (is_meta(rr->type)) {
				return KNOT_RCODE_FORMERR;
			}
			rcode = records_rules_is_signer_type(rr->type) ?
			        KNOT_RCODE_NOERROR :
			        check_added(m, rr, log);
			if (rcode == KNOT_RCODE_FORMERR) {
				return rcode;
			}
			if (refusal == KNOT_RCODE_NOERROR) {
				refusal = rcode;
			}
			break;
		case KNOT_CLASS_ANY:
			if (rr->ttl != 0 || rdlen(rr) != 0 ||
			    (is_meta(rr->type) && rr->type != KNOT_RRTYPE_ANY)) {
				return KNOT_RCODE_FORMERR;
			}
			break;
		case KNOT_CLASS_NONE:
			if (rr->ttl != 0 || is_meta(rr->type) ||
			    !well_formed(rr)) {
				return KNOT_RCODE_FORMERR;
			}
			break;
		default:
			return KNOT_RCODE_FORMERR;
		}
	}
	/* Refusals come after every format check: FORMERR wins. The types
	 * the online signer owns are refused whatever the operation. */
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (records_rules_is_signer_type(rr->type)) {
			return KNOT_RCODE_REFUSED;
		}
	}
	return refusal;
}

/* --- The records of one node --- */

typedef struct {
	int64_t id;
	uint16_t type;
	uint32_t ttl;
	uint16_t rdata_len;
	uint8_t *rdata;
	const char *comment;
	const char *tags;       /* The API's, kept through a retime. */
	uint8_t api_form;
	int64_t created_on, modified_on;
} stored_t;

typedef struct {
	stored_t *rec;
	records_rules_rr_t *rr;  /* The same records, as the rules see them. */
	size_t count, cap;
	bool failed;
	/* Every record at owner, as stored now: add_rr() goes on with it for
	 * the next record at the same owner instead of reading the node
	 * again (4,000 records added at one name read 8 million rows: one
	 * message held the writer of every zone for 40 s). */
	bool whole;
	uint8_t owner[KNOT_DNAME_MAXLEN];
} node_t;

static void node_clear(node_t *n)
{
	for (size_t i = 0; i < n->count; i++) {
		free(n->rec[i].rdata);
		free((char *)n->rec[i].comment);
		free((char *)n->rec[i].tags);
	}
	n->count = 0;
	n->failed = false;
	n->whole = false;
}

static void node_free(node_t *n)
{
	node_clear(n);
	free(n->rec);
	free(n->rr);
}

static int collect(const records_record_t *rec, void *ctx)
{
	node_t *n = ctx;
	if (n->count == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 16;
		stored_t *grown = realloc(n->rec, cap * sizeof(*grown));
		if (grown != NULL) {
			n->rec = grown;
		}
		records_rules_rr_t *rr = realloc(n->rr, cap * sizeof(*rr));
		if (rr != NULL) {
			n->rr = rr;
		}
		if (grown == NULL || rr == NULL) {
			n->failed = true;
			return 1;
		}
		n->cap = cap;
	}
	stored_t *s = &n->rec[n->count];
	*s = (stored_t){ .id = rec->id, .type = rec->type, .ttl = rec->ttl,
	                 .rdata_len = rec->rdata_len, .api_form = rec->api_form,
	                 .created_on = rec->created_on,
	                 .modified_on = rec->modified_on };
	s->rdata = malloc(rec->rdata_len + 1u);
	s->comment = rec->comment ? strdup(rec->comment) : NULL;
	s->tags = rec->tags ? strdup(rec->tags) : NULL;
	if (s->rdata == NULL) {
		n->failed = true;
		return 1;
	}
	memcpy(s->rdata, rec->rdata, rec->rdata_len);
	n->rr[n->count] = (records_rules_rr_t){ .type = s->type, .ttl = s->ttl,
	                                        .rdata = s->rdata,
	                                        .rdata_len = s->rdata_len };
	n->count++;
	return 0;
}

/* Loads the records at owner (type 0: all types). */
static int node_load(records_store_t *rs, const records_zone_t *zone,
                     const knot_dname_t *owner, uint16_t type, node_t *n)
{
	node_clear(n);
	int ret = records_record_foreach(rs, zone->id, owner, type, collect, n);
	if (ret == ZC_EOK && n->failed) {
		return KNOT_ENOMEM;
	}
	if (ret == ZC_EOK && type == 0) {
		memcpy(n->owner, owner, knot_dname_size(owner));
		n->whole = true;
	}
	return ret;
}

/* The node as the rules see it (records/rules.h). */
static records_rules_node_t rules_node(const update_msg_t *m,
                                       const knot_dname_t *owner,
                                       const node_t *n)
{
	return (records_rules_node_t){ .apex = m->zone.apex, .owner = owner,
	                               .rr = n->rr, .count = n->count };
}

/* Rdata equality as RFC 2136 §1.1.1 compares records: names in rdata
 * ignoring case (RFC 4034 §6.2 canonical form). */
static bool rdata_equal(uint16_t type, const knot_rdata_t *rd,
                        const stored_t *s)
{
	return records_rules_rdata_equal(type, rd->data, rd->len, s->rdata,
	                                 s->rdata_len);
}

/* --- Prerequisites (§3.2.5: in order, the value-dependent ones last) --- */

/* RFC 2136 §3.2.3: the stored RRset at the owner and type of the
 * prerequisite `first` equals the RRset the section's class-IN
 * prerequisites of that owner and type make up. */
static bool value_rrset_matches(records_store_t *rs, const records_zone_t *zone,
                                const knot_pktsection_t *sec, uint16_t first,
                                int *ret)
{
	const knot_rrset_t *key = knot_pkt_rr(sec, first);
	node_t n = { 0 };
	*ret = node_load(rs, zone, key->owner, key->type, &n);
	if (*ret != ZC_EOK) {
		node_free(&n);
		return false;
	}
	for (size_t j = 0; j < n.count && key->type == KNOT_RRTYPE_SOA; j++) {
		/* The SOA as served (a prerequisite of the served SOA got
		 * NXRRSET, one of an older serial went through: outside
		 * tester 39). */
		records_soa_set_serial(n.rec[j].rdata, n.rec[j].rdata_len,
		                       zone->serial);
	}
	/* Every prerequisite RR of this (owner, type) must be stored ... */
	for (uint16_t i = first; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (rr->rclass != KNOT_CLASS_IN || rr->type != key->type ||
		    !knot_dname_is_case_equal(rr->owner, key->owner)) {
			continue;
		}
		knot_rdata_t *rd = rr->rrs.rdata;
		for (uint16_t k = 0; k < rr->rrs.count; k++) {
			bool found = false;
			for (size_t j = 0; j < n.count && !found; j++) {
				found = rdata_equal(rr->type, rd, &n.rec[j]);
			}
			if (!found) {
				node_free(&n);
				return false;
			}
			rd = knot_rdataset_next(rd);
		}
	}
	/* ... and every stored one given (duplicates in the message aside). */
	bool all = true;
	for (size_t j = 0; j < n.count && all; j++) {
		bool found = false;
		for (uint16_t i = first; i < sec->count && !found; i++) {
			const knot_rrset_t *rr = knot_pkt_rr(sec, i);
			if (rr->rclass != KNOT_CLASS_IN || rr->type != key->type ||
			    !knot_dname_is_case_equal(rr->owner, key->owner)) {
				continue;
			}
			knot_rdata_t *rd = rr->rrs.rdata;
			for (uint16_t k = 0; k < rr->rrs.count && !found; k++) {
				found = rdata_equal(rr->type, rd, &n.rec[j]);
				rd = knot_rdataset_next(rd);
			}
		}
		all = found;
	}
	node_free(&n);
	return all;
}

/* RFC 2136 §3.2.1, §3.2.4: the state an ANY or NONE prerequisite asks
 * for (name in use or not, RRset there or not); its rcode if not. */
static uint8_t check_existence(records_store_t *rs, const records_zone_t *zone,
                               const knot_rrset_t *rr, node_t *n, int *ret)
{
	uint16_t type = rr->type == KNOT_RRTYPE_ANY ? 0 : rr->type;
	*ret = node_load(rs, zone, rr->owner, type, n);
	bool exists = n->count > 0;
	if (*ret != ZC_EOK) {
		return KNOT_RCODE_SERVFAIL;
	}
	if (rr->rclass == KNOT_CLASS_ANY && !exists) {
		return type == 0 ? KNOT_RCODE_NXDOMAIN : KNOT_RCODE_NXRRSET;
	}
	if (rr->rclass == KNOT_CLASS_NONE && exists) {
		return type == 0 ? KNOT_RCODE_YXDOMAIN : KNOT_RCODE_YXRRSET;
	}
	return KNOT_RCODE_NOERROR;
}

/* RFC 2136 §3.2.5, the value-dependent part (after every other check):
 * each (owner, type) of the class-IN prerequisites, once. */
static uint8_t check_values(records_store_t *rs, const records_zone_t *zone,
                            const knot_pktsection_t *sec, int *ret)
{
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (rr->rclass != KNOT_CLASS_IN) {
			continue;
		}
		bool seen = false;
		for (uint16_t j = 0; j < i && !seen; j++) {
			const knot_rrset_t *o = knot_pkt_rr(sec, j);
			seen = o->rclass == KNOT_CLASS_IN && o->type == rr->type &&
			       knot_dname_is_case_equal(o->owner, rr->owner);
		}
		if (!seen && !value_rrset_matches(rs, zone, sec, i, ret)) {
			return *ret == ZC_EOK ? KNOT_RCODE_NXRRSET :
			       KNOT_RCODE_SERVFAIL;
		}
	}
	return KNOT_RCODE_NOERROR;
}

uint8_t update_prereq_check(records_store_t *rs, const records_zone_t *zone,
                            const knot_pktsection_t *sec, int *ret)
{
	node_t n = { 0 };
	uint8_t rcode = KNOT_RCODE_NOERROR;
	*ret = ZC_EOK;
	for (uint16_t i = 0; i < sec->count && rcode == 0; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		rcode = prereq_format(rr, zone->apex);
		if (rcode == KNOT_RCODE_NOERROR && rr->rclass != KNOT_CLASS_IN) {
			rcode = check_existence(rs, zone, rr, &n, ret);
		}
	}
	node_free(&n);
	if (rcode == KNOT_RCODE_NOERROR) {
		rcode = check_values(rs, zone, sec, ret);
	}
	return rcode;
}

/* --- The update section (§3.4.2) --- */

/* The zone's serial moves once, before the message's first write: to
 * the serial of the newest SOA the message adds, else by one. */
static int new_version(records_store_t *rs, update_msg_t *m)
{
	if (m->changed) {
		return ZC_EOK;
	}
	m->changed = true;
	return m->soa_new ? records_zone_set_serial(rs, &m->zone, m->soa_serial) :
	       records_zone_bump(rs, &m->zone);
}

/* A stored record at owner as the records store takes it. */
static records_record_t record_of(const knot_dname_t *owner, const stored_t *s)
{
	return (records_record_t){
		.id = s->id, .owner = owner, .type = s->type, .ttl = s->ttl,
		.rdata = s->rdata, .rdata_len = s->rdata_len,
		.comment = s->comment, .tags = s->tags,
		.api_form = s->api_form, .created_on = s->created_on,
		.modified_on = s->modified_on,
	};
}

static int delete_stored(records_store_t *rs, update_msg_t *m,
                         const knot_dname_t *owner, const stored_t *s)
{
	int ret = new_version(rs, m);
	if (ret == ZC_EOK) {
		ret = records_record_delete(rs, &m->zone, s->id);
	}
	if (ret == ZC_EOK) {
		records_record_t rec = record_of(owner, s);
		ret = update_net_removed(&m->net, &rec);
	}
	return ret;
}

/* Rewrites a stored record with another TTL, keeping its id. */
static int retime(records_store_t *rs, update_msg_t *m,
                  const knot_dname_t *owner, const stored_t *s, uint32_t ttl)
{
	int ret = delete_stored(rs, m, owner, s);
	records_record_t rec = record_of(owner, s);
	rec.ttl = ttl;
	/* Its TTL is the message's now, not "automatic". */
	rec.api_form = s->api_form & ~RECORDS_API_TTL_AUTO;
	if (ret == ZC_EOK) {
		ret = records_record_insert(rs, &m->zone, &rec);
	}
	return ret == ZC_EOK ? update_net_added(&m->net, &rec) : ret;
}

static uint32_t soa_serial(const uint8_t *rdata, uint16_t len)
{
	const uint8_t *p = rdata + len - 20;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Whether the stored SOA rec is the new one (TTL ttl, rdata rd) in all
 * but its serial: the version's serial is then the whole change. */
static bool soa_same_but_serial(const stored_t *rec, uint32_t ttl,
                                const knot_rdata_t *rd)
{
	size_t serial_at = (size_t)rd->len - 20;
	return rec->ttl == ttl && rec->rdata_len == rd->len &&
	       memcmp(rec->rdata, rd->data, serial_at) == 0 &&
	       memcmp(rec->rdata + serial_at + 4, rd->data + serial_at + 4,
	              16) == 0;
}

/* An SOA at the apex replaces the zone's if its serial is newer. */
static int add_soa(records_store_t *rs, update_msg_t *m, node_t *n,
                   const knot_rrset_t *rr, const knot_rdata_t *rd)
{
	if (!knot_dname_is_equal(rr->owner, m->zone.apex) || rd->len < 22) {
		return ZC_EOK;
	}
	uint32_t serial = soa_serial(rd->data, rd->len);
	if ((int32_t)(serial - m->soa_taken) <= 0) {
		return ZC_EOK; /* §3.4.2.2: not newer, ignored. */
	}
	m->soa_taken = serial;
	/* The message's version is its newest SOA's serial (soa_plan()),
	 * whether its other changes came before this SOA or after. */
	int ret = new_version(rs, m);
	if (ret == ZC_EOK) {
		ret = node_load(rs, &m->zone, m->zone.apex, KNOT_RRTYPE_SOA, n);
	}
	if (ret == ZC_EOK && n->count == 1 &&
	    soa_same_but_serial(&n->rec[0], rr->ttl, rd)) {
		/* Only the serial moves (a script bumping it): the new
		 * version says so, and the IXFR journal goes on through it
		 * (a zone-wide change made every secondary take the whole
		 * zone: outside tester 32); the touch moves the served
		 * serial when nothing else of the message does. */
		m->serial_moved = true;
		return records_log_touch(rs, &m->zone);
	}
	/* The serial moves with other SOA fields too: never a message
	 * that changed nothing. */
	m->serial_moved = true;
	for (size_t i = 0; i < n->count && ret == ZC_EOK; i++) {
		ret = delete_stored(rs, m, m->zone.apex, &n->rec[i]);
	}
	records_record_t rec = { .owner = m->zone.apex, .type = KNOT_RRTYPE_SOA,
	                         .ttl = rr->ttl, .rdata = rd->data,
	                         .rdata_len = rd->len };
	if (ret == ZC_EOK) {
		ret = records_record_insert(rs, &m->zone, &rec);
	}
	if (ret == ZC_EOK) {
		ret = update_net_added(&m->net, &rec);
	}
	/* SOA fields live in the zone's settings: a full build. */
	return ret == ZC_EOK ? records_log_zone_event(rs, &m->zone,
	                       RECORDS_CHANGE_ZONE_SETTINGS) : ret;
}

/* Reads ahead the apex SOAs the message adds, as add_soa() takes them
 * in turn: the serial of the last one newer than the one before. */
static void soa_plan(update_msg_t *m, const knot_pktsection_t *sec)
{
	m->soa_taken = m->zone.serial;
	uint32_t cur = m->zone.serial;
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (rr->rclass != KNOT_CLASS_IN || rr->type != KNOT_RRTYPE_SOA ||
		    !knot_dname_is_equal(rr->owner, m->zone.apex)) {
			continue;
		}
		knot_rdata_t *rd = rr->rrs.rdata;
		for (uint16_t k = 0; k < rr->rrs.count; k++) {
			if (rd->len >= 22 &&
			    (int32_t)(soa_serial(rd->data, rd->len) - cur) > 0) {
				cur = soa_serial(rd->data, rd->len);
			}
			rd = knot_rdataset_next(rd);
		}
	}
	m->soa_new = cur != m->zone.serial;
	m->soa_serial = cur;
}

/* The subtree rules of DNAME (RFC 6672 section 2.4, records/rules.h):
 * ZC_EDNAME for a record below a DNAME or a DNAME above records, which
 * refuses the whole message, as Knot does (BIND 9.18 adds either). */
static int check_subtree(records_store_t *rs, const update_msg_t *m,
                         const knot_rrset_t *rr)
{
	uint8_t at[KNOT_DNAME_MAXLEN];
	bool above = false, below = false;
	int ret = records_dname_above(rs, &m->zone, rr->owner, 0, &above, at);
	if (ret == ZC_EOK && !above && rr->type == KNOT_RRTYPE_DNAME) {
		ret = records_data_below(rs, &m->zone, rr->owner, 0, &below, at);
	}
	if (ret != ZC_EOK || (!above && !below)) {
		return ret;
	}
	char owner[KNOT_DNAME_TXT_MAXLEN + 1], other[KNOT_DNAME_TXT_MAXLEN + 1];
	char type[32];
	knot_dname_to_str(owner, rr->owner, sizeof(owner));
	knot_dname_to_str(other, at, sizeof(other));
	knot_rrtype_to_string(rr->type, type, sizeof(type));
	zc_info("update %s: REFUSED: %s %s %s %s (RFC 6672 section 2.4)",
	        m->zone.name, owner, type, above ? "below the DNAME at" :
	        "above records, such as at", other);
	return ZC_EDNAME;
}

/* Notes an owner an add took past a size rule (m->over). */
static int note_over(update_msg_t *m, const knot_dname_t *owner)
{
	for (size_t i = 0; i < m->over_count; i++) {
		if (knot_dname_is_equal(m->over[i], owner)) {
			return ZC_EOK;
		}
	}
	if (m->over_count == m->over_cap) {
		size_t cap = m->over_cap ? 2 * m->over_cap : 4;
		void *grown = realloc(m->over, cap * sizeof(*m->over));
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		m->over = grown;
		m->over_cap = cap;
	}
	memcpy(m->over[m->over_count++], owner, knot_dname_size(owner));
	return ZC_EOK;
}

/* The size rules over what the message leaves at each owner it took past
 * one: ZC_ETYPES refuses the whole message. */
static int check_over(records_store_t *rs, update_msg_t *m, node_t *n)
{
	int ret = ZC_EOK;
	for (size_t i = 0; i < m->over_count && ret == ZC_EOK; i++) {
		ret = node_load(rs, &m->zone, m->over[i], 0, n);
		records_rules_node_t node = rules_node(m, m->over[i], n);
		if (ret == ZC_EOK &&
		    records_rules_check_size(&node) != RECORDS_RULE_OK) {
			ret = ZC_ETYPES;
		}
	}
	return ret;
}

static int add_rr(records_store_t *rs, update_msg_t *m, node_t *n,
                  const knot_rrset_t *rr, const knot_rdata_t *rd)
{
	if (rr->type == KNOT_RRTYPE_SOA) {
		return add_soa(rs, m, n, rr, rd);
	}
	int ret = ZC_EOK;
	if (!n->whole || !knot_dname_is_equal(n->owner, rr->owner)) {
		ret = node_load(rs, &m->zone, rr->owner, 0, n);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	records_rules_node_t node = rules_node(m, rr->owner, n);
	records_rules_rr_t added = { .type = rr->type, .ttl = rr->ttl,
	                             .rdata = rd->data, .rdata_len = rd->len };
	records_verdict_t v = records_rules_check_add(&node, &added, NULL);
	if (v == RECORDS_RULE_TOO_MANY_TYPES || v == RECORDS_RULE_RRSET_FULL ||
	    v == RECORDS_RULE_RRSET_TOO_LARGE) {
		/* Not ignored as a conflict is (§3.4.2.2): the whole message
		 * is refused, unless it deletes enough later on. */
		if (!m->deletes) {
			return ZC_ETYPES;
		}
		ret = note_over(m, rr->owner);
		if (ret != ZC_EOK) {
			return ret;
		}
		v = RECORDS_RULE_OK;
	}
	bool replaces = v == RECORDS_RULE_SECOND_CNAME ||
	                v == RECORDS_RULE_SECOND_DNAME;
	if (v == RECORDS_RULE_OK || replaces) {
		ret = check_subtree(rs, m, rr);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	if (replaces) {
		/* One CNAME (§3.4.2.2), one DNAME likewise: the new one
		 * replaces the stored one. */
		for (size_t i = 0; i < n->count && ret == ZC_EOK; i++) {
			if (n->rec[i].type == rr->type) {
				ret = delete_stored(rs, m, rr->owner,
				                    &n->rec[i]);
			}
		}
	} else if (v != RECORDS_RULE_OK && v != RECORDS_RULE_DUPLICATE) {
		/* A CNAME beside other data or at the apex, other data
		 * beside a CNAME: ignored (§3.4.2.2); a DS at the apex
		 * too, as BIND ignores it (it is the parent's). */
		return ZC_EOK;
	}
	/* The RRset takes the added record's TTL (RFC 2181 §5.2); a record
	 * already there only that (§3.4.2.2: a duplicate is not added). */
	bool present = v == RECORDS_RULE_DUPLICATE;
	for (size_t i = 0; i < n->count && ret == ZC_EOK && !replaces; i++) {
		/* An "automatic" TTL (the API's 1) ends too where the TTL
		 * is the same: the RRset's is the message's now. */
		if (records_rules_needs_retime(&n->rr[i], &added) ||
		    (n->rr[i].type == rr->type &&
		     (n->rec[i].api_form & RECORDS_API_TTL_AUTO))) {
			ret = retime(rs, m, rr->owner, &n->rec[i], rr->ttl);
			n->whole = false; /* Read again for the next one. */
		}
	}
	if (replaces) {
		n->whole = false;
	}
	if (ret != ZC_EOK || present) {
		return ret;
	}
	ret = new_version(rs, m);
	records_record_t rec = { .owner = rr->owner, .type = rr->type,
	                         .ttl = rr->ttl, .rdata = rd->data,
	                         .rdata_len = rd->len };
	if (ret == ZC_EOK) {
		ret = records_record_insert(rs, &m->zone, &rec);
	}
	if (ret == ZC_EOK && n->whole && collect(&rec, n) != 0) {
		n->whole = false; /* Out of memory: read it again. */
	}
	return ret == ZC_EOK ? update_net_added(&m->net, &rec) : ret;
}

/* Class ANY: delete an RRset, or every RRset at a name but the apex SOA
 * and NS (§3.4.2.3) and the signer's records: the DNSKEY, CDS and CDNSKEY
 * a signed zone publishes at its apex (deleting them by type is refused
 * above; `update delete ZONE.` took them and left the zone signed by a
 * key no longer published, bogus to every validator). */
static int delete_rrsets(records_store_t *rs, update_msg_t *m, node_t *n,
                         const knot_rrset_t *rr)
{
	uint16_t type = rr->type == KNOT_RRTYPE_ANY ? 0 : rr->type;
	int ret = node_load(rs, &m->zone, rr->owner, type, n);
	n->whole = false; /* Deleted from below: read again. */
	for (size_t i = 0; i < n->count && ret == ZC_EOK; i++) {
		if (!records_rules_is_apex_protected(m->zone.apex, rr->owner,
		                                     n->rec[i].type) &&
		    !records_rules_is_signer_type(n->rec[i].type)) {
			ret = delete_stored(rs, m, rr->owner, &n->rec[i]);
		}
	}
	return ret;
}

/* Class NONE: delete one RR; the SOA and the last apex NS stay
 * (§3.4.2.3, §3.4.2.4). */
static int delete_rr(records_store_t *rs, update_msg_t *m, node_t *n,
                     const knot_rrset_t *rr, const knot_rdata_t *rd)
{
	int ret = node_load(rs, &m->zone, rr->owner, rr->type, n);
	records_rules_node_t node = rules_node(m, rr->owner, n);
	for (size_t i = 0; i < n->count && ret == ZC_EOK; i++) {
		if (!rdata_equal(rr->type, rd, &n->rec[i])) {
			continue;
		}
		if (records_rules_check_remove(&node, i) != RECORDS_RULE_OK) {
			return ZC_EOK; /* Ignored. */
		}
		ret = delete_stored(rs, m, rr->owner, &n->rec[i]);
		break;
	}
	return ret;
}

typedef struct {
	records_store_t *rs;
	update_msg_t *m;
} relink_t;

/* update_net_relink()'s: the record added again (added_id) is the one
 * removed (orig), whose row goes back with its id, comment, tags and
 * times. */
static int relink(void *ctx, const records_record_t *orig, int64_t added_id)
{
	relink_t *r = ctx;
	int ret = records_record_delete(r->rs, &r->m->zone, added_id);
	records_record_t rec = *orig;
	return ret == ZC_EOK ? records_record_restore(r->rs, &r->m->zone, &rec) :
	       ret;
}

void update_hint(records_store_t *rs, void *arg)
{
	const update_msg_t *m = arg;
	if (m->refused) {
		return;
	}
	static const knot_section_t sections[] = { KNOT_ANSWER, KNOT_AUTHORITY };
	for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		const knot_pktsection_t *sec = knot_pkt_section(m->pkt,
		                                                sections[s]);
		for (uint16_t i = 0; i < sec->count; i++) {
			records_hint_node(rs, m->zone.id, m->zone.apex,
			                  knot_pkt_rr(sec, i)->owner);
		}
	}
}

int update_apply(records_store_t *rs, void *arg)
{
	update_msg_t *m = arg;
	if (m->refused) {
		return ZC_EUSAGE; /* In a run before this one: m->rcode. */
	}
	/* Afresh: the writer runs a unit again after a zone lock it could
	 * not take, or its whole batch (writer.h), its first run rolled
	 * back. */
	m->changed = false;
	update_net_clear(&m->net);
	m->serial_moved = false;
	m->over_count = 0;
	/* With the zone's row, whether its TSIG key still exists
	 * (update_key_check()). */
	int ret = records_zone_get_keyed(rs, m->zone.id,
	                                 m->tsig.present ? m->key_id : 0,
	                                 &m->zone);
	if (ret == ZC_ENOZONE) {
		/* Deleted since the lookup (service.c keeps zones a while),
		 * perhaps made again under the name with a new id: the zone
		 * section names the zone, not the id. A signed message's
		 * key went with the deleted zone (NOTAUTH). */
		update_zone_forget(m->service, m->zone.apex);
		records_zone_t again;
		if (m->key_kept) {
			/* Its key went with it: as the precheck would
			 * answer now (BADKEY; BADSIG for a key made again
			 * under the name; a zone made again with a key of
			 * the name takes the message). */
			ret = update_key_judge_again(rs, m, &again);
			if (ret != ZC_EOK) {
				return ret;
			}
		} else {
			ret = m->tsig.present ? ZC_ENOZONE :
			      records_zone_find(rs, m->zone.apex, &again);
		}
		if (ret == ZC_EOK) {
			ret = records_zone_get(rs, again.id, &m->zone);
		}
		if (ret == ZC_EOK &&
		    update_zone_quarantined(m->service, m->zone.id)) {
			/* The precheck saw the deleted zone's state. */
			m->rcode = KNOT_RCODE_SERVFAIL;
			update_audit_refused(m, m->rcode,
			                     "the zone is quarantined");
			m->refused = true;
			return ZC_EUSAGE;
		}
	}
	if (ret == ZC_ENOZONE) {
		m->rcode = KNOT_RCODE_NOTAUTH; /* Deleted meanwhile. */
		return ZC_EUSAGE;
	}
	if (ret != ZC_EOK) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	if (m->tsig.present && (ret = update_key_check(rs, m)) != ZC_EOK) {
		return ret; /* Deleted since the precheck read it. */
	}
	m->rcode = update_prereq_check(rs, &m->zone,
	                               knot_pkt_section(m->pkt, KNOT_ANSWER),
	                               &ret);
	if (m->rcode != KNOT_RCODE_NOERROR) {
		return ret != ZC_EOK ? ret : ZC_EUSAGE;
	}
	const knot_pktsection_t *sec = knot_pkt_section(m->pkt, KNOT_AUTHORITY);
	node_t n = { 0 };
	/* Changes can cancel out only when the message deletes, or moves a
	 * TTL twice (one record added alone is a change when written). */
	bool deletes = false;
	size_t rrs = 0;
	for (uint16_t i = 0; i < sec->count; i++) {
		deletes |= knot_pkt_rr(sec, i)->rclass != KNOT_CLASS_IN;
		rrs += knot_pkt_rr(sec, i)->rrs.count;
	}
	m->deletes = deletes;
	bool may_cancel = deletes || rrs > 1;
	/* The zone as read: what a message that changes nothing leaves in
	 * m->zone (its answer waits until this serial is served). */
	records_zone_t read = m->zone;
	soa_plan(m, sec);
	ret = may_cancel ? records_inner_savepoint(rs) : ZC_EOK;
	for (uint16_t i = 0; i < sec->count && ret == ZC_EOK; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (rr->rclass == KNOT_CLASS_ANY) {
			ret = delete_rrsets(rs, m, &n, rr);
			continue;
		}
		knot_rdata_t *rd = rr->rrs.rdata;
		for (uint16_t k = 0; k < rr->rrs.count && ret == ZC_EOK; k++) {
			ret = rr->rclass == KNOT_CLASS_IN ? add_rr(rs, m, &n, rr, rd) :
			      delete_rr(rs, m, &n, rr, rd);
			rd = knot_rdataset_next(rd);
		}
	}
	if (ret == ZC_EOK) {
		ret = check_over(rs, m, &n);
	}
	node_free(&n);
	if (ret == ZC_EOK && may_cancel && m->changed && !m->serial_moved &&
	    update_net_none(&m->net)) {
		/* What it removed it added again, or added and removed:
		 * no change, no serial; the records keep their ids. */
		records_inner_rollback(rs);
		m->changed = false;
		m->zone = read; /* Not the serial rolled back. */
		update_net_clear(&m->net);
	} else if (ret == ZC_EOK && may_cancel) {
		/* A record deleted and added again beside other changes goes
		 * back as it was: its id, comment and tags (outside tester
		 * 41: an unrelated add in the same message lost them). */
		ret = update_net_relink(&m->net, relink, &(relink_t){ rs, m });
		ret = ret == ZC_EOK ? records_inner_release(rs) : ret;
	}
	/* A name no store can key (dns/name.h), or past its types (rules.h):
	 * refused, not a failure. */
	m->rcode = ret == ZC_EOK ? KNOT_RCODE_NOERROR :
	           ret == ZC_ENAMEKEY || ret == ZC_ETYPES ||
	           ret == ZC_EDNAME ? KNOT_RCODE_REFUSED :
	           KNOT_RCODE_SERVFAIL;
	return ret;
}
