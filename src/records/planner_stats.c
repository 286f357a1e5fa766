/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Keeps PostgreSQL's planner statistics in step with the records store's
 * growth. A connection keeps a generic plan of a statement after its fifth
 * run, and keeps it until the table's statistics change. Planned while
 * the tables were nearly empty (a new store; autovacuum's first ANALYZE
 * comes a minute or more later), such a plan walks a whole zone for each
 * lookup: the builder's read of the nodes an UPDATE touched took 2.7 ms
 * for 16 keys at 50,000 records (auto_explain: a bitmap scan of
 * records_type by zone, the keys as a filter), and it only gets worse
 * as the zone grows. ANALYZE gives the planner the real sizes and makes
 * every session plan again.
 *
 * So each process counts the records it added (records_counts_flush(),
 * an import) and, once they reach half of what the last ANALYZE saw (at
 * least 1,000), analyzes the two tables that grow with the records,
 * records and changes, after the writer answered (records_keep_stats()):
 * about 20 times while a store grows from nothing to 1,000,000 records. SQLite plans each statement
 * once, from its indexes alone: nothing to do.
 */
#include <stdatomic.h>

#include "common/error.h"
#include "common/log.h"
#include "records/internal.h"

#define MIN_GROWTH 1000

/* Records added by this process since the last ANALYZE it ran, and the
 * records table's size as that ANALYZE saw it (-1: not read yet). */
static _Atomic int64_t grown;
static _Atomic int64_t analyzed_size = -1;

void records_stats_grew(records_store_t *store, int64_t added)
{
	if (added > 0 && rdb_kind(store->db) == RDB_PG) {
		atomic_fetch_add(&grown, added);
	}
}

static int table_size(records_store_t *store, int64_t *size)
{
	/* reltuples is -1 for a table never analyzed. */
	int ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
		"SELECT greatest(reltuples, 0)::bigint FROM pg_class"
		" WHERE oid = 'records'::regclass"), size);
	return ret;
}

int records_keep_stats(records_store_t *store)
{
	int64_t added = atomic_load(&grown);
	if (rdb_kind(store->db) != RDB_PG || added < MIN_GROWTH ||
	    store->in_write) {
		return ZC_EOK;
	}
	int64_t size = atomic_load(&analyzed_size);
	if (size < 0) {
		int ret = table_size(store, &size);
		if (ret != ZC_EOK) {
			return ret;
		}
		atomic_store(&analyzed_size, size);
	}
	if (added < size / 2 ||
	    !atomic_compare_exchange_strong(&grown, &added, 0)) {
		return ZC_EOK; /* Not yet, or another thread does it. */
	}
	int ret = rdb_exec(store->db, "ANALYZE records, changes");
	if (ret == ZC_EOK) {
		ret = table_size(store, &size);
	}
	if (ret != ZC_EOK) {
		atomic_fetch_add(&grown, added); /* Tried again later. */
		return ret;
	}
	atomic_store(&analyzed_size, size);
	zc_debug("records: planner statistics refreshed (%lld records)",
	         (long long)size);
	return ZC_EOK;
}
