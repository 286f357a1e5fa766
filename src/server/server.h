/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNS server: UDP and TCP listeners answering from the edge store.
 *
 * Design
 *
 * For every listen address, each of the N workers owns its own UDP socket
 * and its own TCP listening socket, all bound with SO_REUSEPORT so the
 * kernel spreads clients over workers; server_bind() makes sure that no
 * other process shares them (listen.c). A UDP worker reads and answers
 * batches with recvmmsg/sendmmsg; a TCP worker runs an epoll loop over its
 * connections (RFC 7766: length framing, pipelined queries answered in
 * order, idle timeout). Each worker has its own answer_ctx_t (arena and
 * cached LMDB read transaction): workers share nothing but the read-only
 * edge store, so no locks are taken on the query path.
 *
 * Messages that need more than the edge store (UPDATE, which writes
 * through the group committer, and AXFR/IXFR over TCP, which stream a
 * zone) go to hooks with a server_reply_t and are answered later from
 * another thread, so a worker never waits for an fsync or a transfer:
 * UDP replies are sent with sendto(), TCP replies are queued to the
 * connection's worker through its mailbox (and stay in order for one
 * connection, as the hooks complete in order).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "edge/edge.h"
#include "server/rrl.h"
#include "server/stats.h" /* server_counts_get(): the workers' counters. */

#define SERVER_MAX_LISTEN 16
#define SERVER_NSID_MAX 256

typedef struct {
	const char *listen[SERVER_MAX_LISTEN]; /* "ADDR:PORT", "[V6]:PORT" */
	size_t listen_count;
	unsigned workers;              /* 0: one per core */
	const char *nsid;              /* NULL: no NSID */
	const char *identity;          /* CH TXT id.server. (NULL: REFUSED) */
	const char *version;           /* CH TXT version.bind. (NULL: REFUSED) */
	unsigned tcp_idle_timeout_ms;  /* RFC 7766 §6.2.3 */
	unsigned tcp_max_clients;      /* Per worker and address. */
	unsigned tcp_max_clients_per_ip; /* Across workers (0: no limit). */
	unsigned tcp_max_pending;      /* Deferred replies per connection. */
	unsigned signature_cache;      /* RRSIGs cached per worker (0: default). */
	bool cookies;                  /* DNS Cookies (RFC 7873, 9018). */
	uint8_t cookie_secret[16];     /* All zero: random at start. */
	rrl_config_t rrl;              /* UDP response rate limiting (rate 0: off). */
} server_config_t;

typedef struct server server_t;

/* A message answered later, from any thread (server/reply.c). */
typedef struct server_reply server_reply_t;

/* Handlers for messages the workers do not answer themselves. The message
 * is only valid during the call. Each call must end, eventually, in
 * exactly one server_reply_send() on `reply`. */
typedef struct {
	void (*update)(void *ctx, const uint8_t *msg, size_t len,
	               const struct sockaddr_storage *from, bool tcp,
	               server_reply_t *reply);
	/* AXFR/IXFR over TCP: the handler owns the connection's output until
	 * it calls server_reply_send() (server_reply_write() in between). */
	void (*transfer)(void *ctx, const uint8_t *msg, size_t len,
	                 const struct sockaddr_storage *from,
	                 server_reply_t *reply);
	/* Any other message carrying a TSIG (the answer must be signed). */
	void (*signed_query)(void *ctx, const uint8_t *msg, size_t len,
	                     const struct sockaddr_storage *from, bool tcp,
	                     server_reply_t *reply);
	void *update_ctx;
	void *transfer_ctx;
	void *signed_ctx;
} server_hooks_t;

/*
 * Sends the (last) response and releases reply. len 0 sends nothing (a
 * TCP connection is then closed). Any thread.
 */
void server_reply_send(server_reply_t *reply, const uint8_t *msg, size_t len);

/*
 * As server_reply_send(), the response to be TSIG-signed (RFC 8945) with
 * tsig (copied) first: for TCP by the connection's worker when it takes
 * the reply, so the thread answering (the group committer for UPDATE)
 * does not spend its time on HMACs.
 */
struct dns_tsig;
void server_reply_send_signed(server_reply_t *reply, const uint8_t *msg,
                              size_t len, const struct dns_tsig *tsig);

