/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: /zones and a zone's resources (zones.c). */
#pragma once

#include "api/internal.h"

/* parts[] are the URL's path segments after /client/v4/. */
void api_zones(api_req_t *req, char **parts, int count);
