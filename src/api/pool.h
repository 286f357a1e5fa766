/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to api/: the records store connection pool (pool.c). */
#pragma once

#include "api/internal.h"

/* How long a request waits for a connection of the pool when every one
 * is in use (each is held for its request's length, a write's wait for
 * the writer included), before it is answered 503. */
#define API_POOL_WAIT_S 10

/* Connections of the pool that only writes (requests other than GET and
 * HEAD) take: reads, a read-only token's included, that scan a large zone
 * for seconds (a `name.contains=` filter over 1,000,000 records takes
 * 2 s) cannot hold every connection and keep writes waiting into 503s
 * (outside tester 40: 24 such readers under the per-address limit). */
#define API_POOL_WRITE_RESERVE 4
/* And those only reads take, for the same reason the other way: 16
 * writes waiting on a long import held every connection, and every read
 * got 503 after 10 s (outside tester 42). */
#define API_POOL_READ_RESERVE 4

/* Takes a free connection (a read the lowest of the first API_POOL_SIZE -
 * API_POOL_WRITE_RESERVE, a write the highest of the last API_POOL_SIZE -
 * API_POOL_READ_RESERVE), waiting up to API_POOL_WAIT_S for one, and
 * opens it at its first use (outside the lock: a PostgreSQL connection
 * takes round trips). ZC_EOK, or records_open()'s error, or ZC_EBUSY with
 * *full set: none came free in time, or the API stops (api_stop() wakes
 * the waits). */
int api_pool_get(api_t *api, bool read, int *slot, records_store_t **out,
                 bool *full);
void api_pool_put(api_t *api, int slot);

/* Gives the request's connection back to the pool before its handler
 * waits on something else (a propagation receipt's wait, a retry's): a
 * wait must not hold one of the pool's connections, or a few long polls
 * stop every other request. req->rs is NULL afterwards; nothing may be
 * open on it (no transaction). api_dispatch() calls it at the end. */
void api_store_release(api_req_t *req);
