/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * LMDB wrapper of the edge store: environment, transactions, key schema,
 * fenced writes (see edge.h for the design).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lmdb.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "edge/edge.h"

#define DEFAULT_MAP_SIZE ((size_t)64 << 30)
#define NODE_KEY_MAX (8 + DNS_LF_MAXLEN)
#define ZONE_KEY_MAX (1 + DNS_LF_MAXLEN)

struct edge_store {
	MDB_env *env;
	MDB_dbi zones;
	MDB_dbi nodes;
	MDB_dbi meta;
	MDB_dbi keys;   /* Zone id (u64 BE) -> the zone's signing keys. */
};

/* The one place LMDB results become zonecast codes. */
static int lmdb_error(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return ZC_EOK;
	case MDB_NOTFOUND:
		return KNOT_ENOENT;
	case MDB_MAP_FULL:
	case MDB_MAP_RESIZED:
		return ZC_ENOSPACE;
	case ENOMEM:
		return KNOT_ENOMEM;
	default:
		if (rc > 0 && rc < 1000) {
			return -rc;
		}
		zc_debug("lmdb: %s", mdb_strerror(rc));
		return ZC_ELMDB;
	}
}

int edge_open(edge_store_t **out, const char *dir, size_t map_size)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/edge.mdb", dir) >= (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	edge_store_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	int rc = mdb_env_create(&s->env);
	if (rc != MDB_SUCCESS) {
		free(s);
		return lmdb_error(rc);
	}
	mdb_env_set_maxdbs(s->env, 8);
	mdb_env_set_maxreaders(s->env, 1024);
	mdb_env_set_mapsize(s->env, map_size ? map_size : DEFAULT_MAP_SIZE);
	rc = mdb_env_open(s->env, path, MDB_NOSUBDIR | MDB_NOSYNC |
	                  MDB_NOTLS | MDB_NORDAHEAD, 0600);
	if (rc != MDB_SUCCESS) {
		goto fail;
	}
	/* Free reader slots that killed processes left behind. */
	int dead = 0;
	mdb_reader_check(s->env, &dead);
	MDB_txn *txn;
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc != MDB_SUCCESS) {
		goto fail;
	}
	rc = mdb_dbi_open(txn, "zones", MDB_CREATE, &s->zones);
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "nodes", MDB_CREATE, &s->nodes);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "keys", MDB_CREATE, &s->keys);
	}
	if (rc != MDB_SUCCESS) {
		mdb_txn_abort(txn);
		goto fail;
	}
	rc = mdb_txn_commit(txn);
	if (rc != MDB_SUCCESS) {
		goto fail;
	}
	*out = s;
	return ZC_EOK;
fail:
	mdb_env_close(s->env);
	free(s);
	return lmdb_error(rc);
}

void edge_close(edge_store_t *store)
{
	if (store == NULL) {
		return;
	}
	mdb_env_sync(store->env, 1);
	mdb_env_close(store->env);
	free(store);
}

int edge_txn_begin_read(edge_store_t *store, edge_txn_t *txn)
{
	int rc;
	if (txn->txn != NULL && !txn->write && !txn->active) {
		rc = mdb_txn_renew(txn->txn);
		if (rc == MDB_SUCCESS) {
			txn->active = true;
			return ZC_EOK;
		}
		mdb_txn_abort(txn->txn);
		txn->txn = NULL;
	}
	txn->store = store;
	txn->write = false;
	rc = mdb_txn_begin(store->env, NULL, MDB_RDONLY, &txn->txn);
	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size and retry. */
		mdb_env_set_mapsize(store->env, 0);
		rc = mdb_txn_begin(store->env, NULL, MDB_RDONLY, &txn->txn);
	}
	if (rc != MDB_SUCCESS) {
		txn->txn = NULL;
		return lmdb_error(rc);
	}
	txn->active = true;
	return ZC_EOK;
}

void edge_txn_reset(edge_txn_t *txn)
{
	if (txn->txn != NULL && txn->active && !txn->write) {
		mdb_txn_reset(txn->txn);
		txn->active = false;
	}
}

void edge_txn_abort(edge_txn_t *txn)
{
	if (txn->txn != NULL) {
		mdb_txn_abort(txn->txn);
	}
	txn->txn = NULL;
	txn->active = false;
}

