/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Write transactions of the records store: zones created, versions bumped,
 * records inserted and deleted, each change logged in the same transaction
 * (the outbox), so nothing acknowledged can be missing from the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/sqlite.h"

void records_ids_forget(records_store_t *store)
{
	store->ids_loaded = false;
	store->ids_dirty = false;
}

int records_alloc_id(records_store_t *store, int64_t *id)
{
	if (!store->ids_loaded) {
		sqlite3_stmt *stmt;
		int ret = records_sql_prepare(store, "SELECT max(coalesce((SELECT"
		                              " max(id) FROM records), 0), coalesce("
		                              "(SELECT value FROM counters WHERE"
		                              " name = 'record_id'), 0))", &stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		int rc = sqlite3_step(stmt);
		store->next_id = rc == SQLITE_ROW ?
		                 sqlite3_column_int64(stmt, 0) + 1 : 0;
		ret = rc == SQLITE_ROW ? ZC_EOK : records_sql_error(store->db, rc);
		records_sql_done(store, stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		store->ids_loaded = true;
	}
	*id = store->next_id++;
	store->ids_dirty = true;
	return ZC_EOK;
}

int records_ids_flush(records_store_t *store)
{
	if (!store->ids_dirty) {
		return ZC_EOK;
	}
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "UPDATE counters SET value = ?"
	                              " WHERE name = 'record_id'", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, store->next_id - 1);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	store->ids_dirty = ret != ZC_EOK;
	return ret;
}

int records_write_begin(records_store_t *store)
{
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	int ret = records_sql_exec(store, "BEGIN IMMEDIATE");
	store->in_write = ret == ZC_EOK;
	return ret;
}

bool records_write_open(records_store_t *store)
{
	return !sqlite3_get_autocommit(store->db);
}

int records_write_commit(records_store_t *store)
{
	int ret = records_ids_flush(store);
	if (ret == ZC_EOK) {
		ret = records_counts_flush(store);
	}
	if (ret == ZC_EOK) {
		ret = records_sql_exec(store, "COMMIT");
	}
	if (ret != ZC_EOK) {
		if (records_write_open(store)) {
			records_sql_exec(store, "ROLLBACK");
		}
		store->version_zone = 0;
	}
	records_ids_forget(store);
	records_zrow_forget(store);
	store->in_write = false;
	return ret;
}

void records_write_rollback(records_store_t *store)
{
	if (records_write_open(store)) {
		records_sql_exec(store, "ROLLBACK");
	}
	store->version_zone = 0;
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	store->in_write = false;
}

int records_savepoint(records_store_t *store)
{
	records_counts_mark(store, 0);
	return records_sql_run(store, "SAVEPOINT unit");
}

int records_savepoint_release(records_store_t *store)
{
	return records_sql_run(store, "RELEASE unit");
}

/* Undoes a savepoint (level 0: "unit", 1: "inner") and what this
 * connection keeps of it; nothing to undo in SQL when SQLite already
 * rolled the whole transaction back (disk full, I/O error). */
static void rollback_to(records_store_t *store, int level)
{
	if (records_write_open(store)) {
		records_sql_run(store, level == 0 ? "ROLLBACK TO unit" :
		                "ROLLBACK TO inner");
		records_sql_run(store, level == 0 ? "RELEASE unit" :
		                "RELEASE inner");
	}
	records_counts_restore(store, level);
	store->version_zone = 0;
	records_zrow_forget(store);
}

void records_savepoint_rollback(records_store_t *store)
{
	rollback_to(store, 0);
}

int records_inner_savepoint(records_store_t *store)
{
	records_counts_mark(store, 1);
	return records_sql_run(store, "SAVEPOINT inner");
}

int records_inner_release(records_store_t *store)
{
	return records_sql_run(store, "RELEASE inner");
}

void records_inner_rollback(records_store_t *store)
{
	rollback_to(store, 1);
}

int records_zone_get(records_store_t *store, int64_t id, records_zone_t *zone)
{
	if (store->in_write && store->zrow_valid && store->zrow.id == id) {
		*zone = store->zrow;
		return ZC_EOK;
	}
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT " RECORDS_ZONE_COLUMNS
	                              " FROM zones WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, id);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		records_zone_from_stmt(stmt, zone);
		if (store->in_write) {
			store->zrow = *zone;
			store->zrow_valid = true;
		}
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : rc == SQLITE_DONE ? ZC_ENOZONE :
	      records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

/* Indexes the first event of a zone version (IXFR starts there). */
static int log_version(records_store_t *store, const records_zone_t *zone,
                       int64_t seq)
{
	if (store->version_zone == zone->id &&
	    store->version_logged == zone->serial) {
		return ZC_EOK;
	}
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT OR REPLACE INTO"
	                              " zone_versions(zone_id, version, seq)"
	                              " VALUES (?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone->id);
	sqlite3_bind_int64(stmt, 2, zone->serial);
	sqlite3_bind_int64(stmt, 3, seq);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		store->version_zone = zone->id;
		store->version_logged = zone->serial;
	}
	return ret;
}

int records_journal_restart(records_store_t *store, int64_t zone_id,
                            uint32_t version)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "UPDATE zones SET ixfr_from = ?"
	                              " WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, version);
	sqlite3_bind_int64(stmt, 2, zone_id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

/* Appends a change event naming a node and type; record events carry
 * the record (TTL and rdata) so the log can serve as IXFR journal. */
static int log_event(records_store_t *store, const records_zone_t *zone,
                     records_change_kind_t kind, const uint8_t *okey,
                     size_t okey_len, uint16_t type, int64_t record_id,
                     uint32_t ttl, const uint8_t *rdata, uint16_t rdata_len)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "INSERT INTO changes(zone_id, apex,"
	                              " version, kind, okey, type, record_id, at,"
	                              " ttl, rdata)"
	                              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone->id);
	sqlite3_bind_blob(stmt, 2, zone->apex, knot_dname_size(zone->apex),
	                  SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, zone->serial);
	sqlite3_bind_int(stmt, 4, kind);
	if (okey != NULL) {
		sqlite3_bind_blob(stmt, 5, okey_len ? okey : (const uint8_t *)"",
		                  (int)okey_len, SQLITE_STATIC);
		sqlite3_bind_int(stmt, 6, type);
		sqlite3_bind_int64(stmt, 7, record_id);
		sqlite3_bind_int64(stmt, 9, ttl);
		sqlite3_bind_blob(stmt, 10, rdata_len ? rdata : (const uint8_t *)"",
		                  rdata_len, SQLITE_STATIC);
	}
	sqlite3_bind_int64(stmt, 8, records_now_ms());
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		ret = log_version(store, zone, sqlite3_last_insert_rowid(store->db));
	}
	if (ret == ZC_EOK && okey == NULL) {
		/* A zone-wide change: IXFR cannot span it. */
		ret = records_journal_restart(store, zone->id, zone->serial);
	}
	return ret;
}

