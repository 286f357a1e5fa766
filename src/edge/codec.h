/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Edge store value formats: nodes, zone metadata, quarantine entries and
 * DNSSEC keysets.
 *
 * Node value, version 1 (all integers big-endian):
 *
 *   u8  version (1)
 *   u8  flags (EDGE_NODE_*)
 *   u64 seq: the change-log sequence of the build that wrote it
 *   u16 rrset count, then per RRset in ascending type order:
 *       u16 type, u32 ttl, u16 rr count,
 *       per RR: u16 rdata length, rdata (uncompressed wire form)
 *
 * The apex node never holds the SOA: it lives in the zone metadata so a
 * per-record build can bump the serial without rewriting the apex.
 *
 * Zone metadata, version 1:
 *
 *   u8  version (1)
 *   u8  flags
 *   u64 zone id (records store), u64 seq, u32 serial
 *   u8  apex length, apex (lowercase wire name)
 *   u32 SOA TTL, u16 SOA rdata length, SOA rdata (with the serial)
 *
 * Quarantine entry (a zone whose build failed, builder/quarantine.c),
 * version 1:
 *
 *   u8  version (1)
 *   u8  flags (EDGE_QUARANTINE_*)
 *   u64 zone id, u64 since (Unix ms, the first failure), u64 last attempt
 *   (Unix ms), u64 seq (the change log had been read up to it), u32 serial
 *   served meanwhile (0: the zone was never built), u32 attempts,
 *   u32 error code (a negative zonecast code, two's complement)
 *   u8  apex length, apex (lowercase wire name)
 *   u16 reason length, reason (text, no NUL)
 *
 * DNSSEC keyset (table `keys`: the signing keys of a signed zone, which
 * the DNS server loads to sign answers), version 2:
 *
 *   u8  version (2)
 *   u8  key count (1..EDGE_KEYSET_MAX_KEYS)
 *   per key: u16 flags (256 ZSK, 257 KSK or CSK), u8 algorithm,
 *   u8 active (1: signs, 0: only published), u16 PEM length
 *   (1..EDGE_KEYSET_PEM_MAX), the private key (PKCS#8 PEM)
 *
 * Version 1 is the form zonecast wrote before keysets had a version byte:
 * the same keys back to back, with no version and no count. It is still
 * read, so an edge store written then keeps signing after an upgrade (the
 * next full build of the zone writes version 2). It is told apart without
 * doubt: its first byte is the high byte of the first key's flags, and the
 * only flags ever stored (256, 257) make it 0x01, a byte no keyset of a
 * later version starts with (they start with their version, 2 and up).
 *
 * Decoders check every length: values are read by the DNS server and must
 * never be trusted blindly (fuzz/edge_decode.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <libknot/rrset.h>
#include <libknot/mm_ctx.h>

#define EDGE_NODE_VERSION 1
#define EDGE_ZONE_VERSION 1
#define EDGE_QUARANTINE_VERSION 1
#define EDGE_KEYSET_VERSION 2
/* The form without a version byte (see above): decoded, never written. */
#define EDGE_KEYSET_VERSION_UNMARKED 1

/* Node flags, derived from its RRsets and position by the encoder. */
enum {
	EDGE_NODE_DELEG = 1 << 0,    /* NS below the apex: a zone cut. */
	EDGE_NODE_CNAME = 1 << 1,
	EDGE_NODE_DNAME = 1 << 2,
	EDGE_NODE_WILDCARD = 1 << 3, /* Owner's first label is "*". */
	EDGE_NODE_APEX = 1 << 4,
};
#define EDGE_NODE_FLAGS_ALL 0x1f

/* Most RRsets one node may hold (one per type, bounded for safety). */
#define EDGE_NODE_MAX_RRSETS 512

/* Longest SOA rdata: two names and five 32-bit fields. */
#define EDGE_SOA_MAXLEN (2 * 255 + 20)

typedef struct {
	uint8_t flags;
	uint64_t seq;
	uint16_t count;
	knot_rrset_t *rrsets; /* count RRsets, owner borrowed from the caller */
} edge_node_t;

typedef struct {
	uint8_t flags;
	uint64_t zone_id;
	uint64_t seq;
	uint32_t serial;
	uint8_t apex[256];
	uint8_t apex_len;
	uint32_t soa_ttl;
	uint16_t soa_len;
	uint8_t soa[EDGE_SOA_MAXLEN];
} edge_zone_t;

/* Computes the node flags of RRsets held at owner (is_apex given). */
uint8_t edge_node_flags(const knot_dname_t *owner, int is_apex,
                        const knot_rrset_t *rrsets, uint16_t count);

/* Bytes needed to encode these RRsets as a node value. */
size_t edge_node_size(const knot_rrset_t *rrsets, uint16_t count);

/*
 * Encodes a node value into buf (at least edge_node_size() bytes).
 * RRsets must be sorted by type. Returns the length written or a negative
 * code.
 */
int edge_node_encode(uint8_t *buf, size_t len, uint8_t flags, uint64_t seq,
                     const knot_rrset_t *rrsets, uint16_t count);

/*
 * Decodes a node value. RRsets and their rdata are allocated from mm (an
 * arena) and copied, so they outlive the LMDB transaction; their owner is
 * set to `owner` (borrowed). Returns ZC_EOK or ZC_EFORMAT.
 */
int edge_node_decode(const uint8_t *buf, size_t len, const knot_dname_t *owner,
                     knot_mm_t *mm, edge_node_t *out);

/*
 * Checks a node value from outside (a replicated log): it decodes, and
 * every rdata matches its type's wire format with uncompressed names
 * (edge/check.c). ZC_EOK or ZC_EFORMAT.
 */
int edge_node_check(const uint8_t *buf, size_t len);

/* Reads only flags and seq from a node value. */
int edge_node_peek(const uint8_t *buf, size_t len, uint8_t *flags,
                   uint64_t *seq);

/* Compares two encoded node values ignoring their seq. */
int edge_node_same_content(const uint8_t *a, size_t alen,
                           const uint8_t *b, size_t blen);

/* Returns the node's RRset of that type, or NULL. */
const knot_rrset_t *edge_node_rrset(const edge_node_t *node, uint16_t type);

/* Bytes of an encoded zone metadata value. */
size_t edge_zone_size(const edge_zone_t *zone);

/* Encodes zone metadata; returns the length written or a negative code. */
int edge_zone_encode(uint8_t *buf, size_t len, const edge_zone_t *zone);

/* Decodes zone metadata (copied into *out). Returns ZC_EOK or ZC_EFORMAT. */
int edge_zone_decode(const uint8_t *buf, size_t len, edge_zone_t *out);

/* SOA minimum field from the metadata's SOA rdata. */
uint32_t edge_zone_soa_minimum(const edge_zone_t *zone);

/* Quarantine flags. */
enum {
	/* An operator asked for another build (zonecast zone retry, the
	 * API's POST .../retry); the builder clears it when it tries. */
	EDGE_QUARANTINE_RETRY = 1 << 0,
};

#define EDGE_QUARANTINE_REASON_MAX 400

typedef struct {
	uint8_t flags;
	uint64_t zone_id;
	int64_t since_ms;
	int64_t last_ms;
	uint64_t seq;
	uint32_t serial;
	uint32_t attempts;
	int32_t code;
	uint8_t apex[256];
	uint8_t apex_len;
	char reason[EDGE_QUARANTINE_REASON_MAX + 1]; /* NUL-terminated. */
} edge_quarantine_t;

/* Bytes of an encoded quarantine entry. */
size_t edge_quarantine_size(const edge_quarantine_t *q);

/* Encodes a quarantine entry; returns the length written or a negative
 * code. */
int edge_quarantine_encode(uint8_t *buf, size_t len,
                           const edge_quarantine_t *q);

/* Decodes a quarantine entry (copied into *out, the reason
 * NUL-terminated). Returns ZC_EOK or ZC_EFORMAT. */
int edge_quarantine_decode(const uint8_t *buf, size_t len,
                           edge_quarantine_t *out);

/* --- DNSSEC keysets --- */

/* Most keys one zone's keyset holds (a rollover of both keys at once
 * needs 4), and the longest PEM a key may have (its length is a u16). */
#define EDGE_KEYSET_MAX_KEYS 8
#define EDGE_KEYSET_PEM_MAX 65535

typedef struct {
	uint16_t flags;
	uint8_t algorithm;
	bool active;
	const uint8_t *pem;  /* Borrowed: the caller's (encode), or inside the
	                        decoded value (decode). */
	size_t pem_len;
} edge_key_t;

typedef struct {
	uint8_t version;     /* Decode: the form read (1 or 2). */
	uint8_t count;
	edge_key_t keys[EDGE_KEYSET_MAX_KEYS];
} edge_keyset_t;

/* Bytes of the encoded keyset (as given: edge_keyset_encode() refuses
 * what cannot be encoded). */
size_t edge_keyset_size(const edge_keyset_t *ks);

/*
 * Encodes a keyset (version 2; ks->version is ignored). Returns the length
 * written, or: ZC_EKEYCOUNT (no key, or over EDGE_KEYSET_MAX_KEYS),
 * ZC_EKEYSIZE (a PEM empty or over EDGE_KEYSET_PEM_MAX bytes), ZC_ENOSPACE
 * (buf too small). Nothing is ever left out silently.
 */
int edge_keyset_encode(uint8_t *buf, size_t len, const edge_keyset_t *ks);

/*
 * Decodes a keyset of version 2 or 1 (unmarked). The PEMs point into buf
 * (borrowed: valid as long as buf). Returns ZC_EOK or why the value is
 * refused: ZC_EVERSION (a version this zonecast does not know),
 * ZC_ETRUNCATED (it ends inside a key), ZC_ETRAILING (bytes after the
 * last key), ZC_EKEYCOUNT (no key, or too many), ZC_EFORMAT (an empty
 * PEM, an active byte other than 0 or 1).
 */
int edge_keyset_decode(const uint8_t *buf, size_t len, edge_keyset_t *out);
