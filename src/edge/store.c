/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * LMDB wrapper of the edge store: environment, transactions, key schema,
 * fenced writes (see edge.h for the design).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lmdb.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "dns/name.h"
#include "edge/edge.h"
#include "edge/internal.h"

static _Atomic unsigned next_slot;
static _Thread_local int thread_slot = -1;

/* The one place LMDB results become zonecast codes. */
int edge_lmdb_error(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return ZC_EOK;
	case MDB_NOTFOUND:
		return KNOT_ENOENT;
	case MDB_MAP_FULL:
		return ZC_EMAPFULL;
	case ENOMEM:
		return KNOT_ENOMEM;
	case EDQUOT:
		return -ENOSPC;
	default:
		if (rc > 0 && rc < 1000) {
			return -rc;
		}
		zc_debug("lmdb: %s", mdb_strerror(rc));
		return ZC_ELMDB;
	}
}

static edge_store_t *store_new(void)
{
	edge_store_t *s = aligned_alloc(_Alignof(edge_store_t),
	                                (sizeof(*s) + 63) / 64 * 64);
	if (s != NULL) {
		memset(s, 0, sizeof(*s));
		pthread_mutex_init(&s->remap_lock, NULL);
	}
	return s;
}

static void store_free(edge_store_t *s)
{
	pthread_mutex_destroy(&s->remap_lock);
	free(s);
}

static int open_store(edge_store_t **out, const char *dir, size_t map_size,
                      bool readonly)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/edge.mdb", dir) >= (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	/* LMDB opens both files by name, following links: the directory may
	 * belong to the server's user, who could have put there a link to a
	 * file of root's for root's command to truncate and map. */
	static const char *const suffixes[] = { "", "-lock" };
	for (size_t i = 0; i < 2; i++) {
		char file[4200];
		snprintf(file, sizeof(file), "%s%s", path, suffixes[i]);
		int bad = zc_fs_may_follow(file);
		if (bad != 0) {
			zc_error("edge store: %s: %s", file, zc_fs_link_refusal(bad));
			return bad;
		}
	}
	edge_store_t *s = store_new();
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	int rc = mdb_env_create(&s->env);
	if (rc != MDB_SUCCESS) {
		store_free(s);
		return edge_lmdb_error(rc);
	}
	mdb_env_set_maxdbs(s->env, 8);
	mdb_env_set_maxreaders(s->env, 1024);
	mdb_env_set_mapsize(s->env, map_size ? map_size : DEFAULT_MAP_SIZE);
	/* Root opens them as the directory's owner (the file system uid of
	 * this thread: LMDB opens both by name, following links, and a check
	 * before cannot keep a link from being swapped in after it): a link
	 * to a file of root's is then not opened, and the files made are the
	 * owner's, as the server (`user`) needs them. */
	static const char *const files[] = { "edge.mdb", "edge.mdb-lock", NULL };
	zc_fs_ids_t ids;
	zc_fs_as_owner(dir, files, &ids);
	rc = mdb_env_open(s->env, path, MDB_NOSUBDIR | MDB_NOSYNC |
	                  MDB_NOTLS | MDB_NORDAHEAD |
	                  (readonly ? MDB_RDONLY : 0), 0600);
	zc_fs_as_root(&ids);
	if (rc != MDB_SUCCESS) {
		goto fail;
	}
	/* Free reader slots that killed processes left behind. */
	int dead = 0;
	mdb_reader_check(s->env, &dead);
	MDB_stat st;
	mdb_env_stat(s->env, &st);
	s->page_size = st.ms_psize;
	/* Read-only: a read transaction, which never waits for the writer
	 * (another process may hold the write transaction for long: an edge
	 * in the middle of a commit); the tables must exist then. */
	MDB_txn *txn;
	unsigned create = readonly ? 0 : MDB_CREATE;
	rc = mdb_txn_begin(s->env, NULL, readonly ? MDB_RDONLY : 0, &txn);
	if (rc != MDB_SUCCESS) {
		goto fail;
	}
	rc = mdb_dbi_open(txn, "zones", create, &s->zones);
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "nodes", create, &s->nodes);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "meta", create, &s->meta);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "keys", create, &s->keys);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "outbox", create, &s->outbox);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "stage", create, &s->stage);
	}
	if (rc == MDB_SUCCESS) {
		rc = mdb_dbi_open(txn, "quarantine", create, &s->quarantine);
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
	store_free(s);
	return edge_lmdb_error(rc);
}

