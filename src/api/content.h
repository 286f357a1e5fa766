/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: records in Cloudflare's shape (name, type, content,
 * priority, ttl) to and from wire form. Content is parsed by the master-
 * file parser on a line "NAME TTL IN TYPE CONTENT", so every type the zone
 * files know is accepted with the same syntax and the same checks; a ';',
 * '(' or ')' outside quotes is data, as Cloudflare takes it, not a comment
 * or a group. TXT content is read in Cloudflare's two forms (api/txt.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/dname.h>

/* A record parsed from the API, in wire form. */
typedef struct {
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint16_t type;
	uint32_t ttl;
	uint16_t rdata_len;
	uint8_t form;            /* API_FORM_* (api/txt.h): how it was written. */
	uint8_t rdata[65535];
} api_wire_t;

/*
 * Parses name (FQDN as Cloudflare takes it, "@", or relative to the zone),
 * type mnemonic, content and priority (-1: none) into *out. On error
 * writes "field: message" into err and returns ZC_EUSAGE.
 */
int api_content_parse(const knot_dname_t *apex, const char *name,
                      const char *type, const char *content, int priority,
                      uint32_t ttl, api_wire_t *out, char *err,
                      size_t err_size);

/* Parses an absolute name, with its final dot or without (Cloudflare's
 * form), into a lower-case wire name; false when it is not a name. */
bool api_fqdn_parse(const char *text, uint8_t out[KNOT_DNAME_MAXLEN]);

/* Parses a Cloudflare record name (as api_content_parse() does) into a
 * lowercase wire name inside the zone; ZC_EUSAGE with "name: ..." in err. */
int api_name_parse(const knot_dname_t *apex, const char *name,
                   uint8_t *owner, char *err, size_t err_size);

/* Writes a name without its trailing dot (Cloudflare's form). */
void api_name_format(const knot_dname_t *name, char *out, size_t size);

/*
 * The longest content text (and the buffers that hold one): every octet
 * of the largest rdata (65535) as a \DDD escape, with room for quotes,
 * spaces and a generic form's header. A content over a shorter buffer
 * failed to render, and the API showed the record with content "", which
 * a client's read-modify-write then stored (outside tester 28).
 */
#define API_CONTENT_MAX (4 * 65535 + 8192)

/*
 * Renders rdata as Cloudflare content in the form it was written in
 * (API_FORM_*, api/txt.h: TXT written plain comes back plain); *priority
 * gets the MX/SRV/URI priority or -1. Returns ZC_EOK or ZC_ENOSPACE.
 */
int api_content_format(const knot_dname_t *owner, uint16_t type,
                       const uint8_t *rdata, uint16_t rdata_len, int form,
                       char *content, size_t size, int *priority);

/* Whether the type's content is character-strings taken in Cloudflare's
 * two TXT forms (TXT, SPF). */
bool api_content_is_txt(uint16_t type);
