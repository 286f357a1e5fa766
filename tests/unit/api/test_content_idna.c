/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Names inside content written in Unicode (api/content_idna.h): only the
 * words that are names for the type become Punycode, counted with the
 * priority given apart or in content; quoted strings, escapes, RFC 3597's
 * generic form and types without names are left as written.
 */
#include <stdio.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "api/content_idna.h"
#include "tests/unit/test.h"

#define U "b\xc3\xbc" "cher.example"   /* bücher.example */
#define A "xn--bcher-kva.example"

static void converts(uint16_t type, const char *in, bool apart,
                     const char *want)
{
	char out[512];
	int r = api_content_idna(type, in, apart, out, sizeof(out));
	if (want == NULL) {
		CHECK_EQ(r, 0);
		return;
	}
	CHECK_EQ(r, 1);
	if (strcmp(out, want) != 0) {
		printf("type %u \"%s\": got \"%s\", want \"%s\"\n", type, in, out,
		       want);
		CHECK(0);
	}
}

static void test_name_words(void)
{
	converts(KNOT_RRTYPE_CNAME, U, false, A);
	converts(KNOT_RRTYPE_CNAME, "www." U ".", false, "www." A ".");
	converts(KNOT_RRTYPE_MX, U, true, A);
	converts(KNOT_RRTYPE_MX, "10  " U, false, "10  " A);
	converts(KNOT_RRTYPE_SRV, "1 2 " U, true, "1 2 " A);
	converts(KNOT_RRTYPE_SRV, "0\t1 2 " U, false, "0\t1 2 " A);
	converts(KNOT_RRTYPE_RP, U " t." U, false, A " t." A);
	converts(KNOT_RRTYPE_PX, "1 " U " x." U, false, "1 " A " x." A);
	converts(KNOT_RRTYPE_SVCB, "1 " U " alpn=h2", false, "1 " A " alpn=h2");
	converts(KNOT_RRTYPE_NAPTR, "1 1 \"s\" \"a b\" \"\" " U, false,
	         "1 1 \"s\" \"a b\" \"\" " A);
	/* a quoted string with a blank is one word */
	converts(KNOT_RRTYPE_NAPTR, "1 1 \"s x\" \"a b\" \"\\\"q r\" " U, false,
	         "1 1 \"s x\" \"a b\" \"\\\"q r\" " A);
	/* IPSECKEY: the gateway is a name only when its type is 3 */
	converts(KNOT_RRTYPE_IPSECKEY, "10 3 2 " U " AQ==", false,
	         "10 3 2 " A " AQ==");
	converts(KNOT_RRTYPE_IPSECKEY, "10 1 2 " U " AQ==", false,
	         "10 1 2 " U " AQ==");
}

static void test_left_as_written(void)
{
	converts(KNOT_RRTYPE_CNAME, "ascii.example", false, NULL);
	converts(KNOT_RRTYPE_A, U, false, NULL);
	converts(KNOT_RRTYPE_CAA, "0 issue \"" U "\"", false, NULL);
	converts(KNOT_RRTYPE_CNAME, "\\# 3 " U, false, NULL);
	/* not a name word: the MX priority spelled in Unicode stays */
	converts(KNOT_RRTYPE_MX, U " x.example", false,
	         U " x.example");
	/* a label with escapes is octets beside a Unicode one */
	converts(KNOT_RRTYPE_CNAME, "a\\046b." U, false, "a\\046b." A);
}

static void test_refused(void)
{
	char out[512], small[8];
	CHECK_EQ(api_content_idna(KNOT_RRTYPE_CNAME, "\xf0\x9f\xa6\x8a.example",
	                          false, out, sizeof(out)), -1);
	/* fullwidth full stop: UTS #46 maps it to a dot inside a label */
	CHECK_EQ(api_content_idna(KNOT_RRTYPE_CNAME, "a\xef\xbc\x8e" "b.example",
	                          false, out, sizeof(out)), -1);
	CHECK_EQ(api_content_idna(KNOT_RRTYPE_CNAME, U, false, small,
	                          sizeof(small)), -1);
}

int main(void)
{
	test_name_words();
	test_left_as_written();
	test_refused();
	return test_done();
}
