/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TXT content in Cloudflare's two forms (api/txt.h) and through the whole
 * API content path (api/content.h): what each form parses into, how long
 * strings are split, what comes back in which form, and that every
 * accepted content reads back from its rendering as the same rdata.
 */
#include <string.h>
#include <libknot/libknot.h>

#include "api/content.h"
#include "api/txt.h"
#include "common/error.h"
#include "tests/unit/test.h"

#define APEX ((const uint8_t *)"\x07" "example\x00")

typedef struct {
	const char *content;
	const char *wire;     /* Strings as "len:text|len:text"; NULL: refused. */
	int form;             /* The form it is written in. */
	const char *back;     /* What the API gives back (NULL: content). */
} case_t;

static const case_t cases[] = {
	{ "token", "token", API_FORM_PLAIN, NULL },
	{ "\"token\"", "token", API_FORM_TEXT, NULL },
	{ "v=DMARC1; p=none", "v=DMARC1; p=none", API_FORM_PLAIN, NULL },
	{ "\"v=DKIM1; k=rsa\" \"p=AB\"", "v=DKIM1; k=rsa|p=AB", API_FORM_TEXT, NULL },
	{ "\"a\"  \"b\"", "a|b", API_FORM_TEXT, "\"a\" \"b\"" },
	{ "\"a\" b ;", "a|b|;", API_FORM_TEXT, "\"a\" \"b\" \";\"" },
	{ "\"\"", "", API_FORM_TEXT, NULL },
	{ "", "", API_FORM_PLAIN, NULL },
	{ "\"q\\\"x\\\\y\"", "q\"x\\y", API_FORM_TEXT, NULL },
	{ "\"\\065\\066\"", "AB", API_FORM_TEXT, "\"AB\"" },
	{ "say \"hi\"", "say \"hi\"", API_FORM_PLAIN, NULL },
	{ "back\\slash", "back\\slash", API_FORM_PLAIN, NULL },
	{ "caf\xc3\xa9", "caf\xc3\xa9", API_FORM_PLAIN, NULL },
	{ "\"caf\xc3\xa9\"", "caf\xc3\xa9", API_FORM_TEXT, NULL },
	{ "\"\\001\"", "\x01", API_FORM_TEXT, NULL },
	{ "\"not closed", NULL, 0, NULL },
	{ "\"a\" b\"c", NULL, 0, NULL },
	{ "\"\\256\"", NULL, 0, NULL },
	{ "\"\\12\"", NULL, 0, NULL },
	{ "\"x\\", NULL, 0, NULL },
};

/* Says what came back when it is not what was wanted. */
static __attribute__((noinline)) void report(const char *what, size_t i,
                                             const char *got, const char *want)
{
	if (got != NULL && want != NULL && strcmp(got, want) != 0) {
		fprintf(stderr, "%s %zu: back as [%s], want [%s]\n", what, i, got,
		        want);
	}
}

/* The rdata a case describes. */
static size_t expected_wire(const char *spec, uint8_t *out)
{
	size_t n = 0;
	const char *p = spec;
	for (;;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		out[n++] = (uint8_t)len;
		memcpy(out + n, p, len);
		n += len;
		if (bar == NULL) {
			return n;
		}
		p = bar + 1;
	}
}

static void test_cases(void)
{
	static api_wire_t w;
	static char text[70000];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const case_t *c = &cases[i];
		char err[300];
		int ret = api_content_parse(APEX, "t", "TXT", c->content, -1, 300,
		                            &w, err, sizeof(err));
		if (c->wire == NULL) {
			CHECK(ret == ZC_EUSAGE && strncmp(err, "content:", 8) == 0);
			continue;
		}
		CHECK_EQ(ret, ZC_EOK);
		uint8_t want[1024];
		size_t len = expected_wire(c->wire, want);
		CHECK_EQ(w.rdata_len, len);
		CHECK(memcmp(w.rdata, want, len) == 0);
		CHECK_EQ(w.form, c->form);
		int prio;
		CHECK_EQ(api_content_format(w.owner, w.type, w.rdata, w.rdata_len,
		                            w.form, text, sizeof(text), &prio), ZC_EOK);
		const char *back = c->back ? c->back : c->content;
		report("case", i, text, back);
		CHECK(strcmp(text, back) == 0);
	}
}

/* Plain text is split into strings of 255 octets and comes back whole;
 * quoted strings over 255 octets are split too. */
