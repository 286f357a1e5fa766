/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG (RFC 8945) for requests zonecast sends, such as NOTIFY to a
 * secondary that accepts it only signed: the request is signed with
 * dns_tsig_client_sign(), which keeps its MAC, and the response, parsed
 * with knot_pkt_parse() (which takes the TSIG RR off the message), is
 * checked against that MAC with dns_tsig_client_check().
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <libknot/packet/pkt.h>
#include <libknot/tsig.h>

typedef struct {
	knot_tsig_key_t key;
	uint8_t name[KNOT_DNAME_MAXLEN];
	uint8_t secret[128];
	uint8_t mac[64];          /* The signed request's MAC. */
	size_t mac_len;
} dns_tsig_client_t;

/* Sets the key (name in wire form, algorithm as in "hmac-sha256").
 * KNOT_TSIG_EBADKEY for an unknown algorithm or an oversized secret. */
int dns_tsig_client_key(dns_tsig_client_t *c, const uint8_t *name,
                        const char *algorithm, const uint8_t *secret,
                        size_t secret_len);

/* Signs the request in msg (len bytes, buffer of max bytes), keeping its
 * MAC for the response check. c is not copied elsewhere: it must stay at
 * one address while its key is in use. */
int dns_tsig_client_sign(dns_tsig_client_t *c, uint8_t *msg, size_t *len,
                         size_t max);

/*
 * Checks a parsed response to the signed request: ZC_EOK when its MAC is
 * good; otherwise a KNOT_TSIG_E* code (an unsigned response, another key,
 * a bad MAC or time). *error receives the TSIG error the responder set
 * (BADKEY, BADSIG, BADTIME), 0 when none or unsigned.
 */
int dns_tsig_client_check(const dns_tsig_client_t *c, const knot_pkt_t *resp,
                          uint16_t *error);
