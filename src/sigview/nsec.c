/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NSEC records of the signed view's chain (RFC 4034 §4, RFC 4035 §2.3). */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "sigview/internal.h"

bool view_is_data_type(uint16_t type)
{
	return type != KNOT_RRTYPE_RRSIG && type != KNOT_RRTYPE_NSEC &&
	       type != KNOT_RRTYPE_NSEC3 && type != KNOT_RRTYPE_NSEC3PARAM;
}

static int type_order(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

size_t view_nsec_types(const edge_node_t *node, bool apex, bool cut,
                       uint16_t *out)
{
	size_t n = 0;
	for (uint16_t i = 0; node != NULL && i < node->count; i++) {
		uint16_t t = node->rrsets[i].type;
		/* RFC 4035 §2.3: at a delegation point, only the NS and the
		 * parent's own (DS) data. */
		if (view_is_data_type(t) && (!cut || t == KNOT_RRTYPE_NS ||
		                             t == KNOT_RRTYPE_DS)) {
			out[n++] = t;
		}
	}
	if (apex) {
		out[n++] = KNOT_RRTYPE_SOA;
	}
	out[n++] = KNOT_RRTYPE_RRSIG;
	out[n++] = KNOT_RRTYPE_NSEC;
	qsort(out, n, sizeof(out[0]), type_order);
	size_t uniq = 0;
	for (size_t i = 0; i < n; i++) {
		if (uniq == 0 || out[uniq - 1] != out[i]) {
			out[uniq++] = out[i];
		}
	}
	return uniq;
}

size_t view_nsec_rdata(const knot_dname_t *next, const uint16_t *types,
                       size_t n, uint8_t *out)
{
	size_t len = knot_dname_size(next);
	memcpy(out, next, len);
	size_t i = 0;
	while (i < n) {
		uint8_t window = (uint8_t)(types[i] >> 8);
		uint8_t bits[32] = { 0 };
		size_t used = 0;
		for (; i < n && (types[i] >> 8) == window; i++) {
			uint8_t low = (uint8_t)types[i];
			bits[low / 8] |= (uint8_t)(0x80 >> (low % 8));
			used = low / 8 + 1;
		}
		out[len++] = window;
		out[len++] = (uint8_t)used;
		memcpy(out + len, bits, used);
		len += used;
	}
	return len;
}
