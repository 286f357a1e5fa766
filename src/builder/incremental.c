/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-record builds: for each node (zone, owner) touched by a batch of
 * record events, read just that node from the records store (an indexed
 * lookup) and write it, with the zone's new serial, into the edge store in
 * one LMDB transaction. The cost depends on the number of nodes touched,
 * never on the size of the zone.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "builder/node.h"
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

int builder_record_build(records_store_t *rs, edge_store_t *es,
                         const builder_touch_t *touched, size_t count,
                         builder_stats_t *stats)
{
	memset(stats, 0, sizeof(*stats));
	read_t *r = malloc(sizeof(*r));
	if (r == NULL) {
		return KNOT_ENOMEM;
	}
	builder_node_init(&r->node);
	edge_txn_t txn = { 0 };
	uint64_t seq = 0;
	int ret = records_read_begin(rs);
	if (ret == ZC_EOK) {
		ret = records_last_seq(rs, &seq);
		stats->seq = seq;
	}
	if (ret == ZC_EOK) {
		ret = edge_txn_begin_write(es, &txn);
	}
	uint32_t version = 0;
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		ret = build_node(rs, &txn, r, &touched[i], seq, stats);
		bool first_of_zone = (i == 0 ||
		                      touched[i - 1].zone_id != touched[i].zone_id);
		if (first_of_zone || serial_newer(touched[i].version, version)) {
			version = touched[i].version;
		}
		bool last_of_zone = (i + 1 == count ||
		                     touched[i + 1].zone_id != touched[i].zone_id);
		if (ret == ZC_EOK && last_of_zone) {
			ret = bump_meta(rs, &txn, &touched[i], version, seq);
		}
	}
	if (ret == ZC_EOK) {
		ret = edge_txn_commit(&txn);
	} else {
		edge_txn_abort(&txn);
	}
	records_read_end(rs);
	builder_node_deinit(&r->node);
	free(r);
	return ret;
}
