/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: the names inside a record's content written in
 * Unicode, made A-labels (Punycode) as Cloudflare stores them ("Domain
 * names are always represented in Punycode"): the words that are names
 * for the type only (a CNAME's target, an MX's exchange, an SRV's or
 * SVCB's target, ...); character-strings stay as written. Also the walk
 * over content's blank-separated words both use. content_idna.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Writes content with its Unicode names in Punycode into out. Returns 0
 * when there is nothing to convert (out untouched: use content), 1 when
 * out holds the converted content, -1 when a name in Unicode is no
 * internationalized name (an emoji, one UTS #46 maps to punctuation) or
 * out is too small. priority_apart: an MX, SRV or URI priority given
 * apart from content (content starts with the type's second word).
 */
int api_content_idna(uint16_t type, const char *content, bool priority_apart,
                     char *out, size_t size);

/* The length of content's word at p: up to a blank outside quotes, a
 * quoted character-string one word, an escaped octet part of it. */
size_t api_content_word_len(const char *p);
