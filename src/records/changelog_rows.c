/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the change log's two readers share (changelog.c on SQLite,
 * changelog_pg.c on PostgreSQL, changelog.h has the design): an event's
 * row read into a records_change_t, the zone-activity rows of
 * records_zone_activity(), an identity from its text, one-integer
 * statements, and the end of a trim with the mark it leaves for other
 * nodes' builders (records_trimmed_seq()).
 */
#include <stddef.h>
#include <string.h>

#include "common/error.h"
#include "common/hash.h"
#include "records/internal.h"

bool records_change_from_stmt(rdb_stmt_t *stmt, int col,
                              records_change_t *chg)
{
	memset(chg, 0, offsetof(records_change_t, okey));
	chg->okey_len = 0;
	chg->zone_id = rdb_col_int64(stmt, col);
	chg->version = (uint32_t)rdb_col_int64(stmt, col + 2);
	chg->kind = (int)rdb_col_int64(stmt, col + 3);
	int len = (int)rdb_col_bytes(stmt, col + 1);
	if (len <= 0 || len > KNOT_DNAME_MAXLEN) {
		return false;
	}
	memcpy(chg->apex, rdb_col_blob(stmt, col + 1, NULL), len);
	int klen = (int)rdb_col_bytes(stmt, col + 4);
	if (klen > 0 && klen <= (int)sizeof(chg->okey)) {
		memcpy(chg->okey, rdb_col_blob(stmt, col + 4, NULL), klen);
		chg->okey_len = (size_t)klen;
	}
	chg->type = (uint16_t)rdb_col_int64(stmt, col + 5);
	return true;
}

uint64_t records_log_mark_id(const char *text)
{
	if (text == NULL || text[0] == '\0') {
		return 0;
	}
	uint64_t h = zc_hash_bytes(UINT64_C(0xcbf29ce484222325),
	                           (const uint8_t *)text, strlen(text));
	h = zc_hash_finish(h);
	return h != 0 ? h : 1;
}

int records_activity_rows(records_store_t *store, rdb_stmt_t *stmt,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx)
{
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		if (cb(rdb_col_int64(stmt, 0),
		       (uint64_t)rdb_col_int64(stmt, 1), ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	rdb_done(stmt);
	rdb_end_read(store->db);
	return rdb_status(rc);
}

int records_exec_int64(records_store_t *store, const rdb_sql_t *sql,
                       int64_t x)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, x);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_query_int64(records_store_t *store, const rdb_sql_t *sql,
                        int64_t x, int64_t *out)
{
	rdb_stmt_t *stmt;
	*out = 0;
	int ret = rdb_prepare(store->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, x);
	int rc = rdb_step(stmt);
	*out = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	if (rc == RDB_ROW) {
		rc = rdb_step(stmt);
	}
	rdb_done(stmt);
	return rdb_status(rc);
}

int records_trimmed_mark(records_store_t *store, uint64_t seq)
{
	/* Where the log now starts, for builders of other nodes that have
	 * not read that far (records_trimmed_seq()). */
	return records_exec_int64(store, RDB_SQL2(
		"INSERT INTO counters(name, value) VALUES"
		" ('trimmed_seq', ?1) ON CONFLICT(name) DO UPDATE SET"
		" value = max(value, excluded.value)",
		"INSERT INTO counters(name, value) VALUES"
		" ('trimmed_seq', ?1) ON CONFLICT(name) DO UPDATE SET"
		" value = greatest(counters.value, excluded.value)"),
		(int64_t)seq);
}

int records_trim_end(records_store_t *store, int ret)
{
	/* A trim appends nothing: the change log's memory of the versions
	 * it indexed (store->version_zone) is not touched by a rollback. */
	if (ret == ZC_EOK) {
		ret = rdb_commit(store->db);
	}
	if (ret != ZC_EOK) {
		rdb_rollback(store->db);
	}
	return ret;
}
