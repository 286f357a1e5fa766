/* SPDX-License-Identifier: GPL-3.0-or-later */
/* JSON written as text into a growing buffer (json_text.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_text.h"

static bool reserve(json_text_t *t, size_t more)
{
	if (t->failed) {
		return false;
	}
	if (t->len + more + 1 <= t->cap) {
		return true;
	}
	size_t cap = t->cap ? t->cap : 256;
	while (cap < t->len + more + 1) {
		cap *= 2;
	}
	char *p = realloc(t->p, cap);
	if (p == NULL) {
		t->failed = true;
		return false;
	}
	t->p = p;
	t->cap = cap;
	return true;
}

void json_text_raw(json_text_t *t, const char *s, size_t n)
{
	if (reserve(t, n)) {
		memcpy(t->p + t->len, s, n);
		t->len += n;
		t->p[t->len] = '\0';
	}
}

size_t json_text_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80) {
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		n = 2, cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0; /* Also stops at the NUL. */
		}
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
		return 0;
	}
	return n;
}

/* U+0080..U+00FF (byte b read as Latin-1) in UTF-8, in buf[2]. */
static const char *latin1(unsigned char b, char *buf)
{
	buf[0] = (char)(0xc0 | (b >> 6));
	buf[1] = (char)(0x80 | (b & 0x3f));
	return buf;
}

char *json_text_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, bad = 0;
	for (; *p != '\0'; p += n) {
		if ((n = json_text_utf8_len(p)) == 0) {
			bad++;
			n = 1;
		}
	}
	if (bad == 0) {
		return NULL;
	}
	char *out = malloc(strlen(s) + bad + 1), *o = out;
	for (p = (const unsigned char *)s; out != NULL && *p != '\0'; p += n) {
		if ((n = json_text_utf8_len(p)) == 0) {
			latin1(*p, o);
			o += 2;
			n = 1;
		} else {
			memcpy(o, p, n);
			o += n;
		}
	}
	if (out != NULL) {
		*o = '\0';
	}
	return out;
}

void json_text_str(json_text_t *t, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	json_text_raw(t, "\"", 1);
	while (*p != '\0' && !t->failed) {
		/* The longest run that needs no escape, copied at once. */
		const unsigned char *run = p;
		size_t n;
		while (*p >= 0x20 && *p != '"' && *p != '\\' &&
		       (n = json_text_utf8_len(p)) != 0) {
			p += n;
		}
		json_text_raw(t, (const char *)run, (size_t)(p - run));
		if (*p == '\0') {
			break;
		}
		char esc[8];
		if (*p >= 0x80) {
			/* Not UTF-8: the byte read as Latin-1. */
			json_text_raw(t, latin1(*p, esc), 2);
			p++;
			continue;
		}
		switch (*p) {
		case '"': memcpy(esc, "\\\"", 3); break;
		case '\\': memcpy(esc, "\\\\", 3); break;
		case '\b': memcpy(esc, "\\b", 3); break;
		case '\f': memcpy(esc, "\\f", 3); break;
		case '\n': memcpy(esc, "\\n", 3); break;
		case '\r': memcpy(esc, "\\r", 3); break;
		case '\t': memcpy(esc, "\\t", 3); break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04X", *p);
		}
		json_text_raw(t, esc, strlen(esc));
		p++;
	}
	json_text_raw(t, "\"", 1);
}

void json_text_int(json_text_t *t, int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
	json_text_raw(t, buf, (size_t)n);
}

void json_text_value(json_text_t *t, const json_t *v)
{
	if (v == NULL) {
		json_text_raw(t, "null", 4);
		return;
	}
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (text == NULL) {
		t->failed = true;
		return;
	}
	json_text_raw(t, text, strlen(text));
	free(text);
}

char *json_text_take(json_text_t *t, size_t *len)
{
	if (!t->failed && t->p == NULL) {
		json_text_raw(t, "", 0); /* Nothing written: "". */
	}
	char *p = t->failed ? NULL : t->p;
	*len = t->failed ? 0 : t->len;
	if (t->failed) {
		free(t->p);
	}
	*t = (json_text_t){ 0 };
	return p;
}

void json_text_free(json_text_t *t)
{
	free(t->p);
	*t = (json_text_t){ 0 };
}
