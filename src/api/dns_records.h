/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: /zones/{id}/dns_records (dns_records.c). */
#pragma once

#include "api/internal.h"

/* parts[] are the URL's path segments after dns_records. */
void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count);
/* A record in Cloudflare's shape. */
json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec);
