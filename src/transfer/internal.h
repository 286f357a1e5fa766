/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to transfer/: a thread's request handling (worker.c), the
 * settings a reload changes (live.c), the message writer (out.c), the
 * IXFR condenser (condense.c), and the AXFR and IXFR bodies (axfr.c,
 * ixfr.c). */
#pragma once

#include <pthread.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/packet/pkt.h>

#include "common/arena.h"
#include "dns/tsig.h"
#include "edge/edge.h"
#include "records/records.h"
#include "server/answer.h"
#include "server/cookie.h"
#include "server/server.h"
#include "sigview/sigview.h"
#include "transfer/config.h"
#include "transfer/secondary.h"

/* Largest transfer message (RFC 1035 §4.2.2 framing). */
#define XFR_MSG_MAX 65535

/* --- The OPT of a transfer's messages and errors (edns.c) --- */

/*
 * What the OPT of every message answering one request holds (RFC 6891
 * §7: one when the request had one), worked out once per request: the
 * EDNS version and COOKIE checks the query path makes, NSID (RFC 5001),
 * the server cookie (RFC 7873) and EXPIRE (RFC 7314) when asked for.
 */
typedef struct {
	bool present;             /* The request had an OPT. */
	bool bad_version;         /* EDNS version not 0: BADVERS. */
	bool bad_cookie;          /* A malformed COOKIE: FORMERR. */
	bool dnssec_ok;           /* DO, copied (RFC 3225 §3). */
	const char *nsid;         /* NULL: none (borrowed from the reply). */
	uint16_t nsid_len;
	uint8_t cookie[COOKIE_OPTION_MAX]; /* The COOKIE option's data. */
	uint16_t cookie_len;      /* 0: none. */
	bool want_expire;
	bool expire_known;        /* expire holds the zone's. */
	uint8_t expire[4];
} xfr_opt_t;

/* Works out o for the request q from from, under the settings edns of
 * the worker that took it. */
void xfr_opt_prepare(xfr_opt_t *o, const knot_pkt_t *q,
                     const server_edns_t *edns,
                     const struct sockaddr_storage *from);

/* The zone is known: EXPIRE, when asked for, gives its SOA's (soa: its
 * rdata). */
void xfr_opt_zone(xfr_opt_t *o, const uint8_t *soa, size_t soa_len);

/* Octets the OPT of o takes in a message (0: none); what a message
 * reserves (knot_pkt_reserve) before its RRs. */
size_t xfr_opt_size(const xfr_opt_t *o);

/* Puts the OPT of o in pkt's additional section with the upper bits of
 * an extended rcode, into the room xfr_opt_size() reserved. */
int xfr_put_opt(knot_pkt_t *pkt, const xfr_opt_t *o, uint8_t ext_rcode);

/* --- Request handling (worker.c) --- */

/* The settings a reload may change (live.c): lock guards the rest. */
typedef struct xfr_live {
	pthread_mutex_t lock;
	zc_acl_t allow;           /* allow-transfer: addresses */
	secondary_keys_t keys;    /* allow-transfer: "key NAME" entries */
	unsigned max_fudge;       /* tsig-max-fudge */
} xfr_live_t;

/*
 * What serving requests takes, owned by one thread: each pool thread has
 * one, and the transfer fuzz target drives one on its own thread.
 */
typedef struct {
	const transfer_config_t *cfg;
	xfr_live_t *live;         /* NULL: cfg's allow_transfer and fudge. */
	const atomic_bool *stop;  /* Set: transfers in progress abort. */
	records_store_t *rs;      /* Opened at the first request. */
	sigview_reader_t *view;   /* Signed zones; opened when first needed. */
	edge_txn_t txn;
	zc_arena_t arena;         /* Request parse; reset per request. */
	zc_arena_t node_arena;    /* Decoded nodes; reset per node. */
	answer_ctx_t answer;      /* Signed queries. */
	uint8_t buf[XFR_MSG_MAX];
} xfr_worker_t;

void xfr_live_init(xfr_live_t *l, const transfer_config_t *cfg);
void xfr_live_deinit(xfr_live_t *l);
/* Copies allow and keys (NULL: none) and sets the fudge. */
void xfr_live_set(xfr_live_t *l, const zc_acl_t *allow,
                  const secondary_keys_t *keys, unsigned max_fudge);
/* What the worker judges its current request by. */
unsigned xfr_live_max_fudge(const xfr_worker_t *w);
bool xfr_live_allows(const xfr_worker_t *w,
                     const struct sockaddr_storage *from);
bool xfr_live_allows_key(const xfr_worker_t *w, const uint8_t *key_name);

/* cfg and stop must outlive the worker. */
void xfr_worker_init(xfr_worker_t *w, const transfer_config_t *cfg,
                     const atomic_bool *stop);
void xfr_worker_deinit(xfr_worker_t *w);

/*
 * Serves one request in msg (len bytes, which the parse may modify): a
 * transfer, or with query set a signed query (over TCP or UDP). Ends in
 * exactly one server_reply_send() on reply.
 */
