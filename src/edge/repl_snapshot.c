/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Whole-store views of the replicated tables (see repl.h): a snapshot as an
 * op stream cut into parts, and a digest to compare two stores.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/hash.h"
#include "edge/internal.h"
#include "edge/repl.h"

#define OP_HEAD 8

/* Cuts a snapshot's op stream into parts. */
typedef struct {
	uint8_t *buf;
	size_t len;
	uint32_t part;
	int (*cb)(const edge_repl_part_t *part, void *ctx);
	void *ctx;
	uint64_t commit;
} snap_t;

static int snap_emit(snap_t *s, bool final)
{
	edge_repl_part_t p = {
		.commit = s->commit, .part = s->part++,
		.flags = final ? EDGE_REPL_FINAL : 0, .data = s->buf, .len = s->len,
	};
	int ret = s->cb(&p, s->ctx);
	s->len = 0;
	return ret;
}

static int snap_op(snap_t *s, unsigned op, unsigned table, const MDB_val *k,
                   const MDB_val *v)
{
	size_t klen = k ? k->mv_size : 0, vlen = v ? v->mv_size : 0;
	size_t size = OP_HEAD + klen + vlen;
	if (s->len > 0 && s->len + size > EDGE_REPL_PART_MAX) {
		int ret = snap_emit(s, false);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	/* An op larger than a part is cut across parts. */
	uint8_t head[OP_HEAD] = { (uint8_t)op, (uint8_t)table };
	edge_put_be(head + 2, klen, 2);
	edge_put_be(head + 4, vlen, 4);
	const struct { const void *p; size_t n; } pieces[] = {
		{ head, OP_HEAD }, { k ? k->mv_data : NULL, klen },
		{ v ? v->mv_data : NULL, vlen },
	};
	for (size_t i = 0; i < 3; i++) {
		const uint8_t *p = pieces[i].p;
		size_t n = pieces[i].n;
		while (n > 0) {
			size_t room = EDGE_REPL_PART_MAX - s->len;
			size_t take = n < room ? n : room;
			memcpy(s->buf + s->len, p, take);
			s->len += take;
			p += take;
			n -= take;
			if (s->len == EDGE_REPL_PART_MAX) {
				int ret = snap_emit(s, false);
				if (ret != ZC_EOK) {
					return ret;
				}
			}
		}
	}
	return ZC_EOK;
}

static int snap_table(snap_t *s, edge_txn_t *txn, unsigned table)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, edge_table_dbi(txn->store, table),
	                         &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	MDB_val k, v;
	int ret = ZC_EOK;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS && ret == ZC_EOK) {
		ret = snap_op(s, EDGE_OP_PUT, table, &k, &v);
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (ret == ZC_EOK && rc != MDB_NOTFOUND) {
		ret = edge_lmdb_error(rc);
	}
	return ret;
}

int edge_repl_snapshot(edge_store_t *store, edge_repl_pos_t *pos,
                       int (*cb)(const edge_repl_part_t *part, void *ctx),
                       void *ctx)
{
	snap_t s = { .buf = malloc(EDGE_REPL_PART_MAX), .cb = cb, .ctx = ctx };
	if (s.buf == NULL) {
		return ZC_ENOSPACE;
	}
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(store, &txn);
	if (ret == ZC_EOK) {
		uint64_t on = 0;
		ret = edge_meta_get(&txn, "repl_on", &on);
		pos->on = on == 1;
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "repl_epoch", &pos->epoch);
		}
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "repl_commit", &pos->commit);
		}
		s.commit = pos->commit;
		for (unsigned t = 0; ret == ZC_EOK && t < EDGE_TABLE_COUNT; t++) {
			ret = snap_op(&s, EDGE_OP_DROP, t, NULL, NULL);
		}
		for (unsigned t = 0; ret == ZC_EOK && t < EDGE_TABLE_COUNT; t++) {
			ret = snap_table(&s, &txn, t);
		}
		if (ret == ZC_EOK) {
			ret = snap_emit(&s, true);
		}
		edge_txn_abort(&txn);
	}
	free(s.buf);
	return ret;
}

int edge_repl_digest(edge_store_t *store, uint64_t *digest, uint64_t *entries)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(store, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	uint64_t h = UINT64_C(0xcbf29ce484222325), n = 0;
	for (unsigned t = 0; ret == ZC_EOK && t < EDGE_TABLE_COUNT; t++) {
		MDB_cursor *cur = NULL;
		int rc = mdb_cursor_open(txn.txn, edge_table_dbi(store, t), &cur);
		if (rc != MDB_SUCCESS) {
			ret = edge_lmdb_error(rc);
			break;
		}
		MDB_val k, v;
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		while (rc == MDB_SUCCESS) {
			uint8_t head[9] = { (uint8_t)t };
			edge_put_be(head + 1, k.mv_size, 4);
			edge_put_be(head + 5, v.mv_size, 4);
			h = zc_hash_bytes(h, head, sizeof(head));
			h = zc_hash_bytes(h, k.mv_data, k.mv_size);
			h = zc_hash_bytes(h, v.mv_data, v.mv_size);
			n++;
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		if (rc != MDB_NOTFOUND) {
			ret = edge_lmdb_error(rc);
		}
		mdb_cursor_close(cur);
	}
	edge_txn_abort(&txn);
	*digest = zc_hash_finish(h);
	*entries = n;
	return ret;
}
