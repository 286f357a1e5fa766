/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Reading the signed view for transfers: one read transaction per
 * transfer (WAL: one consistent version while the view goes on), the
 * zone's RRsets in canonical order for AXFR, its journal for IXFR.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "sigview/internal.h"

struct sigview_reader {
	view_db_t db;
	bool in_txn;
	uint32_t nsec_ttl;         /* Of the zone read. */
	uint8_t apex[KNOT_DNAME_MAXLEN];
};

int sigview_reader_open(const char *data_dir, sigview_reader_t **out)
{
	sigview_reader_t *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = view_db_open(&r->db, data_dir, true);
	if (ret != ZC_EOK) {
		free(r);
		return ret;
	}
	*out = r;
	return ZC_EOK;
}

void sigview_reader_close(sigview_reader_t *r)
{
	if (r != NULL) {
		sigview_read_end(r);
		view_db_close(&r->db);
		free(r);
	}
}

int sigview_read_begin(sigview_reader_t *r, int64_t zone_id,
                       sigview_zone_t *zone)
{
	int ret = view_db_begin(&r->db, false);
	if (ret != ZC_EOK) {
		return ret;
	}
	r->in_txn = true;
	view_zone_t z;
	ret = view_db_zone_get(&r->db, zone_id, &z);
	if (ret != ZC_EOK) {
		sigview_read_end(r);
		return ret == KNOT_ENOENT ? ZC_ENOZONE : ret;
	}
	memset(zone, 0, sizeof(*zone));
	zone->zone_id = z.zone_id;
	memcpy(zone->apex, z.apex, knot_dname_size(z.apex));
	zone->serial = z.serial;
	zone->soa_ttl = z.soa_ttl;
	zone->soa_len = z.soa_len;
	memcpy(zone->soa, z.soa, z.soa_len);
	r->nsec_ttl = z.nsec_ttl;
	memcpy(r->apex, z.apex, knot_dname_size(z.apex));
	return ZC_EOK;
}

void sigview_read_end(sigview_reader_t *r)
{
	if (r->in_txn) {
		view_db_rollback(&r->db);
		r->in_txn = false;
	}
}

/* One RR of one type as an RRset of its own (RRSIGs of a node differ in
 * TTL per covered type). */
static int put_one(int (*cb)(const knot_rrset_t *rr, void *ctx), void *ctx,
                   const uint8_t *owner, uint16_t type, uint32_t ttl,
                   const uint8_t *rdata, uint16_t len, knot_mm_t *mm)
{
	knot_rrset_t rr;
	knot_rrset_init(&rr, (knot_dname_t *)owner, type, KNOT_CLASS_IN, ttl);
	int ret = knot_rrset_add_rdata(&rr, rdata, len, mm);
	if (ret == KNOT_EOK && cb(&rr, ctx) != 0) {
		ret = ZC_ESTALE; /* The caller stopped. */
	}
	knot_rdataset_clear(&rr.rrs, mm);
	return ret;
}

typedef struct {
	rdb_stmt_t *stmt;
	bool row;
} cursor_t;

/* The node's RRSIGs from the signature cursor (sorted like the nodes). */
static int put_sigs(cursor_t *sigs, const uint8_t *okey, size_t okey_len,
                    const uint8_t *owner, knot_mm_t *mm,
                    int (*cb)(const knot_rrset_t *rr, void *ctx), void *ctx)
{
	int ret = ZC_EOK;
	while (sigs->row && ret == ZC_EOK) {
		size_t len = rdb_col_bytes(sigs->stmt, 0);
		const uint8_t *k = rdb_col_blob(sigs->stmt, 0, NULL);
		int c = memcmp(k ? k : (const uint8_t *)"", okey,
		               len < okey_len ? len : okey_len);
		if (c > 0 || (c == 0 && len > okey_len)) {
			break; /* A later node's. */
		}
		if (c == 0 && len == okey_len) {
			const uint8_t *rd = rdb_col_blob(sigs->stmt, 2, NULL);
			ret = put_one(cb, ctx, owner, KNOT_RRTYPE_RRSIG,
			              (uint32_t)rdb_col_int64(sigs->stmt, 1),
			              rd ? rd : (const uint8_t *)"",
			              (uint16_t)rdb_col_bytes(sigs->stmt, 2),
			              mm);
		}
		sigs->row = rdb_step(sigs->stmt) == RDB_ROW;
	}
	return ret;
}