int edge_open(edge_store_t **out, const char *dir, size_t map_size)
{
	return open_store(out, dir, map_size, false);
}

int edge_open_readonly(edge_store_t **out, const char *dir)
{
	return open_store(out, dir, 0, true);
}

void edge_close(edge_store_t *store)
{
	if (store == NULL) {
		return;
	}
	mdb_env_sync(store->env, 1); /* EACCES when read-only: nothing to do */
	mdb_env_close(store->env);
	store_free(store);
}

/* Counts a transaction of this thread as open; waits while a remap runs. */
static int slot_enter(edge_store_t *store)
{
	if (thread_slot < 0) {
		thread_slot = (int)(atomic_fetch_add(&next_slot, 1) % SLOTS);
	}
	_Atomic unsigned *open = &store->slots[thread_slot].open;
	for (;;) {
		atomic_fetch_add(open, 1);
		if (!atomic_load(&store->remapping)) {
			return thread_slot;
		}
		atomic_fetch_sub(open, 1);
		while (atomic_load(&store->remapping)) {
			usleep(50);
		}
	}
}

static void slot_leave(edge_store_t *store, int slot)
{
	atomic_fetch_sub(&store->slots[slot].open, 1);
}

/* Waits until no thread has a transaction open (remapping is set, so no
 * new one starts); false after REMAP_WAIT_US. */
static bool slots_drained(edge_store_t *store)
{
	for (int waited = 0; waited < REMAP_WAIT_US; waited += 100) {
		bool idle = true;
		for (int i = 0; i < SLOTS && idle; i++) {
			idle = atomic_load(&store->slots[i].open) == 0;
		}
		if (idle) {
			return true;
		}
		usleep(100);
	}
	return false;
}

/*
 * Changes the map size (0: adopt the size another process gave it). LMDB
 * unmaps and maps the file again, so no thread of this process may be in
 * a transaction meanwhile: the remap waits for every open one to end and
 * holds new ones back. The caller must have none open.
 */
static int remap(edge_store_t *store, size_t size)
{
	pthread_mutex_lock(&store->remap_lock);
	atomic_store(&store->remapping, true);
	int ret = ZC_EBUSY;
	if (slots_drained(store)) {
		ret = edge_lmdb_error(mdb_env_set_mapsize(store->env, size));
	}
	atomic_store(&store->remapping, false);
	pthread_mutex_unlock(&store->remap_lock);
	return ret;
}

void edge_map_usage(edge_store_t *store, uint64_t *used, uint64_t *size)
{
	MDB_envinfo info;
	MDB_stat st;
	mdb_env_info(store->env, &info);
	mdb_env_stat(store->env, &st);
	*size = info.me_mapsize;
	*used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

int edge_grow(edge_store_t *store)
{
	MDB_envinfo info;
	mdb_env_info(store->env, &info);
	size_t size = info.me_mapsize * 2;
	int ret = remap(store, size);
	if (ret == ZC_EOK) {
		zc_warn("edge store: map full, grown to %zu MiB", size >> 20);
	} else {
		zc_warn("edge store: map full at %zu MiB, cannot grow yet: %s",
		        info.me_mapsize >> 20, zc_strerror(ret));
	}
	return ret;
}

/* Begins an LMDB transaction inside this thread's slot. */
static int txn_begin(edge_store_t *store, edge_txn_t *txn, unsigned flags)
{
	txn->slot = slot_enter(store);
	int rc = mdb_txn_begin(store->env, NULL, flags, &txn->txn);
	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size and retry. */
		slot_leave(store, txn->slot);
		int ret = remap(store, 0);
		if (ret != ZC_EOK) {
			txn->txn = NULL;
			return ret;
		}
		txn->slot = slot_enter(store);
		rc = mdb_txn_begin(store->env, NULL, flags, &txn->txn);
	}
	if (rc != MDB_SUCCESS) {
		slot_leave(store, txn->slot);
		txn->txn = NULL;
		return edge_lmdb_error(rc);
	}
	txn->active = true;
	return ZC_EOK;
}

