/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: the answer to a request, errors and the envelope
 * (reply.c). */
#pragma once

#include "api/internal.h"
#include "api/json_text.h"

/* Records an error (HTTP status, Cloudflare-style code, message). */
void api_error(api_req_t *req, unsigned status, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* 405 for a method the URL path does not take: the envelope's error
 * (code 1000) and, from req->allow, the Allow field server.c sends
 * (RFC 9110 section 15.5.6). */
void api_method_not_allowed(api_req_t *req);

/* Maps a zonecast code to an HTTP status and message (one table). */
void api_error_code(api_req_t *req, int ret, const char *what);

/* Sets a listing's result and Cloudflare's result_info (takes list), or
 * the error for ret. */
void api_list_result(api_req_t *req, int ret, json_t *list, long page,
                     long per_page, long total, const char *what);

/* The same with the page's results written as text: items (taken) holds
 * "[" and count results separated by commas; the "]" is added here. */
void api_list_result_text(api_req_t *req, int ret, json_text_t *items,
                          long count, long page, long per_page, long total,
                          const char *what);

/* The response body: the export's text (*json false) or the JSON
 * envelope; the caller frees it. NULL when out of memory. */
char *api_response(api_req_t *req, size_t *len, bool *json);
