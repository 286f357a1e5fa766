/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * IXFR condensing: the journal's record events between two serials become
 * one difference sequence (RFC 1995 §4 allows condensing several versions
 * into one). For each record, identified by owner, type and rdata (not
 * TTL), only the state before its first event and after its last counts:
 *
 *   before   after        result
 *   absent   absent       nothing (added, then deleted)
 *   present  absent       deleted (with the TTL it had)
 *   absent   present      added (with its new TTL)
 *   present  present      nothing if the TTL is the same, else deleted
 *                         (old TTL) and added (new TTL)
 *
 * A first event that deletes means the record was there before; one that
 * adds means it was not. Records live in an open-addressing hash table
 * whose entries keep their order of first appearance, so the output is
 * stable. SOA events are not records of the difference (the SOA heads
 * each part of the sequence), but the first one that deletes is kept: it
 * is the SOA the client holds (its fields and TTL, RFC 1995 §4), when
 * they changed on the way (xfr_diff_old_soa()).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "transfer/internal.h"

typedef struct {
	const knot_dname_t *owner;  /* In the arena. */
	const uint8_t *rdata;       /* In the arena. */
	uint32_t hash;
	uint16_t type;
	uint16_t rdata_len;
	uint32_t first_ttl;
	uint32_t last_ttl;
	bool first_added;
	bool last_added;
} entry_t;

struct xfr_diff {
	zc_arena_t arena;
	entry_t *entries;      /* In order of first appearance. */
	size_t count, cap;
	uint32_t *slots;       /* Index + 1 into entries; 0: empty. */
	size_t slot_count;     /* A power of two. */
	const uint8_t *old_soa; /* The first SOA deleted (in the arena). */
	uint16_t old_soa_len;
	uint32_t old_soa_ttl;
};

/* FNV-1a over the record's identity. */
static uint32_t hash_rr(const knot_dname_t *owner, uint16_t type,
                        const uint8_t *rdata, uint16_t len)
{
	uint32_t h = 2166136261u;
	size_t olen = knot_dname_size(owner);
	for (size_t i = 0; i < olen; i++) {
		h = (h ^ owner[i]) * 16777619u;
	}
	h = (h ^ (type >> 8)) * 16777619u;
	h = (h ^ (type & 0xff)) * 16777619u;
	for (uint16_t i = 0; i < len; i++) {
		h = (h ^ rdata[i]) * 16777619u;
	}
	return h;
}

static bool same_rr(const entry_t *e, uint32_t hash,
                    const records_journal_rr_t *rr)
{
	return e->hash == hash && e->type == rr->type &&
	       e->rdata_len == rr->rdata_len &&
	       knot_dname_is_equal(e->owner, rr->owner) &&
	       memcmp(e->rdata, rr->rdata, rr->rdata_len) == 0;
}

/* Doubles the slot table and rehashes. */
static int grow_slots(xfr_diff_t *d)
{
	size_t n = d->slot_count ? d->slot_count * 2 : 1024;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (slots == NULL) {
		return KNOT_ENOMEM;
	}
	for (size_t i = 0; i < d->count; i++) {
		size_t s = d->entries[i].hash & (n - 1);
		while (slots[s] != 0) {
			s = (s + 1) & (n - 1);
		}
		slots[s] = (uint32_t)i + 1;
	}
	free(d->slots);
	d->slots = slots;
	d->slot_count = n;
	return ZC_EOK;
}

/* Appends a new entry for rr (its first event). */
static int append(xfr_diff_t *d, uint32_t hash,
                  const records_journal_rr_t *rr, size_t slot)
{
	if (d->count == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		entry_t *e = realloc(d->entries, cap * sizeof(*e));
		if (e == NULL) {
			return KNOT_ENOMEM;
		}
		d->entries = e;
		d->cap = cap;
	}
	size_t olen = knot_dname_size(rr->owner);
	uint8_t *owner = zc_arena_alloc(&d->arena, olen);
	uint8_t *rdata = zc_arena_alloc(&d->arena, rr->rdata_len + 1u);
	if (owner == NULL || rdata == NULL) {
		return KNOT_ENOMEM;
	}
	memcpy(owner, rr->owner, olen);
	memcpy(rdata, rr->rdata, rr->rdata_len);
	d->entries[d->count] = (entry_t) {
		.owner = owner, .rdata = rdata, .hash = hash, .type = rr->type,
		.rdata_len = rr->rdata_len, .first_ttl = rr->ttl,
		.last_ttl = rr->ttl, .first_added = rr->added,
		.last_added = rr->added,
	};
	d->slots[slot] = (uint32_t)++d->count;
	return ZC_EOK;
}

