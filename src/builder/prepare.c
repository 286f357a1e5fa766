/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Brings an edge store to this program's key format (EDGE_KEY_FORMAT in
 * edge/edge.h) before anything reads or builds it: an edge written in an
 * older format, or one that lost its file while the records store holds
 * zones, is emptied and every zone is fully built again. So is one that
 * applied less of the change log than was trimmed since (another node
 * sharing a PostgreSQL store trimmed it while this one was away). The
 * edge store is derived data, so this is always safe.
 */
#include <stdlib.h>
#include <string.h>

#include "builder/builder.h"
#include "builder/pass.h"
#include "common/error.h"
#include "common/log.h"

typedef struct {
	uint8_t (*apex)[KNOT_DNAME_MAXLEN];
	int64_t *id;
	size_t count, cap;
} apexes_t;

static int collect_apex(const records_zone_t *zone, void *ctx)
{
	apexes_t *a = ctx;
	if (a->count == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void *grown = realloc(a->apex, cap * sizeof(*a->apex));
		if (grown == NULL) {
			return 1;
		}
		a->apex = grown;
		grown = realloc(a->id, cap * sizeof(*a->id));
		if (grown == NULL) {
			return 1;
		}
		a->id = grown;
		a->cap = cap;
	}
	a->id[a->count] = zone->id;
	memcpy(a->apex[a->count++], zone->apex, knot_dname_size(zone->apex));
	return 0;
}

static int read_format(edge_store_t *es, uint64_t *format)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = edge_meta_get(&txn, "key_format", format);
	edge_txn_abort(&txn);
	return ret;
}

/* Empties the edge and stamps the format, unless another process did it
 * first (then *done is set). */
static int reset(edge_store_t *es, bool force, bool *done)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	uint64_t format = 0;
	ret = edge_meta_get(&txn, "key_format", &format);
	*done = !force && ret == ZC_EOK && format == EDGE_KEY_FORMAT;
	if (ret == ZC_EOK && !*done) {
		ret = edge_txn_clear(&txn);
	}
	if (ret == ZC_EOK && !*done) {
		ret = edge_meta_put(&txn, "key_format", EDGE_KEY_FORMAT);
	}
	if (ret != ZC_EOK || *done) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

static int save_applied(edge_store_t *es, uint64_t seq)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(es, &txn);
	uint64_t old = 0;
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &old);
	}
	if (ret == ZC_EOK && old < seq) {
		ret = edge_meta_put(&txn, "applied_seq", seq);
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

/* Full builds of every zone; the log is applied from `seq` on. */
static int rebuild(records_store_t *rs, edge_store_t *es, uint64_t format,
                   bool force)
{
	uint64_t seq = 0;
	apexes_t a = { 0 };
	int ret = records_last_seq(rs, &seq);
	if (ret == ZC_EOK) {
		ret = records_zone_list(rs, false, collect_apex, &a);
	}
	bool done = false;
	if (ret == ZC_EOK) {
		ret = reset(es, force, &done);
	}
	if (ret == ZC_EOK && !done && a.count > 0 && !force) {
		zc_info("edge store: key format %llu, this zonecast writes %u: "
		        "building its %zu zones again from the records store",
		        (unsigned long long)format, EDGE_KEY_FORMAT, a.count);
	}
	for (size_t i = 0; ret == ZC_EOK && !done && i < a.count; i++) {
		ret = builder_full_build(rs, es, a.apex[i], NULL, NULL, NULL);
		if (ret != ZC_EOK && !builder_error_is_store_wide(ret)) {
			/* One zone must not keep the others from being served:
			 * it is quarantined, and the follower tries it again. */
			edge_quarantine_t q;
			ret = quarantine_store(es, (uint64_t)a.id[i], a.apex[i], ret,
			                       "full build", NULL, seq, &q);
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, a.apex[i], sizeof(name));
			if (ret == ZC_EOK) {
				zc_error("zone %s: quarantined: %s", name, q.reason);
			}
		}
	}
	if (ret == ZC_EOK && !done) {
		/* Every build read a snapshot at least as new as seq; what
		 * came later is replayed (builds are idempotent). */
		ret = save_applied(es, seq);
	}
	free(a.apex);
	free(a.id);
	return ret;
}

/* Has the change log been trimmed past what this edge store applied? */
static int trimmed_past(records_store_t *rs, edge_store_t *es, bool *past)
{
	uint64_t trimmed = 0, applied = 0;
	*past = false;
	int ret = records_trimmed_seq(rs, &trimmed);
	if (ret != ZC_EOK || trimmed == 0) {
		return ret;
	}
	edge_txn_t txn = { 0 };
	ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &applied);
		edge_txn_abort(&txn);
	}
	if (ret == ZC_EOK && applied < trimmed) {
		zc_warn("edge store: applied the change log up to seq %llu, but"
		        " it now starts after seq %llu (trimmed while this node"
		        " was away): building every zone again from the"
		        " records store", (unsigned long long)applied,
		        (unsigned long long)trimmed);
		*past = true;
	}
	return ret;
}

int builder_edge_prepare(records_store_t *rs, edge_store_t *es)
{
	uint64_t format = 0;
	int ret = read_format(es, &format);
	if (ret == ZC_EOK && format == EDGE_KEY_FORMAT) {
		bool past = false;
		ret = trimmed_past(rs, es, &past);
		if (ret != ZC_EOK || !past) {
			return ret;
		}
		return rebuild(rs, es, format, true);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if (format > EDGE_KEY_FORMAT) {
		zc_error("edge store: key format %llu is newer than this "
		         "zonecast's (%u)", (unsigned long long)format,
		         EDGE_KEY_FORMAT);
		return ZC_ESCHEMA;
	}
	return rebuild(rs, es, format, false);
}