static void test_split(void)
{
	static api_wire_t w;
	static char content[5000], text[70000];
	char err[300];
	int prio;
	size_t lengths[] = { 1, 254, 255, 256, 510, 511, 4096 };
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		size_t n = lengths[k];
		for (size_t i = 0; i < n; i++) {
			content[i] = (char)('a' + i % 26);
		}
		content[n] = '\0';
		CHECK_EQ(api_content_parse(APEX, "t", "TXT", content, -1, 300, &w,
		                           err, sizeof(err)), ZC_EOK);
		size_t strings = (n + 254) / 255;
		CHECK_EQ(w.rdata_len, n + strings);
		for (size_t s = 0; s < strings; s++) {
			size_t want = s + 1 < strings ? 255 : n - 255 * s;
			CHECK_EQ(w.rdata[s * 256], want);
		}
		CHECK(api_txt_plain_ok(w.rdata, w.rdata_len));
		CHECK_EQ(api_content_format(w.owner, w.type, w.rdata, w.rdata_len,
		                            w.form, text, sizeof(text), &prio), ZC_EOK);
		CHECK(strcmp(text, content) == 0);
	}
	/* "aaa...300" as one quoted string: 255 + 45. */
	content[0] = '"';
	memset(content + 1, 'a', 300);
	strcpy(content + 301, "\"");
	CHECK_EQ(api_content_parse(APEX, "t", "TXT", content, -1, 300, &w, err,
	                           sizeof(err)), ZC_EOK);
	CHECK_EQ(w.rdata_len, 302);
	CHECK_EQ(w.rdata[0], 255);
	CHECK_EQ(w.rdata[256], 45);
}

/* Rdata that plain text could not give comes back quoted whatever the
 * form: strings not cut at 255, an empty string among others, a NUL, a
 * leading quote, bytes that are not UTF-8. */
static void test_plain_only_when_it_reads_back(void)
{
	static const struct {
		const char *rdata;
		size_t len;
		const char *back;
	} rd[] = {
		{ "\x01" "a" "\x01" "b", 4, "\"a\" \"b\"" },
		{ "\x01" "a" "\x00", 3, "\"a\" \"\"" },
		{ "\x03" "a\0b", 4, "\"a\\000b\"" },
		{ "\x02" "\"x", 3, "\"\\\"x\"" },
		{ "\x02" "\xc3(", 3, "\"\\195(\"" },
		{ "\x02" "a\n", 3, "\"a\\010\"" },
	};
	char text[256];
	for (size_t i = 0; i < sizeof(rd) / sizeof(rd[0]); i++) {
		const uint8_t *r = (const uint8_t *)rd[i].rdata;
		CHECK(!api_txt_plain_ok(r, (uint16_t)rd[i].len));
		CHECK_EQ(api_txt_format(r, (uint16_t)rd[i].len, API_FORM_PLAIN, text,
		                        sizeof(text)), ZC_EOK);
		report("rdata", i, text, rd[i].back);
		CHECK(strcmp(text, rd[i].back) == 0);
	}
	CHECK_EQ(api_txt_format((const uint8_t *)"\x05" "ab", 3, API_FORM_TEXT,
	                        text, sizeof(text)), ZC_EFORMAT);
	CHECK_EQ(api_txt_format((const uint8_t *)"\x03" "abc", 4, API_FORM_TEXT,
	                        text, 4), ZC_ENOSPACE);
}

/* ';', '(' and ')' outside quotes are data for every type. */
static void test_semicolons_in_other_types(void)
{
	static api_wire_t w;
	static char text[70000];
	char err[300];
	int prio;
	CHECK_EQ(api_content_parse(APEX, "t", "CAA", "0 issue ca.example;x=1", -1,
	                           300, &w, err, sizeof(err)), ZC_EOK);
	CHECK_EQ(api_content_format(w.owner, w.type, w.rdata, w.rdata_len, w.form,
	                            text, sizeof(text), &prio), ZC_EOK);
	CHECK(strcmp(text, "0 issue \"ca.example;x=1\"") == 0);
	CHECK_EQ(api_content_parse(APEX, "t", "HINFO", "a;b (c)", -1, 300, &w, err,
	                           sizeof(err)), ZC_EOK);
	CHECK_EQ(w.rdata_len, 8);
	CHECK(memcmp(w.rdata, "\x03" "a;b" "\x03" "(c)", 8) == 0);
	/* An escaped one stays one character. */
	CHECK_EQ(api_content_parse(APEX, "t", "HINFO", "a\\;b c", -1, 300, &w, err,
	                           sizeof(err)), ZC_EOK);
	CHECK(memcmp(w.rdata, "\x03" "a;b" "\x01" "c", 6) == 0);
}

int main(void)
{
	test_cases();
	test_split();
	test_plain_only_when_it_reads_back();
	test_semicolons_in_other_types();
	return test_done();
}
