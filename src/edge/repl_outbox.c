/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The outbox as the publisher reads it (see repl.h): parts in order, trimmed
 * once sent, and the zone versions a part carries (for receipts).
 */
#include <string.h>

#include "common/error.h"
#include "edge/internal.h"
#include "edge/repl.h"

#define OP_HEAD 8

int edge_repl_outbox_read(edge_store_t *store, uint64_t after_commit,
                          uint32_t after_part, size_t max,
                          int (*cb)(const edge_repl_part_t *part, void *ctx),
                          void *ctx)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(store, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn.txn, store->outbox, &cur);
	if (rc != MDB_SUCCESS) {
		edge_txn_abort(&txn);
		return edge_lmdb_error(rc);
	}
	uint8_t key[12];
	edge_put_be(key, after_commit, 8);
	edge_put_be(key + 8, after_part, 4);
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key };
	MDB_val v;
	bool first = after_commit == 0 && after_part == UINT32_MAX;
	rc = first ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) :
	             mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (!first && rc == MDB_SUCCESS && k.mv_size == sizeof(key) &&
	    memcmp(k.mv_data, key, sizeof(key)) == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	int count = 0;
	while (rc == MDB_SUCCESS && (size_t)count < max) {
		if (k.mv_size != 12 || v.mv_size < 1) {
			ret = ZC_EFORMAT;
			break;
		}
		const uint8_t *kp = k.mv_data, *vp = v.mv_data;
		edge_repl_part_t part = {
			.commit = edge_get_be(kp, 8), .part = (uint32_t)edge_get_be(kp + 8, 4),
			.flags = vp[0], .data = vp + 1, .len = v.mv_size - 1,
		};
		count++;
		if (cb(&part, ctx) != 0) {
			break;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (ret == ZC_EOK && rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
		ret = edge_lmdb_error(rc);
	}
	mdb_cursor_close(cur);
	edge_txn_abort(&txn);
	return ret != ZC_EOK ? ret : count;
}

int edge_repl_outbox_trim(edge_store_t *store, uint64_t commit, uint32_t part)
{
	uint8_t last[12];
	edge_put_be(last, commit, 8);
	edge_put_be(last + 8, part, 4);
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(store, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn.txn, store->outbox, &cur);
	MDB_val k, v;
	if (rc == MDB_SUCCESS) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		while (rc == MDB_SUCCESS && k.mv_size == 12 &&
		       memcmp(k.mv_data, last, 12) <= 0) {
			rc = mdb_cursor_del(cur, 0);
			if (rc == MDB_SUCCESS) {
				/* Not MDB_GET_CURRENT: after the last entry
				 * goes it is EINVAL. */
				rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
			}
		}
		mdb_cursor_close(cur);
	}
	if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
		edge_txn_abort(&txn);
		return edge_lmdb_error(rc);
	}
	return edge_txn_commit(&txn);
}

int edge_repl_zone_puts(const uint8_t *data, size_t len,
                        void (*cb)(const uint8_t *val, size_t len, void *ctx),
                        void *ctx)
{
	size_t off = 0;
	while (len - off >= OP_HEAD) {
		const uint8_t *p = data + off;
		size_t klen = edge_get_be(p + 2, 2), vlen = edge_get_be(p + 4, 4);
		if (len - off < OP_HEAD + klen + vlen) {
			break; /* Straddles into the next part: not a zone put. */
		}
		if (p[0] == EDGE_OP_PUT && p[1] == EDGE_TABLE_ZONES) {
			cb(p + OP_HEAD + klen, vlen, ctx);
		}
		off += OP_HEAD + klen + vlen;
	}
	return ZC_EOK;
}
