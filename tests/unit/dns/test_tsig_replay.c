/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The TSIG replay cache (dns/tsig_replay.c): replays, keys, expiry, and a
 * full cache that refuses what it can no longer tell from a replay. */
#include <string.h>
#include <time.h>

#include "dns/tsig.h"
#include "test.h"

/* A verified request: key name (wire), a MAC made of seed, time signed. */
static void make(dns_tsig_t *t, const char *name_wire, unsigned seed,
                 uint64_t time_signed)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name_wire, strlen(name_wire) + 1);
	t->digest_len = 32;
	for (size_t i = 0; i < t->digest_len; i++) {
		t->digest[i] = (uint8_t)(i * 37 + 11);
	}
	memcpy(t->digest + 4, &seed, sizeof(seed)); /* Distinct per seed. */
	t->time_signed = time_signed;
}

#define KEY_A "\x03key\x01a"
#define KEY_A_UPPER "\x03KEY\x01A"
#define KEY_B "\x03key\x01b"

static void test_replays(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(16);
	dns_tsig_t t;
	make(&t, KEY_A, 1, 1000);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1000), DNS_TSIG_FRESH);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1001), DNS_TSIG_REPLAYED);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1300), DNS_TSIG_REPLAYED);
	/* The key name is compared without case. */
	make(&t, KEY_A_UPPER, 1, 1000);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1002), DNS_TSIG_REPLAYED);
	/* Another key, another MAC: not a replay. */
	make(&t, KEY_B, 1, 1000);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1002), DNS_TSIG_FRESH);
	make(&t, KEY_A, 2, 1000);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1002), DNS_TSIG_FRESH);
	/* Past its window the entry is held for the grace (a copy judged
	 * late, or a window widened since, stays a replay), then gone (the
	 * time check refuses such a request before the cache is asked). */
	make(&t, KEY_A, 1, 1000);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1301), DNS_TSIG_REPLAYED);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300,
	                               1301 + DNS_TSIG_REPLAY_GRACE),
	         DNS_TSIG_FRESH);
	/* A MAC shorter than the part kept is compared whole. */
	make(&t, KEY_A, 3, 1400);
	t.digest_len = 20;
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1400), DNS_TSIG_FRESH);
	t.digest_len = 21;
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1400), DNS_TSIG_FRESH);
	t.digest_len = 20;
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1400), DNS_TSIG_REPLAYED);
	dns_tsig_replay_free(c);
}

/* A message from an origin (update/service.c: a UDP client's address and
 * port): a copy from there is pending until it is answered, then
 * answered with its rcode; from elsewhere, or over TCP (origin 0), none. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* What a copy of t from origin that came at came is. */
static dns_tsig_copy_t copy_of(dns_tsig_replay_t *c, const dns_tsig_t *t,
                               uint64_t origin, uint64_t came, uint8_t *rcode)
{
	*rcode = 0xff;
	return dns_tsig_replay_copy(c, t, origin, came, rcode);
}

