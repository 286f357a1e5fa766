/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a zone's TSIG keys (tsig_keys.c). */
#pragma once

#include "api/internal.h"

/* /zones/{id}/tsig_keys[/...]: parts[] are the segments after tsig_keys. */
void api_tsig_keys(api_req_t *req, const records_zone_t *zone, char **parts,
                   int count);