int records_zone_touch(records_store_t *store, records_zone_t *zone)
{
	int ret = records_zone_bump(store, zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* An (empty) owner key: an event of the apex node, not zone-wide. */
	return log_event(store, zone, RECORDS_CHANGE_ZONE_TOUCHED,
	                 (const uint8_t *)"", 0, 0, 0, 0, NULL, 0);
}

int records_log_zone_event(records_store_t *store, const records_zone_t *zone,
                           records_change_kind_t kind)
{
	return log_event(store, zone, kind, NULL, 0, 0, 0, 0, NULL, 0);
}

int records_zone_set_serial(records_store_t *store, records_zone_t *zone,
                            uint32_t serial)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "UPDATE zones SET serial = ?,"
	                              " modified_on = ? WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t now = records_now_ms();
	sqlite3_bind_int64(stmt, 1, serial);
	sqlite3_bind_int64(stmt, 2, now);
	sqlite3_bind_int64(stmt, 3, zone->id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		zone->serial = serial;
		zone->modified_on = now;
		if (store->zrow_valid && store->zrow.id == zone->id) {
			store->zrow.serial = serial;
			store->zrow.modified_on = now;
		} else {
			records_zrow_forget(store);
		}
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

/* The owner's LF relative to the apex; KNOT_EOUTOFZONE if outside,
 * ZC_ENAMEKEY if no store can key it (dns/name.h). */
static int owner_key(const records_zone_t *zone, const knot_dname_t *owner,
                     uint8_t *okey, size_t *okey_len)
{
	uint8_t apex_lf[DNS_LF_MAXLEN], lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(zone->apex, apex_lf);
	size_t len = dns_name_to_lf(owner, lf);
	if (len < apex_len || memcmp(lf, apex_lf, apex_len) != 0) {
		return KNOT_EOUTOFZONE;
	}
	if (len - apex_len > DNS_LF_KEY_MAXLEN) {
		return ZC_ENAMEKEY;
	}
	*okey_len = len - apex_len;
	memcpy(okey, lf + apex_len, *okey_len);
	return ZC_EOK;
}

int records_record_insert(records_store_t *store, const records_zone_t *zone,
                          records_record_t *rec)
{
	uint8_t okey[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	size_t okey_len;
	knot_dname_copy_lower(owner, rec->owner);
	int ret = owner_key(zone, owner, okey, &okey_len);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_stmt *stmt;
	/* An update keeps the record's id: delete, then insert with it. */
	ret = records_sql_prepare(store, "INSERT INTO records(zone_id, okey,"
	                          " owner, type, ttl, rdata, comment, created_on,"
	                          " modified_on, id, api_form, tags) VALUES (?, ?,"
	                          " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t now = records_now_ms();
	if (rec->created_on == 0) {
		rec->created_on = now;
	}
	rec->modified_on = now;
	if (rec->id <= 0 && (ret = records_alloc_id(store, &rec->id)) != ZC_EOK) {
		records_sql_done(store, stmt);
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone->id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 3, owner, knot_dname_size(owner), SQLITE_STATIC);
	sqlite3_bind_int(stmt, 4, rec->type);
	sqlite3_bind_int64(stmt, 5, rec->ttl);
	sqlite3_bind_blob(stmt, 6, rec->rdata_len ? rec->rdata :
	                  (const uint8_t *)"", rec->rdata_len, SQLITE_STATIC);
	if (rec->comment != NULL) {
		sqlite3_bind_text(stmt, 7, rec->comment, -1, SQLITE_STATIC);
	}
	sqlite3_bind_int64(stmt, 8, rec->created_on);
	sqlite3_bind_int64(stmt, 9, rec->modified_on);
	sqlite3_bind_int64(stmt, 10, rec->id);
	sqlite3_bind_int(stmt, 11, rec->api_form);
	if (rec->tags != NULL) {
		sqlite3_bind_text(stmt, 12, rec->tags, -1, SQLITE_STATIC);
	}
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rec->zone_id = zone->id;
	ret = records_count_add(store, zone->id, 1);
	if (ret != ZC_EOK) {
		return ret;
	}
	return log_event(store, zone, RECORDS_CHANGE_RECORD_CREATED, okey,
	                 okey_len, rec->type, rec->id, rec->ttl, rec->rdata,
	                 rec->rdata_len);
}

int records_record_delete(records_store_t *store, const records_zone_t *zone,
                          int64_t id)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "DELETE FROM records WHERE id = ?"
	                              " AND zone_id = ? RETURNING okey, type, ttl,"
	                              " rdata",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, zone->id);
	int rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		ret = rc == SQLITE_DONE ? KNOT_ENOENT :
		      records_sql_error(store->db, rc);
		records_sql_done(store, stmt);
		return ret;
	}
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len = (size_t)sqlite3_column_bytes(stmt, 0);
	if (okey_len > sizeof(okey)) {
		records_sql_done(store, stmt);
		return ZC_EFORMAT;
	}
	if (okey_len > 0) {
		memcpy(okey, sqlite3_column_blob(stmt, 0), okey_len);
	}
	uint16_t type = (uint16_t)sqlite3_column_int(stmt, 1);
	uint32_t ttl = (uint32_t)sqlite3_column_int64(stmt, 2);
	uint8_t rdata[UINT16_MAX];
	size_t rdata_len = (size_t)sqlite3_column_bytes(stmt, 3);
	if (rdata_len > sizeof(rdata)) {
		records_sql_done(store, stmt);
		return ZC_EFORMAT;
	}
	if (rdata_len > 0) {
		memcpy(rdata, sqlite3_column_blob(stmt, 3), rdata_len);
	}
	sqlite3_step(stmt); /* Completes the statement. */
	records_sql_done(store, stmt);
	ret = records_count_add(store, zone->id, -1);
	if (ret != ZC_EOK) {
		return ret;
	}
	return log_event(store, zone, RECORDS_CHANGE_RECORD_DELETED, okey,
	                 okey_len, type, id, ttl, rdata, (uint16_t)rdata_len);
}

int records_zone_create(records_store_t *store, const knot_dname_t *apex,
                        uint32_t ttl, const uint8_t *soa, uint16_t soa_len,
                        const knot_dname_t *const *ns, unsigned ns_count,
                        records_zone_t *zone)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, apex);
	if (records_zone_find(store, lower, zone) == ZC_EOK) {
		return ZC_EEXISTS;
	}
	sqlite3_stmt *stmt;
	records_zrow_forget(store);
	int ret = records_sql_prepare(store, "INSERT INTO zones(name, apex,"
	                              " serial, default_ttl, created_on,"
	                              " modified_on) VALUES (?, ?, ?, ?, ?, ?)",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, lower, sizeof(name));
	int64_t now = records_now_ms();
	uint32_t serial = (uint32_t)soa[soa_len - 20] << 24 |
	                  (uint32_t)soa[soa_len - 19] << 16 |
	                  (uint32_t)soa[soa_len - 18] << 8 | soa[soa_len - 17];
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(stmt, 2, lower, knot_dname_size(lower), SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, serial);
	sqlite3_bind_int64(stmt, 4, ttl);
	sqlite3_bind_int64(stmt, 5, now);
	sqlite3_bind_int64(stmt, 6, now);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
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

