/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Node assembly and encoding shared by full and per-record builds. */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/node.h"
#include "common/error.h"

void builder_node_init(builder_node_t *n)
{
	memset(n, 0, sizeof(*n));
	zc_arena_init(&n->arena, 64 * 1024);
}

void builder_node_deinit(builder_node_t *n)
{
	zc_arena_deinit(&n->arena);
}

void builder_node_start(builder_node_t *n, const uint8_t *okey,
                        size_t okey_len, const knot_dname_t *owner)
{
	zc_arena_reset(&n->arena);
	n->count = 0;
	n->valid = false;
	memcpy(n->okey, okey, okey_len);
	n->okey_len = okey_len;
	memcpy(n->owner, owner, knot_dname_size(owner));
}

int builder_node_add(builder_node_t *n, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len)
{
	knot_rrset_t *rr = n->count > 0 ? &n->rrsets[n->count - 1] : NULL;
	if (rr == NULL || rr->type != type) {
		if (n->count == EDGE_NODE_MAX_RRSETS) {
			return ZC_ETOOBIG;
		}
		rr = &n->rrsets[n->count++];
		knot_rrset_init(rr, n->owner, type, KNOT_CLASS_IN, ttl);
	}
	if (ttl < rr->ttl) {
		rr->ttl = ttl;
	}
	return knot_rrset_add_rdata(rr, rdata, rdata_len, zc_arena_mm(&n->arena));
}

int builder_node_encode(builder_node_t *n, uint64_t seq, uint8_t **buf,
                        size_t *len)
{
	size_t size = edge_node_size(n->rrsets, n->count);
	*buf = zc_arena_alloc(&n->arena, size);
	if (*buf == NULL) {
		return KNOT_ENOMEM;
	}
	uint8_t flags = edge_node_flags(n->owner, n->okey_len == 0, n->rrsets,
	                                n->count);
	int ret = edge_node_encode(*buf, size, flags, seq, n->rrsets, n->count);
	if (ret < 0) {
		return ret;
	}
	*len = (size_t)ret;
	return ZC_EOK;
}
