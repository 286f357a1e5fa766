/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Header-only responses: the query's header turned into a response with an
 * rcode, and its question echoed when there is exactly one that can be
 * copied. For errors from the answer path, UPDATE and transfers alike.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Writes the response into resp (at least 12 bytes) and returns its
 * length. qname_size is the question name's wire size (0: no question to
 * echo); the question is echoed when QDCOUNT is 1 and it fits both the
 * query (qlen) and resp_max.
 */
size_t dns_error_reply(const uint8_t *query, size_t qlen, size_t qname_size,
                       uint8_t *resp, size_t resp_max, uint8_t rcode);

/*
 * Appends an OPT record (RFC 6891: root owner, payload as its class,
 * ext_rcode the rcode's upper 8 bits, version 0, the DO flag when `dok`
 * (RFC 3225 §3: copied from the request), no options) to the response
 * resp of len octets, counted in ARCOUNT; returns the new length (len
 * when it does not fit resp_max). For the answers to a request that had
 * an OPT (§7).
 */
size_t dns_reply_add_opt(uint8_t *resp, size_t len, size_t resp_max,
                         uint16_t payload, uint8_t ext_rcode, bool dok);

/* The wire size of the (uncompressed) question name of an unparsed
 * message; 0 when there is none or it is malformed. */
size_t dns_qname_size(const uint8_t *query, size_t qlen);
