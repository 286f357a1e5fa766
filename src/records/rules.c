/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The zone-content rules (rules.h): what a node may hold, checked the same
 * way for the API, RFC 2136 UPDATE and imports. Pure functions: the
 * callers load the node and map the verdict to their own errors.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/rrtype/naptr.h>

#include "dns/name.h"
#include "dns/rdata.h"
#include "records/rules.h"

#define NONE SIZE_MAX

const char *records_rules_reason(records_verdict_t verdict)
{
	switch (verdict) {
	case RECORDS_RULE_OK:
		return "no rule broken";
	case RECORDS_RULE_OUTSIDE_ZONE:
		return "outside the zone";
	case RECORDS_RULE_SIGNER_TYPE:
		return "DNSSEC records are made by the online signer";
	case RECORDS_RULE_SOA_ELSEWHERE:
		return "SOA outside the zone apex";
	case RECORDS_RULE_SECOND_SOA:
		return "more than one SOA record at the zone apex";
	case RECORDS_RULE_CNAME_AT_APEX:
		return "CNAME at the zone apex, which holds the SOA and NS "
		       "records (RFC 1034 section 3.6.2)";
	case RECORDS_RULE_DS_AT_APEX:
		return "DS at the zone apex: a DS belongs to the parent zone, "
		       "at the delegation (RFC 4034 section 5, RFC 4035 "
		       "section 2.4)";
	case RECORDS_RULE_CNAME_BESIDE_DATA:
	case RECORDS_RULE_DATA_BESIDE_CNAME:
		return "CNAME and other data at the same name (RFC 1034 "
		       "section 3.6.2, RFC 2181 section 10.1)";
	case RECORDS_RULE_SECOND_CNAME:
		return "more than one CNAME record at the same name (RFC 2181 "
		       "section 10.1)";
	case RECORDS_RULE_SECOND_DNAME:
		return "more than one DNAME record at the same name (RFC 6672 "
		       "section 2.4)";
	case RECORDS_RULE_DUPLICATE:
		return "duplicate record (names in rdata compare ignoring case, "
		       "RFC 4034 section 6.2)";
	case RECORDS_RULE_TTL_DIFFERS:
		return "records of one RRset have different TTLs (RFC 2181 "
		       "section 5.2)";
	case RECORDS_RULE_REMOVES_SOA:
		return "the SOA record is never removed";
	case RECORDS_RULE_LAST_APEX_NS:
		return "the last NS record at the zone apex cannot be removed";
	case RECORDS_RULE_NO_SOA:
		return "no SOA record at the zone apex";
	case RECORDS_RULE_NO_APEX_NS:
		return "no NS records at the zone apex";
	case RECORDS_RULE_TOO_MANY_TYPES:
		return "more than 504 record types at one name (an edge store "
		       "node holds 512, 8 kept for the signer's)";
	case RECORDS_RULE_RRSET_FULL:
		return "more than 65535 records in one RRset (what an RRset "
		       "holds)";
	case RECORDS_RULE_RRSET_TOO_LARGE:
		return "an RRset larger than one DNS message carries (its "
		       "records, with their signature, over 65535 octets)";
	case RECORDS_RULE_BELOW_DNAME:
		return "record below a DNAME (RFC 6672 section 2.4)";
	case RECORDS_RULE_DNAME_ABOVE_DATA:
		return "DNAME above other records (RFC 6672 section 2.4)";
	}
	return "unknown rule";
}

bool records_rules_in_zone(const knot_dname_t *apex,
                           const knot_dname_t *owner)
{
	return dns_name_is_under(owner, apex);
}

static bool is_apex(const records_rules_node_t *node)
{
	return knot_dname_is_case_equal(node->owner, node->apex);
}

