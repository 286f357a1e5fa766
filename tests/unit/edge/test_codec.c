/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Edge value codec: round trips and rejection of damaged values (nodes,
 * zone metadata, quarantine entries, DNSSEC keysets). */
#include <stdio.h>
#include <libknot/descriptor.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "common/error.h"
#include "edge/codec.h"
#include "signer/signer.h"
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

/* --- DNSSEC keysets --- */

static const uint8_t pem_a[] = "-----BEGIN PRIVATE KEY-----\nAAAA\n";
static const uint8_t pem_b[] = "-----BEGIN PRIVATE KEY-----\nBBBBBB\n";

static edge_keyset_t two_keys(void)
{
	edge_keyset_t ks = { .count = 2 };
	ks.keys[0] = (edge_key_t){ .flags = 257, .algorithm = 13,
	                           .active = true, .pem = pem_a,
	                           .pem_len = sizeof(pem_a) - 1 };
	ks.keys[1] = (edge_key_t){ .flags = 256, .algorithm = 15,
	                           .active = false, .pem = pem_b,
	                           .pem_len = sizeof(pem_b) - 1 };
	return ks;
}

static bool same_keysets(const edge_keyset_t *a, const edge_keyset_t *b)
{
	if (a->count != b->count) {
		return false;
	}
	for (unsigned i = 0; i < a->count; i++) {
		const edge_key_t *x = &a->keys[i], *y = &b->keys[i];
		if (x->flags != y->flags || x->algorithm != y->algorithm ||
		    x->active != y->active || x->pem_len != y->pem_len ||
		    memcmp(x->pem, y->pem, x->pem_len) != 0) {
			return false;
		}
	}
	return true;
}

/* The form zonecast wrote before keysets had a version byte (the old
 * builder/full.c encoder): per key flags, algorithm, active, PEM length,
 * PEM, back to back. */
static size_t encode_unmarked(uint8_t *buf, const edge_keyset_t *ks)
{
	size_t len = 0;
	for (unsigned i = 0; i < ks->count; i++) {
		const edge_key_t *k = &ks->keys[i];
		buf[len++] = (uint8_t)(k->flags >> 8);
		buf[len++] = (uint8_t)k->flags;
		buf[len++] = k->algorithm;
		buf[len++] = k->active ? 1 : 0;
		buf[len++] = (uint8_t)(k->pem_len >> 8);
		buf[len++] = (uint8_t)k->pem_len;
		memcpy(buf + len, k->pem, k->pem_len);
		len += k->pem_len;
	}
	return len;
}

static void keyset_roundtrip(void)
{
	edge_keyset_t ks = two_keys(), out;
	uint8_t buf[512];
	size_t size = edge_keyset_size(&ks);
	int len = edge_keyset_encode(buf, sizeof(buf), &ks);
	CHECK_EQ(len, (int)size);
	CHECK_EQ(buf[0], EDGE_KEYSET_VERSION);
	CHECK_EQ(buf[1], 2);
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EOK);
	CHECK_EQ(out.version, EDGE_KEYSET_VERSION);
	CHECK(same_keysets(&ks, &out));
	/* The decoded PEMs are borrowed from the value. */
	CHECK(out.keys[0].pem > buf && out.keys[1].pem < buf + len);
	/* Too small a buffer fails to encode, whatever is missing. */
	for (size_t cut = 0; cut < size; cut++) {
		CHECK_EQ(edge_keyset_encode(buf, cut, &ks), ZC_ENOSPACE);
	}
	/* The most keys a keyset holds. */
	edge_keyset_t full = { .count = EDGE_KEYSET_MAX_KEYS };
	for (unsigned i = 0; i < EDGE_KEYSET_MAX_KEYS; i++) {
		full.keys[i] = ks.keys[i % 2];
	}
	len = edge_keyset_encode(buf, sizeof(buf), &full);
	CHECK_EQ(len, (int)edge_keyset_size(&full));
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EOK);
	CHECK(same_keysets(&full, &out));
}

/* A PEM over 64 KiB (the old encoder dropped such a key silently), an
 * empty one, no key and too many keys: errors, never a keyset with less. */
