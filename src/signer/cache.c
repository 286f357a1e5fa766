/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Signature cache: one per DNS worker (no locks), a fixed array of slots
 * in sets of WAYS, the set chosen by a hash of what was signed (key tag
 * and algorithm, owner, type, TTL, rdata); within a set the least
 * recently used slot is replaced. A slot holds the RRSIG rdata and when
 * to re-sign. Two independent 64-bit hashes must match for a hit.
 * (Direct-mapped, a working set of a third of the slots already lost a
 * quarter of its entries to collisions: bench/dnssec_qps's hot row spent
 * most of its time re-signing.)
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libdnssec/random.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "signer/signer.h"

#define WAYS 4

typedef struct {
	uint64_t h1, h2;
	uint64_t used;           /* Cache clock at the last hit or fill. */
	uint32_t refresh_at;     /* Re-sign from then on. */
	uint16_t len;
	uint8_t rdata[SIGNER_RRSIG_MAX];
} slot_t;

struct signer_cache {
	size_t slots;            /* A multiple of WAYS. */
	slot_t *slot;
	uint64_t clock;
	/* Written by the owner thread only, read by any (signer_cache_counts):
	 * relaxed loads and stores, no read-modify-write. */
	_Atomic uint64_t hits, misses;
};

/* One more on a counter only its owner thread writes. */
static void count_one(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter,
	                      memory_order_relaxed) + 1, memory_order_relaxed);
}

void signer_cache_counts(const signer_cache_t *c, uint64_t *hits,
                         uint64_t *misses)
{
	*hits = c != NULL ? atomic_load_explicit(&c->hits,
	                                         memory_order_relaxed) : 0;
	*misses = c != NULL ? atomic_load_explicit(&c->misses,
	                                           memory_order_relaxed) : 0;
}

signer_cache_t *signer_cache_new(size_t slots)
{
	signer_cache_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return NULL;
	}
	c->slots = (slots + WAYS - 1) / WAYS * WAYS;
	if (c->slots > 0 && (c->slot = calloc(c->slots, sizeof(*c->slot))) == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void signer_cache_free(signer_cache_t *c)
{
	if (c != NULL) {
		free(c->slot);
		free(c);
	}
}

static void mix(uint64_t *h1, uint64_t *h2, const uint8_t *p, size_t n,
                bool lower)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = p[i];
		if (lower && b >= 'A' && b <= 'Z') {
			b += 'a' - 'A';
		}
		*h1 = (*h1 ^ b) * 0x100000001b3ULL;           /* FNV-1a */
		*h2 = (*h2 + b + 1) * 0x9e3779b97f4a7c15ULL;  /* another walk */
		*h2 ^= *h2 >> 29;
	}
}

static void hash_rrset(const knot_rrset_t *rr, const signer_key_t *key,
                       uint64_t *h1, uint64_t *h2)
{
	*h1 = 0xcbf29ce484222325ULL;
	*h2 = 0x84222325cbf29ce4ULL;
	uint8_t head[9] = { (uint8_t)(key->tag >> 8), (uint8_t)key->tag,
	                    key->algorithm, (uint8_t)(rr->type >> 8),
	                    (uint8_t)rr->type, (uint8_t)(rr->ttl >> 24),
	                    (uint8_t)(rr->ttl >> 16), (uint8_t)(rr->ttl >> 8),
	                    (uint8_t)rr->ttl };
	mix(h1, h2, head, sizeof(head), false);
	mix(h1, h2, rr->owner, knot_dname_size(rr->owner), true);
	knot_rdata_t *rd = rr->rrs.rdata;
	for (uint16_t i = 0; i < rr->rrs.count; i++) {
		uint8_t len[2] = { (uint8_t)(rd->len >> 8), (uint8_t)rd->len };
		mix(h1, h2, len, 2, false);
		mix(h1, h2, rd->data, rd->len, false);
		rd = knot_rdataset_next(rd);
	}
}

int signer_sign_cached(signer_cache_t *c, const knot_rrset_t *rr,
                       const signer_key_t *key, const uint8_t *signer,
                       knot_rrset_t *rrsig, knot_mm_t *mm)
{
	uint32_t now = (uint32_t)time(NULL);
	uint64_t h1, h2;
	slot_t *s = NULL;
	if (c != NULL && c->slots > 0) {
		hash_rrset(rr, key, &h1, &h2);
		slot_t *set = &c->slot[(h1 % (c->slots / WAYS)) * WAYS];
		c->clock++;
		for (int i = 0; i < WAYS; i++) {
			slot_t *w = &set[i];
			if (w->len > 0 && w->h1 == h1 && w->h2 == h2) {
				if ((int32_t)(w->refresh_at - now) > 0) {
					w->used = c->clock;
					count_one(&c->hits);
					return knot_rrset_add_rdata(rrsig, w->rdata,
					                            w->len, mm);
				}
				s = w; /* Expiring: re-sign into the same slot. */
			}
		}
		for (int i = 0; s == NULL && i < WAYS; i++) {
			if (set[i].len == 0) {
				s = &set[i];
			}
		}
		if (s == NULL) {
			s = &set[0]; /* The least recently used. */
			for (int i = 1; i < WAYS; i++) {
				if (set[i].used < s->used) {
					s = &set[i];
				}
			}
		}
		count_one(&c->misses);
	}
	uint32_t jitter = 0;
	dnssec_random_buffer((uint8_t *)&jitter, sizeof(jitter));
	uint32_t inception = now - SIGNER_INCEPTION_BACK;
	uint32_t expiration = now + SIGNER_VALIDITY + jitter % SIGNER_JITTER;
	uint8_t rdata[SIGNER_RRSIG_MAX];
	int len = signer_sign_rdata(rr, key, signer, inception, expiration,
	                            rdata, sizeof(rdata), mm);
	if (len < 0) {
		return len;
	}
	if (s != NULL) {
		s->h1 = h1;
		s->h2 = h2;
		s->used = c->clock;
		s->refresh_at = expiration - (expiration - inception) / 4;
		s->len = (uint16_t)len;
		memcpy(s->rdata, rdata, (size_t)len);
	}
	return knot_rrset_add_rdata(rrsig, rdata, (uint16_t)len, mm);
}
