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
 * So each process counts the records it added (records_counts_flush(), an
 * import) and, once they reach what the last ANALYZE saw (at least 1,000:
 * a doubling), analyzes the two tables that grow with the records, records
 * and changes: seven times while a store grows to 100,000 records, and not
 * after the last ANALYZE saw that many (STATS_CAP): by then every plan is
 * an index lookup, which more rows do not change, and autovacuum analyzes
 * each 10% of growth anyway (with the server's own statistics target).
 * These ANALYZEs sample 3,000 rows of each table (statistics target 10,
 * set on their session only), not PostgreSQL's default 30,000: what they
 * are for is the tables' sizes and each key column's spread, which a
 * small sample gives as well, while the default's cost (170 ms of
 * postgres' time at 128,000 records, against 21) was 7.6 µs per record
 * of a 10 s batch run of two nodes, a quarter of postgres' time per
 * record (bench/pg_nodes --pg-statements). (The floor was 10,000: two
 * nodes taking 6,000 UPDATEs each into a new store never reached it,
 * and the builder's node read walked the zone all along, 138 µs of
 * postgres' time per UPDATE against 8 once analyzed at 1,000;
 * bench/pg_nodes --pg-statements.) It runs on a
 * connection and a thread of its own (one at a time in the process), so
 * that no writer waits for it, and skips a table another ANALYZE or VACUUM
 * holds (SKIP_LOCKED). Every node of a store counts its own records, so
 * before it analyzes, a process asks PostgreSQL how much the records table
 * changed since its last ANALYZE by anyone
 * (pg_stat_user_tables.n_mod_since_analyze, all nodes' writes, up to a
 * second late): when the table's size moved since this process last read
 * it and the changes are still short of a doubling, another node has just
 * analyzed, and this one skips (two nodes analyzed each table twice as
 * often as needed: 7 ANALYZEs in a 5 s batch run, 10.5 µs of postgres'
 * time per record written; bench/pg_nodes --pg-statements) and counts on
 * from the changes it was told of. SQLite plans each statement once, from
 * its indexes alone: nothing to do.
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
#define STATS_CAP 100000
/* The sample is 300 rows per unit of target: 3,000 rows. */
#define STATS_TARGET "10"

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

/* Rows of records inserted, updated or deleted since its last ANALYZE,
 * by any session (the statistics PostgreSQL keeps for autovacuum). */
static int table_changes(rdb_t *db, int64_t *mods)
{
	return rdb_query_int64(db, RDB_SQL2(NULL,
		"SELECT coalesce(max(n_mod_since_analyze), 0)"
		" FROM pg_stat_user_tables WHERE relid = 'records'::regclass"),
		mods);
}

/* Whether another process's ANALYZE made this one's needless: the
 * table's size is no longer the one this process last saw (someone
 * analyzed), and it changed less than a doubling since (*size, *mods).
 * Without the first test the statistics' delay (a second, or ten from a
 * session gone idle) would skip this process's own due ANALYZE. */
static bool analyzed_by_another(rdb_t *db, int64_t *size, int64_t *mods)
{
	return table_size(db, size) == ZC_EOK &&
	       *size != atomic_load(&analyzed_size) &&
	       table_changes(db, mods) == ZC_EOK &&
	       *mods < (*size > MIN_GROWTH ? *size : MIN_GROWTH);
}

static void *analyze_main(void *arg)
{
	char *target = arg;
	rdb_t *db = NULL;
	const rdb_options_t opts = { .label = "planner statistics" };
	int ret = rdb_open(&db, target, &opts);
	int64_t seen = 0, mods = 0;
	if (ret == ZC_EOK && analyzed_by_another(db, &seen, &mods)) {
		atomic_store(&analyzed_size, seen);
		atomic_fetch_add(&grown, mods);
		zc_debug("records: planner statistics fresh (analyzed at %lld "
		         "records, %lld changed since)", (long long)seen,
		         (long long)mods);
		rdb_close(db);
		free(target);
		atomic_store(&running, false);
		return NULL;
	}
	if (ret == ZC_EOK) {
		ret = rdb_exec(db, "SET default_statistics_target = "
		               STATS_TARGET);
	}
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
	if (added < size || size >= STATS_CAP ||
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
