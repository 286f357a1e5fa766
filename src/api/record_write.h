/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to the dns_records endpoints (record_unit.h): the write unit,
 * one request's ops run in one records-store unit with the zone rules
 * (record_write.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "api/internal.h"
#include "api/node_cache.h"
#include "api/record_unit.h"

/* A record's ETag (quoted), from its id and modification time. */
void api_record_write_etag(int64_t id, int64_t modified, char *out,
                           size_t size);

/* Runs ops in one unit; fills errors or the version into the response. */
int api_record_write_run(api_req_t *req, const records_zone_t *zone,
                         op_t *ops, size_t count, int64_t *last_id,
                         int *skipped, api_node_cache_t *cache);
