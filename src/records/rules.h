/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The zone-content rules, once for every write path: the HTTP API, RFC
 * 2136 UPDATE and zone imports ask these functions whether a record may
 * be added to or removed from a node, and map the verdict to their own
 * error form (an HTTP 400 naming the field, an UPDATE silently ignored or
 * REFUSED, an import error with its file and line).
 *
 * The rules are plain functions over the zone's apex, an owner name and
 * the records stored at that node: no SQL, no HTTP, no DNS message. They
 * are:
 *
 *   - the owner lies at or below the apex;
 *   - RRSIG, NSEC, NSEC3, NSEC3PARAM, DNSKEY, CDS and CDNSKEY are the
 *     online signer's (docs/dnssec.md): the API and UPDATE neither add
 *     nor remove them;
 *   - a CNAME shares its name with no other data but RRSIG and NSEC
 *     (RFC 1034 §3.6.2, RFC 2181 §10.1, RFC 4035 §2.5), is never at the
 *     apex (which holds the SOA and NS), and is alone in its RRset;
 *   - a DNAME is alone in its RRset too: a subtree is redirected to one
 *     target (RFC 6672 section 2.4; BIND and Knot hold DNAME a singleton
 *     type as CNAME);
 *   - no record lies below a DNAME (RFC 6672 section 2.4: "resource
 *     records MUST NOT exist at any subdomain of the owner of a DNAME
 *     RR"): a record is not added strictly below a name holding a DNAME
 *     (from the apex, included, down to the owner's parent), nor a DNAME
 *     at a name with records strictly below it (BELOW_DNAME,
 *     DNAME_ABOVE_DATA). Records at the DNAME's own name stay allowed
 *     (but a CNAME, as above); delegations change nothing: a DNAME
 *     below an NS cut, or an NS cut with data below it under a DNAME,
 *     is refused as well (Knot refuses such a zone at load and transfer:
 *     "child record exists under DNAME"). The node functions below see
 *     one name only: the write paths ask the records store
 *     (records_dname_above(), records_data_below(), records.h), imports
 *     check the file's sorted names (records_rules_key_is_below());
 *   - a record equal to a stored one is a duplicate, compared as RFC 2136
 *     §1.1.1 and RFC 4034 §6.2 say: the names inside the rdata of the
 *     types listed there (NS, CNAME, SOA, PTR, MX, SRV, NAPTR, DNAME, ...)
 *     case-insensitively, everything else octet by octet;
 *   - all records of an RRset share one TTL (RFC 2181 §5.2): a write with
 *     a new TTL retimes its RRset, an import with two TTLs is refused;
 *   - the apex has exactly one SOA and at least one NS: neither the SOA
 *     nor the last apex NS is removed, and "delete RRset" of the apex SOA
 *     or NS is ignored (RFC 2136 §3.4.2.3);
 *   - a name holds at most RECORDS_RULES_MAX_TYPES types: what an edge
 *     store node holds (edge/codec.h) less room for the signer's; one
 *     more than the node holds was stored, acknowledged
 *     by no one, and quarantined the zone (its builds failed), every
 *     later change of the zone left unserved; an RRset holds at most
 *     RECORDS_RULES_MAX_RRSET records (what an RRset can: its count is
 *     16 bits), for the same reason, and at most
 *     RECORDS_RULES_MAX_RRSET_OCTETS octets (one DNS message's worth).
 *
 * Rdata given here is well-formed for its type (zonefile_record_check()
 * passed); malformed rdata is compared octet by octet, never read past
 * its length.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/dname.h>

/* Most types one name may hold: an edge store node holds 512
 * (EDGE_NODE_MAX_RRSETS, edge/codec.h), and 8 are kept for what the signer
 * adds when a zone is signed (DNSKEY, CDS, CDNSKEY, its denial records):
 * a name of 512 types stopped `dnssec enable`, the zone quarantined. */
#define RECORDS_RULES_MAX_TYPES 504

/* Most records one RRset may hold (knot_rdataset_t counts in 16 bits). */
#define RECORDS_RULES_MAX_RRSET 65535

/*
 * Most octets an RRset may take as a DNS answer: its owner once, each
 * record's 12 (a compressed owner and the fixed fields) and rdata, so
 * that it fits in one message (65535) with the header, the question and
 * room for one usual RRSIG and the OPT (512), asked for by its own name
 * (a CNAME chain to it, a long wildcard query name, NSID or a large RSA
 * signature may still need TC). A larger RRset no query could be
 * answered with (TC=1 over TCP too), a BIND secondary refused its zone
 * ("ran out of space"), and a record over it stopped every AXFR of its
 * zone (outside tester 28).
 */
#define RECORDS_RULES_MAX_RRSET_OCTETS (65535 - 12 - 4 - 512)

/* One record at a node, borrowed from the caller. */
typedef struct {
	uint16_t type;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
	/* The caller's order (a file's line, ...): of two records in
	 * conflict, the one with the larger tag is the one reported. */
	uint64_t tag;
} records_rules_rr_t;

/* A node: the zone's apex, the owner (wire, any case) and the records
 * stored there, in any order unless a function says otherwise. */
typedef struct {
	const knot_dname_t *apex;
	const knot_dname_t *owner;
	const records_rules_rr_t *rr;
	size_t count;
} records_rules_node_t;

/* What a rule says about a change. */
typedef enum {
	RECORDS_RULE_OK = 0,
	RECORDS_RULE_OUTSIDE_ZONE,     /* The owner is not at or below the apex. */
	RECORDS_RULE_SIGNER_TYPE,      /* A type the online signer owns. */
	RECORDS_RULE_SOA_ELSEWHERE,    /* An SOA below the apex. */
	RECORDS_RULE_SECOND_SOA,       /* An SOA where one is. */
	RECORDS_RULE_CNAME_AT_APEX,
	RECORDS_RULE_DS_AT_APEX,       /* A DS is the parent's, at a cut. */
	RECORDS_RULE_CNAME_BESIDE_DATA, /* A CNAME added where other data is. */
	RECORDS_RULE_DATA_BESIDE_CNAME, /* Other data added where a CNAME is. */
	RECORDS_RULE_SECOND_CNAME,     /* Another CNAME where one is. */
	RECORDS_RULE_SECOND_DNAME,     /* Another DNAME where one is. */
	RECORDS_RULE_DUPLICATE,        /* Equal to a stored record. */
	RECORDS_RULE_TTL_DIFFERS,      /* Two TTLs in one RRset (an import). */
	RECORDS_RULE_REMOVES_SOA,      /* The SOA is never removed. */
	RECORDS_RULE_LAST_APEX_NS,     /* Nor the last NS at the apex. */
	RECORDS_RULE_NO_SOA,           /* An apex without its SOA. */
	RECORDS_RULE_NO_APEX_NS,       /* An apex without NS records. */
	RECORDS_RULE_TOO_MANY_TYPES,   /* A type past RECORDS_RULES_MAX_TYPES. */
	RECORDS_RULE_RRSET_FULL,       /* A record past RECORDS_RULES_MAX_RRSET. */
	RECORDS_RULE_RRSET_TOO_LARGE,  /* Past RECORDS_RULES_MAX_RRSET_OCTETS. */
	RECORDS_RULE_BELOW_DNAME,      /* A record below a DNAME's owner. */
	RECORDS_RULE_DNAME_ABOVE_DATA, /* A DNAME above stored records. */
} records_verdict_t;

/* A short sentence naming the rule and its RFC ("CNAME and other data at
 * the same name (RFC 1034 section 3.6.2, ...)"); static storage. */
const char *records_rules_reason(records_verdict_t verdict);

/* Whether owner is the apex or below it (names compared ignoring case). */
bool records_rules_in_zone(const knot_dname_t *apex,
                           const knot_dname_t *owner);

/* Whether the online signer owns the type: RRSIG, NSEC, NSEC3,
 * NSEC3PARAM, DNSKEY, CDS, CDNSKEY. */
bool records_rules_is_signer_type(uint16_t type);

/* Of those, the records a signed zone publishes at its apex, which an
 * export holds and an import takes back: DNSKEY, CDS, CDNSKEY (signatures
 * and denial records are made per query). */
bool records_rules_is_published_key(uint16_t type);

/* Whether an "RRset delete" leaves the records of (owner, type) alone:
 * the apex SOA and NS (RFC 2136 §3.4.2.3; also for "delete all RRsets"
 * at the apex). */
bool records_rules_is_apex_protected(const knot_dname_t *apex,
                                     const knot_dname_t *owner,
                                     uint16_t type);

/*
 * Compares two rdata of one type in canonical form (RFC 4034 §6.2 and
 * §6.3): names inside the rdata lowercased for the types listed there
 * (as libknot's knot_rrtype_should_be_lowercased() lists them, so the
 * signer signs the same form), then octet by octet, a shorter rdata
 * first. Returns <0, 0 or >0; 0 means the records are duplicates
 * (RFC 2136 §1.1.1). Allocates nothing.
 */
int records_rules_rdata_cmp(uint16_t type, const uint8_t *a, uint16_t alen,
                            const uint8_t *b, uint16_t blen);

/* records_rules_rdata_cmp() == 0. */
bool records_rules_rdata_equal(uint16_t type, const uint8_t *a,
                               uint16_t alen, const uint8_t *b,
                               uint16_t blen);

/* Whether adding `added` gives the stored record a new TTL: same RRset,
 * another TTL (RFC 2181 §5.2). The caller rewrites it with added->ttl. */
bool records_rules_needs_retime(const records_rules_rr_t *stored,
                                const records_rules_rr_t *added);

/*
 * Whether `rr` may be added at the node (which holds the records stored
 * at the owner, less any record the write replaces). In order: OUTSIDE_
 * ZONE, SIGNER_TYPE, SOA_ELSEWHERE, SECOND_SOA, CNAME_AT_APEX, DS_AT_APEX,
 * CNAME_BESIDE_DATA, DATA_BESIDE_CNAME, SECOND_CNAME or SECOND_DNAME,
 * DUPLICATE, TOO_MANY_TYPES, RRSET_FULL, RRSET_TOO_LARGE, else OK. *at
 * (unless NULL) gets the index of the stored record in question (the
 * other CNAME or DNAME, the duplicate; SIZE_MAX when none).
 */
records_verdict_t records_rules_check_add(const records_rules_node_t *node,
                                          const records_rules_rr_t *rr,
                                          size_t *at);

/*
 * Whether the node as it stands keeps to the size rules: TOO_MANY_TYPES
 * (more than RECORDS_RULES_MAX_TYPES types), RRSET_FULL (an RRset of more
 * than RECORDS_RULES_MAX_RRSET records), RRSET_TOO_LARGE (one of more
 * than RECORDS_RULES_MAX_RRSET_OCTETS), else OK; any order. For a
 * change that passed a limit on the way and may come back under it
 * before it ends (an UPDATE that adds, then deletes).
 */
records_verdict_t records_rules_check_size(const records_rules_node_t *node);

/*
 * Whether the stored record node->rr[index] may be removed: SIGNER_TYPE,
 * REMOVES_SOA, LAST_APEX_NS (the node must hold every NS of the apex),
 * else OK.
 */
records_verdict_t records_rules_check_remove(const records_rules_node_t *node,
                                             size_t index);

/*
 * As records_rules_check_remove(), for a record rewritten in place (an
 * API PUT or PATCH) as a record of new_type at new_owner: the last apex
 * NS may be rewritten as long as it stays an NS at the apex.
 */
records_verdict_t records_rules_check_replace(const records_rules_node_t *node,
                                              size_t index,
                                              const knot_dname_t *new_owner,
                                              uint16_t new_type);

/* Orders records as records_rules_check_node() wants them: by type, then
 * canonical rdata (records_rules_rdata_cmp()). */
int records_rules_rr_cmp(const records_rules_rr_t *a,
                         const records_rules_rr_t *b);

/* Receives one problem of a node: the index of the record (SIZE_MAX for
 * the node as a whole: NO_SOA, NO_APEX_NS). */
typedef void (*records_rules_problem_cb)(size_t index,
                                         records_verdict_t verdict,
                                         void *ctx);

/*
 * Checks a whole node as a zone file gives it (an import): SOA_ELSEWHERE,
 * SECOND_SOA, CNAME_AT_APEX, CNAME_BESIDE_DATA or DATA_BESIDE_CNAME (the
 * later of the two by tag), SECOND_CNAME, SECOND_DNAME, DUPLICATE,
 * TTL_DIFFERS, SIGNER_TYPE for RRSIG, NSEC, NSEC3 and NSEC3PARAM,
 * TOO_MANY_TYPES (at the first record of each type past the limit),
 * RRSET_FULL (at the first record past the limit), and
 * at the apex NO_SOA and NO_APEX_NS. The records must be in
 * records_rules_rr_cmp() order. DNSKEY, CDS and CDNSKEY are not refused
 * here: an exported signed zone holds those the signer stored, and
 * imports back; signatures and denial records are made at query time
 * and never stored. Returns the number of problems reported.
 */
int records_rules_check_node(const records_rules_node_t *node,
                             records_rules_problem_cb problem, void *ctx);

/* --- The subtree rules of DNAME (RFC 6672 section 2.4) ---
 *
 * Over owner keys: a name's lookup form relative to the apex (dns/name.h,
 * the stores' okey), which ends each label with 0x00; the apex's is
 * empty. */

/* Whether the name of key lies strictly below the name of anc. */
bool records_rules_key_is_below(const uint8_t *key, size_t key_len,
                                const uint8_t *anc, size_t anc_len);

/* The lengths of the keys of key's ancestors, the apex (0) included,
 * key's own excluded, shortest first, into lens (room for key_len / 2 + 1:
 * every label takes two bytes at least); each is a prefix of key. Returns
 * how many. */
size_t records_rules_ancestor_keys(const uint8_t *key, size_t key_len,
                                   size_t *lens);

/* The key that ends key's subtree: every key strictly below key's name
 * sorts after key and before it (memcmp, then length). Written into end
 * (room for key_len); returns its length, 0 for the apex (empty key: its
 * subtree is the zone, no end). */
size_t records_rules_subtree_end(const uint8_t *key, size_t key_len,
                                 uint8_t *end);
