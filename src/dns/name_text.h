/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Names written as text by people and their tools: the API's JSON names
 * and the zonecast command's arguments. A label written in Unicode is an
 * internationalized label (IDNA2008 with UTS #46 mapping, libidn2) and is
 * stored in Punycode, as Cloudflare stores it and resolvers ask for it
 * ("bücher" is "xn--bcher-kva"); a label written with escapes (\DDD), or
 * one whose octets are no UTF-8, is octets, as in a master file.
 * name_text.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for a name's text after dns_name_idna(). */
#define DNS_NAME_IDNA_MAX 4096

/* Writes text with its Unicode labels as A-labels into out; false when a
 * Unicode label is no internationalized label (an emoji, one that maps to
 * punctuation) or out is too small. ASCII text comes out as it went in. */
bool dns_name_idna(const char *text, char *out, size_t size);

/* knot_dname_from_str() of dns_name_idna(text); NULL when either fails. */
uint8_t *dns_name_from_text(uint8_t *out, const char *text, size_t maxlen);