int edge_txn_begin_write(edge_store_t *store, edge_txn_t *txn)
{
	txn->store = store;
	txn->write = true;
	int rc = mdb_txn_begin(store->env, NULL, 0, &txn->txn);
	if (rc == MDB_MAP_RESIZED) {
		mdb_env_set_mapsize(store->env, 0);
		rc = mdb_txn_begin(store->env, NULL, 0, &txn->txn);
	}
	if (rc != MDB_SUCCESS) {
		txn->txn = NULL;
		return lmdb_error(rc);
	}
	txn->active = true;
	return ZC_EOK;
}

/* Doubles the map after MDB_MAP_FULL (no transaction may be open here). */
static void grow_map(edge_store_t *store)
{
	MDB_envinfo info;
	mdb_env_info(store->env, &info);
	size_t size = info.me_mapsize * 2;
	zc_warn("edge store full, growing map to %zu MiB", size >> 20);
	mdb_env_set_mapsize(store->env, size);
}

int edge_txn_commit(edge_txn_t *txn)
{
	int rc = mdb_txn_commit(txn->txn);
	txn->txn = NULL;
	txn->active = false;
	if (rc == MDB_MAP_FULL) {
		grow_map(txn->store);
	}
	return lmdb_error(rc);
}

/* Fails the write transaction on MAP_FULL so the caller redoes it. */
static int write_error(edge_txn_t *txn, int rc)
{
	if (rc == MDB_MAP_FULL) {
		edge_txn_abort(txn);
		grow_map(txn->store);
	}
	return lmdb_error(rc);
}

static size_t node_key(uint8_t *key, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len)
{
	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(zone_id >> (56 - 8 * i));
	}
	if (rel_len > 0) {
		memcpy(key + 8, rel, rel_len);
	}
	return 8 + rel_len;
}

int edge_zone_find(edge_txn_t *txn, const uint8_t *lf, size_t lf_len,
                   edge_zone_t *zone, size_t *apex_lf_len)
{
	uint8_t key[ZONE_KEY_MAX];
	key[0] = '.';
	memcpy(key + 1, lf, lf_len);
	/* Try the name itself, then each ancestor: each is an LF prefix that
	 * ends at a label terminator (a 0x00 byte), the root last. */
	size_t len = lf_len;
	for (;;) {
		MDB_val k = { .mv_size = 1 + len, .mv_data = key };
		MDB_val v;
		int rc = mdb_get(txn->txn, txn->store->zones, &k, &v);
		if (rc == MDB_SUCCESS) {
			*apex_lf_len = len;
			return edge_zone_decode(v.mv_data, v.mv_size, zone);
		}
		if (rc != MDB_NOTFOUND) {
			return lmdb_error(rc);
		}
		if (len == 0) {
			return ZC_ENOZONE;
		}
		len--; /* Step over this label's terminator... */
		while (len > 0 && lf[len - 1] != 0) {
			len--; /* ...and its bytes. */
		}
	}
}

int edge_zone_get(edge_txn_t *txn, const knot_dname_t *apex,
                  edge_zone_t *zone)
{
	uint8_t key[ZONE_KEY_MAX];
	key[0] = '.';
	size_t len = dns_name_to_lf(apex, key + 1);
	MDB_val k = { .mv_size = 1 + len, .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->zones, &k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_ENOZONE;
	}
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	return edge_zone_decode(v.mv_data, v.mv_size, zone);
}

int edge_node_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                  size_t rel_len, const uint8_t **val, size_t *val_len)
{
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->nodes, &k, &v);
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	*val = v.mv_data;
	*val_len = v.mv_size;
	return ZC_EOK;
}

bool edge_node_has_below(edge_txn_t *txn, uint64_t zone_id,
                         const uint8_t *rel, size_t rel_len)
{
	uint8_t key[NODE_KEY_MAX];
	size_t klen = node_key(key, zone_id, rel, rel_len);
	MDB_cursor *cur;
	if (mdb_cursor_open(txn->txn, txn->store->nodes, &cur) != MDB_SUCCESS) {
		return false;
	}
	MDB_val k = { .mv_size = klen, .mv_data = key };
	MDB_val v;
	bool below = false;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	if (rc == MDB_SUCCESS && k.mv_size == klen &&
	    memcmp(k.mv_data, key, klen) == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* Skip the node. */
	}
	if (rc == MDB_SUCCESS && k.mv_size > klen &&
	    memcmp(k.mv_data, key, klen) == 0) {
		below = true;
	}
	mdb_cursor_close(cur);
	return below;
}

