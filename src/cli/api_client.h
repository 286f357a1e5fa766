/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to cli/: requests to the zonecast HTTP API. */
#pragma once

#include <jansson.h>

/*
 * Sends METHOD /client/v4PATH with a bearer token and an optional JSON
 * body to the API at addr ("ADDR:PORT"). Returns the HTTP status with the
 * parsed JSON response in *out (caller decrefs), or a negative code.
 */
int cli_api_request(const char *addr, const char *token, const char *method,
                    const char *path, const char *body, json_t **out);

/* Prints the envelope's error messages to stderr. */
void cli_api_print_errors(const json_t *resp, int status);
