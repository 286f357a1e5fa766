/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: If-Match and If-None-Match (RFC 9110 §13.1.1 and
 * §13.1.2) of record writes
 * (conditional.c). */
#pragma once

#include "api/internal.h"

#define API_IF_MATCH_MAX 64
#define API_ETAG_MAX 64

/* Every If-Match field of the request. */
typedef struct {
	bool present;            /* The request has If-Match. */
	bool any;                /* "*" */
	unsigned count;          /* Strong entity tags in tags[]. */
	char tags[API_IF_MATCH_MAX][API_ETAG_MAX]; /* With their quotes. */
} api_if_match_t;

/* Reads the request's If-Match fields into m; false after a 400 for one
 * that is no list of entity tags. */
bool api_if_match_parse(api_req_t *req, api_if_match_t *m);

/* Whether a resource with this (strong) ETag meets m: no If-Match, "*",
 * or one of the strong tags is identical (the strong comparison: a weak
 * tag never matches). */
bool api_if_match_ok(const api_if_match_t *m, const char *etag);

/* The same for If-None-Match (§13.1.2): tags[] holds strong and weak
 * tags alike, by their opaque tag (the weak comparison). */
bool api_if_none_match_parse(api_req_t *req, api_if_match_t *m);

/* Whether a record with this ETag that exists meets m: no If-None-Match,
 * or a list none of whose tags is the ETag's opaque tag ("*" never). */
bool api_if_none_match_ok(const api_if_match_t *m, const char *etag);