int edge_iter_begin(edge_txn_t *txn, uint64_t zone_id, edge_iter_t *it)
{
	return edge_iter_begin_at(txn, zone_id, NULL, 0, it);
}

int edge_iter_begin_at(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, edge_iter_t *it)
{
	if (rel_len > sizeof(it->from)) {
		return ZC_EFORMAT;
	}
	it->zone_id = zone_id;
	it->started = false;
	it->from_len = rel_len;
	if (rel_len > 0) {
		memcpy(it->from, rel, rel_len);
	}
	return lmdb_error(mdb_cursor_open(txn->txn, txn->store->nodes, &it->cur));
}

int edge_iter_next(edge_iter_t *it, const uint8_t **rel, size_t *rel_len,
                   const uint8_t **val, size_t *val_len)
{
	uint8_t key[NODE_KEY_MAX];
	MDB_val k, v;
	int rc;
	if (!it->started) {
		k.mv_size = node_key(key, it->zone_id, it->from, it->from_len);
		k.mv_data = key;
		rc = mdb_cursor_get(it->cur, &k, &v, MDB_SET_RANGE);
		it->started = true;
	} else {
		rc = mdb_cursor_get(it->cur, &k, &v, MDB_NEXT);
	}
	if (rc == MDB_NOTFOUND) {
		return 0;
	}
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	node_key(key, it->zone_id, NULL, 0);
	if (k.mv_size < 8 || memcmp(k.mv_data, key, 8) != 0) {
		return 0;
	}
	*rel = (const uint8_t *)k.mv_data + 8;
	*rel_len = k.mv_size - 8;
	*val = v.mv_data;
	*val_len = v.mv_size;
	return 1;
}

void edge_iter_end(edge_iter_t *it)
{
	if (it->cur != NULL) {
		mdb_cursor_close(it->cur);
		it->cur = NULL;
	}
}

/* Reads the seq of the stored node, 0 when there is none. */
static int stored_seq(edge_txn_t *txn, MDB_val *k, uint64_t *seq)
{
	MDB_val v;
	*seq = 0;
	int rc = mdb_get(txn->txn, txn->store->nodes, k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_EOK;
	}
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	uint8_t flags;
	if (edge_node_peek(v.mv_data, v.mv_size, &flags, seq) != ZC_EOK) {
		*seq = 0; /* A value we cannot read may be overwritten. */
	}
	return ZC_EOK;
}

