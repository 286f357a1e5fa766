/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Zone operations of the records store: finding and listing zones,
 * creating and deleting them, their settings, and their versions (the
 * serial moved once per unit of work, by its policy or by an UPDATE's
 * SOA). Each change is logged through the change log (changelog.h) in
 * the caller's transaction. Inside a write transaction on PostgreSQL,
 * reading a zone locks its row to the commit (records.h, "Concurrency"):
 * the lock that keeps a zone's versions gap-free and in order across
 * nodes.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/changelog.h"
#include "records/internal.h"

void records_zrow_forget(records_store_t *store)
{
	store->zrow_valid = false;
	store->zrow_dirty = false;
}

/* Writes a zone row's serial, and adds count to its record count
 * (queued: the unit holds the row, it cannot miss); `released`: as the
 * work of units released already (rdb_defer_released()). */
static int write_serial(records_store_t *store, int64_t id, uint32_t serial,
                        int64_t modified_on, int64_t count, bool released)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE zones SET serial = ?1, modified_on = ?2,"
		" record_count = record_count + ?4 WHERE id = ?3"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, serial);
	rdb_bind_int64(stmt, 2, modified_on);
	rdb_bind_int64(stmt, 3, id);
	rdb_bind_int64(stmt, 4, count);
	ret = released ? rdb_defer_released(stmt) : rdb_defer(stmt);
	rdb_done(stmt);
	return ret;
}

/* records_zrow_flush(), the row written as released units' work or not. */
static int zrow_write(records_store_t *store, bool last, bool released)
{
	if (!store->zrow_valid || !store->zrow_dirty) {
		return ZC_EOK;
	}
	/* At the commit, the zone's count changes go with its serial: one
	 * version of the row less. (Not before: a savepoint's rollback
	 * puts the counts back as they were.) */
	int64_t count = last ? records_counts_take(store, store->zrow.id) : 0;
	int ret = write_serial(store, store->zrow.id, store->zrow.serial,
	                       store->zrow.modified_on, count, released);
	store->zrow_dirty = ret != ZC_EOK;
	return ret;
}

int records_zrow_flush(records_store_t *store, bool last)
{
	return zrow_write(store, last, false);
}

/* Writes what is pending of the kept row, then drops it (before another
 * write of the zones table). A row the current unit found dirty and left
 * as it was (its mark) carries only the versions of units before it:
 * written as their work, so that its failure runs the batch again
 * instead of failing this unit, of another zone (late savepoints). */
static int zrow_drop(records_store_t *store)
{
	const struct records_zrow_saved *m = &store->zrow_saved[RDB_SP_UNIT];
	bool earlier = store->lazy_units && m->valid && m->dirty &&
	               m->row.id == store->zrow.id &&
	               m->row.serial == store->zrow.serial &&
	               m->row.modified_on == store->zrow.modified_on;
	int ret = zrow_write(store, false, earlier);
	records_zrow_forget(store);
	return ret;
}

void records_zrow_mark(records_store_t *store, int level)
{
	store->zrow_saved[level].valid = store->zrow_valid;
	store->zrow_saved[level].dirty = store->zrow_dirty;
	store->zrow_saved[level].row = store->zrow;
}

void records_zrow_restore(records_store_t *store, int level)
{
	/* The row as this transaction had it at the savepoint, which still
	 * holds its lock (taken before the savepoint, or the mark was of no
	 * row). */
	store->zrow_valid = store->zrow_saved[level].valid;
	store->zrow_dirty = store->zrow_saved[level].dirty;
	store->zrow = store->zrow_saved[level].row;
}

/* A zone row read from the table inside a write transaction, with the
 * serial this transaction gave it and has not written yet. */
static void zrow_overlay(const records_store_t *store, records_zone_t *zone)
{
	if (store->in_write && store->zrow_valid && store->zrow_dirty &&
	    store->zrow.id == zone->id) {
		zone->serial = store->zrow.serial;
		zone->modified_on = store->zrow.modified_on;
	}
}

/* Logs a zone event at the zone's version; *seq (unless NULL) receives
 * its sequence. */
static int log_zone(records_store_t *store, const records_zone_t *zone,
                    records_change_kind_t kind, uint64_t *seq)
{
	records_change_entry_t entry = {
		.zone_id = zone->id, .apex = zone->apex,
		.version = zone->serial, .kind = kind,
	};
	return records_changelog_append(store, &entry, seq);
}

