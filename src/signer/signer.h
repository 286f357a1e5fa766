/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Online DNSSEC signing: keys, RRSIGs made at answer time, and compact
 * denial of existence (RFC 9824, "black lies").
 *
 * Design
 *
 * A signed zone has one combined signing key (CSK, flags 257) by default,
 * or a KSK (257) and a ZSK (256). Keys are PKCS#8 PEM in the records store
 * (dnssec_keys) and, for the DNS server, in the edge store's "keys" table,
 * written by the zone's full build: the edge keeps unsigned data only, and
 * the answer path signs what it puts in a response when the query has
 * DO=1. Signatures are cached per worker (signer_cache_t), keyed by the
 * RRset's content and the key, so hot answers are not re-signed.
 *
 * Non-existence is proven without an NSEC chain: an NSEC owned by the
 * query name itself, next name \000.<qname>, whose type bitmap lists the
 * types the name has (NODATA) or RRSIG, NSEC and NXNAME (no such name).
 * So nothing about one record's change needs the rest of the zone: a
 * signed zone takes per-record builds like an unsigned one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libdnssec/key.h>
#include <libknot/mm_ctx.h>
#include <libknot/rrset.h>

#include "edge/codec.h"

/* RFC 9824 §2: the NXNAME pseudo-type. */
#define SIGNER_NXNAME 128

/* DNSKEY flags. */
#define SIGNER_FLAGS_ZSK 256
#define SIGNER_FLAGS_KSK 257

/* As many keys as the edge store's keyset holds. */
#define SIGNER_MAX_KEYS EDGE_KEYSET_MAX_KEYS

/* One loaded key. */
typedef struct {
	dnssec_key_t *key;
	uint16_t tag;
	uint16_t flags;
	uint8_t algorithm;
	bool active;        /* Signs (else only published in DNSKEY). */
	void *fast;         /* The key for libcrypto (fast.c), or NULL. */
} signer_key_t;

/* The keys of one zone, as the answer path uses them. */
typedef struct {
	signer_key_t keys[SIGNER_MAX_KEYS];
	unsigned count;
	int zsk;            /* Index signing everything but DNSKEY, or -1. */
	int ksk;            /* Index signing DNSKEY/CDS/CDNSKEY, or -1. */
} signer_keyset_t;

/* Algorithm by name ("ecdsap256sha256", "ed25519", or the number); 0 if
 * unknown or unsupported. */
uint8_t signer_algorithm_parse(const char *name);
const char *signer_algorithm_name(uint8_t algorithm);

/* Generates a private key; *pem (malloc'd) receives it as PKCS#8 PEM. */
int signer_key_generate(uint8_t algorithm, uint8_t **pem, size_t *pem_len);

/* Loads a PEM key for the zone apex with the given flags. */
int signer_key_load(const uint8_t *apex, uint16_t flags, uint8_t algorithm,
                    const uint8_t *pem, size_t pem_len, signer_key_t *out);
void signer_key_free(signer_key_t *key);

/* DNSKEY rdata of a key (into out, at most size bytes); its length or a
 * negative code. */
int signer_key_dnskey(const signer_key_t *key, uint8_t *out, size_t size);

/* DS rdata (SHA-256) of a key; length or a negative code. */
int signer_key_ds(const signer_key_t *key, uint8_t *out, size_t size);

/*
 * Loads every key of a keyset read from the edge store (edge/codec.h,
 * edge_keyset_decode()) for the zone `apex`. Returns ZC_EOK, ZC_EFORMAT
 * when a PEM does not load as a key of its algorithm, or ZC_ENOKEY when
 * no key is an active KSK (flags 257). On success the caller frees *out
 * with signer_keyset_free(); on failure nothing is left to free.
 */
int signer_keyset_load(const uint8_t *apex, const edge_keyset_t *set,
                       signer_keyset_t *out);

/*
 * A stored keyset value (the edge store's `keys` table) decoded and
 * loaded: edge_keyset_decode()'s codes, then signer_keyset_load()'s.
 */
int signer_keyset_decode(const uint8_t *apex, const uint8_t *data,
                         size_t len, signer_keyset_t *out);
void signer_keyset_free(signer_keyset_t *ks);

/* Largest RRSIG rdata: fixed fields, signer name, signature. */
#define SIGNER_RRSIG_MAX (18 + 255 + 128)

/* The RRSIG rdata signing rr (see signer_sign_rrset()) into out; its
 * length or a negative code. */
int signer_sign_rdata(const knot_rrset_t *rr, const signer_key_t *key,
                      const uint8_t *signer, uint32_t inception,
                      uint32_t expiration, uint8_t *out, size_t out_size,
                      knot_mm_t *mm);

/*
 * Appends to rrsig (an RRSIG RRset owned by rr's owner, created by the
 * caller) the signature of rr made with key, for the signer (zone apex).
 * labels: the owner's label count as RFC 4034 §3.1.3 wants (without a
 * leading '*'). Validity [inception, expiration] in seconds since epoch.
 */
int signer_sign_rrset(const knot_rrset_t *rr, const signer_key_t *key,
                      const uint8_t *signer, uint32_t inception,
                      uint32_t expiration, knot_rrset_t *rrsig,
                      knot_mm_t *mm);

/* --- Signature cache (cache.c): one per worker, no locks. --- */

typedef struct signer_cache signer_cache_t;

/* A cache of `slots` signatures (0: none kept). */
signer_cache_t *signer_cache_new(size_t slots);
void signer_cache_free(signer_cache_t *c);

/* Lookups served from the cache and those that signed, so far (any
 * thread; NULL: zeros). */
void signer_cache_counts(const signer_cache_t *c, uint64_t *hits,
                         uint64_t *misses);

/*
 * Like signer_sign_rrset(), served from the cache when the same RRset
 * (owner, type, TTL, rdata) was signed by the same key and the signature
 * is still valid for at least a quarter of its lifetime.
 */
int signer_sign_cached(signer_cache_t *c, const knot_rrset_t *rr,
                       const signer_key_t *key, const uint8_t *signer,
                       knot_rrset_t *rrsig, knot_mm_t *mm);

/* Signature validity used by signer_sign_cached(): inception one hour
 * back (clock skew), expiration 7 days ahead plus up to 1 day of jitter. */
#define SIGNER_INCEPTION_BACK (3600)
#define SIGNER_VALIDITY (7 * 86400)
#define SIGNER_JITTER (86400)
