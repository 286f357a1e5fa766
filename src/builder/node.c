/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Node assembly and encoding shared by full and per-record builds. */
#include <stdlib.h>
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
	free(n->pend);
}

void builder_node_start(builder_node_t *n, const uint8_t *okey,
                        size_t okey_len, const knot_dname_t *owner)
{
	zc_arena_reset(&n->arena);
	n->count = 0;
	n->pend_count = 0;
	n->valid = false;
	memcpy(n->okey, okey, okey_len);
	n->okey_len = okey_len;
	memcpy(n->owner, owner, knot_dname_size(owner));
}

static int rdata_order(const void *a, const void *b)
{
	return knot_rdata_cmp(*(knot_rdata_t *const *)a,
	                      *(knot_rdata_t *const *)b);
}

/* Makes the last RRset's rdata set of the records gathered for it: in
 * canonical order (as knot_rdataset_add() keeps it), each once. */
static int finish_rrset(builder_node_t *n)
{
	if (n->pend_count == 0) {
		return ZC_EOK;
	}
	knot_rrset_t *rr = &n->rrsets[n->count - 1];
	qsort(n->pend, n->pend_count, sizeof(n->pend[0]), rdata_order);
	size_t size = 0, count = 0;
	for (size_t i = 0; i < n->pend_count; i++) {
		if (i > 0 && knot_rdata_cmp(n->pend[i - 1], n->pend[i]) == 0) {
			continue;
		}
		size += knot_rdata_size(n->pend[i]->len);
		count++;
	}
	if (count > UINT16_MAX || size > UINT32_MAX) {
		return ZC_ETOOBIG;
	}
	uint8_t *set = zc_arena_alloc(&n->arena, size);
	if (set == NULL) {
		return KNOT_ENOMEM;
	}
	uint8_t *p = set;
	for (size_t i = 0; i < n->pend_count; i++) {
		if (i > 0 && knot_rdata_cmp(n->pend[i - 1], n->pend[i]) == 0) {
			continue;
		}
		size_t sz = knot_rdata_size(n->pend[i]->len);
		memcpy(p, n->pend[i], sz);
		p += sz;
	}
	rr->rrs.rdata = (knot_rdata_t *)set;
	rr->rrs.count = (uint16_t)count;
	rr->rrs.size = (uint32_t)size;
	n->pend_count = 0;
	return ZC_EOK;
}

int builder_node_add(builder_node_t *n, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len)
{
	knot_rrset_t *rr = n->count > 0 ? &n->rrsets[n->count - 1] : NULL;
	if (rr == NULL || rr->type != type) {
		int ret = finish_rrset(n);
		if (ret != ZC_EOK) {
			return ret;
		}
		if (n->count == EDGE_NODE_MAX_RRSETS) {
			return ZC_ETOOBIG;
		}
		rr = &n->rrsets[n->count++];
		knot_rrset_init(rr, n->owner, type, KNOT_CLASS_IN, ttl);
	}
	if (ttl < rr->ttl) {
		rr->ttl = ttl;
	}
	if (n->pend_count == n->pend_cap) {
		size_t cap = n->pend_cap ? 2 * n->pend_cap : 64;
		knot_rdata_t **grown = realloc(n->pend, cap * sizeof(*grown));
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		n->pend = grown;
		n->pend_cap = cap;
	}
	knot_rdata_t *rd = zc_arena_alloc(&n->arena, knot_rdata_size(rdata_len));
	if (rd == NULL) {
		return KNOT_ENOMEM;
	}
	knot_rdata_init(rd, rdata_len, rdata);
	n->pend[n->pend_count++] = rd;
	return ZC_EOK;
}

int builder_node_encode(builder_node_t *n, uint64_t seq, uint8_t **buf,
                        size_t *len)
{
	int fin = finish_rrset(n);
	if (fin != ZC_EOK) {
		return fin;
	}
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
