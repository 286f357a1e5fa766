/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Ids in the API's text form (api/format.h): every id reads back from the
 * text api_id_format() wrote, and no other text names it (signs, "0x",
 * blanks, leading zeros cut or added, upper case).
 */
#include <stdio.h>
#include <string.h>

#include "api/format.h"
#include "tests/unit/test.h"

static void test_round_trip(void)
{
	const int64_t ids[] = { 1, 9, 10, 0xabcdef, 0x1234567890abcdefLL,
	                        INT64_MAX };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char text[33];
		api_id_format(ids[i], text);
		CHECK_EQ(strlen(text), (size_t)32);
		CHECK_EQ(api_id_parse(text), ids[i]);
	}
}

static void test_aliases(void)
{
	const unsigned long long id = 0xab;
	char text[40];
	/* Other texts of id: each must name nothing. */
#define REFUSED(form) do { \
		snprintf(text, sizeof(text), form, id); \
		if (api_id_parse(text) != 0) { \
			fprintf(stderr, "taken: \"%s\"\n", text); \
			CHECK(0); \
		} \
	} while (0)
	REFUSED("%llx");
	REFUSED("%031llx");
	REFUSED("%033llx");
	REFUSED("%032llX");
	REFUSED("+%031llx");
	REFUSED("-%031llx");
	REFUSED(" %031llx");
	REFUSED("%031llx ");
	REFUSED("0x%030llx");
	REFUSED("%030llxg0");
#undef REFUSED
	snprintf(text, sizeof(text), "%032llx", id);
	CHECK_EQ(api_id_parse(text), (int64_t)id);
	CHECK_EQ(api_id_parse(NULL), 0);
	CHECK_EQ(api_id_parse(""), 0);
	/* 0 names no object; past INT64_MAX is no id. */
	CHECK_EQ(api_id_parse("00000000000000000000000000000000"), 0);
	CHECK_EQ(api_id_parse("00000000000000008000000000000000"), 0);
	CHECK_EQ(api_id_parse("ffffffffffffffffffffffffffffffff"), 0);
	CHECK_EQ(api_id_parse("00000000000000007fffffffffffffff"), INT64_MAX);
}

int main(void)
{
	test_round_trip();
	test_aliases();
	return test_done();
}
