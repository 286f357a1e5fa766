/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Lookup-form keys for domain names (see name.h). */
#include <string.h>
#include <libknot/errcode.h>

#include "dns/name.h"

#define ESC 0x01

static uint8_t lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

size_t dns_name_to_lf(const knot_dname_t *name, uint8_t *out)
{
	const uint8_t *labels[KNOT_DNAME_MAXLABELS];
	unsigned count = 0;
	for (const uint8_t *p = name; *p != 0; p += *p + 1) {
		labels[count++] = p;
	}
	size_t len = 0;
	while (count > 0) {
		const uint8_t *label = labels[--count];
		for (unsigned i = 1; i <= label[0]; i++) {
			uint8_t c = lower(label[i]);
			if (c <= ESC) {
				out[len++] = ESC;
				c++;
			}
			out[len++] = c;
		}
		out[len++] = 0;
	}
	return len;
}

/* Decodes one escaped label lf[start, end) into out (after its length
 * octet); returns its length or -1 when the bytes are no label's form. */
static int decode_label(const uint8_t *lf, size_t start, size_t end,
                        uint8_t *out, size_t room)
{
	size_t n = 0;
	for (size_t i = start; i < end; i++) {
		uint8_t c = lf[i];
		if (c == ESC) {
			if (++i == end || lf[i] < 1 || lf[i] > 2) {
				return -1;
			}
			c = lf[i] - 1;
		} else if (c >= 'A' && c <= 'Z') {
			return -1; /* Not lowercased: no name gives it. */
		}
		if (n == room) {
			return -1;
		}
		out[n++] = c;
	}
	return n > 0 ? (int)n : -1;
}

int dns_name_from_lf(const uint8_t *lf, size_t len, knot_dname_t *out)
{
	/* Labels appear last-first: find each one's end from the back. */
	if (len > DNS_LF_MAXLEN || (len > 0 && lf[len - 1] != 0)) {
		return KNOT_EMALF;
	}
	size_t pos = 0;
	size_t end = len;
	while (end > 0) {
		size_t start = end - 1;
		while (start > 0 && lf[start - 1] != 0) {
			start--;
		}
		/* Room for the label, its length octet and the root label. */
		size_t room = KNOT_DNAME_MAXLEN - 2 - pos;
		if (room > KNOT_DNAME_MAXLABELLEN) {
			room = KNOT_DNAME_MAXLABELLEN;
		}
		int llen = KNOT_DNAME_MAXLEN < pos + 2 ? -1 :
		           decode_label(lf, start, end - 1, out + pos + 1, room);
		if (llen < 0) {
			return KNOT_EMALF;
		}
		out[pos] = (uint8_t)llen;
		pos += 1 + (size_t)llen;
		end = start;
	}
	out[pos++] = 0;
	return (int)pos;
}

unsigned dns_name_labels(const knot_dname_t *name)
{
	unsigned n = 0;
	for (const uint8_t *p = name; *p != 0; p += *p + 1) {
		n++;
	}
	return n;
}

const knot_dname_t *dns_name_skip(const knot_dname_t *name, unsigned skip)
{
	while (skip-- > 0 && *name != 0) {
		name += *name + 1;
	}
	return name;
}

bool dns_name_is_under(const knot_dname_t *name, const knot_dname_t *zone)
{
	unsigned nl = dns_name_labels(name);
	unsigned zl = dns_name_labels(zone);
	if (nl < zl) {
		return false;
	}
	return knot_dname_is_case_equal(dns_name_skip(name, nl - zl), zone);
}
