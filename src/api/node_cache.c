/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The records a write unit reads and writes, for the length of one run
 * (node_cache.h): two open-addressing tables with seeded hashes (record
 * ids and owner names come from requests), records and nodes in arrays
 * addressed by index, their bytes in an arena.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "api/node_cache.h"
#include "common/error.h"
#include "common/hash.h"

struct api_node_entry {
	records_record_t rec;      /* Its bytes in the arena. */
	uint32_t node;             /* Its node while alive. */
	uint32_t pos;              /* Its place in that node's list. */
	bool alive;                /* false: deleted, or not in the zone. */
};

struct api_node {
	const uint8_t *owner;      /* Lowercase, in the arena. */
	size_t owner_len;
	uint32_t *live;            /* Entries of its records, any order. */
	size_t count, cap;
	bool complete;             /* Read from the store in this run. */
	bool reading;              /* Among the owners of a load. */
};

#define NONE SIZE_MAX

void api_node_cache_init(api_node_cache_t *c)
{
	memset(c, 0, sizeof(*c));
	zc_arena_init(&c->arena, 64 * 1024);
}

void api_node_cache_deinit(api_node_cache_t *c)
{
	zc_arena_deinit(&c->arena);
	free(c->entry);
	free(c->by_id);
	free(c->node);
	free(c->by_owner);
	free(c->scratch);
	memset(c, 0, sizeof(*c));
}

void api_node_cache_reset(api_node_cache_t *c, records_store_t *rs,
                          int64_t zone_id)
{
	zc_arena_reset(&c->arena);
	c->rs = rs;
	c->zone_id = zone_id;
	c->seed = zc_hash_seed();
	c->entries = 0;
	c->nodes = 0;
	if (c->by_id != NULL) {
		memset(c->by_id, 0, c->id_cap * sizeof(*c->by_id));
	}
	if (c->by_owner != NULL) {
		memset(c->by_owner, 0, c->owner_cap * sizeof(*c->by_owner));
	}
	c->error = ZC_EOK;
}

/* --- The two tables --- */

static uint64_t id_hash(const api_node_cache_t *c, int64_t id)
{
	return zc_hash_finish((uint64_t)id ^ c->seed);
}

/* Eight octets a step: names are hashed a few times per op. */
static uint64_t owner_hash(const api_node_cache_t *c, const uint8_t *owner,
                           size_t len)
{
	uint64_t h = c->seed ^ len;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, owner + i, 8);
		h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
		h ^= h >> 32;
	}
	uint64_t w = 0;
	memcpy(&w, owner + i, len - i);
	return zc_hash_finish((h ^ w) * UINT64_C(0x9e3779b97f4a7c15));
}

/* The slot of id in by_id: its entry's, or the free one it would take. */
static uint32_t *id_slot(const api_node_cache_t *c, int64_t id)
{
	size_t mask = c->id_cap - 1;
	for (size_t i = id_hash(c, id) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &c->by_id[i];
		if (*slot == 0 || c->entry[*slot - 1].rec.id == id) {
			return slot;
		}
	}
}

static uint32_t *owner_slot(const api_node_cache_t *c, const uint8_t *owner,
                            size_t len)
{
	size_t mask = c->owner_cap - 1;
	for (size_t i = owner_hash(c, owner, len) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &c->by_owner[i];
		if (*slot == 0) {
			return slot;
		}
		const api_node_t *n = &c->node[*slot - 1];
		if (n->owner_len == len && memcmp(n->owner, owner, len) == 0) {
			return slot;
		}
	}
}

static size_t entry_get(const api_node_cache_t *c, int64_t id)
{
	if (c->id_cap == 0) {
		return NONE;
	}
	uint32_t slot = *id_slot(c, id);
	return slot == 0 ? NONE : slot - 1;
}

/* Grows a table to hold one more than used at half load at most. */
static int table_room(uint32_t **table, size_t *cap, size_t used)
{
	if (used >= UINT32_MAX - 1) {
		return KNOT_ESPACE;
	}
	if (2 * (used + 1) <= *cap) {
		return ZC_EOK;
	}
	size_t ncap = *cap ? 2 * *cap : 256;
	uint32_t *t = calloc(ncap, sizeof(*t));
	if (t == NULL) {
		return KNOT_ENOMEM;
	}
	free(*table);
	*table = t;
	*cap = ncap;
	return 1; /* Emptied: the caller fills it again. */
}

