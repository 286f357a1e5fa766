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
 * json_dumps(api_record_json(zone, rec), JSON_COMPACT) gives. Both read a
 * byte that is not part of valid UTF-8 (in text a store written behind
 * zonecast's back holds) as Latin-1. */
void api_record_json_text(json_text_t *t, const records_zone_t *zone,
                          const records_record_t *rec);
