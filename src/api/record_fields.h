/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to the dns_records endpoints (record_unit.h): a record's JSON
 * fields parsed and checked (record_fields.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "api/internal.h"
#include "api/record_unit.h"

/* Parses a record's JSON fields into u->wire and u->tags (over a base
 * record for PATCH); a 400 is recorded in u. */
int api_record_fields_parse(unit_t *u, json_t *f, const copy_t *base);

/* Checks the members of a record body (where: "" or "patches[2]."); false
 * after a 400 naming the member. */
bool api_record_fields_members(api_req_t *req, json_t *f, const char *where,
                               int64_t path_id, int64_t zone_id);
