/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: bearer tokens and what they allow (auth.c). */
#pragma once

#include "api/internal.h"

/* The SHA-256 hash of a token, as the store keeps it. */
int api_token_hash(const char *token, uint8_t out[32]);

/* A new token secret into out (at least 64 bytes) and its SHA-256 hash. */
int api_token_secret(char *out, size_t out_size, uint8_t hash[32]);

/* Checks the request's bearer token (Authorization: Bearer) and records
 * what it allows in req; ZC_EOK, or a code after an error (400, 401, or
 * the store's) was recorded in req. */
int api_authenticate(api_req_t *req);

/* api_authenticate()'s checks that need no records store: one
 * Authorization field, a bearer token in it. Run
 * before a store connection is taken, so that a request without
 * credentials holds none of them (nor waits for one). */
int api_credentials_present(api_req_t *req);

/* After api_authenticate() and the route table: false, with 403 recorded,
 * for a read-only token and a method that is not GET. */
bool api_method_permitted(api_req_t *req);

/* Checks the token's scope for a zone (0: account-level) and writes. */
bool api_allowed(api_req_t *req, int64_t zone_id, bool write);
