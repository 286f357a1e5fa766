/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Reading side of the replication log (see repl.h): the outbox for the
 * publisher, snapshots, and applying an op stream at an edge.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "common/error.h"
#include "common/hash.h"
#include "dns/name.h"
#include "edge/internal.h"
#include "edge/repl.h"

#define OP_HEAD 8

static uint64_t get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v = v << 8 | p[i];
	}
	return v;
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	}
}

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
	put_be(key, after_commit, 8);
	put_be(key + 8, after_part, 4);
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
			.commit = get_be(kp, 8), .part = (uint32_t)get_be(kp + 8, 4),
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
	put_be(last, commit, 8);
	put_be(last + 8, part, 4);
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
	put_be(head + 2, klen, 2);
	put_be(head + 4, vlen, 4);
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

/* --- Applying at an edge --- */

int edge_apply_begin(edge_store_t *store, edge_applier_t *ap)
{
	memset(ap, 0, sizeof(*ap));
	return edge_txn_begin_write(store, &ap->txn);
}

/*
 * A value from the log is checked before it is stored, as anything from
 * outside: node values decode with well-formed rdata (edge_node_check),
 * zone metadata decodes and sits under its own apex's key.
 */
static bool value_ok(unsigned table, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen)
{
	switch (table) {
	case EDGE_TABLE_NODES:
		return klen >= 8 && edge_node_check(val, vlen) == ZC_EOK;
	case EDGE_TABLE_STAGE:
		return klen >= 8 && ((vlen == 9 && val[0] == 0) ||
		                     edge_node_check(val, vlen) == ZC_EOK);
	case EDGE_TABLE_ZONES: {
		static _Thread_local edge_zone_t z;
		uint8_t lf[DNS_LF_MAXLEN];
		if (edge_zone_decode(val, vlen, &z) != ZC_EOK ||
		    knot_dname_wire_check(z.apex, z.apex + z.apex_len, NULL) !=
		    (int)z.apex_len) {
			return false;
		}
		size_t len = dns_name_to_lf(z.apex, lf);
		return klen == 1 + len && key[0] == '.' &&
		       memcmp(key + 1, lf, len) == 0;
	}
	default:
		return klen == 8;
	}
}

/* Applies one complete op; returns its size, 0 when incomplete, or <0. */
static long apply_op(edge_txn_t *txn, const uint8_t *p, size_t len)
{
	if (len < OP_HEAD) {
		return 0;
	}
	unsigned op = p[0], table = p[1];
	size_t klen = get_be(p + 2, 2), vlen = get_be(p + 4, 4);
	if (len < OP_HEAD + klen + vlen) {
		return 0;
	}
	if (table >= EDGE_TABLE_COUNT || klen > NODE_KEY_MAX ||
	    vlen > EDGE_REPL_VALUE_MAX) {
		return ZC_EFORMAT;
	}
	MDB_dbi dbi = edge_table_dbi(txn->store, table);
	MDB_val k = { .mv_size = klen, .mv_data = (void *)(p + OP_HEAD) };
	MDB_val v = { .mv_size = vlen, .mv_data = (void *)(p + OP_HEAD + klen) };
	int rc = MDB_SUCCESS;
	switch (op) {
	case EDGE_OP_PUT:
		if (klen == 0 || !value_ok(table, p + OP_HEAD, klen,
		                           p + OP_HEAD + klen, vlen)) {
			return ZC_EFORMAT;
		}
		rc = mdb_put(txn->txn, dbi, &k, &v, 0);
		break;
	case EDGE_OP_DEL:
		rc = klen == 0 ? EINVAL : mdb_del(txn->txn, dbi, &k, NULL);
		rc = rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
		break;
	case EDGE_OP_DEL_PREFIX: {
		MDB_cursor *cur;
		rc = mdb_cursor_open(txn->txn, dbi, &cur);
		if (rc != MDB_SUCCESS) {
			break;
		}
		MDB_val ck = k, cv;
		rc = mdb_cursor_get(cur, &ck, &cv, MDB_SET_RANGE);
		while (rc == MDB_SUCCESS && ck.mv_size >= klen &&
		       memcmp(ck.mv_data, k.mv_data, klen) == 0) {
			rc = mdb_cursor_del(cur, 0);
			if (rc == MDB_SUCCESS) {
				ck = k;
				rc = mdb_cursor_get(cur, &ck, &cv, MDB_SET_RANGE);
			}
		}
		mdb_cursor_close(cur);
		rc = rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
		break;
	}
	case EDGE_OP_DROP:
		rc = mdb_drop(txn->txn, dbi, 0);
		break;
	case EDGE_OP_STAGE_APPLY: {
		if (klen != 8) {
			return ZC_EFORMAT;
		}
		int ret = edge_stage_apply(txn, get_be(p + OP_HEAD, 8));
		if (ret != ZC_EOK) {
			return ret;
		}
		break;
	}
	default:
		return ZC_EFORMAT;
	}
	if (rc == EINVAL) {
		return ZC_EFORMAT;
	}
	int ret = edge_lmdb_error(rc);
	return ret != ZC_EOK ? ret : (long)(OP_HEAD + klen + vlen);
}

