/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The answering rules: what goes in the answer, authority and additional
 * sections for a name lookup.c found (RFC 1034 §4.3.2, RFC 2308, RFC 4592,
 * RFC 6672, RFC 4035 §3.1). CNAMEs inside the zone are followed; addresses
 * of NS, MX, SRV, SVCB and HTTPS targets come last, as additional data.
 * Each rule cites its RFC where it is applied.
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/rdname.h>
#include <libknot/rrtype/soa.h>

#include "common/error.h"
#include "dns/name.h"
#include "dns/pkt_put.h"
#include "server/query.h"
#include "signer/signer.h"

/* Longest CNAME/DNAME chain followed inside a zone (as Knot DNS does; a
 * resolver restarts from the last target of a longer chain). */
#define MAX_CHAIN 5

/* query_put() with a compression hint: where the owner is already
 * written (KNOT_COMPR_HINT_NONE: nowhere known). */
static bool put_hinted(query_t *qr, const knot_rrset_t *rr,
                       const knot_dname_t *owner, uint16_t hint,
                       uint16_t flags)
{
	if (qr->error != ZC_EOK) {
		return false;
	}
	knot_rrset_t copy = *rr;
	copy.owner = (knot_dname_t *)owner;
	int ret = dns_pkt_put(qr->r, hint, &copy, flags);
	if (ret == KNOT_ESPACE) {
		/* RFC 2181 §9: TC only when required data did not fit;
		 * knot_pkt_put has set it unless NOTRUNC was asked for. */
		if (!(flags & KNOT_PF_NOTRUNC)) {
			qr->error = ret;
		}
	} else if (ret != KNOT_EOK) {
		qr->error = ret;
	}
	return ret == KNOT_EOK;
}

bool query_put(query_t *qr, const knot_rrset_t *rr, const knot_dname_t *owner,
               uint16_t flags)
{
	return put_hinted(qr, rr, owner, owner == qr->qname ?
	                  KNOT_COMPR_HINT_QNAME : KNOT_COMPR_HINT_NONE, flags);
}

/* The zone's SOA from its metadata, owned by the apex. */
static knot_rrset_t soa_rrset(query_t *qr, uint32_t ttl)
{
	knot_rrset_t soa;
	knot_rrset_init(&soa, qr->zone.apex, KNOT_RRTYPE_SOA, KNOT_CLASS_IN, ttl);
	knot_rrset_add_rdata(&soa, qr->zone.soa, qr->zone.soa_len, qr->mm);
	return soa;
}

/* RFC 2308 §3: negative answers carry the SOA with TTL min(TTL, MINIMUM). */
static void put_negative_soa(query_t *qr)
{
	uint32_t min = edge_zone_soa_minimum(&qr->zone);
	uint32_t ttl = qr->zone.soa_ttl < min ? qr->zone.soa_ttl : min;
	knot_pkt_begin(qr->r, KNOT_AUTHORITY);
	knot_rrset_t soa = soa_rrset(qr, ttl);
	/* Like Knot DNS: an SOA that does not fit is left out, without TC;
	 * but not from a signed answer, whose denial a validator proves
	 * with the SOA and its RRSIG (RFC 4035 §3.1.3: TC then). */
	query_put_signed(qr, &soa, qr->zone.apex, qr->dnssec ? 0 :
	                 KNOT_PF_NOTRUNC);
}

static bool is_apex(const lookup_t *lk)
{
	return lk->kind == LOOKUP_FOUND && (lk->node.flags & EDGE_NODE_APEX);
}

/* Answers qtype from a node that exists (or matched a wildcard). Returns
 * false when the node has no such data (NODATA). */
static bool put_node_answer(query_t *qr, const lookup_t *lk, bool apex)
{
	uint16_t qtype = qr->qtype;
	if (qtype == KNOT_RRTYPE_ANY) {
		/* RFC 8482 §4.2: one RRset is enough; like Knot DNS we give
		 * the one with the lowest type (the SOA competes at the apex). */
		if (lk->node.count > 0) {
			qtype = lk->node.rrsets[0].type;
		}
		if (apex && (lk->node.count == 0 || qtype > KNOT_RRTYPE_SOA)) {
			qtype = KNOT_RRTYPE_SOA;
		}
	}
	if (apex && qtype == KNOT_RRTYPE_SOA) {
		knot_rrset_t soa = soa_rrset(qr, qr->zone.soa_ttl);
		query_put_signed(qr, &soa, lk->owner, 0);
		return true;
	}
	const knot_rrset_t *rr = edge_node_rrset(&lk->node, qtype);
	if (rr == NULL) {
		return false;
	}
	query_put_signed(qr, rr, lk->owner, 0);
	return true;
}

