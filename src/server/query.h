/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to server/: one query being answered, and what the files of the
 * answer path share.
 *
 * answer.c takes a message in and drives the others in this order: edns.c
 * prepares the response OPT (UDP size, DO and CO, NSID, cookies, room for
 * ZONEVERSION), lookup.c finds a name in the zone, solve.c applies the
 * answering rules and fills the sections, signing.c signs what solve.c
 * puts there and writes the compact denial proofs (RFC 9824), and answer.c
 * finishes the message with edns.c's help.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/packet/pkt.h>

#include "edge/edge.h"
#include "server/answer.h"

/* Longest list of names whose A/AAAA went to the additional section. */
#define QUERY_MAX_ADDITIONAL 64

typedef enum {
	LOOKUP_FOUND,     /* The name exists: its node. */
	LOOKUP_WILDCARD,  /* Synthesised from *.<closest encloser>. */
	LOOKUP_DELEG,     /* A zone cut at or above the name. */
	LOOKUP_DNAME,     /* A DNAME above the name. */
	LOOKUP_ENT,       /* Empty non-terminal. */
	LOOKUP_NX,        /* No such name. */
} lookup_kind_t;

typedef struct {
	lookup_kind_t kind;
	edge_node_t node;
	const knot_dname_t *owner; /* Owner to write the node's RRsets with. */
} lookup_t;

typedef struct {
	answer_ctx_t *ctx;
	knot_mm_t *mm;
	knot_pkt_t *q;
	knot_pkt_t *r;
	edge_txn_t *txn;
	edge_zone_t zone;
	size_t apex_lf_len;
	uint16_t qtype;
	const knot_dname_t *qname; /* As asked (case kept). */
	uint8_t rcode;
	bool aa;
	bool zone_found;       /* qr->zone is the zone answered from. */
	bool want_version;     /* The query asked for ZONEVERSION. */
	bool want_expire;      /* The query asked for EXPIRE (RFC 7314). */
	bool signed_zone;      /* The zone has signing keys (looked up when the
	                        * query has DO=1 or asks for NSEC or RRSIG). */
	bool dnssec;           /* DO=1 and the zone is signed: sign. */
	bool co;               /* Compact Answers OK (RFC 9824 §4). */
	bool bad_cookie;       /* Malformed COOKIE option (RFC 7873 §5.2.2). */
	int error;
	unsigned added_count;
	const knot_dname_t *added[QUERY_MAX_ADDITIONAL];
} query_t;

/* --- lookup.c --- */

/*
 * Finds name in the zone answered from (RFC 1034 §4.3.2 step 3, RFC 4592):
 * walks from the apex down, one exact get per label. out's node and owner
 * are valid until the read transaction ends.
 */
int query_lookup(query_t *qr, const knot_dname_t *name, lookup_t *out);

/* Decodes an edge node value owned by owner into out (kind untouched). */
int query_decode_node(query_t *qr, const uint8_t *val, size_t len,
                      const knot_dname_t *owner, lookup_t *out);

/* --- solve.c --- */

/* Puts an RRset into the current section, owned by owner; a failure
 * other than a truncation that flags allow is kept in qr->error. True
 * when it was put. */
bool query_put(query_t *qr, const knot_rrset_t *rr, const knot_dname_t *owner,
               uint16_t flags);

/* Answers the question into the answer and authority sections. */
void query_solve(query_t *qr);

/* Adds the addresses of NS, MX, SRV, SVCB and HTTPS targets. */
void query_put_additional(query_t *qr);

/* --- signing.c --- */

/* Loads the signing keys of the zone answered from; false: unsigned. */
bool query_load_keys(query_t *qr);

/* Puts rr's RRSIG owned by owner into the current section (the query's DO
 * bit aside), when qr->signed_zone. */
void query_put_rrsig(query_t *qr, const knot_rrset_t *rr,
                     const knot_dname_t *owner, uint16_t flags);

/* Puts an authoritative RRset, then, when qr->dnssec and it was put, its
 * RRSIG (with the same flags). */
void query_put_signed(query_t *qr, const knot_rrset_t *rr,
                      const knot_dname_t *owner, uint16_t flags);

/* The types a node holds (the SOA too at the apex); out holds at least
 * EDGE_NODE_MAX_RRSETS + 1 types. */
size_t query_node_types(const lookup_t *lk, bool apex, uint16_t *out);

/*
 * The NSEC of compact denial (RFC 9824 §3) owned by owner: types plus
 * RRSIG and NSEC, next name the first possible name after owner, or, at a
 * zone cut (at_cut), after the cut and the child's names below it. In
 * arena memory. Returns a libknot code.
 */
int query_make_nsec(query_t *qr, const knot_dname_t *owner,
                    const uint16_t *types, size_t ntypes, bool at_cut,
                    knot_rrset_t *out);

/* That NSEC, signed, in the authority section, when qr->dnssec. */
void query_put_compact_nsec(query_t *qr, const knot_dname_t *name,
                            const uint16_t *types, size_t ntypes, bool at_cut);

/* --- chaos.c --- */

/* Answers a CHAOS-class question (RFC 4892): identity or version as TXT,
 * else REFUSED. */
void query_chaos(query_t *qr);

/* --- edns.c --- */

/* RFC 6891 §6.2.3-5: the UDP payload size the response may take. */
uint16_t query_udp_limit(const knot_pkt_t *q);

/* Prepares the response OPT (RFC 6891 §6.1.1) and reserves its room. */
int query_prepare_opt(query_t *qr, knot_rrset_t *opt);

/* Releases the room reserved for opt, completes it (extended RCODE,
 * ZONEVERSION) and puts it in the additional section. */
void query_put_opt(query_t *qr, knot_rrset_t *opt, uint8_t ext_rcode);