static void keyset_refused_by_encoder(void)
{
	size_t big = EDGE_KEYSET_PEM_MAX + 1;
	uint8_t *pem = malloc(big);
	memset(pem, 'A', big);
	size_t cap = 2 * big;
	uint8_t *buf = malloc(cap);
	edge_keyset_t ks = two_keys(), out;
	ks.keys[1].pem = pem;
	ks.keys[1].pem_len = big;
	CHECK_EQ(edge_keyset_encode(buf, cap, &ks), ZC_EKEYSIZE);
	ks.keys[1].pem_len = 70000;
	CHECK_EQ(edge_keyset_encode(buf, cap, &ks), ZC_EKEYSIZE);
	ks.keys[1].pem_len = 0;
	CHECK_EQ(edge_keyset_encode(buf, cap, &ks), ZC_EKEYSIZE);
	/* 65,535 bytes is the largest, and round-trips. */
	ks.keys[1].pem_len = EDGE_KEYSET_PEM_MAX;
	int len = edge_keyset_encode(buf, cap, &ks);
	CHECK_EQ(len, (int)edge_keyset_size(&ks));
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EOK);
	CHECK_EQ(out.keys[1].pem_len, EDGE_KEYSET_PEM_MAX);
	CHECK(same_keysets(&ks, &out));
	edge_keyset_t none = { .count = 0 };
	CHECK_EQ(edge_keyset_encode(buf, cap, &none), ZC_EKEYCOUNT);
	edge_keyset_t many = { .count = EDGE_KEYSET_MAX_KEYS + 1 };
	for (unsigned i = 0; i < many.count && i < EDGE_KEYSET_MAX_KEYS; i++) {
		many.keys[i] = two_keys().keys[0];
	}
	CHECK_EQ(edge_keyset_encode(buf, cap, &many), ZC_EKEYCOUNT);
	free(buf);
	free(pem);
}

/* Every malformed form, each with its own error. */
static void keyset_refused_by_decoder(void)
{
	edge_keyset_t ks = two_keys(), out;
	uint8_t buf[300];
	int len = edge_keyset_encode(buf, sizeof(buf), &ks);
	CHECK(len > 0);
	/* Every truncation: an empty value, the version alone, inside a
	 * key's header, inside a PEM, between two keys. */
	for (int cut = 0; cut < len; cut++) {
		CHECK_EQ(edge_keyset_decode(buf, (size_t)cut, &out),
		         ZC_ETRUNCATED);
		CHECK_EQ(out.count, 0);
	}
	/* Trailing bytes, one or many. */
	buf[len] = 0;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len + 1, &out), ZC_ETRAILING);
	memcpy(buf + len, buf, (size_t)len);
	CHECK_EQ(edge_keyset_decode(buf, 2 * (size_t)len, &out), ZC_ETRAILING);
	/* Every version but 2 and the unmarked 1. */
	for (int v = 0; v < 256; v++) {
		if (v == EDGE_KEYSET_VERSION || v == EDGE_KEYSET_VERSION_UNMARKED) {
			continue;
		}
		buf[0] = (uint8_t)v;
		CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EVERSION);
	}
	buf[0] = EDGE_KEYSET_VERSION;
	/* A count of 0, or over the most. */
	buf[1] = 0;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EKEYCOUNT);
	buf[1] = EDGE_KEYSET_MAX_KEYS + 1;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EKEYCOUNT);
	buf[1] = 255;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EKEYCOUNT);
	/* A count larger than the keys there: truncated; smaller: trailing. */
	buf[1] = 3;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_ETRUNCATED);
	buf[1] = 1;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_ETRAILING);
	buf[1] = 2;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EOK);
	/* An active byte other than 0 and 1. */
	buf[2 + 3] = 2;
	CHECK_EQ(edge_keyset_decode(buf, (size_t)len, &out), ZC_EFORMAT);
	buf[2 + 3] = 1;
	/* An empty PEM. */
	uint8_t empty[] = { EDGE_KEYSET_VERSION, 1, 1, 1, 13, 1, 0, 0 };
	CHECK_EQ(edge_keyset_decode(empty, sizeof(empty), &out), ZC_EFORMAT);
	/* A PEM length past the end. */
	uint8_t past[] = { EDGE_KEYSET_VERSION, 1, 1, 1, 13, 1, 0xff, 0xff,
	                   'x' };
	CHECK_EQ(edge_keyset_decode(past, sizeof(past), &out), ZC_ETRUNCATED);
	/* NULL-safe on an empty value. */
	CHECK_EQ(edge_keyset_decode(NULL, 0, &out), ZC_ETRUNCATED);
}

