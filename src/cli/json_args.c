/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Command-line arguments as JSON strings (see json_args.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_args.h"

json_t *cli_json_name(const char *text)
{
	/* Unicode typed is Unicode meant (as an API client's JSON is);
	 * octets that are no UTF-8, or a backslash escaping one, are
	 * octets. */
	bool raw_escape = false;
	for (const char *p = text; *p != '\0' && !raw_escape; p++) {
		raw_escape = p[0] == '\\' && (unsigned char)p[1] >= 0x80;
	}
	json_t *utf8 = raw_escape ? NULL : json_string(text);
	if (utf8 != NULL) {
		return utf8;
	}
	size_t len = strlen(text);
	char *out = malloc(4 * len + 1);
	if (out == NULL) {
		return NULL;
	}
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		/* A backslash before a raw octet escapes that octet: the
		 * pair is the octet, \DDD alone ("\\\xe9" is "\233", not a
		 * backslash then "233"). Other escapes are copied whole. */
		bool escaped = *p == '\\' && p[1] != '\0';
		if (escaped && p[1] >= 0x80) {
			p++;
		} else if (escaped) {
			out[o++] = (char)*p++;
			out[o++] = (char)*p;
			continue;
		}
		if (*p >= 0x80) {
			o += (size_t)snprintf(out + o, 5, "\\%03u", *p);
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
	json_t *j = json_string(out);
	free(out);
	return j;
}

json_t *cli_json_text(const char *cmd, const char *what, const char *text)
{
	json_t *j = json_string(text);
	if (j == NULL) {
		fprintf(stderr, "zonecast %s: %s: not UTF-8 text\n", cmd, what);
	}
	return j;
}

bool cli_json_set(json_t *obj, const char *key, json_t *value)
{
	/* json_object_set_new() takes value whatever it returns. */
	return value != NULL && json_object_set_new(obj, key, value) == 0;
}
