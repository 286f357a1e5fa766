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
#include "api/content_idna.h"
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

/* FQDNs written with their final dot ("10 mail.example.org.", an RP's
 * "a.test. b.test.") match the content the API writes without them: each
 * blank-separated word outside quotes that ends in an unescaped '.' (the
 * root, ".", excepted) loses it. Only the last one did, so a multi-name
 * filter in that form matched nothing. Not for TXT, whose plain text may
 * end in a dot. */
static bool dotted_match(uint16_t type, const char *text, const char *want,
                         api_match_t op)
{
	static __thread char trimmed[4200];
	size_t n = strlen(want), t = 0;
	if (api_content_is_txt(type) || n >= sizeof(trimmed)) {
		return false;
	}
	bool quoted = false, changed = false;
	for (size_t i = 0; i < n; i++) {
		char c = want[i];
		if (c == '\\' && i + 1 < n) {
			trimmed[t++] = c;
			trimmed[t++] = want[++i];
			continue;
		}
		quoted ^= c == '"';
		bool word_end = want[i + 1] == '\0' || want[i + 1] == ' ';
		bool alone = i == 0 || want[i - 1] == ' ';
		if (c == '.' && !quoted && word_end && !alone) {
			changed = true;
			continue;
		}
		trimmed[t++] = c;
	}
	trimmed[t] = '\0';
	return changed && api_text_match(text, trimmed, op);
}

bool api_content_match(const knot_dname_t *owner, uint16_t type,
                       const uint8_t *rdata, uint16_t len, const char *want,
                       api_match_t op)
{
	static __thread char text[API_CONTENT_MAX], ascii[4200];
	int priority;
	/* A name written in Unicode matches its stored Punycode, as it was
	 * written (content_idna.h; content gives MX, SRV and URI without
	 * their priority). */
	if (api_content_idna(type, want, true, ascii, sizeof(ascii)) == 1) {
		want = ascii;
	}
	if (api_content_format(owner, type, rdata, len, API_FORM_TEXT, text,
	                       sizeof(text), &priority) == ZC_EOK &&
	    (api_text_match(text, want, op) ||
	     dotted_match(type, text, want, op))) {
		return true;
	}
	/* TXT also in its plain form: certbot's dns-cloudflare looks its
	 * challenge record up by the token without quotes. */
	return api_content_is_txt(type) && api_txt_plain_ok(rdata, len) &&
	       api_content_format(owner, type, rdata, len, API_FORM_PLAIN, text,
	                          sizeof(text), &priority) == ZC_EOK &&
	       api_text_match(text, want, op);
}