/* Keysets written before the version byte still decode, the same keys. */
static void keyset_unmarked(void)
{
	edge_keyset_t ks = two_keys(), out;
	uint8_t buf[300];
	size_t len = encode_unmarked(buf, &ks);
	CHECK_EQ(buf[0], EDGE_KEYSET_VERSION_UNMARKED); /* Flags 257 >> 8. */
	CHECK_EQ(edge_keyset_decode(buf, len, &out), ZC_EOK);
	CHECK_EQ(out.version, EDGE_KEYSET_VERSION_UNMARKED);
	CHECK(same_keysets(&ks, &out));
	/* A ZSK first starts with 0x01 too (256 >> 8). */
	edge_keyset_t zsk_first = { .count = 2 };
	zsk_first.keys[0] = ks.keys[1];
	zsk_first.keys[1] = ks.keys[0];
	len = encode_unmarked(buf, &zsk_first);
	CHECK_EQ(edge_keyset_decode(buf, len, &out), ZC_EOK);
	CHECK(same_keysets(&zsk_first, &out));
	/* Re-encoded, it is version 2 with the same keys. */
	uint8_t v2[300];
	int v2_len = edge_keyset_encode(v2, sizeof(v2), &out);
	edge_keyset_t again;
	CHECK_EQ(edge_keyset_decode(v2, (size_t)v2_len, &again), ZC_EOK);
	CHECK_EQ(again.version, EDGE_KEYSET_VERSION);
	CHECK(same_keysets(&zsk_first, &again));
	/* Truncated anywhere after its first byte: refused. */
	len = encode_unmarked(buf, &ks);
	for (size_t cut = 1; cut < len; cut++) {
		if (cut == 6 + ks.keys[0].pem_len) {
			continue; /* Between two keys: one whole key. */
		}
		CHECK_EQ(edge_keyset_decode(buf, cut, &out), ZC_ETRUNCATED);
	}
	CHECK_EQ(edge_keyset_decode(buf, 6 + ks.keys[0].pem_len, &out), ZC_EOK);
	CHECK_EQ(out.count, 1);
	/* Malformed keys and too many keys are refused as in version 2. */
	buf[3] = 7;
	CHECK_EQ(edge_keyset_decode(buf, len, &out), ZC_EFORMAT);
	buf[3] = 1;
	uint8_t big[600];
	size_t n = 0;
	for (unsigned i = 0; i <= EDGE_KEYSET_MAX_KEYS; i++) {
		edge_keyset_t one = { .count = 1, .keys = { ks.keys[0] } };
		n += encode_unmarked(big + n, &one);
	}
	CHECK_EQ(edge_keyset_decode(big, n, &out), ZC_EKEYCOUNT);
}

/* The signer loads a decoded keyset: real keys, both forms; a keyset with
 * no active KSK is refused and leaves nothing allocated. */