/* RFC 1034 §4.3.2 step 3b: a referral to the child's servers. */
static void put_referral(query_t *qr, const lookup_t *lk)
{
	const knot_rrset_t *ns = edge_node_rrset(&lk->node, KNOT_RRTYPE_NS);
	knot_pkt_begin(qr->r, KNOT_AUTHORITY);
	if (ns != NULL) {
		query_put(qr, ns, lk->owner, 0); /* Not authoritative: unsigned. */
	}
	if (!qr->dnssec) {
		return;
	}
	/* RFC 4035 §3.1.4: the DS (secure child), or proof there is none. */
	const knot_rrset_t *ds = edge_node_rrset(&lk->node, KNOT_RRTYPE_DS);
	if (ds != NULL) {
		query_put_signed(qr, ds, lk->owner, 0);
	} else {
		/* RFC 9824 §3.4: the NSEC's next name is outside the cut. */
		uint16_t types[EDGE_NODE_MAX_RRSETS + 1];
		size_t n = query_node_types(lk, false, types);
		query_put_compact_nsec(qr, lk->owner, types, n, true);
	}
}

/* True for a query for NSEC or RRSIG in a signed zone. */
static bool asks_dnssec_type(const query_t *qr)
{
	return qr->signed_zone && (qr->qtype == KNOT_RRTYPE_NSEC ||
	                           qr->qtype == KNOT_RRTYPE_RRSIG);
}

/*
 * A query for NSEC or RRSIG at a name of a signed zone (lk: the name's
 * node, or NULL for an empty non-terminal or, with DO=1, a name that does
 * not exist; types: what the NSEC lists besides RRSIG and NSEC). Online
 * signing gives every such name an NSEC (RFC 9824 §3) that lists NSEC and
 * RRSIG (RFC 4035 §2.3), so a NODATA for either type cannot be proven: the
 * answer is the data. For NSEC, the NSEC compact denial would give at the
 * name, signed with DO=1; for RRSIG, the RRSIGs of every RRset at the name,
 * that NSEC's included, themselves unsigned (RFC 4034 §3). RFC 3225 §3:
 * security records asked for explicitly are given without DO=1 too.
 */
static void put_dnssec_answer(query_t *qr, const lookup_t *lk,
                              const knot_dname_t *owner, bool apex,
                              const uint16_t *types, size_t ntypes)
{
	knot_rrset_t nsec;
	int ret = query_make_nsec(qr, owner, types, ntypes, false, &nsec);
	if (ret != KNOT_EOK) {
		qr->error = ret;
		return;
	}
	if (qr->qtype == KNOT_RRTYPE_NSEC) {
		query_put_signed(qr, &nsec, owner, 0);
		return;
	}
	if (apex) {
		knot_rrset_t soa = soa_rrset(qr, qr->zone.soa_ttl);
		query_put_rrsig(qr, &soa, owner, 0);
	}
	for (uint16_t i = 0; lk != NULL && i < lk->node.count; i++) {
		query_put_rrsig(qr, &lk->node.rrsets[i], owner, 0);
	}
	query_put_rrsig(qr, &nsec, owner, 0);
}

/* RFC 6604 §3; signed (RFC 9824 §3): NOERROR and an NSEC with NXNAME,
 * NXDOMAIN again for CO. */
static void put_nonexistent(query_t *qr, const knot_dname_t *name)
{
	uint16_t nx = SIGNER_NXNAME;
	bool compact = qr->dnssec && !qr->co;
	if (compact && asks_dnssec_type(qr)) {
		put_dnssec_answer(qr, NULL, name, false, &nx, 1);
		return;
	}
	qr->rcode = compact ? KNOT_RCODE_NOERROR : KNOT_RCODE_NXDOMAIN;
	put_negative_soa(qr);
	query_put_compact_nsec(qr, name, &nx, 1, false);
}

