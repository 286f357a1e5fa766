/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Encode, decode and size of the edge store's values (see codec.h). */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/dname.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/wire.h"
#include "edge/codec.h"

uint8_t edge_node_flags(const knot_dname_t *owner, int is_apex,
                        const knot_rrset_t *rrsets, uint16_t count)
{
	uint8_t flags = is_apex ? EDGE_NODE_APEX : 0;
	if (knot_dname_is_wildcard(owner)) {
		flags |= EDGE_NODE_WILDCARD;
	}
	for (uint16_t i = 0; i < count; i++) {
		switch (rrsets[i].type) {
		case KNOT_RRTYPE_NS:
			flags |= is_apex ? 0 : EDGE_NODE_DELEG;
			break;
		case KNOT_RRTYPE_CNAME:
			flags |= EDGE_NODE_CNAME;
			break;
		case KNOT_RRTYPE_DNAME:
			flags |= EDGE_NODE_DNAME;
			break;
		default:
			break;
		}
	}
	return flags;
}

size_t edge_node_size(const knot_rrset_t *rrsets, uint16_t count)
{
	size_t size = 1 + 1 + 8 + 2;
	for (uint16_t i = 0; i < count; i++) {
		size += 2 + 4 + 2;
		knot_rdata_t *rd = rrsets[i].rrs.rdata;
		for (uint16_t j = 0; j < rrsets[i].rrs.count; j++) {
			size += 2 + rd->len;
			rd = knot_rdataset_next(rd);
		}
	}
	return size;
}

int edge_node_encode(uint8_t *buf, size_t len, uint8_t flags, uint64_t seq,
                     const knot_rrset_t *rrsets, uint16_t count)
{
	zc_wire_t w = zc_wire_init(buf, len);
	zc_wire_u8(&w, EDGE_NODE_VERSION);
	zc_wire_u8(&w, flags);
	zc_wire_u64(&w, seq);
	zc_wire_u16(&w, count);
	for (uint16_t i = 0; i < count; i++) {
		const knot_rrset_t *rr = &rrsets[i];
		zc_wire_u16(&w, rr->type);
		zc_wire_u32(&w, rr->ttl);
		zc_wire_u16(&w, rr->rrs.count);
		knot_rdata_t *rd = rr->rrs.rdata;
		for (uint16_t j = 0; j < rr->rrs.count; j++) {
			zc_wire_u16(&w, rd->len);
			zc_wire_write(&w, rd->data, rd->len);
			rd = knot_rdataset_next(rd);
		}
	}
	if (w.error != ZC_EOK) {
		return ZC_ENOSPACE;
	}
	return (int)(w.pos - buf);
}

int edge_node_peek(const uint8_t *buf, size_t len, uint8_t *flags,
                   uint64_t *seq)
{
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	uint8_t version = zc_wire_get_u8(&w);
	*flags = zc_wire_get_u8(&w);
	*seq = zc_wire_get_u64(&w);
	if (w.error != ZC_EOK || version != EDGE_NODE_VERSION) {
		return ZC_EFORMAT;
	}
	return ZC_EOK;
}

int edge_node_same_content(const uint8_t *a, size_t alen,
                           const uint8_t *b, size_t blen)
{
	/* Version and flags (2 bytes) then seq (8 bytes) then content. */
	if (alen != blen || alen < 10) {
		return 0;
	}
	return memcmp(a, b, 2) == 0 && memcmp(a + 10, b + 10, alen - 10) == 0;
}