/* --- Finding and listing --- */

void records_zone_from_stmt(rdb_stmt_t *stmt, records_zone_t *zone)
{
	memset(zone, 0, sizeof(*zone));
	zone->id = rdb_col_int64(stmt, 0);
	snprintf(zone->name, sizeof(zone->name), "%s",
	         rdb_col_text(stmt, 1));
	int len = (int)rdb_col_bytes(stmt, 2);
	if (len > 0 && len <= KNOT_DNAME_MAXLEN) {
		memcpy(zone->apex, rdb_col_blob(stmt, 2, NULL), len);
	}
	zone->serial = (uint32_t)rdb_col_int64(stmt, 3);
	zone->default_ttl = (uint32_t)rdb_col_int64(stmt, 4);
	zone->created_on = rdb_col_int64(stmt, 5);
	zone->modified_on = rdb_col_int64(stmt, 6);
	zone->serial_policy = (records_serial_policy_t)rdb_col_int64(stmt, 7);
}

/* A zone row by apex with sql (locking it or not). */
static int find_zone(records_store_t *store, const rdb_sql_t *sql,
                     const knot_dname_t *apex, records_zone_t *zone)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_blob(stmt, 1, apex, knot_dname_size(apex));
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		records_zone_from_stmt(stmt, zone);
		zrow_overlay(store, zone);
		ret = ZC_EOK;
	} else {
		ret = (rc == RDB_DONE) ? ZC_ENOZONE :
		      rdb_status(rc);
	}
	rdb_done(stmt);
	return ret;
}

int records_zone_find(records_store_t *store, const knot_dname_t *apex,
                      records_zone_t *zone)
{
	return find_zone(store, RDB_SQL("SELECT " RECORDS_ZONE_COLUMNS
	                                " FROM zones WHERE apex = ?1"),
	                 apex, zone);
}

int records_zone_find_locked(records_store_t *store, const knot_dname_t *apex,
                             records_zone_t *zone)
{
	return find_zone(store, RDB_SQL2("SELECT " RECORDS_ZONE_COLUMNS
	                                 " FROM zones WHERE apex = ?1",
	                                 "SELECT " RECORDS_ZONE_COLUMNS
	                                 " FROM zones WHERE apex = ?1"
	                                 " FOR NO KEY UPDATE"),
	                 apex, zone);
}

/*
 * The statement reading a zone row by id: inside a write transaction on
 * PostgreSQL it locks the row to the transaction's end (records.h,
 * "Concurrency"). FOR NO KEY UPDATE is the lock the serial's UPDATE takes
 * anyway: it excludes other writers of the zone and its deletion, not the
 * foreign-key checks of rows that merely name the zone (a token, a TSIG
 * key). NOWAIT once the transaction keeps earlier units.
 */
#define ZONE_SELECT(xid) "SELECT " RECORDS_ZONE_COLUMNS ", record_count, " xid
#define ZONE_XID "pg_current_xact_id()::text::bigint"
#define ZONE_FROM " FROM zones WHERE id = ?1"
#define ZONE_KEY ", EXISTS(SELECT 1 FROM tsig_keys WHERE id = ?2)"
/* Columns after RECORDS_ZONE_COLUMNS: the row's record count, the
 * transaction's id (PostgreSQL, in a write transaction: locking the row
 * assigns it anyway; else 0) and, keyed, whether TSIG key ?2 exists. */
#define COL_COUNT 8
#define COL_XID 9
#define COL_KEY 10
static const rdb_sql_t zone_by_id = {
	ZONE_SELECT("0") ZONE_FROM, ZONE_SELECT("0") ZONE_FROM };
static const rdb_sql_t zone_by_id_locked = {
	ZONE_SELECT("0") ZONE_FROM,
	ZONE_SELECT(ZONE_XID) ZONE_FROM " FOR NO KEY UPDATE" };
static const rdb_sql_t zone_by_id_nowait = {
	ZONE_SELECT("0") ZONE_FROM,
	ZONE_SELECT(ZONE_XID) ZONE_FROM " FOR NO KEY UPDATE NOWAIT" };

/* The same, and whether the TSIG key ?2 exists (records_tsig_alive()),
 * in the statement's snapshot: taken after the committer's batch was
 * formed, whatever lock wait follows (tsig_keys.c). */
