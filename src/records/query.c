/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Reading records by id and by filter (owner, type): the lookups of
 * units of work (records_record_foreach(), _find(), and their forms for
 * many ids or owners at once, _find_many() and _foreach_owners(), one
 * statement on PostgreSQL) and the API's listings
 * (records_record_query()).
 *
 * Listings take an owner and a type filter, three orders, either
 * direction, a page. Each shape of query is its own statement, built once, so that SQLite
 * plans every one with the filter's index: an owner filter uses
 * records_node (zone_id, okey, type), a type filter records_type
 * (zone_id, type, okey); both give their rows already in name order, so
 * neither a listing by name nor one by type walks the zone. Only an order
 * by TTL sorts (in SQLite's temporary b-tree). records_query_plan() gives
 * SQLite's plan of a query, which the unit tests check.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"
#include "records/rules.h"

/* --- Lookups by owner, type and id --- */

/* The owner's key relative to the zone's apex, for a filter: NULL owner
 * gives length 0; KNOT_EOUTOFZONE or ZC_ENAMEKEY when no record can have
 * that owner. */
static int filter_key(records_store_t *store, int64_t zone_id,
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
		ret = records_owner_key(zone.apex, lower, okey, okey_len);
	}
	return ret;
}

static void bind_filter(rdb_stmt_t *stmt, int64_t zone_id,
                        const knot_dname_t *owner, const uint8_t *okey,
                        size_t okey_len, uint16_t type)
{
	rdb_bind_int64(stmt, 1, zone_id);
	if (owner != NULL) {
		rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
			      (int)okey_len);
	}
	if (type != 0) {
		rdb_bind_int64(stmt, 3, type);
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
	int ret = filter_key(store, zone_id, owner, okey, &okey_len);
	if (ret == KNOT_EOUTOFZONE || ret == ZC_ENAMEKEY) {
		return ZC_EOK; /* Nothing matches. */
	}
	if (ret == ZC_EOK && owner != NULL &&
	    records_prefetched(store, zone_id, okey, okey_len, type, cb, ctx)) {
		return ZC_EOK; /* Read ahead with its batch's others. */
	}
	rdb_stmt_t *stmt;
	if (ret == ZC_EOK) {
		const char *text = sql[(owner != NULL) * 2 + (type != 0)];
		ret = rdb_prepare(store->db, RDB_SQL(text), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_filter(stmt, zone_id, owner, okey, okey_len, type);
	ret = records_rows_foreach(stmt, cb, ctx);
	rdb_done(stmt);
	return ret;
}

void records_hint_node(records_store_t *store, int64_t zone_id,
                       const knot_dname_t *apex, const knot_dname_t *owner)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	knot_dname_copy_lower(lower, owner);
	if (records_owner_key(apex, lower, okey, &okey_len) == ZC_EOK) {
		records_prefetch_hint(store, zone_id, okey, okey_len);
	}
}

typedef struct {
	int (*cb)(const records_record_t *rec, void *ctx);
	void *ctx;
	bool found, stopped;
} find_t;

static int found(const records_record_t *rec, void *ctx)
{
	find_t *f = ctx;
	f->found = true;
	return f->cb(rec, f->ctx);
}

/* found(), remembering that cb asked to stop. */
static int found_stop(const records_record_t *rec, void *ctx)
{
	find_t *f = ctx;
	f->stopped = f->cb(rec, f->ctx) != 0;
	return f->stopped;
}

int records_record_find(records_store_t *store, int64_t zone_id, int64_t id,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT " RECORDS_RECORD_COLUMNS
		" FROM records"
		" WHERE id = ?1 AND zone_id = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, id);
	rdb_bind_int64(stmt, 2, zone_id);
	/* One step: on PostgreSQL a step after a reset asks again. */
	find_t f = { .cb = cb, .ctx = ctx };
	ret = records_rows_foreach(stmt, found, &f);
	rdb_done(stmt);
	return ret == ZC_EOK && !f.found ? KNOT_ENOENT : ret;
}

int records_record_find_many(records_store_t *store, int64_t zone_id,
                             const int64_t *ids, size_t count,
                             int (*cb)(const records_record_t *rec, void *ctx),
                             void *ctx)
{
	if (!rdb_has_arrays(store->db)) {
		find_t f = { .cb = cb, .ctx = ctx };
		for (size_t i = 0; i < count; i++) {
			int ret = records_record_find(store, zone_id, ids[i],
			                              found_stop, &f);
			if (ret != ZC_EOK && ret != KNOT_ENOENT) {
				return ret;
			}
			if (f.stopped) {
				break; /* cb asked to stop. */
			}
		}
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT " RECORDS_RECORD_COLUMNS
		" FROM records"
		" WHERE zone_id = ?1 AND id = ANY(?2)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64_array(stmt, 2, ids, count);
	ret = records_rows_foreach(stmt, cb, ctx);
	rdb_done(stmt);
	return ret;
}

/* Owners per statement of records_record_foreach_owners() at most. */
#define OWNERS_PER_READ 4096

/* The records at owners[0, count) with okey = ANY: one statement. */
static int owners_slice(records_store_t *store, int64_t zone_id,
                        const knot_dname_t *const *owners, size_t count,
                        uint8_t *buf, const uint8_t **keys, size_t *lens,
                        find_t *f)
{
	size_t n = 0;
	for (size_t i = 0; i < count; i++) {
		uint8_t *okey = buf + n * DNS_LF_MAXLEN;
		int ret = filter_key(store, zone_id, owners[i], okey, &lens[n]);
		if (ret == KNOT_EOUTOFZONE || ret == ZC_ENAMEKEY) {
			continue; /* No record has that owner. */
		}
		if (ret != ZC_EOK) {
			return ret;
		}
		keys[n++] = okey;
	}
	if (n == 0) {
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT " RECORDS_RECORD_COLUMNS
		" FROM records"
		" WHERE zone_id = ?1 AND okey = ANY(?2)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob_array(stmt, 2, (const void *const *)keys, lens, n);
	ret = records_rows_foreach(stmt, found_stop, f);
	rdb_done(stmt);
	return ret;
}

bool records_reads_at_once(const records_store_t *store)
{
	return rdb_has_arrays(store->db);
}

int records_record_foreach_owners(records_store_t *store, int64_t zone_id,
                                  const knot_dname_t *const *owners,
                                  size_t count,
                                  int (*cb)(const records_record_t *rec,
                                            void *ctx),
                                  void *ctx)
{
	find_t f = { .cb = cb, .ctx = ctx };
	if (!rdb_has_arrays(store->db)) {
		int ret = ZC_EOK;
		/* A stop from cb ends the reading, not just its owner. */
		for (size_t i = 0; i < count && ret == ZC_EOK && !f.stopped; i++) {
			ret = records_record_foreach(store, zone_id, owners[i], 0,
			                             found_stop, &f);
		}
		return ret;
	}
	size_t slice = count < OWNERS_PER_READ ? count : OWNERS_PER_READ;
	uint8_t *buf = malloc((slice ? slice : 1) * DNS_LF_MAXLEN);
	const uint8_t **keys = malloc((slice ? slice : 1) * sizeof(*keys));
	size_t *lens = malloc((slice ? slice : 1) * sizeof(*lens));
	int ret = buf && keys && lens ? ZC_EOK : KNOT_ENOMEM;
	for (size_t from = 0; from < count && ret == ZC_EOK && !f.stopped;
	     from += slice) {
		size_t n = count - from < slice ? count - from : slice;
		ret = owners_slice(store, zone_id, owners + from, n, buf, keys,
		                   lens, &f);
	}
	free(lens);
	free(keys);
	free(buf);
	return ret;
}

/* --- Listings in any order --- */

#define SHAPES (2 * 2 * 3 * 2) /* owner, type, order, direction */
#define SQL_MAX 320

static char page_sql[SHAPES][SQL_MAX];
static char count_sql[4][SQL_MAX];
static char plan_sql[SHAPES][SQL_MAX + 32];
static char plan_pg_sql[SHAPES][SQL_MAX + 32];
static pthread_once_t sql_once = PTHREAD_ONCE_INIT;

static int shape_of(const records_query_t *q)
{
	return (((q->owner != NULL) * 2 + (q->type != 0)) * 3 + (int)q->order) * 2 +
	       (q->descending ? 1 : 0);
}

static const char *order_clause(int order, bool desc)
{
	static const char *const clauses[3][2] = {
		{ "okey, type, id", "okey DESC, type DESC, id DESC" },
		{ "type, okey, id", "type DESC, okey DESC, id DESC" },
		{ "ttl, okey, type, id", "ttl DESC, okey DESC, type DESC, id DESC" },
	};
	return clauses[order][desc ? 1 : 0];
}

/* Builds the statements of every shape (their texts stay at the same
 * addresses, which the statement cache keys on). */
static void build_sql(void)
{
	for (int owner = 0; owner < 2; owner++) {
		for (int type = 0; type < 2; type++) {
			const char *where = owner && type ? " AND okey = ?2 AND type = ?3" :
			                    owner ? " AND okey = ?2" :
			                    type ? " AND type = ?3" : "";
			snprintf(count_sql[owner * 2 + type], SQL_MAX, "SELECT count(*)"
			         " FROM records WHERE zone_id = ?1%s", where);
			for (int order = 0; order < 3; order++) {
				for (int desc = 0; desc < 2; desc++) {
					int s = ((owner * 2 + type) * 3 + order) * 2 + desc;
					snprintf(page_sql[s], SQL_MAX, "SELECT "
					         RECORDS_RECORD_COLUMNS " FROM records WHERE"
					         " zone_id = ?1%s ORDER BY %s LIMIT ?4"
					         " OFFSET ?5", where,
					         order_clause(order, desc));
					memcpy(plan_sql[s], "EXPLAIN QUERY PLAN ", 19);
					memcpy(plan_sql[s] + 19, page_sql[s], SQL_MAX);
					memcpy(plan_pg_sql[s], "EXPLAIN (COSTS OFF) ", 20);
					memcpy(plan_pg_sql[s] + 20, page_sql[s], SQL_MAX);
				}
			}
		}
	}
}

/* Binds a query's parameters (those its statement does not name are
 * ignored by SQLite's numbered parameters: each statement names its own). */
static void bind_query(rdb_stmt_t *stmt, int64_t zone_id,
                       const records_query_t *q, const uint8_t *okey,
                       size_t okey_len)
{
	rdb_bind_int64(stmt, 1, zone_id);
	if (q->owner != NULL) {
		rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
			      (int)okey_len);
	}
	if (q->type != 0) {
		rdb_bind_int64(stmt, 3, q->type);
	}
}

static int count_rows(records_store_t *store, int64_t zone_id,
                      const records_query_t *q, const uint8_t *okey,
                      size_t okey_len, int64_t *total)
{
	rdb_stmt_t *stmt;
	const char *sql = count_sql[(q->owner != NULL) * 2 + (q->type != 0)];
	int ret = rdb_prepare(store->db, RDB_SQL(sql), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_query(stmt, zone_id, q, okey, okey_len);
	int rc = rdb_step(stmt);
	*total = (rc == RDB_ROW) ? rdb_col_int64(stmt, 0) : 0;
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_record_query(records_store_t *store, int64_t zone_id,
                         const records_query_t *q, int64_t *total,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx)
{
	if (store == NULL || q == NULL || (unsigned)q->order > RECORDS_ORDER_TTL) {
		return KNOT_EINVAL;
	}
	pthread_once(&sql_once, build_sql);
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len = 0;
	if (total != NULL) {
		*total = 0;
	}
	int ret = filter_key(store, zone_id, q->owner, okey, &okey_len);
	if (ret == KNOT_EOUTOFZONE || ret == ZC_ENAMEKEY) {
		return ZC_EOK; /* No record has that owner. */
	}
	if (ret == ZC_EOK && total != NULL) {
		ret = count_rows(store, zone_id, q, okey, okey_len, total);
	}
	rdb_stmt_t *stmt;
	if (ret == ZC_EOK) {
		const char *sql = page_sql[shape_of(q)];
		ret = rdb_prepare(store->db, RDB_SQL(sql), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_query(stmt, zone_id, q, okey, okey_len);
	/* No limit: the largest (a negative LIMIT is SQLite's only). */
	rdb_bind_int64(stmt, 4, q->limit < 0 ? INT64_MAX : q->limit);
	rdb_bind_int64(stmt, 5, q->offset);
	ret = records_rows_foreach(stmt, cb, ctx);
	rdb_done(stmt);
	return ret;
}

int records_query_plan(records_store_t *store, const records_query_t *q,
                       char *out, size_t size)
{
	if (store == NULL || q == NULL || size == 0 ||
	    (unsigned)q->order > RECORDS_ORDER_TTL) {
		return KNOT_EINVAL;
	}
	pthread_once(&sql_once, build_sql);
	rdb_stmt_t *stmt;
	/* Out of the statement cache: plans are asked for once, by tests. */
	const char *sql = plan_sql[shape_of(q)];
	const char *pg_sql = plan_pg_sql[shape_of(q)];
	bool pg = rdb_kind(store->db) == RDB_PG;
	/* PostgreSQL plans a small table as a scan and a sort: the plan
	 * asked for is the one of a big zone, so those are priced out here
	 * (a sort still shows when no index gives the order). */
	int ret = pg ? rdb_exec(store->db, "SET enable_seqscan = off;"
	                        " SET enable_bitmapscan = off;"
	                        " SET enable_sort = off") : ZC_EOK;
	if (ret == ZC_EOK) {
		ret = rdb_prepare_once(store->db, RDB_SQL2(sql, pg_sql), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	/* SQLite's plan: its 4th column; PostgreSQL's: its only one. Values
	 * bound (PostgreSQL plans for them; a NULL matches nothing). */
	int column = pg ? 0 : 3;
	static const uint8_t okey[] = { 'x', 0 };
	bind_query(stmt, 1, q, okey, sizeof(okey));
	rdb_bind_int64(stmt, 4, 10);
	rdb_bind_int64(stmt, 5, 0);
	size_t pos = 0;
	out[0] = '\0';
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		const char *detail = rdb_col_text(stmt, column);
		int n = snprintf(out + pos, size - pos, "%s%s", pos ? "\n" : "",
		                 detail ? detail : "");
		if (n < 0 || (size_t)n >= size - pos) {
			break;
		}
		pos += (size_t)n;
	}
	rdb_done(stmt);
	if (pg) {
		rdb_exec(store->db, "RESET enable_seqscan;"
		         " RESET enable_bitmapscan; RESET enable_sort");
	}
	return rdb_status(rc);
}

/* --- The subtree rules of DNAME (RFC 6672 section 2.4) --- */

/* Copies the owner column of the current row into out (lowercased). */
static void row_owner(rdb_stmt_t *stmt, knot_dname_t *out)
{
	size_t len = 0;
	const uint8_t *p = rdb_col_blob(stmt, 0, &len);
	if (p != NULL && len > 0 && len <= KNOT_DNAME_MAXLEN &&
	    knot_dname_wire_check(p, p + len, NULL) == (int)len) {
		knot_dname_copy_lower(out, p);
	} else {
		out[0] = '\0';
	}
}

/* Steps stmt once: *found and out from its first row, if any. */
static int first_owner(rdb_stmt_t *stmt, bool *found, knot_dname_t *out)
{
	int step = rdb_step(stmt);
	if (step == RDB_ROW) {
		*found = true;
		if (out != NULL) {
			row_owner(stmt, out);
		}
	}
	return rdb_status(step);
}

/* The LF of owner relative to the zone's apex, without the stores' length
 * bound (an ancestor of an unkeyable name may have a key). */
static int relative_lf(const records_zone_t *zone, const knot_dname_t *owner,
                       uint8_t *okey, size_t *okey_len)
{
	uint8_t apex_lf[DNS_LF_MAXLEN], lf[DNS_LF_MAXLEN];
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, owner);
	size_t apex_len = dns_name_to_lf(zone->apex, apex_lf);
	size_t len = dns_name_to_lf(lower, lf);
	if (len < apex_len || memcmp(lf, apex_lf, apex_len) != 0) {
		return KNOT_EOUTOFZONE;
	}
	*okey_len = len - apex_len;
	memcpy(okey, lf + apex_len, *okey_len);
	return ZC_EOK;
}

int records_dname_above(records_store_t *store, const records_zone_t *zone,
                        const knot_dname_t *owner, int64_t exclude,
                        bool *found, knot_dname_t *at)
{
	*found = false;
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	int ret = relative_lf(zone, owner, okey, &okey_len);
	if (ret != ZC_EOK) {
		return ret == KNOT_EOUTOFZONE ? ZC_EOK : ret;
	}
	/* The ancestors' keys: the apex's (empty) and every prefix of the
	 * owner's that ends a label, the owner's own excluded. */
	const uint8_t *keys[DNS_LF_MAXLEN / 2 + 1];
	size_t lens[DNS_LF_MAXLEN / 2 + 1];
	size_t n = records_rules_ancestor_keys(okey, okey_len, lens);
	for (size_t i = 0; i < n; i++) {
		keys[i] = lens[i] > 0 ? okey : (const uint8_t *)"";
	}
	/* Each key is a point in (zone_id, okey, type) (records_node):
	 * at most one statement per ancestor on SQLite, one in all on
	 * PostgreSQL. */
	if (n == 0) {
		return ZC_EOK;
	}
	/* On PostgreSQL under the zone's lock: the zone's DNAMEs, read once
	 * per lock, compared here (no statement per record written). */
	const records_dname_t *dn;
	size_t dn_n;
	if (records_prefetch_dnames(store, zone->id, &dn, &dn_n, &ret)) {
		for (size_t i = 0; i < n && !*found; i++) {
			for (size_t k = 0; k < dn_n; k++) {
				if (dn[k].id != exclude && dn[k].len == lens[i] &&
				    memcmp(dn[k].okey, keys[i], lens[i]) == 0) {
					*found = true;
					if (at != NULL) {
						knot_dname_copy_lower(at, dn[k].owner);
					}
					break;
				}
			}
		}
		return ZC_EOK;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_stmt_t *stmt;
	if (rdb_has_arrays(store->db)) {
		ret = rdb_prepare(store->db, RDB_SQL2(NULL,
			"SELECT owner FROM records WHERE zone_id = ?1"
			" AND okey = ANY(?2) AND type = 39 AND id <> ?3"
			" ORDER BY okey LIMIT 1"), &stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		rdb_bind_int64(stmt, 1, zone->id);
		rdb_bind_blob_array(stmt, 2, (const void *const *)keys, lens, n);
		rdb_bind_int64(stmt, 3, exclude);
		ret = first_owner(stmt, found, at);
		rdb_done(stmt);
		return ret;
	}
	ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT owner FROM records WHERE zone_id = ?1"
		" AND okey = ?2 AND type = 39 AND id <> ?3 LIMIT 1"), &stmt);
	for (size_t i = 0; i < n && ret == ZC_EOK && !*found; i++) {
		rdb_reset(stmt);
		rdb_bind_int64(stmt, 1, zone->id);
		rdb_bind_blob(stmt, 2, keys[i], lens[i]);
		rdb_bind_int64(stmt, 3, exclude);
		ret = first_owner(stmt, found, at);
	}
	rdb_done(stmt);
	return ret;
}

int records_data_below(records_store_t *store, const records_zone_t *zone,
                       const knot_dname_t *owner, int64_t exclude,
                       bool *found, knot_dname_t *at)
{
	*found = false;
	uint8_t okey[DNS_LF_MAXLEN], end[DNS_LF_MAXLEN];
	size_t okey_len;
	int ret = relative_lf(zone, owner, okey, &okey_len);
	if (ret != ZC_EOK) {
		return ret == KNOT_EOUTOFZONE ? ZC_EOK : ret;
	}
	/* The descendants' keys are one range of records_node: after the
	 * owner's key, before the key that ends its subtree (none for the
	 * apex, whose subtree is the whole zone). */
	size_t end_len = records_rules_subtree_end(okey, okey_len, end);
	rdb_stmt_t *stmt;
	if (end_len == 0) {
		ret = rdb_prepare(store->db, RDB_SQL(
			"SELECT owner FROM records WHERE zone_id = ?1"
			" AND okey > ?2 AND id <> ?3 ORDER BY okey LIMIT 1"),
			&stmt);
	} else {
		ret = rdb_prepare(store->db, RDB_SQL(
			"SELECT owner FROM records WHERE zone_id = ?1"
			" AND okey > ?2 AND okey < ?4 AND id <> ?3"
			" ORDER BY okey LIMIT 1"), &stmt);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone->id);
	rdb_bind_blob(stmt, 2, okey_len > 0 ? okey : (const uint8_t *)"",
	              okey_len);
	rdb_bind_int64(stmt, 3, exclude);
	if (end_len > 0) {
		rdb_bind_blob(stmt, 4, end, end_len);
	}
	ret = first_owner(stmt, found, at);
	rdb_done(stmt);
	return ret;
}