int edge_txn_begin_read(edge_store_t *store, edge_txn_t *txn)
{
	if (txn->txn != NULL && !txn->write && !txn->active) {
		txn->slot = slot_enter(store);
		if (mdb_txn_renew(txn->txn) == MDB_SUCCESS) {
			txn->active = true;
			return ZC_EOK;
		}
		slot_leave(store, txn->slot);
		mdb_txn_abort(txn->txn);
		txn->txn = NULL;
	}
	txn->store = store;
	txn->write = false;
	txn->parent = NULL;
	return txn_begin(store, txn, MDB_RDONLY);
}

void edge_txn_reset(edge_txn_t *txn)
{
	if (txn->txn != NULL && txn->active && !txn->write) {
		mdb_txn_reset(txn->txn);
		txn->active = false;
		slot_leave(txn->store, txn->slot);
	}
}

void edge_txn_abort(edge_txn_t *txn)
{
	edge_rec_free(txn);
	if (txn->txn != NULL) {
		mdb_txn_abort(txn->txn);
		if (txn->active) {
			slot_leave(txn->store, txn->slot);
		}
	}
	txn->txn = NULL;
	txn->active = false;
}

int edge_txn_begin_write(edge_store_t *store, edge_txn_t *txn)
{
	txn->store = store;
	txn->write = true;
	txn->parent = NULL;
	return txn_begin(store, txn, 0);
}

/* LMDB reports a short write as EIO: on a full or read-only disk, say so. */
static int commit_error(edge_store_t *store, int rc)
{
	const char *path = NULL;
	if (rc == EIO && mdb_env_get_path(store->env, &path) == MDB_SUCCESS) {
		int cond = zc_fs_condition(path);
		return cond != 0 ? cond : edge_lmdb_error(rc);
	}
	return edge_lmdb_error(rc);
}

/* A nested transaction's commit: its ops go to the parent's list. */
static int commit_nested(edge_txn_t *txn)
{
	int ret = edge_lmdb_error(mdb_txn_commit(txn->txn));
	txn->txn = NULL;
	if (ret == ZC_EOK) {
		ret = edge_rec_merge(txn, txn->parent);
	}
	edge_rec_free(txn);
	return ret;
}

int edge_txn_commit(edge_txn_t *txn)
{
	if (txn->parent != NULL) {
		return commit_nested(txn);
	}
	bool wrote = false;
	int ret = edge_rec_finish(txn, &wrote);
	edge_rec_free(txn);
	if (ret != ZC_EOK) {
		edge_txn_abort(txn);
		return ret;
	}
	int rc = mdb_txn_commit(txn->txn);
	if (txn->active) {
		slot_leave(txn->store, txn->slot);
	}
	txn->txn = NULL;
	txn->active = false;
	if (rc == MDB_SUCCESS) {
		edge_reserve_check(txn->store);
		if (wrote && txn->store->on_outbox != NULL) {
			txn->store->on_outbox(txn->store->on_outbox_ctx);
		}
	}
	return commit_error(txn->store, rc);
}

int edge_txn_begin_nested(edge_txn_t *parent, edge_txn_t *child)
{
	if (parent->txn == NULL || !parent->write) {
		return ZC_EUSAGE;
	}
	child->store = parent->store;
	child->write = true;
	child->parent = parent;
	child->rec = NULL;
	child->active = false; /* The parent holds the thread's slot. */
	int rc = mdb_txn_begin(parent->store->env, parent->txn, 0, &child->txn);
	if (rc != MDB_SUCCESS) {
		child->txn = NULL;
	}
	return edge_lmdb_error(rc);
}

/* Logs the reserve's state when it changes, a failure again every minute. */
static void reserve_report(edge_store_t *store, int ret)
{
	int was = atomic_exchange(&store->space_error, ret);
	if (ret == ZC_EOK && was != ZC_EOK) {
		zc_info("edge store: %zu MiB reserved ahead again; writes are "
		        "accepted", store->reserve >> 20);
		return;
	}
	bool due = ret != ZC_EOK && zc_log_due(&store->space_logged, 60000);
	if (ret != ZC_EOK && (ret != was || due)) {
		zc_error("edge store: cannot reserve %zu MiB ahead: %s; writes "
		         "are refused until the data directory has room",
		         store->reserve >> 20, zc_strerror(ret));
	}
}

