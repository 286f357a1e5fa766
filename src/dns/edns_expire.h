/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The EDNS EXPIRE option (RFC 7314) of a primary: its value is the zone's
 * SOA EXPIRE field (§2), given to whoever asks, in answers (the query
 * path) and transfers alike, as BIND and knotd give it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Octets of the option in a response: code, length, 4 of value. */
#define DNS_EDNS_EXPIRE_SIZE 8

/* Writes the EXPIRE field of the SOA rdata soa (soa_len octets) into out,
 * network order; zero when soa_len is too short to hold one. */
void dns_soa_expire_wire(const uint8_t *soa, size_t soa_len, uint8_t out[4]);
