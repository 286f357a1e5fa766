/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-record builds: for each node (zone, owner) touched by a batch of
 * record events, read just that node from the records store (an indexed
 * lookup; on PostgreSQL a zone's touched nodes in one statement) and write
 * it, with the zone's new serial, into the edge store in one LMDB
 * transaction. The cost depends on the number of nodes touched,
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

/* Starts node t: its owner from the zone's apex and the node's key. */
static int node_start(read_t *r, const builder_touch_t *t)
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
	return ZC_EOK;
}

static int node_add(read_t *r, const records_row_t *row)
{
	if (row->okey_len == 0 && row->type == KNOT_RRTYPE_SOA) {
		return ZC_EOK; /* The SOA lives in the zone metadata. */
	}
	return builder_node_add(&r->node, row->type, row->ttl, row->rdata,
	                        row->rdata_len);
}

/* Writes the node read into r at seq, or deletes it when it has no
 * data. */
static int node_finish(edge_txn_t *txn, read_t *r, const builder_touch_t *t,
                       uint64_t seq, builder_stats_t *stats)
{
	int ret;
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

/*
 * The nodes of one zone's touches, read together (records_nodes_foreach:
 * one statement on PostgreSQL) and written as their rows arrive, each
 * distinct node once, in key order: `node` holds the distinct touches
 * sorted by key; `done` nodes are written; `open` says node `done` is
 * started and has rows.
 */
typedef struct {
	edge_txn_t *txn;
	read_t *r;
	const builder_touch_t **node;
	size_t done;
	bool open;
	uint64_t seq;
	builder_stats_t *stats;
	int error;
} nodes_t;

/* Writes the nodes before `upto`: the open one with its rows, the others
 * as empty (deleted). */
static int nodes_finish(nodes_t *n, size_t upto)
{
	while (n->done < upto) {
		const builder_touch_t *t = n->node[n->done];
		int ret = n->open ? ZC_EOK : node_start(n->r, t);
		if (ret == ZC_EOK) {
			ret = node_finish(n->txn, n->r, t, n->seq, n->stats);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
		n->open = false;
		n->done++;
	}
	return ZC_EOK;
}

static int node_row(size_t k, const records_row_t *row, void *ctx)
{
	nodes_t *n = ctx;
	if (k != n->done || !n->open) {
		n->error = nodes_finish(n, k);
		if (n->error == ZC_EOK) {
			n->error = node_start(n->r, n->node[k]);
		}
		if (n->error != ZC_EOK) {
			return 1;
		}
		n->open = true;
	}
	n->error = node_add(n->r, row);
	return n->error != ZC_EOK;
}

static int by_key(const void *a, const void *b)
{
	const builder_touch_t *x = *(const builder_touch_t *const *)a;
	const builder_touch_t *y = *(const builder_touch_t *const *)b;
	return records_okey_cmp(x->okey, x->okey_len, y->okey, y->okey_len);
}

/* Nodes read per statement at most: a huge change is read in slices. */
#define NODES_PER_READ 4096

/* Reads and writes the nodes n->node[from, to). */
static int build_slice(records_store_t *rs, nodes_t *n, size_t from,
                       size_t to, const uint8_t **keys, size_t *lens)
{
	for (size_t k = from; k < to; k++) {
		keys[k - from] = n->node[k]->okey;
		lens[k - from] = n->node[k]->okey_len;
	}
	nodes_t slice = *n;
	slice.node = n->node + from;
	slice.done = 0;
	slice.open = false;
	int ret = records_nodes_foreach(rs, n->node[from]->zone_id, keys, lens,
	                                to - from, node_row, &slice);
	if (ret == ZC_EOK) {
		ret = slice.error;
	}
	if (ret == ZC_EOK) {
		ret = nodes_finish(&slice, to - from);
	}
	n->done = from + slice.done;
	return ret;
}

/* Rebuilds the distinct nodes among the n touches t at seq; on failure
 * *at is the index in t of the touch it failed at. */
static int build_nodes(records_store_t *rs, edge_txn_t *txn, read_t *r,
                       const builder_touch_t *t, size_t count, uint64_t seq,
                       builder_stats_t *stats, size_t *at)
{
	const builder_touch_t **node = malloc(count * sizeof(*node));
	const uint8_t **keys = malloc(NODES_PER_READ * sizeof(*keys));
	size_t *lens = malloc(NODES_PER_READ * sizeof(*lens));
	int ret = node && keys && lens ? ZC_EOK : KNOT_ENOMEM;
	size_t m = 0;
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		node[i] = &t[i];
	}
	if (ret == ZC_EOK) {
		qsort(node, count, sizeof(*node), by_key);
		for (size_t i = 0; i < count; i++) {
			if (m == 0 || by_key(&node[m - 1], &node[i]) != 0) {
				node[m++] = node[i];
			}
		}
	}
	nodes_t n = { .txn = txn, .r = r, .node = node, .seq = seq,
	              .stats = stats };
	for (size_t from = 0; from < m && ret == ZC_EOK;
	     from += NODES_PER_READ) {
		size_t to = m - from > NODES_PER_READ ? from + NODES_PER_READ : m;
		ret = build_slice(rs, &n, from, to, keys, lens);
	}
	*at = ret != ZC_EOK && n.done < m ? (size_t)(node[n.done] - t) : 0;
	free(node);
	free(keys);
	free(lens);
	return ret;
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
	uint32_t version = t[0].version;
	for (size_t i = 1; i < n; i++) {
		if (serial_newer(t[i].version, version)) {
			version = t[i].version;
		}
	}
	int ret = build_nodes(rs, txn, r, t, n, seq, stats, at);
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
