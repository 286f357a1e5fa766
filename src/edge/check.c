/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Checks of values that come from outside this process before they are
 * stored (an edge applying a replicated log): a node value must decode,
 * its flags must say what its RRsets are, its types must be data types
 * in ascending order, and each rdata must be what libknot's descriptor of
 * its type says, with
 * names in uncompressed wire form, so that nothing later reads past an
 * rdata or follows a "compression pointer" inside one.
 */
#include <libknot/descriptor.h>
#include <libknot/dname.h>

#include "common/error.h"
#include "common/wire.h"
#include "dns/rdata.h"
#include "edge/codec.h"

/* Walks one rdata against its type's descriptor. */
static bool rdata_ok(uint16_t type, const uint8_t *p, size_t len)
{
	const knot_rdata_descriptor_t *d = knot_get_rdata_descriptor(type);
	const uint8_t *end = p + len;
	for (int i = 0; d->block_types[i] != KNOT_RDATA_WF_END; i++) {
		int block = d->block_types[i];
		if (block > 0) {
			if (end - p < block) {
				return false;
			}
			p += block;
		} else if (block == KNOT_RDATA_WF_REMAINDER) {
			p = end;
		} else if (block == KNOT_RDATA_WF_NAPTR_HEADER) {
			if (end - p < 4) {
				return false;
			}
			p += 4;
			for (int s = 0; s < 3; s++) {
				if (p >= end || end - p - 1 < *p) {
					return false;
				}
				p += 1 + *p;
			}
		} else {
			int size = knot_dname_wire_check(p, end, NULL);
			if (size <= 0) {
				return false;
			}
			p += size;
		}
	}
	return p == end;
}

int edge_node_check(const uint8_t *buf, size_t len)
{
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	uint8_t version = zc_wire_get_u8(&w);
	uint8_t flags = zc_wire_get_u8(&w);
	zc_wire_get_u64(&w);
	uint16_t count = zc_wire_get_u16(&w);
	if (w.error != ZC_EOK || version != EDGE_NODE_VERSION ||
	    count > EDGE_NODE_MAX_RRSETS || (flags & ~EDGE_NODE_FLAGS_ALL)) {
		return ZC_EFORMAT;
	}
	bool has_ns = false, has_cname = false, has_dname = false;
	bool beside_cname = false;
	uint32_t last_type = 0;
	for (uint16_t i = 0; i < count; i++) {
		uint16_t type = zc_wire_get_u16(&w);
		zc_wire_get_u32(&w);
		uint16_t rr_count = zc_wire_get_u16(&w);
		/* Types ascending, each once (lookups search them so), and
		 * data only: no meta-type (OPT, TSIG, ANY: an OPT was
		 * answered in the answer section). */
		if (w.error != ZC_EOK || rr_count == 0 ||
		    (i > 0 && type <= last_type) || !dns_rdata_type_storable(type)) {
			return ZC_EFORMAT;
		}
		/* What no build writes, as the records' rules keep it out:
		 * an SOA (the zone's lives in its metadata: a node's was
		 * served below the apex), two CNAMEs or DNAMEs at a name, a
		 * CNAME beside other data. */
		if (type == KNOT_RRTYPE_SOA ||
		    ((type == KNOT_RRTYPE_CNAME || type == KNOT_RRTYPE_DNAME) &&
		     rr_count != 1)) {
			return ZC_EFORMAT;
		}
		last_type = type;
		has_ns |= type == KNOT_RRTYPE_NS;
		has_cname |= type == KNOT_RRTYPE_CNAME;
		has_dname |= type == KNOT_RRTYPE_DNAME;
		beside_cname |= type != KNOT_RRTYPE_CNAME &&
		                type != KNOT_RRTYPE_RRSIG && type != KNOT_RRTYPE_NSEC;
		for (uint16_t j = 0; j < rr_count; j++) {
			uint16_t rdlen = zc_wire_get_u16(&w);
			const uint8_t *rd = zc_wire_take(&w, rdlen);
			if (w.error != ZC_EOK || !rdata_ok(type, rd, rdlen)) {
				return ZC_EFORMAT;
			}
		}
	}
	/* The flags the server acts on say what the RRsets are (as
	 * edge_node_flags() derives them): a DNAME flag without a DNAME
	 * made the server read a record that was not there. */
	if ((has_cname && beside_cname) ||
	    ((flags & EDGE_NODE_CNAME) != 0) != has_cname ||
	    ((flags & EDGE_NODE_DNAME) != 0) != has_dname ||
	    ((flags & EDGE_NODE_DELEG) &&
	     (!has_ns || (flags & EDGE_NODE_APEX)))) {
		return ZC_EFORMAT;
	}
	return w.pos == w.end ? ZC_EOK : ZC_EFORMAT;
}
