/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Edge value codec: round trips and rejection of damaged values. */
#include <libknot/descriptor.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "common/error.h"
#include "edge/codec.h"
#include "tests/unit/test.h"

static void node_roundtrip(void)
{
	zc_arena_t arena;
	zc_arena_init(&arena, 4096);
	uint8_t owner[] = "\x03www\x07""example\x00";
	knot_rrset_t rr[2];
	knot_rrset_init(&rr[0], owner, KNOT_RRTYPE_A, KNOT_CLASS_IN, 300);
	knot_rrset_init(&rr[1], owner, KNOT_RRTYPE_TXT, KNOT_CLASS_IN, 60);
	knot_rrset_add_rdata(&rr[0], (const uint8_t *)"\xc0\x00\x02\x01", 4, NULL);
	knot_rrset_add_rdata(&rr[0], (const uint8_t *)"\xc0\x00\x02\x02", 4, NULL);
	knot_rrset_add_rdata(&rr[1], (const uint8_t *)"\x03" "abc", 4, NULL);
	uint8_t buf[256];
	size_t size = edge_node_size(rr, 2);
	uint8_t flags = edge_node_flags(owner, 0, rr, 2);
	int len = edge_node_encode(buf, sizeof(buf), flags, 42, rr, 2);
	CHECK_EQ(len, (int)size);
	edge_node_t node;
	CHECK_EQ(edge_node_decode(buf, len, owner, zc_arena_mm(&arena), &node),
	         ZC_EOK);
	CHECK_EQ(node.seq, 42);
	CHECK_EQ(node.count, 2);
	CHECK(knot_rrset_equal(&node.rrsets[0], &rr[0], true));
	CHECK(knot_rrset_equal(&node.rrsets[1], &rr[1], true));
	CHECK_EQ(node.rrsets[1].ttl, 60);
	CHECK(edge_node_rrset(&node, KNOT_RRTYPE_AAAA) == NULL);
	/* Every truncation and a trailing byte are rejected. */
	for (int cut = 0; cut < len; cut++) {
		CHECK(edge_node_decode(buf, cut, owner, zc_arena_mm(&arena),
		                       &node) != ZC_EOK);
	}
	CHECK(edge_node_decode(buf, len + 1, owner, zc_arena_mm(&arena),
	                       &node) != ZC_EOK);
	buf[0] = 99; /* Unknown version. */
	CHECK(edge_node_decode(buf, len, owner, zc_arena_mm(&arena),
	                       &node) == ZC_EFORMAT);
	/* Too small a buffer fails to encode. */
	CHECK(edge_node_encode(buf, size - 1, flags, 42, rr, 2) < 0);
	knot_rdataset_clear(&rr[0].rrs, NULL);
	knot_rdataset_clear(&rr[1].rrs, NULL);
	zc_arena_deinit(&arena);
}

static void same_content_ignores_seq(void)
{
	uint8_t owner[] = "\x01" "a\x00";
	knot_rrset_t rr;
	knot_rrset_init(&rr, owner, KNOT_RRTYPE_A, KNOT_CLASS_IN, 300);
	knot_rrset_add_rdata(&rr, (const uint8_t *)"\x01\x02\x03\x04", 4, NULL);
	uint8_t a[64], b[64];
	int alen = edge_node_encode(a, sizeof(a), 0, 1, &rr, 1);
	int blen = edge_node_encode(b, sizeof(b), 0, 9, &rr, 1);
	CHECK(edge_node_same_content(a, alen, b, blen));
	rr.ttl = 5;
	blen = edge_node_encode(b, sizeof(b), 0, 9, &rr, 1);
	CHECK(!edge_node_same_content(a, alen, b, blen));
	knot_rdataset_clear(&rr.rrs, NULL);
}

