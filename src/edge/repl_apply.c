/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Applying an op stream at an edge (see repl.h): one write transaction per
 * commit, ops carried over between parts, every value checked before it is
 * stored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "common/error.h"
#include "dns/name.h"
#include "edge/codec.h"
#include "edge/internal.h"
#include "edge/repl.h"

#define OP_HEAD 8

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
/* A node flagged as the apex is the apex's (its key is the zone id
 * alone), and the apex's is so flagged: a forged apex node without the
 * flag hid the zone's SOA, one elsewhere with it answered the SOA there.
 * (val is a checked node value: its flags are its second octet.) */
static bool apex_flag_ok(size_t klen, const uint8_t *val)
{
	return ((val[1] & EDGE_NODE_APEX) != 0) == (klen == 8);
}

static bool value_ok(unsigned table, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen)
{
	switch (table) {
	case EDGE_TABLE_NODES:
		return klen >= 8 && edge_node_check(val, vlen) == ZC_EOK &&
		       apex_flag_ok(klen, val);
	case EDGE_TABLE_STAGE:
		return klen >= 8 && ((vlen == 9 && val[0] == 0) ||
		                     (edge_node_check(val, vlen) == ZC_EOK &&
		                      apex_flag_ok(klen, val)));
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
	size_t klen = edge_get_be(p + 2, 2), vlen = edge_get_be(p + 4, 4);
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
		int ret = edge_stage_apply(txn, edge_get_be(p + OP_HEAD, 8));
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
