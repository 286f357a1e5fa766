/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The one written form of an object's id: 32 lower-case hex digits (the
 * API's ids, `zonecast token list`). The API parses only this form
 * (api_id_parse()), `token revoke` takes an argument of this form as an
 * id whatever the names, and no token name may take it
 * (records_token_name_valid()): one test for all three.
 */
#pragma once

#include <stdbool.h>
#include <string.h>

#define ZC_ID_TEXT_LEN 32

static inline bool zc_id_text_form(const char *text)
{
	return text != NULL && strlen(text) == ZC_ID_TEXT_LEN &&
	       strspn(text, "0123456789abcdef") == ZC_ID_TEXT_LEN;
}