/* A name that exists or matched a wildcard, its CNAME aside: the data,
 * or NODATA (RFC 2308 §2.2). */
static void put_found(query_t *qr, const lookup_t *lk)
{
	bool apex = is_apex(lk);
	uint16_t types[EDGE_NODE_MAX_RRSETS + 1];
	size_t n = query_node_types(lk, apex, types);
	if (asks_dnssec_type(qr)) {
		put_dnssec_answer(qr, lk, lk->owner, apex, types, n);
	} else if (!put_node_answer(qr, lk, apex)) {
		put_negative_soa(qr);
		/* A DS query at a cut: RFC 9824 §3.4. */
		bool cut = lk->node.flags & EDGE_NODE_DELEG;
		query_put_compact_nsec(qr, lk->owner, types, n, cut);
	}
}

/* True when the answer already holds the RRset (owner, type). */
static bool in_answer(query_t *qr, const knot_dname_t *owner, uint16_t type)
{
	const knot_pktsection_t *an = knot_pkt_section(qr->r, KNOT_ANSWER);
	for (uint16_t i = 0; i < an->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(an, i);
		if (rr->type == type && knot_dname_is_case_equal(rr->owner, owner)) {
			return true;
		}
	}
	return false;
}

/* RFC 6672 §3.2: DNAME, then a CNAME synthesised for the name. Returns the
 * new target, or NULL when none (YXDOMAIN set if it would be too long). */
static const knot_dname_t *put_dname(query_t *qr, const lookup_t *lk,
                                     const knot_dname_t *name)
{
	const knot_rrset_t *dname = edge_node_rrset(&lk->node, KNOT_RRTYPE_DNAME);
	if (dname == NULL) {
		/* A node flagged DNAME without one: the store is damaged
		 * (edge_node_check() refuses such a node from the log). */
		qr->error = ZC_EFORMAT;
		return NULL;
	}
	if (!in_answer(qr, lk->owner, KNOT_RRTYPE_DNAME)) {
		/* Once, even when rewriting loops. */
		query_put_signed(qr, dname, lk->owner, 0);
	}
	const knot_dname_t *target = knot_dname_target(dname->rrs.rdata);
	unsigned owner_labels = dns_name_labels(lk->owner);
	unsigned name_labels = dns_name_labels(name);
	size_t prefix = knot_dname_size(name) - knot_dname_size(lk->owner);
	if (prefix + knot_dname_size(target) > KNOT_DNAME_MAXLEN) {
		qr->rcode = KNOT_RCODE_YXDOMAIN; /* RFC 6672 §2.2. */
		return NULL;
	}
	(void)name_labels;
	knot_dname_t *synth = knot_dname_replace_suffix(name, owner_labels,
	                                                target, qr->mm);
	if (synth == NULL) {
		qr->error = KNOT_ENOMEM;
		return NULL;
	}
	knot_rrset_t cname;
	knot_rrset_init(&cname, (knot_dname_t *)name, KNOT_RRTYPE_CNAME,
	                KNOT_CLASS_IN, dname->ttl);
	uint8_t rdata[KNOT_DNAME_MAXLEN];
	size_t len = knot_dname_to_wire(rdata, synth, sizeof(rdata));
	knot_rrset_add_rdata(&cname, rdata, len, qr->mm);
	query_put(qr, &cname, name, 0);
	return synth;
}

/* True when the name can be looked up in the zone being answered from. */
static bool in_zone(query_t *qr, const knot_dname_t *name)
{
	return dns_name_is_under(name, qr->zone.apex);
}

/* True when a CNAME at the name answers the query instead of being
 * followed (RFC 1034 §3.6.2; RRSIG and NSEC belong to the CNAME's owner). */
static bool stops_at_cname(uint16_t qtype)
{
	return qtype == KNOT_RRTYPE_CNAME || qtype == KNOT_RRTYPE_ANY ||
	       qtype == KNOT_RRTYPE_RRSIG || qtype == KNOT_RRTYPE_NSEC;
}

