/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: /user/tokens (tokens.c). */
#pragma once

#include "api/internal.h"

/* parts[] are the URL's path segments after /client/v4/. */
void api_user(api_req_t *req, char **parts, int count);
