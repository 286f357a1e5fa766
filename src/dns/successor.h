/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Next names for minimally covering NSEC records: the first name that
 * follows a name in DNSSEC's canonical order (RFC 4034 §6.1) among the
 * names that can exist, i.e. that fit in 255 octets with labels of at most
 * 63 (RFC 4471 §3.1.2, the "absolute method"; RFC 4470 §2.1).
 *
 * An NSEC whose next name is the first possible name after its owner
 * covers no name at all, so it denies nothing beyond its owner's types
 * whatever else the zone holds. Compact denial (RFC 9824 §3.1) takes
 * \000.<name>; for a name that leaves no room for that label (over 253
 * octets), the next name must still be just after it, never the owner
 * itself (an NSEC whose next name is its owner reads as the last of the
 * zone and covers every other name).
 *
 * Both functions write a lowercase wire name into out (room for
 * KNOT_DNAME_MAXLEN octets) and return its length. name must be at or
 * below apex (case-insensitive). When no name of the zone can follow, the
 * result is the apex: the NSEC is then the last of the zone (RFC 4034
 * §4.1.1) and still covers nothing.
 */
#pragma once

#include <stddef.h>
#include <libknot/dname.h>

/*
 * The first name after name: \000.<name> when it fits, else the first
 * name after every name below name (dns_name_after_subtree()).
 */
size_t dns_name_next(const knot_dname_t *name, const knot_dname_t *apex,
                     knot_dname_t *out);

/*
 * The first name after name and every name below it: its first label with
 * an octet 0x00 appended when the label and the name have room for it
 * (RFC 9824 §3.4: "sub\000.example.com." after the cut "sub.example.com.",
 * whose own names belong to the child zone); else that label incremented
 * (trailing 0xff octets dropped, then the last octet plus one, stepping
 * over A-Z, which sort as a-z); else, the label being all 0xff, the same
 * one level up, and the apex when the walk reaches it.
 */
size_t dns_name_after_subtree(const knot_dname_t *name,
                              const knot_dname_t *apex, knot_dname_t *out);

/*
 * The same with a smaller bound than 255 octets on the result (max_size,
 * at least name's size): the unit tests use it to list every possible
 * name of a small bound and check the results against the list.
 */
size_t dns_name_next_within(const knot_dname_t *name,
                            const knot_dname_t *apex, size_t max_size,
                            knot_dname_t *out);
size_t dns_name_after_subtree_within(const knot_dname_t *name,
                                     const knot_dname_t *apex,
                                     size_t max_size, knot_dname_t *out);