static const rdb_sql_t zone_keyed = {
	ZONE_SELECT("0") ZONE_KEY ZONE_FROM,
	ZONE_SELECT("0") ZONE_KEY ZONE_FROM };
static const rdb_sql_t zone_keyed_locked = {
	ZONE_SELECT("0") ZONE_KEY ZONE_FROM,
	ZONE_SELECT(ZONE_XID) ZONE_KEY ZONE_FROM " FOR NO KEY UPDATE" };
static const rdb_sql_t zone_keyed_nowait = {
	ZONE_SELECT("0") ZONE_KEY ZONE_FROM,
	ZONE_SELECT(ZONE_XID) ZONE_KEY ZONE_FROM " FOR NO KEY UPDATE NOWAIT" };

static const rdb_sql_t *zone_get_sql(const records_store_t *store,
                                     bool keyed)
{
	if (!store->in_write) {
		return keyed ? &zone_keyed : &zone_by_id;
	}
	if (store->units_kept == 0) {
		return keyed ? &zone_keyed_locked : &zone_by_id_locked;
	}
	return keyed ? &zone_keyed_nowait : &zone_by_id_nowait;
}

int records_zone_get(records_store_t *store, int64_t id, records_zone_t *zone)
{
	return records_zone_get_keyed(store, id, 0, zone);
}