void edge_set_reserve(edge_store_t *store, size_t bytes)
{
	store->reserve = bytes;
	store->reserved_to = 0;
	edge_reserve_check(store);
}

int edge_reserve_check(edge_store_t *store)
{
	if (store->reserve == 0) {
		return ZC_EOK;
	}
	MDB_envinfo info;
	mdb_env_info(store->env, &info);
	off_t end = (off_t)(info.me_last_pgno + 1) * (off_t)store->page_size;
	if (atomic_load(&store->space_error) == ZC_EOK &&
	    end + (off_t)store->reserve / 2 <= store->reserved_to) {
		return ZC_EOK;
	}
	int fd = -1;
	mdb_env_get_fd(store->env, &fd);
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, end, (off_t)store->reserve) == 0) {
		store->reserved_to = end + (off_t)store->reserve;
		reserve_report(store, ZC_EOK);
		return ZC_EOK;
	}
	int err = errno == EDQUOT ? ENOSPC : errno;
	if (err == EOPNOTSUPP || err == ENOSYS) {
		zc_info("edge store: the file system cannot reserve space ahead");
		store->reserve = 0;
		return ZC_EOK;
	}
	reserve_report(store, -err);
	return -err;
}

int edge_space_error(edge_store_t *store)
{
	return atomic_load(&store->space_error);
}

size_t edge_node_key(uint8_t *key, uint64_t zone_id, const uint8_t *rel,
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
			return edge_lmdb_error(rc);
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
		return edge_lmdb_error(rc);
	}
	return edge_zone_decode(v.mv_data, v.mv_size, zone);
}

int edge_node_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                  size_t rel_len, const uint8_t **val, size_t *val_len)
{
	if (rel_len > DNS_LF_KEY_MAXLEN) {
		return KNOT_ENOENT; /* No store keeps such a name. */
	}
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = edge_node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->nodes, &k, &v);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	*val = v.mv_data;
	*val_len = v.mv_size;
	return ZC_EOK;
}

bool edge_node_has_below(edge_txn_t *txn, uint64_t zone_id,
                         const uint8_t *rel, size_t rel_len)
{
	if (rel_len >= DNS_LF_KEY_MAXLEN) {
		return false; /* Nothing longer is ever stored. */
	}
	uint8_t key[NODE_KEY_MAX];
	size_t klen = edge_node_key(key, zone_id, rel, rel_len);
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
	return edge_lmdb_error(mdb_cursor_open(txn->txn, txn->store->nodes, &it->cur));
}

int edge_iter_next(edge_iter_t *it, const uint8_t **rel, size_t *rel_len,
                   const uint8_t **val, size_t *val_len)
{
	uint8_t key[NODE_KEY_MAX];
	MDB_val k, v;
	int rc;
	if (!it->started) {
		k.mv_size = edge_node_key(key, it->zone_id, it->from, it->from_len);
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
		return edge_lmdb_error(rc);
	}
	edge_node_key(key, it->zone_id, NULL, 0);
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
		return edge_lmdb_error(rc);
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
	if (rel_len > DNS_LF_KEY_MAXLEN) {
		return ZC_ENAMEKEY;
	}
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = edge_node_key(key, zone_id, rel, rel_len),
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
	ret = edge_lmdb_error(mdb_put(txn->txn, txn->store->nodes, &k, &v, 0));
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_PUT,
	       EDGE_TABLE_NODES, k.mv_data, k.mv_size, val, val_len);
}

int edge_txn_del_node(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                      size_t rel_len, uint64_t seq)
{
	if (rel_len > DNS_LF_KEY_MAXLEN) {
		return ZC_EOK; /* Never stored. */
	}
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = edge_node_key(key, zone_id, rel, rel_len),
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
	if (rc == MDB_NOTFOUND) {
		return ZC_EOK;
	}
	ret = edge_lmdb_error(rc);
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_DEL,
	       EDGE_TABLE_NODES, k.mv_data, k.mv_size, NULL, 0);
}

/* Whether the stored metadata under key k is the same zone's, written by
 * a newer build than seq: the zone-level fence (edge.h). */
