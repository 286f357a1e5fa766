/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNS Cookies (RFC 7873) with interoperable server cookies (RFC 9018:
 * version 1, timestamp, SipHash-2-4 of the client cookie and address
 * under a 16-byte secret, as computed by libknot).
 *
 * Every response to a query carrying a COOKIE option gets the client
 * cookie back with a fresh server cookie. A server cookie we made less
 * than an hour ago (and at most five minutes ahead, for clocks of anycast
 * peers sharing the secret) proves the client receives at its address:
 * such queries skip response rate limiting. zonecast never requires
 * cookies (no BADCOOKIE for a missing or stale one): as BIND and Knot by
 * default, it answers normally and hands out a new cookie.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <libknot/packet/pkt.h>

#define COOKIE_SECRET_SIZE 16
#define COOKIE_OPTION_MAX 40  /* Client cookie + largest server cookie. */

typedef enum {
	COOKIE_NONE,      /* No COOKIE option: nothing to add. */
	COOKIE_NEW,       /* Answer with out (client cookie, new server one). */
	COOKIE_VALID,     /* As NEW; the query's server cookie was ours. */
	COOKIE_MALFORMED, /* RFC 7873 §5.2.2: FORMERR. */
} cookie_result_t;

/*
 * Checks the query's COOKIE option against client (the source address)
 * and secret at the current time, and writes the option data to send
 * back in out (COOKIE_OPTION_MAX bytes) and its length in out_len. A
 * query without the option costs one lookup in the parsed OPT.
 */
cookie_result_t cookie_answer(const uint8_t secret[COOKIE_SECRET_SIZE],
                              const struct sockaddr_storage *client,
                              const knot_pkt_t *query,
                              uint8_t *out, uint16_t *out_len);