int records_zone_get_keyed(records_store_t *store, int64_t id,
                           int64_t key_id, records_zone_t *zone)
{
	/* Kept only from a read of this transaction, which locked the row
	 * (forgotten at every rollback, which releases the lock). */
	if (store->in_write && store->zrow_valid && store->zrow.id == id) {
		*zone = store->zrow;
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	/* Another zone's row takes the place: the kept one's serial first. */
	int ret = store->in_write ? zrow_drop(store) : ZC_EOK;
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, zone_get_sql(store, key_id != 0),
		                  &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	if (key_id != 0) {
		rdb_bind_int64(stmt, 2, key_id);
	}
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		records_zone_from_stmt(stmt, zone);
		if (store->in_write) {
			store->zrow = *zone;
			store->zrow_valid = true;
			/* Locked: what counts.c and changelog.c would read
			 * later, each with a round trip of its own. */
			records_counts_seed(store, id,
			                    rdb_col_int64(stmt, COL_COUNT));
			records_changelog_xid(store,
			                      rdb_col_int64(stmt, COL_XID));
		}
		if (key_id != 0 && rdb_col_int64(stmt, COL_KEY) != 0) {
			records_tsig_alive_seen(store, key_id);
		}
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? ZC_ENOZONE :
	      rdb_status(rc);
	rdb_done(stmt);
	if (ret == ZC_EOK && store->in_write) {
		/* Locked now: the nodes its units named (prefetch.c). */
		ret = records_prefetch_zone(store, id);
	}
	return ret;
}

int records_zone_list(records_store_t *store, bool with_counts,
                      int (*cb)(const records_zone_t *zone, void *ctx),
                      void *ctx)
{
	/* Counting walks every record: only when asked (zone list CLI). */
	static const char *const sql[2] = {
		"SELECT " RECORDS_ZONE_COLUMNS ", 0 FROM zones ORDER BY name",
		"SELECT " RECORDS_ZONE_COLUMNS ", (SELECT count(*) FROM records r"
		" WHERE r.zone_id = zones.id) FROM zones ORDER BY name",
	};
	rdb_stmt_t *stmt;
	const char *text = sql[with_counts ? 1 : 0];
	int ret = rdb_prepare(store->db, RDB_SQL(text), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_zone_t zone;
		records_zone_from_stmt(stmt, &zone);
		zrow_overlay(store, &zone);
		zone.record_count = rdb_col_int64(stmt, 8);
		if (cb(&zone, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* --- Creating and deleting --- */

int records_zone_create(records_store_t *store, const knot_dname_t *apex,
                        uint32_t ttl, const uint8_t *soa, uint16_t soa_len,
                        const knot_dname_t *const *ns, unsigned ns_count,
                        records_zone_t *zone)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, apex);
	if (knot_dname_is_wildcard(lower)) {
		/* Its apex NS would stand at a wildcard (RFC 4592 §4.2). */
		return ZC_EUSAGE;
	}
	if (records_zone_find(store, lower, zone) == ZC_EOK) {
		return ZC_EEXISTS;
	}
	if (soa_len < 20 || soa_len > 2 * KNOT_DNAME_MAXLEN + 20) {
		return KNOT_EINVAL;
	}
	uint32_t serial = (uint32_t)soa[soa_len - 20] << 24 |
	                  (uint32_t)soa[soa_len - 19] << 16 |
	                  (uint32_t)soa[soa_len - 18] << 8 | soa[soa_len - 17];
	int ret = records_zone_first_serial(store, lower, &serial);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The SOA record with the serial the zone starts at. */
	uint8_t soa_own[2 * KNOT_DNAME_MAXLEN + 20];
	memcpy(soa_own, soa, soa_len);
	for (int i = 0; i < 4; i++) {
		soa_own[soa_len - 20 + i] = (uint8_t)(serial >> (24 - 8 * i));
	}
	soa = soa_own;
	rdb_stmt_t *stmt;
	ret = zrow_drop(store);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQL(
			"INSERT INTO zones(name, apex,"
			" serial, default_ttl, created_on,"
			" modified_on) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, lower, sizeof(name));
	int64_t now = records_now_ms();
	rdb_bind_text(stmt, 1, name);
	rdb_bind_blob(stmt, 2, lower, knot_dname_size(lower));
	rdb_bind_int64(stmt, 3, serial);
	rdb_bind_int64(stmt, 4, ttl);
	rdb_bind_int64(stmt, 5, now);
	rdb_bind_int64(stmt, 6, now);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		ret = records_zone_find(store, lower, zone);
	}
	records_record_t rec = { .owner = lower, .type = KNOT_RRTYPE_SOA,
	                         .ttl = ttl, .rdata = soa, .rdata_len = soa_len };
	if (ret == ZC_EOK) {
		ret = records_record_insert(store, zone, &rec);
	}
	for (unsigned i = 0; i < ns_count && ret == ZC_EOK; i++) {
		records_record_t nsr = { .owner = lower, .type = KNOT_RRTYPE_NS,
		                         .ttl = ttl, .rdata = ns[i],
		                         .rdata_len = knot_dname_size(ns[i]) };
		ret = records_record_insert(store, zone, &nsr);
	}
	if (ret == ZC_EOK) {
		ret = records_log_zone_event(store, zone,
		                             RECORDS_CHANGE_ZONE_CREATED);
	}
	return ret;
}

/* Keeps the last serial of a zone being deleted under its apex. */
static int write_tombstone(records_store_t *store, const records_zone_t *zone)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO zone_tombstones(apex, serial, deleted_on)"
		" VALUES (?1, ?2, ?3) ON CONFLICT (apex) DO UPDATE"
		" SET serial = excluded.serial,"
		" deleted_on = excluded.deleted_on"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_blob(stmt, 1, zone->apex, knot_dname_size(zone->apex));
	rdb_bind_int64(stmt, 2, zone->serial);
	rdb_bind_int64(stmt, 3, records_now_ms());
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_zone_remove(records_store_t *store, records_zone_t *zone)
{
	records_prefetch_forget_zone(store, zone->id);
	int ret = zrow_drop(store);
	/* The records by hand: PostgreSQL has no foreign key from them to
	 * the zone (schema step 12); this transaction holds the zone's row,
	 * so no writer adds one meanwhile. Tokens, keys and secondaries go
	 * by ON DELETE CASCADE. */
	if (ret == ZC_EOK) {
		ret = records_exec_int64(store, RDB_SQL("DELETE FROM records"
		                         " WHERE zone_id = ?1"), zone->id);
	}
	if (ret == ZC_EOK) {
		ret = records_exec_int64(store, RDB_SQL("DELETE FROM zones"
		                         " WHERE id = ?1"), zone->id);
	}
	if (ret == ZC_EOK) {
		ret = write_tombstone(store, zone);
	}
	if (ret == ZC_EOK) {
		ret = log_zone(store, zone, RECORDS_CHANGE_ZONE_DELETED, NULL);
	}
	return ret;
}

int records_zone_first_serial(records_store_t *store,
                              const knot_dname_t *apex, uint32_t *serial)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL("SELECT serial FROM"
	                      " zone_tombstones WHERE apex = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_blob(stmt, 1, apex, knot_dname_size(apex));
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		uint32_t last = (uint32_t)rdb_col_int64(stmt, 0);
		/* RFC 1982: unless *serial is newer than the last one. */
		if (*serial == last || (int32_t)(*serial - last) < 0) {
			*serial = last + 1;
		}
	}
	rdb_done(stmt);
	return rdb_status(rc);
}

int records_zone_delete(records_store_t *store, const knot_dname_t *apex,
                        uint64_t *seq)
{
	records_changelog_begin(store);
	int ret = rdb_begin_write(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	records_zone_t zone;
	ret = records_zone_find_locked(store, apex, &zone);
	if (ret == ZC_EOK) {
		ret = records_zone_remove(store, &zone);
	}
	if (ret == ZC_EOK) {
		ret = rdb_commit(store->db);
	}
	if (ret != ZC_EOK) {
		rdb_rollback(store->db);
		records_changelog_rollback(store);
	} else if (seq != NULL && records_changelog_committed(store, seq) !=
	           ZC_EOK) {
		*seq = 0; /* Committed all the same; not to be waited for. */
	}
	return ret;
}

/* --- Settings --- */

int records_zone_set_default_ttl(records_store_t *store,
                                 records_zone_t *zone, uint32_t ttl)
{
	rdb_stmt_t *stmt;
	int ret = zrow_drop(store);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQL(
			"UPDATE zones SET default_ttl = ?1"
			" WHERE id = ?2"), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, ttl);
	rdb_bind_int64(stmt, 2, zone->id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		zone->default_ttl = ttl;
	}
	return ret;
}

int records_zone_set_serial_policy(records_store_t *store,
                                   records_zone_t *zone,
                                   records_serial_policy_t policy)
{
	rdb_stmt_t *stmt;
	int ret = zrow_drop(store);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQL(
			"UPDATE zones SET serial_policy = ?1"
			" WHERE id = ?2"), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, policy);
	rdb_bind_int64(stmt, 2, zone->id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		zone->serial_policy = policy;
	}
	return ret;
}

int records_log_zone_event(records_store_t *store, const records_zone_t *zone,
                           records_change_kind_t kind)
{
	assert(kind == RECORDS_CHANGE_ZONE_CREATED ||
	       kind == RECORDS_CHANGE_ZONE_SETTINGS);
	return log_zone(store, zone, kind, NULL);
}

/* --- Versions --- */

int records_zone_set_serial(records_store_t *store, records_zone_t *zone,
                            uint32_t serial)
{
	int64_t now = records_now_ms();
	if (store->in_write && store->zrow_valid &&
	    store->zrow.id == zone->id) {
		/* Written at the commit, or when another zone's row comes
		 * (records_zrow_flush()); this transaction holds the row. */
		store->zrow.serial = serial;
		store->zrow.modified_on = now;
		store->zrow_dirty = true;
		zone->serial = serial;
		zone->modified_on = now;
		return ZC_EOK;
	}
	int ret = write_serial(store, zone->id, serial, now, 0, false);
	if (ret == ZC_EOK) {
		zone->serial = serial;
		zone->modified_on = now;
	}
	return ret;
}

int records_zone_bump(records_store_t *store, records_zone_t *zone)
{
	uint32_t next = zone->serial + 1; /* RFC 1982: wraps past 2^32-1. */
	if (zone->serial_policy == RECORDS_SERIAL_UNIXTIME) {
		uint32_t now = (uint32_t)(records_now_ms() / 1000);
		if ((int32_t)(now - zone->serial) > 0) {
			next = now;
		}
	}
	return records_zone_set_serial(store, zone, next);
}

int records_zone_touch(records_store_t *store, records_zone_t *zone)
{
	int ret = records_zone_bump(store, zone);
	return ret == ZC_EOK ? records_log_touch(store, zone) : ret;
}

int records_log_touch(records_store_t *store, const records_zone_t *zone)
{
	/* An (empty) owner key: an event of the apex node, not zone-wide. */
	records_change_entry_t entry = {
		.zone_id = zone->id, .apex = zone->apex,
		.version = zone->serial, .kind = RECORDS_CHANGE_ZONE_TOUCHED,
		.okey = (const uint8_t *)"",
	};
	return records_changelog_append(store, &entry, NULL);
}
