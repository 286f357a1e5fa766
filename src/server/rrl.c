/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Response rate limiting: buckets, classification, slip (see rrl.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "common/log.h"
#include "server/rrl.h"

#define HEADER 12
#define TAG_SHIFT 48
#define TAT_MASK ((UINT64_C(1) << TAG_SHIFT) - 1)
#define LOG_INTERVAL_US 1000000u
#define START_BACK_US 2000000u

/* What a response is, for its bucket. */
enum { CLASS_POSITIVE = 1, CLASS_NEGATIVE, CLASS_ERROR };

struct rrl {
	uint64_t seed;         /* Keys the hash: buckets are not predictable. */
	uint64_t start_us;     /* Bucket times count from here. */
	size_t mask;
	atomic_uint_fast64_t dropped, slipped, last_log_us;
	_Atomic uint64_t buckets[];
};

static _Thread_local unsigned slip_count;

uint64_t rrl_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

rrl_t *rrl_new(const rrl_config_t *cfg)
{
	if (cfg->rate == 0) {
		return NULL;
	}
	size_t size = 1024;
	while (size < cfg->table_size && size < ((size_t)1 << 26)) {
		size <<= 1;
	}
	rrl_t *r = calloc(1, sizeof(*r) + size * sizeof(r->buckets[0]));
	if (r == NULL) {
		return NULL;
	}
	r->mask = size - 1;
	r->seed = zc_hash_seed();
	/* Bucket time 0 is "long ago": a fresh bucket has its whole burst
	 * (under a second) and an interval (a second at most) at any rate. */
	r->start_us = rrl_now_us() - START_BACK_US;
	return r;
}

void rrl_free(rrl_t *r)
{
	free(r);
}

void rrl_counts(const rrl_t *r, uint64_t *dropped, uint64_t *slipped)
{
	*dropped = atomic_load(&r->dropped);
	*slipped = atomic_load(&r->slipped);
}

/* --- Keys --- */

/* The client's prefix: its masked address bytes (IPv4-mapped IPv6 as
 * IPv4). Returns the address length (4 or 16); *bits the prefix length. */
static size_t client_prefix(const rrl_config_t *cfg,
                            const struct sockaddr_storage *ss,
                            uint8_t out[16], unsigned *bits)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	size_t n = 4;
	*bits = cfg->ipv4_prefix;
	if (ss->ss_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(a6)) {
		memcpy(out, a6->s6_addr, 16);
		n = 16;
		*bits = cfg->ipv6_prefix;
	} else if (ss->ss_family == AF_INET6) {
		memcpy(out, a6->s6_addr + 12, 4);
	} else {
		memcpy(out, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
	for (size_t i = 0; i < n; i++) {
		unsigned keep = *bits >= 8 * (i + 1) ? 8 : *bits > 8 * i ?
		                *bits - 8 * (unsigned)i : 0;
		out[i] &= keep == 0 ? 0 : (uint8_t)(0xff << (8 - keep));
	}
	return n;
}

static uint64_t hash_prefix(const rrl_config_t *cfg, uint64_t h,
                            const struct sockaddr_storage *ss)
{
	uint8_t a[16];
	unsigned bits;
	size_t n = client_prefix(cfg, ss, a, &bits);
	return zc_hash_bytes(zc_hash_byte(h, (uint8_t)n), a, n);
}

/* Hashes the (possibly compressed) name at pos, lowercased, so that case
 * changes (RFC 0x20 tricks) do not make new buckets. Returns the position
 * after the name where it starts, 0 when malformed. */
static size_t hash_name(const uint8_t *m, size_t len, size_t pos, uint64_t *h)
{
	size_t end = 0;
	for (int hops = 0; pos < len && hops < 32;) {
		uint8_t l = m[pos];
		if ((l & 0xc0) == 0xc0) {
			if (pos + 2 > len) {
				return 0;
			}
			if (end == 0) {
				end = pos + 2;
			}
			pos = (size_t)(l & 0x3f) << 8 | m[pos + 1];
			hops++;
			continue;
		}
		if (l > 63 || pos + 1 + l > len) {
			return 0;
		}
		*h = zc_hash_byte(*h, l);
		for (size_t i = 1; i <= l; i++) {
			uint8_t c = m[pos + i];
			*h = zc_hash_byte(*h, (c >= 'A' && c <= 'Z') ? c + 32 : c);
		}
		if (l == 0) {
			return end != 0 ? end : pos + 1;
		}
		pos += 1u + l;
	}
	return 0;
}

/* Skips count resource records from pos; 0 when malformed. */
static size_t skip_rrs(const uint8_t *m, size_t len, size_t pos, unsigned count)
{
	for (unsigned i = 0; i < count && pos != 0; i++) {
		uint64_t ignored = 0;
		pos = hash_name(m, len, pos, &ignored);
		if (pos == 0 || pos + 10 > len) {
			return 0;
		}
		pos += 10u + (size_t)(m[pos + 8] << 8 | m[pos + 9]);
		if (pos > len) {
			return 0;
		}
	}
	return pos;
}

/* The bucket key of a response: prefix, class and what the class is
 * keyed by (qname+qtype, authority owner, or nothing for errors). */
static uint64_t response_key(const rrl_t *r, const rrl_config_t *cfg,
                             const struct sockaddr_storage *ss,
                             const uint8_t *m, size_t len)
{
	uint64_t h = hash_prefix(cfg, r->seed, ss);
	uint8_t rcode = m[3] & 0x0f;
	unsigned qd = (unsigned)(m[4] << 8 | m[5]);
	unsigned an = (unsigned)(m[6] << 8 | m[7]);
	unsigned ns = (unsigned)(m[8] << 8 | m[9]);
	if ((rcode != 0 && rcode != 3) || qd != 1) {
		return zc_hash_finish(zc_hash_byte(h, CLASS_ERROR));
	}
	uint64_t qh = h;
	size_t pos = hash_name(m, len, HEADER, &qh);
	if (pos == 0 || pos + 4 > len) {
		return zc_hash_finish(zc_hash_byte(h, CLASS_ERROR));
	}
	if (rcode == 0 && an > 0) {
		qh = zc_hash_byte(zc_hash_byte(qh, m[pos]), m[pos + 1]); /* QTYPE */
		return zc_hash_finish(zc_hash_byte(qh, CLASS_POSITIVE));
	}
	/* NXDOMAIN, NODATA, referral: by zone (or cut), not by name. */
	pos = skip_rrs(m, len, pos + 4, an);
	if (ns > 0 && pos != 0) {
		hash_name(m, len, pos, &h);
	}
	return zc_hash_finish(zc_hash_byte(h, CLASS_NEGATIVE));
}

/* --- Buckets --- */

/* GCRA on one bucket: true when the response fits the rate. */
static bool take(rrl_t *r, const rrl_config_t *cfg, uint64_t key,
                 uint64_t now_us)
{
	/* One response's worth of time (1/rate), and how far ahead of now a
	 * bucket may run (the burst: a second's worth). */
	uint64_t interval_us = 1000000u / (cfg->rate < 1000000u ? cfg->rate :
	                                   1000000u);
	uint64_t burst_us = interval_us * (cfg->rate - 1);
	_Atomic uint64_t *slot = &r->buckets[key & r->mask];
	uint64_t tag = key >> TAG_SHIFT;
	uint64_t now = (now_us - r->start_us) & TAT_MASK;
	uint64_t old = atomic_load_explicit(slot, memory_order_relaxed);
	for (;;) {
		uint64_t tat = old & TAT_MASK;
		if (old >> TAG_SHIFT != tag || tat < now) {
			tat = now; /* A new key here, or an idle bucket. */
		}
		if (tat - now > burst_us) {
			return false;
		}
		uint64_t next = tag << TAG_SHIFT | ((tat + interval_us) & TAT_MASK);
		if (atomic_compare_exchange_weak_explicit(slot, &old, next,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed)) {
			return true;
		}
	}
}

/* The client's prefix as text ("192.0.2.0/24"). */
static void prefix_text(const rrl_config_t *cfg,
                        const struct sockaddr_storage *ss,
                        char *out, size_t size)
{
	uint8_t a[16];
	unsigned bits;
	size_t n = client_prefix(cfg, ss, a, &bits);
	char text[INET6_ADDRSTRLEN] = "?";
	inet_ntop(n == 16 ? AF_INET6 : AF_INET, a, text, sizeof(text));
	snprintf(out, size, "%s/%u", text, bits);
}

/* At most one line a second: limiting is what floods look like. */
static void log_limiting(rrl_t *r, const rrl_config_t *cfg,
                         const struct sockaddr_storage *ss, uint64_t now_us)
{
	uint64_t last = atomic_load_explicit(&r->last_log_us, memory_order_relaxed);
	if (now_us - last < LOG_INTERVAL_US ||
	    !atomic_compare_exchange_strong(&r->last_log_us, &last, now_us)) {
		return;
	}
	char prefix[INET6_ADDRSTRLEN + 8];
	prefix_text(cfg, ss, prefix, sizeof(prefix));
	zc_info("rrl: limiting responses to %s (since start: %llu dropped, "
	        "%llu slipped)", prefix,
	        (unsigned long long)atomic_load(&r->dropped),
	        (unsigned long long)atomic_load(&r->slipped));
}

rrl_verdict_t rrl_check(rrl_t *r, const rrl_config_t *cfg,
                        const struct sockaddr_storage *client,
                        const uint8_t *resp, size_t len, uint64_t now_us)
{
	if (r == NULL || cfg->rate == 0 || len < HEADER ||
	    (cfg->exempt != NULL && zc_acl_match(cfg->exempt, client))) {
		return RRL_SEND;
	}
	if (take(r, cfg, response_key(r, cfg, client, resp, len), now_us)) {
		return RRL_SEND;
	}
	rrl_verdict_t v = RRL_DROP;
	if (cfg->slip > 0 && ++slip_count >= cfg->slip) {
		slip_count = 0;
		v = RRL_SLIP;
	}
	atomic_fetch_add_explicit(v == RRL_SLIP ? &r->slipped : &r->dropped, 1,
	                          memory_order_relaxed);
	log_limiting(r, cfg, client, now_us);
	return v;
}

size_t rrl_slip(uint8_t *resp, size_t len)
{
	unsigned qd = (unsigned)(resp[4] << 8 | resp[5]);
	size_t end = HEADER;
	if (qd == 1) {
		uint64_t ignored = 0;
		size_t pos = hash_name(resp, len, HEADER, &ignored);
		end = (pos != 0 && pos + 4 <= len) ? pos + 4 : HEADER;
	}
	resp[2] |= 0x02; /* TC */
	if (end == HEADER) {
		resp[4] = resp[5] = 0;
	}
	memset(resp + 6, 0, 6); /* AN, NS, AR counts */
	return end;
}