/*
 * The connection a TCP reply goes to, NULL for UDP: replies with the same
 * one must be sent in the order their messages came (UPDATE answers that
 * wait for the builder keep that order, builder_waiter_t.order). Only an
 * identity: never dereferenced.
 */
const void *server_reply_stream(const server_reply_t *reply);

/*
 * The EDNS settings of the worker that took a deferred message, for the
 * answer its hook makes (signed queries, transfers): NSID (RFC 5001) and
 * the DNS Cookie secret (RFC 7873), as the worker answers its own queries
 * (they went without both: outside tester 35). Copied when the reply is
 * made, so a reload in between changes nothing of one answer.
 */
typedef struct {
	char nsid[SERVER_NSID_MAX];    /* "": none. */
	const uint8_t *cookie_secret;  /* NULL: cookies off. */
	uint8_t secret[16];            /* What cookie_secret points to. */
} server_edns_t;

/* Sets reply's EDNS settings (nsid NULL or "": none; cookie_secret NULL:
 * cookies off). A reply made without gets none. */
void server_reply_set_edns(server_reply_t *reply, const char *nsid,
                           const uint8_t *cookie_secret);

/* The EDNS settings reply was made with (never NULL). */
const server_edns_t *server_reply_edns(const server_reply_t *reply);

/*
 * Transfers only: writes one more framed message on the TCP connection
 * now, waiting up to the idle timeout for the client to take it.
 * ZC_EOK, or an error when the client is gone or too slow.
 */
int server_reply_write(server_reply_t *reply, const uint8_t *msg, size_t len);

/* Transfers: once *stop is set, a server_reply_write() waiting for the
 * client gives up (-ECANCELED) within 100 ms, not at the idle timeout. */
void server_reply_set_stop(server_reply_t *reply, const atomic_bool *stop);

/*
 * A reply that hands its messages to fn instead of a connection, on the
 * calling thread (how the transfer fuzz target sees what a transfer
 * sends). It takes server_reply_write() as a TCP transfer reply does:
 * fn(ctx, msg, len, false), whose return value the write returns; then
 * server_reply_send() calls fn(ctx, msg, len, true) and frees it.
 */
typedef int (*server_reply_fn)(void *ctx, const uint8_t *msg, size_t len,
                               bool last);
server_reply_t *server_reply_sink(server_reply_fn fn, void *ctx);

/* Every listen socket of a server, bound before it starts (listen.c). */
typedef struct server_sockets server_sockets_t;

/*
 * Binds every address of cfg for its workers, for this process alone: an
 * address another process holds (another zonecast, any server, even one
 * with SO_REUSEPORT) fails with -EADDRINUSE, logged with the address.
 * Call it early, before work that a refusal should not leave behind.
 */
int server_bind(const server_config_t *cfg, server_sockets_t **out);

/* Closes the sockets (NULL: no-op). */
void server_sockets_free(server_sockets_t *s);

/*
 * Starts the workers on the sockets server_bind() bound for the same cfg
 * (takes ownership of sockets, also on failure). Fails with nothing left
 * running.
 */
int server_start(const server_config_t *cfg, server_sockets_t *sockets,
                 edge_store_t *edge, const server_hooks_t *hooks,
                 server_t **out);

/* Stops and joins every worker, closes sockets, frees s (NULL: no-op). */
void server_stop(server_t *s);

/*
 * Applies what of cfg a running server can change (reload): NSID, cookies
 * and their secret (all zero keeps the current secret), tcp_idle_timeout_ms,
 * tcp_max_clients, tcp_max_clients_per_ip, tcp_max_pending, and response
 * rate limiting but its table size (RRL turned on for the first time gets
 * a table of cfg's size). Each worker takes them before its next message;
 * the rest of cfg is ignored. ZC_EOK, or KNOT_ENOMEM with nothing changed.
 */
int server_reconfigure(server_t *s, const server_config_t *cfg);

/* Counters for `zonecast status`, summed over the workers (each read
 * without a lock, so a sum may be a moment old). */
typedef struct {
	uint64_t rrl_dropped;
	uint64_t rrl_slipped;
	uint64_t signature_hits;
	uint64_t signature_misses;
	unsigned workers;          /* Per address. */
} server_stats_t;

void server_stats(server_t *s, server_stats_t *out);
