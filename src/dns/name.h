/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Domain names as sortable keys.
 *
 * The "lookup form" (LF) of a name is its labels in reverse order, each
 * lowercased, escaped and followed by a 0x00 byte: "www.Example.com."
 * becomes "com\0example\0www\0", the root the empty string.
 *
 * Any octet is legal in a label (RFC 2181 §11), 0x00 included, so inside a
 * label 0x00 is written 0x01 0x01 and 0x01 is written 0x01 0x02; every
 * other octet stands for itself. 0x00 then only ends labels, so:
 *
 *   - the form is one-to-one: "a\000b.zone." and "b.a.zone." differ;
 *   - memcmp of two LFs orders names as DNSSEC's canonical order does
 *     (RFC 4034 §6.1): labels compared from the root, lowercase octet by
 *     octet, a label before any longer label it starts (the escape keeps
 *     octet order, and the terminator sorts before every octet);
 *   - every name sorts right after its parent and before its parent's
 *     next sibling, so a zone's names (and any node's descendants) form
 *     one contiguous key range, and an ancestor's LF is a prefix ending at
 *     a 0x00 byte. Both stores key names by it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <libknot/dname.h>

/* Longest LF: 250 octets of 0x00 or 0x01 in four labels (a 255-octet wire
 * name) take 2 * 250 + 4 bytes. */
#define DNS_LF_MAXLEN 504

/*
 * Longest LF of a name relative to its zone's apex that the stores keep.
 * The edge store's LMDB keys hold 511 bytes: 8 for the zone, 503 for the
 * name. Only names of the root zone can exceed it (a non-root apex takes
 * at least 3 of the 255 wire octets), and only with more than 240 octets
 * of 0x00 and 0x01.
 */
#define DNS_LF_KEY_MAXLEN 503

/*
 * Writes the lookup form of a (wire, uncompressed) name into out, which
 * holds at least DNS_LF_MAXLEN bytes. Returns its length.
 */
size_t dns_name_to_lf(const knot_dname_t *name, uint8_t *out);

/*
 * Rebuilds a lowercase wire name from its lookup form. out holds at least
 * KNOT_DNAME_MAXLEN bytes. Returns the wire length, or a negative code for
 * an LF that no name produces (so a decoded LF is always canonical:
 * dns_name_to_lf() of the result gives the same bytes back).
 */
int dns_name_from_lf(const uint8_t *lf, size_t len, knot_dname_t *out);

/* Number of labels of a wire name, the root label not counted. */
unsigned dns_name_labels(const knot_dname_t *name);

/* Returns the suffix of name that drops its first `skip` labels. */
const knot_dname_t *dns_name_skip(const knot_dname_t *name, unsigned skip);

/* True when name equals zone or lies below it (case-insensitive). */
bool dns_name_is_under(const knot_dname_t *name, const knot_dname_t *zone);
