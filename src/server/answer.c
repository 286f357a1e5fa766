/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Authoritative answering from the edge store.
 *
 * Design
 *
 * answer_message() validates the message (FORMERR, NOTIMP, BADVERS, REFUSED
 * outside our zones), then solve() walks the query name down from the zone
 * apex with exact LMDB gets, one per label: a zone cut or a DNAME above the
 * name ends the walk (referral, DNAME synthesis); otherwise the name exists,
 * is an empty non-terminal (a node below it exists), matches a wildcard at
 * its closest encloser, or does not exist. CNAMEs inside the zone are
 * followed. Additional A/AAAA records for NS, MX and SRV targets come last.
 * Each rule cites its RFC where it is applied.
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrtype/opt.h>
#include <libknot/rrtype/rdname.h>
#include <libknot/rrtype/soa.h>

#include "common/error.h"
#include "dns/name.h"
#include "dns/reply.h"
#include "server/answer.h"
#include "server/cookie.h"
#include "server/worker.h"

/* Longest CNAME/DNAME chain followed inside a zone (as Knot DNS does; a
 * resolver restarts from the last target of a longer chain). */
#define MAX_CHAIN 5

/* EDNS ZONEVERSION option (RFC 9660): code and bytes in the response. */
#define ZONEVERSION_CODE 19
#define ZONEVERSION_SIZE (4 + 6)

/* Longest list of names whose A/AAAA went to the additional section. */
#define MAX_ADDITIONAL 64

typedef enum {
	LOOKUP_FOUND,     /* The name exists: its node. */
	LOOKUP_WILDCARD,  /* Synthesised from *.<closest encloser>. */
	LOOKUP_DELEG,     /* A zone cut at or above the name. */
	LOOKUP_DNAME,     /* A DNAME above the name. */
	LOOKUP_ENT,       /* Empty non-terminal. */
	LOOKUP_NX,        /* No such name. */
} lookup_kind_t;

typedef struct {
	lookup_kind_t kind;
	edge_node_t node;
	const knot_dname_t *owner; /* Owner to write the node's RRsets with. */
} lookup_t;

typedef struct {
	answer_ctx_t *ctx;
	knot_mm_t *mm;
	knot_pkt_t *q;
	knot_pkt_t *r;
	edge_txn_t *txn;
	edge_zone_t zone;
	size_t apex_lf_len;
	uint16_t qtype;
	const knot_dname_t *qname; /* As asked (case kept). */
	uint8_t rcode;
	bool aa;
	bool zone_found;       /* qr->zone is the zone answered from. */
	bool want_version;     /* The query asked for ZONEVERSION. */
	bool dnssec;           /* DO=1 and the zone is signed: sign. */
	bool co;               /* Compact Answers OK (RFC 9824 §4). */
	bool bad_cookie;       /* Malformed COOKIE option (RFC 7873 §5.2.2). */
	int error;
	unsigned added_count;
	const knot_dname_t *added[MAX_ADDITIONAL];
} query_t;

/* --- Lookup --- */

/* Suffix of name that a relative LF prefix of rel_len bytes names. */
static const knot_dname_t *owner_of_prefix(const knot_dname_t *name,
                                           const uint8_t *rel, size_t rel_len,
                                           size_t prefix_len)
{
	unsigned below = 0;
	for (size_t i = prefix_len; i < rel_len; i++) {
		below += (rel[i] == 0);
	}
	return dns_name_skip(name, below);
}

static int decode(query_t *qr, const uint8_t *val, size_t len,
                  const knot_dname_t *owner, lookup_t *out)
{
	out->owner = owner;
	return edge_node_decode(val, len, owner, qr->mm, &out->node);
}

/* Finds the closest encloser of a name absent from the zone (RFC 4592
 * §3.3.1): the deepest ancestor that exists, empty non-terminals included. */
static size_t closest_encloser(query_t *qr, const uint8_t *rel, size_t rel_len,
                               size_t deepest_node)
{
	size_t p = rel_len;
	while (p > 0) {
		p--; /* Step to the end of the parent's key... */
		while (p > 0 && rel[p - 1] != 0) {
			p--;
		}
		if (p <= deepest_node ||
		    edge_node_has_below(qr->txn, qr->zone.zone_id, rel, p)) {
			return p;
		}
	}
	return 0;
}