static void keyset_loads_in_signer(void)
{
	const uint8_t *apex = (const uint8_t *)"\x07" "example\x00";
	uint8_t *ksk_pem, *zsk_pem;
	size_t ksk_len, zsk_len;
	CHECK_EQ(signer_key_generate(13, &ksk_pem, &ksk_len), ZC_EOK);
	CHECK_EQ(signer_key_generate(13, &zsk_pem, &zsk_len), ZC_EOK);
	edge_keyset_t ks = { .count = 2 };
	ks.keys[0] = (edge_key_t){ .flags = 256, .algorithm = 13, .active = true,
	                           .pem = zsk_pem, .pem_len = zsk_len };
	ks.keys[1] = (edge_key_t){ .flags = 257, .algorithm = 13, .active = true,
	                           .pem = ksk_pem, .pem_len = ksk_len };
	uint8_t buf[2048], old[2048];
	int len = edge_keyset_encode(buf, sizeof(buf), &ks);
	size_t old_len = encode_unmarked(old, &ks);
	signer_keyset_t a, b;
	CHECK_EQ(signer_keyset_decode(apex, buf, (size_t)len, &a), ZC_EOK);
	CHECK_EQ(signer_keyset_decode(apex, old, old_len, &b), ZC_EOK);
	CHECK_EQ(a.count, 2);
	CHECK_EQ(a.zsk, 0);
	CHECK_EQ(a.ksk, 1);
	CHECK_EQ(b.zsk, 0);
	CHECK_EQ(b.ksk, 1);
	CHECK_EQ(a.keys[1].tag, b.keys[1].tag);
	signer_keyset_free(&a);
	signer_keyset_free(&b);
	/* The decoder's own error comes through. */
	CHECK_EQ(signer_keyset_decode(apex, buf, (size_t)len - 1, &a),
	         ZC_ETRUNCATED);
	buf[0] = 9;
	CHECK_EQ(signer_keyset_decode(apex, buf, (size_t)len, &a), ZC_EVERSION);
	/* No active KSK: refused, the ZSK loaded meanwhile freed. */
	ks.keys[1].active = false;
	len = edge_keyset_encode(buf, sizeof(buf), &ks);
	CHECK_EQ(signer_keyset_decode(apex, buf, (size_t)len, &a), ZC_ENOKEY);
	CHECK_EQ(a.count, 0);
	/* A PEM that is no key. */
	ks.keys[1] = (edge_key_t){ .flags = 257, .algorithm = 13, .active = true,
	                           .pem = pem_a, .pem_len = sizeof(pem_a) - 1 };
	len = edge_keyset_encode(buf, sizeof(buf), &ks);
	CHECK_EQ(signer_keyset_decode(apex, buf, (size_t)len, &a), ZC_EFORMAT);
	CHECK_EQ(a.count, 0);
	free(ksk_pem);
	free(zsk_pem);
}

/* A node value's check (an edge applying a replicated log): an outside
 * tester's forged node, flagged DNAME with a TXT only, crashed every edge
 * on its first query below it (the server read the DNAME that was not
 * there), and again after each restart. Flags must say what the RRsets
 * are; types must be data, each once, ascending. */