/* The entry of id, made (dead, no record yet) if new: *made says so. */
static int entry_put(api_node_cache_t *c, int64_t id, size_t *out, bool *made)
{
	uint32_t *slot = NULL;
	if (c->id_cap > 0) {
		slot = id_slot(c, id);
		if (*slot != 0) {
			*out = *slot - 1;
			*made = false;
			return ZC_EOK;
		}
	}
	*made = true;
	if (c->entries == c->entry_cap) {
		size_t cap = c->entry_cap ? 2 * c->entry_cap : 256;
		api_node_entry_t *e = realloc(c->entry, cap * sizeof(*e));
		if (e == NULL) {
			return KNOT_ENOMEM;
		}
		c->entry = e;
		c->entry_cap = cap;
	}
	int ret = table_room(&c->by_id, &c->id_cap, c->entries);
	if (ret < 0) {
		return ret;
	}
	if (ret == 1) {
		for (size_t i = 0; i < c->entries; i++) {
			*id_slot(c, c->entry[i].rec.id) = (uint32_t)i + 1;
		}
		slot = id_slot(c, id);
	}
	size_t i = c->entries++;
	c->entry[i] = (api_node_entry_t){ .rec = { .id = id } };
	*slot = (uint32_t)i + 1;
	*out = i;
	return ZC_EOK;
}

/* The node of a lowercase owner, made (not complete) if new. */
static int node_put(api_node_cache_t *c, const uint8_t *lower, size_t *out)
{
	size_t size = knot_dname_size(lower);
	uint32_t *slot = NULL;
	if (c->owner_cap > 0) {
		slot = owner_slot(c, lower, size);
		if (*slot != 0) {
			*out = *slot - 1;
			return ZC_EOK;
		}
	}
	if (c->nodes == c->node_cap) {
		size_t cap = c->node_cap ? 2 * c->node_cap : 256;
		api_node_t *n = realloc(c->node, cap * sizeof(*n));
		if (n == NULL) {
			return KNOT_ENOMEM;
		}
		c->node = n;
		c->node_cap = cap;
	}
	int ret = table_room(&c->by_owner, &c->owner_cap, c->nodes);
	if (ret < 0) {
		return ret;
	}
	if (ret == 1) {
		for (size_t i = 0; i < c->nodes; i++) {
			*owner_slot(c, c->node[i].owner,
			            c->node[i].owner_len) = (uint32_t)i + 1;
		}
		slot = owner_slot(c, lower, size);
	}
	uint8_t *owner = zc_arena_alloc(&c->arena, size);
	if (owner == NULL) {
		return KNOT_ENOMEM;
	}
	memcpy(owner, lower, size);
	size_t i = c->nodes++;
	c->node[i] = (api_node_t){ .owner = owner, .owner_len = size };
	*slot = (uint32_t)i + 1;
	*out = i;
	return ZC_EOK;
}

/* Puts the live entry e into its node's list (e->node set). */
static int node_attach(api_node_cache_t *c, size_t e)
{
	api_node_t *n = &c->node[c->entry[e].node];
	if (n->count == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 4;
		uint32_t *live = zc_arena_alloc(&c->arena, cap * sizeof(*live));
		if (live == NULL) {
			return KNOT_ENOMEM;
		}
		if (n->count > 0) {
			memcpy(live, n->live, n->count * sizeof(*live));
		}
		n->live = live;
		n->cap = cap;
	}
	c->entry[e].pos = (uint32_t)n->count;
	n->live[n->count++] = (uint32_t)e;
	return ZC_EOK;
}

/* Takes the live entry e out of its node's list. */
static void node_detach(api_node_cache_t *c, size_t e)
{
	api_node_t *n = &c->node[c->entry[e].node];
	uint32_t pos = c->entry[e].pos;
	uint32_t last = n->live[--n->count];
	n->live[pos] = last;
	c->entry[last].pos = pos;
}

/* --- Records --- */

static void *copy_bytes(api_node_cache_t *c, const void *src, size_t len,
                        bool *failed)
{
	uint8_t *dst = zc_arena_alloc(&c->arena, len + 1);
	if (dst == NULL) {
		*failed = true;
		return NULL;
	}
	if (len > 0) {
		memcpy(dst, src, len);
	}
	dst[len] = '\0';
	return dst;
}

