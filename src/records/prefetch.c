/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Nodes read ahead for a write transaction's units (PostgreSQL): the
 * records at the owners a batch's units named before they ran
 * (records_hint_node(), the writer's hint callbacks), read in ONE
 * statement right after the transaction locked their zone's row, and
 * then served to records_record_foreach() from here. An RFC 2136 UPDATE
 * reads its node first; that read was the one round trip of each unit
 * (the writer waits for it while postgres and every other thread wait
 * for the writer), and now it is one per zone and batch.
 *
 * Exact, not a guess:
 * - Every writer of a zone's records holds the zone's row lock
 *   (records.h, "Concurrency"); the read runs after the lock was granted,
 *   as a statement of its own (a new snapshot under READ COMMITTED), so
 *   it sees every commit the lock waited for. Nothing but this
 *   transaction changes those records until it ends.
 * - A node is served only while the transaction holds that lock: the
 *   kept zone row (zones.c, zrow) is this zone's, and it is forgotten or
 *   put back at every rollback that releases the lock. The read is done
 *   again at every locking read of the zone's row, which is the only way
 *   the row becomes kept again.
 * - This transaction's own writes (rows.c: an insert, a delete; zones.c:
 *   the zone's removal) drop the node they touch (or the zone), which is
 *   then read from the server again. A rollback to a savepoint puts back
 *   what the server had when the nodes were read, and a node written
 *   since was dropped already; unless they were read after the savepoint
 *   (then they may hold writes the rollback undid: a unit that locked
 *   another zone's row and then this one's again), and then they are
 *   dropped (records_prefetch_restore()).
 *
 * Bounded: HINTS_MAX owners per transaction and ROWS_MAX records per
 * read; past them nothing is read ahead (the units read as before).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"

#define HINTS_MAX 512
#define ROWS_MAX 4096
#define DNAMES_MAX 64

typedef struct {
	int64_t zone_id;
	size_t len;
	uint8_t okey[DNS_LF_MAXLEN];
} hint_t;

typedef struct {
	records_record_t rec;
	void *mem;  /* owner, rdata, comment and tags, in one block. */
} row_t;

typedef struct {
	size_t hint;  /* Its key: hints[hint] (an index: hints may grow). */
	bool valid;
	size_t first, count;  /* rows[first, first + count), by (type, id). */
} node_t;

struct records_prefetch {
	hint_t *hints;
	size_t hint_n, hint_cap;
	int64_t zone_id;  /* The zone read ahead; 0: none. */
	node_t *nodes;
	size_t node_n;
	row_t *rows;
	size_t row_n, row_cap;
	/* Reads so far, and their number at each savepoint level. */
	uint64_t reads;
	uint64_t marks[2];
	/* The zone's DNAME owners (records_prefetch_dnames()): kept across
	 * the transaction's locking reads of that zone's row (the lock is
	 * held until its end, or a rollback past the read drops them). */
	int64_t dnames_zone;  /* 0: not read. */
	records_dname_t dnames[DNAMES_MAX];
	size_t dname_n;
};

static void drop_nodes(struct records_prefetch *pf)
{
	for (size_t i = 0; i < pf->row_n; i++) {
		free(pf->rows[i].mem);
	}
	free(pf->rows);
	free(pf->nodes);
	pf->rows = NULL;
	pf->nodes = NULL;
	pf->row_n = pf->row_cap = pf->node_n = 0;
	pf->zone_id = 0;
}

void records_prefetch_reset(records_store_t *store)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf != NULL) {
		drop_nodes(pf);
		pf->hint_n = 0;
		pf->dnames_zone = 0;
	}
}

void records_prefetch_free(records_store_t *store)
{
	records_prefetch_reset(store);
	if (store->prefetch != NULL) {
		free(store->prefetch->hints);
		free(store->prefetch);
		store->prefetch = NULL;
	}
}