static void flags(void)
{
	uint8_t owner[] = "\x01*\x01" "a\x00";
	knot_rrset_t rr[2];
	knot_rrset_init(&rr[0], owner, KNOT_RRTYPE_NS, KNOT_CLASS_IN, 1);
	knot_rrset_init(&rr[1], owner, KNOT_RRTYPE_DNAME, KNOT_CLASS_IN, 1);
	uint8_t f = edge_node_flags(owner, 0, rr, 2);
	CHECK(f & EDGE_NODE_DELEG);
	CHECK(f & EDGE_NODE_DNAME);
	CHECK(f & EDGE_NODE_WILDCARD);
	f = edge_node_flags(owner, 1, rr, 1);
	CHECK(!(f & EDGE_NODE_DELEG)); /* NS at the apex is no cut. */
	CHECK(f & EDGE_NODE_APEX);
}

static void zone_roundtrip(void)
{
	edge_zone_t z = { .zone_id = 7, .seq = 99, .serial = 2026120201,
	                  .soa_ttl = 3600 };
	memcpy(z.apex, "\x07" "example\x00", 9);
	z.apex_len = 9;
	/* ns. host. serial refresh retry expire minimum */
	const uint8_t soa[] = "\x02ns\x00\x04host\x00"
	                      "\x78\xC4\xB0\x59\x00\x00\x1c\x20\x00\x00\x03\x84"
	                      "\x00\x12\x75\x00\x00\x00\x01\x2c";
	z.soa_len = sizeof(soa) - 1;
	memcpy(z.soa, soa, z.soa_len);
	uint8_t buf[1024];
	int len = edge_zone_encode(buf, sizeof(buf), &z);
	CHECK_EQ(len, (int)edge_zone_size(&z));
	edge_zone_t out;
	CHECK_EQ(edge_zone_decode(buf, len, &out), ZC_EOK);
	CHECK_EQ(out.serial, z.serial);
	CHECK_EQ(out.seq, 99);
	CHECK_EQ(out.zone_id, 7);
	CHECK_EQ(edge_zone_soa_minimum(&out), 300);
	CHECK(memcmp(out.apex, z.apex, 9) == 0);
	for (int cut = 0; cut < len; cut++) {
		CHECK(edge_zone_decode(buf, cut, &out) != ZC_EOK);
	}
}

static void quarantine_roundtrip(void)
{
	edge_quarantine_t q = { .flags = EDGE_QUARANTINE_RETRY, .zone_id = 7,
	                        .since_ms = 1764744000123, .last_ms = 1764744001000,
	                        .seq = 99, .serial = 2024010101, .attempts = 3,
	                        .code = -2018 };
	memcpy(q.apex, "\x07" "example\x00", 9);
	q.apex_len = 9;
	snprintf(q.reason, sizeof(q.reason), "per-record build failed at x.");
	uint8_t buf[sizeof(q) + 64];
	int len = edge_quarantine_encode(buf, sizeof(buf), &q);
	CHECK_EQ(len, (int)edge_quarantine_size(&q));
	edge_quarantine_t out;
	CHECK_EQ(edge_quarantine_decode(buf, len, &out), ZC_EOK);
	CHECK_EQ(out.flags, q.flags);
	CHECK_EQ(out.zone_id, 7);
	CHECK_EQ(out.since_ms, q.since_ms);
	CHECK_EQ(out.last_ms, q.last_ms);
	CHECK_EQ(out.seq, 99);
	CHECK_EQ(out.serial, 2024010101);
	CHECK_EQ(out.attempts, 3);
	CHECK_EQ(out.code, -2018);
	CHECK_EQ(out.apex_len, 9);
	CHECK(memcmp(out.apex, q.apex, 9) == 0);
	CHECK(strcmp(out.reason, q.reason) == 0);
	for (int cut = 0; cut < len; cut++) {
		CHECK(edge_quarantine_decode(buf, cut, &out) != ZC_EOK);
	}
	CHECK(edge_quarantine_decode(buf, len + 1, &out) != ZC_EOK);
	buf[len - 3] = '\0'; /* A NUL inside the reason. */
	CHECK(edge_quarantine_decode(buf, len, &out) == ZC_EFORMAT);
	buf[0] = 2;
	CHECK(edge_quarantine_decode(buf, len, &out) == ZC_EFORMAT);
	CHECK(edge_quarantine_encode(buf, (size_t)len - 1, &q) < 0);
}

int main(void)
{
	quarantine_roundtrip();
	node_roundtrip();
	same_content_ignores_seq();
	flags();
	zone_roundtrip();
	return test_done();
}
