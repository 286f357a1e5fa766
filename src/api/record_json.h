/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a record in the API's JSON (record_json.c). */
#pragma once

#include <jansson.h>

#include "records/records.h"

/* A record in Cloudflare's shape: id, zone, name, type, content (and
 * priority), ttl, comment, tags, times; an SOA with the zone's serial. */
json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec);
