/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Online DNSSEC in answers (signer/signer.h): the zone's keys, an RRSIG
 * after every authoritative RRset when the query has DO=1 and the zone is
 * signed, and compact denial of existence (RFC 9824): one NSEC owned by
 * the denied name itself, signed.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/nsec.h"
#include "dns/successor.h"
#include "server/query.h"

/* The zone's keys, decoded once per stored value and kept while the value
 * stays the same. A value that does not load is logged once (per worker)
 * and the zone is answered unsigned until its value changes. */
bool query_load_keys(query_t *qr)
{
	answer_ctx_t *ctx = qr->ctx;
	const uint8_t *raw;
	size_t len;
	if (edge_keys_get(qr->txn, qr->zone.zone_id, &raw, &len) != ZC_EOK) {
		return false;
	}
	if ((ctx->ks_valid || ctx->ks_refused) &&
	    ctx->ks_zone == qr->zone.zone_id && ctx->ks_len == len &&
	    memcmp(ctx->ks_raw, raw, len) == 0) {
		return ctx->ks_valid;
	}
	if (ctx->ks_valid) {
		signer_keyset_free(&ctx->ks);
	}
	ctx->ks_valid = ctx->ks_refused = false;
	uint8_t *copy = realloc(ctx->ks_raw, len);
	if (copy == NULL) {
		return false;
	}
	memcpy(copy, raw, len);
	ctx->ks_raw = copy;
	ctx->ks_len = len;
	ctx->ks_zone = qr->zone.zone_id;
	int ret = signer_keyset_decode(qr->zone.apex, raw, len, &ctx->ks);
	if (ret != ZC_EOK) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, qr->zone.apex, sizeof(name));
		zc_error("zone %s: its DNSSEC keys in the edge store do not load "
		         "(%s): answers go unsigned until the zone's next full "
		         "build", name, zc_strerror(ret));
		ctx->ks_refused = true;
		return false;
	}
	ctx->ks_valid = true;
	return true;
}

/* Puts rr's RRSIG (made now or taken from the cache) into the current
 * section, whether or not the query has DO=1. */
void query_put_rrsig(query_t *qr, const knot_rrset_t *rr,
                     const knot_dname_t *owner, uint16_t flags)
{
	if (!qr->signed_zone || qr->error != ZC_EOK) {
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
	query_put(qr, &sig, owner, flags);
}

void query_put_signed(query_t *qr, const knot_rrset_t *rr,
                      const knot_dname_t *owner, uint16_t flags)
{
	/* An RRSIG never goes without its RRset (an SOA left out of a
	 * negative answer took its RRSIG's room, and the RRSIG fitted). */
	if (query_put(qr, rr, owner, flags) && qr->dnssec) {
		query_put_rrsig(qr, rr, owner, flags);
	}
}

/* Copies the owner's types, then RRSIG and NSEC, sorted and distinct. */
static size_t nsec_types(const uint16_t *types, size_t ntypes, uint16_t *list)
{
	size_t n = 0;
	for (size_t i = 0; i < ntypes && n < EDGE_NODE_MAX_RRSETS + 1; i++) {
		list[n++] = types[i];
	}
	return dns_nsec_types_finish(list, n);
}

int query_make_nsec(query_t *qr, const knot_dname_t *owner,
                    const uint16_t *types, size_t ntypes, bool at_cut,
                    knot_rrset_t *out)
{
	uint16_t list[EDGE_NODE_MAX_RRSETS + 3];
	size_t n = nsec_types(types, ntypes, list);
	uint8_t rdata[KNOT_DNAME_MAXLEN + 256 * 34];
	/* RFC 9824 §3.1: the first name after the owner; §3.4: at a zone
	 * cut, the first name after the cut's names (which the child zone
	 * holds). dns/successor.h: both fit in 255 octets. */
	size_t len = at_cut ?
	             dns_name_after_subtree(owner, qr->zone.apex, rdata) :
	             dns_name_next(owner, qr->zone.apex, rdata);
	len += dns_nsec_bitmap(list, n, rdata + len);
	/* As the negative answer's: RFC 2308 §3, RFC 9077 §3. */
	uint32_t min = edge_zone_soa_minimum(&qr->zone);
	uint32_t ttl = qr->zone.soa_ttl < min ? qr->zone.soa_ttl : min;
	knot_rrset_init(out, (knot_dname_t *)owner, KNOT_RRTYPE_NSEC,
	                KNOT_CLASS_IN, ttl);
	return knot_rrset_add_rdata(out, rdata, (uint16_t)len, qr->mm);
}

void query_put_compact_nsec(query_t *qr, const knot_dname_t *name,
                            const uint16_t *types, size_t ntypes, bool at_cut)
{
	if (!qr->dnssec || qr->error != ZC_EOK) {
		return;
	}
	knot_rrset_t nsec;
	int ret = query_make_nsec(qr, name, types, ntypes, at_cut, &nsec);
	if (ret != KNOT_EOK) {
		qr->error = ret;
		return;
	}
	knot_pkt_begin(qr->r, KNOT_AUTHORITY);
	query_put_signed(qr, &nsec, name, 0);
}

/* The SOA lives in the zone's metadata, not in the apex node. */
size_t query_node_types(const lookup_t *lk, bool apex, uint16_t *out)
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
