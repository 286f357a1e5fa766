/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: ids and times in the API's text forms (format.c;
 * api.h has the forms the command line uses). */
#pragma once

#include <jansson.h>
#include <stdint.h>

/* Zone and record ids as 32 lower-case hex digits, read back in that
 * form only (0: not an id). */
void api_id_format(int64_t id, char out[33]);
int64_t api_id_parse(const char *text);

/* ISO 8601 time from Unix milliseconds ("2026-12-06T08:15:39.123Z"), as
 * a JSON string or as text. */
json_t *api_time(int64_t ms);
#define API_TIME_LEN 40
void api_time_text(int64_t ms, char buf[API_TIME_LEN]);
