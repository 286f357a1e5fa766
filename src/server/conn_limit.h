/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TCP connections per client, counted across every TCP worker (the
 * kernel spreads one client's connections over the workers' sockets, so
 * a per-worker count would multiply the limit by the worker count).
 *
 * Counts live in a fixed table of atomic counters indexed by a keyed hash
 * of the client's address (IPv4: the address; IPv6: its /64, what one
 * host usually holds). Two clients whose hashes meet share a counter: the
 * limit is then shared, never exceeded.
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

typedef struct conn_limit conn_limit_t;

/* NULL when out of memory. per_client 0: no limit, connections are
 * still counted (so that a limit set later counts them). */
conn_limit_t *conn_limit_new(unsigned per_client);
void conn_limit_free(conn_limit_t *cl);

/* Changes the limit (a reload); connections over a lowered limit stay. */
void conn_limit_set(conn_limit_t *cl, unsigned per_client);

/* Counts one more connection from addr; false (nothing counted) when
 * the client already has per_client. NULL cl: always true. */
bool conn_limit_acquire(conn_limit_t *cl, const struct sockaddr_storage *addr);
/* Uncounts a connection acquire() counted. */
void conn_limit_release(conn_limit_t *cl, const struct sockaddr_storage *addr);