/* Decodes one RRset's RRs into an rdataset allocated from mm. */
static int decode_rdataset(zc_wire_t *w, uint16_t rr_count, knot_mm_t *mm,
                           knot_rdataset_t *rrs)
{
	/* First pass: validate lengths and size the knot_rdata_t array. */
	zc_wire_t scan = *w;
	size_t size = 0;
	for (uint16_t j = 0; j < rr_count; j++) {
		uint16_t rdlen = zc_wire_get_u16(&scan);
		zc_wire_take(&scan, rdlen);
		size += knot_rdata_size(rdlen);
	}
	if (scan.error != ZC_EOK || size > UINT32_MAX) {
		return ZC_EFORMAT;
	}
	knot_rdata_t *rdata = NULL;
	if (size > 0) {
		rdata = zc_mm_alloc(mm, size);
		if (rdata == NULL) {
			return KNOT_ENOMEM;
		}
	}
	knot_rdata_t *rd = rdata;
	for (uint16_t j = 0; j < rr_count; j++) {
		uint16_t rdlen = zc_wire_get_u16(w);
		knot_rdata_init(rd, rdlen, zc_wire_take(w, rdlen));
		rd = knot_rdataset_next(rd);
	}
	rrs->count = rr_count;
	rrs->size = (uint32_t)size;
	rrs->rdata = rdata;
	return w->error;
}

int edge_node_decode(const uint8_t *buf, size_t len, const knot_dname_t *owner,
                     knot_mm_t *mm, edge_node_t *out)
{
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	uint8_t version = zc_wire_get_u8(&w);
	out->flags = zc_wire_get_u8(&w);
	out->seq = zc_wire_get_u64(&w);
	out->count = zc_wire_get_u16(&w);
	if (w.error != ZC_EOK || version != EDGE_NODE_VERSION ||
	    out->count > EDGE_NODE_MAX_RRSETS) {
		return ZC_EFORMAT;
	}
	out->rrsets = NULL;
	if (out->count > 0) {
		out->rrsets = zc_mm_alloc(mm, out->count * sizeof(knot_rrset_t));
		if (out->rrsets == NULL) {
			return KNOT_ENOMEM;
		}
	}
	for (uint16_t i = 0; i < out->count; i++) {
		knot_rrset_t *rr = &out->rrsets[i];
		knot_rrset_init(rr, (knot_dname_t *)owner, 0, KNOT_CLASS_IN, 0);
		rr->type = zc_wire_get_u16(&w);
		rr->ttl = zc_wire_get_u32(&w);
		uint16_t rr_count = zc_wire_get_u16(&w);
		if (w.error != ZC_EOK || rr_count == 0) {
			return ZC_EFORMAT;
		}
		int ret = decode_rdataset(&w, rr_count, mm, &rr->rrs);
		if (ret != ZC_EOK) {
			return ret == KNOT_ENOMEM ? ret : ZC_EFORMAT;
		}
	}
	if (w.pos != w.end) {
		return ZC_EFORMAT; /* Trailing bytes. */
	}
	return ZC_EOK;
}

const knot_rrset_t *edge_node_rrset(const edge_node_t *node, uint16_t type)
{
	for (uint16_t i = 0; i < node->count; i++) {
		if (node->rrsets[i].type == type) {
			return &node->rrsets[i];
		}
	}
	return NULL;
}

size_t edge_zone_size(const edge_zone_t *zone)
{
	return 1 + 1 + 8 + 8 + 4 + 1 + zone->apex_len + 4 + 2 + zone->soa_len;
}

int edge_zone_encode(uint8_t *buf, size_t len, const edge_zone_t *zone)
{
	zc_wire_t w = zc_wire_init(buf, len);
	zc_wire_u8(&w, EDGE_ZONE_VERSION);
	zc_wire_u8(&w, zone->flags);
	zc_wire_u64(&w, zone->zone_id);
	zc_wire_u64(&w, zone->seq);
	zc_wire_u32(&w, zone->serial);
	zc_wire_u8(&w, zone->apex_len);
	zc_wire_write(&w, zone->apex, zone->apex_len);
	zc_wire_u32(&w, zone->soa_ttl);
	zc_wire_u16(&w, zone->soa_len);
	zc_wire_write(&w, zone->soa, zone->soa_len);
	if (w.error != ZC_EOK) {
		return ZC_ENOSPACE;
	}
	return (int)(w.pos - buf);
}

