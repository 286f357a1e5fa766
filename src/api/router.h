/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: the request path without the HTTP server (router.c),
 * which the libmicrohttpd callbacks and the api_request fuzz target run. */
#pragma once

#include "api/internal.h"

/* The API without its HTTP server: the configuration and the records
 * connection pool. api_start() is api_new() and the daemon. */
int api_new(const api_config_t *cfg, api_t **out);
void api_free(api_t *api);

/* Answers a request whose body is complete: 413 when too big, else
 * authentication, routing on the (unescaped) URL path and the handler,
 * which fill in the response part of req. */
void api_dispatch(api_req_t *req, const char *url);