int records_rows_foreach(sqlite3_stmt *stmt, records_store_t *store,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx)
{
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_record_t rec = {
			.id = sqlite3_column_int64(stmt, 0),
			.zone_id = sqlite3_column_int64(stmt, 1),
			.owner = sqlite3_column_blob(stmt, 2),
			.type = (uint16_t)sqlite3_column_int(stmt, 3),
			.ttl = (uint32_t)sqlite3_column_int64(stmt, 4),
			.rdata = sqlite3_column_blob(stmt, 5),
			.rdata_len = (uint16_t)sqlite3_column_bytes(stmt, 5),
			.comment = (const char *)sqlite3_column_text(stmt, 6),
			.created_on = sqlite3_column_int64(stmt, 7),
			.modified_on = sqlite3_column_int64(stmt, 8),
			.api_form = (uint8_t)sqlite3_column_int(stmt, 9),
			.tags = (const char *)sqlite3_column_text(stmt, 10),
		};
		if (rec.owner == NULL) {
			continue;
		}
		if (rec.rdata == NULL) {
			rec.rdata = (const uint8_t *)"";
		}
		if (cb(&rec, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	return records_sql_error(store->db, rc);
}

int records_filter_key(records_store_t *store, int64_t zone_id,
                       const knot_dname_t *owner, uint8_t *okey,
                       size_t *okey_len)
{
	records_zone_t zone;
	*okey_len = 0;
	if (owner == NULL) {
		return ZC_EOK;
	}
	int ret = ZC_EOK;
	if (store->apex_zone == zone_id) {
		zone.id = zone_id;
		memcpy(zone.apex, store->apex, knot_dname_size(store->apex));
	} else {
		ret = records_zone_get(store, zone_id, &zone);
		if (ret == ZC_EOK) {
			store->apex_zone = zone_id;
			memcpy(store->apex, zone.apex, knot_dname_size(zone.apex));
		}
	}
	if (ret == ZC_EOK) {
		uint8_t lower[KNOT_DNAME_MAXLEN];
		knot_dname_copy_lower(lower, owner);
		ret = owner_key(&zone, lower, okey, okey_len);
	}
	return ret;
}

static void bind_filter(sqlite3_stmt *stmt, int64_t zone_id,
                        const knot_dname_t *owner, const uint8_t *okey,
                        size_t okey_len, uint16_t type)
{
	sqlite3_bind_int64(stmt, 1, zone_id);
	if (owner != NULL) {
		sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		                  (int)okey_len, SQLITE_STATIC);
	}
	if (type != 0) {
		sqlite3_bind_int(stmt, 3, type);
	}
}

int records_record_foreach(records_store_t *store, int64_t zone_id,
                           const knot_dname_t *owner, uint16_t type,
                           int (*cb)(const records_record_t *rec, void *ctx),
                           void *ctx)
{
	/* One statement per filter shape: an "?2 IS NULL OR okey = ?2" form
	 * would keep SQLite from using the (zone_id, okey, type) index and
	 * make every write scan the whole zone. */
	static const char *const sql[4] = {
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" ORDER BY okey, type, id",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND type = ?3 ORDER BY okey, type, id",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND okey = ?2 ORDER BY type, id",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND okey = ?2 AND type = ?3 ORDER BY id",
	};
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	int ret = records_filter_key(store, zone_id, owner, okey, &okey_len);
	if (ret == KNOT_EOUTOFZONE || ret == ZC_ENAMEKEY) {
		return ZC_EOK; /* Nothing matches. */
	}
	sqlite3_stmt *stmt;
	if (ret == ZC_EOK) {
		ret = records_sql_prepare(store,
		                          sql[(owner != NULL) * 2 + (type != 0)],
		                          &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_filter(stmt, zone_id, owner, okey, okey_len, type);
	ret = records_rows_foreach(stmt, store, cb, ctx);
	records_sql_done(store, stmt);
	return ret;
}

int records_record_page(records_store_t *store, int64_t zone_id,
                        const knot_dname_t *owner, uint16_t type,
                        int64_t offset, int64_t limit, int64_t *total,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx)
{
	/* The same four filter shapes as records_record_foreach(), each
	 * served by the (zone_id, okey, type) index. */
	static const char *const count_sql[4] = {
		"SELECT count(*) FROM records WHERE zone_id = ?1",
		"SELECT count(*) FROM records WHERE zone_id = ?1 AND type = ?3",
		"SELECT count(*) FROM records WHERE zone_id = ?1 AND okey = ?2",
		("SELECT count(*) FROM records WHERE zone_id = ?1 AND okey = ?2"
		 " AND type = ?3"),
	};
	static const char *const page_sql[4] = {
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" ORDER BY okey, type, id LIMIT ?4 OFFSET ?5",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND type = ?3 ORDER BY okey, type, id LIMIT ?4 OFFSET ?5",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND okey = ?2 ORDER BY type, id LIMIT ?4 OFFSET ?5",
		"SELECT " RECORDS_RECORD_COLUMNS " FROM records WHERE zone_id = ?1"
		" AND okey = ?2 AND type = ?3 ORDER BY id LIMIT ?4 OFFSET ?5",
	};
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	*total = 0;
	int ret = records_filter_key(store, zone_id, owner, okey, &okey_len);
	if (ret == KNOT_EOUTOFZONE || ret == ZC_ENAMEKEY) {
		return ZC_EOK;
	}
	int shape = (owner != NULL) * 2 + (type != 0);
	sqlite3_stmt *stmt;
	if (ret == ZC_EOK) {
		ret = records_sql_prepare(store, count_sql[shape], &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_filter(stmt, zone_id, owner, okey, okey_len, type);
	int rc = sqlite3_step(stmt);
	*total = (rc == SQLITE_ROW) ? sqlite3_column_int64(stmt, 0) : 0;
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		ret = records_sql_prepare(store, page_sql[shape], &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_filter(stmt, zone_id, owner, okey, okey_len, type);
	sqlite3_bind_int64(stmt, 4, limit);
	sqlite3_bind_int64(stmt, 5, offset);
	ret = records_rows_foreach(stmt, store, cb, ctx);
	records_sql_done(store, stmt);
	return ret;
}

int records_record_find(records_store_t *store, int64_t zone_id, int64_t id,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT " RECORDS_RECORD_COLUMNS
	                              " FROM records"
	                              " WHERE id = ? AND zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, id);
	sqlite3_bind_int64(stmt, 2, zone_id);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		sqlite3_reset(stmt);
		ret = records_rows_foreach(stmt, store, cb, ctx);
	} else {
		ret = rc == SQLITE_DONE ? KNOT_ENOENT :
		      records_sql_error(store->db, rc);
	}
	records_sql_done(store, stmt);
	return ret;
}
