/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Ids and times in the API's text forms: zone and record ids as 32 hex
 * digits, times as ISO 8601 (RFC 3339) in UTC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/format.h"
#include "common/error.h"
#include "common/id_text.h"

void api_id_format(int64_t id, char out[33])
{
	snprintf(out, 33, "%032llx", (unsigned long long)id);
}

int64_t api_id_parse(const char *text)
{
	/* Only the form api_id_format() writes: 32 lower-case hex digits.
	 * strtoull() alone also took a sign (negated modulo 2^64), "0x" and
	 * leading blanks, and a shorter or upper-case text named the same
	 * id too, so one id had many names (audit lines carried the alias,
	 * and a client comparing ids saw two objects). */
	if (!zc_id_text_form(text)) {
		return 0;
	}
	char *end;
	unsigned long long v = strtoull(text, &end, 16);
	return (*end == '\0' && v <= INT64_MAX) ? (int64_t)v : 0;
}

void api_time_text(int64_t ms, char buf[API_TIME_LEN])
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, API_TIME_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, API_TIME_LEN - n, ".%03dZ", (int)(ms % 1000));
}

json_t *api_time(int64_t ms)
{
	char buf[API_TIME_LEN];
	api_time_text(ms, buf);
	return json_string(buf);
}

int api_time_parse(const char *text, int64_t *ms)
{
	struct tm tm = { 0 };
	const char *rest = strptime(text, "%Y-%m-%d", &tm);
	if (rest == NULL) {
		return ZC_EUSAGE;
	}
	int millis = 0;
	if (*rest == 'T' || *rest == 't') {
		rest = strptime(rest + 1, "%H:%M:%S", &tm);
		if (rest != NULL && *rest == '.') {
			int digits = 0;
			for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++) {
				if (digits < 3) {
					millis = millis * 10 + (*rest - '0');
				}
			}
			for (; digits > 0 && digits < 3; digits++) {
				millis *= 10;
			}
		}
		if (rest == NULL || (strcmp(rest, "Z") != 0 && strcmp(rest, "z") != 0 &&
		                     strcmp(rest, "+00:00") != 0)) {
			return ZC_EUSAGE;
		}
	} else if (*rest != '\0') {
		return ZC_EUSAGE;
	}
	time_t t = timegm(&tm);
	if (t == (time_t)-1) {
		return ZC_EUSAGE;
	}
	*ms = (int64_t)t * 1000 + millis;
	return ZC_EOK;
}

void api_id_text(int64_t id, char out[33])
{
	api_id_format(id, out);
}

int64_t api_id_value(const char *text)
{
	return api_id_parse(text);
}
