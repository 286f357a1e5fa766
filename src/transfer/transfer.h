/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Zone transfers out (AXFR, RFC 5936; IXFR, RFC 1995) and NOTIFY to
 * secondaries (RFC 1996).
 *
 * Design
 *
 * Transfers: the TCP workers hand AXFR/IXFR requests to transfer_handle()
 * (the server's transfer hook), which copies the message and queues it to
 * a pool of max_concurrent threads; past that many queued or running
 * transfers the request is REFUSED at once, so a worker never blocks.
 * Each pool thread owns a records-store connection (TSIG keys, IXFR
 * journal), an arena and a 64 KiB message buffer. A transfer is served
 * from one LMDB read transaction (one consistent zone version): AXFR walks
 * the zone's nodes in key order between two copies of the SOA; IXFR
 * condenses the journal between the client's serial and the served one
 * into one difference sequence (condense.c), or falls back to the AXFR
 * form when the journal does not reach back (RFC 1995 §4). RRs are packed
 * into messages of up to 64 KiB with name compression, each signed when
 * the request was (RFC 8945 §5.3.1); all messages but the last go out
 * with server_reply_write(), the last with server_reply_send().
 *
 * Access: a request signed with a key of the zone that has transfer
 * rights, or with a key listed in allow-transfer (allow_transfer_keys, or
 * the zone's own entries in the records store), or an unsigned one from
 * an address in allow_transfer or the zone's entries. Others get REFUSED;
 * TSIG failures NOTAUTH with the TSIG error (RFC 8945 §5.2); a name that
 * is no zone apex of ours NOTAUTH. The zone's entries are read at each
 * request: a change applies to the next transfer.
 *
 * NOTIFY: a thread (notify.c) that wakes on each builder pass
 * (notify_on_pass(), to register with builder_follower_on_pass()), lists
 * the edge store's zones and sends a NOTIFY for every zone whose serial
 * moved to every target, over UDP, at once, signed when the target names
 * a TSIG key. To a target that answers, at most one NOTIFY per zone is in
 * flight and a serial that moves meanwhile is sent when the response
 * comes (coalescing); to one that does not, a new serial is sent at once,
 * never behind the resends of an older one. Unanswered NOTIFYs are resent
 * after timeout_ms, doubling, up to `retries` times. On start every zone
 * is notified once (as BIND does on load): changes applied while the
 * server was down reach the secondaries without waiting for their
 * refresh. Refusals are logged at warning level, once per target and
 * kind.
 *
 * Shutdown order: transfer_stop() and notify_stop() before server_stop()
 * (in-flight transfers still write to the workers' connections), then
 * transfer_free() after server_stop() (the workers may still call
 * transfer_handle(), which then refuses at once).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/acl.h"
#include "edge/edge.h"
#include "server/server.h"
#include "transfer/config.h"
#include "transfer/secondary.h"


typedef struct transfer transfer_t;

/*
 * Starts the transfer threads. cfg and what it points to must outlive the
 * transfer_t. The caller ends it with transfer_stop() and transfer_free().
 */
int transfer_start(const transfer_config_t *cfg, transfer_t **out);

/*
 * Aborts transfers in progress (their connections are closed), refuses
 * queued ones and joins the threads. Later requests are refused at once.
 * Call before server_stop(). NULL is a no-op.
 */
void transfer_stop(transfer_t *t);

/*
 * The server's signed-query hook (server_hooks_t.signed_query): a query
 * (not a transfer) carrying a TSIG, such as a secondary's SOA check, is
 * answered from the pool with its TSIG checked and the answer signed.
 */
void transfer_signed_query(void *ctx, const uint8_t *msg, size_t len,
                           const struct sockaddr_storage *from, bool tcp,
                           server_reply_t *reply);

/* Frees t after server_stop() (stopping it first if needed). NULL is a
 * no-op. */
void transfer_free(transfer_t *t);

/* Applies a new allow-transfer list, its addresses and its keys (copied;
 * NULL: none), and TSIG time window to a running service (a reload): the
 * next request is judged by them. */
int transfer_reconfigure(transfer_t *t, const zc_acl_t *allow_transfer,
                         const secondary_keys_t *allow_transfer_keys,
                         unsigned tsig_max_fudge);

/*
 * The server's transfer hook (server_hooks_t.transfer, ctx the
 * transfer_t). Copies the message, so it is free to go after the call;
 * always ends in exactly one server_reply_send() on reply, from a pool
 * thread or, when refused at once, before returning.
 */
void transfer_handle(void *ctx, const uint8_t *msg, size_t len,
                     const struct sockaddr_storage *from,
                     server_reply_t *reply);

/* --- NOTIFY (notify.c) --- */

#define NOTIFY_MAX_TARGETS 16

typedef struct {
	const char *const *targets;  /* "ADDR[:PORT] [key NAME]" (secondary.h) */
	size_t target_count;         /* At most NOTIFY_MAX_TARGETS. */
	unsigned retries;            /* Resends of an unanswered NOTIFY. */
	unsigned timeout_ms;         /* Before the first resend (doubling). */
	edge_store_t *edge;
	const char *data_dir;        /* Records store: TSIG keys. */
	/* The serial to announce for a signed zone (edge keys present): 1
	 * and *serial (the signed view's), or -1 while there is none yet
	 * (nothing is sent). NULL: the edge serial (sigview_zone_serial). */
	int (*zone_serial)(void *ctx, int64_t zone_id, uint32_t *serial);
	void *zone_serial_ctx;
} notify_config_t;

typedef struct notify notify_t;

/*
 * Opens a UDP socket per target and starts the notifier thread. With no
 * targets, *out is NULL and nothing runs (every call accepts NULL).
 * ZC_EUSAGE for a target that does not parse.
 */
int notify_start(const notify_config_t *cfg, notify_t **out);

/*
 * The cue for the notifier (ctx the notify_t): sets a flag and wakes the
 * thread; never blocks. Give it to builder_follower_on_pass().
 */
void notify_on_pass(void *ctx);

/* Stops and joins the thread, closes the sockets, frees n (NULL: no-op).
 * Unregister notify_on_pass from the follower first (or stop it). */
void notify_stop(notify_t *n);