/* Applies the complete ops of buf; returns the bytes used or <0. */
static long apply_ops(edge_applier_t *ap, const uint8_t *buf, size_t len)
{
	size_t off = 0;
	for (;;) {
		long n = apply_op(&ap->txn, buf + off, len - off);
		if (n < 0) {
			return n;
		}
		if (n == 0) {
			return (long)off;
		}
		off += (size_t)n;
		ap->ops++;
	}
}

int edge_apply_feed(edge_applier_t *ap, const uint8_t *data, size_t len)
{
	if (ap->carry_len == 0) {
		long used = apply_ops(ap, data, len);
		if (used < 0) {
			return (int)used;
		}
		data += used;
		len -= (size_t)used;
		if (len == 0) {
			return ZC_EOK;
		}
	}
	if (ap->carry_len + len > EDGE_REPL_VALUE_MAX + EDGE_REPL_PART_MAX) {
		return ZC_EFORMAT; /* No op is that large. */
	}
	if (ap->carry_len + len > ap->carry_cap) {
		size_t cap = ap->carry_cap ? ap->carry_cap : EDGE_REPL_PART_MAX;
		while (cap < ap->carry_len + len) {
			cap *= 2;
		}
		uint8_t *c = realloc(ap->carry, cap);
		if (c == NULL) {
			return ZC_ENOSPACE;
		}
		ap->carry = c;
		ap->carry_cap = cap;
	}
	memcpy(ap->carry + ap->carry_len, data, len);
	ap->carry_len += len;
	long used = apply_ops(ap, ap->carry, ap->carry_len);
	if (used < 0) {
		return (int)used;
	}
	memmove(ap->carry, ap->carry + used, ap->carry_len - (size_t)used);
	ap->carry_len -= (size_t)used;
	return ZC_EOK;
}

int edge_apply_finish(edge_applier_t *ap, uint64_t epoch, uint64_t commit,
                      uint64_t stream_seq)
{
	int ret = ap->carry_len == 0 ? ZC_EOK : ZC_EFORMAT;
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&ap->txn, "fleet_epoch", epoch);
	}
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&ap->txn, "fleet_commit", commit);
	}
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&ap->txn, "fleet_seq", stream_seq);
	}
	free(ap->carry);
	ap->carry = NULL;
	ap->carry_len = ap->carry_cap = 0;
	if (ret != ZC_EOK) {
		edge_txn_abort(&ap->txn);
		return ret;
	}
	return edge_txn_commit(&ap->txn);
}

void edge_apply_abort(edge_applier_t *ap)
{
	free(ap->carry);
	ap->carry = NULL;
	ap->carry_len = ap->carry_cap = 0;
	edge_txn_abort(&ap->txn);
}

int edge_applied_pos(edge_store_t *store, uint64_t *epoch, uint64_t *commit,
                     uint64_t *stream_seq)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(store, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "fleet_epoch", epoch);
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "fleet_commit", commit);
		}
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "fleet_seq", stream_seq);
		}
		edge_txn_abort(&txn);
	}
	return ret;
}

int edge_repl_zone_puts(const uint8_t *data, size_t len,
                        void (*cb)(const uint8_t *val, size_t len, void *ctx),
                        void *ctx)
{
	size_t off = 0;
	while (len - off >= OP_HEAD) {
		const uint8_t *p = data + off;
		size_t klen = get_be(p + 2, 2), vlen = get_be(p + 4, 4);
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
			put_be(head + 1, k.mv_size, 4);
			put_be(head + 5, v.mv_size, 4);
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