/* Makes rec (copied, its owner as given) the live record of entry e;
 * lower is its owner in lowercase. */
static int entry_set(api_node_cache_t *c, size_t e, const records_record_t *rec,
                     const uint8_t *lower)
{
	size_t node;
	int ret = node_put(c, lower, &node);
	if (ret != ZC_EOK) {
		return ret;
	}
	bool failed = false;
	records_record_t copy = *rec;
	copy.zone_id = c->zone_id;
	/* The node's bytes when they are the owner's (they are, but for an
	 * owner stored in another case). */
	const api_node_t *n = &c->node[node];
	size_t size = knot_dname_size(rec->owner);
	copy.owner = size == n->owner_len &&
	             memcmp(rec->owner, n->owner, size) == 0 ? n->owner :
	             copy_bytes(c, rec->owner, size, &failed);
	copy.rdata = copy_bytes(c, rec->rdata, rec->rdata_len, &failed);
	copy.comment = rec->comment == NULL ? NULL :
	               copy_bytes(c, rec->comment, strlen(rec->comment), &failed);
	copy.tags = rec->tags == NULL ? NULL :
	            copy_bytes(c, rec->tags, strlen(rec->tags), &failed);
	if (failed) {
		return KNOT_ENOMEM;
	}
	api_node_entry_t *en = &c->entry[e];
	if (en->alive) {
		node_detach(c, e);
	}
	en->rec = copy;
	en->node = (uint32_t)node;
	en->alive = true;
	return node_attach(c, e);
}

/* A record read from the store: kept unless its id is known (what the
 * unit knows of a record is what the store holds of it now). */
static int on_read(const records_record_t *rec, void *ctx)
{
	api_node_cache_t *c = ctx;
	size_t e;
	bool made;
	c->error = entry_put(c, rec->id, &e, &made);
	if (c->error == ZC_EOK && made) {
		uint8_t lower[KNOT_DNAME_MAXLEN];
		knot_dname_copy_lower(lower, rec->owner);
		c->error = entry_set(c, e, rec, lower);
	}
	return c->error != ZC_EOK;
}

/* Ends a read that filled the cache through on_read. */
static int read_done(api_node_cache_t *c, int ret)
{
	if (ret == ZC_EOK) {
		ret = c->error;
	}
	c->error = ZC_EOK;
	return ret;
}

int api_node_cache_load_ids(api_node_cache_t *c, const int64_t *ids,
                            size_t count)
{
	int64_t *ask = malloc((count ? count : 1) * sizeof(*ask));
	if (ask == NULL) {
		return KNOT_ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < count; i++) {
		if (entry_get(c, ids[i]) == NONE) {
			ask[n++] = ids[i];
		}
	}
	int ret = n == 0 ? ZC_EOK :
	          read_done(c, records_record_find_many(c->rs, c->zone_id, ask,
	                                                n, on_read, c));
	/* Ids the zone does not have: known as absent. */
	for (size_t i = 0; i < n && ret == ZC_EOK; i++) {
		size_t e;
		bool made;
		ret = entry_put(c, ask[i], &e, &made);
	}
	free(ask);
	return ret;
}

/* Reads the nodes (complete ones skipped, each once) of lowercase owners. */
static int load_lower(api_node_cache_t *c, const knot_dname_t *const *lower,
                      size_t count)
{
	const knot_dname_t **ask = malloc((count ? count : 1) * sizeof(*ask));
	size_t *node = malloc((count ? count : 1) * sizeof(*node));
	int ret = ask && node ? ZC_EOK : KNOT_ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		size_t k;
		ret = node_put(c, lower[i], &k);
		if (ret == ZC_EOK && !c->node[k].complete && !c->node[k].reading) {
			c->node[k].reading = true;
			node[n] = k;
			ask[n++] = c->node[k].owner;
		}
	}
	if (ret == ZC_EOK && n > 0) {
		ret = read_done(c, records_record_foreach_owners(c->rs, c->zone_id,
		                                                 ask, n, on_read, c));
	}
	for (size_t i = 0; i < n; i++) {
		c->node[node[i]].reading = false;
		c->node[node[i]].complete = ret == ZC_EOK;
	}
	free(node);
	free(ask);
	return ret;
}