void records_prefetch_hint(records_store_t *store, int64_t zone_id,
                           const uint8_t *okey, size_t len)
{
	if (!store->in_write || rdb_kind(store->db) != RDB_PG ||
	    len > DNS_LF_MAXLEN) {
		return;
	}
	if (store->prefetch == NULL) {
		store->prefetch = calloc(1, sizeof(*store->prefetch));
		if (store->prefetch == NULL) {
			return; /* Units read their nodes as before. */
		}
	}
	struct records_prefetch *pf = store->prefetch;
	for (size_t i = pf->hint_n; i > 0 && i + 8 > pf->hint_n; i--) {
		const hint_t *h = &pf->hints[i - 1];
		if (h->zone_id == zone_id && h->len == len &&
		    memcmp(h->okey, okey, len) == 0) {
			return; /* Named just before (the same message). */
		}
	}
	if (pf->hint_n == pf->hint_cap) {
		if (pf->hint_cap == HINTS_MAX) {
			return;
		}
		size_t cap = pf->hint_cap ? pf->hint_cap * 2 : 64;
		hint_t *hints = realloc(pf->hints, cap * sizeof(*hints));
		if (hints == NULL) {
			return;
		}
		pf->hints = hints;
		pf->hint_cap = cap;
	}
	hint_t *h = &pf->hints[pf->hint_n++];
	h->zone_id = zone_id;
	h->len = len;
	memcpy(h->okey, okey, len);
}

static node_t *find_node(struct records_prefetch *pf, const uint8_t *okey,
                         size_t len)
{
	for (size_t i = 0; i < pf->node_n; i++) {
		const hint_t *key = &pf->hints[pf->nodes[i].hint];
		if (key->len == len && memcmp(key->okey, okey, len) == 0) {
			return &pf->nodes[i];
		}
	}
	return NULL;
}

/* The zone's hinted owners, each once, as nodes (empty, valid); their
 * keys, for the read, in keys and lens. */
static size_t make_nodes(struct records_prefetch *pf, int64_t zone_id,
                         const uint8_t **keys, size_t *lens)
{
	size_t n = 0;
	for (size_t i = 0; i < pf->hint_n; i++) {
		const hint_t *h = &pf->hints[i];
		if (h->zone_id != zone_id || find_node(pf, h->okey, h->len)) {
			continue;
		}
		pf->nodes[pf->node_n++] = (node_t){ .hint = i, .valid = true };
		keys[n] = h->len ? h->okey : (const uint8_t *)"";
		lens[n++] = h->len;
	}
	return n;
}

/* Copies the current row into pf->rows[pf->row_n] (owner, rdata,
 * comment and tags in one block). */
static int keep_row(struct records_prefetch *pf, rdb_stmt_t *stmt)
{
	size_t owner_len = rdb_col_bytes(stmt, 2);
	size_t rdata_len = rdb_col_bytes(stmt, 5);
	const char *comment = rdb_col_text(stmt, 6);
	const char *tags = rdb_col_text(stmt, 10);
	size_t comment_len = comment ? strlen(comment) + 1 : 0;
	size_t tags_len = tags ? strlen(tags) + 1 : 0;
	if (owner_len == 0 || owner_len > KNOT_DNAME_MAXLEN ||
	    rdata_len > UINT16_MAX) {
		return ZC_EFORMAT;
	}
	if (pf->row_n == pf->row_cap) {
		size_t cap = pf->row_cap ? pf->row_cap * 2 : 64;
		row_t *rows = realloc(pf->rows, cap * sizeof(*rows));
		if (rows == NULL) {
			return KNOT_ENOMEM;
		}
		pf->rows = rows;
		pf->row_cap = cap;
	}
	uint8_t *mem = malloc(owner_len + rdata_len + comment_len + tags_len + 1);
	if (mem == NULL) {
		return KNOT_ENOMEM;
	}
	row_t *row = &pf->rows[pf->row_n++];
	row->mem = mem;
	records_record_t *rec = &row->rec;
	*rec = (records_record_t){
		.id = rdb_col_int64(stmt, 0),
		.zone_id = rdb_col_int64(stmt, 1),
		.type = (uint16_t)rdb_col_int64(stmt, 3),
		.ttl = (uint32_t)rdb_col_int64(stmt, 4),
		.rdata_len = (uint16_t)rdata_len,
		.created_on = rdb_col_int64(stmt, 7),
		.modified_on = rdb_col_int64(stmt, 8),
		.api_form = (uint8_t)rdb_col_int64(stmt, 9),
	};
	memcpy(mem, rdb_col_blob(stmt, 2, NULL), owner_len);
	rec->owner = mem;
	mem += owner_len;
	if (rdata_len > 0) {
		memcpy(mem, rdb_col_blob(stmt, 5, NULL), rdata_len);
	}
	rec->rdata = mem;
	mem += rdata_len;
	if (comment != NULL) {
		memcpy(mem, comment, comment_len);
		rec->comment = (const char *)mem;
		mem += comment_len;
	}
	if (tags != NULL) {
		memcpy(mem, tags, tags_len);
		rec->tags = (const char *)mem;
	}
	return ZC_EOK;
}

