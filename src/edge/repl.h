/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Replication log of the edge store: what a fleet of edges applies to end
 * with the primary's edge store, transaction for transaction.
 *
 * Design
 *
 * The log sits at the lowest level, under every writer of the edge store
 * (builder passes, full builds, zone creation and deletion, keys, the CLI
 * processes): each mutation of a replicated table (zones, nodes, keys) in a
 * write transaction appends an op (put key value, delete key, delete a key
 * prefix, drop the table) to the transaction's op list, and the commit
 * writes the list to the `outbox` table *in the same LMDB transaction* under
 * a new commit id (meta "repl_commit" + 1; LMDB's single writer orders
 * them). A transaction is therefore in the outbox exactly when it is in the
 * store: nothing committed can be skipped, whoever committed it.
 *
 * A commit's op list is one byte stream cut into parts of at most
 * EDGE_REPL_PART_MAX bytes (only an op larger than that straddles parts,
 * flagged EDGE_REPL_CONT), keyed by commit
 * id and part number, the last part flagged. The publisher (fleet/) sends
 * the parts in key order and deletes them once JetStream has them; an edge
 * applies the parts of one commit in one LMDB transaction, so it shows
 * whole commits only.
 *
 * Recording is on while meta "repl_on" is 1 (a primary serving with NATS
 * turns it on). History is named by an epoch (meta "repl_epoch", random):
 * a new one starts whenever changes may have been made unrecorded (recording
 * was off, the store was new); edges seeing a new epoch bootstrap from a
 * snapshot (edge_repl_snapshot), which is the same op stream: drop every
 * table, then put every entry.
 *
 * Op encoding: u8 op, u8 table, u16 key length, u32 value length, key,
 * value. Outbox key: u64 commit, u32 part (big-endian); value: u8 flags
 * (EDGE_REPL_FINAL), then the part's bytes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edge/edge.h"

#define EDGE_REPL_PART_MAX (768u * 1024u)
/* Largest value an op may carry (larger: a malformed stream). */
#define EDGE_REPL_VALUE_MAX (64u << 20)
#define EDGE_REPL_FINAL 0x01
/* The part begins inside an op started in the previous part (only ops
 * larger than a part straddle). */
#define EDGE_REPL_CONT 0x02

/* Position of the replication log, read in one transaction. */
typedef struct {
	bool on;
	uint64_t epoch;
	uint64_t commit;  /* Last commit id given out. */
} edge_repl_pos_t;

int edge_repl_pos(edge_store_t *store, edge_repl_pos_t *pos);

/*
 * Turns recording on or off. Turning it on when it was off starts a new
 * epoch (commit ids from 0, outbox emptied); turning it off empties the
 * outbox. *pos gets the position after.
 */
int edge_repl_enable(edge_store_t *store, bool on, edge_repl_pos_t *pos);

/* Called (in the committing thread) after each local commit that appended
 * to the outbox. Set once before other threads write. */
void edge_repl_on_outbox(edge_store_t *store, void (*cb)(void *ctx),
                         void *ctx);

/* One outbox entry, borrowed for the callback. */
typedef struct {
	uint64_t commit;
	uint32_t part;
	uint8_t flags;
	const uint8_t *data;
	size_t len;
} edge_repl_part_t;

/*
 * Calls cb for the outbox entries in order, starting after (commit, part)
 * (0, UINT32_MAX: from the start), at most max entries; cb returns non-zero
 * to stop. Returns the number of entries passed or a negative code.
 */
int edge_repl_outbox_read(edge_store_t *store, uint64_t after_commit,
                          uint32_t after_part, size_t max,
                          int (*cb)(const edge_repl_part_t *part, void *ctx),
                          void *ctx);

/* Deletes the outbox entries up to and including (commit, part). */
int edge_repl_outbox_trim(edge_store_t *store, uint64_t commit, uint32_t part);

/*
 * Writes a snapshot of the replicated tables as an op stream, cut into
 * parts of at most EDGE_REPL_PART_MAX bytes passed to cb (last one flagged
 * final), read in one transaction whose position is returned in *pos.
 */
int edge_repl_snapshot(edge_store_t *store, edge_repl_pos_t *pos,
                       int (*cb)(const edge_repl_part_t *part, void *ctx),
                       void *ctx);

/*
 * Applying a stream at an edge: the parts of one commit go through one
 * applier (one write transaction): begin, feed each part's bytes, then
 * finish (commits, recording the position) or abort. Ops that straddle
 * parts are carried over.
 */
typedef struct {
	edge_txn_t txn;
	uint8_t *carry;
	size_t carry_len, carry_cap;
	uint64_t ops;
} edge_applier_t;

int edge_apply_begin(edge_store_t *store, edge_applier_t *ap);
int edge_apply_feed(edge_applier_t *ap, const uint8_t *data, size_t len);
int edge_apply_finish(edge_applier_t *ap, uint64_t epoch, uint64_t commit,
                      uint64_t stream_seq);
void edge_apply_abort(edge_applier_t *ap);

/* The position an edge has applied (meta "fleet_epoch", "fleet_commit",
 * and "fleet_seq", the stream sequence of the commit's last message). */
int edge_applied_pos(edge_store_t *store, uint64_t *epoch, uint64_t *commit,
                     uint64_t *stream_seq);

/* Decodes a part's zone puts (for receipts): cb per zone value. Parts
 * flagged EDGE_REPL_CONT have none. */
int edge_repl_zone_puts(const uint8_t *data, size_t len,
                        void (*cb)(const uint8_t *val, size_t len, void *ctx),
                        void *ctx);

/*
 * A digest of the replicated tables (every key and value in order) and
 * their entry count, read in one transaction: equal stores, equal digests.
 */
int edge_repl_digest(edge_store_t *store, uint64_t *digest, uint64_t *entries);
