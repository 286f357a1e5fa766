/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Text comparisons of the list filters (match.h): Cloudflare's name,
 * content, comment and tag filters ignore case; a content filter matches
 * a record's content in every form the API takes for it.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "api/content.h"
#include "api/match.h"
#include "api/txt.h"
#include "common/error.h"

/* Whether needle occurs in hay, ASCII case aside. */
static bool contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay != '\0'; hay++) {
		if (strncasecmp(hay, needle, n) == 0) {
			return true;
		}
	}
	return n == 0;
}

bool api_text_match(const char *have, const char *want, api_match_t op)
{
	size_t hl = strlen(have), wl = strlen(want);
	switch (op) {
	case API_MATCH_EXACT:
		return strcasecmp(have, want) == 0;
	case API_MATCH_CONTAINS:
		return contains(have, want);
	case API_MATCH_STARTS:
		return hl >= wl && strncasecmp(have, want, wl) == 0;
	case API_MATCH_ENDS:
		return hl >= wl && strcasecmp(have + hl - wl, want) == 0;
	}
	return false;
}

/* An FQDN written with its final dot ("mail.example.org.") matches the
 * content the API writes without it ("mail.example.org"). */
static bool dotted_match(const char *text, const char *want, api_match_t op)
{
	static __thread char trimmed[4200];
	size_t n = strlen(want), t = strlen(text);
	if (n < 2 || want[n - 1] != '.' || want[n - 2] == '\\' ||
	    n > sizeof(trimmed) || (t > 0 && text[t - 1] == '.') ||
	    (op != API_MATCH_EXACT && op != API_MATCH_ENDS)) {
		return false;
	}
	memcpy(trimmed, want, n - 1);
	trimmed[n - 1] = '\0';
	return api_text_match(text, trimmed, op);
}

bool api_content_match(const knot_dname_t *owner, uint16_t type,
                       const uint8_t *rdata, uint16_t len, const char *want,
                       api_match_t op)
{
	static __thread char text[70000];
	int priority;
	if (api_content_format(owner, type, rdata, len, API_FORM_TEXT, text,
	                       sizeof(text), &priority) == ZC_EOK &&
	    (api_text_match(text, want, op) || dotted_match(text, want, op))) {
		return true;
	}
	/* TXT also in its plain form: certbot's dns-cloudflare looks its
	 * challenge record up by the token without quotes. */
	return api_content_is_txt(type) && api_txt_plain_ok(rdata, len) &&
	       api_content_format(owner, type, rdata, len, API_FORM_PLAIN, text,
	                          sizeof(text), &priority) == ZC_EOK &&
	       api_text_match(text, want, op);
}
