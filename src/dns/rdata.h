/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The format of a record's rdata, checked before it is stored.
 *
 * libknot's packet parser checks only the fields its descriptors name:
 * fixed sizes and domain names. The rest of many types (TXT, CAA, SVCB,
 * HTTPS, IPSECKEY, NSEC3, ...) is one opaque "remainder", so an UPDATE
 * can carry a TXT whose string runs past the rdata, a CAA without a tag
 * or an SVCB whose target name has no end. libknot's text writer trusts
 * such rdata (it reads past the end of an SVCB or NSEC3), and libzscanner
 * takes any rdata of a known type in RFC 3597's generic form ("A \# 3
 * 010203"). This check stands between them and the stores: what passes
 * can be served, written as text and read back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Whether rdata is well-formed for type: every field, length and embedded
 * name lies inside the rdata (names uncompressed, RFC 3597 §4), and the
 * rules of the type's RFC hold where a peer would refuse the record
 * otherwise (CAA tags, SVCB parameters, type bitmaps, ...). Types that
 * libknot does not describe are opaque: any rdata passes. On false,
 * *why (when not NULL) names the problem in a static sentence.
 */
bool dns_rdata_valid(uint16_t type, const uint8_t *rdata, size_t len,
                     const char **why);

/* A6 (RFC 2874 §3.1.1, historic). */
#define DNS_RRTYPE_A6 38

/*
 * A6's prefix name, which canonical form lowercases (RFC 4034 §6.2, as
 * BIND does) though libknot's does not: its size, with its offset in
 * *at; 0 when the record has none (prefix length 0); -1 when the rdata
 * does not hold one as its prefix length says.
 */
int dns_a6_prefix_name(const uint8_t *rdata, size_t len, size_t *at);

/*
 * Whether type is data that a zone may hold: not 0, not OPT and not a
 * QTYPE or meta-type (128-255, RFC 6895 §3.1).
 */
bool dns_rdata_type_storable(uint16_t type);
