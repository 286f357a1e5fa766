/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The type list of an NSEC record (RFC 4034 §4.1.2), shared by the online
 * signer's compact denial (server/signing.c) and the signed view's chain
 * (sigview/nsec.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Adds RRSIG and NSEC to the n types of list (room for n + 2), sorts them
 * and drops repeats; returns the count. */
size_t dns_nsec_types_finish(uint16_t *list, size_t n);

/* Writes the type bitmap of a sorted, distinct type list; returns its
 * length (at most 256 * 34 bytes). */
size_t dns_nsec_bitmap(const uint16_t *types, size_t n, uint8_t *out);