bool records_rules_is_signer_type(uint16_t type)
{
	return type == KNOT_RRTYPE_RRSIG || type == KNOT_RRTYPE_NSEC ||
	       type == KNOT_RRTYPE_NSEC3 || type == KNOT_RRTYPE_NSEC3PARAM ||
	       type == KNOT_RRTYPE_DNSKEY || type == KNOT_RRTYPE_CDS ||
	       type == KNOT_RRTYPE_CDNSKEY;
}

bool records_rules_is_apex_protected(const knot_dname_t *apex,
                                     const knot_dname_t *owner,
                                     uint16_t type)
{
	return (type == KNOT_RRTYPE_SOA || type == KNOT_RRTYPE_NS) &&
	       knot_dname_is_case_equal(owner, apex);
}

/* Types of which a name holds one record: a second one is a conflict,
 * not another member of the RRset (RFC 2181 §10.1, RFC 6672 §2.4). */
static bool is_singleton(uint16_t type)
{
	return type == KNOT_RRTYPE_CNAME || type == KNOT_RRTYPE_DNAME;
}

static records_verdict_t second_of(uint16_t type)
{
	return type == KNOT_RRTYPE_CNAME ? RECORDS_RULE_SECOND_CNAME :
	       RECORDS_RULE_SECOND_DNAME;
}

bool records_rules_is_published_key(uint16_t type)
{
	return type == KNOT_RRTYPE_DNSKEY || type == KNOT_RRTYPE_CDS ||
	       type == KNOT_RRTYPE_CDNSKEY;
}

/* Types allowed beside a CNAME (RFC 2181 §10.1, RFC 4035 §2.5). */
static bool cname_compatible(uint16_t type)
{
	return type == KNOT_RRTYPE_CNAME || type == KNOT_RRTYPE_RRSIG ||
	       type == KNOT_RRTYPE_NSEC;
}

/* --- Canonical rdata (RFC 4034 §6.2) --- */

/* Where the names that canonical form lowercases lie in an rdata. */
typedef struct {
	uint16_t start[KNOT_MAX_RDATA_BLOCKS];
	uint16_t end[KNOT_MAX_RDATA_BLOCKS];
	unsigned count;
} spans_t;

/* Finds the name spans of rdata as libknot's descriptors lay it out
 * (knot_rrset_rr_to_canonical() walks the same blocks), and A6's prefix
 * name (dns_a6_prefix_name()), which RFC 4034 §6.2 lowercases and libknot
 * does not; none for a type whose names stay as they are, or rdata that
 * does not parse. */
static void find_spans(uint16_t type, const uint8_t *rdata, uint16_t len,
                       spans_t *s)
{
	s->count = 0;
	if (type == DNS_RRTYPE_A6) {
		size_t at = 0;
		int size = dns_a6_prefix_name(rdata, len, &at);
		if (size > 0) {
			s->start[0] = (uint16_t)at;
			s->end[0] = (uint16_t)(at + (size_t)size);
			s->count = 1;
		}
		return;
	}
	if (!knot_rrtype_should_be_lowercased(type)) {
		return;
	}
	const knot_rdata_descriptor_t *desc = knot_get_rdata_descriptor(type);
	if (desc->type_name == NULL) {
		desc = knot_get_obsolete_rdata_descriptor(type);
	}
	const uint8_t *end = rdata + len;
	size_t pos = 0;
	for (int i = 0; i < KNOT_MAX_RDATA_BLOCKS &&
	     desc->block_types[i] != KNOT_RDATA_WF_END; i++) {
		int block = desc->block_types[i];
		int size;
		switch (block) {
		case KNOT_RDATA_WF_COMPRESSIBLE_DNAME:
		case KNOT_RDATA_WF_DECOMPRESSIBLE_DNAME:
		case KNOT_RDATA_WF_FIXED_DNAME:
			size = knot_dname_wire_check(rdata + pos, end, NULL);
			if (size <= 0) {
				s->count = 0;
				return;
			}
			s->start[s->count] = (uint16_t)pos;
			s->end[s->count++] = (uint16_t)(pos + size);
			break;
		case KNOT_RDATA_WF_NAPTR_HEADER:
			size = knot_naptr_header_size(rdata + pos, end);
			break;
		case KNOT_RDATA_WF_REMAINDER:
			return;
		default:
			size = block;
		}
		if (size < 0 || pos + (size_t)size > len) {
			s->count = 0;
			return;
		}
		pos += (size_t)size;
	}
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Octet i of the rdata in canonical form; *span advances through s. */
static uint8_t canonical_at(const uint8_t *rdata, size_t i, const spans_t *s,
                            unsigned *span)
{
	while (*span < s->count && i >= s->end[*span]) {
		(*span)++;
	}
	bool in_name = *span < s->count && i >= s->start[*span];
	return in_name ? lower(rdata[i]) : rdata[i];
}

int records_rules_rdata_cmp(uint16_t type, const uint8_t *a, uint16_t alen,
                            const uint8_t *b, uint16_t blen)
{
	size_t n = alen < blen ? alen : blen;
	spans_t sa, sb;
	find_spans(type, a, alen, &sa);
	find_spans(type, b, blen, &sb);
	if (sa.count == 0 && sb.count == 0) {
		int c = n > 0 ? memcmp(a, b, n) : 0;
		return c != 0 ? c : (alen > blen) - (alen < blen);
	}
	unsigned ia = 0, ib = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t ca = canonical_at(a, i, &sa, &ia);
		uint8_t cb = canonical_at(b, i, &sb, &ib);
		if (ca != cb) {
			return ca < cb ? -1 : 1;
		}
	}
	return (alen > blen) - (alen < blen);
}

