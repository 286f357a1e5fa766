/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Inside the edge store: the environment's layout shared by the LMDB
 * wrapper (store.c) and the replication log (repl_*.c). Not for other
 * folders: they use edge.h and repl.h.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <lmdb.h>

#include "dns/name.h"
#include "edge/edge.h"

#define DEFAULT_MAP_SIZE ((size_t)64 << 30)
#define NODE_KEY_MAX (8 + DNS_LF_KEY_MAXLEN)
#define ZONE_KEY_MAX (1 + DNS_LF_MAXLEN)
/* Reader slots: a thread counts its open transactions in its own slot
 * (one cache line each), so the many DNS workers never share a counter. */
#define SLOTS 64
/* How long a remap waits for open transactions to end before it gives up
 * (to try again later: a long transfer must not stall queries). */
#define REMAP_WAIT_US 100000

typedef struct {
	_Alignas(64) _Atomic unsigned open;
} slot_t;

/* The replicated tables, as repl ops name them. */
enum {
	EDGE_TABLE_ZONES = 0,
	EDGE_TABLE_NODES = 1,
	EDGE_TABLE_KEYS = 2,
	EDGE_TABLE_STAGE = 3,
	EDGE_TABLE_COUNT = 4,
};

struct edge_store {
	slot_t slots[SLOTS];
	MDB_env *env;
	MDB_dbi zones;
	MDB_dbi nodes;
	MDB_dbi meta;
	MDB_dbi keys;   /* Zone id (u64 BE) -> the zone's signing keys. */
	MDB_dbi outbox; /* Replication log not yet published (repl.h). */
	MDB_dbi stage;  /* Nodes of full builds in steps, not yet live. */
	MDB_dbi quarantine; /* Zone id (u64 BE) -> why its builds fail; this
	                     * node's own, not replicated (builder.h). */
	_Atomic bool remapping;        /* New transactions wait meanwhile. */
	pthread_mutex_t remap_lock;    /* One remap at a time. */
	/* Space reserved ahead of the data (fallocate), so that the builder
	 * can apply what the writer acknowledged when the disk fills up. */
	size_t reserve;
	size_t page_size;
	off_t reserved_to;
	_Atomic int space_error;       /* 0, or why the reserve failed. */
	_Atomic int64_t space_logged;
	/* Called after a commit that appended to the outbox (repl.h). */
	void (*on_outbox)(void *ctx);
	void *on_outbox_ctx;
};

/* The one place LMDB results become zonecast codes. */
int edge_lmdb_error(int rc);

/* Writes zone_id big-endian then rel; returns the key length. */
size_t edge_node_key(uint8_t *key, uint64_t zone_id, const uint8_t *rel,
                     size_t rel_len);

/* Big-endian integers of keys and ops. */
static inline uint64_t edge_get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v = v << 8 | p[i];
	}
	return v;
}

static inline void edge_put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	}
}

/* The dbi of a replicated table. */
MDB_dbi edge_table_dbi(const edge_store_t *store, unsigned table);

/* --- Recording (repl_record.c): every mutation of a replicated table in a
 * write transaction is appended to the transaction's op list, written to
 * the outbox with the commit, when the store's meta "repl_on" says so. */

enum {
	EDGE_OP_PUT = 1,     /* key, value */
	EDGE_OP_DEL = 2,     /* key */
	EDGE_OP_DEL_PREFIX = 3, /* every key starting with the key */
	EDGE_OP_DROP = 4,    /* every key of the table */
	EDGE_OP_STAGE_APPLY = 5, /* key: zone id; edge_stage_apply() */
};

/* Moves the zone's staged nodes into the nodes table (fenced by seq as
 * edge_txn_put_node and edge_txn_del_node are) and empties its stage;
 * without recording (the caller records EDGE_OP_STAGE_APPLY). */
int edge_stage_apply(edge_txn_t *txn, uint64_t zone_id);

int edge_rec_op(edge_txn_t *txn, unsigned op, unsigned table,
                const void *key, size_t klen, const void *val, size_t vlen);

/* Flushes the op list as the commit's last outbox part (before the LMDB
 * commit); *wrote tells whether the transaction appended to the outbox. */
int edge_rec_finish(edge_txn_t *txn, bool *wrote);

/* Frees the op list (after commit or abort). */
void edge_rec_free(edge_txn_t *txn);

/* After a nested transaction's LMDB commit: appends its ops to its
 * parent's list (a nested transaction's list is never flushed itself). */
int edge_rec_merge(edge_txn_t *child, edge_txn_t *parent);
