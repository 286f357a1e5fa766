/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNS server: UDP and TCP listeners answering from the edge store.
 *
 * Design
 *
 * For every listen address, each of the N workers owns its own UDP socket
 * and its own TCP listening socket, all bound with SO_REUSEPORT so the
 * kernel spreads clients over workers. A UDP worker reads and answers
 * batches with recvmmsg/sendmmsg; a TCP worker runs an epoll loop over its
 * connections (RFC 7766: length framing, pipelined queries answered in
 * order, idle timeout). Each worker has its own answer_ctx_t (arena and
 * cached LMDB read transaction): workers share nothing but the read-only
 * edge store, so no locks are taken on the query path.
 */
#pragma once

#include <stddef.h>
#include <sys/socket.h>

#include "edge/edge.h"

#define SERVER_MAX_LISTEN 16

typedef struct {
	const char *listen[SERVER_MAX_LISTEN]; /* "ADDR:PORT", "[V6]:PORT" */
	size_t listen_count;
	unsigned workers;              /* 0: one per core */
	const char *nsid;              /* NULL: no NSID */
	unsigned tcp_idle_timeout_ms;  /* RFC 7766 §6.2.3 */
	unsigned tcp_max_clients;      /* Per worker and address. */
} server_config_t;

typedef struct server server_t;

/*
 * Binds every address and starts the workers. Fails (nothing left
 * running) when an address cannot be bound.
 */
int server_start(const server_config_t *cfg, edge_store_t *edge,
                 server_t **out);

/* Stops and joins every worker, closes sockets, frees s (NULL: no-op). */
void server_stop(server_t *s);

/* Parses "1.2.3.4:53", "[::1]:53" into a socket address. */
int server_parse_addr(const char *text, struct sockaddr_storage *ss,
                      socklen_t *len);
