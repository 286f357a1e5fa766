/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: the text comparisons of the list filters. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <libknot/dname.h>

typedef enum {
	API_MATCH_EXACT,
	API_MATCH_CONTAINS,
	API_MATCH_STARTS,
	API_MATCH_ENDS,
} api_match_t;

/* Whether have matches want by op, ASCII letters in either case. */
bool api_text_match(const char *have, const char *want, api_match_t op);

/* Whether the record's content, as the API renders it in any form it
 * takes (TXT: quoted strings and plain text), matches want by op. */
bool api_content_match(const knot_dname_t *owner, uint16_t type,
                       const uint8_t *rdata, uint16_t len, const char *want,
                       api_match_t op);