int edge_zone_decode(const uint8_t *buf, size_t len, edge_zone_t *out)
{
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	uint8_t version = zc_wire_get_u8(&w);
	out->flags = zc_wire_get_u8(&w);
	out->zone_id = zc_wire_get_u64(&w);
	out->seq = zc_wire_get_u64(&w);
	out->serial = zc_wire_get_u32(&w);
	out->apex_len = zc_wire_get_u8(&w);
	zc_wire_read(&w, out->apex, out->apex_len);
	out->soa_ttl = zc_wire_get_u32(&w);
	out->soa_len = zc_wire_get_u16(&w);
	if (w.error != ZC_EOK || version != EDGE_ZONE_VERSION ||
	    out->soa_len > sizeof(out->soa) || out->soa_len < 22) {
		return ZC_EFORMAT;
	}
	zc_wire_read(&w, out->soa, out->soa_len);
	if (w.error != ZC_EOK || w.pos != w.end ||
	    knot_dname_wire_check(out->apex, out->apex + out->apex_len, NULL)
	    != (int)out->apex_len) {
		return ZC_EFORMAT;
	}
	return ZC_EOK;
}

uint32_t edge_zone_soa_minimum(const edge_zone_t *zone)
{
	const uint8_t *p = zone->soa + zone->soa_len - 4;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

size_t edge_quarantine_size(const edge_quarantine_t *q)
{
	return 1 + 1 + 8 + 8 + 8 + 8 + 4 + 4 + 4 + 1 + q->apex_len + 2 +
	       strnlen(q->reason, EDGE_QUARANTINE_REASON_MAX);
}

int edge_quarantine_encode(uint8_t *buf, size_t len,
                           const edge_quarantine_t *q)
{
	size_t reason_len = strnlen(q->reason, EDGE_QUARANTINE_REASON_MAX);
	zc_wire_t w = zc_wire_init(buf, len);
	zc_wire_u8(&w, EDGE_QUARANTINE_VERSION);
	zc_wire_u8(&w, q->flags);
	zc_wire_u64(&w, q->zone_id);
	zc_wire_u64(&w, (uint64_t)q->since_ms);
	zc_wire_u64(&w, (uint64_t)q->last_ms);
	zc_wire_u64(&w, q->seq);
	zc_wire_u32(&w, q->serial);
	zc_wire_u32(&w, q->attempts);
	zc_wire_u32(&w, (uint32_t)q->code);
	zc_wire_u8(&w, q->apex_len);
	zc_wire_write(&w, q->apex, q->apex_len);
	zc_wire_u16(&w, (uint16_t)reason_len);
	zc_wire_write(&w, q->reason, reason_len);
	if (w.error != ZC_EOK) {
		return ZC_ENOSPACE;
	}
	return (int)(w.pos - buf);
}

int edge_quarantine_decode(const uint8_t *buf, size_t len,
                           edge_quarantine_t *out)
{
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	uint8_t version = zc_wire_get_u8(&w);
	out->flags = zc_wire_get_u8(&w);
	out->zone_id = zc_wire_get_u64(&w);
	out->since_ms = (int64_t)zc_wire_get_u64(&w);
	out->last_ms = (int64_t)zc_wire_get_u64(&w);
	out->seq = zc_wire_get_u64(&w);
	out->serial = zc_wire_get_u32(&w);
	out->attempts = zc_wire_get_u32(&w);
	out->code = (int32_t)zc_wire_get_u32(&w);
	out->apex_len = zc_wire_get_u8(&w);
	zc_wire_read(&w, out->apex, out->apex_len);
	uint16_t reason_len = zc_wire_get_u16(&w);
	if (w.error != ZC_EOK || version != EDGE_QUARANTINE_VERSION ||
	    reason_len > EDGE_QUARANTINE_REASON_MAX) {
		return ZC_EFORMAT;
	}
	zc_wire_read(&w, out->reason, reason_len);
	out->reason[reason_len] = '\0';
	if (w.error != ZC_EOK || w.pos != w.end ||
	    memchr(out->reason, '\0', reason_len) != NULL ||
	    knot_dname_wire_check(out->apex, out->apex + out->apex_len, NULL)
	    != (int)out->apex_len) {
		return ZC_EFORMAT;
	}
	return ZC_EOK;
}

/* --- DNSSEC keysets --- */

size_t edge_keyset_size(const edge_keyset_t *ks)
{
	size_t size = 1 + 1;
	for (unsigned i = 0; i < ks->count && i < EDGE_KEYSET_MAX_KEYS; i++) {
		size += 2 + 1 + 1 + 2 + ks->keys[i].pem_len;
	}
	return size;
}

int edge_keyset_encode(uint8_t *buf, size_t len, const edge_keyset_t *ks)
{
	if (ks->count == 0 || ks->count > EDGE_KEYSET_MAX_KEYS) {
		return ZC_EKEYCOUNT;
	}
	for (unsigned i = 0; i < ks->count; i++) {
		if (ks->keys[i].pem_len == 0 ||
		    ks->keys[i].pem_len > EDGE_KEYSET_PEM_MAX) {
			return ZC_EKEYSIZE;
		}
	}
	zc_wire_t w = zc_wire_init(buf, len);
	zc_wire_u8(&w, EDGE_KEYSET_VERSION);
	zc_wire_u8(&w, ks->count);
	for (unsigned i = 0; i < ks->count; i++) {
		const edge_key_t *k = &ks->keys[i];
		zc_wire_u16(&w, k->flags);
		zc_wire_u8(&w, k->algorithm);
		zc_wire_u8(&w, k->active ? 1 : 0);
		zc_wire_u16(&w, (uint16_t)k->pem_len);
		zc_wire_write(&w, k->pem, k->pem_len);
	}
	if (w.error != ZC_EOK) {
		return ZC_ENOSPACE;
	}
	return (int)(w.pos - buf);
}

/* Reads one key (the same layout in both versions). */
static int decode_key(zc_wire_t *w, edge_key_t *key)
{
	key->flags = zc_wire_get_u16(w);
	key->algorithm = zc_wire_get_u8(w);
	uint8_t active = zc_wire_get_u8(w);
	key->pem_len = zc_wire_get_u16(w);
	key->pem = zc_wire_take(w, key->pem_len);
	if (w->error != ZC_EOK) {
		return ZC_ETRUNCATED;
	}
	if (active > 1 || key->pem_len == 0) {
		return ZC_EFORMAT;
	}
	key->active = active == 1;
	return ZC_EOK;
}

/* Version 1 (unmarked): keys back to back up to the end, no count. */
static int decode_unmarked(zc_wire_t *w, edge_keyset_t *out)
{
	while (w->pos < w->end) {
		if (out->count == EDGE_KEYSET_MAX_KEYS) {
			return ZC_EKEYCOUNT;
		}
		int ret = decode_key(w, &out->keys[out->count]);
		if (ret != ZC_EOK) {
			return ret;
		}
		out->count++;
	}
	return ZC_EOK;
}

/* Either version, told apart by the first byte (codec.h). */
static int decode_keyset(const uint8_t *buf, size_t len, edge_keyset_t *out)
{
	if (len == 0) {
		return ZC_ETRUNCATED;
	}
	zc_wire_t w = zc_wire_init((uint8_t *)buf, len);
	out->version = buf[0];
	if (out->version == EDGE_KEYSET_VERSION_UNMARKED) {
		return decode_unmarked(&w, out);
	}
	if (out->version != EDGE_KEYSET_VERSION) {
		return ZC_EVERSION;
	}
	zc_wire_get_u8(&w);
	uint8_t count = zc_wire_get_u8(&w);
	if (w.error != ZC_EOK) {
		return ZC_ETRUNCATED;
	}
	if (count == 0 || count > EDGE_KEYSET_MAX_KEYS) {
		return ZC_EKEYCOUNT;
	}
	for (out->count = 0; out->count < count; out->count++) {
		int ret = decode_key(&w, &out->keys[out->count]);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return w.pos == w.end ? ZC_EOK : ZC_ETRAILING;
}

int edge_keyset_decode(const uint8_t *buf, size_t len, edge_keyset_t *out)
{
	memset(out, 0, sizeof(*out));
	int ret = decode_keyset(buf, len, out);
	if (ret != ZC_EOK) {
		out->count = 0; /* Nothing half-decoded is ever used. */
	}
	return ret;
}
