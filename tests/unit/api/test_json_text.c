/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * JSON written as text (api/json_text.h) against jansson's json_dumps(...,
 * JSON_COMPACT), which it stands in for in batch answers: every single
 * byte and every Unicode scalar value as a string, invalid UTF-8 (jansson
 * refuses it; the text escapes each bad byte and stays valid JSON), and
 * records of several types, with comments, tags and odd octets, through
 * api_record_json_text() and api_record_json().
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/libknot.h>

#include "api/content.h"
#include "api/txt.h"
#include "api/json_text.h"
#include "api/record_json.h"
#include "tests/unit/test.h"

/* json_text_str(s) and jansson's dump of the string s agree. */
static void same_string(const char *s)
{
	json_t *j = json_string(s);
	CHECK(j != NULL);
	char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	json_text_t t = { 0 };
	json_text_str(&t, s);
	size_t len;
	char *got = json_text_take(&t, &len);
	CHECK(got != NULL && want != NULL);
	CHECK_EQ(strlen(got), len);
	if (strcmp(got, want) != 0) {
		printf("string %s: got %s, jansson %s\n", s, got, want);
		CHECK(false);
	}
	free(got);
	free(want);
}

/* UTF-8 of a scalar value into buf (NUL-terminated). */
static void encode(uint32_t cp, char *buf)
{
	unsigned char *b = (unsigned char *)buf;
	if (cp < 0x80) {
		b[0] = (unsigned char)cp, b[1] = 0;
	} else if (cp < 0x800) {
		b[0] = 0xc0 | (cp >> 6), b[1] = 0x80 | (cp & 0x3f), b[2] = 0;
	} else if (cp < 0x10000) {
		b[0] = 0xe0 | (cp >> 12), b[1] = 0x80 | ((cp >> 6) & 0x3f);
		b[2] = 0x80 | (cp & 0x3f), b[3] = 0;
	} else {
		b[0] = 0xf0 | (cp >> 18), b[1] = 0x80 | ((cp >> 12) & 0x3f);
		b[2] = 0x80 | ((cp >> 6) & 0x3f), b[3] = 0x80 | (cp & 0x3f);
		b[4] = 0;
	}
}

static void test_strings(void)
{
	char buf[16];
	for (int c = 1; c < 0x80; c++) {
		snprintf(buf, sizeof(buf), "a%cb", c);
		same_string(buf);
	}
	for (uint32_t cp = 0x80; cp <= 0x10ffff; cp++) {
		if (cp >= 0xd800 && cp <= 0xdfff) {
			continue;
		}
		encode(cp, buf);
		same_string(buf);
	}
	same_string("");
	same_string("\"quoted\" \\ back/slash \x01\x1f\x7f caf\xc3\xa9 \xf0\x9f\x98\x80");
}

/* Invalid UTF-8: each bad byte read as Latin-1, the rest as it is; the
 * same as jansson's dump of json_text_utf8_valid()'s string, and it
 * parses as JSON. */
static void test_invalid_utf8(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "a\xff" "b", "\"a\xc3\xbf" "b\"" },
		{ "\xc3", "\"\xc3\x83\"" },                       /* cut short */
		{ "\xc0\xaf", "\"\xc3\x80\xc2\xaf\"" },           /* overlong */
		{ "\xed\xa0\x80", "\"\xc3\xad\xc2\xa0\xc2\x80\"" }, /* surrogate */
		{ "\xf4\x90\x80\x80x", "\"\xc3\xb4\xc2\x90\xc2\x80\xc2\x80x\"" },
		{ "caf\xc3\xa9\xe9\n", "\"caf\xc3\xa9\xc3\xa9\\n\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(json_string(cases[i].in) == NULL); /* jansson refuses. */
		json_text_t t = { 0 };
		json_text_str(&t, cases[i].in);
		size_t len;
		char *got = json_text_take(&t, &len);
		CHECK(got != NULL && strcmp(got, cases[i].out) == 0);
		char *valid = json_text_utf8_valid(cases[i].in);
		CHECK(valid != NULL);
		json_t *j = json_string(valid);
		char *dumped = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		CHECK(dumped != NULL && got != NULL && strcmp(dumped, got) == 0);
		json_t *back = json_loads(got, JSON_DECODE_ANY, NULL);
		CHECK(json_is_string(back) &&
		      strcmp(json_string_value(back), valid) == 0);
		json_decref(back);
		json_decref(j);
		free(dumped);
		free(valid);
		free(got);
	}
	CHECK(json_text_utf8_valid("caf\xc3\xa9") == NULL); /* Valid already. */
}

