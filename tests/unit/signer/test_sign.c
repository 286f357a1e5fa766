/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RRSIG generation (signer/sign.c) against its canonical form: RRsets of
 * any size the write rules take (over 512 records), records equal in
 * canonical form signed once (RFC 4034 §6.3), A6's prefix name lowercased
 * (§6.2). Ed25519 signs deterministically, so equal input gives equal
 * RRSIGs.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/libknot.h>

#include "common/error.h"
#include "dns/rdata.h"
#include "signer/signer.h"
#include "tests/unit/test.h"

#define ED25519 15

static void add(knot_rrset_t *rr, const uint8_t *data, uint16_t len)
{
	CHECK_EQ(knot_rrset_add_rdata(rr, data, len, NULL), KNOT_EOK);
}

/* A6 64 ::1 prefix (the name as text). */
static uint16_t a6(uint8_t *out, const char *prefix)
{
	out[0] = 64;
	memset(out + 1, 0, 8);
	out[8] = 1;
	knot_dname_t *name = knot_dname_from_str_alloc(prefix);
	size_t n = knot_dname_size(name);
	memcpy(out + 9, name, n);
	free(name);
	return (uint16_t)(9 + n);
}

static int sign(const knot_rrset_t *rr, const signer_key_t *key,
                uint8_t *out)
{
	return signer_sign_rdata(rr, key, rr->owner, 1700000000, 1800000000,
	                         out, SIGNER_RRSIG_MAX, NULL);
}

int main(void)
{
	uint8_t *pem = NULL;
	size_t pem_len = 0;
	knot_dname_t *apex = knot_dname_from_str_alloc("example.");
	CHECK_EQ(signer_key_generate(ED25519, &pem, &pem_len), ZC_EOK);
	signer_key_t key;
	CHECK_EQ(signer_key_load(apex, SIGNER_FLAGS_KSK, ED25519, pem, pem_len,
	                         &key), ZC_EOK);

	/* Two A6 records that differ in the case of their prefix name sign
	 * as one. */
	uint8_t buf[300], one_sig[SIGNER_RRSIG_MAX], two_sig[SIGNER_RRSIG_MAX];
	knot_rrset_t one, two;
	knot_rrset_init(&one, knot_dname_copy(apex, NULL), DNS_RRTYPE_A6,
	                KNOT_CLASS_IN, 300);
	knot_rrset_init(&two, knot_dname_copy(apex, NULL), DNS_RRTYPE_A6,
	                KNOT_CLASS_IN, 300);
	add(&one, buf, a6(buf, "p.example."));
	add(&two, buf, a6(buf, "p.example."));
	add(&two, buf, a6(buf, "P.EXAMPLE."));
	CHECK_EQ(two.rrs.count, 2);
	int n1 = sign(&one, &key, one_sig), n2 = sign(&two, &key, two_sig);
	CHECK(n1 > 0);
	CHECK_EQ(n1, n2);
	CHECK(n1 > 0 && n1 == n2 && memcmp(one_sig, two_sig, (size_t)n1) == 0);
	size_t at = 0;
	CHECK_EQ(dns_a6_prefix_name(buf, a6(buf, "x."), &at), 3);
	CHECK_EQ(at, 9);
	uint8_t bad[2] = { 129, 0 };
	CHECK_EQ(dns_a6_prefix_name(bad, sizeof(bad), &at), -1);

	/* 600 records: the signer had room for 512. */
	knot_rrset_t big;
	knot_rrset_init(&big, knot_dname_copy(apex, NULL), KNOT_RRTYPE_A,
	                KNOT_CLASS_IN, 300);
	for (int i = 0; i < 600; i++) {
		uint8_t addr[4] = { 10, 0, (uint8_t)(i >> 8), (uint8_t)i };
		add(&big, addr, 4);
	}
	CHECK(sign(&big, &key, one_sig) > 0);

	knot_rrset_clear(&one, NULL);
	knot_rrset_clear(&two, NULL);
	knot_rrset_clear(&big, NULL);
	signer_key_free(&key);
	free(pem);
	free(apex);
	return test_done();
}
