/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Records per zone (zones.record_count, bounded by zone-max-records) kept
 * in memory through a write transaction and written once at its commit:
 * an UPDATE of the zone row per record written cost the group committer
 * about a sixth of its time. Savepoints snapshot the pending deltas, so a
 * unit rolled back takes its counts with it. Outside a transaction, or
 * past RECORDS_COUNT_ZONES zones in one, the row is updated at once.
 * The only file that writes zones.record_count.
 */
#include <string.h>

#include "common/error.h"
#include "records/internal.h"

void records_set_max_records(records_store_t *store, uint64_t max)
{
	store->max_records = max;
}

void records_counts_forget(records_store_t *store)
{
	store->count_n = 0;
	store->counts_taken = 0;
	store->count_saved_n[0] = store->count_saved_n[1] = 0;
}

void records_counts_mark(records_store_t *store, int level)
{
	for (size_t i = 0; i < store->count_n; i++) {
		store->count_saved[level][i] = store->counts[i].delta;
	}
	store->count_saved_n[level] = store->count_n;
}

void records_counts_restore(records_store_t *store, int level)
{
	store->count_n = store->count_saved_n[level];
	for (size_t i = 0; i < store->count_n; i++) {
		store->counts[i].delta = store->count_saved[level][i];
	}
}

/* Adds delta to the zone's row now; the new count in *count. */
static int update_row(records_store_t *store, int64_t zone_id, int64_t delta,
                      int64_t *count)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE zones SET record_count ="
		" record_count + ?1 WHERE id = ?2"
		" RETURNING record_count"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, delta);
	rdb_bind_int64(stmt, 2, zone_id);
	int rc = rdb_step(stmt);
	*count = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	if (rc == RDB_ROW) {
		rc = rdb_step(stmt);
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* The pending entry of a zone, made (with the row's count) if needed;
 * RECORDS_COUNT_ZONES when the table is full. */
static int entry(records_store_t *store, int64_t zone_id, size_t *out)
{
	for (size_t i = 0; i < store->count_n; i++) {
		if (store->counts[i].zone_id == zone_id) {
			*out = i;
			return ZC_EOK;
		}
	}
	if (store->count_n == RECORDS_COUNT_ZONES) {
		*out = RECORDS_COUNT_ZONES;
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT record_count FROM zones"
		" WHERE id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	int64_t base = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW || rc == RDB_DONE ? ZC_EOK :
	      rdb_status(rc);
	rdb_done(stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	size_t i = store->count_n++;
	store->counts[i].zone_id = zone_id;
	store->counts[i].base = base;
	store->counts[i].delta = 0;
	*out = i;
	return ZC_EOK;
}

void records_counts_seed(records_store_t *store, int64_t zone_id,
                         int64_t count)
{
	for (size_t i = 0; i < store->count_n; i++) {
		if (store->counts[i].zone_id == zone_id) {
			return;
		}
	}
	if (store->count_n < RECORDS_COUNT_ZONES) {
		size_t i = store->count_n++;
		store->counts[i].zone_id = zone_id;
		store->counts[i].base = count;
		store->counts[i].delta = 0;
	}
}

int records_count_add(records_store_t *store, int64_t zone_id, int delta)
{
	int64_t count;
	size_t i = RECORDS_COUNT_ZONES;
	int ret = store->in_write ? entry(store, zone_id, &i) : ZC_EOK;
	if (ret != ZC_EOK) {
		return ret;
	}
	if (i < RECORDS_COUNT_ZONES) {
		count = store->counts[i].base + store->counts[i].delta + delta;
	} else if ((ret = update_row(store, zone_id, delta, &count)) != ZC_EOK) {
		return ret;
	}
	if (delta > 0 && store->max_records != 0 &&
	    (uint64_t)count > store->max_records) {
		return ZC_ETOOMANY; /* The caller's rollback undoes the rest. */
	}
	if (i < RECORDS_COUNT_ZONES) {
		store->counts[i].delta += delta;
	}
	return ZC_EOK;
}

int64_t records_counts_take(records_store_t *store, int64_t zone_id)
{
	for (size_t i = 0; i < store->count_n; i++) {
		if (store->counts[i].zone_id == zone_id) {
			int64_t delta = store->counts[i].delta;
			store->counts[i].delta = 0;
			store->counts_taken += delta > 0 ? delta : 0;
			return delta;
		}
	}
	return 0;
}

/* Adds delta to the zone's row at the commit: queued, nothing read. */
static int queue_add(records_store_t *store, int64_t zone_id, int64_t delta)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE zones SET record_count ="
		" record_count + ?1 WHERE id = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, delta);
	rdb_bind_int64(stmt, 2, zone_id);
	ret = rdb_defer(stmt);
	rdb_done(stmt);
	return ret;
}

int records_counts_flush(records_store_t *store)
{
	int ret = ZC_EOK;
	int64_t added = store->counts_taken;
	for (size_t i = 0; i < store->count_n && ret == ZC_EOK; i++) {
		if (store->counts[i].delta != 0) {
			ret = queue_add(store, store->counts[i].zone_id,
			                store->counts[i].delta);
		}
		added += store->counts[i].delta > 0 ? store->counts[i].delta : 0;
	}
	if (ret == ZC_EOK) {
		records_stats_grew(store, added);
	}
	records_counts_forget(store);
	return ret;
}

int records_counts_verify(records_store_t *store,
                          void (*cb)(const char *zone, int64_t kept,
                                     int64_t real, void *ctx),
                          void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT name, record_count, n FROM (SELECT name,"
		" record_count, (SELECT count(*) FROM records r WHERE"
		" r.zone_id = zones.id) AS n FROM zones) AS z"
		" WHERE record_count != n ORDER BY name"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		cb(rdb_col_text(stmt, 0),
		   rdb_col_int64(stmt, 1), rdb_col_int64(stmt, 2), ctx);
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_zone_kept_count(records_store_t *store, int64_t zone_id,
                            int64_t *count)
{
	*count = 0;
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT record_count FROM zones"
		" WHERE id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		*count = rdb_col_int64(stmt, 0);
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}
