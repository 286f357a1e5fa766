/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Edge store: what the DNS server reads (LMDB).
 *
 * Design
 *
 * Three LMDB databases in one file (DATA_DIR/edge.mdb):
 *
 *   zones  key "." + apex LF            value zone metadata (codec.h)
 *   nodes  key zone id (u64 BE) + LF of the owner relative to the apex
 *          value node: RRsets in wire form, flags, writing seq (codec.h)
 *   meta   key text                     value u64 BE ("applied_seq")
 *   keys   key zone id (u64 BE)         value the zone's signing keys
 *   quarantine  key zone id (u64 BE)    value why the zone's builds fail
 *          (codec.h); the DNS server keeps answering from the zone's last
 *          good build meanwhile
 *
 * LF is the reversed-label lookup form of dns/name.h, so a zone's nodes are
 * one contiguous key range, a node's descendants follow it directly, and
 * the key of every ancestor of a name is a prefix of the name's key.
 *
 * The edge store is derived data: it can always be rebuilt from the records
 * store. It is therefore opened with MDB_NOSYNC: a killed process loses
 * nothing (pages are in the OS cache), and after an operating-system crash
 * the builder's full pass repairs it from the records store.
 *
 * Fencing: every node carries the change-log sequence of the build that
 * wrote it, and a write or delete with an older sequence than the stored
 * node's is skipped (edge_txn_put_node); so is a zone metadata write older
 * than the stored metadata of the same zone (edge_txn_put_zone). LMDB
 * admits one writer at a time, across processes, so the check and the
 * write are atomic.
 *
 * Readers use MVCC read transactions that never block the writer: a worker
 * keeps one transaction, renews it per query and resets it after, so a
 * builder commit is visible to the very next query.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dns/name.h"
#include "edge/codec.h"

typedef struct edge_store edge_store_t;

/* A read or write transaction. Caller storage; not shared by threads. */
typedef struct edge_txn {
	edge_store_t *store;
	struct MDB_txn *txn;
	bool write;
	bool active;
	struct edge_txn *parent; /* A nested transaction's parent, or NULL. */
	int slot;       /* Internal: the thread's slot while active. */
	struct edge_rec *rec; /* Internal: replication ops of a write. */
} edge_txn_t;

/*
 * Opens (creating if needed) DIR/edge.mdb. map_size 0 takes the default
 * (64 GiB of address space; the file only grows as used). The caller frees
 * it with edge_close().
 */
int edge_open(edge_store_t **out, const char *dir, size_t map_size);

/*
 * Opens DIR/edge.mdb read-only, for tools that only look (fleet digest,
 * verify): no write transaction is begun, so it never waits for another
 * process's writer (an edge holding one in the middle of a commit), and
 * nothing is created (an absent table: an error). Only read transactions
 * may be used on it.
 */
int edge_open_readonly(edge_store_t **out, const char *dir);

void edge_close(edge_store_t *store);

/* Starts a read transaction (renews a reset one). */
int edge_txn_begin_read(edge_store_t *store, edge_txn_t *txn);

/* Ends a read transaction but keeps its slot for the next begin. */
void edge_txn_reset(edge_txn_t *txn);

/* Releases a transaction completely (read or write, aborting a write). */
void edge_txn_abort(edge_txn_t *txn);

/* Starts the (single, cross-process) write transaction. */
int edge_txn_begin_write(edge_store_t *store, edge_txn_t *txn);

/* Commits a write transaction. ZC_EMAPFULL (here or from a write): abort,
 * edge_grow(), redo it. */
int edge_txn_commit(edge_txn_t *txn);

/*
 * Starts a transaction nested in the write transaction `parent` (LMDB
 * nested transactions): its writes, and the replication ops they record,
 * join the parent's on edge_txn_commit(child) or vanish on
 * edge_txn_abort(child), so one zone's failed build can be dropped from a
 * transaction holding others (one commit of the replication log all the
 * same). The parent may not be used until the child ends.
 */