/* Reads the nodes (one statement); ZC_EOK with pf->zone_id left 0 when
 * there are more rows than ROWS_MAX. Rows come by (okey, type, id): each
 * node's are adjacent, in the order records_record_foreach() gives. */
static int read_nodes(struct records_prefetch *pf, rdb_stmt_t *stmt)
{
	int rc;
	node_t *node = NULL;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		size_t len = rdb_col_bytes(stmt, 11);
		const uint8_t *okey = rdb_col_blob(stmt, 11, NULL);
		const hint_t *key = node ? &pf->hints[node->hint] : NULL;
		if (key == NULL || key->len != len ||
		    (len > 0 && memcmp(key->okey, okey, len) != 0)) {
			node = find_node(pf, okey ? okey : (const uint8_t *)"", len);
			if (node == NULL || node->count > 0) {
				return ZC_EFORMAT; /* Not asked for, or not in order. */
			}
			node->first = pf->row_n;
		}
		if (pf->row_n == ROWS_MAX) {
			drop_nodes(pf);
			return ZC_EOK;
		}
		int ret = keep_row(pf, stmt);
		if (ret != ZC_EOK) {
			return ret;
		}
		node->count++;
	}
	return rdb_status(rc);
}

void records_prefetch_mark(records_store_t *store, int level)
{
	if (store->prefetch != NULL) {
		store->prefetch->marks[level] = store->prefetch->reads;
	}
}

void records_prefetch_restore(records_store_t *store, int level)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf != NULL && pf->reads != pf->marks[level]) {
		drop_nodes(pf); /* Read since the savepoint. */
		pf->dnames_zone = 0;
	}
}

int records_prefetch_zone(records_store_t *store, int64_t zone_id)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf == NULL) {
		return ZC_EOK;
	}
	drop_nodes(pf);
	pf->reads++;
	if (pf->hint_n == 0) {
		return ZC_EOK;
	}
	pf->nodes = malloc(pf->hint_n * sizeof(*pf->nodes));
	const uint8_t **keys = malloc(pf->hint_n * sizeof(*keys));
	size_t *lens = malloc(pf->hint_n * sizeof(*lens));
	int ret = pf->nodes && keys && lens ? ZC_EOK : KNOT_ENOMEM;
	size_t n = ret == ZC_EOK ? make_nodes(pf, zone_id, keys, lens) : 0;
	rdb_stmt_t *stmt = NULL;
	if (ret == ZC_EOK && n > 0) {
		ret = rdb_prepare(store->db, RDB_SQL2(NULL,
			"SELECT " RECORDS_RECORD_COLUMNS ", okey"
			" FROM records WHERE zone_id = ?1 AND okey = ANY(?2)"
			" ORDER BY okey, type, id"), &stmt);
	}
	if (stmt != NULL) {
		rdb_bind_int64(stmt, 1, zone_id);
		rdb_bind_blob_array(stmt, 2, (const void *const *)keys, lens, n);
		pf->zone_id = zone_id;
		ret = read_nodes(pf, stmt);
		rdb_done(stmt);
	}
	free(keys);
	free(lens);
	if (ret != ZC_EOK || n == 0) {
		/* Without memory, or a row records_rows_foreach() would not
		 * give as it is: the units read their nodes as before. */
		drop_nodes(pf);
		ret = ret == KNOT_ENOMEM || ret == ZC_EFORMAT ? ZC_EOK : ret;
	}
	return ret;
}

