/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Names in record content written in Unicode (a CNAME's, an MX's target
 * "mail.bücher.example"), stored in Punycode as the record's own name is
 * (content_idna.h): only the words of the content that are names for the
 * type; a character-string in Unicode (an HINFO's, a CAA value) is data
 * and stays as written.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "api/content_idna.h"
#include "dns/name_text.h"

/* The words of a type's content that are names, counted from 0 with the
 * priority of MX, SRV and URI first; up to three, ended by -1. IPSECKEY's
 * gateway (word 3) is a name only when its type (word 1) is 3. */
static const int *name_words(uint16_t type)
{
	static const int first[] = { 0, -1 }, second[] = { 1, -1 },
	                 fourth[] = { 3, -1 }, sixth[] = { 5, -1 },
	                 two[] = { 0, 1, -1 }, px[] = { 1, 2, -1 };
	switch (type) {
	case KNOT_RRTYPE_CNAME: case KNOT_RRTYPE_DNAME: case KNOT_RRTYPE_NS:
	case KNOT_RRTYPE_PTR: case KNOT_RRTYPE_MD: case KNOT_RRTYPE_MF:
	case KNOT_RRTYPE_MB: case KNOT_RRTYPE_MG: case KNOT_RRTYPE_MR:
	case KNOT_RRTYPE_NSEC:
		return first;
	case KNOT_RRTYPE_MX: case KNOT_RRTYPE_KX: case KNOT_RRTYPE_AFSDB:
	case KNOT_RRTYPE_RT: case KNOT_RRTYPE_LP: case KNOT_RRTYPE_SVCB:
	case KNOT_RRTYPE_HTTPS:
		return second;
	case KNOT_RRTYPE_SRV: case KNOT_RRTYPE_IPSECKEY:
		return fourth;
	case KNOT_RRTYPE_NAPTR:
		return sixth;
	case KNOT_RRTYPE_SOA: case KNOT_RRTYPE_RP: case KNOT_RRTYPE_MINFO:
		return two;
	case KNOT_RRTYPE_PX:
		return px;
	default:
		return NULL;
	}
}

size_t api_content_word_len(const char *p)
{
	const char *q = p;
	bool quoted = false;
	while (*q != '\0' && (quoted || (*q != ' ' && *q != '\t'))) {
		if (*q == '\\' && q[1] != '\0') {
			q++;
		} else if (*q == '"') {
			quoted = !quoted;
		}
		q++;
	}
	return (size_t)(q - p);
}

static bool is_name_word(const int *names, int word, uint16_t type,
                         const char *content)
{
	for (int i = 0; names[i] >= 0; i++) {
		if (names[i] != word) {
			continue;
		}
		if (type == KNOT_RRTYPE_IPSECKEY) {
			/* the gateway type, the content's second word */
			const char *p = content + strspn(content, " \t");
			p += api_content_word_len(p);
			p += strspn(p, " \t");
			return p[0] == '3' && (p[1] == ' ' || p[1] == '\t');
		}
		return true;
	}
	return false;
}

int api_content_idna(uint16_t type, const char *content, bool priority_apart,
                     char *out, size_t size)
{
	const int *names = name_words(type);
	bool wide = false;
	for (const char *c = content; *c != '\0' && !wide; c++) {
		wide = (unsigned char)*c >= 0x80;
	}
	if (names == NULL || !wide ||
	    (strncmp(content, "\\#", 2) == 0 && (content[2] == ' ' ||
	                                         content[2] == '\t'))) {
		return 0;
	}
	size_t o = 0;
	/* The priority given apart is the type's first word, not in content. */
	int word = priority_apart && (type == KNOT_RRTYPE_MX ||
	                              type == KNOT_RRTYPE_SRV ||
	                              type == KNOT_RRTYPE_URI);
	const char *p = content;
	while (*p != '\0') {
		size_t blanks = strspn(p, " \t");
		if (blanks > 0) {
			if (o + blanks >= size) {
				return -1;
			}
			memcpy(out + o, p, blanks);
			o += blanks;
			p += blanks;
			continue;
		}
		size_t n = api_content_word_len(p);
		char text[DNS_NAME_IDNA_MAX], ascii[DNS_NAME_IDNA_MAX];
		const char *put = p;
		size_t put_len = n;
		if (n < sizeof(text) && is_name_word(names, word, type, content)) {
			memcpy(text, p, n);
			text[n] = '\0';
			if (!dns_name_idna(text, ascii, sizeof(ascii))) {
				return -1;
			}
			put = ascii;
			put_len = strlen(ascii);
		}
		if (o + put_len >= size) {
			return -1;
		}
		memcpy(out + o, put, put_len);
		o += put_len;
		p += n;
		word++;
	}
	out[o] = '\0';
	return 1;
}
