/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The TSIG replay cache (see tsig.h): the MACs of the signed requests
 * accepted within their time window, so that an exact copy of one is
 * refused however many times it comes back while it would still pass the
 * time check (RFC 8945 §10: the time window is all that stands between
 * a captured message and a replay).
 *
 * Design
 *
 * Entries sit in a ring in the order they were accepted, and in a hash
 * table (chains through the ring's slots) by key name and MAC. An entry
 * stays until its request's window closes (time signed + window), and
 * DNS_TSIG_REPLAY_GRACE seconds more; expired entries are dropped from
 * the ring's oldest end as new ones come. A request is judged as of when
 * it came (its time check), not when the check runs: a kept key's UPDATE
 * is judged by the writer, maybe seconds later, and a copy that came
 * within the window and was judged after it closed found its first's
 * entry gone (or entered expired) and was applied again (outside tester
 * 43, with a 2 s window and a busy writer). A request judged more than
 * the grace after it came is refused: nothing then can be forgotten that
 * a request still to be judged may copy. A full
 * ring whose oldest entry is still live evicts it all the same and raises
 * a floor: from then on a request signed at or before the evicted entry's
 * time is refused, as it could be the evicted one replayed. So a full
 * cache never lets a replay through; what it costs is that a client whose
 * clock lags behind the messages evicted is refused until the floor
 * falls out of its window. Under more than `capacity` signed requests
 * per window, the window in effect shrinks to about capacity / rate
 * seconds (docs/security.md: tsig-replay-cache).
 *
 * The cache lives in memory: a server that restarts does not know what
 * it accepted before, so a request captured before a restart can be
 * replayed once after it, within its window (docs/security.md). Refusing
 * everything signed before the start instead would refuse, after every
 * restart, each client whose clock lags, for as long as it lags.
 *
 * Only the first DNS_TSIG_REPLAY_MAC bytes of a MAC are kept: an HMAC's
 * prefix is as unpredictable as the whole, so two distinct messages share
 * one with negligible probability. One mutex guards everything; a check
 * is a hash, a short chain walk and a copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/dname.h>

#include "common/hash.h"
#include "dns/tsig.h"

#define DNS_TSIG_REPLAY_MAC 32
#define NONE UINT32_MAX

typedef struct {
	uint64_t key_hash;          /* Key name (lowercase), seeded. */
	uint8_t mac[DNS_TSIG_REPLAY_MAC];
	uint8_t mac_len;
	uint64_t time_signed;
	uint64_t expires;           /* Seconds; a replay passes the time
	                               check until then. */
	uint32_t next;              /* Next slot in the hash chain. */
	uint64_t origin;            /* dns_tsig_replay_tag()'s, or 0. */
	uint64_t answered_ns;       /* When its answer went out (monotonic
	                               nanoseconds), or 0. */
	uint8_t rcode;              /* Its answer's, once answered_ns. */
} entry_t;

struct dns_tsig_replay {
	pthread_mutex_t lock;       /* Guards everything below. */
	uint64_t seed;
	uint64_t floor;             /* Refuse requests signed at or before. */
	size_t capacity;
	size_t head, count;         /* Ring: oldest slot, entries in use. */
	size_t bucket_mask;
	uint32_t *buckets;          /* First slot of each chain, or NONE. */
	entry_t *ring;
};

dns_tsig_replay_t *dns_tsig_replay_new(size_t capacity)
{
	if (capacity == 0 || capacity >= NONE) {
		return NULL;
	}
	size_t buckets = 1;
	while (buckets < capacity) {
		buckets <<= 1;
	}
	dns_tsig_replay_t *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return NULL;
	}
	c->ring = calloc(capacity, sizeof(entry_t));
	c->buckets = malloc(buckets * sizeof(uint32_t));
	if (c->ring == NULL || c->buckets == NULL) {
		free(c->ring);
		free(c->buckets);
		free(c);
		return NULL;
	}
	memset(c->buckets, 0xff, buckets * sizeof(uint32_t));
	c->capacity = capacity;
	c->bucket_mask = buckets - 1;
	c->seed = zc_hash_seed();
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void dns_tsig_replay_free(dns_tsig_replay_t *c)
{
	if (c == NULL) {
		return;
	}
	pthread_mutex_destroy(&c->lock);
	free(c->ring);
	free(c->buckets);
	free(c);
}

static uint64_t key_hash_of(const dns_tsig_replay_t *c,
                            const knot_dname_t *name)
{
	uint64_t h = c->seed;
	/* ASCII lowercase: names compare without case (RFC 4343); label
	 * length octets (at most 63) are never letters. */
	for (const uint8_t *p = name; p < name + knot_dname_size(name); p++) {
		h = zc_hash_byte(h, *p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	}
	return zc_hash_finish(h);
}

static size_t bucket_of(const dns_tsig_replay_t *c, uint64_t key_hash,
                        const uint8_t *mac, size_t mac_len)
{
	return zc_hash_finish(zc_hash_bytes(key_hash, mac, mac_len)) &
	       c->bucket_mask;
}

/* Unlinks the ring's oldest entry from its chain and drops it. */
static void drop_oldest(dns_tsig_replay_t *c)
{
	entry_t *e = &c->ring[c->head];
	uint32_t *link = &c->buckets[bucket_of(c, e->key_hash, e->mac,
	                                       e->mac_len)];
	while (*link != NONE && *link != c->head) {
		link = &c->ring[*link].next;
	}
	if (*link == c->head) {
		*link = e->next;
	}
	c->head = (c->head + 1) % c->capacity;
	c->count--;
}

/*
 * The entry of (key, MAC) in the chain from slot, or NULL: any the ring
 * holds, past its window or not. A copy that passed the time check is a
 * replay while its first is held, whatever window the first was taken
 * under: a reload that widened the windows made messages whose entries
 * had closed pass the time check again, and they were taken as fresh
 * (outside tester 45). Entries leave the ring past their window and the
 * grace (dns_tsig_replay_check()).
 */
static entry_t *find(dns_tsig_replay_t *c, uint32_t slot, uint64_t key_hash,
                     const uint8_t *mac, size_t mac_len)
{
	for (; slot != NONE; slot = c->ring[slot].next) {
		entry_t *e = &c->ring[slot];
		if (e->key_hash == key_hash && e->mac_len == mac_len &&
		    memcmp(e->mac, mac, mac_len) == 0) {
			return e;
		}
	}
	return NULL;
}

static bool is_seen(dns_tsig_replay_t *c, uint32_t slot, uint64_t key_hash,
                    const uint8_t *mac, size_t mac_len)
{
	return find(c, slot, key_hash, mac, mac_len) != NULL;
}

/* The entry of t's key and MAC, under c->lock, or NULL. */
static entry_t *entry_of(dns_tsig_replay_t *c, const dns_tsig_t *t)
{
	size_t mac_len = t->digest_len < DNS_TSIG_REPLAY_MAC ? t->digest_len :
	                 DNS_TSIG_REPLAY_MAC;
	uint64_t key_hash = key_hash_of(c, t->name);
	size_t b = bucket_of(c, key_hash, t->digest, mac_len);
	return find(c, c->buckets[b], key_hash, t->digest, mac_len);
}

/* Notes of the verified request t's entry that it was answered (rcode),
 * or else its origin. */
static void mark(dns_tsig_replay_t *c, const dns_tsig_t *t, bool answered,
                 uint64_t origin, uint8_t rcode)
{
	if (c == NULL || !t->present || t->error != 0) {
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* Nanoseconds: a copy sent once the answer came is later, even
	 * within the same millisecond (over loopback it is). */
	uint64_t now_ns = (uint64_t)ts.tv_sec * 1000000000 +
	                  (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&c->lock);
	entry_t *e = entry_of(c, t);
	if (e != NULL && answered && e->answered_ns == 0) {
		e->answered_ns = now_ns;
		e->rcode = rcode;
	} else if (e != NULL && !answered) {
		e->origin = origin;
	}
	pthread_mutex_unlock(&c->lock);
}

void dns_tsig_replay_tag(dns_tsig_replay_t *c, const dns_tsig_t *t,
                         uint64_t origin)
{
	mark(c, t, false, origin, 0);
}

void dns_tsig_replay_answered(dns_tsig_replay_t *c, const dns_tsig_t *t,
                              uint8_t rcode)
{
	mark(c, t, true, 0, rcode);
}

dns_tsig_copy_t dns_tsig_replay_copy(dns_tsig_replay_t *c,
                                     const dns_tsig_t *t, uint64_t origin,
                                     uint64_t since_ns, uint8_t *rcode)
{
	pthread_mutex_lock(&c->lock);
	entry_t *e = entry_of(c, t);
	dns_tsig_copy_t copy = DNS_TSIG_COPY_NONE;
	if (e != NULL && origin != 0 && e->origin == origin) {
		if (e->answered_ns == 0 || e->answered_ns > since_ns) {
			copy = DNS_TSIG_COPY_PENDING;
		} else {
			copy = DNS_TSIG_COPY_ANSWERED;
			*rcode = e->rcode;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return copy;
}

bool dns_tsig_replay_known(dns_tsig_replay_t *c, const dns_tsig_t *t)
{
	size_t mac_len = t->digest_len < DNS_TSIG_REPLAY_MAC ? t->digest_len :
	                 DNS_TSIG_REPLAY_MAC;
	uint64_t key_hash = key_hash_of(c, t->name);
	size_t b = bucket_of(c, key_hash, t->digest, mac_len);
	pthread_mutex_lock(&c->lock);
	bool known = is_seen(c, c->buckets[b], key_hash, t->digest, mac_len) ||
	             t->time_signed <= c->floor;
	pthread_mutex_unlock(&c->lock);
	return known;
}

dns_tsig_replay_result_t dns_tsig_replay_check(dns_tsig_replay_t *c,
                                               const dns_tsig_t *t,
                                               uint16_t window, uint64_t now)
{
	size_t mac_len = t->digest_len < DNS_TSIG_REPLAY_MAC ? t->digest_len :
	                 DNS_TSIG_REPLAY_MAC;
	uint64_t key_hash = key_hash_of(c, t->name);
	size_t b = bucket_of(c, key_hash, t->digest, mac_len);
	dns_tsig_replay_result_t result = DNS_TSIG_FRESH;
	uint64_t came = t->came != 0 && t->came < now ? t->came : now;
	pthread_mutex_lock(&c->lock);
	while (c->count > 0 &&
	       c->ring[c->head].expires + DNS_TSIG_REPLAY_GRACE < now) {
		drop_oldest(c);
	}
	if (is_seen(c, c->buckets[b], key_hash, t->digest, mac_len)) {
		result = DNS_TSIG_REPLAYED;
	} else if (t->time_signed <= c->floor ||
	           now > came + DNS_TSIG_REPLAY_GRACE) {
		result = DNS_TSIG_UNPROVEN;
	} else {
		if (c->count == c->capacity) {
			/* Full of live entries: see the top of the file. */
			entry_t *old = &c->ring[c->head];
			c->floor = old->time_signed > c->floor ? old->time_signed :
			           c->floor;
			drop_oldest(c);
			result = DNS_TSIG_FRESH_FULL;
		}
		size_t slot = (c->head + c->count) % c->capacity;
		entry_t *e = &c->ring[slot];
		e->key_hash = key_hash;
		memcpy(e->mac, t->digest, mac_len);
		e->mac_len = (uint8_t)mac_len;
		e->time_signed = t->time_signed;
		e->expires = t->time_signed + window;
		e->answered_ns = 0;
		e->rcode = 0;
		e->origin = 0;
		e->next = c->buckets[b];
		c->buckets[b] = (uint32_t)slot;
		c->count++;
	}
	pthread_mutex_unlock(&c->lock);
	return result;
}

void dns_tsig_replay_window_grew(dns_tsig_replay_t *c, uint16_t old_window,
                                 uint16_t new_window, uint64_t now)
{
	if (c == NULL) {
		return;
	}
	pthread_mutex_lock(&c->lock);
	/* Forgotten by now: entries past their window and the grace. */
	uint64_t forgotten = (uint64_t)old_window + DNS_TSIG_REPLAY_GRACE;
	if (now > forgotten && now - forgotten > c->floor) {
		c->floor = now - forgotten;
	}
	/* Held: kept for as long as the wider window lets a copy pass. */
	for (size_t i = 0; i < c->count; i++) {
		entry_t *e = &c->ring[(c->head + i) % c->capacity];
		if (e->time_signed + new_window > e->expires) {
			e->expires = e->time_signed + new_window;
		}
	}
	pthread_mutex_unlock(&c->lock);
}