static int zone_fenced(edge_txn_t *txn, MDB_val *k, const edge_zone_t *zone,
                       bool *fenced)
{
	MDB_val v;
	*fenced = false;
	int rc = mdb_get(txn->txn, txn->store->zones, k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_EOK;
	}
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	edge_zone_t have;
	if (edge_zone_decode(v.mv_data, v.mv_size, &have) != ZC_EOK) {
		return ZC_EOK; /* A value we cannot read may be overwritten. */
	}
	*fenced = have.zone_id == zone->zone_id && have.seq > zone->seq;
	return ZC_EOK;
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
	bool fenced;
	int ret = zone_fenced(txn, &k, zone, &fenced);
	if (ret != ZC_EOK || fenced) {
		/* Nothing written, so nothing recorded for the fleet. */
		return ret != ZC_EOK ? ret : ZC_ESTALE;
	}
	MDB_val v = { .mv_size = (size_t)len, .mv_data = val };
	ret = edge_lmdb_error(mdb_put(txn->txn, txn->store->zones, &k, &v, 0));
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_PUT,
	       EDGE_TABLE_ZONES, key, klen, val, (size_t)len);
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
		return edge_lmdb_error(rc);
	}
	int ret = edge_rec_op(txn, EDGE_OP_DEL, EDGE_TABLE_ZONES, k.mv_data,
	                      k.mv_size, NULL, 0);
	if (ret != ZC_EOK) {
		return ret;
	}
	MDB_cursor *cur;
	rc = mdb_cursor_open(txn->txn, txn->store->nodes, &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	uint8_t prefix[8];
	edge_node_key(prefix, zone_id, NULL, 0);
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
		return edge_lmdb_error(rc);
	}
	ret = edge_rec_op(txn, EDGE_OP_DEL_PREFIX, EDGE_TABLE_NODES, prefix, 8,
	                  NULL, 0);
	if (ret == ZC_EOK) {
		ret = edge_txn_stage_clear(txn, zone_id);
	}
	if (ret == ZC_EOK) {
		ret = edge_txn_del_quarantine(txn, zone_id); /* Not replicated. */
	}
	return ret != ZC_EOK ? ret : edge_txn_put_keys(txn, zone_id, NULL, 0);
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
		return edge_lmdb_error(rc);
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
	edge_node_key(buf, value, NULL, 0);
	MDB_val k = { .mv_size = strlen(key), .mv_data = (void *)key };
	MDB_val v = { .mv_size = 8, .mv_data = buf };
	return edge_lmdb_error(mdb_put(txn->txn, txn->store->meta, &k, &v, 0));
}

MDB_dbi edge_table_dbi(const edge_store_t *store, unsigned table)
{
	switch (table) {
	case EDGE_TABLE_ZONES:
		return store->zones;
	case EDGE_TABLE_NODES:
		return store->nodes;
	case EDGE_TABLE_STAGE:
		return store->stage;
	default:
		return store->keys;
	}
}

/* The meta keys a clear keeps: the replication log's position (repl.h),
 * so that edges follow the rebuild instead of starting over. */
static const char *const kept_meta[] = { "repl_on", "repl_epoch",
                                         "repl_commit" };

