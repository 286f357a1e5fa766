/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a record in the API's JSON (record_json.c). */
#pragma once

#include <jansson.h>

#include "api/json_text.h"
#include "records/records.h"

/* A record in Cloudflare's shape: id, zone, name, type, content (and
 * priority), ttl, comment, tags, times; an SOA with the zone's serial. */
json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec);
/* The same record written as text, byte for byte what
 * json_dumps(api_record_json(zone, rec), JSON_COMPACT) gives (a comment
 * that is not valid UTF-8, which jansson refuses, is written with \u00XX
 * escapes). */
void api_record_json_text(json_text_t *t, const records_zone_t *zone,
                          const records_record_t *rec);
