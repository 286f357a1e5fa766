/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: listing a zone's records (record_list.c). */
#pragma once

#include "api/internal.h"

/* GET /zones/{id}/dns_records: filters, order, page. */
void api_record_list(api_req_t *req, const records_zone_t *zone);