int api_node_cache_load_owners(api_node_cache_t *c,
                               const knot_dname_t *const *owners,
                               size_t count)
{
	uint8_t (*lower)[KNOT_DNAME_MAXLEN] = malloc((count ? count : 1) *
	                                             sizeof(*lower));
	const knot_dname_t **ptr = malloc((count ? count : 1) * sizeof(*ptr));
	int ret = lower && ptr ? ZC_EOK : KNOT_ENOMEM;
	for (size_t i = 0; i < count && ret == ZC_EOK; i++) {
		knot_dname_copy_lower(lower[i], owners[i]);
		ptr[i] = lower[i];
	}
	if (ret == ZC_EOK) {
		ret = load_lower(c, ptr, count);
	}
	free(ptr);
	free(lower);
	return ret;
}

bool api_node_cache_known(const api_node_cache_t *c, int64_t id,
                          records_record_t *rec)
{
	size_t e = entry_get(c, id);
	if (e == NONE || !c->entry[e].alive) {
		return false;
	}
	*rec = c->entry[e].rec;
	return true;
}

int api_node_cache_find(api_node_cache_t *c, int64_t id,
                        records_record_t *rec)
{
	size_t e = entry_get(c, id);
	if (e == NONE) {
		int ret = api_node_cache_load_ids(c, &id, 1);
		if (ret != ZC_EOK) {
			return ret;
		}
		e = entry_get(c, id);
	}
	if (e == NONE || !c->entry[e].alive) {
		return KNOT_ENOENT;
	}
	*rec = c->entry[e].rec;
	return ZC_EOK;
}

/* A record of a node being given: (type, id), as the store orders them. */
typedef struct {
	uint16_t type;
	int64_t id;
	uint32_t entry;
} order_t;

static int by_type_id(const void *a, const void *b)
{
	const order_t *x = a, *y = b;
	if (x->type != y->type) {
		return x->type < y->type ? -1 : 1;
	}
	return (x->id > y->id) - (x->id < y->id);
}

int api_node_cache_foreach(api_node_cache_t *c, const knot_dname_t *owner,
                           uint16_t type,
                           int (*cb)(const records_record_t *rec, void *ctx),
                           void *ctx)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, owner);
	size_t k;
	int ret = node_put(c, lower, &k);
	if (ret == ZC_EOK && !c->node[k].complete) {
		/* Not read ahead: read now, as the unit would without a cache. */
		ret = read_done(c, records_record_foreach(c->rs, c->zone_id, lower,
		                                          0, on_read, c));
		c->node[k].complete = ret == ZC_EOK;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	const api_node_t *n = &c->node[k];
	if (n->count > c->scratch_cap) {
		order_t *s = realloc(c->scratch, n->count * sizeof(*s));
		if (s == NULL) {
			return KNOT_ENOMEM;
		}
		c->scratch = s;
		c->scratch_cap = n->count;
	}
	order_t *o = c->scratch;
	size_t m = 0;
	for (size_t i = 0; i < n->count; i++) {
		const records_record_t *rec = &c->entry[n->live[i]].rec;
		if (type == 0 || rec->type == type) {
			o[m++] = (order_t){ .type = rec->type, .id = rec->id,
			                    .entry = n->live[i] };
		}
	}
	if (m > 1) {
		qsort(o, m, sizeof(*o), by_type_id);
	}
	for (size_t i = 0; i < m; i++) {
		if (cb(&c->entry[o[i].entry].rec, ctx) != 0) {
			break;
		}
	}
	return ZC_EOK;
}

int api_node_cache_inserted(api_node_cache_t *c, const records_record_t *rec)
{
	size_t e;
	bool made;
	int ret = entry_put(c, rec->id, &e, &made);
	if (ret == ZC_EOK) {
		/* As stored: the owner in lowercase (records_record_insert()). */
		uint8_t lower[KNOT_DNAME_MAXLEN];
		knot_dname_copy_lower(lower, rec->owner);
		records_record_t copy = *rec;
		copy.owner = lower;
		ret = entry_set(c, e, &copy, lower);
	}
	return ret;
}

void api_node_cache_deleted(api_node_cache_t *c, int64_t id)
{
	/* Known as absent from now on; nothing to do if that fails: the id
	 * is then read from the store, which has it no more. */
	size_t e;
	bool made;
	if (entry_put(c, id, &e, &made) == ZC_EOK && c->entry[e].alive) {
		node_detach(c, e);
		c->entry[e].alive = false;
	}
}
