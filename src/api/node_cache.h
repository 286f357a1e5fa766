/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: the records a write unit of record_write.c reads and
 * writes, held for the length of one run of the unit, so that a batch of
 * 1,000 changes reads the records it addresses by id and the nodes
 * (owner names) it touches in a few statements (records_record_find_many()
 * and records_record_foreach_owners(): one statement each on PostgreSQL)
 * instead of one round trip per change.
 *
 * The cache gives what the store would give at that moment of the unit:
 * the unit tells it every record it inserts and deletes, and whatever it
 * was not given (a node not read in advance, an id not asked for) is read
 * from the store when first asked for and kept from then on. A node is
 * known ("complete") once its records were read from the store inside the
 * unit; records are found by id and by node; a record's owner is stored
 * as the store holds it, its node keyed by the lowercase owner (the
 * store's okey is made from the lowercase owner, so both name the same
 * records).
 *
 * It holds nothing across runs: the writer may run a unit again after
 * rolling its first run back, and each run starts with
 * api_node_cache_reset().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "records/records.h"

typedef struct api_node_entry api_node_entry_t;
typedef struct api_node api_node_t;

typedef struct {
	records_store_t *rs;
	int64_t zone_id;
	zc_arena_t arena;          /* Owners, rdata, comments, tags. */
	uint64_t seed;             /* Of both hash tables. */
	api_node_entry_t *entry;   /* Records by their index. */
	size_t entries, entry_cap;
	uint32_t *by_id;           /* Open addressing: entry index + 1. */
	size_t id_cap;             /* A power of two (0: none yet). */
	api_node_t *node;          /* Nodes by their index. */
	size_t nodes, node_cap;
	uint32_t *by_owner;        /* Open addressing: node index + 1. */
	size_t owner_cap;
	void *scratch;             /* A node's records being sorted. */
	size_t scratch_cap;
	int error;                 /* Of a callback filling the cache. */
} api_node_cache_t;

void api_node_cache_init(api_node_cache_t *c);
void api_node_cache_deinit(api_node_cache_t *c);

/* Forgets everything: the start of a run of a unit on zone_id. */
void api_node_cache_reset(api_node_cache_t *c, records_store_t *rs,
                          int64_t zone_id);

/* Reads the records with these ids (those not known yet), in one
 * statement on PostgreSQL. */
int api_node_cache_load_ids(api_node_cache_t *c, const int64_t *ids,
                            size_t count);

/* Reads the nodes of these owners (wire, any case; those not complete
 * yet, each once), in one statement per 4,096 on PostgreSQL. */
int api_node_cache_load_owners(api_node_cache_t *c,
                               const knot_dname_t *const *owners,
                               size_t count);

/* The record with this id: ZC_EOK with *rec filled (its pointers valid
 * until the cache is reset), KNOT_ENOENT when the zone has none. Reads
 * it from the store unless known. */
int api_node_cache_find(api_node_cache_t *c, int64_t id,
                        records_record_t *rec);

/* The record with this id if known (found or written in this run):
 * true with *rec filled. Reads nothing. */
bool api_node_cache_known(const api_node_cache_t *c, int64_t id,
                          records_record_t *rec);

/* Calls cb for each record at owner (wire, any case) of the type (0:
 * any), in (type, id) order as records_record_foreach() does; the
 * record's pointers stay valid until the cache is reset. Reads the node
 * from the store unless complete. cb returns non-zero to stop. */
int api_node_cache_foreach(api_node_cache_t *c, const knot_dname_t *owner,
                           uint16_t type,
                           int (*cb)(const records_record_t *rec, void *ctx),
                           void *ctx);

/* What the unit wrote: a record inserted (as records_record_insert() left
 * it: its id and times set), a record deleted by id. */
int api_node_cache_inserted(api_node_cache_t *c, const records_record_t *rec);
void api_node_cache_deleted(api_node_cache_t *c, int64_t id);
