/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG (RFC 8945) for requests zonecast answers: checking a request's
 * signature and signing the response (one message, or each message of a
 * transfer), on top of libknot's TSIG primitives.
 *
 * The caller parses the request with knot_pkt_parse() (which takes the
 * TSIG RR off the message, as the MAC is computed without it), looks the
 * key up by the TSIG owner name and calls dns_tsig_check(); whatever the
 * outcome, dns_tsig_sign() then makes the response RFC 8945 §5.3 expects:
 * signed on success and on BADTIME, an unsigned TSIG carrying the error
 * on BADKEY and BADSIG.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/packet/pkt.h>
#include <libknot/tsig.h>

/* Room to leave at the end of a response for its TSIG RR. */
#define DNS_TSIG_ROOM 512

#define DNS_TSIG_SECRET_MAX 128

typedef struct dns_tsig {
	bool present;               /* The request was signed. */
	uint16_t error;             /* 0 or KNOT_RCODE_BADSIG/BADKEY/BADTIME/
	                               BADTRUNC */
	knot_tsig_key_t key;        /* Valid unless error is BADKEY. */
	uint8_t name[KNOT_DNAME_MAXLEN];
	uint8_t secret[DNS_TSIG_SECRET_MAX];
	uint8_t digest[64];         /* Request MAC, then the last one sent. */
	size_t digest_len;
	uint64_t time_signed;       /* The request's. */
	knot_rrset_t rr;            /* Copy of the request's TSIG RR header. */
	uint8_t rr_data[512];       /* ... and its rdata. */
	size_t messages;            /* Responses signed so far. */
} dns_tsig_t;

/*
 * Checks q's TSIG with the key (algorithm name as in "hmac-sha256",
 * secret), or records BADKEY when key_found is false or the algorithm
 * differs. t->present is false for an unsigned request. Returns ZC_EOK
 * when the request is unsigned or verified; KNOT_EMALF for a MAC of a
 * size RFC 8945 §5.2.2.1 answers with FORMERR (t->present is then false:
 * the answer is unsigned); else an rcode is in t->error (NOTAUTH).
 */
int dns_tsig_check(const knot_pkt_t *q, bool key_found, const char *algorithm,
                   const uint8_t *secret, size_t secret_len, dns_tsig_t *t);

/* Signs a response of len bytes in msg (max: buffer size); nothing
 * happens for an unsigned request. The first call signs with the
 * request MAC, later ones (transfers) with the previous response's. */
int dns_tsig_sign(dns_tsig_t *t, uint8_t *msg, size_t *len, size_t max);

/* Copies t (its pointers point into itself: a plain struct copy would
 * leave dst pointing into src). */
void dns_tsig_copy(dns_tsig_t *dst, const dns_tsig_t *src);

/* The TSIG algorithm names zonecast accepts ("hmac-sha256", ...). */
bool dns_tsig_algorithm_ok(const char *name);
