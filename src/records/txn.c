/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Write transactions of the records store and the savepoints of units
 * (records.h, "Write transactions"). The SQL is the driver's (db.h);
 * what this file adds is keeping each file's per-connection state in
 * step with the transaction: record ids and counts written at commit,
 * everything a rollback undoes forgotten with it (the zone row, the
 * change log's indexed version, the counts since the savepoint), and
 * how many units the transaction keeps (their locks, on PostgreSQL).
 */
#include "common/error.h"
#include "records/changelog.h"
#include "records/internal.h"

int records_write_begin(records_store_t *store)
{
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	records_changelog_begin(store);
	records_prefetch_reset(store);
	int ret = rdb_begin_write(store->db);
	store->in_write = ret == ZC_EOK;
	store->units_kept = 0;
	store->lazy_units = false;
	store->tsig_alive_n = 0;
	return ret;
}

/* Commits, with `after` (NULL: none) run in the COMMIT's round trip. */
static int commit(records_store_t *store, rdb_stmt_t *after)
{
	int ret = records_changelog_index_versions(store);
	if (ret == ZC_EOK) {
		ret = records_zrow_flush(store, true);
	}
	if (ret == ZC_EOK) {
		ret = records_ids_flush(store);
	}
	if (ret == ZC_EOK) {
		ret = records_counts_flush(store);
	}
	if (ret == ZC_EOK) {
		ret = rdb_commit_then(store->db, after);
	}
	if (ret != ZC_EOK) {
		rdb_rollback(store->db);
		records_changelog_rollback(store);
	}
	records_ids_forget(store);
	records_zrow_forget(store);
	records_prefetch_reset(store);
	store->in_write = false;
	store->units_kept = 0;
	return ret;
}

int records_write_commit(records_store_t *store)
{
	return commit(store, NULL);
}

int records_write_commit_seq(records_store_t *store, uint64_t *seq)
{
	*seq = 0;
	/* PostgreSQL: the position read goes behind the COMMIT. NULL (no
	 * event, SQLite, or not prepared): read after the commit. */
	rdb_stmt_t *pos = NULL;
	if (rdb_kind(store->db) != RDB_PG ||
	    changelog_pg_position_stmt(store, &pos) != ZC_EOK) {
		pos = NULL;
	}
	int ret = commit(store, pos);
	int read = ret != ZC_EOK ? ZC_EOK : pos != NULL ?
	           changelog_pg_position_read(store, pos, seq) :
	           records_changelog_committed(store, seq);
	if (read != ZC_EOK) {
		*seq = 0; /* Committed all the same. */
	}
	if (pos != NULL) {
		rdb_done(pos);
	}
	return ret;
}

void records_write_rollback(records_store_t *store)
{
	rdb_rollback(store->db);
	records_changelog_rollback(store);
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	records_prefetch_reset(store);
	store->in_write = false;
	store->units_kept = 0;
}

/* What this connection keeps of a savepoint about to be taken, so that
 * its rollback (rollback_to()) puts it back. */
static void mark(records_store_t *store, rdb_level_t level)
{
	records_counts_mark(store, level);
	records_zrow_mark(store, level);
	records_prefetch_mark(store, level);
}

int records_savepoint(records_store_t *store)
{
	mark(store, RDB_SP_UNIT);
	return rdb_savepoint(store->db, RDB_SP_UNIT);
}

int records_savepoint_later(records_store_t *store)
{
	mark(store, RDB_SP_UNIT);
	store->lazy_units = true;
	return rdb_savepoint_later(store->db, RDB_SP_UNIT);
}

int records_savepoint_release(records_store_t *store)
{
	/* PostgreSQL: the zone row this unit's version moved is written in
	 * its own savepoint, so that a failure of it is this unit's, not
	 * that of the next unit reading another zone (zones.c, zrow_drop()).
	 * One zone row write per unit: the safe batches after a replay
	 * only; late units leave it to the commit or the next zone's read. */
	int ret = rdb_kind(store->db) == RDB_PG ?
	          records_zrow_flush(store, false) : ZC_EOK;
	ret = ret != ZC_EOK ? ret : rdb_release(store->db, RDB_SP_UNIT);
	store->units_kept += ret == ZC_EOK;
	return ret;
}

int records_savepoint_release_later(records_store_t *store)
{
	int ret = rdb_release_later(store->db, RDB_SP_UNIT);
	store->units_kept += ret == ZC_EOK;
	return ret;
}

bool records_write_replay(records_store_t *store)
{
	return rdb_txn_replay(store->db);
}

bool records_write_holds_units(records_store_t *store)
{
	return store->units_kept > 0;
}

/* Undoes a savepoint (level 0: the unit's, 1: the inner one) and what
 * this connection keeps of it. */
static void rollback_to(records_store_t *store, rdb_level_t level)
{
	rdb_rollback_to(store->db, level);
	records_counts_restore(store, level);
	records_changelog_rollback(store);
	records_zrow_restore(store, level);
	records_prefetch_restore(store, level);
}

void records_savepoint_rollback(records_store_t *store)
{
	rollback_to(store, RDB_SP_UNIT);
}

int records_inner_savepoint(records_store_t *store)
{
	mark(store, RDB_SP_INNER);
	return rdb_savepoint(store->db, RDB_SP_INNER);
}

int records_inner_release(records_store_t *store)
{
	return rdb_release(store->db, RDB_SP_INNER);
}

void records_inner_rollback(records_store_t *store)
{
	rollback_to(store, RDB_SP_INNER);
}

size_t records_write_units_max(const records_store_t *store)
{
	return rdb_kind(store->db) == RDB_PG ? 32 : 0;
}

bool records_write_open(records_store_t *store)
{
	return rdb_in_txn(store->db);
}
