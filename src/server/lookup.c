/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Finding a name in the zone answered from.
 *
 * The walk goes from the zone apex down to the name with exact LMDB gets,
 * one per label (an ancestor's key is a prefix of the name's key,
 * dns/name.h): a zone cut or a DNAME above the name ends it (referral,
 * DNAME synthesis); otherwise the name exists, is an empty non-terminal (a
 * node below it exists: one cursor seek), matches a wildcard at its
 * closest encloser, or does not exist.
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "server/query.h"

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

int query_decode_node(query_t *qr, const uint8_t *val, size_t len,
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
		ret = query_decode_node(qr, val, len, name, out);
	}
	return ret;
}

int query_lookup(query_t *qr, const knot_dname_t *name, lookup_t *out)
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
			return query_decode_node(qr, val, len, owner, out);
		}
		if (flags & EDGE_NODE_DELEG) {
			out->kind = LOOKUP_DELEG; /* RFC 1034 §4.3.2 step 3b. */
			return query_decode_node(qr, val, len, owner, out);
		}
		if (flags & EDGE_NODE_DNAME) {
			out->kind = LOOKUP_DNAME; /* RFC 6672 §3.2. */
			return query_decode_node(qr, val, len, owner, out);
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
