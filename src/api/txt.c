/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TXT content in Cloudflare's plain and quoted forms (txt.h). */
#include <stdio.h>
#include <string.h>

#include "api/txt.h"
#include "common/error.h"

#define STRING_MAX 255 /* RFC 1035 §3.3: a length octet. */

/* Collects character-strings into rdata, splitting long ones. */
typedef struct {
	uint8_t *rdata;
	size_t len;          /* Octets written. */
	size_t start;        /* The current string's length octet. */
	bool open;           /* A string is being written. */
	bool overflow;
} strings_t;

static void string_begin(strings_t *s)
{
	if (s->len + 1 > UINT16_MAX) {
		s->overflow = true;
		return;
	}
	s->start = s->len;
	s->rdata[s->len++] = 0;
	s->open = true;
}

/* Appends an octet to the open string; a full string is closed and the
 * octet starts the next one (Cloudflare splits long strings so). */
static void string_put(strings_t *s, uint8_t c)
{
	if (s->overflow) {
		return;
	}
	if (s->rdata[s->start] == STRING_MAX) {
		string_begin(s);
	}
	if (s->overflow || s->len + 1 > UINT16_MAX) {
		s->overflow = true;
		return;
	}
	s->rdata[s->len++] = c;
	s->rdata[s->start]++;
}

bool api_txt_is_plain(const char *content)
{
	return content[0] != '"';
}

/* Reads one escape after a backslash (RFC 1035 §5.1: \X is X, \DDD the
 * octet DDD); returns the characters read, 0 when malformed. */
static size_t read_escape(const char *p, uint8_t *octet)
{
	if (p[0] >= '0' && p[0] <= '9') {
		if (!(p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9')) {
			return 0;
		}
		int v = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
		if (v > 255) {
			return 0;
		}
		*octet = (uint8_t)v;
		return 3;
	}
	if (p[0] == '\0') {
		return 0;
	}
	*octet = (uint8_t)p[0];
	return 1;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The quoted form: character-strings, quoted or not, apart by blanks. */
static int parse_strings(const char *p, strings_t *s, char *err,
                         size_t err_size)
{
	while (*p != '\0') {
		if (is_blank(*p)) {
			p++;
			continue;
		}
		bool quoted = *p == '"';
		p += quoted ? 1 : 0;
		string_begin(s);
		while (*p != '\0' && (quoted ? *p != '"' : !is_blank(*p))) {
			uint8_t c = (uint8_t)*p;
			size_t n = 1;
			if (*p == '\\') {
				n = read_escape(p + 1, &c);
				if (n == 0) {
					snprintf(err, err_size, "content: a backslash "
					         "must escape a character or be \\DDD "
					         "(000 to 255)");
					return ZC_EUSAGE;
				}
				n++;
			} else if (!quoted && *p == '"') {
				snprintf(err, err_size, "content: '\"' inside an "
				         "unquoted string (write \\\")");
				return ZC_EUSAGE;
			}
			string_put(s, c);
			p += n;
		}
		if (quoted && *p != '"') {
			snprintf(err, err_size, "content: a quoted string is not "
			         "closed");
			return ZC_EUSAGE;
		}
		p += quoted ? 1 : 0;
	}
	return ZC_EOK;
}

int api_txt_parse(const char *content, uint8_t *rdata, uint16_t *len,
                  char *err, size_t err_size)
{
	strings_t s = { .rdata = rdata };
	if (api_txt_is_plain(content)) {
		string_begin(&s); /* Empty content: one empty string. */
		for (const char *p = content; *p != '\0'; p++) {
			string_put(&s, (uint8_t)*p);
		}
	} else {
		int ret = parse_strings(content, &s, err, err_size);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	if (s.overflow) {
		snprintf(err, err_size, "content: longer than a record holds "
		         "(65535 octets)");
		return ZC_EUSAGE;
	}
	*len = (uint16_t)s.len;
	return ZC_EOK;
}

/* Length of the valid UTF-8 sequence (RFC 3629) at s (n octets left),
 * or 0. */
static size_t utf8_char(const uint8_t *s, size_t n)
{
	size_t k = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 :
	           s[0] >= 0xe0 && s[0] <= 0xef ? 3 :
	           s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	if (k == 0 || k > n) {
		return 0;
	}
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
	}
	/* Overlong forms, surrogates, past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f)) {
		return 0;
	}
	return k;
}

static bool is_utf8(const uint8_t *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k) {
		if ((k = utf8_char(s + i, n - i)) == 0) {
			return false;
		}
	}
	return true;
}

/* Whether rdata is a sequence of character-strings; *count gets it. */
static bool well_formed(const uint8_t *rdata, uint16_t len, size_t *count)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i += 1 + rdata[i]) {
		if (i + 1 + rdata[i] > len) {
			return false;
		}
		n++;
	}
	*count = n;
	return n > 0;
}

bool api_txt_plain_ok(const uint8_t *rdata, uint16_t len)
{
	size_t count;
	if (!well_formed(rdata, len, &count)) {
		return false;
	}
	/* The text, every string but the last full (255), as plain text is
	 * read; one empty string is the empty text. */
	uint8_t text[UINT16_MAX];
	size_t n = 0, i = 0;
	for (size_t k = 0; k < count; k++, i += 1 + rdata[i]) {
		bool last = k + 1 == count;
		if ((!last && rdata[i] != STRING_MAX) ||
		    (last && rdata[i] == 0 && count > 1)) {
			return false;
		}
		memcpy(text + n, rdata + i + 1, rdata[i]);
		n += rdata[i];
	}
	if (n > 0 && text[0] == '"') {
		return false; /* Would read as the quoted form. */
	}
	for (size_t k = 0; k < n; k++) {
		if (text[k] == '\0' || text[k] == '\n' || text[k] == '\r') {
			return false; /* Not in a content (a JSON C string). */
		}
	}
	return is_utf8(text, n);
}

/* Appends one quoted string; false when out of room. */
static bool put_quoted(const uint8_t *s, size_t n, char *out, size_t size,
                       size_t *pos)
{
	bool utf8 = is_utf8(s, n);
	if (*pos + 1 >= size) {
		return false;
	}
	out[(*pos)++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (*pos + 6 >= size) {
			return false;
		}
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			out[(*pos)++] = '\\';
			out[(*pos)++] = (char)c;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
			*pos += (size_t)snprintf(out + *pos, size - *pos, "\\%03u", c);
		} else {
			out[(*pos)++] = (char)c;
		}
	}
	out[(*pos)++] = '"';
	return true;
}

int api_txt_format(const uint8_t *rdata, uint16_t len, int form, char *out,
                   size_t size)
{
	size_t count, pos = 0;
	if (!well_formed(rdata, len, &count)) {
		return ZC_EFORMAT;
	}
	if ((form & API_FORM_PLAIN) && api_txt_plain_ok(rdata, len)) {
		for (size_t i = 0; i < len; i += 1 + rdata[i]) {
			if (pos + rdata[i] + 1 > size) {
				return ZC_ENOSPACE;
			}
			memcpy(out + pos, rdata + i + 1, rdata[i]);
			pos += rdata[i];
		}
		out[pos] = '\0';
		return ZC_EOK;
	}
	for (size_t i = 0; i < len; i += 1 + rdata[i]) {
		if (i > 0) {
			if (pos + 1 >= size) {
				return ZC_ENOSPACE;
			}
			out[pos++] = ' ';
		}
		if (!put_quoted(rdata + i + 1, rdata[i], out, size, &pos)) {
			return ZC_ENOSPACE;
		}
	}
	out[pos] = '\0';
	return ZC_EOK;
}