void xfr_worker_serve(xfr_worker_t *w, uint8_t *msg, size_t len,
                      const struct sockaddr_storage *from, bool query,
                      bool tcp, server_reply_t *reply);

/* Answers with a header (and the question when the message has one that
 * parses) and an rcode: for a request no worker takes (the pool busy or
 * stopping) or one that cannot be parsed. */
void xfr_send_header_error(server_reply_t *reply, const uint8_t *msg,
                           size_t len, uint8_t rcode);

/*
 * The output of one transfer: packs RRs into messages, signs each one when
 * the request was signed, writes all but the last to the connection. The
 * error is sticky: puts after a failure do nothing.
 */
typedef struct {
	const knot_pkt_t *q;
	dns_tsig_t *tsig;
	server_reply_t *reply;
	const xfr_opt_t *opt;     /* Every message's OPT. */
	const atomic_bool *stop;  /* Set: abort between messages. */
	knot_pkt_t *pkt;
	uint8_t *buf;             /* XFR_MSG_MAX bytes. */
	uint64_t rrs;             /* RRs put, all messages. */
	uint64_t messages;        /* Messages written or sent. */
	bool started;             /* A write was tried: the stream began. */
	int error;
} xfr_out_t;

/* Starts the first message (a response to q) in buf. */
int xfr_out_init(xfr_out_t *out, const knot_pkt_t *q, const xfr_opt_t *opt,
                 dns_tsig_t *tsig, server_reply_t *reply, uint8_t *buf,
                 const atomic_bool *stop);

/* Puts an RRset (split over messages when it does not fit in one). */
void xfr_out_put(xfr_out_t *out, const knot_rrset_t *rr);

/*
 * Sends the last message and releases the reply; after a failure closes
 * the connection instead (or, when no write was tried yet, answers
 * SERVFAIL). Returns the sticky error. Frees the packet.
 */
int xfr_out_finish(xfr_out_t *out);

/* Frees the packet without sending anything (the reply stays owed). */
void xfr_out_deinit(xfr_out_t *out);

/* --- IXFR condensing (condense.c) --- */

/*
 * The net difference of a sequence of record events: each record (owner,
 * type, rdata) keeps the state before the first event and after the last.
 * Added then deleted: nothing; deleted then added with the same TTL:
 * nothing; with another TTL: deleted (old TTL) and added (new TTL).
 */
typedef struct xfr_diff xfr_diff_t;

int xfr_diff_new(xfr_diff_t **out);
void xfr_diff_free(xfr_diff_t *d);

/* Records one event (a records_journal_read() callback; ctx the diff). */
int xfr_diff_add(const records_journal_rr_t *rr, void *ctx);

/* One RR of the result. Pointers valid while the diff lives. */
typedef struct {
	const knot_dname_t *owner;
	uint16_t type;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
} xfr_diff_rr_t;

/* Calls cb for each deleted (added false) or added RR, in the order of
 * their first event; cb returns non-zero to stop. */
void xfr_diff_foreach(const xfr_diff_t *d, bool added,
                      int (*cb)(const xfr_diff_rr_t *rr, void *ctx),
                      void *ctx);

/* Number of deleted or added RRs in the result. */
size_t xfr_diff_count(const xfr_diff_t *d, bool added);

/* The first SOA the events delete (TTL and rdata, its serial field as
 * stored): the SOA before its fields or TTL changed. False when no event
 * deletes one (they did not change). */
bool xfr_diff_old_soa(const xfr_diff_t *d, uint32_t *ttl,
                      const uint8_t **rdata, uint16_t *len);

/* --- AXFR and IXFR bodies --- */

/* One transfer being served, from one edge read transaction. */
typedef struct {
	edge_txn_t *txn;
	edge_zone_t zone;          /* The served version: serial E. */
	records_store_t *rs;
	zc_arena_t *arena;         /* Reset per node. */
	xfr_out_t *out;
	sigview_reader_t *view;    /* A signed zone: served from the view. */
	bool axfr_form;            /* IXFR answered as a full zone. */
	bool up_to_date;           /* IXFR: a single SOA. */
	uint32_t client_serial;    /* IXFR: S. */
} xfr_req_t;

/* Room for the rdata of an SOA built by xfr_soa(). */
#define XFR_SOA_BUF (4 + EDGE_SOA_MAXLEN)

/* Makes the zone's SOA from its metadata with the given serial; its
 * rdata lives in buf (XFR_SOA_BUF bytes). */
void xfr_soa(const edge_zone_t *zone, uint32_t serial, uint8_t *buf,
             knot_rrset_t *soa);

/* RFC 5936 §2.2: SOA, every RRset of the zone, SOA (of a signed zone,
 * the view's: its RRSIGs and NSEC chain too). */
int axfr_run(xfr_req_t *req);

/* RFC 1995 §4: one condensed difference sequence, a single SOA when the
 * client is up to date, or the AXFR form when the journal is short. */
int ixfr_run(xfr_req_t *req);