bool records_rules_rdata_equal(uint16_t type, const uint8_t *a,
                               uint16_t alen, const uint8_t *b,
                               uint16_t blen)
{
	if (alen != blen) {
		return false; /* Lowercasing keeps lengths. */
	}
	if (alen == 0 || memcmp(a, b, alen) == 0) {
		return true;
	}
	return records_rules_rdata_cmp(type, a, alen, b, blen) == 0;
}

bool records_rules_needs_retime(const records_rules_rr_t *stored,
                                const records_rules_rr_t *added)
{
	return stored->type == added->type && stored->ttl != added->ttl;
}

/* --- Adding and removing --- */

/* The CNAME rules against one stored record (RFC 1034 §3.6.2). */
static records_verdict_t cname_conflict(uint16_t added, uint16_t stored)
{
	if (added == KNOT_RRTYPE_CNAME && !cname_compatible(stored)) {
		return RECORDS_RULE_CNAME_BESIDE_DATA;
	}
	if (stored == KNOT_RRTYPE_CNAME && !cname_compatible(added)) {
		return RECORDS_RULE_DATA_BESIDE_CNAME;
	}
	return RECORDS_RULE_OK;
}

/* The rules an added record meets before the node is looked at. */
static records_verdict_t check_alone(const records_rules_node_t *node,
                                     const records_rules_rr_t *rr)
{
	if (!records_rules_in_zone(node->apex, node->owner)) {
		return RECORDS_RULE_OUTSIDE_ZONE;
	}
	if (records_rules_is_signer_type(rr->type)) {
		return RECORDS_RULE_SIGNER_TYPE;
	}
	if (rr->type == KNOT_RRTYPE_SOA && !is_apex(node)) {
		return RECORDS_RULE_SOA_ELSEWHERE;
	}
	if (rr->type == KNOT_RRTYPE_CNAME && is_apex(node)) {
		return RECORDS_RULE_CNAME_AT_APEX;
	}
	if (rr->type == KNOT_RRTYPE_DS && is_apex(node)) {
		return RECORDS_RULE_DS_AT_APEX;
	}
	return RECORDS_RULE_OK;
}

/* A record's octets in an answer besides its rdata: its owner
 * compressed (2), type, class, TTL and rdata length (10). */
#define RR_FIXED 12

