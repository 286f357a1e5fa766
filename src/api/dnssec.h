/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: a zone's DNSSEC settings (dnssec.c). */
#pragma once

#include "api/internal.h"

/* /zones/{id}/dnssec. */
void api_dnssec(api_req_t *req, const records_zone_t *zone);
