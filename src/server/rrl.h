/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Response rate limiting for UDP (in the spirit of BIND's and Knot's RRL):
 * so that zonecast is useless as an amplifier when an attacker spoofs a
 * victim's address.
 *
 * Every UDP response is put in a bucket keyed by the client's prefix
 * (/24 for IPv4, /56 for IPv6 by default) and what the response is:
 * positive answers by name and type, NXDOMAIN/NODATA/referrals by the
 * owner of their authority section (the zone apex or the cut, so random
 * names do not make new buckets), errors all in one bucket per prefix. A
 * bucket allows `rate` responses per second with a burst of one second's
 * worth (GCRA: one 64-bit word per bucket, updated with compare-and-swap,
 * shared by every UDP worker without locks). Over the rate, every
 * `slip`-th response goes out truncated (TC=1, question only: no larger
 * than the query, and a real client retries over TCP), the others are
 * dropped.
 *
 * Not limited: TCP, queries with a valid server cookie (RFC 7873: the
 * source address is proven), clients in the exempt list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/acl.h"

typedef struct {
	unsigned rate;        /* Responses per second per bucket; 0: off. */
	unsigned slip;        /* 0: drop all; N: every Nth limited is TC=1. */
	unsigned ipv4_prefix; /* Bits of an IPv4 client address bucketed. */
	unsigned ipv6_prefix; /* Bits of an IPv6 client address bucketed. */
	unsigned table_size;  /* Buckets (rounded up to a power of two). */
	const zc_acl_t *exempt; /* Never limited (NULL: none). */
} rrl_config_t;

typedef struct rrl rrl_t;

typedef enum {
	RRL_SEND,  /* Within the rate: send the response. */
	RRL_SLIP,  /* Limited: send rrl_slip() of it. */
	RRL_DROP,  /* Limited: send nothing. */
} rrl_verdict_t;

/* The buckets, cfg->table_size of them: NULL when cfg->rate is 0 or out
 * of memory (errno tells). The rest of cfg is rrl_check()'s to pass. */
rrl_t *rrl_new(const rrl_config_t *cfg);
void rrl_free(rrl_t *rrl);

/* Microseconds on the clock rrl_check() expects (monotonic). */
uint64_t rrl_now_us(void);

/* Accounts one UDP response (our own, well-formed) to client, under the
 * rate, slip, prefixes and exempt list of cfg (the caller's copy, which a
 * reload may change between two calls; rate 0 sends everything). */
rrl_verdict_t rrl_check(rrl_t *rrl, const rrl_config_t *cfg,
                        const struct sockaddr_storage *client,
                        const uint8_t *resp, size_t len, uint64_t now_us);

/* Turns the response into its slip form in place: the header with TC=1
 * and the question only. Returns the new length. */
size_t rrl_slip(uint8_t *resp, size_t len);

/* Responses limited so far: dropped and slipped. */
void rrl_counts(const rrl_t *rrl, uint64_t *dropped, uint64_t *slipped);
