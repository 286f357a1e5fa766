/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Consistent reads of one zone, each in one read snapshot: its records in
 * (okey, type) order for builds and exports, one node's records for a
 * per-record build, and its change-log range for IXFR.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/changelog.h"
#include "records/internal.h"

/* Rows per statement of a zone's scan on PostgreSQL, whose results come
 * whole: a 1M-record zone is read in pages, not held in memory at once. */
#define SCAN_PAGE 8192

struct records_scan {
	records_store_t *store;
	rdb_stmt_t *stmt;
	/* PostgreSQL: paged by key (okey, type, id) within the snapshot;
	 * the last row's key and the rows of the current page. */
	bool paged;
	uint8_t okey[DNS_LF_KEY_MAXLEN];
	size_t okey_len;
	int64_t type, id;
	size_t in_page;
};

/* Binds the key after which the next page starts. */
static void bind_page(records_scan_t *scan)
{
	rdb_bind_blob(scan->stmt, 2, scan->okey_len ? scan->okey :
		      (const uint8_t *)"", scan->okey_len);
	rdb_bind_int64(scan->stmt, 3, scan->type);
	rdb_bind_int64(scan->stmt, 4, scan->id);
	rdb_bind_int64(scan->stmt, 5, SCAN_PAGE);
	scan->in_page = 0;
}

static int snapshot_seq(records_store_t *store, uint64_t *seq)
{
	return records_last_seq(store, seq);
}

int records_scan_begin(records_store_t *store, const knot_dname_t *apex,
                       records_zone_t *zone, uint64_t *seq,
                       records_scan_t **out)
{
	records_scan_t *scan = calloc(1, sizeof(*scan));
	if (scan == NULL) {
		return KNOT_ENOMEM;
	}
	scan->store = store;
	int ret = rdb_begin_read(store->db);
	if (ret != ZC_EOK) {
		free(scan);
		return ret;
	}
	/* All three reads below see one snapshot (the read transaction
	 * starts at the first of them). */
	ret = snapshot_seq(store, seq);
	if (ret == ZC_EOK) {
		ret = records_zone_find(store, apex, zone);
	}
	scan->paged = rdb_kind(store->db) == RDB_PG;
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQL2(
			"SELECT id, okey, owner, type,"
			" ttl, rdata FROM records WHERE"
			" zone_id = ?1 ORDER BY okey, type",
			"SELECT id, okey, owner, type,"
			" ttl, rdata FROM records WHERE zone_id = ?1"
			" AND (okey, type, id) > (?2, ?3, ?4)"
			" ORDER BY okey, type, id LIMIT ?5"), &scan->stmt);
	}
	if (ret != ZC_EOK) {
		records_scan_end(scan);
		return ret;
	}
	rdb_bind_int64(scan->stmt, 1, zone->id);
	if (scan->paged) {
		scan->type = scan->id = -1;
		bind_page(scan);
	}
	*out = scan;
	return ZC_EOK;
}

int records_scan_next(records_scan_t *scan, records_row_t *row)
{
	rdb_stmt_t *st = scan->stmt;
	int rc = rdb_step(st);
	if (rc == RDB_DONE && scan->paged && scan->in_page == SCAN_PAGE) {
		bind_page(scan); /* A full page: the next one. */
		rc = rdb_step(st);
	}
	if (rc == RDB_DONE) {
		return 0;
	}
	if (rc != RDB_ROW) {
		return rdb_status(rc);
	}
	row->id = rdb_col_int64(st, 0);
	row->okey = rdb_col_blob(st, 1, NULL);
	row->okey_len = (int)rdb_col_bytes(st, 1);
	row->owner = rdb_col_blob(st, 2, NULL);
	row->type = (int)rdb_col_int64(st, 3);
	row->ttl = (uint32_t)rdb_col_int64(st, 4);
	row->rdata = rdb_col_blob(st, 5, NULL);
	row->rdata_len = (int)rdb_col_bytes(st, 5);
	int owner_len = (int)rdb_col_bytes(st, 2);
	if (row->owner == NULL || row->okey_len > DNS_LF_KEY_MAXLEN ||
	    knot_dname_wire_check(row->owner, row->owner + owner_len, NULL) !=
	    owner_len) {
		return ZC_EFORMAT;
	}
	if (row->okey == NULL) {
		row->okey = (const uint8_t *)"";
	}
	if (row->rdata == NULL) {
		row->rdata = (const uint8_t *)"";
	}
	if (scan->paged) {
		scan->in_page++;
		scan->okey_len = (size_t)row->okey_len;
		memcpy(scan->okey, row->okey, scan->okey_len);
		scan->type = row->type;
		scan->id = row->id;
	}
	return 1;
}

