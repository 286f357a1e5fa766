/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Next names for minimally covering NSEC records (see successor.h). */
#include <assert.h>
#include <string.h>

#include "dns/name.h"
#include "dns/successor.h"

/* The octet after c in canonical order, c not being 0xff: octets of A-Z
 * compare as a-z (RFC 4034 §6.2), so 0x40 is followed by 0x5b. */
static uint8_t next_octet(uint8_t c)
{
	assert(c != 0xff);
	return c == 'A' - 1 ? 'Z' + 1 : c + 1;
}

/* Writes label (len octets of data, then suffix, a wire name) to out;
 * returns the length. */
static size_t write_name(const uint8_t *data, uint8_t len,
                         const knot_dname_t *suffix, knot_dname_t *out)
{
	out[0] = len;
	memcpy(out + 1, data, len);
	size_t suffix_size = knot_dname_size(suffix);
	memcpy(out + 1 + len, suffix, suffix_size);
	return 1u + len + suffix_size;
}

size_t dns_name_after_subtree_within(const knot_dname_t *name,
                                     const knot_dname_t *apex,
                                     size_t max_size, knot_dname_t *out)
{
	assert(max_size <= KNOT_DNAME_MAXLEN);
	uint8_t buf[KNOT_DNAME_MAXLEN];
	size_t size = knot_dname_size(name);
	assert(size <= max_size);
	memcpy(buf, name, size);
	knot_dname_to_lower(buf);
	unsigned below_apex = dns_name_labels(buf) - dns_name_labels(apex);
	const uint8_t *label = buf;
	for (; below_apex > 0; below_apex--) {
		uint8_t len = label[0];
		const knot_dname_t *parent = label + 1 + len;
		uint8_t data[KNOT_DNAME_MAXLABELLEN];
		memcpy(data, label + 1, len);
		/* label\000 is the first label after label and its names. */
		if (len < KNOT_DNAME_MAXLABELLEN && size + 1 <= max_size) {
			data[len] = 0x00;
			return write_name(data, len + 1, parent, out);
		}
		/* Else the first label of at most len octets after it: no
		 * label that starts with label fits. */
		uint8_t keep = len;
		while (keep > 0 && data[keep - 1] == 0xff) {
			keep--;
		}
		if (keep > 0) {
			data[keep - 1] = next_octet(data[keep - 1]);
			return write_name(data, keep, parent, out);
		}
		/* All 0xff: nothing follows at this level, go up one. */
		size -= 1u + len;
		label = parent;
	}
	size_t apex_size = knot_dname_size(label);
	memcpy(out, label, apex_size);
	return apex_size;
}

size_t dns_name_next_within(const knot_dname_t *name,
                            const knot_dname_t *apex, size_t max_size,
                            knot_dname_t *out)
{
	size_t size = knot_dname_size(name);
	if (size + 2 <= max_size) {
		/* RFC 9824 §3.1: \000.<name>, the first name below it. */
		out[0] = 1;
		out[1] = 0x00;
		memcpy(out + 2, name, size);
		knot_dname_to_lower(out + 2);
		return size + 2;
	}
	/* No name below name fits: the first one after them all. */
	return dns_name_after_subtree_within(name, apex, max_size, out);
}

size_t dns_name_next(const knot_dname_t *name, const knot_dname_t *apex,
                     knot_dname_t *out)
{
	return dns_name_next_within(name, apex, KNOT_DNAME_MAXLEN, out);
}

size_t dns_name_after_subtree(const knot_dname_t *name,
                              const knot_dname_t *apex, knot_dname_t *out)
{
	return dns_name_after_subtree_within(name, apex, KNOT_DNAME_MAXLEN,
	                                     out);
}
