/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Response rate limiting: bucket rate and burst, refill over time, slip,
 * prefixes, what responses share a bucket, exemptions.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "server/rrl.h"
#include "tests/unit/test.h"

static struct sockaddr_storage v4(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	in->sin_family = AF_INET;
	inet_pton(AF_INET, text, &in->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
	in->sin6_family = AF_INET6;
	inet_pton(AF_INET6, text, &in->sin6_addr);
	return ss;
}

/* A response: header, question "<label>.example." qtype, answers an, and
 * for negative ones an authority SOA owned by apex ("example."). */
static size_t response(uint8_t *m, const char *label, uint16_t qtype,
                       uint8_t rcode, unsigned an, bool authority)
{
	memset(m, 0, 12);
	m[2] = 0x84;
	m[3] = rcode;
	m[5] = 1;
	m[7] = (uint8_t)an;
	m[9] = authority ? 1 : 0;
	size_t pos = 12;
	size_t l = strlen(label);
	m[pos++] = (uint8_t)l;
	memcpy(m + pos, label, l);
	pos += l;
	size_t apex = pos;
	memcpy(m + pos, "\x07" "example" "\x00", 9);
	pos += 9;
	m[pos++] = (uint8_t)(qtype >> 8);
	m[pos++] = (uint8_t)qtype;
	m[pos++] = 0;
	m[pos++] = 1;
	for (unsigned i = 0; i < an; i++) { /* name ptr, A, IN, ttl, 4 bytes */
		static const uint8_t rr[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60,
		                              0, 4, 192, 0, 2, 1 };
		memcpy(m + pos, rr, sizeof(rr));
		pos += sizeof(rr);
	}
	if (authority) { /* Owner: pointer to the apex; a stub rdata. */
		uint8_t rr[] = { 0xc0, (uint8_t)apex, 0, 6, 0, 1, 0, 0, 0, 60,
		                 0, 1, 0 };
		memcpy(m + pos, rr, sizeof(rr));
		pos += sizeof(rr);
	}
	return pos;
}

/* How many of n responses at one instant the limiter sends. */
static unsigned sent(rrl_t *r, const rrl_config_t *cfg,
                     const struct sockaddr_storage *ss,
                     const uint8_t *m, size_t len, unsigned n, uint64_t now)
{
	unsigned ok = 0;
	for (unsigned i = 0; i < n; i++) {
		ok += rrl_check(r, cfg, ss, m, len, now) == RRL_SEND;
	}
	return ok;
}

static void test_rate_and_refill(void)
{
	rrl_config_t cfg = { .rate = 10, .slip = 0, .ipv4_prefix = 24,
	                     .ipv6_prefix = 56, .table_size = 1024 };
	rrl_t *r = rrl_new(&cfg);
	CHECK(r != NULL);
	uint8_t m[512];
	size_t len = response(m, "www", 1, 0, 1, false);
	struct sockaddr_storage a = v4("192.0.2.7");
	uint64_t t = rrl_now_us();
	CHECK_EQ(sent(r, &cfg, &a, m, len, 50, t), 10);       /* Burst: 1 s worth. */
	CHECK_EQ(sent(r, &cfg, &a, m, len, 50, t + 100000), 1); /* 0.1 s: one more. */
	CHECK_EQ(sent(r, &cfg, &a, m, len, 50, t + 2100000), 10); /* Full again. */
	/* Same /24: same bucket; other /24: its own. */
	struct sockaddr_storage b = v4("192.0.2.200");
	CHECK_EQ(sent(r, &cfg, &b, m, len, 50, t + 2100000), 0);
	struct sockaddr_storage c = v4("192.0.3.7");
	CHECK_EQ(sent(r, &cfg, &c, m, len, 50, t + 2100000), 10);
	/* Another name or type: another bucket. */
	uint8_t m2[512];
	size_t len2 = response(m2, "mail", 1, 0, 1, false);
	CHECK_EQ(sent(r, &cfg, &a, m2, len2, 50, t + 2100000), 10);
	len2 = response(m2, "www", 28, 0, 1, false);
	CHECK_EQ(sent(r, &cfg, &a, m2, len2, 50, t + 2100000), 10);
	/* Case changes do not make new buckets. */
	len2 = response(m2, "WwW", 1, 0, 1, false);
	CHECK_EQ(sent(r, &cfg, &a, m2, len2, 50, t + 2100000), 0);
	uint64_t dropped, slipped;
	rrl_counts(r, &dropped, &slipped);
	CHECK(dropped > 0);
	CHECK_EQ(slipped, 0);
	rrl_free(r);
}

static void test_negative_by_zone(void)
{
	rrl_config_t cfg = { .rate = 5, .slip = 0, .ipv4_prefix = 24,
	                     .ipv6_prefix = 56, .table_size = 1024 };
	rrl_t *r = rrl_new(&cfg);
	uint8_t m[512];
	struct sockaddr_storage a = v4("198.51.100.1");
	uint64_t t = rrl_now_us();
	/* Random names under one zone: NXDOMAINs share the zone's bucket. */
	unsigned ok = 0;
	char label[8];
	for (unsigned i = 0; i < 40; i++) {
		snprintf(label, sizeof(label), "r%u", i);
		size_t len = response(m, label, 1, 3, 0, true);
		ok += rrl_check(r, &cfg, &a, m, len, t) == RRL_SEND;
	}
	CHECK_EQ(ok, 5);
	/* Errors (REFUSED) all share one bucket per prefix. */
	ok = 0;
	for (unsigned i = 0; i < 40; i++) {
		snprintf(label, sizeof(label), "e%u", i);
		size_t len = response(m, label, 1, 5, 0, false);
		ok += rrl_check(r, &cfg, &a, m, len, t) == RRL_SEND;
	}
	CHECK_EQ(ok, 5);
	rrl_free(r);
}

static void test_slip_and_exempt(void)
{
	zc_acl_t exempt = { 0 };
	CHECK_EQ(zc_acl_add(&exempt, "2001:db8:1::/48"), 0);
	rrl_config_t cfg = { .rate = 1, .slip = 2, .ipv4_prefix = 24,
	                     .ipv6_prefix = 56, .table_size = 1024,
	                     .exempt = &exempt };
	rrl_t *r = rrl_new(&cfg);
	uint8_t m[512];
	size_t len = response(m, "www", 1, 0, 3, false);
	struct sockaddr_storage a = v6("2001:db8:2::1");
	uint64_t t = rrl_now_us();
	CHECK_EQ(rrl_check(r, &cfg, &a, m, len, t), RRL_SEND);
	unsigned slips = 0;
	for (unsigned i = 0; i < 10; i++) {
		slips += rrl_check(r, &cfg, &a, m, len, t) == RRL_SLIP;
	}
	CHECK_EQ(slips, 5);
	/* Same /56, other host: same bucket. */
	struct sockaddr_storage b = v6("2001:db8:2:ff::9");
	CHECK(rrl_check(r, &cfg, &b, m, len, t) != RRL_SEND);
	struct sockaddr_storage e = v6("2001:db8:1::1");
	CHECK_EQ(sent(r, &cfg, &e, m, len, 20, t), 20);
	/* The slip form: header with TC, the question, nothing else. */
	size_t slen = rrl_slip(m, len);
	CHECK_EQ(slen, 12u + 1 + 3 + 9 + 4);
	CHECK(m[2] & 0x02);
	CHECK_EQ(m[7], 0);
	CHECK_EQ(m[5], 1);
	rrl_free(r);
	cfg.rate = 0;
	CHECK(rrl_new(&cfg) == NULL); /* Off. */
}

/* A reload changes the settings the workers pass (rrl_check()'s cfg) over
 * the same buckets: a lower rate limits at once, rate 0 sends everything,
 * a new exempt list applies to the next response. */
static void test_settings_change_on_the_same_table(void)
{
	rrl_config_t cfg = { .rate = 100, .slip = 0, .ipv4_prefix = 24,
	                     .ipv6_prefix = 56, .table_size = 1024 };
	rrl_t *r = rrl_new(&cfg);
	CHECK(r != NULL);
	uint8_t m[512];
	size_t len = response(m, "www", 1, 0, 1, false);
	struct sockaddr_storage a = v4("192.0.2.7");
	uint64_t t = rrl_now_us();
	CHECK_EQ(sent(r, &cfg, &a, m, len, 50, t), 50);
	rrl_config_t lower = cfg;
	lower.rate = 5;
	struct sockaddr_storage b = v4("198.51.100.7");
	CHECK_EQ(sent(r, &lower, &b, m, len, 50, t), 5);
	rrl_config_t off = cfg;
	off.rate = 0;
	CHECK_EQ(sent(r, &off, &b, m, len, 50, t), 50);
	zc_acl_t exempt = { 0 };
	CHECK_EQ(zc_acl_add(&exempt, "198.51.100.0/24"), 0);
	lower.exempt = &exempt;
	CHECK_EQ(sent(r, &lower, &b, m, len, 50, t), 50);
	/* A wider prefix merges clients into one bucket. */
	rrl_config_t wide = lower;
	wide.exempt = NULL;
	wide.ipv4_prefix = 8;
	struct sockaddr_storage c = v4("203.1.1.1"), d = v4("203.2.2.2");
	CHECK_EQ(sent(r, &wide, &c, m, len, 5, t + 5000000), 5);
	CHECK_EQ(sent(r, &wide, &d, m, len, 5, t + 5000000), 0);
	rrl_free(r);
}

int main(void)
{
	test_settings_change_on_the_same_table();
	test_rate_and_refill();
	test_negative_by_zone();
	test_slip_and_exempt();
	return test_done();
}
