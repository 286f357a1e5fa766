/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: what a handler reads of its request (request.c). */
#pragma once

#include "api/internal.h"

/* The body limit in force: api-max-body (a reload may change it). */
size_t api_max_body(const api_t *api);

/* Appends a piece of the request body (kept NUL-terminated); past the
 * body limit the request is only marked too big. KNOT_ENOMEM or ZC_EOK. */
int api_req_body(api_req_t *req, const char *data, size_t size);

/* Frees what req owns (not req). */
void api_req_clear(api_req_t *req);

const char *api_query_arg(api_req_t *req, const char *key);
/* The index-th argument of that name (repeated filters), or NULL. */
const char *api_query_arg_nth(api_req_t *req, const char *key,
                              unsigned index);
/* Whether the query has the argument, with or without a value. */
bool api_query_has(api_req_t *req, const char *key);
/* Checks that every query argument is one of allowed (NULL-ended; NULL:
 * none; "wait" is always allowed on a write, api_wait_arg()); false
 * after a 400 naming the first other one: a parameter zonecast does not
 * implement is refused, never ignored. A GET whose handler took no
 * arguments gets this check from api_dispatch(). */
bool api_args_only(api_req_t *req, const char *const *allowed);
/* The first header field of that name; api_header_nth() the index-th,
 * api_header_count() how many the request has. */
const char *api_header(api_req_t *req, const char *key);
const char *api_header_nth(api_req_t *req, const char *key, unsigned index);
unsigned api_header_count(api_req_t *req, const char *key);

/* Parses the JSON body; on failure records a 400 and returns NULL. An
 * object with a member given twice, at any depth, is refused with a 400
 * naming it (the last one won, silently). */
json_t *api_body_json(api_req_t *req);

/* Checks that every member of obj is one of allowed (NULL-ended); false
 * after a 400 naming the first other one as WHERE.KEY (where: "" or a
 * prefix such as "patches[2]." or "soa."), takes saying what the object
 * takes. A member zonecast does not know is refused, never ignored. */
bool api_members_only(api_req_t *req, json_t *obj, const char *where,
                      const char *const *allowed, const char *takes);

/* Reads page (1 to 2^31-1, default 1) and per_page (1 to 50000, default
 * 100); false after a 400. */
bool api_paging(api_req_t *req, long *page, long *per_page);
