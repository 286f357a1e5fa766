/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A records store URI as it may be shown (records.h,
 * records_uri_redact()): status lines, logs and error messages never
 * carry a password, whether the URI gives it as user:password@ or as a
 * password=... query parameter (libpq takes both).
 */
#include <stdio.h>
#include <string.h>

#include "records/records.h"

/* Appends n bytes of s to out (always terminated, cut at size). */
static void put(char *out, size_t size, size_t *at, const char *s, size_t n)
{
	for (size_t i = 0; i < n && *at + 1 < size; i++) {
		out[(*at)++] = s[i];
	}
	out[*at < size ? *at : size - 1] = '\0';
}

void records_uri_redact(const char *uri, char *out, size_t size)
{
	if (size == 0) {
		return;
	}
	size_t at = 0;
	out[0] = '\0';
	const char *p = uri;
	const char *scheme_end = strstr(uri, "://");
	const char *query = strchr(uri, '?');
	if (scheme_end != NULL && (query == NULL || scheme_end < query)) {
		/* scheme://user:password@host...: the password goes. */
		const char *auth = scheme_end + 3;
		size_t auth_len = strcspn(auth, "/?");
		const char *at_sign = memchr(auth, '@', auth_len);
		const char *colon = at_sign ? memchr(auth, ':',
		                                     (size_t)(at_sign - auth)) : NULL;
		if (colon != NULL) {
			put(out, size, &at, uri, (size_t)(colon - uri));
			put(out, size, &at, ":***", 4);
			p = at_sign;
		}
	}
	/* ...?a=b&password=secret&c=d: the value goes. */
	while (*p != '\0') {
		size_t n = strcspn(p, "?&");
		put(out, size, &at, p, n);
		p += n;
		if (*p == '\0') {
			break;
		}
		put(out, size, &at, p, 1);
		p++;
		if (strncmp(p, "password=", 9) == 0) {
			put(out, size, &at, "password=***", 12);
			p += 9 + strcspn(p + 9, "&");
		}
	}
}
