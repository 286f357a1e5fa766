/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Record rows: ids that are never handed out twice (SQLite: a
 * high-water mark in counters; PostgreSQL: the sequence record_ids),
 * inserts and deletes (each logged in the change log in the same
 * transaction and counted per zone), and reading a row into a
 * records_record_t.
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/changelog.h"
#include "records/internal.h"

void records_ids_forget(records_store_t *store)
{
	store->ids_loaded = false;
	store->ids_dirty = false;
	/* PostgreSQL: the ids drawn and not handed out are dropped (a gap in
	 * the sequence, never an id given twice), and the next transaction
	 * draws from the sequence as it is then, with small blocks again. A
	 * block kept across transactions outlived a restore of the database
	 * (the sequence put back below it): its ids were handed out after
	 * the restore, then drawn again from the sequence, and writes failed
	 * with "already exists" (outside tester 29). */
	store->ids_at = store->ids_n = 0;
	store->ids_block = 0;
}

/*
 * PostgreSQL: the next id from the block drawn from the sequence
 * record_ids, drawing another block when it is used up. Writers of every
 * node run at once, so no high-water mark read at the start of a
 * transaction would do (two would hand out the same id); a sequence value
 * is never drawn twice, even when the transaction that drew it rolls back
 * (that id is merely skipped). A block doubles within a transaction, so a
 * unit of one record draws 16 and an import of a million a few hundred
 * blocks of RECORDS_ID_BLOCK_MAX.
 */
/* Draws the next block, of at least `least` ids (up to the most a block
 * holds); what the last block had left is skipped. */