typedef struct {
	const char *owner;      /* text, under example.com. */
	uint16_t type;
	const char *rdata;      /* bytes */
	uint16_t rdata_len;
	const char *comment, *tags;
	uint8_t form;
	int64_t created, modified;
	uint32_t ttl;
} rec_case_t;

#define RD(s) s, (uint16_t)(sizeof(s) - 1)

static const rec_case_t recs[] = {
	{ "www.example.com.", KNOT_RRTYPE_A, RD("\xc0\x00\x02\x01"), NULL, NULL,
	  0, 0, 0, 300 },
	{ "example.com.", KNOT_RRTYPE_MX, RD("\x00\x0a\x04mail\x07" "example\x03" "com\x00"),
	  "a \"quoted\" comment \\ with \x01 control and caf\xc3\xa9", "[\"x\",\"y\\\"z\"]",
	  0, 1764979200123, 1764979299999, 86400 },
	{ "example.com.", KNOT_RRTYPE_SOA,
	  RD("\x02ns\x07" "example\x03" "com\x00\x0ahostmaster\x07" "example\x03" "com\x00"
	     "\x00\x00\x00\x01\x00\x00\x1c\x20\x00\x00\x03\x84\x00\x12\x75\x00\x00\x00\x01\x2c"),
	  NULL, "not json", 0, 1, 2, 3600 },
	{ "t.example.com.", KNOT_RRTYPE_TXT, RD("\x0bsay \"hi\" \\\x01\x05" "caf\xc3\xa9"),
	  "", "[]", API_FORM_TEXT, 999, 1000, 2147483647 },
	{ "t.example.com.", KNOT_RRTYPE_TXT, RD("\x03\xff\xfe\x00"), "tab\there\nnewline",
	  "{\"an\":\"object\"}", API_FORM_PLAIN, 4102444800000, 4102444800001, 0 },
	{ "_sip._tcp.example.com.", KNOT_RRTYPE_SRV,
	  RD("\x00\x0a\x00\x05\x13\xc4\x03sip\x07" "example\x03" "com\x00"),
	  "\xf0\x9f\x98\x80", NULL, 0, 5, 6, 60 },
	{ "*.example.com.", KNOT_RRTYPE_AAAA,
	  RD("\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"),
	  NULL, "[\"\\u0000nul\"]", 0, 7, 8, 1 },
	/* Text a store written behind zonecast's back may hold. */
	{ "bad.example.com.", KNOT_RRTYPE_A, RD("\xc0\x00\x02\x02"),
	  "a\xff" "b\xc0\xaf\xed\xa0\x80", NULL, 0, 9, 10, 5 },
};

static void test_records(void)
{
	records_zone_t zone = { .id = 42, .serial = 2026120601 };
	CHECK(knot_dname_from_str((uint8_t *)zone.apex, "example.com.",
	                          sizeof(zone.apex)) != NULL);
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		const rec_case_t *c = &recs[i];
		uint8_t owner[KNOT_DNAME_MAXLEN];
		CHECK(knot_dname_from_str(owner, c->owner, sizeof(owner)) != NULL);
		records_record_t rec = {
			.id = 1000 + (int64_t)i, .zone_id = zone.id, .owner = owner,
			.type = c->type, .ttl = c->ttl,
			.rdata = (const uint8_t *)c->rdata, .rdata_len = c->rdata_len,
			.comment = c->comment, .tags = c->tags, .api_form = c->form,
			.created_on = c->created, .modified_on = c->modified,
		};
		json_t *j = api_record_json(&zone, &rec);
		CHECK(j != NULL);
		char *want = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		json_text_t t = { 0 };
		api_record_json_text(&t, &zone, &rec);
		size_t len;
		char *got = json_text_take(&t, &len);
		CHECK(got != NULL && want != NULL);
		if (strcmp(got, want) != 0) {
			printf("record %zu:\n got     %s\n jansson %s\n", i, got, want);
			CHECK(false);
		}
		free(got);
		free(want);
	}
}

int main(void)
{
	test_strings();
	test_invalid_utf8();
	test_records();
	return test_done();
}
