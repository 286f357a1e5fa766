/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: /zones/{id}/dns_records (dns_records.c) and its write
 * path (record_write.c), which the import (import_export.c) runs too. */
#pragma once

#include "api/internal.h"
#include "api/record_unit.h"

#define MAX_BATCH 10000

/* parts[] are the URL's path segments after dns_records. */
void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count);

/*
 * Runs ops in one unit of the group committer (one zone version) and fills
 * in the response: the errors, or the version. *last_id (NULL: a batch)
 * receives the record a single-record write touched; skipped non-NULL
 * makes it an import, which skips records already present and counts
 * them there. ZC_EOK or the unit's failure.
 */
int api_dns_records_run(api_req_t *req, const records_zone_t *zone,
                        op_t *ops, size_t count, int64_t *last_id,
                        int *skipped);