static void test_copies(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(16);
	uint64_t now = (uint64_t)time(NULL);
	uint8_t rcode;
	dns_tsig_t t;
	make(&t, KEY_A, 9, now);
	t.present = true;
	uint64_t came = now_ns();   /* A copy that came before the answer. */
	CHECK_EQ(copy_of(c, &t, 7, came, &rcode), DNS_TSIG_COPY_NONE);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, now), DNS_TSIG_FRESH);
	/* No origin noted. */
	CHECK_EQ(copy_of(c, &t, 7, came, &rcode), DNS_TSIG_COPY_NONE);
	dns_tsig_replay_tag(c, &t, 7);
	CHECK_EQ(copy_of(c, &t, 7, came, &rcode), DNS_TSIG_COPY_PENDING);
	CHECK_EQ(copy_of(c, &t, 8, came, &rcode), DNS_TSIG_COPY_NONE);
	CHECK_EQ(copy_of(c, &t, 0, came, &rcode), DNS_TSIG_COPY_NONE);
	/* A refused request (an error) tags and answers nothing. */
	t.error = 18;
	dns_tsig_replay_answered(c, &t, 9);
	t.error = 0;
	CHECK_EQ(copy_of(c, &t, 7, now_ns(), &rcode),
	         DNS_TSIG_COPY_PENDING);
	dns_tsig_replay_answered(c, &t, 8); /* NXRRSET */
	dns_tsig_replay_answered(c, &t, 0); /* Only the first answer. */
	/* The copy that came before the answer is still one of a message
	 * in progress (a kept key's copy, judged by the committer after
	 * the first's answer went out); one that came after is answered
	 * as the first was; from elsewhere it is none. */
	CHECK_EQ(copy_of(c, &t, 7, came, &rcode), DNS_TSIG_COPY_PENDING);
	/* At once: the answer went out before, if in the same millisecond. */
	CHECK_EQ(copy_of(c, &t, 7, now_ns(), &rcode),
	         DNS_TSIG_COPY_ANSWERED);
	CHECK_EQ(rcode, 8);
	CHECK_EQ(copy_of(c, &t, 8, now_ns(), &rcode), DNS_TSIG_COPY_NONE);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, now), DNS_TSIG_REPLAYED);
	dns_tsig_replay_answered(NULL, &t, 0); /* No cache: nothing. */
	dns_tsig_replay_free(c);
}

/* Expired entries make room (past their window and the grace): a cache
 * of 4 takes 4 per window and grace forever. */
static void test_expiry_makes_room(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(4);
	dns_tsig_t t;
	for (unsigned i = 0; i < 40; i++) {
		uint64_t now = 1000 + (i / 4) * (11 + DNS_TSIG_REPLAY_GRACE);
		make(&t, KEY_A, i, now);
		CHECK_EQ(dns_tsig_replay_check(c, &t, 10, now), DNS_TSIG_FRESH);
		CHECK_EQ(dns_tsig_replay_check(c, &t, 10, now), DNS_TSIG_REPLAYED);
	}
	dns_tsig_replay_free(c);
}

/* Judged late (a kept key's UPDATE waits for the writer): a request is
 * judged as of when it came. Its first, judged after its window closed,
 * is remembered all the same, and a copy that came within the window is
 * a replay however late it is judged, up to the grace; past it, a
 * request is not proven fresh (outside tester 43: a copy waiting behind
 * its first in the writer's queue was applied again). */
static void test_judged_late(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(16);
	dns_tsig_t t;
	make(&t, KEY_A, 1, 1000);
	t.came = 1001;              /* Window 2: in time. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 2, 1006), DNS_TSIG_FRESH);
	t.came = 1002;              /* Its copy, in time too, judged later. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 2, 1009), DNS_TSIG_REPLAYED);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 2, 1002 + DNS_TSIG_REPLAY_GRACE),
	         DNS_TSIG_REPLAYED);
	/* Something else judged long after: its own entry is not dropped
	 * before the grace, and nothing judged past the grace is fresh. */
	make(&t, KEY_A, 2, 1000);
	t.came = 1001;
	CHECK_EQ(dns_tsig_replay_check(c, &t, 2, 1002 + DNS_TSIG_REPLAY_GRACE),
	         DNS_TSIG_UNPROVEN);
	make(&t, KEY_A, 3, 1000);
	t.came = 1001;
	CHECK(dns_tsig_replay_known(c, &t) == false);
	make(&t, KEY_A, 1, 1000);
	t.came = 1002;
	CHECK(dns_tsig_replay_known(c, &t));
	dns_tsig_replay_free(c);
}

/* tsig-max-fudge raised: what was signed before now - the old window and
 * the grace may have been forgotten, and is refused; what is held stays a
 * replay for as long as the new window lets it pass (outside tester 45: a
 * message taken under a 5 s window, replayed after a reload to 300 s once
 * its 5 s had passed, was applied again). */
