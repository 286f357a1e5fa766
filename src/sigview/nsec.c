/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NSEC records of the signed view's chain (RFC 4034 §4, RFC 4035 §2.3). */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "dns/nsec.h"
#include "sigview/internal.h"

bool view_is_data_type(uint16_t type)
{
	return type != KNOT_RRTYPE_RRSIG && type != KNOT_RRTYPE_NSEC &&
	       type != KNOT_RRTYPE_NSEC3 && type != KNOT_RRTYPE_NSEC3PARAM;
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
	return dns_nsec_types_finish(out, n);
}

size_t view_nsec_rdata(const knot_dname_t *next, const uint16_t *types,
                       size_t n, uint8_t *out)
{
	size_t len = knot_dname_size(next);
	memcpy(out, next, len);
	return len + dns_nsec_bitmap(types, n, out + len);
}