int edge_txn_clear(edge_txn_t *txn)
{
	enum { KEPT = sizeof(kept_meta) / sizeof(kept_meta[0]) };
	uint64_t kept[KEPT];
	for (size_t i = 0; i < KEPT; i++) {
		int ret = edge_meta_get(txn, kept_meta[i], &kept[i]);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	int rc = mdb_drop(txn->txn, txn->store->meta, 0);
	for (size_t i = 0; rc == MDB_SUCCESS && i < KEPT; i++) {
		if (kept[i] != 0 && edge_meta_put(txn, kept_meta[i],
		                                  kept[i]) != ZC_EOK) {
			rc = EIO;
		}
	}
	for (unsigned t = 0; rc == MDB_SUCCESS && t < EDGE_TABLE_COUNT; t++) {
		rc = mdb_drop(txn->txn, edge_table_dbi(txn->store, t), 0);
		if (rc == MDB_SUCCESS) {
			int ret = edge_rec_op(txn, EDGE_OP_DROP, t, NULL, 0,
			                      NULL, 0);
			if (ret != ZC_EOK) {
				return ret;
			}
		}
	}
	if (rc == MDB_SUCCESS) {
		/* This node's own (not replicated): the rebuild judges anew. */
		rc = mdb_drop(txn->txn, txn->store->quarantine, 0);
	}
	return edge_lmdb_error(rc);
}

/* The u64 seq at offset `at` of each value of a table whose first byte
 * is `version`, capped at seq (the rest of the value kept); recorded for
 * the fleet like any write, so that the edges it feeds stay equal. */
static int cap_seqs(edge_txn_t *txn, unsigned table, uint8_t version,
                    size_t at, uint64_t seq)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, edge_table_dbi(txn->store, table),
	                         &cur);
	int ret = ZC_EOK;
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	uint8_t *buf = NULL;
	size_t cap = 0;
	MDB_val k, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS) {
		const uint8_t *p = v.mv_data;
		uint64_t old = 0;
		for (size_t i = 0; v.mv_size >= at + 8 && i < 8; i++) {
			old = old << 8 | p[at + i];
		}
		if (v.mv_size >= at + 8 && p[0] == version && old > seq &&
		    k.mv_size <= NODE_KEY_MAX) {
			uint8_t key[NODE_KEY_MAX];
			memcpy(key, k.mv_data, k.mv_size);
			if (v.mv_size > cap) {
				uint8_t *grown = realloc(buf, v.mv_size);
				if (grown == NULL) {
					rc = ENOMEM;
					break;
				}
				buf = grown;
				cap = v.mv_size;
			}
			memcpy(buf, p, v.mv_size);
			edge_node_key(buf + at, seq, NULL, 0);
			MDB_val nv = { .mv_size = v.mv_size, .mv_data = buf };
			rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
			if (rc != MDB_SUCCESS) {
				break;
			}
			ret = edge_rec_op(txn, EDGE_OP_PUT, table, key, k.mv_size,
			                  buf, nv.mv_size);
			if (ret != ZC_EOK) {
				break;
			}
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	free(buf);
	mdb_cursor_close(cur);
	if (ret == ZC_EOK && rc != MDB_NOTFOUND) {
		ret = edge_lmdb_error(rc);
	}
	return ret;
}

/* Every quarantine entry at seq. */
static int renumber_quarantine(edge_txn_t *txn, uint64_t seq)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, txn->store->quarantine, &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	int ret = ZC_EOK;
	MDB_val k, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS) {
		edge_quarantine_t q;
		uint8_t val[sizeof(edge_quarantine_t) + 64];
		if (edge_quarantine_decode(v.mv_data, v.mv_size, &q) == ZC_EOK &&
		    q.seq != seq) {
			q.seq = seq;
			int len = edge_quarantine_encode(val, sizeof(val), &q);
			if (len < 0) {
				ret = len;
				break;
			}
			MDB_val nv = { .mv_size = (size_t)len, .mv_data = val };
			rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
			if (rc != MDB_SUCCESS) {
				break;
			}
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (ret == ZC_EOK && rc != MDB_NOTFOUND) {
		ret = edge_lmdb_error(rc);
	}
	return ret;
}

int edge_txn_renumber(edge_txn_t *txn, uint64_t seq)
{
	/* Node: version, flags, seq. Zone metadata: version, flags, zone
	 * id, seq (codec.h). */
	int ret = cap_seqs(txn, EDGE_TABLE_NODES, EDGE_NODE_VERSION, 2, seq);
	if (ret == ZC_EOK) {
		ret = cap_seqs(txn, EDGE_TABLE_ZONES, EDGE_ZONE_VERSION, 10, seq);
	}
	if (ret == ZC_EOK) {
		ret = renumber_quarantine(txn, seq); /* Not replicated. */
	}
	if (ret == ZC_EOK) {
		ret = edge_lmdb_error(mdb_drop(txn->txn, txn->store->stage, 0));
	}
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_DROP,
	       EDGE_TABLE_STAGE, NULL, 0, NULL, 0);
}

int edge_zone_foreach(edge_txn_t *txn,
                      int (*cb)(const edge_zone_t *zone, void *ctx),
                      void *ctx)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, txn->store->zones, &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
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
		ret = edge_lmdb_error(rc);
	}
	return ret;
}

int edge_keys_get(edge_txn_t *txn, uint64_t zone_id, const uint8_t **val,
                  size_t *len)
{
	uint8_t key[8];
	edge_node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->keys, &k, &v);
	if (rc == MDB_NOTFOUND) {
		return ZC_ENOKEY;
	}
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	*val = v.mv_data;
	*len = v.mv_size;
	return ZC_EOK;
}