static bool visited(const knot_dname_t *const *names, unsigned count,
                    const knot_dname_t *name)
{
	for (unsigned i = 0; i < count; i++) {
		if (knot_dname_is_case_equal(names[i], name)) {
			return true;
		}
	}
	return false;
}

/* Runs the lookup loop for the query name, following CNAME and DNAME
 * inside the zone (RFC 1034 §4.3.2, RFC 6672 §3.2) up to MAX_CHAIN links,
 * stopping at a loop (each record appears once). */
void query_solve(query_t *qr)
{
	const knot_dname_t *names[MAX_CHAIN + 1] = { qr->qname };
	const knot_dname_t *name = qr->qname;
	for (unsigned hop = 0; ; hop++) {
		lookup_t lk;
		int ret = query_lookup(qr, name, &lk);
		if (ret != ZC_EOK) {
			qr->error = ret;
			return;
		}
		const knot_dname_t *next = NULL;
		switch (lk.kind) {
		case LOOKUP_DELEG:
			qr->aa = (hop > 0);
			put_referral(qr, &lk);
			return;
		case LOOKUP_DNAME:
			if (hop >= MAX_CHAIN) {
				return; /* Chain too long: the resolver goes on. */
			}
			next = put_dname(qr, &lk, name);
			if (qr->qtype == KNOT_RRTYPE_CNAME) {
				return; /* The synthesised CNAME is the answer. */
			}
			break;
		case LOOKUP_ENT:
			if (asks_dnssec_type(qr)) {
				put_dnssec_answer(qr, NULL, name, false, NULL, 0);
				return;
			}
			put_negative_soa(qr); /* RFC 4592 §2.2.2: NODATA. */
			query_put_compact_nsec(qr, name, NULL, 0, false);
			return;
		case LOOKUP_NX:
			put_nonexistent(qr, name);
			return;
		case LOOKUP_FOUND:
		case LOOKUP_WILDCARD: {
			const knot_rrset_t *cname =
				edge_node_rrset(&lk.node, KNOT_RRTYPE_CNAME);
			if (cname != NULL && !stops_at_cname(qr->qtype)) {
				if (hop >= MAX_CHAIN) {
					return; /* As for DNAME above. */
				}
				query_put_signed(qr, cname, lk.owner, 0);
				next = knot_cname_name(cname->rrs.rdata);
				break;
			}
			put_found(qr, &lk);
			return;
		}
		}
		if (next == NULL || !in_zone(qr, next) || qr->error != ZC_EOK ||
		    visited(names, hop + 1, next)) {
			return;
		}
		names[hop + 1] = next;
		name = next;
	}
}

/* --- Additional section --- */

static bool already_added(query_t *qr, const knot_dname_t *name)
{
	for (unsigned i = 0; i < qr->added_count; i++) {
		if (knot_dname_is_case_equal(qr->added[i], name)) {
			return true;
		}
	}
	if (qr->added_count < QUERY_MAX_ADDITIONAL) {
		qr->added[qr->added_count++] = name;
	}
	return false;
}

/* Adds A and AAAA of an in-zone target to additional, looked up as an
 * answer would be (RFC 1034 §4.3.2): its own node, or the wildcard that
 * matches it (RFC 4592 §4.1, owned by the target, as knotd gives them);
 * glue when it is at or below a cut; nothing below a DNAME (occluded:
 * it was given, where a query for it gets the DNAME's rewrite).
 * Required: a referral's in-domain glue (RFC 9471 §3.1: when it does not
 * all fit, TC is set and nothing more is added); else they are added as
 * room allows, without TC (RFC 2181 §9). Authoritative addresses go with
 * their RRSIGs when DO=1 (RFC 4035 §3.1.1, left out when they do not
 * fit); glue is never signed. An SVCB or HTTPS record's target gives its
 * own RRset of that type too (RFC 9460 §4.1: an AliasMode record's
 * target is one, a ServiceMode one's may be; as knotd gives them):
 * svcb_type, else 0. */