bool records_prefetched(records_store_t *store, int64_t zone_id,
                        const uint8_t *okey, size_t len, uint16_t type,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf == NULL || pf->zone_id != zone_id || !store->in_write ||
	    !store->zrow_valid || store->zrow.id != zone_id) {
		return false; /* Not read ahead, or its lock not held. */
	}
	node_t *node = find_node(pf, okey, len);
	if (node == NULL || !node->valid) {
		return false;
	}
	for (size_t i = node->first; i < node->first + node->count; i++) {
		const records_record_t *rec = &pf->rows[i].rec;
		if ((type == 0 || rec->type == type) && cb(rec, ctx) != 0) {
			break;
		}
	}
	return true;
}

void records_prefetch_forget_node(records_store_t *store, int64_t zone_id,
                                  const uint8_t *okey, size_t len)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf != NULL && pf->zone_id == zone_id) {
		node_t *node = find_node(pf, okey, len);
		if (node != NULL) {
			node->valid = false;
		}
	}
}

void records_prefetch_forget_zone(records_store_t *store, int64_t zone_id)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf != NULL && pf->zone_id == zone_id) {
		drop_nodes(pf);
	}
	if (pf != NULL && pf->dnames_zone == zone_id) {
		pf->dnames_zone = 0;
	}
}

/* Whether this transaction holds zone_id's row lock on PostgreSQL: what
 * is read under it stays so until this transaction writes it. */
static bool lock_held(const records_store_t *store, int64_t zone_id)
{
	return store->in_write && rdb_kind(store->db) == RDB_PG &&
	       store->zrow_valid && store->zrow.id == zone_id;
}

bool records_prefetch_dnames(records_store_t *store, int64_t zone_id,
                             const records_dname_t **out, size_t *n,
                             int *ret)
{
	*ret = ZC_EOK;
	if (!lock_held(store, zone_id)) {
		return false;
	}
	if (store->prefetch == NULL) {
		store->prefetch = calloc(1, sizeof(*store->prefetch));
		if (store->prefetch == NULL) {
			return false;
		}
	}
	struct records_prefetch *pf = store->prefetch;
	if (pf->dnames_zone != zone_id) {
		rdb_stmt_t *stmt;
		*ret = rdb_prepare(store->db, RDB_SQL(
			"SELECT id, okey, owner FROM records WHERE zone_id = ?1"
			" AND type = 39 LIMIT 65"), &stmt);
		if (*ret != ZC_EOK) {
			return false;
		}
		rdb_bind_int64(stmt, 1, zone_id);
		size_t k = 0;
		int rc;
		bool fits = true;
		while ((rc = rdb_step(stmt)) == RDB_ROW) {
			size_t len = rdb_col_bytes(stmt, 1);
			size_t olen = rdb_col_bytes(stmt, 2);
			if (k == DNAMES_MAX || len > DNS_LF_MAXLEN ||
			    olen > KNOT_DNAME_MAXLEN) {
				fits = false;
				continue;
			}
			records_dname_t *d = &pf->dnames[k++];
			d->id = rdb_col_int64(stmt, 0);
			d->len = len;
			if (len > 0) {
				memcpy(d->okey, rdb_col_blob(stmt, 1, NULL), len);
			}
			memset(d->owner, 0, sizeof(d->owner));
			if (olen > 0) {
				memcpy(d->owner, rdb_col_blob(stmt, 2, NULL), olen);
			}
		}
		*ret = rdb_status(rc);
		rdb_done(stmt);
		if (*ret != ZC_EOK || !fits) {
			return false;
		}
		pf->dname_n = k;
		pf->dnames_zone = zone_id;
		pf->reads++; /* A rollback to a savepoint before it drops it. */
	}
	*out = pf->dnames;
	*n = pf->dname_n;
	return true;
}

void records_prefetch_forget_dnames(records_store_t *store, int64_t zone_id)
{
	struct records_prefetch *pf = store->prefetch;
	if (pf != NULL && pf->dnames_zone == zone_id) {
		pf->dnames_zone = 0;
	}
}