int edge_txn_begin_nested(edge_txn_t *parent, edge_txn_t *child);

/*
 * Doubles the map after ZC_EMAPFULL. It waits (a bounded while) until no
 * thread of the process is inside a transaction, holding new ones back;
 * the caller must have none open. ZC_EBUSY when transactions did not end
 * in time (a long transfer): try again later.
 */
int edge_grow(edge_store_t *store);

/* The map's size and how much of it the data uses (its last page), in
 * bytes: what the metrics endpoint shows of LMDB. */
void edge_map_usage(edge_store_t *store, uint64_t *used, uint64_t *size);

/*
 * Space reserved ahead of the data: the file keeps `bytes` allocated past
 * its last page (fallocate, KEEP_SIZE), topped up after every commit, so
 * that when the disk fills up the builder can still apply what the writer
 * acknowledged. 0 turns it off. Set once, before other threads use store.
 */
void edge_set_reserve(edge_store_t *store, size_t bytes);

/* Tops the reserve up if needed; ZC_EOK, or why it cannot (-ENOSPC,
 * -EROFS), which edge_space_error() then reports until it succeeds. */
int edge_reserve_check(edge_store_t *store);
int edge_space_error(edge_store_t *store);

/*
 * Finds the zone enclosing a name given in LF (longest apex that is a
 * label-aligned prefix). Fills *zone and *apex_lf_len. ZC_ENOZONE if none.
 */
int edge_zone_find(edge_txn_t *txn, const uint8_t *lf, size_t lf_len,
                   edge_zone_t *zone, size_t *apex_lf_len);

/* Reads the zone with exactly this apex (wire name). ZC_ENOZONE if none. */
int edge_zone_get(edge_txn_t *txn, const knot_dname_t *apex,
                  edge_zone_t *zone);

/*
 * Gets a node value by zone id and relative LF. The value is borrowed and
 * valid until the transaction ends. KNOT_ENOENT if absent.
 */
int edge_node_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                  size_t rel_len, const uint8_t **val, size_t *val_len);

/* True when any node lies strictly below the given relative LF. */
bool edge_node_has_below(edge_txn_t *txn, uint64_t zone_id,
                         const uint8_t *rel, size_t rel_len);

/* Cursor over a zone's nodes in key order. */
typedef struct {
	struct MDB_cursor *cur;
	uint64_t zone_id;
	bool started;
	uint8_t from[DNS_LF_KEY_MAXLEN]; /* Relative LF to start at (inclusive). */
	size_t from_len;
} edge_iter_t;

int edge_iter_begin(edge_txn_t *txn, uint64_t zone_id, edge_iter_t *it);

/* As edge_iter_begin(), starting at the first node >= rel (resuming a
 * walk in a new transaction). */
int edge_iter_begin_at(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, edge_iter_t *it);

/*
 * Moves to the next node: 1 and borrowed key (relative LF) and value, 0 at
 * the end of the zone, or a negative code.
 */
int edge_iter_next(edge_iter_t *it, const uint8_t **rel, size_t *rel_len,
                   const uint8_t **val, size_t *val_len);

void edge_iter_end(edge_iter_t *it);

/*
 * Writes a node value (its seq is read from the value). Skipped, returning
 * ZC_ESTALE, when the stored node carries a newer seq.
 */
int edge_txn_put_node(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                      size_t rel_len, const uint8_t *val, size_t val_len);

/* Deletes a node unless it carries a seq newer than `seq` (ZC_ESTALE). */
int edge_txn_del_node(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                      size_t rel_len, uint64_t seq);

/*
 * Staging of a full build that runs in several transactions (builder
 * steps): its node writes and deletes go to the stage, invisible to
 * queries, and edge_txn_stage_commit() makes them live at once with the
 * zone's metadata, so the zone's new version is never seen half-built.
 * edge_txn_stage_clear() drops what an abandoned build left.
 */