int xfr_diff_new(xfr_diff_t **out)
{
	xfr_diff_t *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		return KNOT_ENOMEM;
	}
	zc_arena_init(&d->arena, 64 * 1024);
	int ret = grow_slots(d);
	if (ret != ZC_EOK) {
		xfr_diff_free(d);
		return ret;
	}
	*out = d;
	return ZC_EOK;
}

void xfr_diff_free(xfr_diff_t *d)
{
	if (d == NULL) {
		return;
	}
	zc_arena_deinit(&d->arena);
	free(d->entries);
	free(d->slots);
	free(d);
}

int xfr_diff_add(const records_journal_rr_t *rr, void *ctx)
{
	xfr_diff_t *d = ctx;
	if (rr->type == KNOT_RRTYPE_SOA) {
		if (!rr->added && d->old_soa == NULL) {
			uint8_t *rdata = zc_arena_alloc(&d->arena,
			                                rr->rdata_len + 1u);
			if (rdata == NULL) {
				return KNOT_ENOMEM;
			}
			memcpy(rdata, rr->rdata, rr->rdata_len);
			d->old_soa = rdata;
			d->old_soa_len = rr->rdata_len;
			d->old_soa_ttl = rr->ttl;
		}
		return ZC_EOK;
	}
	if ((d->count + 1) * 2 > d->slot_count && grow_slots(d) != ZC_EOK) {
		return KNOT_ENOMEM; /* Keep the table at most half full. */
	}
	uint32_t hash = hash_rr(rr->owner, rr->type, rr->rdata, rr->rdata_len);
	size_t s = hash & (d->slot_count - 1);
	while (d->slots[s] != 0) {
		entry_t *e = &d->entries[d->slots[s] - 1];
		if (same_rr(e, hash, rr)) {
			e->last_added = rr->added;
			e->last_ttl = rr->ttl;
			return ZC_EOK;
		}
		s = (s + 1) & (d->slot_count - 1);
	}
	return append(d, hash, rr, s);
}

/* Whether an entry ends up deleted (added false) or added in the result,
 * and with which TTL. */
static bool in_result(const entry_t *e, bool added, uint32_t *ttl)
{
	bool before = !e->first_added;  /* First event deletes: was there. */
	bool after = e->last_added;
	bool changed = before && after && e->first_ttl != e->last_ttl;
	if (added) {
		*ttl = e->last_ttl;
		return after && (!before || changed);
	}
	*ttl = e->first_ttl;
	return before && (!after || changed);
}

void xfr_diff_foreach(const xfr_diff_t *d, bool added,
                      int (*cb)(const xfr_diff_rr_t *rr, void *ctx),
                      void *ctx)
{
	for (size_t i = 0; i < d->count; i++) {
		const entry_t *e = &d->entries[i];
		xfr_diff_rr_t rr = {
			.owner = e->owner, .type = e->type, .rdata = e->rdata,
			.rdata_len = e->rdata_len,
		};
		if (in_result(e, added, &rr.ttl) && cb(&rr, ctx) != 0) {
			return;
		}
	}
}

size_t xfr_diff_count(const xfr_diff_t *d, bool added)
{
	size_t n = 0;
	for (size_t i = 0; i < d->count; i++) {
		uint32_t ttl;
		n += in_result(&d->entries[i], added, &ttl);
	}
	return n;
}

bool xfr_diff_old_soa(const xfr_diff_t *d, uint32_t *ttl,
                      const uint8_t **rdata, uint16_t *len)
{
	if (d->old_soa == NULL) {
		return false;
	}
	*ttl = d->old_soa_ttl;
	*rdata = d->old_soa;
	*len = d->old_soa_len;
	return true;
}