int edge_txn_put_keys(edge_txn_t *txn, uint64_t zone_id, const uint8_t *val,
                      size_t len)
{
	uint8_t key[8];
	edge_node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	int ret;
	if (len == 0) {
		int rc = mdb_del(txn->txn, txn->store->keys, &k, NULL);
		if (rc == MDB_NOTFOUND) {
			return ZC_EOK;
		}
		ret = edge_lmdb_error(rc);
		return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_DEL,
		       EDGE_TABLE_KEYS, key, 8, NULL, 0);
	}
	MDB_val v = { .mv_size = len, .mv_data = (void *)val };
	ret = edge_lmdb_error(mdb_put(txn->txn, txn->store->keys, &k, &v, 0));
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_PUT,
	       EDGE_TABLE_KEYS, key, 8, val, len);
}

/* --- Staging of full builds in steps (edge.h) --- */

/* A staged deletion: a 0x00 byte (no node value starts so) and the seq. */
#define STAGE_TOMBSTONE_LEN 9

int edge_txn_stage_put(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, const uint8_t *val, size_t val_len)
{
	if (rel_len > DNS_LF_KEY_MAXLEN) {
		return ZC_ENAMEKEY;
	}
	if (val_len == 0 || val[0] == 0) {
		return ZC_EFORMAT;
	}
	uint8_t key[NODE_KEY_MAX];
	MDB_val k = { .mv_size = edge_node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	MDB_val v = { .mv_size = val_len, .mv_data = (void *)val };
	int ret = edge_lmdb_error(mdb_put(txn->txn, txn->store->stage, &k, &v, 0));
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_PUT,
	       EDGE_TABLE_STAGE, key, k.mv_size, val, val_len);
}

int edge_txn_stage_del(edge_txn_t *txn, uint64_t zone_id, const uint8_t *rel,
                       size_t rel_len, uint64_t seq)
{
	if (rel_len > DNS_LF_KEY_MAXLEN) {
		return ZC_EOK; /* Never stored. */
	}
	uint8_t key[NODE_KEY_MAX], val[STAGE_TOMBSTONE_LEN] = { 0 };
	edge_node_key(val + 1, seq, NULL, 0);
	MDB_val k = { .mv_size = edge_node_key(key, zone_id, rel, rel_len),
	              .mv_data = key };
	MDB_val v = { .mv_size = sizeof(val), .mv_data = val };
	int ret = edge_lmdb_error(mdb_put(txn->txn, txn->store->stage, &k, &v, 0));
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_PUT,
	       EDGE_TABLE_STAGE, key, k.mv_size, val, sizeof(val));
}

/* Applies one staged entry to the nodes table, fenced by seq. */
static int stage_move(edge_txn_t *txn, MDB_val *k, const MDB_val *v)
{
	uint64_t old_seq, seq = 0;
	int ret = stored_seq(txn, k, &old_seq);
	if (ret != ZC_EOK) {
		return ret;
	}
	const uint8_t *p = v->mv_data;
	if (v->mv_size == STAGE_TOMBSTONE_LEN && p[0] == 0) {
		for (int i = 1; i < STAGE_TOMBSTONE_LEN; i++) {
			seq = seq << 8 | p[i];
		}
		if (old_seq > seq) {
			return ZC_EOK;
		}
		int rc = mdb_del(txn->txn, txn->store->nodes, k, NULL);
		return rc == MDB_NOTFOUND ? ZC_EOK : edge_lmdb_error(rc);
	}
	uint8_t flags;
	ret = edge_node_peek(p, v->mv_size, &flags, &seq);
	if (ret != ZC_EOK || old_seq > seq) {
		return ret;
	}
	MDB_val val = *v;
	return edge_lmdb_error(mdb_put(txn->txn, txn->store->nodes, k, &val, 0));
}

/*
 * Empties the zone's stage, passing each entry to move first when it is
 * not NULL (the key copied: it lives in the stage's page). *count gets the
 * number of entries.
 */
