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
 * an import) and, once they reach what the last ANALYZE saw (at least
 * 1,000: a doubling), analyzes the two tables that grow with the
 * records, records and changes: ten times while a store grows to
 * 1,000,000 records. (The floor was 10,000: two nodes taking 6,000
 * UPDATEs each into a new store never reached it, and the builder's node
 * read walked the zone all along, 138 µs of postgres' time per UPDATE
 * against 8 once analyzed at 1,000; bench/pg_nodes --pg-statements.)
 * It runs on a connection and a thread of its own (one at a time in the
 * process), so that no writer waits for it, and skips a table another
 * ANALYZE or VACUUM holds (SKIP_LOCKED). SQLite plans each statement
 * once, from its indexes alone: nothing to do.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "records/internal.h"

#define MIN_GROWTH 1000

/* Records added by this process since the last ANALYZE it started, the
 * records table's size as that ANALYZE saw it (-1: not read yet), and
 * whether one runs. */
static _Atomic int64_t grown;
static _Atomic int64_t analyzed_size = -1;
static atomic_bool running;

void records_stats_grew(records_store_t *store, int64_t added)
{
	if (added > 0 && rdb_kind(store->db) == RDB_PG) {
		atomic_fetch_add(&grown, added);
	}
}

/* reltuples, -1 for a table never analyzed (then 0). */
static int table_size(rdb_t *db, int64_t *size)
{
	return rdb_query_int64(db, RDB_SQL2(NULL,
		"SELECT greatest(reltuples, 0)::bigint FROM pg_class"
		" WHERE oid = 'records'::regclass"), size);
}

static void *analyze_main(void *arg)
{
	char *target = arg;
	rdb_t *db = NULL;
	const rdb_options_t opts = { .label = "planner statistics" };
	int ret = rdb_open(&db, target, &opts);
	if (ret == ZC_EOK) {
		ret = rdb_exec(db, "ANALYZE (SKIP_LOCKED) records, changes");
	}
	int64_t size = 0;
	if (ret == ZC_EOK) {
		ret = table_size(db, &size);
	}
	if (ret == ZC_EOK) {
		atomic_store(&analyzed_size, size);
		zc_debug("records: planner statistics refreshed (%lld records)",
		         (long long)size);
	} else {
		zc_debug("records: ANALYZE failed: %s; tried again later",
		         zc_strerror(ret));
	}
	rdb_close(db);
	free(target);
	atomic_store(&running, false);
	return NULL;
}

int records_keep_stats(records_store_t *store)
{
	int64_t added = atomic_load(&grown);
	if (rdb_kind(store->db) != RDB_PG || added < MIN_GROWTH ||
	    store->target == NULL || atomic_load(&running)) {
		return ZC_EOK;
	}
	int64_t size = atomic_load(&analyzed_size);
	if (size < 0 && !store->in_write) {
		int ret = table_size(store->db, &size);
		if (ret != ZC_EOK) {
			return ret;
		}
		atomic_store(&analyzed_size, size);
	}
	bool idle = false;
	if (added < size ||
	    !atomic_compare_exchange_strong(&running, &idle, true)) {
		return ZC_EOK; /* Not yet, or one runs. */
	}
	atomic_fetch_sub(&grown, added);
	char *target = strdup(store->target);
	pthread_t thread;
	pthread_attr_t attr;
	int rc = target != NULL ? pthread_attr_init(&attr) : -1;
	if (rc == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&thread, &attr, analyze_main, target);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0) {
		free(target);
		atomic_fetch_add(&grown, added);
		atomic_store(&running, false);
		return KNOT_ENOMEM;
	}
	return ZC_EOK;
}

bool records_stats_running(void)
{
	return atomic_load(&running);
}