/* RFC 4592 §3.3.1: the source of synthesis is *.<closest encloser>. */
static int find_wildcard(query_t *qr, const knot_dname_t *name,
                         const uint8_t *rel, size_t ce, lookup_t *out)
{
	uint8_t key[DNS_LF_MAXLEN + 2];
	memcpy(key, rel, ce);
	key[ce] = '*';
	key[ce + 1] = 0;
	const uint8_t *val;
	size_t len;
	int ret = edge_node_get(qr->txn, qr->zone.zone_id, key, ce + 2, &val, &len);
	if (ret == KNOT_ENOENT) {
		/* RFC 4592 §2.2.1: a wildcard that is an empty non-terminal
		 * still matches, and yields NODATA. */
		bool ent = edge_node_has_below(qr->txn, qr->zone.zone_id, key,
		                               ce + 2);
		out->kind = ent ? LOOKUP_ENT : LOOKUP_NX;
		out->owner = name;
		return ZC_EOK;
	}
	if (ret == ZC_EOK) {
		out->kind = LOOKUP_WILDCARD;
		ret = decode(qr, val, len, name, out);
	}
	return ret;
}

static int lookup(query_t *qr, const knot_dname_t *name, lookup_t *out)
{
	uint8_t lf[DNS_LF_MAXLEN];
	size_t lf_len = dns_name_to_lf(name, lf);
	const uint8_t *rel = lf + qr->apex_lf_len;
	size_t rel_len = lf_len - qr->apex_lf_len;
	size_t deepest = 0;
	memset(out, 0, sizeof(*out));
	/* Walk from the apex down to the name, one label per step. */
	for (size_t p = 0; p <= rel_len; p++) {
		if (p > 0 && rel[p - 1] != 0) {
			continue; /* Not at a label boundary. */
		}
		const uint8_t *val;
		size_t len;
		int ret = edge_node_get(qr->txn, qr->zone.zone_id, rel, p, &val, &len);
		if (ret == KNOT_ENOENT) {
			continue;
		}
		uint8_t flags;
		uint64_t seq;
		if (ret == ZC_EOK) {
			ret = edge_node_peek(val, len, &flags, &seq);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
		const knot_dname_t *owner = owner_of_prefix(name, rel, rel_len, p);
		if (p == rel_len) {
			/* RFC 4035 §3.1.4.1: DS is answered from the parent side
			 * of a cut; everything else at a cut is a referral. */
			bool cut = (flags & EDGE_NODE_DELEG) &&
			           qr->qtype != KNOT_RRTYPE_DS;
			out->kind = cut ? LOOKUP_DELEG : LOOKUP_FOUND;
			return decode(qr, val, len, owner, out);
		}
		if (flags & EDGE_NODE_DELEG) {
			out->kind = LOOKUP_DELEG; /* RFC 1034 §4.3.2 step 3b. */
			return decode(qr, val, len, owner, out);
		}
		if (flags & EDGE_NODE_DNAME) {
			out->kind = LOOKUP_DNAME; /* RFC 6672 §3.2. */
			return decode(qr, val, len, owner, out);
		}
		deepest = p;
	}
	if (rel_len == 0) {
		out->kind = LOOKUP_FOUND; /* The apex holds only the SOA. */
		out->owner = name;
		return ZC_EOK;
	}
	/* RFC 8020 / RFC 4592 §2.2.2: a name with descendants exists. */
	if (edge_node_has_below(qr->txn, qr->zone.zone_id, rel, rel_len)) {
		out->kind = LOOKUP_ENT;
		out->owner = name;
		return ZC_EOK;
	}
	size_t ce = closest_encloser(qr, rel, rel_len, deepest);
	return find_wildcard(qr, name, rel, ce, out);
}

/* --- Writing sections --- */

static void put(query_t *qr, const knot_rrset_t *rr, const knot_dname_t *owner,
                uint16_t flags)
{
	if (qr->error != ZC_EOK) {
		return;
	}
	knot_rrset_t copy = *rr;
	copy.owner = (knot_dname_t *)owner;
	uint16_t hint = (owner == qr->qname) ? KNOT_COMPR_HINT_QNAME :
	                KNOT_COMPR_HINT_NONE;
	int ret = knot_pkt_put(qr->r, hint, &copy, flags);
	if (ret == KNOT_ESPACE) {
		/* RFC 2181 §9: TC only when required data did not fit;
		 * knot_pkt_put has set it unless NOTRUNC was asked for. */
		if (!(flags & KNOT_PF_NOTRUNC)) {
			qr->error = ret;
		}
	} else if (ret != KNOT_EOK) {
		qr->error = ret;
	}
}

/* --- Online signing (signer/signer.h) --- */

/* EDNS header flags: DO, and CO of RFC 9824 §4. */
#define EDNS_FLAG_CO 0x4000

/* Loads the signing keys of the zone answered from; false: unsigned. */
static bool load_keys(query_t *qr)
{
	answer_ctx_t *ctx = qr->ctx;
	const uint8_t *raw;
	size_t len;
	if (edge_keys_get(qr->txn, qr->zone.zone_id, &raw, &len) != ZC_EOK) {
		return false;
	}
	if (ctx->ks_valid && ctx->ks_zone == qr->zone.zone_id &&
	    ctx->ks_len == len && memcmp(ctx->ks_raw, raw, len) == 0) {
		return true;
	}
	if (ctx->ks_valid) {
		signer_keyset_free(&ctx->ks);
		ctx->ks_valid = false;
	}
	uint8_t *copy = realloc(ctx->ks_raw, len);
	if (copy == NULL) {
		return false;
	}
	memcpy(copy, raw, len);
	ctx->ks_raw = copy;
	ctx->ks_len = len;
	if (signer_keyset_decode(qr->zone.apex, raw, len, &ctx->ks) != ZC_EOK) {
		return false;
	}
	ctx->ks_zone = qr->zone.zone_id;
	ctx->ks_valid = true;
	return true;
}

/* Puts rr's RRSIG (made now or taken from the cache) after it. */
static void put_rrsig(query_t *qr, const knot_rrset_t *rr,
                      const knot_dname_t *owner)
{
	if (!qr->dnssec || qr->error != ZC_EOK) {
		return;
	}
	const signer_keyset_t *ks = &qr->ctx->ks;
	bool apex_key = rr->type == KNOT_RRTYPE_DNSKEY ||
	                rr->type == KNOT_RRTYPE_CDS ||
	                rr->type == KNOT_RRTYPE_CDNSKEY;
	int idx = apex_key ? ks->ksk : ks->zsk;
	if (idx < 0) {
		return;
	}
	knot_rrset_t copy = *rr;
	copy.owner = (knot_dname_t *)owner;
	knot_rrset_t sig;
	knot_rrset_init(&sig, (knot_dname_t *)owner, KNOT_RRTYPE_RRSIG,
	                KNOT_CLASS_IN, rr->ttl);
	int ret = signer_sign_cached(qr->ctx->sigcache, &copy, &ks->keys[idx],
	                             qr->zone.apex, &sig, qr->mm);
	if (ret != ZC_EOK) {
		qr->error = ret;
		return;
	}
	put(qr, &sig, owner, 0);
}

/* An authoritative RRset of the answer or authority section, signed when
 * the query asked for DNSSEC. */
static void put_signed(query_t *qr, const knot_rrset_t *rr,
                       const knot_dname_t *owner, uint16_t flags)
{
	put(qr, rr, owner, flags);
	put_rrsig(qr, rr, owner);
}

/* RFC 4034 §4.1.2: the type bitmap of a sorted, distinct type list. */
static size_t nsec_bitmap(const uint16_t *types, size_t n, uint8_t *out)
{
	size_t len = 0;
	size_t i = 0;
	while (i < n) {
		uint8_t window = (uint8_t)(types[i] >> 8);
		uint8_t bits[32] = { 0 };
		size_t used = 0;
		for (; i < n && (types[i] >> 8) == window; i++) {
			uint8_t low = (uint8_t)types[i];
			bits[low / 8] |= (uint8_t)(0x80 >> (low % 8));
			used = low / 8 + 1;
		}
		out[len++] = window;
		out[len++] = (uint8_t)used;
		memcpy(out + len, bits, used);
		len += used;
	}
	return len;
}

static int type_order(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/*
 * Compact denial (RFC 9824): an NSEC owned by the denied name, next name
 * \000.<name>, the given types plus RRSIG and NSEC, signed, in the
 * authority section; TTL as the negative answer's.
 */
static void put_compact_nsec(query_t *qr, const knot_dname_t *name,
                             const uint16_t *types, size_t ntypes)
{
	if (!qr->dnssec || qr->error != ZC_EOK) {
		return;
	}
	uint16_t list[EDGE_NODE_MAX_RRSETS + 4];
	size_t n = 0;
	for (size_t i = 0; i < ntypes && n < EDGE_NODE_MAX_RRSETS; i++) {
		list[n++] = types[i];
	}
	list[n++] = KNOT_RRTYPE_RRSIG;
	list[n++] = KNOT_RRTYPE_NSEC;
	qsort(list, n, sizeof(list[0]), type_order);
	size_t uniq = 0;
	for (size_t i = 0; i < n; i++) {
		if (uniq == 0 || list[uniq - 1] != list[i]) {
			list[uniq++] = list[i];
		}
	}
	uint8_t rdata[2 + KNOT_DNAME_MAXLEN + 256 * 34];
	size_t name_size = knot_dname_size(name);
	size_t len = 0;
	if (name_size + 2 <= KNOT_DNAME_MAXLEN) {
		rdata[0] = 1; /* \000.<name> */
		rdata[1] = 0;
		len = 2;
	}
	memcpy(rdata + len, name, name_size);
	knot_dname_to_lower(rdata + len);
	len += name_size;
	len += nsec_bitmap(list, uniq, rdata + len);
	uint32_t min = edge_zone_soa_minimum(&qr->zone);
	uint32_t ttl = qr->zone.soa_ttl < min ? qr->zone.soa_ttl : min;
	knot_rrset_t nsec;
	knot_rrset_init(&nsec, (knot_dname_t *)name, KNOT_RRTYPE_NSEC,
	                KNOT_CLASS_IN, ttl);
	if (knot_rrset_add_rdata(&nsec, rdata, (uint16_t)len, qr->mm) != KNOT_EOK) {
		qr->error = KNOT_ENOMEM;
		return;
	}
	knot_pkt_begin(qr->r, KNOT_AUTHORITY);
	put_signed(qr, &nsec, name, 0);
}

/* The types a node holds (the SOA too at the apex: it lives in the zone's
 * metadata, not in the node). */
static size_t node_types(const lookup_t *lk, bool apex, uint16_t *out)
{
	size_t n = 0;
	for (uint16_t i = 0; i < lk->node.count && n < EDGE_NODE_MAX_RRSETS; i++) {
		out[n++] = lk->node.rrsets[i].type;
	}
	if (apex) {
		out[n++] = KNOT_RRTYPE_SOA;
	}
	return n;
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
	/* Like Knot DNS: an SOA that does not fit is left out, without TC. */
	put_signed(qr, &soa, qr->zone.apex, KNOT_PF_NOTRUNC);
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
		put_signed(qr, &soa, lk->owner, 0);
		return true;
	}
	const knot_rrset_t *rr = edge_node_rrset(&lk->node, qtype);
	if (rr == NULL) {
		return false;
	}
	put_signed(qr, rr, lk->owner, 0);
	return true;
}

/* RFC 1034 §4.3.2 step 3b: a referral to the child's servers. */
static void put_referral(query_t *qr, const lookup_t *lk)
{
	const knot_rrset_t *ns = edge_node_rrset(&lk->node, KNOT_RRTYPE_NS);
	knot_pkt_begin(qr->r, KNOT_AUTHORITY);
	if (ns != NULL) {
		put(qr, ns, lk->owner, 0); /* Not authoritative: unsigned. */
	}
	if (!qr->dnssec) {
		return;
	}
	/* RFC 4035 §3.1.4: the DS (secure child), or proof there is none. */
	const knot_rrset_t *ds = edge_node_rrset(&lk->node, KNOT_RRTYPE_DS);
	if (ds != NULL) {
		put_signed(qr, ds, lk->owner, 0);
	} else {
		uint16_t types[EDGE_NODE_MAX_RRSETS + 1];
		size_t n = node_types(lk, false, types);
		put_compact_nsec(qr, lk->owner, types, n);
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
	if (!in_answer(qr, lk->owner, KNOT_RRTYPE_DNAME)) {
		/* Once, even when rewriting loops. */
		put_signed(qr, dname, lk->owner, 0);
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
	put(qr, &cname, name, 0);
	return synth;
}

/* True when the name can be looked up in the zone being answered from. */
static bool in_zone(query_t *qr, const knot_dname_t *name)
{
	return dns_name_is_under(name, qr->zone.apex);
}

/* Runs the lookup loop for the query name, following CNAME and DNAME
 * inside the zone (RFC 1034 §4.3.2, RFC 6672 §3.2). */
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
static void solve(query_t *qr)
{
	const knot_dname_t *names[MAX_CHAIN + 1] = { qr->qname };
	const knot_dname_t *name = qr->qname;
	for (unsigned hop = 0; ; hop++) {
		lookup_t lk;
		int ret = lookup(qr, name, &lk);
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
			put_negative_soa(qr); /* RFC 4592 §2.2.2: NODATA. */
			put_compact_nsec(qr, name, NULL, 0);
			return;
		case LOOKUP_NX: {
			/* RFC 6604 §3; signed (RFC 9824 §3): NOERROR, an
			 * NSEC with NXNAME, NXDOMAIN again for CO. */
			qr->rcode = !qr->dnssec || qr->co ? KNOT_RCODE_NXDOMAIN :
			            KNOT_RCODE_NOERROR;
			put_negative_soa(qr);
			uint16_t nx = SIGNER_NXNAME;
			put_compact_nsec(qr, name, &nx, 1);
			return;
		}
		case LOOKUP_FOUND:
		case LOOKUP_WILDCARD: {
			const knot_rrset_t *cname =
				edge_node_rrset(&lk.node, KNOT_RRTYPE_CNAME);
			if (cname != NULL && !stops_at_cname(qr->qtype)) {
				if (hop >= MAX_CHAIN) {
					return; /* As for DNAME above. */
				}
				put_signed(qr, cname, lk.owner, 0);
				next = knot_cname_name(cname->rrs.rdata);
				break;
			}
			if (!put_node_answer(qr, &lk, is_apex(&lk))) {
				put_negative_soa(qr); /* RFC 2308 §2.2 NODATA. */
				uint16_t types[EDGE_NODE_MAX_RRSETS + 1];
				size_t n = node_types(&lk, is_apex(&lk), types);
				put_compact_nsec(qr, lk.owner, types, n);
			}
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
	if (qr->added_count < MAX_ADDITIONAL) {
		qr->added[qr->added_count++] = name;
	}
	return false;
}

/* Adds A and AAAA of an in-zone target (glue included) to additional. */
static void put_target_addresses(query_t *qr, const knot_dname_t *target)
{
	if (!in_zone(qr, target) || already_added(qr, target)) {
		return;
	}
	uint8_t lf[DNS_LF_MAXLEN];
	size_t lf_len = dns_name_to_lf(target, lf);
	const uint8_t *val;
	size_t len;
	if (edge_node_get(qr->txn, qr->zone.zone_id, lf + qr->apex_lf_len,
	                  lf_len - qr->apex_lf_len, &val, &len) != ZC_EOK) {
		return;
	}
	lookup_t lk;
	if (decode(qr, val, len, target, &lk) != ZC_EOK) {
		return;
	}
	static const uint16_t types[] = { KNOT_RRTYPE_A, KNOT_RRTYPE_AAAA };
	for (unsigned i = 0; i < 2; i++) {
		const knot_rrset_t *rr = edge_node_rrset(&lk.node, types[i]);
		if (rr != NULL) {
			put(qr, rr, target, KNOT_PF_NOTRUNC);
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
static void put_additional(query_t *qr)
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
		for (uint16_t j = 0; j < rr->rrs.count; j++) {
			const knot_dname_t *target = target_of(rd, rr->type);
			if (target != NULL) {
				put_target_addresses(qr, target);
			}
			rd = knot_rdataset_next(rd);
		}
	}
	qr->error = ZC_EOK; /* Additional data is optional (RFC 2181 §9). */
}

/* --- Message level --- */

void answer_ctx_init(answer_ctx_t *ctx, edge_store_t *edge, const char *nsid,
                     size_t sig_slots)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->edge = edge;
	ctx->nsid = nsid;
	ctx->nsid_len = nsid ? strlen(nsid) : 0;
	zc_arena_init(&ctx->arena, 64 * 1024);
	ctx->sigcache = signer_cache_new(sig_slots ? sig_slots :
	                                 ANSWER_SIGCACHE_SLOTS);
}

void answer_ctx_deinit(answer_ctx_t *ctx)
{
	edge_txn_abort(&ctx->txn);
	zc_arena_deinit(&ctx->arena);
	signer_cache_free(ctx->sigcache);
	if (ctx->ks_valid) {
		signer_keyset_free(&ctx->ks);
	}
	free(ctx->ks_raw);
}

/* A header-only error response (plus the question when it parsed). */
static size_t error_response(const knot_pkt_t *q, uint8_t *resp,
                             size_t resp_max, uint8_t rcode)
{
	return dns_error_reply(q->wire, q->size, q->qname_size, resp, resp_max,
	                       rcode);
}

/* RFC 6891 §6.2.3-5: the UDP size we may send. */
static uint16_t udp_limit(const knot_pkt_t *q)
{
	if (q->opt_rr == NULL) {
		return KNOT_WIRE_MIN_PKTSIZE; /* RFC 1035 §4.2.1: 512. */
	}
	uint16_t asked = knot_edns_get_payload(q->opt_rr);
	if (asked < KNOT_EDNS_MIN_UDP_PAYLOAD) {
		asked = KNOT_EDNS_MIN_UDP_PAYLOAD;
	}
	return asked < ANSWER_EDNS_PAYLOAD ? asked : ANSWER_EDNS_PAYLOAD;
}

/* RFC 7873 §5.2: the client cookie back with a new server cookie. */
static int add_cookie(query_t *qr, knot_rrset_t *opt)
{
	uint8_t data[COOKIE_OPTION_MAX];
	uint16_t len = 0;
	switch (cookie_answer(qr->ctx->cookie_secret, qr->ctx->client, qr->q,
	                      data, &len)) {
	case COOKIE_NONE:
		return KNOT_EOK;
	case COOKIE_MALFORMED:
		qr->bad_cookie = true;
		return KNOT_EOK;
	case COOKIE_VALID:
		qr->ctx->cookie_valid = true;
		break;
	case COOKIE_NEW:
		break;
	}
	return knot_edns_add_option(opt, KNOT_EDNS_OPTION_COOKIE, len, data,
	                            qr->mm);
}

/* Prepares the response OPT (RFC 6891 §6.1.1) and reserves its room. */
static int prepare_opt(query_t *qr, knot_rrset_t *opt)
{
	int ret = knot_edns_init(opt, ANSWER_EDNS_PAYLOAD, 0, 0, qr->mm);
	if (ret != KNOT_EOK) {
		return ret;
	}
	if (knot_edns_do(qr->q->opt_rr)) {
		knot_edns_set_do(opt);
	}
	/* RFC 9824 §4: CO is echoed by a server that knows it. */
	qr->co = (qr->q->opt_rr->ttl & EDNS_FLAG_CO) != 0;
	if (qr->co) {
		opt->ttl |= EDNS_FLAG_CO;
	}
	/* RFC 5001 §2.1: NSID only when asked for and configured. */
	if (qr->ctx->nsid_len > 0 &&
	    knot_pkt_edns_option(qr->q, KNOT_EDNS_OPTION_NSID) != NULL) {
		ret = knot_edns_add_option(opt, KNOT_EDNS_OPTION_NSID,
		                           qr->ctx->nsid_len,
		                           (const uint8_t *)qr->ctx->nsid, qr->mm);
		if (ret != KNOT_EOK) {
			return ret;
		}
	}
	if (qr->ctx->cookie_secret != NULL && qr->ctx->client != NULL) {
		ret = add_cookie(qr, opt);
		if (ret != KNOT_EOK) {
			return ret;
		}
	}
	/* RFC 9660: room for ZONEVERSION, filled in once the zone is known. */
	qr->want_version = knot_edns_get_option(qr->q->opt_rr, ZONEVERSION_CODE,
	                                        NULL) != NULL;
	return knot_pkt_reserve(qr->r, knot_edns_wire_size(opt) +
	                        (qr->want_version ? ZONEVERSION_SIZE : 0));
}

/* RFC 9660 §3: LABELCOUNT of the apex, TYPE 0 (SOA-SERIAL), the serial:
 * which version of the zone produced this answer. */
static void add_zone_version(query_t *qr, knot_rrset_t *opt)
{
	uint8_t data[6];
	uint32_t serial = qr->zone.serial;
	data[0] = (uint8_t)dns_name_labels(qr->zone.apex);
	data[1] = 0;
	data[2] = (uint8_t)(serial >> 24);
	data[3] = (uint8_t)(serial >> 16);
	data[4] = (uint8_t)(serial >> 8);
	data[5] = (uint8_t)serial;
	knot_edns_add_option(opt, ZONEVERSION_CODE, sizeof(data), data, qr->mm);
}

/* Finds the zone to answer from; DS at a zone apex comes from the parent
 * zone when we serve it (RFC 4035 §3.1.4.1). */
static int find_zone(query_t *qr)
{
	uint8_t lf[DNS_LF_MAXLEN];
	size_t lf_len = dns_name_to_lf(qr->qname, lf);
	int ret = edge_zone_find(qr->txn, lf, lf_len, &qr->zone, &qr->apex_lf_len);
	if (ret != ZC_EOK || qr->qtype != KNOT_RRTYPE_DS ||
	    qr->apex_lf_len != lf_len || lf_len == 0) {
		return ret;
	}
	size_t parent = lf_len - 1;
	while (parent > 0 && lf[parent - 1] != 0) {
		parent--;
	}
	edge_zone_t zone;
	size_t apex_len;
	if (edge_zone_find(qr->txn, lf, parent, &zone, &apex_len) == ZC_EOK) {
		qr->zone = zone;
		qr->apex_lf_len = apex_len;
	}
	return ZC_EOK;
}

/* Checks the question; returns an RCODE to send at once, or -1 to answer.
 * Where RFCs leave the choice, the codes are those of Knot DNS, our
 * reference in the differential tests. */
static int check_question(const knot_pkt_t *q, bool tcp)
{
	uint16_t qclass = knot_pkt_qclass(q);
	if (qclass != KNOT_CLASS_IN && qclass != KNOT_CLASS_ANY) {
		return KNOT_RCODE_REFUSED;
	}
	switch (knot_pkt_qtype(q)) {
	case 0:
		return KNOT_RCODE_NOTIMPL;
	case SIGNER_NXNAME:
		return KNOT_RCODE_FORMERR; /* RFC 9824 §2: a meta-type. */
	case KNOT_RRTYPE_AXFR:
		/* RFC 5936 §4.2: no AXFR over UDP (FORMERR, as BIND). Over
		 * TCP the transfer hook takes it; without one: NOTAUTH. */
		return tcp ? KNOT_RCODE_NOTAUTH : KNOT_RCODE_FORMERR;
	case KNOT_RRTYPE_IXFR:
		/* RFC 1995 §2: over UDP, the SOA alone tells the client to
		 * come back over TCP (answered as an SOA query below). */
		return tcp ? KNOT_RCODE_NOTAUTH : -1;
	default:
		return -1;
	}
}

/* Finishes the response: RCODE, AA, OPT. */
static void finish(query_t *qr, knot_rrset_t *opt, uint8_t ext_rcode)
{
	knot_wire_set_rcode(qr->r->wire, KNOT_EDNS_RCODE_LO(qr->rcode));
	if (qr->aa) {
		knot_wire_set_aa(qr->r->wire);
	}
	if (opt != NULL) {
		knot_edns_set_ext_rcode(opt, ext_rcode);
		size_t reserved = knot_edns_wire_size(opt) +
		                  (qr->want_version ? ZONEVERSION_SIZE : 0);
		if (qr->want_version && qr->zone_found) {
			add_zone_version(qr, opt);
		}
		knot_pkt_reclaim(qr->r, reserved);
		knot_pkt_begin(qr->r, KNOT_ADDITIONAL);
		knot_pkt_put(qr->r, KNOT_COMPR_HINT_NONE, opt, KNOT_PF_NOTRUNC);
	}
}

static void answer_in_zone(query_t *qr)
{
	int ret = edge_txn_begin_read(qr->ctx->edge, &qr->ctx->txn);
	qr->txn = &qr->ctx->txn;
	if (ret == ZC_EOK) {
		ret = find_zone(qr);
	}
	if (ret == ZC_ENOZONE) {
		qr->rcode = KNOT_RCODE_REFUSED; /* Not ours (RFC 1034 §4.3.2). */
	} else if (ret != ZC_EOK) {
		qr->rcode = KNOT_RCODE_SERVFAIL;
	} else {
		qr->aa = true;
		qr->zone_found = true;
		qr->dnssec = qr->q->opt_rr != NULL && knot_edns_do(qr->q->opt_rr) &&
		             load_keys(qr);
		knot_pkt_begin(qr->r, KNOT_ANSWER);
		solve(qr);
		put_additional(qr);
		if (qr->error != ZC_EOK && qr->error != KNOT_ESPACE) {
			qr->rcode = KNOT_RCODE_SERVFAIL;
		}
	}
	edge_txn_reset(&qr->ctx->txn);
}

size_t answer_message(answer_ctx_t *ctx, const uint8_t *query, size_t qlen,
                      uint8_t *resp, size_t resp_max, bool tcp)
{
	/* Too short for a header, or a response: drop (RFC 1035 §4.1.1). */
	if (qlen < KNOT_WIRE_HEADER_SIZE || knot_wire_get_qr(query) ||
	    resp_max < KNOT_WIRE_MIN_PKTSIZE) {
		return 0;
	}
	zc_arena_reset(&ctx->arena);
	ctx->cookie_valid = false;
	query_t qr = { .ctx = ctx, .mm = zc_arena_mm(&ctx->arena) };
	qr.q = knot_pkt_new((uint8_t *)query, qlen, qr.mm);
	qr.r = knot_pkt_new(resp, resp_max, qr.mm);
	if (qr.q == NULL || qr.r == NULL) {
		return 0;
	}
	uint8_t opcode = knot_wire_get_opcode(query);
	if (opcode != KNOT_OPCODE_QUERY) {
		/* RFC 1996: we are no secondary, so NOTIFY is not for us. */
		knot_pkt_parse_question(qr.q);
		return error_response(qr.q, resp, resp_max,
		                      opcode == KNOT_OPCODE_NOTIFY ?
		                      KNOT_RCODE_NOTAUTH : KNOT_RCODE_NOTIMPL);
	}
	/* Malformed: bad names, counts, trailing data, bad or repeated OPT
	 * (RFC 6891 §6.1.1) all fail the parse. */
	if (knot_wire_get_qdcount(query) != 1 ||
	    knot_pkt_parse(qr.q, 0) != KNOT_EOK) {
		/* RFC 9619: FORMERR for QDCOUNT != 1 too. A message whose
		 * question cannot even be read gets no answer (as Knot). */
		if (knot_wire_get_qdcount(query) == 1 &&
		    knot_pkt_parse_question(qr.q) != KNOT_EOK) {
			return 0;
		}
		return error_response(qr.q, resp, resp_max, KNOT_RCODE_FORMERR);
	}
	int rcode = check_question(qr.q, tcp);
	if (rcode >= 0 && qr.q->opt_rr == NULL) {
		return error_response(qr.q, resp, resp_max, rcode);
	}
	if (knot_pkt_init_response(qr.r, qr.q) != KNOT_EOK) {
		return 0;
	}
	if (!tcp) {
		qr.r->max_size = udp_limit(qr.q);
	}
	qr.qname = knot_pkt_qname(qr.r);
	qr.qtype = knot_pkt_qtype(qr.q);
	if (qr.qtype == KNOT_RRTYPE_IXFR) {
		qr.qtype = KNOT_RRTYPE_SOA;
	}
	knot_rrset_t opt;
	knot_rrset_t *optp = NULL;
	if (qr.q->opt_rr != NULL) {
		if (prepare_opt(&qr, &opt) != KNOT_EOK) {
			return error_response(qr.q, resp, resp_max,
			                      KNOT_RCODE_SERVFAIL);
		}
		optp = &opt;
		if (knot_edns_get_version(qr.q->opt_rr) != 0) {
			/* RFC 6891 §6.1.3: BADVERS, version 0. */
			qr.rcode = KNOT_RCODE_BADVERS;
			finish(&qr, optp, KNOT_EDNS_RCODE_HI(qr.rcode));
			return qr.r->size;
		}
		if (qr.bad_cookie) {
			qr.rcode = KNOT_RCODE_FORMERR;
			finish(&qr, optp, 0);
			return qr.r->size;
		}
	}
	if (rcode >= 0) {
		qr.rcode = (uint8_t)rcode;
	} else {
		answer_in_zone(&qr);
	}
	finish(&qr, optp, 0);
	return qr.r->size;
}

/* Skips a (possibly compressed) name; 0 when malformed. */
static size_t skip_name(const uint8_t *msg, size_t len, size_t pos)
{
	while (pos < len) {
		uint8_t l = msg[pos];
		if (l == 0) {
			return pos + 1;
		}
		if ((l & 0xc0) == 0xc0) {
			return pos + 2 <= len ? pos + 2 : 0;
		}
		if (l > 63) {
			return 0;
		}
		pos += 1u + l;
	}
	return 0;
}

/* True when the message's last RR is a TSIG (RFC 8945 §5.1: it must be
 * the last of the additional section). */
static bool has_tsig(const uint8_t *msg, size_t len)
{
	if (knot_wire_get_arcount(msg) == 0) {
		return false;
	}
	size_t pos = KNOT_WIRE_HEADER_SIZE;
	for (unsigned i = 0; i < knot_wire_get_qdcount(msg); i++) {
		pos = skip_name(msg, len, pos);
		if (pos == 0 || pos + 4 > len) {
			return false;
		}
		pos += 4;
	}
	unsigned rrs = knot_wire_get_ancount(msg) + knot_wire_get_nscount(msg) +
	               knot_wire_get_arcount(msg);
	uint16_t type = 0;
	for (unsigned i = 0; i < rrs; i++) {
		pos = skip_name(msg, len, pos);
		if (pos == 0 || pos + 10 > len) {
			return false;
		}
		type = (uint16_t)(msg[pos] << 8 | msg[pos + 1]);
		pos += 10u + (size_t)(msg[pos + 8] << 8 | msg[pos + 9]);
		if (pos > len) {
			return false;
		}
	}
	return type == KNOT_RRTYPE_TSIG;
}

message_kind_t server_message_kind(const uint8_t *msg, size_t len, bool tcp,
                                   const server_hooks_t *hooks)
{
	if (hooks == NULL || len < KNOT_WIRE_HEADER_SIZE || knot_wire_get_qr(msg)) {
		return MESSAGE_QUERY;
	}
	uint8_t opcode = knot_wire_get_opcode(msg);
	if (opcode == KNOT_OPCODE_UPDATE) {
		return hooks->update != NULL ? MESSAGE_UPDATE : MESSAGE_QUERY;
	}
	bool signed_msg = hooks->signed_query != NULL && has_tsig(msg, len);
	if (!tcp || opcode != KNOT_OPCODE_QUERY || hooks->transfer == NULL ||
	    knot_wire_get_qdcount(msg) != 1) {
		return signed_msg ? MESSAGE_SIGNED : MESSAGE_QUERY;
	}
	/* The question's type follows its (uncompressed) name. */
	size_t pos = KNOT_WIRE_HEADER_SIZE;
	while (pos < len && msg[pos] != 0) {
		if (msg[pos] > 63) {
			return MESSAGE_QUERY;
		}
		pos += 1u + msg[pos];
	}
	if (pos + 3 > len) {
		return MESSAGE_QUERY;
	}
	uint16_t qtype = (uint16_t)(msg[pos + 1] << 8 | msg[pos + 2]);
	if (qtype == KNOT_RRTYPE_AXFR || qtype == KNOT_RRTYPE_IXFR) {
		return MESSAGE_TRANSFER;
	}
	return signed_msg ? MESSAGE_SIGNED : MESSAGE_QUERY;
}
