/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RRSIG generation (RFC 4034 §3.1.8.1): the RRSIG rdata without its
 * signature, then every RR of the set in canonical form (RFC 4034 §6:
 * lowercase owner and rdata names, original TTL, rdata sorted as octet
 * strings), signed with libdnssec.
 */
#include <stdlib.h>
#include <string.h>
#include <libdnssec/error.h>
#include <libdnssec/sign.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/rrsig.h>

#include "common/error.h"
#include "dns/name.h"
#include "signer/signer.h"

static int rdata_order(const void *a, const void *b)
{
	return knot_rdata_cmp(*(knot_rdata_t *const *)a,
	                      *(knot_rdata_t *const *)b);
}

/* RFC 4034 §3.1.3: labels of the owner, a leading '*' not counted. */
static uint8_t owner_labels(const knot_dname_t *owner)
{
	unsigned labels = dns_name_labels(owner);
	if (owner[0] == 1 && owner[1] == '*' && labels > 0) {
		labels--;
	}
	return (uint8_t)labels;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int signer_sign_rdata(const knot_rrset_t *rr, const signer_key_t *key,
                      const uint8_t *signer, uint32_t inception,
                      uint32_t expiration, uint8_t *out, size_t out_size,
                      knot_mm_t *mm)
{
	/* Canonical copy: owner and rdata names lowercased. */
	knot_rrset_t *canon = knot_rrset_copy(rr, mm);
	if (canon == NULL) {
		return KNOT_ENOMEM;
	}
	knot_rdata_t *sorted[512];
	uint16_t n = canon->rrs.count;
	if (n > 512) {
		knot_rrset_free(canon, mm);
		return ZC_ETOOBIG;
	}
	/* knot_rrset_rr_to_canonical() converts the first RR only: give it
	 * each RR in turn (the owner is lowercased by the first call). */
	int ret = KNOT_EOK;
	knot_rdata_t *rd = canon->rrs.rdata;
	for (uint16_t i = 0; i < n && ret == KNOT_EOK; i++) {
		knot_rrset_t one = *canon;
		one.rrs.count = 1;
		one.rrs.rdata = rd;
		one.rrs.size = knot_rdata_size(rd->len);
		ret = knot_rrset_rr_to_canonical(&one);
		sorted[i] = rd;
		rd = knot_rdataset_next(rd);
	}
	if (ret != KNOT_EOK) {
		knot_rrset_free(canon, mm);
		return ret;
	}
	qsort(sorted, n, sizeof(sorted[0]), rdata_order);

	uint8_t head[18 + KNOT_DNAME_MAXLEN];
	put16(head, rr->type);
	head[2] = key->algorithm;
	head[3] = owner_labels(canon->owner);
	put32(head + 4, rr->ttl);
	put32(head + 8, expiration);
	put32(head + 12, inception);
	put16(head + 16, key->tag);
	size_t signer_len = knot_dname_size(signer);
	memcpy(head + 18, signer, signer_len);
	knot_dname_to_lower(head + 18);
	size_t head_len = 18 + signer_len;

	dnssec_sign_ctx_t *ctx = NULL;
	dnssec_binary_t sig = { 0 };
	ret = dnssec_sign_new(&ctx, key->key);
	if (ret == DNSSEC_EOK) {
		dnssec_binary_t b = { .data = head, .size = head_len };
		ret = dnssec_sign_add(ctx, &b);
	}
	uint8_t fixed[10];
	size_t owner_size = knot_dname_size(canon->owner);
	for (uint16_t i = 0; i < n && ret == DNSSEC_EOK; i++) {
		dnssec_binary_t owner = { .data = canon->owner, .size = owner_size };
		put16(fixed, rr->type);
		put16(fixed + 2, KNOT_CLASS_IN);
		put32(fixed + 4, rr->ttl);
		put16(fixed + 8, sorted[i]->len);
		dnssec_binary_t f = { .data = fixed, .size = sizeof(fixed) };
		dnssec_binary_t data = { .data = sorted[i]->data,
		                         .size = sorted[i]->len };
		ret = dnssec_sign_add(ctx, &owner);
		ret = ret == DNSSEC_EOK ? dnssec_sign_add(ctx, &f) : ret;
		ret = ret == DNSSEC_EOK && data.size > 0 ?
		      dnssec_sign_add(ctx, &data) : ret;
	}
	if (ret == DNSSEC_EOK) {
		ret = dnssec_sign_write(ctx, DNSSEC_SIGN_NORMAL, &sig);
	}
	dnssec_sign_free(ctx);
	knot_rrset_free(canon, mm);
	if (ret != DNSSEC_EOK) {
		dnssec_binary_free(&sig);
		return KNOT_ERROR;
	}
	int len = head_len + sig.size <= out_size ? (int)(head_len + sig.size) :
	          ZC_ETOOBIG;
	if (len > 0) {
		memcpy(out, head, head_len);
		memcpy(out + head_len, sig.data, sig.size);
	}
	dnssec_binary_free(&sig);
	return len;
}

int signer_sign_rrset(const knot_rrset_t *rr, const signer_key_t *key,
                      const uint8_t *signer, uint32_t inception,
                      uint32_t expiration, knot_rrset_t *rrsig,
                      knot_mm_t *mm)
{
	uint8_t rdata[SIGNER_RRSIG_MAX];
	int len = signer_sign_rdata(rr, key, signer, inception, expiration,
	                            rdata, sizeof(rdata), mm);
	return len < 0 ? len : knot_rrset_add_rdata(rrsig, rdata, (uint16_t)len,
	                                            mm);
}