int edge_txn_put_node(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                      size_t rel_len, const uint8_t *val, size_t val_len)
{
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	uint8_t flags;
	uint64_t seq, old_seq;
	int ret = edge_node_peek(val, val_len, &flags, &seq);
	if (ret == ZC_EOK) {
		ret = stored_seq(txn, &k, &old_seq);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if (old_seq > seq) {
		return ZC_ESTALE;
	}
	MDB_val v = { .mv_size = val_len, .mv_data = (void *)val };
	return write_error(txn, mdb_put(txn->txn, txn->store->nodes, &k, &v, 0));
}

int edge_txn_del_node(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                      size_t rel_len, uint64_t seq)
{
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	uint64_t old_seq;
	int ret = stored_seq(txn, &k, &old_seq);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (old_seq > seq) {
		return ZC_ESTALE;
	}
	int rc = mdb_del(txn->txn, txn->store->nodes, &k, NULL);
	return rc == MDB_NOTFOUND ? ZC_EOK : write_error(txn, rc);
}

int edge_txn_put_zone(edge_txn_t *txn, const edge_zone_t *zone)
{
	uint8_t key[ZONE_KEY_MAX];
	uint8_t val[sizeof(edge_zone_t) + 64];
	key[0] = '.';
	size_t klen = 1 + dns_name_to_lf(zone->apex, key + 1);
	int len = edge_zone_encode(val, sizeof(val), zone);
	if (len < 0) {
		return len;
	}
	MDB_val k = { .mv_size = klen, .mv_data = key };
	MDB_val v = { .mv_size = (size_t)len, .mv_data = val };
	return write_error(txn, mdb_put(txn->txn, txn->store->zones, &k, &v, 0));
}

int edge_txn_del_zone(edge_txn_t *txn, const knot_dname_t *apex,
                      uint64_t zone_id)
{
	uint8_t key[ZONE_KEY_MAX];
	key[0] = '.';
	MDB_val k = { .mv_size = 1 + dns_name_to_lf(apex, key + 1),
	              .mv_data = key };
	int rc = mdb_del(txn->txn, txn->store->zones, &k, NULL);
	if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
		return write_error(txn, rc);
	}
	MDB_cursor *cur;
	rc = mdb_cursor_open(txn->txn, txn->store->nodes, &cur);
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	uint8_t prefix[8];
	node_key(prefix, zone_id, NULL, 0);
	MDB_val nk = { .mv_size = 8, .mv_data = prefix };
	MDB_val v;
	rc = mdb_cursor_get(cur, &nk, &v, MDB_SET_RANGE);
	while (rc == MDB_SUCCESS && nk.mv_size >= 8 &&
	       memcmp(nk.mv_data, prefix, 8) == 0) {
		rc = mdb_cursor_del(cur, 0);
		if (rc == MDB_SUCCESS) {
			nk.mv_size = 8;
			nk.mv_data = prefix;
			rc = mdb_cursor_get(cur, &nk, &v, MDB_SET_RANGE);
		}
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND && rc != MDB_SUCCESS) {
		return write_error(txn, rc);
	}
	return edge_txn_put_keys(txn, zone_id, NULL, 0);
}

int edge_meta_get(edge_txn_t *txn, const char *key, uint64_t *value)
{
	MDB_val k = { .mv_size = strlen(key), .mv_data = (void *)key };
	MDB_val v;
	*value = 0;
	int rc = mdb_get(txn->txn, txn->store->meta, &k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_EOK;
	}
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	if (v.mv_size != 8) {
		return ZC_EFORMAT;
	}
	const uint8_t *p = v.mv_data;
	for (int i = 0; i < 8; i++) {
		*value = *value << 8 | p[i];
	}
	return ZC_EOK;
}

int edge_meta_put(edge_txn_t *txn, const char *key, uint64_t value)
{
	uint8_t buf[8];
	node_key(buf, value, NULL, 0);
	MDB_val k = { .mv_size = strlen(key), .mv_data = (void *)key };
	MDB_val v = { .mv_size = 8, .mv_data = buf };
	return write_error(txn, mdb_put(txn->txn, txn->store->meta, &k, &v, 0));
}

int edge_zone_foreach(edge_txn_t *txn,
                      int (*cb)(const edge_zone_t *zone, void *ctx),
                      void *ctx)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, txn->store->zones, &cur);
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	MDB_val k, v;
	int ret = ZC_EOK;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS) {
		edge_zone_t zone;
		ret = edge_zone_decode(v.mv_data, v.mv_size, &zone);
		if (ret != ZC_EOK || cb(&zone, ctx) != 0) {
			break;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (ret == ZC_EOK && rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
		ret = lmdb_error(rc);
	}
	return ret;
}

int edge_keys_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t **val,
                  size_t *len)
{
	uint8_t key[8];
	node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->keys, &k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_ENOKEY;
	}
	if (rc != MDB_SUCCESS) {
		return lmdb_error(rc);
	}
	*val = v.mv_data;
	*len = v.mv_size;
	return ZC_EOK;
}

int edge_txn_put_keys(edge_txn_t *txn, uint64_t zone_id, const uint8_t *val,
                      size_t len)
{
	uint8_t key[8];
	node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	if (len == 0) {
		int rc = mdb_del(txn->txn, txn->store->keys, &k, NULL);
		return rc == MDB_NOTFOUND ? ZC_EOK : write_error(txn, rc);
	}
	MDB_val v = { .mv_size = len, .mv_data = (void *)val };
	return write_error(txn, mdb_put(txn->txn, txn->store->keys, &k, &v, 0));
}