static void put_target_addresses(query_t *qr, const knot_dname_t *target,
                                 uint16_t hint, bool required,
                                 uint16_t svcb_type)
{
	if (!in_zone(qr, target) || already_added(qr, target)) {
		return;
	}
	lookup_t lk;
	bool glue = required;
	if (!required) {
		if (query_lookup(qr, target, &lk) != ZC_EOK) {
			return;
		}
		if (lk.kind == LOOKUP_DELEG) {
			glue = true;    /* At or below a cut: its own node. */
		} else if (lk.kind != LOOKUP_FOUND &&
		           lk.kind != LOOKUP_WILDCARD) {
			return;         /* No such name, or occluded. */
		}
	}
	if (glue) {
		uint8_t lf[DNS_LF_MAXLEN];
		size_t lf_len = dns_name_to_lf(target, lf);
		const uint8_t *val;
		size_t len;
		if (edge_node_get(qr->txn, qr->zone.zone_id,
		                  lf + qr->apex_lf_len, lf_len - qr->apex_lf_len,
		                  &val, &len) != ZC_EOK ||
		    query_decode_node(qr, val, len, target, &lk) != ZC_EOK) {
			return;
		}
	}
	bool sign = qr->dnssec && !glue;
	const uint16_t types[] = { KNOT_RRTYPE_A, KNOT_RRTYPE_AAAA, svcb_type };
	unsigned n = svcb_type != 0 && !glue ? 3 : 2;
	for (unsigned i = 0; i < n; i++) {
		const knot_rrset_t *rr = edge_node_rrset(&lk.node, types[i]);
		uint16_t flags = required ? 0 : KNOT_PF_NOTRUNC;
		if (rr != NULL && put_hinted(qr, rr, target, hint, flags) &&
		    sign) {
			query_put_rrsig(qr, rr, target, KNOT_PF_NOTRUNC);
		}
	}
}

/* The target name of an RR that gets additional addresses, or NULL. */
static const knot_dname_t *target_of(const knot_rdata_t *rd, uint16_t type)
{
	switch (type) {
	case KNOT_RRTYPE_NS:
	case KNOT_RRTYPE_MX:
	case KNOT_RRTYPE_SRV:
		return knot_rdata_name(rd, type);
	case KNOT_RRTYPE_SVCB:
	case KNOT_RRTYPE_HTTPS:
		/* RFC 9460 §4.1: SvcPriority (2 octets), then TargetName. */
		return rd->len > 2 ? rd->data + 2 : NULL;
	default:
		return NULL;
	}
}

/* RFC 1035 §3.3.9, §3.3.11, RFC 2782, RFC 9460 §4.1: addresses of NS, MX,
 * SRV, SVCB and HTTPS targets. */
void query_put_additional(query_t *qr)
{
	if (qr->error != ZC_EOK) {
		return;
	}
	uint16_t count = qr->r->rrset_count;
	knot_pkt_begin(qr->r, KNOT_ADDITIONAL);
	for (uint16_t i = 0; i < count; i++) {
		/* A copy: putting RRsets may move the packet's array. */
		knot_rrset_t copy = qr->r->rr[i];
		const knot_rrset_t *rr = &copy;
		knot_rdata_t *rd = rr->rrs.rdata;
		/* A delegation's NS (not the apex's): its targets at or
		 * below the cut are glue the referral needs. */
		bool cut = rr->type == KNOT_RRTYPE_NS &&
		           !knot_dname_is_case_equal(rr->owner, qr->zone.apex);
		for (uint16_t j = 0; j < rr->rrs.count; j++) {
			const knot_dname_t *target = target_of(rd, rr->type);
			/* The owner as a pointer to the name in the rdata
			 * (as knotd does: 18 glued NS fit in 1,232 octets). */
			uint16_t hint = knot_compr_hint(&qr->r->rr_info[i],
			                                KNOT_COMPR_HINT_RDATA + j);
			/* Not the answer's own RRset again (a target
			 * naming its owner). */
			bool svcb = (rr->type == KNOT_RRTYPE_SVCB ||
			             rr->type == KNOT_RRTYPE_HTTPS) &&
			            target != NULL &&
			            !knot_dname_is_equal(target, rr->owner);
			if (target != NULL) {
				put_target_addresses(qr, target, hint, cut &&
				                     dns_name_is_under(target,
				                                       rr->owner),
				                     svcb ? rr->type : 0);
			}
			rd = knot_rdataset_next(rd);
		}
	}
	qr->error = ZC_EOK; /* Additional data is optional (RFC 2181 §9). */
}
