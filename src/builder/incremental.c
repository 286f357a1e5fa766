/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-record builds: for each node (zone, owner) touched by a batch of
 * record events, read just that node from the records store (an indexed
 * lookup) and write it, with the zone's new serial, into the edge store in
 * one LMDB transaction. The cost depends on the number of nodes touched,
 * never on the size of the zone. When a build covers several zones, each
 * goes in a nested transaction, so one zone's failure is rolled back
 * alone (builder.h).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "builder/fault.h"
#include "builder/node.h"
#include "builder/pass.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"

typedef struct {
	builder_node_t node;
	int error;
} read_t;

static int add_row(const records_row_t *row, void *ctx)
{
	read_t *r = ctx;
	if (row->okey_len == 0 && row->type == KNOT_RRTYPE_SOA) {
		return 0; /* The SOA lives in the zone metadata. */
	}
	r->error = builder_node_add(&r->node, row->type, row->ttl, row->rdata,
	                            row->rdata_len);
	return r->error != ZC_EOK;
}

/* Rebuilds one node at seq: write it, or delete it when it has no data. */
static int build_node(records_store_t *rs, edge_txn_t *txn, read_t *r,
                      const builder_touch_t *t, uint64_t seq,
                      builder_stats_t *stats)
{
	uint8_t lf[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	size_t apex_len = dns_name_to_lf(t->apex, lf);
	if (apex_len + t->okey_len > sizeof(lf)) {
		return ZC_EFORMAT;
	}
	memcpy(lf + apex_len, t->okey, t->okey_len);
	if (dns_name_from_lf(lf, apex_len + t->okey_len, owner) < 0) {
		return ZC_EFORMAT;
	}
	builder_node_start(&r->node, t->okey, t->okey_len, owner);
	r->error = ZC_EOK;
	int ret = records_node_foreach(rs, t->zone_id, t->okey, t->okey_len,
	                               add_row, r);
	if (ret == ZC_EOK) {
		ret = r->error;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if (r->node.count == 0) {
		stats->nodes_deleted++;
		ret = edge_txn_del_node(txn, (uint64_t)t->zone_id, t->okey,
		                        t->okey_len, seq);
		return ret == ZC_ESTALE ? ZC_EOK : ret;
	}
	uint8_t *buf;
	size_t len;
	ret = builder_node_encode(&r->node, seq, &buf, &len);
	if (ret == ZC_EOK) {
		stats->nodes_written++;
		ret = edge_txn_put_node(txn, (uint64_t)t->zone_id, t->okey,
		                        t->okey_len, buf, len);
	}
	return ret == ZC_ESTALE ? ZC_EOK : ret;
}

/* RFC 1982: is a newer than b? */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

/* Moves the zone's metadata on to `version`, the newest version whose
 * events this build covers (not the snapshot's serial: later events of the
 * zone may not have been read yet). */
static int bump_meta(records_store_t *rs, edge_txn_t *txn,
                     const builder_touch_t *t, uint32_t version, uint64_t seq)
{
	records_zone_t zone;
	edge_zone_t meta;
	int ret = records_zone_get(rs, t->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(txn, t->apex, &meta);
	}
	if (ret != ZC_EOK) {
		return ret; /* ZC_ENOZONE: the caller falls back to a full build. */
	}
	if (meta.seq > seq || meta.zone_id != (uint64_t)zone.id) {
		return ZC_EOK; /* Fenced: a newer build got there first. */
	}
	if (!serial_newer(version, meta.serial)) {
		return ZC_EOK;
	}
	meta.serial = version;
	uint8_t *p = meta.soa + meta.soa_len - 20;
	p[0] = (uint8_t)(version >> 24);
	p[1] = (uint8_t)(version >> 16);
	p[2] = (uint8_t)(version >> 8);
	p[3] = (uint8_t)version;
	return edge_txn_put_zone(txn, &meta);
}

/* Number of touches from t on that belong to t's zone. */
static size_t zone_run(const builder_touch_t *t, size_t count)
{
	size_t n = 1;
	while (n < count && t[n].zone_id == t[0].zone_id) {
		n++;
	}
	return n;
}

/* Writes the n touches of one zone and its new serial into txn; on failure
 * *at is the index of the touch it failed at. */
static int write_zone(records_store_t *rs, edge_txn_t *txn, read_t *r,
                      const builder_touch_t *t, size_t n, uint64_t seq,
                      builder_stats_t *stats, size_t *at)
{
	int ret = ZC_EOK;
	uint32_t version = t[0].version;
	*at = 0;
	for (size_t i = 0; i < n && ret == ZC_EOK; i++) {
		*at = i;
		ret = build_node(rs, txn, r, &t[i], seq, stats);
		if (serial_newer(t[i].version, version)) {
			version = t[i].version;
		}
	}
	if (ret == ZC_EOK) {
		*at = n - 1;
		ret = builder_fault_check(t[0].apex);
	}
	if (ret == ZC_EOK) {
		ret = bump_meta(rs, txn, &t[n - 1], version, seq);
	}
	return ret;
}

/* write_zone() in a transaction nested in `parent`: on failure nothing of
 * the zone stays. */
static int write_zone_nested(records_store_t *rs, edge_txn_t *parent,
                             read_t *r, const builder_touch_t *t, size_t n,
                             uint64_t seq, builder_stats_t *stats, size_t *at)
{
	edge_txn_t child = { 0 };
	*at = 0;
	int ret = edge_txn_begin_nested(parent, &child);
	if (ret == ZC_EOK) {
		ret = write_zone(rs, &child, r, t, n, seq, stats, at);
	}
	if (ret == ZC_EOK) {
		return edge_txn_commit(&child);
	}
	edge_txn_abort(&child);
	return ret;
}

int builder_record_build_in(records_store_t *rs, edge_store_t *es,
                            const builder_touch_t *touched, size_t count,
                            builder_stats_t *stats,
                            builder_zone_failed_cb failed, void *ctx)
{
	memset(stats, 0, sizeof(*stats));
	read_t *r = malloc(sizeof(*r));
	if (r == NULL) {
		return KNOT_ENOMEM;
	}
	builder_node_init(&r->node);
	edge_txn_t txn = { 0 };
	uint64_t seq = 0;
	int ret = records_last_seq(rs, &seq);
	stats->seq = seq;
	if (ret == ZC_EOK) {
		ret = edge_txn_begin_write(es, &txn);
	}
	/* One zone needs no nested transaction: its failure drops it all. */
	bool one_zone = count > 0 && zone_run(touched, count) == count;
	bool drop = false;
	for (size_t i = 0; i < count && ret == ZC_EOK;) {
		size_t n = zone_run(touched + i, count - i), at;
		builder_stats_t before = *stats;
		int zret = one_zone ?
		           write_zone(rs, &txn, r, touched + i, n, seq, stats, &at) :
		           write_zone_nested(rs, &txn, r, touched + i, n, seq, stats,
		                             &at);
		bool own = zret == ZC_ENOZONE || !builder_error_is_store_wide(zret);
		if (zret != ZC_EOK && own && failed != NULL) {
			*stats = before; /* Rolled back. */
			failed(&touched[i + at], zret, ctx);
			drop = one_zone;
		} else {
			ret = zret;
		}
		i += n;
	}
	if (ret == ZC_EOK && !drop) {
		ret = edge_txn_commit(&txn);
	} else {
		edge_txn_abort(&txn);
	}
	builder_node_deinit(&r->node);
	free(r);
	return ret;
}

int builder_record_build(records_store_t *rs, edge_store_t *es,
                         const builder_touch_t *touched, size_t count,
                         builder_stats_t *stats, builder_zone_failed_cb failed,
                         void *ctx)
{
	int ret = records_read_begin(rs);
	if (ret != ZC_EOK) {
		memset(stats, 0, sizeof(*stats));
		return ret;
	}
	ret = builder_record_build_in(rs, es, touched, count, stats, failed,
	                              ctx);
	records_read_end(rs);
	return ret;
}
