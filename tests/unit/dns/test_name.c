/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Lookup-form keys: conversion both ways, order, ancestry (dns/name.h). */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "dns/name.h"
#include "tests/unit/test.h"

static void roundtrip(const char *text, const char *want_lf, size_t want_len)
{
	uint8_t name[KNOT_DNAME_MAXLEN], lf[DNS_LF_MAXLEN], back[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(name, text, sizeof(name));
	size_t len = dns_name_to_lf(name, lf);
	CHECK_EQ(len, want_len);
	CHECK(memcmp(lf, want_lf, want_len) == 0);
	int blen = dns_name_from_lf(lf, len, back);
	knot_dname_to_lower(name);
	CHECK_EQ(blen, (int)knot_dname_size(name));
	CHECK(blen > 0 && memcmp(back, name, blen) == 0);
}

/* Every name sorts after its parent and before its parent's next sibling. */
static void order(void)
{
	static const char *const sorted[] = {
		"example.", "a.example.", "*.a.example.", "b.a.example.",
		"z.a.example.", "b.example.", "a.b.example.", "examplf.",
	};
	uint8_t prev[DNS_LF_MAXLEN];
	size_t prev_len = 0;
	for (size_t i = 0; i < sizeof(sorted) / sizeof(sorted[0]); i++) {
		uint8_t name[KNOT_DNAME_MAXLEN], lf[DNS_LF_MAXLEN];
		knot_dname_from_str(name, sorted[i], sizeof(name));
		size_t len = dns_name_to_lf(name, lf);
		if (i > 0) {
			size_t min = len < prev_len ? len : prev_len;
			int c = memcmp(prev, lf, min);
			CHECK(c < 0 || (c == 0 && prev_len < len));
		}
		memcpy(prev, lf, len);
		prev_len = len;
	}
}

static void malformed(void)
{
	uint8_t out[KNOT_DNAME_MAXLEN];
	CHECK(dns_name_from_lf((const uint8_t *)"com", 3, out) < 0);
	CHECK(dns_name_from_lf((const uint8_t *)"com\0\0", 5, out) < 0);
	CHECK_EQ(dns_name_from_lf((const uint8_t *)"", 0, out), 1);
	/* An escape must be followed by 1 or 2; no raw uppercase. */
	CHECK(dns_name_from_lf((const uint8_t *)"a\1\0", 3, out) < 0);
	CHECK(dns_name_from_lf((const uint8_t *)"a\1\3\0", 4, out) < 0);
	CHECK(dns_name_from_lf((const uint8_t *)"\1\0", 2, out) < 0);
	CHECK(dns_name_from_lf((const uint8_t *)"A\0", 2, out) < 0);
	CHECK_EQ(dns_name_from_lf((const uint8_t *)"a\1\1\0", 4, out), 4);
}

/* A random name of up to 255 octets, labels of 1..63 octets drawn from
 * octets that stress the escape: 0x00, 0x01, 0x02, 'A', 'a', 0xff. */
static size_t random_name(uint8_t *name, unsigned *seed)
{
	static const uint8_t octets[] = { 0x00, 0x01, 0x02, 'A', 'a', 0xff, '.' };
	size_t pos = 0;
	unsigned labels = 1 + rand_r(seed) % 8;
	for (unsigned l = 0; l < labels; l++) {
		size_t llen = 1 + rand_r(seed) % (rand_r(seed) % 4 == 0 ? 63 : 3);
		if (pos + 1 + llen + 1 > KNOT_DNAME_MAXLEN) {
			break;
		}
		name[pos++] = (uint8_t)llen;
		for (size_t i = 0; i < llen; i++) {
			name[pos++] = octets[rand_r(seed) % sizeof(octets)];
		}
	}
	name[pos++] = 0;
	return pos;
}

static int lc(int c)
{
	return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/* The canonical order of RFC 4034 §6.1, written out independently. */
static int canonical_cmp(const uint8_t *a, const uint8_t *b)
{
	const uint8_t *la[128], *lb[128];
	int na = 0, nb = 0;
	for (const uint8_t *p = a; *p; p += *p + 1) la[na++] = p;
	for (const uint8_t *p = b; *p; p += *p + 1) lb[nb++] = p;
	while (na > 0 && nb > 0) {
		const uint8_t *x = la[--na], *y = lb[--nb];
		for (int i = 1; i <= x[0] && i <= y[0]; i++) {
			int cx = lc(x[i]), cy = lc(y[i]);
			if (cx != cy) {
				return cx - cy;
			}
		}
		if (x[0] != y[0]) {
			return x[0] - y[0];
		}
	}
	return na - nb;
}

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

/* One-to-one, canonical, and decoding gives the lowercased name back, for
 * random names full of the octets the escape must handle. */
static void any_octet(void)
{
	unsigned seed = 4034;
	for (int i = 0; i < 20000; i++) {
		uint8_t a[KNOT_DNAME_MAXLEN], b[KNOT_DNAME_MAXLEN];
		random_name(a, &seed);
		random_name(b, &seed);
		if (i % 3 == 0) { /* Often share the upper labels. */
			if (b[0] + 1 + knot_dname_size(a) > KNOT_DNAME_MAXLEN) {
				continue;
			}
			memcpy(b + b[0] + 1, a, knot_dname_size(a));
		}
		uint8_t fa[DNS_LF_MAXLEN], fb[DNS_LF_MAXLEN];
		size_t na = dns_name_to_lf(a, fa), nb = dns_name_to_lf(b, fb);
		CHECK(na <= DNS_LF_MAXLEN && nb <= DNS_LF_MAXLEN);
		size_t min = na < nb ? na : nb;
		int c = memcmp(fa, fb, min);
		c = c != 0 ? c : (int)na - (int)nb;
		CHECK_EQ(sign(c), sign(canonical_cmp(a, b)));
		uint8_t back[KNOT_DNAME_MAXLEN];
		int blen = dns_name_from_lf(fa, na, back);
		knot_dname_to_lower(a);
		CHECK(blen == (int)knot_dname_size(a) && memcmp(back, a, blen) == 0);
	}
}

/* The two names of the bug report: one node each, in canonical order. */
static void nul_octet(void)
{
	static const uint8_t a0b[] = "\3a\0b\4zone";
	static const uint8_t ba[] = "\1b\1a\4zone";
	uint8_t fa[DNS_LF_MAXLEN], fb[DNS_LF_MAXLEN];
	size_t na = dns_name_to_lf(a0b, fa), nb = dns_name_to_lf(ba, fb);
	CHECK(na != nb || memcmp(fa, fb, na) != 0);
	CHECK(memcmp(fb, fa, nb < na ? nb : na) < 0);   /* b.a. first */
	CHECK_EQ(na, 10);
	CHECK(memcmp(fa, "zone\0a\1\1b\0", 10) == 0);
}

/* The longest forms: 250 escaped octets in four labels fill the bound;
 * the same below a one-octet apex fits the edge's key. */
static void longest(void)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	size_t pos = 0;
	const size_t lens[] = { 63, 63, 63, 61 };
	for (int l = 0; l < 4; l++) {
		name[pos++] = (uint8_t)lens[l];
		memset(name + pos, l % 2, lens[l]);
		pos += lens[l];
	}
	name[pos++] = 0;
	CHECK_EQ(pos, KNOT_DNAME_MAXLEN);
	uint8_t lf[DNS_LF_MAXLEN];
	CHECK_EQ(dns_name_to_lf(name, lf), DNS_LF_MAXLEN);
	uint8_t back[KNOT_DNAME_MAXLEN];
	CHECK_EQ(dns_name_from_lf(lf, DNS_LF_MAXLEN, back), KNOT_DNAME_MAXLEN);
	/* Relative to the one-octet apex "x.": at most 503 bytes. */
	const size_t rel[] = { 63, 63, 63, 59 };
	pos = 0;
	for (int l = 0; l < 4; l++) {
		name[pos++] = (uint8_t)rel[l];
		memset(name + pos, 0, rel[l]);
		pos += rel[l];
	}
	memcpy(name + pos, "\1x", 3);
	CHECK_EQ(knot_dname_size(name), KNOT_DNAME_MAXLEN);
	CHECK(dns_name_to_lf(name, lf) - 2 <= DNS_LF_KEY_MAXLEN);
}

static void ancestry(void)
{
	uint8_t a[KNOT_DNAME_MAXLEN], b[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(a, "www.Example.COM.", sizeof(a));
	knot_dname_from_str(b, "example.com.", sizeof(b));
	CHECK(dns_name_is_under(a, b));
	CHECK(dns_name_is_under(b, b));
	CHECK(!dns_name_is_under(b, a));
	CHECK_EQ(dns_name_labels(a), 3);
	CHECK(knot_dname_is_case_equal(dns_name_skip(a, 1), b));
}

int main(void)
{
	roundtrip("www.Example.com.", "com\0example\0www\0", 16);
	roundtrip(".", "", 0);
	roundtrip("*.a.", "a\0*\0", 4);
	order();
	malformed();
	any_octet();
	nul_octet();
	longest();
	ancestry();
	return test_done();
}