void records_scan_end(records_scan_t *scan)
{
	if (scan == NULL) {
		return;
	}
	rdb_done(scan->stmt);
	rdb_end_read(scan->store->db);
	free(scan);
}

int records_node_foreach(records_store_t *store, int64_t zone_id,
                         const uint8_t *okey, size_t okey_len,
                         int (*cb)(const records_row_t *row, void *ctx),
                         void *ctx)
{
	records_scan_t scan = { .store = store };
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT id, okey, owner, type, ttl,"
		" rdata FROM records WHERE zone_id = ?1"
		" AND okey = ?2 ORDER BY type"), &scan.stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(scan.stmt, 1, zone_id);
	rdb_bind_blob(scan.stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	records_row_t row;
	while ((ret = records_scan_next(&scan, &row)) == 1) {
		if (cb(&row, ctx) != 0) {
			break;
		}
	}
	rdb_done(scan.stmt);
	return ret < 0 ? ret : ZC_EOK;
}

int records_okey_cmp(const uint8_t *a, size_t a_len, const uint8_t *b,
                     size_t b_len)
{
	size_t n = a_len < b_len ? a_len : b_len;
	int c = n > 0 ? memcmp(a, b, n) : 0;
	return c != 0 ? c : (a_len > b_len) - (a_len < b_len);
}

typedef struct {
	int (*cb)(size_t node, const records_row_t *row, void *ctx);
	void *ctx;
	size_t node;
	bool stopped;
} one_node_t;

static int row_of_node(const records_row_t *row, void *ctx)
{
	one_node_t *o = ctx;
	o->stopped = o->cb(o->node, row, o->ctx) != 0;
	return o->stopped;
}

int records_nodes_foreach(records_store_t *store, int64_t zone_id,
                          const uint8_t *const *okeys, const size_t *lens,
                          size_t count,
                          int (*cb)(size_t node, const records_row_t *row,
                                    void *ctx),
                          void *ctx)
{
	if (!rdb_has_arrays(store->db) || count == 1) {
		one_node_t o = { .cb = cb, .ctx = ctx };
		int ret = ZC_EOK;
		/* A stop from cb ends the reading, not just its node. */
		for (; o.node < count && ret == ZC_EOK && !o.stopped; o.node++) {
			ret = records_node_foreach(store, zone_id, okeys[o.node],
			                           lens[o.node], row_of_node, &o);
		}
		return ret;
	}
	records_scan_t scan = { .store = store };
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT id, okey, owner, type, ttl,"
		" rdata FROM records WHERE zone_id = ?1"
		" AND okey = ANY(?2) ORDER BY okey, type"), &scan.stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(scan.stmt, 1, zone_id);
	rdb_bind_blob_array(scan.stmt, 2, (const void *const *)okeys, lens,
	                    count);
	records_row_t row;
	size_t k = 0;
	while ((ret = records_scan_next(&scan, &row)) == 1) {
		/* Rows come in the keys' order: the node is at or after k. */
		while (k < count && records_okey_cmp(okeys[k], lens[k], row.okey,
		                                     (size_t)row.okey_len) < 0) {
			k++;
		}
		if (k == count || records_okey_cmp(okeys[k], lens[k], row.okey,
		                                   (size_t)row.okey_len) != 0) {
			ret = ZC_EFORMAT; /* Not a key asked for, or out of order. */
			break;
		}
		if (cb(k, &row, ctx) != 0) {
			break;
		}
	}
	rdb_done(scan.stmt);
	return ret < 0 ? ret : ZC_EOK;
}

int records_journal_read(records_store_t *store, const knot_dname_t *apex,
                         uint32_t from, uint32_t to,
                         int (*cb)(const records_journal_rr_t *rr, void *ctx),
                         void *ctx)
{
	int ret = records_read_begin(store);
	if (ret != ZC_EOK) {
		return ret;
	}
	records_zone_t zone;
	ret = records_zone_find(store, apex, &zone);
	if (ret == ZC_EOK) {
		ret = records_changelog_journal(store, zone.id, zone.apex,
		                                zone.serial, from, to, cb, ctx);
	}
	records_read_end(store);
	return ret;
}

int records_read_begin(records_store_t *store)
{
	return rdb_begin_read(store->db);
}

void records_read_end(records_store_t *store)
{
	rdb_end_read(store->db);
}
