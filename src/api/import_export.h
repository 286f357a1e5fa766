/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a zone's records from and to a master file
 * (import_export.c). */
#pragma once

#include "api/internal.h"

/* POST /zones/{id}/dns_records/import: the master file of the body (or of
 * its multipart "file" part) added to the zone in one version. */
void api_dns_records_import(api_req_t *req, const records_zone_t *zone);

/* GET /zones/{id}/dns_records/export: the zone as a master file. */
void api_dns_records_export(api_req_t *req, const records_zone_t *zone);