static void node_check_flags_and_types(void)
{
	uint8_t owner[] = "\x02""fd\x07""example\x00";
	uint8_t dname_rd[] = "\x01""t\x00";
	struct {
		uint16_t types[2];
		int count, is_apex;
		int flip;          /* Flag bits toggled after encoding. */
		bool ok;
	} cases[] = {
		{ { KNOT_RRTYPE_TXT }, 1, 0, 0, true },
		{ { KNOT_RRTYPE_TXT }, 1, 0, EDGE_NODE_DNAME, false },
		{ { KNOT_RRTYPE_TXT }, 1, 0, EDGE_NODE_CNAME, false },
		{ { KNOT_RRTYPE_TXT }, 1, 0, EDGE_NODE_DELEG, false },
		{ { KNOT_RRTYPE_TXT }, 1, 0, 0x80, false },
		{ { KNOT_RRTYPE_DNAME }, 1, 0, 0, true },
		{ { KNOT_RRTYPE_DNAME }, 1, 0, EDGE_NODE_DNAME, false },
		{ { KNOT_RRTYPE_CNAME }, 1, 0, 0, true },
		{ { KNOT_RRTYPE_CNAME }, 1, 0, EDGE_NODE_CNAME, false },
		{ { KNOT_RRTYPE_NS }, 1, 0, 0, true },
		{ { KNOT_RRTYPE_NS }, 1, 1, 0, true },
		{ { KNOT_RRTYPE_NS }, 1, 1, EDGE_NODE_DELEG, false },
		{ { KNOT_RRTYPE_A, KNOT_RRTYPE_TXT }, 2, 0, 0, true },
		{ { KNOT_RRTYPE_TXT, KNOT_RRTYPE_A }, 2, 0, 0, false },
		{ { KNOT_RRTYPE_A, KNOT_RRTYPE_A }, 2, 0, 0, false },
		{ { KNOT_RRTYPE_OPT }, 1, 0, 0, false },
		{ { KNOT_RRTYPE_ANY }, 1, 0, 0, false },
		{ { KNOT_RRTYPE_TSIG }, 1, 0, 0, false },
		{ { 0 }, 1, 0, 0, false },
		/* What no build writes: an SOA in a node, a CNAME beside data,
		 * (beside RRSIG or NSEC it may stand). */
		{ { KNOT_RRTYPE_SOA }, 1, 1, 0, false },
		{ { KNOT_RRTYPE_A, KNOT_RRTYPE_CNAME }, 2, 0, 0, false },
		{ { KNOT_RRTYPE_CNAME, KNOT_RRTYPE_TXT }, 2, 0, 0, false },
		{ { KNOT_RRTYPE_CNAME, KNOT_RRTYPE_NSEC }, 2, 0, 0, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		knot_rrset_t rr[2];
		for (int j = 0; j < cases[i].count; j++) {
			uint16_t t = cases[i].types[j];
			knot_rrset_init(&rr[j], owner, t, KNOT_CLASS_IN, 300);
			bool name = t == KNOT_RRTYPE_DNAME || t == KNOT_RRTYPE_CNAME ||
			            t == KNOT_RRTYPE_NS || t == KNOT_RRTYPE_NSEC;
			const uint8_t *rd = name ? dname_rd :
			                    t == KNOT_RRTYPE_A ? (const uint8_t *)
			                    "\xc0\x00\x02\x01" : (const uint8_t *)"\x01x";
			uint16_t rdlen = name ? sizeof(dname_rd) - 1 :
			                 t == KNOT_RRTYPE_A ? 4 : 2;
			knot_rrset_add_rdata(&rr[j], rd, rdlen, NULL);
		}
		uint8_t buf[256];
		uint8_t fl = edge_node_flags(owner, cases[i].is_apex, rr,
		                             (uint16_t)cases[i].count);
		int len = edge_node_encode(buf, sizeof(buf), fl, 1, rr,
		                           (uint16_t)cases[i].count);
		CHECK(len > 0);
		buf[1] ^= (uint8_t)cases[i].flip;
		int ret = edge_node_check(buf, (size_t)len);
		if ((ret == ZC_EOK) != cases[i].ok) {
			fprintf(stderr, "node check case %zu: %d\n", i, ret);
			CHECK(false);
		}
		for (int j = 0; j < cases[i].count; j++) {
			knot_rdataset_clear(&rr[j].rrs, NULL);
		}
	}
	/* Two CNAMEs (or DNAMEs) at one name. */
	for (int t = 0; t < 2; t++) {
		knot_rrset_t rr;
		knot_rrset_init(&rr, owner, t ? KNOT_RRTYPE_DNAME : KNOT_RRTYPE_CNAME,
		                KNOT_CLASS_IN, 300);
		knot_rrset_add_rdata(&rr, dname_rd, sizeof(dname_rd) - 1, NULL);
		knot_rrset_add_rdata(&rr, (const uint8_t *)"\x01u\x00", 3, NULL);
		uint8_t buf[256];
		int len = edge_node_encode(buf, sizeof(buf),
		                           edge_node_flags(owner, 0, &rr, 1), 1,
		                           &rr, 1);
		CHECK(len > 0);
		CHECK_EQ(edge_node_check(buf, (size_t)len), ZC_EFORMAT);
		knot_rdataset_clear(&rr.rrs, NULL);
	}
}

int main(void)
{
	node_check_flags_and_types();
	quarantine_roundtrip();
	node_roundtrip();
	same_content_ignores_seq();
	flags();
	zone_roundtrip();
	keyset_roundtrip();
	keyset_refused_by_encoder();
	keyset_refused_by_decoder();
	keyset_unmarked();
	keyset_loads_in_signer();
	return test_done();
}
