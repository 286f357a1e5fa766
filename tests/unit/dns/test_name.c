/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Lookup-form keys: conversion both ways, order, ancestry (dns/name.h). */
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
	ancestry();
	return test_done();
}