int edge_txn_stage_put(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, const uint8_t *val, size_t val_len);
int edge_txn_stage_del(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, uint64_t seq);
int edge_txn_stage_commit(edge_txn_t *txn, uint64_t zone_id);
int edge_txn_stage_clear(edge_txn_t *txn, uint64_t zone_id);

/*
 * Stores zone metadata under its apex. Fenced like a node: skipped,
 * returning ZC_ESTALE and recording nothing for replication, when the
 * stored metadata is the same zone's (same zone id) and carries a newer
 * seq, so a build that a newer one overtook never moves the serial back.
 * Metadata of another zone id (a zone deleted and made anew) is replaced.
 */
int edge_txn_put_zone(edge_txn_t *txn, const edge_zone_t *zone);

/* Deletes a zone's metadata, every node of its id, its keys and its
 * quarantine entry. */
int edge_txn_del_zone(edge_txn_t *txn, const knot_dname_t *apex,
                      uint64_t zone_id);

/* Reads or writes a u64 in the meta table (0 when absent). */
int edge_meta_get(edge_txn_t *txn, const char *key, uint64_t *value);
int edge_meta_put(edge_txn_t *txn, const char *key, uint64_t value);

/* Empties every table (zones, nodes, meta, keys, quarantine) in a write
 * transaction: a rebuild from the records store follows
 * (builder_edge_prepare). */
int edge_txn_clear(edge_txn_t *txn);

/*
 * For zonecast migrate, which moved the records store to the other
 * numbering of change-log positions (changelog.h, "Positions"): caps the
 * seq of every node and zone metadata at `seq`, the position the edge
 * applied in the new numbering (a fence written in the old one must never
 * hold back a build of the new: every later build writes at or past
 * `seq`), gives every quarantine entry `seq` (the log it had read), and
 * empties the stage (what an abandoned build left). The caller stamps the
 * numbering and applied_seq in the same write transaction. The values
 * rewritten are recorded for the fleet like any write (the quarantine
 * entries are this node's own, as always).
 */
int edge_txn_renumber(edge_txn_t *txn, uint64_t seq);

/*
 * The edge's key format (meta "key_format"): the name encoding of
 * dns/name.h. An edge store written in another format is emptied and
 * rebuilt from the records store when opened by this program.
 *   1 (or absent): labels ended by 0x00, octets 0x00 and 0x01 unescaped
 *   2: octets 0x00 and 0x01 escaped (one-to-one, canonical order)
 */
#define EDGE_KEY_FORMAT 2

/* Lists every zone's metadata; cb returns non-zero to stop. */
int edge_zone_foreach(edge_txn_t *txn,
                      int (*cb)(const edge_zone_t *zone, void *ctx),
                      void *ctx);

/* --- Signing keys of DNSSEC zones (signer/signer.h's keyset form) --- */

/* The zone's keys, borrowed until the transaction ends; ZC_ENOKEY when
 * the zone is not signed. */
int edge_keys_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t **val,
                  size_t *len);

/* Sets (len 0: removes) the zone's keys. */
int edge_txn_put_keys(edge_txn_t *txn, uint64_t zone_id, const uint8_t *val,
                      size_t len);

/* --- Quarantined zones (builder/quarantine.c decides, codec.h) --- */

/* The zone's quarantine entry; KNOT_ENOENT when it has none. */
int edge_quarantine_get(edge_txn_t *txn, uint64_t zone_id,
                        edge_quarantine_t *out);

/* Stores (replaces) the zone's entry. */
int edge_txn_put_quarantine(edge_txn_t *txn, const edge_quarantine_t *q);

/* Removes the zone's entry (none: ZC_EOK). */
int edge_txn_del_quarantine(edge_txn_t *txn, uint64_t zone_id);

/* Calls cb for every entry in zone id order; cb returns non-zero to stop.
 * An entry that does not decode is skipped. */
int edge_quarantine_foreach(edge_txn_t *txn,
                            int (*cb)(const edge_quarantine_t *q, void *ctx),
                            void *ctx);
