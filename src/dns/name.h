/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Domain names as sortable keys.
 *
 * The "lookup form" (LF) of a name is its labels in reverse order, each
 * lowercased and followed by a 0x00 byte: "www.Example.com." becomes
 * "com\0example\0www\0", the root the empty string. Comparing LF bytes with
 * memcmp gives an order in which every name sorts right after its parent
 * and before its parent's next sibling, so a zone's names (and any node's
 * descendants) form one contiguous key range. Both stores key names by it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <libknot/dname.h>

/* Longest LF: a name of at most 255 wire bytes gives at most 255 bytes. */
#define DNS_LF_MAXLEN 255

/*
 * Writes the lookup form of a (wire, uncompressed) name into out, which
 * holds at least DNS_LF_MAXLEN bytes. Returns its length.
 */
size_t dns_name_to_lf(const knot_dname_t *name, uint8_t *out);

/*
 * Rebuilds a lowercase wire name from its lookup form. out holds at least
 * KNOT_DNAME_MAXLEN bytes. Returns the wire length, or a negative code for
 * an LF that no name produces.
 */
int dns_name_from_lf(const uint8_t *lf, size_t len, knot_dname_t *out);

/* Number of labels of a wire name, the root label not counted. */
unsigned dns_name_labels(const knot_dname_t *name);

/* Returns the suffix of name that drops its first `skip` labels. */
const knot_dname_t *dns_name_skip(const knot_dname_t *name, unsigned skip);

/* True when name equals zone or lies below it (case-insensitive). */
bool dns_name_is_under(const knot_dname_t *name, const knot_dname_t *zone);