/* The octets of an RRset of `count` records of rdata_len each at owner, as
 * RECORDS_RULES_MAX_RRSET_OCTETS counts them (the owner once: the
 * question's). */
static size_t rrset_octets(const knot_dname_t *owner, size_t rdata_len,
                           size_t count)
{
	return knot_dname_size(owner) + count * (RR_FIXED + rdata_len);
}

/* How many types the node holds (any order). */
static size_t count_types(const records_rules_node_t *node)
{
	uint64_t seen[65536 / 64] = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < node->count; i++) {
		uint16_t t = node->rr[i].type;
		uint64_t bit = (uint64_t)1 << (t % 64);
		n += !(seen[t / 64] & bit);
		seen[t / 64] |= bit;
	}
	return n;
}

records_verdict_t records_rules_check_add(const records_rules_node_t *node,
                                          const records_rules_rr_t *rr,
                                          size_t *at)
{
	size_t dummy;
	at = at != NULL ? at : &dummy;
	*at = NONE;
	records_verdict_t v = check_alone(node, rr);
	if (v != RECORDS_RULE_OK) {
		return v;
	}
	for (size_t i = 0; i < node->count; i++) {
		if (rr->type == KNOT_RRTYPE_SOA &&
		    node->rr[i].type == KNOT_RRTYPE_SOA) {
			*at = i;
			return RECORDS_RULE_SECOND_SOA;
		}
	}
	/* Data beside a CNAME first: it is refused whatever else is there. */
	for (size_t i = 0; i < node->count; i++) {
		v = cname_conflict(rr->type, node->rr[i].type);
		if (v != RECORDS_RULE_OK) {
			*at = i;
			return v;
		}
	}
	size_t other = NONE; /* The CNAME or DNAME already there. */
	size_t of_type = 0;
	size_t octets = rrset_octets(node->owner, rr->rdata_len, 1);
	for (size_t i = 0; i < node->count; i++) {
		const records_rules_rr_t *s = &node->rr[i];
		if (s->type != rr->type) {
			continue;
		}
		of_type++;
		octets += RR_FIXED + s->rdata_len;
		if (records_rules_rdata_equal(s->type, s->rdata, s->rdata_len,
		                              rr->rdata, rr->rdata_len)) {
			*at = i;
			return RECORDS_RULE_DUPLICATE;
		}
		if (is_singleton(s->type) && other == NONE) {
			other = i;
		}
	}
	if (other != NONE) {
		*at = other;
		return second_of(rr->type);
	}
	if (of_type == 0 && count_types(node) >= RECORDS_RULES_MAX_TYPES) {
		return RECORDS_RULE_TOO_MANY_TYPES;
	}
	if (of_type >= RECORDS_RULES_MAX_RRSET) {
		return RECORDS_RULE_RRSET_FULL;
	}
	if (octets > RECORDS_RULES_MAX_RRSET_OCTETS) {
		return RECORDS_RULE_RRSET_TOO_LARGE;
	}
	return RECORDS_RULE_OK;
}

records_verdict_t records_rules_check_size(const records_rules_node_t *node)
{
	if (count_types(node) > RECORDS_RULES_MAX_TYPES) {
		return RECORDS_RULE_TOO_MANY_TYPES;
	}
	/* Every RRset fits when the node's records together do. */
	size_t total = rrset_octets(node->owner, 0, 0);
	for (size_t i = 0; i < node->count; i++) {
		total += RR_FIXED + node->rr[i].rdata_len;
	}
	if (node->count <= RECORDS_RULES_MAX_RRSET &&
	    total <= RECORDS_RULES_MAX_RRSET_OCTETS) {
		return RECORDS_RULE_OK;
	}
	typedef struct {
		uint32_t count;
		uint32_t octets;
	} per_type_t;
	per_type_t *per = calloc(65536, sizeof(*per));
	if (per == NULL) {
		return RECORDS_RULE_RRSET_FULL; /* Refused: not known to fit. */
	}
	records_verdict_t v = RECORDS_RULE_OK;
	uint32_t owner = (uint32_t)rrset_octets(node->owner, 0, 0);
	for (size_t i = 0; i < node->count && v == RECORDS_RULE_OK; i++) {
		per_type_t *p = &per[node->rr[i].type];
		p->octets += (p->count == 0 ? owner : 0) + RR_FIXED +
		             node->rr[i].rdata_len;
		if (++p->count > RECORDS_RULES_MAX_RRSET) {
			v = RECORDS_RULE_RRSET_FULL;
		} else if (p->octets > RECORDS_RULES_MAX_RRSET_OCTETS) {
			v = RECORDS_RULE_RRSET_TOO_LARGE;
		}
	}
	free(per);
	return v;
}

