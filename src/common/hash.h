/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Keyed 64-bit hashing for in-memory tables that clients fill (RRL
 * buckets, TCP connections per client): FNV-1a steps, the murmur3
 * finaliser, and a random seed per table so that an attacker cannot aim
 * at a bucket. Fast, not cryptographic.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

static inline uint64_t zc_hash_byte(uint64_t h, uint8_t b)
{
	return (h ^ b) * UINT64_C(0x100000001b3);
}

static inline uint64_t zc_hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h = zc_hash_byte(h, p[i]);
	}
	return h;
}

static inline uint64_t zc_hash_finish(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	return h ^ (h >> 33);
}

/* A random seed (the clock's, mixed, if the kernel gives none). */
static inline uint64_t zc_hash_seed(void)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = zc_hash_finish((uint64_t)ts.tv_sec << 32 ^
		                      (uint64_t)ts.tv_nsec);
	}
	return seed;
}
