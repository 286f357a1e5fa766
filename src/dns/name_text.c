/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Names written as text by people and their tools (the API's JSON, the
 * zonecast command's arguments): a label in Unicode is an
 * internationalized one, stored in Punycode (name_text.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <idn2.h>
#include <libknot/dname.h>

#include "dns/name_text.h"

/* Whether a converted label is letters, digits and '-' only (RFC 5890
 * §2.3.2.1): UTS #46 maps some Unicode to ASCII punctuation ("＼" to "\\",
 * "＊" to "*", an ideographic space to " "), which the master-file syntax
 * read after would take as an escape, a wildcard or a blank. (libidn2's
 * STD3 rules drop such characters without a word instead: "a　b" became
 * "ab".) */
static bool ldh(const char *label)
{
	return label[0] != '\0' &&
	       strspn(label, "abcdefghijklmnopqrstuvwxyz"
	                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") ==
	       strlen(label);
}

/* Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static bool utf8(const unsigned char *s)
{
	while (*s != 0) {
		unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 :
		             (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
		if (n == 9 || (n == 1 && c < 0xc2) || (n == 3 && c > 0xf4)) {
			return false;
		}
		unsigned cp = n == 0 ? c : c & (0x3f >> n);
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80) {
				return false;
			}
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
			return false;
		}
		s += n + 1;
	}
	return true;
}

bool dns_name_idna(const char *text, char *out, size_t size)
{
	size_t o = 0;
	const char *p = text;
	for (;;) {
		/* One label: up to an unescaped '.'. */
		const char *start = p;
		bool escaped = false, wide = false;
		while (*p != '\0' && *p != '.') {
			if (*p == '\\' && p[1] != '\0') {
				escaped = true;
				p++;
			}
			wide |= (unsigned char)*p >= 0x80;
			p++;
		}
		size_t n = (size_t)(p - start);
		char label[DNS_NAME_IDNA_MAX];
		if (n >= sizeof(label)) {
			return false;
		}
		memcpy(label, start, n);
		label[n] = '\0';
		const char *write = label;
		char *alabel = NULL;
		/* A label with escapes is octets, as a master file's, even
		 * beside Unicode; so is one that is no UTF-8 (no Unicode was
		 * meant: a raw octet typed). */
		if (wide && !escaped && utf8((const unsigned char *)label)) {
			if (idn2_lookup_u8((const uint8_t *)label, (uint8_t **)&alabel,
			                   IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL) !=
			    IDN2_OK ||
			    !ldh(alabel)) {
				idn2_free(alabel);
				return false;
			}
			write = alabel;
		}
		int w = snprintf(out + o, size - o, "%s%s", write,
		                 *p == '.' ? "." : "");
		idn2_free(alabel);
		if (w < 0 || (size_t)w >= size - o) {
			return false;
		}
		o += (size_t)w;
		if (*p == '\0') {
			return true;
		}
		p++;
	}
}

uint8_t *dns_name_from_text(uint8_t *out, const char *text, size_t maxlen)
{
	char ascii[DNS_NAME_IDNA_MAX];
	if (text == NULL || !dns_name_idna(text, ascii, sizeof(ascii))) {
		return NULL;
	}
	return knot_dname_from_str(out, ascii, maxlen);
}
