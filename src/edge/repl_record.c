/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Recording side of the replication log (see repl.h): the op list of a
 * write transaction, flushed to the outbox in parts, and the log's
 * position and switch in the meta table.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/error.h"
#include "edge/internal.h"
#include "edge/repl.h"

#define OP_HEAD 8

struct edge_rec {
	bool nested;     /* a nested transaction's: kept, merged at commit */
	bool checked;    /* "repl_on" read for this transaction */
	bool on;
	bool started;    /* a commit id is taken */
	uint64_t commit;
	uint32_t part;
	uint8_t *buf;
	size_t len, cap;
};

/* Writes buf[0..len) as the next part of this transaction's commit. */
static int write_part(edge_txn_t *txn, struct edge_rec *r, const uint8_t *data,
                      size_t len, uint8_t flags)
{
	int ret;
	if (!r->started) {
		ret = edge_meta_get(txn, "repl_commit", &r->commit);
		if (ret != ZC_EOK) {
			return ret;
		}
		r->commit++;
		ret = edge_meta_put(txn, "repl_commit", r->commit);
		if (ret != ZC_EOK) {
			return ret;
		}
		r->started = true;
	}
	uint8_t key[12];
	edge_put_be(key, r->commit, 8);
	edge_put_be(key + 8, r->part++, 4);
	MDB_val k = { .mv_size = sizeof(key), .mv_data = key };
	MDB_val v = { .mv_size = 1 + len, .mv_data = NULL };
	int rc = mdb_put(txn->txn, txn->store->outbox, &k, &v, MDB_RESERVE);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	uint8_t *out = v.mv_data;
	out[0] = flags;
	if (len > 0) {
		memcpy(out + 1, data, len);
	}
	return ZC_EOK;
}

/* The transaction's recorder, NULL when recording is off. */
static int recorder(edge_txn_t *txn, struct edge_rec **out)
{
	*out = NULL;
	if (txn->rec == NULL) {
		txn->rec = calloc(1, sizeof(*txn->rec));
		if (txn->rec == NULL) {
			return ZC_ENOSPACE;
		}
		txn->rec->nested = txn->parent != NULL;
	}
	struct edge_rec *r = txn->rec;
	if (!r->checked) {
		uint64_t on = 0;
		int ret = edge_meta_get(txn, "repl_on", &on);
		if (ret != ZC_EOK) {
			return ret;
		}
		r->on = on == 1;
		r->checked = true;
	}
	*out = r->on ? r : NULL;
	return ZC_EOK;
}

static int reserve(struct edge_rec *r, size_t more)
{
	if (r->len + more <= r->cap) {
		return ZC_EOK;
	}
	size_t cap = r->cap ? r->cap : 4096;
	while (cap < r->len + more) {
		cap *= 2;
	}
	uint8_t *buf = realloc(r->buf, cap);
	if (buf == NULL) {
		return ZC_ENOSPACE;
	}
	r->buf = buf;
	r->cap = cap;
	return ZC_EOK;
}

/* Writes an op larger than a part (alone in the buffer) as parts of its
 * own; all but the first begin inside the op (EDGE_REPL_CONT). */
static int flush_giant(edge_txn_t *txn, struct edge_rec *r)
{
	size_t off = 0;
	while (off < r->len) {
		size_t n = r->len - off;
		n = n < EDGE_REPL_PART_MAX ? n : EDGE_REPL_PART_MAX;
		int ret = write_part(txn, r, r->buf + off, n,
		                     off > 0 ? EDGE_REPL_CONT : 0);
		if (ret != ZC_EOK) {
			return ret;
		}
		off += n;
	}
	r->len = 0;
	return ZC_EOK;
}

