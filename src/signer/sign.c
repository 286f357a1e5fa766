/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RRSIG generation (RFC 4034 §3.1.8.1): the RRSIG rdata without its
 * signature, then every RR of the set in canonical form (RFC 4034 §6:
 * lowercase owner and rdata names, original TTL, rdata sorted as octet
 * strings, duplicates once), signed with libdnssec.
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
#include "dns/rdata.h"
#include "signer/fast.h"
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

/* Signs data with the key (libcrypto when it has the key, else
 * libdnssec) and writes head then the signature to out; the length, or a
 * negative code. */
static int sign_data(const signer_key_t *key, const uint8_t *data,
                     size_t len, const uint8_t *head, size_t head_len,
                     uint8_t *out, size_t out_size)
{
	if (out_size < head_len) {
		return ZC_ETOOBIG;
	}
	if (key->fast != NULL) {
		int n = signer_fast_sign(key->fast, key->algorithm, data, len,
		                         out + head_len, out_size - head_len);
		if (n > 0) {
			memcpy(out, head, head_len);
			return (int)head_len + n;
		}
	}
	dnssec_sign_ctx_t *ctx = NULL;
	dnssec_binary_t sig = { 0 };
	int ret = dnssec_sign_new(&ctx, key->key);
	if (ret == DNSSEC_EOK) {
		dnssec_binary_t b = { .data = (uint8_t *)data, .size = len };
		ret = dnssec_sign_add(ctx, &b);
	}
	if (ret == DNSSEC_EOK) {
		ret = dnssec_sign_write(ctx, DNSSEC_SIGN_NORMAL, &sig);
	}
	dnssec_sign_free(ctx);
	if (ret != DNSSEC_EOK) {
		dnssec_binary_free(&sig);
		return KNOT_ERROR;
	}
	int total = head_len + sig.size <= out_size ?
	            (int)(head_len + sig.size) : ZC_ETOOBIG;
	if (total > 0) {
		memcpy(out, head, head_len);
		memcpy(out + head_len, sig.data, sig.size);
	}
	dnssec_binary_free(&sig);
	return total;
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
	/* Any count the write rules allow (up to 65535 records): an
	 * RRset over a fixed 512 failed to sign, and froze the signed
	 * view's transfers of its zone (outside tester 27). */
	knot_rdata_t *few[512];
	uint16_t n = canon->rrs.count;
	knot_rdata_t **sorted = n <= 512 ? few : malloc(n * sizeof(*sorted));
	if (sorted == NULL) {
		knot_rrset_free(canon, mm);
		return KNOT_ENOMEM;
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
		size_t at = 0;
		if (rr->type == DNS_RRTYPE_A6 &&
		    dns_a6_prefix_name(rd->data, rd->len, &at) > 0) {
			/* RFC 4034 §6.2 lowercases it; libknot does not. */
			knot_dname_to_lower(rd->data + at);
		}
		sorted[i] = rd;
		rd = knot_rdataset_next(rd);
	}
	if (ret != KNOT_EOK) {
		goto done;
	}
	qsort(sorted, n, sizeof(sorted[0]), rdata_order);
	/* RFC 4034 §6.3: duplicates in canonical form count once (records
	 * differing in a name's case only, stored before the write rules
	 * took them for duplicates: validators sign and check one). */
	uint16_t kept = n > 0 ? 1 : 0;
	for (uint16_t i = 1; i < n; i++) {
		if (knot_rdata_cmp(sorted[i], sorted[kept - 1]) != 0) {
			sorted[kept++] = sorted[i];
		}
	}
	n = kept;

	uint8_t head[18 + KNOT_DNAME_MAXLEN];
	put16(head, rr->type);
	head[2] = key->algorithm;
	head[3] = owner_labels(canon->owner);
	put32(head + 4, rr->ttl);
	put32(head + 8, expiration);
	put32(head + 12, inception);
	put16(head + 16, key->tag);
	size_t signer_len = knot_dname_size(signer);
	if (signer_len > KNOT_DNAME_MAXLEN) {
		ret = KNOT_EINVAL;
		goto done;
	}
	memcpy(head + 18, signer, signer_len);
	knot_dname_to_lower(head + 18);
	size_t head_len = 18 + signer_len;

	/* The data signed (RFC 4034 §3.1.8.1): the RRSIG rdata without the
	 * signature, then each RR in canonical form and order. */
	uint8_t fixed[10];
	size_t owner_size = knot_dname_size(canon->owner);
	size_t total = head_len;
	for (uint16_t i = 0; i < n; i++) {
		total += owner_size + sizeof(fixed) + sorted[i]->len;
	}
	uint8_t stack[2048];
	uint8_t *data = total <= sizeof(stack) ? stack : malloc(total);
	if (data == NULL) {
		ret = KNOT_ENOMEM;
		goto done;
	}
	memcpy(data, head, head_len);
	size_t pos = head_len;
	for (uint16_t i = 0; i < n; i++) {
		put16(fixed, rr->type);
		put16(fixed + 2, KNOT_CLASS_IN);
		put32(fixed + 4, rr->ttl);
		put16(fixed + 8, sorted[i]->len);
		memcpy(data + pos, canon->owner, owner_size);
		memcpy(data + pos + owner_size, fixed, sizeof(fixed));
		memcpy(data + pos + owner_size + sizeof(fixed), sorted[i]->data,
		       sorted[i]->len);
		pos += owner_size + sizeof(fixed) + sorted[i]->len;
	}
	ret = sign_data(key, data, total, head, head_len, out, out_size);
	if (data != stack) {
		free(data);
	}
done:
	if (sorted != few) {
		free(sorted);
	}
	knot_rrset_free(canon, mm);
	return ret;
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