/* How many records of type the node holds. */
static size_t count_type(const records_rules_node_t *node, uint16_t type)
{
	size_t n = 0;
	for (size_t i = 0; i < node->count; i++) {
		n += node->rr[i].type == type;
	}
	return n;
}

records_verdict_t records_rules_check_remove(const records_rules_node_t *node,
                                             size_t index)
{
	if (index >= node->count) {
		return RECORDS_RULE_OK;
	}
	uint16_t type = node->rr[index].type;
	if (records_rules_is_signer_type(type)) {
		return RECORDS_RULE_SIGNER_TYPE;
	}
	if (type == KNOT_RRTYPE_SOA) {
		return RECORDS_RULE_REMOVES_SOA;
	}
	if (type == KNOT_RRTYPE_NS && is_apex(node) &&
	    count_type(node, KNOT_RRTYPE_NS) <= 1) {
		return RECORDS_RULE_LAST_APEX_NS;
	}
	return RECORDS_RULE_OK;
}

records_verdict_t records_rules_check_replace(const records_rules_node_t *node,
                                              size_t index,
                                              const knot_dname_t *new_owner,
                                              uint16_t new_type)
{
	records_verdict_t v = records_rules_check_remove(node, index);
	bool stays_apex_ns = new_type == KNOT_RRTYPE_NS &&
	                     knot_dname_is_case_equal(new_owner, node->apex);
	return v == RECORDS_RULE_LAST_APEX_NS && stays_apex_ns ?
	       RECORDS_RULE_OK : v;
}

/* --- A whole node (imports) --- */

int records_rules_rr_cmp(const records_rules_rr_t *a,
                         const records_rules_rr_t *b)
{
	if (a->type != b->type) {
		return a->type < b->type ? -1 : 1;
	}
	return records_rules_rdata_cmp(a->type, a->rdata, a->rdata_len,
	                               b->rdata, b->rdata_len);
}

typedef struct {
	records_rules_problem_cb problem;
	void *ctx;
	int count;
} report_t;

static void report(report_t *r, size_t index, records_verdict_t verdict)
{
	r->problem(index, verdict, r->ctx);
	r->count++;
}

/* Of two records in conflict, the later one (by the caller's tag). */
static size_t later(const records_rules_node_t *node, size_t a, size_t b)
{
	return node->rr[a].tag > node->rr[b].tag ? a : b;
}

/* An RRset's records against their neighbour in canonical order. */
static void check_neighbour(const records_rules_node_t *node, size_t i,
                            report_t *r)
{
	const records_rules_rr_t *p = &node->rr[i - 1], *e = &node->rr[i];
	if (p->type != e->type) {
		return;
	}
	if (records_rules_rdata_equal(e->type, p->rdata, p->rdata_len,
	                              e->rdata, e->rdata_len)) {
		report(r, later(node, i - 1, i), RECORDS_RULE_DUPLICATE);
	} else if (is_singleton(e->type)) {
		report(r, later(node, i - 1, i), second_of(e->type));
	} else if (records_rules_needs_retime(p, e)) {
		report(r, i, RECORDS_RULE_TTL_DIFFERS);
	}
}