int edge_rec_op(edge_txn_t *txn, unsigned op, unsigned table,
                const void *key, size_t klen, const void *val, size_t vlen)
{
	struct edge_rec *r;
	int ret = recorder(txn, &r);
	if (ret != ZC_EOK || r == NULL) {
		return ret;
	}
	size_t size = OP_HEAD + klen + vlen;
	/* Small ops never straddle parts (readers of zone puts rely on it).
	 * A nested transaction writes no part: it could be rolled back. */
	if (!r->nested && r->len > 0 && r->len + size > EDGE_REPL_PART_MAX) {
		ret = write_part(txn, r, r->buf, r->len, 0);
		r->len = 0;
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	ret = reserve(r, size);
	if (ret != ZC_EOK) {
		return ret;
	}
	uint8_t *p = r->buf + r->len;
	p[0] = (uint8_t)op;
	p[1] = (uint8_t)table;
	edge_put_be(p + 2, klen, 2);
	edge_put_be(p + 4, vlen, 4);
	if (klen > 0) {
		memcpy(p + OP_HEAD, key, klen);
	}
	if (vlen > 0) {
		memcpy(p + OP_HEAD + klen, val, vlen);
	}
	r->len += size;
	return size > EDGE_REPL_PART_MAX && !r->nested ? flush_giant(txn, r) :
	       ZC_EOK;
}

int edge_rec_merge(edge_txn_t *child, edge_txn_t *parent)
{
	struct edge_rec *r = child->rec;
	if (r == NULL || !r->on) {
		return ZC_EOK;
	}
	size_t off = 0;
	int ret = ZC_EOK;
	while (ret == ZC_EOK && off + OP_HEAD <= r->len) {
		const uint8_t *p = r->buf + off;
		size_t klen = (size_t)edge_get_be(p + 2, 2);
		size_t vlen = (size_t)edge_get_be(p + 4, 4);
		ret = edge_rec_op(parent, p[0], p[1], p + OP_HEAD, klen,
		                  p + OP_HEAD + klen, vlen);
		off += OP_HEAD + klen + vlen;
	}
	return ret;
}

int edge_rec_finish(edge_txn_t *txn, bool *wrote)
{
	struct edge_rec *r = txn->rec;
	*wrote = false;
	if (r == NULL || !r->on || (r->len == 0 && !r->started)) {
		return ZC_EOK;
	}
	int ret = write_part(txn, r, r->buf, r->len, EDGE_REPL_FINAL);
	*wrote = ret == ZC_EOK;
	return ret;
}

void edge_rec_free(edge_txn_t *txn)
{
	if (txn->rec != NULL) {
		free(txn->rec->buf);
		free(txn->rec);
		txn->rec = NULL;
	}
}

static int read_pos(edge_txn_t *txn, edge_repl_pos_t *pos)
{
	uint64_t on = 0;
	int ret = edge_meta_get(txn, "repl_on", &on);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(txn, "repl_epoch", &pos->epoch);
	}
	if (ret == ZC_EOK) {
		ret = edge_meta_get(txn, "repl_commit", &pos->commit);
	}
	pos->on = on == 1;
	return ret;
}

int edge_repl_pos(edge_store_t *store, edge_repl_pos_t *pos)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(store, &txn);
	if (ret == ZC_EOK) {
		ret = read_pos(&txn, pos);
		edge_txn_abort(&txn);
	}
	return ret;
}

static uint64_t new_epoch(void)
{
	uint64_t e = 0;
	while (e == 0) {
		if (getrandom(&e, sizeof(e), 0) != sizeof(e)) {
			e = 0;
		}
	}
	return e;
}

int edge_repl_enable(edge_store_t *store, bool on, edge_repl_pos_t *pos)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(store, &txn);
	if (ret == ZC_EOK) {
		ret = read_pos(&txn, pos);
	}
	if (ret == ZC_EOK && pos->on != on) {
		int rc = mdb_drop(txn.txn, store->outbox, 0);
		ret = edge_lmdb_error(rc);
		if (ret == ZC_EOK) {
			ret = edge_meta_put(&txn, "repl_on", on ? 1 : 0);
		}
		if (ret == ZC_EOK && on) {
			pos->epoch = new_epoch();
			pos->commit = 0;
			ret = edge_meta_put(&txn, "repl_epoch", pos->epoch);
			if (ret == ZC_EOK) {
				ret = edge_meta_put(&txn, "repl_commit", 0);
			}
		}
		pos->on = on;
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

void edge_repl_on_outbox(edge_store_t *store, void (*cb)(void *ctx), void *ctx)
{
	store->on_outbox = cb;
	store->on_outbox_ctx = ctx;
}