static void test_window_grew(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(16);
	dns_tsig_t t;
	make(&t, KEY_A, 7, 1999);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 5, 2000), DNS_TSIG_FRESH);
	dns_tsig_replay_window_grew(c, 5, 300, 2001);
	make(&t, KEY_A, 1, 2001 - 5 - DNS_TSIG_REPLAY_GRACE);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 2001), DNS_TSIG_UNPROVEN);
	make(&t, KEY_A, 2, 2001 - 4 - DNS_TSIG_REPLAY_GRACE);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 2001), DNS_TSIG_FRESH);
	/* The message of the 5 s window, replayed past it and past its
	 * grace: still held, a replay. */
	make(&t, KEY_A, 7, 1999);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 2007), DNS_TSIG_REPLAYED);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 2090), DNS_TSIG_REPLAYED);
	dns_tsig_replay_window_grew(NULL, 5, 300, 2000); /* No cache. */
	dns_tsig_replay_free(c);
}

/* A full cache drops its oldest entry and refuses what was signed no
 * later than it: a replay of a dropped entry never passes. */
static void test_full(void)
{
	dns_tsig_replay_t *c = dns_tsig_replay_new(4);
	dns_tsig_t t;
	for (unsigned i = 0; i < 4; i++) {
		make(&t, KEY_A, i, 100 + i);
		CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_FRESH);
	}
	make(&t, KEY_A, 4, 105);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_FRESH_FULL);
	make(&t, KEY_A, 0, 100);    /* Dropped: refused all the same. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_UNPROVEN);
	make(&t, KEY_A, 1, 101);    /* Still held. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_REPLAYED);
	make(&t, KEY_A, 99, 100);   /* New, but signed when a dropped one was. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_UNPROVEN);
	make(&t, KEY_A, 5, 106);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_FRESH_FULL);
	make(&t, KEY_A, 1, 101);    /* Dropped now. */
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 110), DNS_TSIG_UNPROVEN);
	for (unsigned i = 2; i < 6; i++) {
		make(&t, KEY_A, i, i < 4 ? 100 + i : 101 + i);
		CHECK(dns_tsig_replay_check(c, &t, 300, 110) != DNS_TSIG_FRESH);
	}
	dns_tsig_replay_free(c);
}

/* Many entries, one second: each accepted once while they fit, then the
 * floor reaches that second. */
static void test_burst(void)
{
	enum { CAP = 1024, N = 1200 };
	dns_tsig_replay_t *c = dns_tsig_replay_new(CAP);
	dns_tsig_t t;
	make(&t, KEY_A, 100000, 940);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1000), DNS_TSIG_FRESH);
	make(&t, KEY_A, 100001, 940);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1000), DNS_TSIG_FRESH);
	unsigned fresh = 0, full = 0, unproven = 0;
	for (unsigned i = 0; i < N; i++) {
		make(&t, KEY_A, i, 970);
		switch (dns_tsig_replay_check(c, &t, 300, 1000)) {
		case DNS_TSIG_FRESH: fresh++; break;
		case DNS_TSIG_FRESH_FULL: full++; break;
		case DNS_TSIG_UNPROVEN: unproven++; break;
		default: break;
		}
	}
	CHECK_EQ(fresh, CAP - 2);
	CHECK_EQ(full, 3);
	CHECK_EQ(unproven, N - (CAP - 2) - 3);
	for (unsigned i = 0; i < N; i++) {
		make(&t, KEY_A, i, 970);
		CHECK(dns_tsig_replay_check(c, &t, 300, 1000) >= DNS_TSIG_REPLAYED);
	}
	make(&t, KEY_A, 100000, 940);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1000), DNS_TSIG_UNPROVEN);
	make(&t, KEY_A, 555555, 971);
	CHECK_EQ(dns_tsig_replay_check(c, &t, 300, 1000), DNS_TSIG_FRESH_FULL);
	dns_tsig_replay_free(c);
}

int main(void)
{
	CHECK(dns_tsig_replay_new(0) == NULL);
	test_replays();
	test_copies();
	test_judged_late();
	test_window_grew();
	test_expiry_makes_room();
	test_full();
	test_burst();
	return test_done();
}
