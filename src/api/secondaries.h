/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a zone's secondaries (secondaries.c). */
#pragma once

#include "api/internal.h"

/* /zones/{id}/secondaries. */
void api_secondaries(api_req_t *req, const records_zone_t *zone);
