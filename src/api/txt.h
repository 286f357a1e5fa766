/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: the content of TXT (and SPF) records in the two forms
 * Cloudflare's API takes. Its documentation asks for quoted
 * "character-strings" (RFC 1035 §3.3.14, §5.1), each of at most 255
 * octets, and splits longer strings itself; its API also takes (and gives
 * back) content without quotes, which is what most clients send (certbot's
 * dns-cloudflare plugin, for one): that text, every octet standing for
 * itself, split into strings of 255 octets.
 *
 * A record remembers the form it was written in (records.api_form), so a
 * client reads back what it wrote: content written plain comes back plain,
 * content written quoted comes back quoted. A filter on content matches
 * either form (api/filter.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* records_record_t.api_form's bit 0 (bit 1: RECORDS_API_TTL_AUTO) */
#define API_FORM_TEXT 0    /* Master-file text: quoted strings for TXT. */
#define API_FORM_PLAIN 1   /* TXT as plain text, no quotes. */

/* Whether content is in the plain form: it does not start with '"'. */
bool api_txt_is_plain(const char *content);

/*
 * Parses TXT content (either form) into rdata (at most 65535 octets):
 * plain text split into strings of 255 octets, or quoted and unquoted
 * character-strings with master-file escapes (\X, \DDD), each one longer
 * than 255 octets split likewise. ZC_EOK, or ZC_EUSAGE with
 * "content: ..." in err.
 */
int api_txt_parse(const char *content, uint8_t *rdata, uint16_t *len,
                  char *err, size_t err_size);

/* Whether rdata reads back from its plain form: plain TXT content would
 * be parsed into these very strings. */
bool api_txt_plain_ok(const uint8_t *rdata, uint16_t len);

/*
 * Renders TXT rdata: plain when form is API_FORM_PLAIN and
 * api_txt_plain_ok(), else as quoted strings (UTF-8 kept as it is where a
 * string is valid UTF-8; control octets, and octets of a string that is
 * not, as \DDD). ZC_EOK, ZC_ENOSPACE, or ZC_EFORMAT for rdata that is no
 * sequence of character-strings.
 */
int api_txt_format(const uint8_t *rdata, uint16_t len, int form, char *out,
                   size_t size);