static int stage_drain(edge_txn_t *txn, uint64_t zone_id,
                       int (*move)(edge_txn_t *, MDB_val *, const MDB_val *),
                       size_t *count)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, txn->store->stage, &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	uint8_t prefix[8];
	edge_node_key(prefix, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = prefix }, v;
	int ret = ZC_EOK;
	*count = 0;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == MDB_SUCCESS && k.mv_size >= 8 &&
	       memcmp(k.mv_data, prefix, 8) == 0) {
		uint8_t key[NODE_KEY_MAX];
		memcpy(key, k.mv_data, k.mv_size);
		MDB_val nk = { .mv_size = k.mv_size, .mv_data = key };
		ret = move != NULL ? move(txn, &nk, &v) : ZC_EOK;
		if (ret != ZC_EOK) {
			break;
		}
		(*count)++;
		rc = mdb_cursor_del(cur, 0);
		if (rc == MDB_SUCCESS) {
			/* Not MDB_GET_CURRENT: EINVAL once the last entry went. */
			k.mv_size = 8;
			k.mv_data = prefix;
			rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		}
	}
	mdb_cursor_close(cur);
	if (ret == ZC_EOK && rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
		ret = edge_lmdb_error(rc);
	}
	return ret;
}

int edge_stage_apply(edge_txn_t *txn, uint64_t zone_id)
{
	size_t count;
	return stage_drain(txn, zone_id, stage_move, &count);
}

int edge_txn_stage_commit(edge_txn_t *txn, uint64_t zone_id)
{
	int ret = edge_stage_apply(txn, zone_id);
	uint8_t key[8];
	edge_node_key(key, zone_id, NULL, 0);
	return ret != ZC_EOK ? ret : edge_rec_op(txn, EDGE_OP_STAGE_APPLY,
	       EDGE_TABLE_STAGE, key, 8, NULL, 0);
}

int edge_txn_stage_clear(edge_txn_t *txn, uint64_t zone_id)
{
	size_t count;
	int ret = stage_drain(txn, zone_id, NULL, &count);
	if (ret != ZC_EOK || count == 0) {
		return ret;
	}
	uint8_t prefix[8];
	edge_node_key(prefix, zone_id, NULL, 0);
	return edge_rec_op(txn, EDGE_OP_DEL_PREFIX, EDGE_TABLE_STAGE, prefix, 8,
	                   NULL, 0);
}

int edge_quarantine_get(edge_txn_t *txn, uint64_t zone_id,
                        edge_quarantine_t *out)
{
	uint8_t key[8];
	edge_node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	MDB_val v;
	int rc = mdb_get(txn->txn, txn->store->quarantine, &k, &v);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	return edge_quarantine_decode(v.mv_data, v.mv_size, out);
}

int edge_txn_put_quarantine(edge_txn_t *txn, const edge_quarantine_t *q)
{
	uint8_t key[8];
	uint8_t val[sizeof(edge_quarantine_t) + 64];
	edge_node_key(key, q->zone_id, NULL, 0);
	int len = edge_quarantine_encode(val, sizeof(val), q);
	if (len < 0) {
		return len;
	}
	MDB_val k = { .mv_size = 8, .mv_data = key };
	MDB_val v = { .mv_size = (size_t)len, .mv_data = val };
	return edge_lmdb_error(mdb_put(txn->txn, txn->store->quarantine, &k, &v, 0));
}

int edge_txn_del_quarantine(edge_txn_t *txn, uint64_t zone_id)
{
	uint8_t key[8];
	edge_node_key(key, zone_id, NULL, 0);
	MDB_val k = { .mv_size = 8, .mv_data = key };
	int rc = mdb_del(txn->txn, txn->store->quarantine, &k, NULL);
	return rc == MDB_NOTFOUND ? ZC_EOK : edge_lmdb_error(rc);
}

int edge_quarantine_foreach(edge_txn_t *txn,
                            int (*cb)(const edge_quarantine_t *q, void *ctx),
                            void *ctx)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn->txn, txn->store->quarantine, &cur);
	if (rc != MDB_SUCCESS) {
		return edge_lmdb_error(rc);
	}
	MDB_val k, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == MDB_SUCCESS) {
		edge_quarantine_t q;
		if (edge_quarantine_decode(v.mv_data, v.mv_size, &q) == ZC_EOK &&
		    cb(&q, ctx) != 0) {
			break;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return (rc == MDB_SUCCESS || rc == MDB_NOTFOUND) ? ZC_EOK :
	       edge_lmdb_error(rc);
}
