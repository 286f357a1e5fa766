/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Query answering: one DNS message in, one response out, from the edge
 * store only.
 *
 * Each worker owns an answer_ctx_t: its arena (reset per message, so the
 * steady state does no malloc) and its cached LMDB read transaction
 * (renewed per message, so a builder commit is visible to the very next
 * query).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/arena.h"
#include "edge/edge.h"
#include "signer/signer.h"

/* Largest UDP payload zonecast sends with EDNS (RFC 9715 / DNS flag day
 * 2020: 1232 bytes avoids IP fragmentation). */
#define ANSWER_EDNS_PAYLOAD 1232

typedef struct {
	edge_store_t *edge;
	edge_txn_t txn;
	zc_arena_t arena;
	const char *nsid;     /* NSID (RFC 5001) to send, or NULL. */
	size_t nsid_len;
	/* Online signing: the signature cache, and the keys of the signed
	 * zone answered last (reloaded when its edge value changes). */
	signer_cache_t *sigcache;
	uint64_t ks_zone;
	uint8_t *ks_raw;
	size_t ks_len;
	signer_keyset_t ks;
	bool ks_valid;
	bool ks_refused;      /* ks_raw did not load (logged once). */
	/* DNS Cookies (server/cookie.h): the server secret (NULL: cookies
	 * off) and, set by the caller before each message, the client's
	 * address (NULL: the COOKIE option is ignored). */
	const uint8_t *cookie_secret;
	const struct sockaddr_storage *client;
	bool cookie_valid;    /* Out: the last query had our server cookie. */
	/* Octets the caller adds to a UDP answer once made (a TSIG RR):
	 * the answer keeps within the requester's payload less these (a
	 * signed answer went past it, or out unsigned: outside tester 36). */
	uint16_t udp_reserve;
	/* CH TXT id.server./hostname.bind. and version.server./version.bind.
	 * (RFC 4892, server/chaos.c); NULL: hidden (REFUSED). Set by the
	 * caller after answer_ctx_init(). */
	const char *identity;
	const char *version;
	/* Out, for the worker's counters (stats.h): the last response's
	 * full RCODE when it was answered past the header checks (-1: read
	 * it from the header), and its cookie outcome (0: unchecked, else
	 * cookie_result_t + 1). */
	int rcode;
	unsigned cookie_result;
} answer_ctx_t;

/* Signatures kept per worker by default. */
#define ANSWER_SIGCACHE_SLOTS 65536

/* sig_slots: signatures the context caches (0: ANSWER_SIGCACHE_SLOTS). */
void answer_ctx_init(answer_ctx_t *ctx, edge_store_t *edge, const char *nsid,
                     size_t sig_slots);
void answer_ctx_deinit(answer_ctx_t *ctx);

/*
 * Answers one message. resp has room for resp_max bytes (65535 for TCP;
 * UDP limits are applied inside from the query's EDNS). Returns the
 * response length, or 0 when the message must be dropped (too short to
 * answer, or itself a response).
 */
size_t answer_message(answer_ctx_t *ctx, const uint8_t *query, size_t qlen,
                      uint8_t *resp, size_t resp_max, bool tcp);