static int draw_block(records_store_t *store, size_t least)
{
	size_t n = store->ids_block == 0 ? RECORDS_ID_BLOCK_MIN :
	           store->ids_block * 2;
	n = n < least ? least : n;
	n = n > RECORDS_ID_BLOCK_MAX ? RECORDS_ID_BLOCK_MAX : n;
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT nextval('record_ids')"
		" FROM generate_series(1, ?1)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, (int64_t)n);
	size_t got = 0;
	int rc = RDB_DONE;
	while (got < n && (rc = rdb_step(stmt)) == RDB_ROW) {
		store->ids[got++] = rdb_col_int64(stmt, 0);
	}
	ret = got == n ? ZC_EOK : rc < 0 ? rc : ZC_ESQL;
	rdb_done(stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	store->ids_at = 0;
	store->ids_n = n;
	store->ids_block = n;
	return ZC_EOK;
}

static int next_pg_id(records_store_t *store, int64_t *id)
{
	if (store->ids_at == store->ids_n) {
		int ret = draw_block(store, 0);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	*id = store->ids[store->ids_at++];
	return ZC_EOK;
}

int records_ids_reserve(records_store_t *store, size_t n)
{
	if (rdb_kind(store->db) != RDB_PG) {
		return ZC_EOK; /* SQLite counts in memory. */
	}
	n = n > RECORDS_ID_BLOCK_MAX ? RECORDS_ID_BLOCK_MAX : n;
	return store->ids_n - store->ids_at >= n ? ZC_EOK :
	       draw_block(store, n);
}

int records_alloc_id(records_store_t *store, int64_t *id)
{
	if (rdb_kind(store->db) == RDB_PG) {
		return next_pg_id(store, id);
	}
	if (!store->ids_loaded) {
		rdb_stmt_t *stmt;
		int ret = rdb_prepare(store->db, RDB_SQLITE_ONLY(
			"SELECT max(coalesce((SELECT max(id) FROM records), 0),"
			" coalesce((SELECT value FROM counters"
			" WHERE name = 'record_id'), 0))"), &stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		int rc = rdb_step(stmt);
		store->next_id = rc == RDB_ROW ?
		                 rdb_col_int64(stmt, 0) + 1 : 0;
		ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
		rdb_done(stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		store->ids_loaded = true;
	}
	*id = store->next_id++;
	store->ids_dirty = true;
	return ZC_EOK;
}

/*
 * PostgreSQL: n ids drawn from record_ids in one statement. They come
 * back as runs of consecutive ids (first, last, count), so that a million
 * ids cost one round trip and a few rows: one run, unless other writers
 * drew ids meanwhile. A run groups the ids by id - g, g being the draw's
 * row number; PostgreSQL evaluates nextval() in the series' order, and a
 * run whose ids would not be consecutive all the same is refused.
 */
static int draw_pg_ids(records_store_t *store, size_t n, int64_t *ids)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT min(id), max(id), count(*) FROM"
		" (SELECT g, nextval('record_ids') AS id"
		"  FROM generate_series(1, ?1) g) d"
		" GROUP BY id - g ORDER BY 1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, (int64_t)n);
	size_t got = 0;
	int rc = RDB_DONE;
	while (ret == ZC_EOK && (rc = rdb_step(stmt)) == RDB_ROW) {
		int64_t first = rdb_col_int64(stmt, 0);
		int64_t last = rdb_col_int64(stmt, 1);
		int64_t count = rdb_col_int64(stmt, 2);
		if (last - first + 1 != count || count > (int64_t)(n - got)) {
			ret = ZC_ESQL;
			break;
		}
		for (int64_t id = first; id <= last; id++) {
			ids[got++] = id;
		}
	}
	rdb_done(stmt);
	if (ret == ZC_EOK && (rc < 0 || got != n)) {
		ret = rc < 0 ? rc : ZC_ESQL;
	}
	return ret;
}

int records_alloc_ids(records_store_t *store, size_t n, int64_t *ids)
{
	if (n > 0 && rdb_kind(store->db) == RDB_PG) {
		return draw_pg_ids(store, n, ids);
	}
	int ret = ZC_EOK;
	for (size_t i = 0; i < n && ret == ZC_EOK; i++) {
		ret = records_alloc_id(store, &ids[i]);
	}
	return ret;
}

int records_ids_flush(records_store_t *store)
{
	/* PostgreSQL: nothing to write, the sequence keeps the mark. */
	if (!store->ids_dirty || rdb_kind(store->db) == RDB_PG) {
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE counters SET value = ?1"
		" WHERE name = 'record_id'"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, store->next_id - 1);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	store->ids_dirty = ret != ZC_EOK;
	return ret;
}

int records_owner_key(const knot_dname_t *apex, const knot_dname_t *owner,
                      uint8_t *okey, size_t *okey_len)
{
	uint8_t apex_lf[DNS_LF_MAXLEN], lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(apex, apex_lf);
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

/* Logs a record event at the zone's version. */
static int log_record(records_store_t *store, const records_zone_t *zone,
                      records_change_kind_t kind, const uint8_t *okey,
                      size_t okey_len, uint16_t type, int64_t id,
                      uint32_t ttl, const uint8_t *rdata, uint16_t rdata_len)
{
	records_change_entry_t entry = {
		.zone_id = zone->id, .apex = zone->apex,
		.version = zone->serial, .kind = kind,
		.okey = okey, .okey_len = okey_len, .type = type,
		.record_id = id, .ttl = ttl, .rdata = rdata,
		.rdata_len = rdata_len,
	};
	return records_changelog_append(store, &entry, NULL);
}

/* records_record_insert(), or with keep_modified records_record_restore(). */
static int insert_record(records_store_t *store, const records_zone_t *zone,
                         records_record_t *rec, bool keep_modified)
{
	uint8_t okey[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	size_t okey_len;
	knot_dname_copy_lower(owner, rec->owner);
	int ret = records_owner_key(zone->apex, owner, okey, &okey_len);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_stmt_t *stmt;
	/* An update keeps the record's id: delete, then insert with it. */
	ret = rdb_prepare(store->db, RDB_SQL(
		"INSERT INTO records(zone_id, okey,"
		" owner, type, ttl, rdata, comment, created_on,"
		" modified_on, id, api_form, tags) VALUES (?1, ?2,"
		" ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t now = records_now_ms();
	if (rec->created_on == 0) {
		rec->created_on = now;
	}
	if (!keep_modified || rec->modified_on == 0) {
		rec->modified_on = now;
	}
	if (rec->id <= 0 && (ret = records_alloc_id(store, &rec->id)) != ZC_EOK) {
		rdb_done(stmt);
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone->id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	rdb_bind_blob(stmt, 3, owner, knot_dname_size(owner));
	rdb_bind_int64(stmt, 4, rec->type);
	rdb_bind_int64(stmt, 5, rec->ttl);
	rdb_bind_blob(stmt, 6, rec->rdata_len ? rec->rdata :
		      (const uint8_t *)"", rec->rdata_len);
	if (rec->comment != NULL) {
		rdb_bind_text(stmt, 7, rec->comment);
	}
	rdb_bind_int64(stmt, 8, rec->created_on);
	rdb_bind_int64(stmt, 9, rec->modified_on);
	rdb_bind_int64(stmt, 10, rec->id);
	rdb_bind_int64(stmt, 11, rec->api_form);
	if (rec->tags != NULL) {
		rdb_bind_text(stmt, 12, rec->tags);
	}
	/* Queued on PostgreSQL, with the unit's other records as one
	 * statement: a clash surfaces at the unit's next read or its
	 * release, and fails the unit all the same. */
	ret = rdb_defer_row(stmt, "ibbiibtiiiit");
	rdb_done(stmt);
	records_prefetch_forget_node(store, zone->id, okey, okey_len);
	if (rec->type == KNOT_RRTYPE_DNAME) {
		records_prefetch_forget_dnames(store, zone->id);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rec->zone_id = zone->id;
	ret = records_count_add(store, zone->id, 1);
	if (ret != ZC_EOK) {
		return ret;
	}
	return log_record(store, zone, RECORDS_CHANGE_RECORD_CREATED, okey,
	                  okey_len, rec->type, rec->id, rec->ttl, rec->rdata,
	                  rec->rdata_len);
}

int records_record_insert(records_store_t *store, const records_zone_t *zone,
                          records_record_t *rec)
{
	return insert_record(store, zone, rec, false);
}

int records_record_restore(records_store_t *store, const records_zone_t *zone,
                           records_record_t *rec)
{
	return insert_record(store, zone, rec, true);
}

int records_record_delete(records_store_t *store, const records_zone_t *zone,
                          int64_t id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"DELETE FROM records WHERE id = ?1"
		" AND zone_id = ?2 RETURNING okey, type, ttl,"
		" rdata"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	rdb_bind_int64(stmt, 2, zone->id);
	int rc = rdb_step(stmt);
	if (rc != RDB_ROW) {
		ret = rc == RDB_DONE ? KNOT_ENOENT :
		      rdb_status(rc);
		rdb_done(stmt);
		return ret;
	}
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len = rdb_col_bytes(stmt, 0);
	if (okey_len > sizeof(okey)) {
		rdb_done(stmt);
		return ZC_EFORMAT;
	}
	if (okey_len > 0) {
		memcpy(okey, rdb_col_blob(stmt, 0, NULL), okey_len);
	}
	uint16_t type = (uint16_t)rdb_col_int64(stmt, 1);
	uint32_t ttl = (uint32_t)rdb_col_int64(stmt, 2);
	uint8_t rdata[UINT16_MAX];
	size_t rdata_len = rdb_col_bytes(stmt, 3);
	if (rdata_len > sizeof(rdata)) {
		rdb_done(stmt);
		return ZC_EFORMAT;
	}
	if (rdata_len > 0) {
		memcpy(rdata, rdb_col_blob(stmt, 3, NULL), rdata_len);
	}
	rdb_step(stmt); /* Completes the statement. */
	rdb_done(stmt);
	records_prefetch_forget_node(store, zone->id, okey, okey_len);
	if (type == KNOT_RRTYPE_DNAME) {
		records_prefetch_forget_dnames(store, zone->id);
	}
	ret = records_count_add(store, zone->id, -1);
	if (ret != ZC_EOK) {
		return ret;
	}
	return log_record(store, zone, RECORDS_CHANGE_RECORD_DELETED, okey,
	                  okey_len, type, id, ttl, rdata, (uint16_t)rdata_len);
}

int records_rows_foreach(rdb_stmt_t *stmt,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx)
{
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_record_t rec = {
			.id = rdb_col_int64(stmt, 0),
			.zone_id = rdb_col_int64(stmt, 1),
			.owner = rdb_col_blob(stmt, 2, NULL),
			.type = (uint16_t)rdb_col_int64(stmt, 3),
			.ttl = (uint32_t)rdb_col_int64(stmt, 4),
			.rdata = rdb_col_blob(stmt, 5, NULL),
			.rdata_len = (uint16_t)rdb_col_bytes(stmt, 5),
			.comment = rdb_col_text(stmt, 6),
			.created_on = rdb_col_int64(stmt, 7),
			.modified_on = rdb_col_int64(stmt, 8),
			.api_form = (uint8_t)rdb_col_int64(stmt, 9),
			.tags = rdb_col_text(stmt, 10),
		};
		if (rec.owner == NULL) {
			continue;
		}
		if (rec.rdata == NULL) {
			rec.rdata = (const uint8_t *)"";
		}
		if (cb(&rec, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	return rdb_status(rc);
}