/* One node: its data, its RRSIGs, its NSEC. */
static int put_node(sigview_reader_t *r, rdb_stmt_t *nodes, cursor_t *sigs,
                    knot_mm_t *mm,
                    int (*cb)(const knot_rrset_t *rr, void *ctx), void *ctx)
{
	size_t okey_len = rdb_col_bytes(nodes, 0);
	const uint8_t *okey = rdb_col_blob(nodes, 0, NULL);
	okey = okey ? okey : (const uint8_t *)"";
	const uint8_t *owner = rdb_col_blob(nodes, 1, NULL);
	int olen = owner ? knot_dname_wire_check(owner, owner +
	                   (int)rdb_col_bytes(nodes, 1), NULL) : -1;
	if (olen <= 0) {
		return ZC_EFORMAT;
	}
	edge_node_t node;
	int ret = edge_node_decode(rdb_col_blob(nodes, 2, NULL),
	                           rdb_col_bytes(nodes, 2),
	                           owner, mm, &node);
	for (uint16_t i = 0; ret == ZC_EOK && i < node.count; i++) {
		if (view_is_data_type(node.rrsets[i].type) &&
		    node.rrsets[i].type != KNOT_RRTYPE_SOA &&
		    cb(&node.rrsets[i], ctx) != 0) {
			ret = ZC_ESTALE;
		}
	}
	if (ret == ZC_EOK) {
		ret = put_sigs(sigs, okey, okey_len, owner, mm, cb, ctx);
	}
	const uint8_t *nsec = rdb_col_blob(nodes, 3, NULL);
	int nsec_len = (int)rdb_col_bytes(nodes, 3);
	if (ret == ZC_EOK && nsec != NULL && nsec_len > 0) {
		ret = put_one(cb, ctx, owner, KNOT_RRTYPE_NSEC, r->nsec_ttl, nsec,
		              (uint16_t)nsec_len, mm);
	}
	return ret;
}

int sigview_read_zone(sigview_reader_t *r, int64_t zone_id,
                      zc_arena_t *arena,
                      int (*cb)(const knot_rrset_t *rr, void *ctx),
                      void *ctx)
{
	rdb_stmt_t *nodes = NULL;
	cursor_t sigs = { 0 };
	int ret = rdb_prepare(r->db.db, RDB_SQL(
		"SELECT okey, owner, data, nsec FROM"
		" vnodes WHERE zone_id = ?1 ORDER BY okey"), &nodes);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(r->db.db, RDB_SQL(
			"SELECT okey, ttl, rdata FROM vsigs"
			" WHERE zone_id = ?1 ORDER BY okey, covered"),
			&sigs.stmt);
	}
	if (ret == ZC_EOK) {
		rdb_bind_int64(nodes, 1, zone_id);
		rdb_bind_int64(sigs.stmt, 1, zone_id);
		sigs.row = rdb_step(sigs.stmt) == RDB_ROW;
		int rc;
		while ((rc = rdb_step(nodes)) == RDB_ROW) {
			zc_arena_reset(arena);
			ret = put_node(r, nodes, &sigs, zc_arena_mm(arena), cb, ctx);
			if (ret != ZC_EOK) {
				break;
			}
		}
		if (ret == ZC_EOK) {
			ret = rdb_status(rc);
		}
	}
	rdb_done(sigs.stmt);
	rdb_done(nodes);
	return ret == ZC_ESTALE ? ZC_EOK : ret;
}

typedef struct {
	int (*cb)(const records_journal_rr_t *rr, void *ctx);
	void *ctx;
} journal_t;

static int replay(const uint8_t *data, size_t len, void *ctx)
{
	journal_t *jr = ctx;
	return view_diff_foreach(data, len, jr->cb, jr->ctx);
}

int sigview_read_journal(sigview_reader_t *r, int64_t zone_id,
                         uint32_t from, uint32_t to,
                         int (*cb)(const records_journal_rr_t *rr,
                                   void *ctx), void *ctx)
{
	journal_t jr = { .cb = cb, .ctx = ctx };
	int ret = view_db_journal_read(&r->db, zone_id, from, to, replay, &jr);
	return ret == KNOT_ENOENT ? ZC_ENOJOURNAL : ret;
}