int records_rules_check_node(const records_rules_node_t *node,
                             records_rules_problem_cb problem, void *ctx)
{
	report_t r = { .problem = problem, .ctx = ctx };
	bool apex = is_apex(node);
	size_t cname = NONE, other = NONE, soa = 0, ns = 0, types = 0, run = 0;
	size_t octets = 0;
	for (size_t i = 0; i < node->count; i++) {
		const records_rules_rr_t *e = &node->rr[i];
		bool first = i == 0 || node->rr[i - 1].type != e->type;
		run = first ? 1 : run + 1;
		octets = (first ? rrset_octets(node->owner, 0, 0) : octets) +
		         RR_FIXED + e->rdata_len;
		if (first && ++types > RECORDS_RULES_MAX_TYPES) {
			report(&r, i, RECORDS_RULE_TOO_MANY_TYPES);
		}
		if (run == RECORDS_RULES_MAX_RRSET + 1) {
			report(&r, i, RECORDS_RULE_RRSET_FULL);
		} else if (octets > RECORDS_RULES_MAX_RRSET_OCTETS &&
		           octets - RR_FIXED - e->rdata_len <=
		           RECORDS_RULES_MAX_RRSET_OCTETS) {
			report(&r, i, RECORDS_RULE_RRSET_TOO_LARGE);
		}
		records_verdict_t v = check_alone(node, e);
		if (v == RECORDS_RULE_SOA_ELSEWHERE ||
		    v == RECORDS_RULE_CNAME_AT_APEX ||
		    v == RECORDS_RULE_DS_AT_APEX ||
		    (v == RECORDS_RULE_SIGNER_TYPE &&
		     !records_rules_is_published_key(e->type))) {
			report(&r, i, v);
		} else if (e->type == KNOT_RRTYPE_SOA && ++soa > 1) {
			report(&r, i, RECORDS_RULE_SECOND_SOA);
		}
		ns += e->type == KNOT_RRTYPE_NS;
		if (e->type == KNOT_RRTYPE_CNAME && !apex) {
			cname = cname == NONE ? i : cname;
		} else if (!cname_compatible(e->type)) {
			other = other == NONE ? i : other;
		}
		if (i > 0) {
			check_neighbour(node, i, &r);
		}
	}
	if (cname != NONE && other != NONE) {
		size_t at = later(node, cname, other);
		report(&r, at, at == cname ? RECORDS_RULE_CNAME_BESIDE_DATA :
		       RECORDS_RULE_DATA_BESIDE_CNAME);
	}
	if (apex && soa == 0) {
		report(&r, NONE, RECORDS_RULE_NO_SOA);
	}
	if (apex && ns == 0) {
		report(&r, NONE, RECORDS_RULE_NO_APEX_NS);
	}
	return r.count;
}

/* --- The subtree rules of DNAME (RFC 6672 §2.4) --- */

bool records_rules_key_is_below(const uint8_t *key, size_t key_len,
                                const uint8_t *anc, size_t anc_len)
{
	/* anc ends a label (or is the apex's empty key): a longer key that
	 * starts with it names a descendant. */
	return key_len > anc_len &&
	       (anc_len == 0 || memcmp(key, anc, anc_len) == 0);
}

size_t records_rules_ancestor_keys(const uint8_t *key, size_t key_len,
                                   size_t *lens)
{
	size_t n = 0;
	lens[n++] = 0;
	for (size_t i = 0; i + 1 < key_len; i++) {
		if (key[i] == 0x00) {
			lens[n++] = i + 1;
		}
	}
	return key_len > 0 ? n : 0;
}

size_t records_rules_subtree_end(const uint8_t *key, size_t key_len,
                                 uint8_t *end)
{
	if (key_len == 0) {
		return 0;
	}
	/* key ends with its 0x00; a descendant's key goes on after it with
	 * a label's first octet. Every key that starts so sorts before the
	 * same prefix ended by 0x01. */
	memcpy(end, key, key_len);
	end[key_len - 1] = 0x01;
	return key_len;
}
