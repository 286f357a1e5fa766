/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The signed view's SQLite file (see db.h for the tables). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "sigview/db.h"

#define SCHEMA \
	"CREATE TABLE IF NOT EXISTS vzones (" \
	"  zone_id INTEGER PRIMARY KEY, apex BLOB NOT NULL," \
	"  serial INTEGER NOT NULL, soa_ttl INTEGER NOT NULL," \
	"  soa BLOB NOT NULL, keys BLOB NOT NULL, nsec_ttl INTEGER NOT NULL," \
	"  journal_from INTEGER);" \
	"CREATE TABLE IF NOT EXISTS vnodes (" \
	"  zone_id INTEGER NOT NULL, okey BLOB NOT NULL, owner BLOB NOT NULL," \
	"  data BLOB NOT NULL, chain INTEGER NOT NULL, nsec BLOB," \
	"  PRIMARY KEY (zone_id, okey)) WITHOUT ROWID;" \
	"CREATE TABLE IF NOT EXISTS vsigs (" \
	"  zone_id INTEGER NOT NULL, okey BLOB NOT NULL," \
	"  covered INTEGER NOT NULL, ttl INTEGER NOT NULL," \
	"  rdata BLOB NOT NULL, expire INTEGER NOT NULL," \
	"  PRIMARY KEY (zone_id, okey, covered)) WITHOUT ROWID;" \
	"CREATE INDEX IF NOT EXISTS vsigs_expire ON vsigs(zone_id, expire);" \
	"CREATE TABLE IF NOT EXISTS vjournal (" \
	"  zone_id INTEGER NOT NULL, seq INTEGER NOT NULL," \
	"  from_serial INTEGER NOT NULL, to_serial INTEGER NOT NULL," \
	"  at INTEGER NOT NULL, data BLOB NOT NULL," \
	"  PRIMARY KEY (zone_id, seq)) WITHOUT ROWID;"

int view_db_error(view_db_t *d, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return ZC_EOK;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return ZC_EBUSY;
	case SQLITE_NOMEM:
		return KNOT_ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	default:
		zc_error("signed view: %s (SQLite %d)",
		         d->db ? sqlite3_errmsg(d->db) : "", rc);
		return ZC_ESQL;
	}
}

int view_db_prepare(view_db_t *d, const char *sql, sqlite3_stmt **stmt)
{
	int free_slot = -1;
	for (int i = 0; i < VIEW_DB_STMTS; i++) {
		if (d->cache[i].sql == sql && !d->cache[i].busy) {
			d->cache[i].busy = true;
			*stmt = d->cache[i].stmt;
			return ZC_EOK;
		}
		if (d->cache[i].sql == NULL && free_slot < 0) {
			free_slot = i;
		}
	}
	int rc = sqlite3_prepare_v3(d->db, sql, -1, free_slot >= 0 ?
	                            SQLITE_PREPARE_PERSISTENT : 0, stmt, NULL);
	if (rc == SQLITE_OK && free_slot >= 0) {
		d->cache[free_slot].sql = sql;
		d->cache[free_slot].stmt = *stmt;
		d->cache[free_slot].busy = true;
	}
	return view_db_error(d, rc);
}

void view_db_done(view_db_t *d, sqlite3_stmt *stmt)
{
	if (stmt == NULL) {
		return;
	}
	for (int i = 0; i < VIEW_DB_STMTS; i++) {
		if (d->cache[i].stmt == stmt) {
			sqlite3_reset(stmt);
			sqlite3_clear_bindings(stmt);
			d->cache[i].busy = false;
			return;
		}
	}
	sqlite3_finalize(stmt);
}

int view_db_exec(view_db_t *d, const char *sql, int64_t zone_id)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (zone_id != 0) {
		sqlite3_bind_int64(stmt, 1, zone_id);
	}
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_open(view_db_t *d, const char *dir, bool read_only)
{
	memset(d, 0, sizeof(*d));
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/signed.db", dir) >= (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	/* Readers too open it read-write (a WAL file needs its -shm) and
	 * then refuse to write (query_only). */
	int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE |
	            (read_only ? 0 : SQLITE_OPEN_CREATE);
	int rc = sqlite3_open_v2(path, &d->db, flags, NULL);
	if (rc != SQLITE_OK) {
		int ret = view_db_error(d, rc);
		view_db_close(d);
		return ret;
	}
	sqlite3_busy_timeout(d->db, 5000);
	const char *setup = read_only ? "PRAGMA query_only = 1;" :
	                    "PRAGMA journal_mode = WAL;"
	                    "PRAGMA synchronous = OFF;" SCHEMA;
	rc = sqlite3_exec(d->db, setup, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int ret = view_db_error(d, rc);
		view_db_close(d);
		return ret;
	}
	return ZC_EOK;
}

void view_db_close(view_db_t *d)
{
	for (int i = 0; i < VIEW_DB_STMTS; i++) {
		if (d->cache[i].stmt != NULL) {
			sqlite3_finalize(d->cache[i].stmt);
		}
	}
	sqlite3_close(d->db);
	memset(d, 0, sizeof(*d));
}

int view_db_begin(view_db_t *d, bool write)
{
	return view_db_exec(d, write ? "BEGIN IMMEDIATE" : "BEGIN", 0);
}

int view_db_commit(view_db_t *d)
{
	return view_db_exec(d, "COMMIT", 0);
}

void view_db_rollback(view_db_t *d)
{
	if (!sqlite3_get_autocommit(d->db)) {
		(void)view_db_exec(d, "ROLLBACK", 0);
	}
}

/* --- Zones --- */

static void copy_blob(sqlite3_stmt *stmt, int col, uint8_t *out, size_t cap,
                      size_t *len)
{
	size_t n = (size_t)sqlite3_column_bytes(stmt, col);
	*len = n <= cap ? n : 0;
	if (*len > 0) {
		memcpy(out, sqlite3_column_blob(stmt, col), n);
	}
}

static void zone_from_stmt(sqlite3_stmt *stmt, view_zone_t *z)
{
	memset(z, 0, sizeof(*z));
	size_t len;
	z->zone_id = sqlite3_column_int64(stmt, 0);
	copy_blob(stmt, 1, z->apex, sizeof(z->apex), &len);
	z->serial = (uint32_t)sqlite3_column_int64(stmt, 2);
	z->soa_ttl = (uint32_t)sqlite3_column_int64(stmt, 3);
	copy_blob(stmt, 4, z->soa, sizeof(z->soa), &len);
	z->soa_len = (uint16_t)len;
	copy_blob(stmt, 5, z->keys, sizeof(z->keys), &z->keys_len);
	z->nsec_ttl = (uint32_t)sqlite3_column_int64(stmt, 6);
	z->has_journal = sqlite3_column_type(stmt, 7) != SQLITE_NULL;
	z->journal_from = (uint32_t)sqlite3_column_int64(stmt, 7);
}

#define ZONE_COLUMNS "zone_id, apex, serial, soa_ttl, soa, keys, nsec_ttl," \
	" journal_from"

int view_db_zone_get(view_db_t *d, int64_t zone_id, view_zone_t *z)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT " ZONE_COLUMNS " FROM vzones"
	                          " WHERE zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		zone_from_stmt(stmt, z);
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : rc == SQLITE_DONE ? KNOT_ENOENT :
	      view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

int view_db_zone_put(view_db_t *d, const view_zone_t *z)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "INSERT OR REPLACE INTO vzones(" ZONE_COLUMNS
	                          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, z->zone_id);
	sqlite3_bind_blob(stmt, 2, z->apex, (int)knot_dname_size(z->apex),
	                  SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, z->serial);
	sqlite3_bind_int64(stmt, 4, z->soa_ttl);
	sqlite3_bind_blob(stmt, 5, z->soa, z->soa_len, SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 6, z->keys, (int)z->keys_len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 7, z->nsec_ttl);
	if (z->has_journal) {
		sqlite3_bind_int64(stmt, 8, z->journal_from);
	}
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_zone_delete(view_db_t *d, int64_t zone_id)
{
	int ret = view_db_exec(d, "DELETE FROM vzones WHERE zone_id = ?1",
	                       zone_id);
	if (ret == ZC_EOK) {
		ret = view_db_exec(d, "DELETE FROM vnodes WHERE zone_id = ?1",
		                   zone_id);
	}
	if (ret == ZC_EOK) {
		ret = view_db_exec(d, "DELETE FROM vsigs WHERE zone_id = ?1",
		                   zone_id);
	}
	if (ret == ZC_EOK) {
		ret = view_db_journal_clear(d, zone_id);
	}
	return ret;
}

int view_db_zone_foreach(view_db_t *d,
                         int (*cb)(const view_zone_t *z, void *ctx),
                         void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT " ZONE_COLUMNS " FROM vzones",
	                          &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		view_zone_t z;
		zone_from_stmt(stmt, &z);
		if (cb(&z, ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

/* --- Nodes --- */

int view_db_node_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_node_t *n, size_t cap)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT data, chain, nsec FROM vnodes"
	                          " WHERE zone_id = ? AND okey = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey, (int)okey_len, SQLITE_STATIC);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		n->data_len = (size_t)sqlite3_column_bytes(stmt, 0);
		if (n->data_len > cap) {
			ret = ZC_ENOSPACE;
		} else {
			memcpy(n->data, sqlite3_column_blob(stmt, 0), n->data_len);
			n->chain = sqlite3_column_int(stmt, 1) != 0;
			copy_blob(stmt, 2, n->nsec, sizeof(n->nsec), &n->nsec_len);
		}
	} else {
		ret = rc == SQLITE_DONE ? KNOT_ENOENT : view_db_error(d, rc);
	}
	view_db_done(d, stmt);
	return ret;
}

int view_db_node_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, const uint8_t *owner,
                     const uint8_t *data, size_t data_len, bool chain)
{
	sqlite3_stmt *stmt;
	/* An upsert that keeps the row's NSEC (chain.c sets it). */
	int ret = view_db_prepare(d, "INSERT INTO vnodes(zone_id, okey, owner,"
	                          " data, chain) VALUES (?1, ?2, ?3, ?4, ?5)"
	                          " ON CONFLICT(zone_id, okey) DO UPDATE SET"
	                          " data = ?4, chain = ?5", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 3, owner, (int)knot_dname_size(owner),
	                  SQLITE_STATIC);
	sqlite3_bind_blob(stmt, 4, data, (int)data_len, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 5, chain ? 1 : 0);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_node_set_nsec(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                          size_t okey_len, const uint8_t *nsec,
                          size_t nsec_len)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "UPDATE vnodes SET nsec = ?3 WHERE"
	                          " zone_id = ?1 AND okey = ?2", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	if (nsec_len > 0) {
		sqlite3_bind_blob(stmt, 3, nsec, (int)nsec_len, SQLITE_STATIC);
	}
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_node_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                        size_t okey_len)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "DELETE FROM vnodes WHERE zone_id = ?"
	                          " AND okey = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

static int chain_step(view_db_t *d, const char *sql, int64_t zone_id,
                      const uint8_t *okey, size_t okey_len, uint8_t *out,
                      size_t *out_len)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		copy_blob(stmt, 0, out, DNS_LF_KEY_MAXLEN, out_len);
		ret = 1;
	} else {
		ret = rc == SQLITE_DONE ? 0 : view_db_error(d, rc);
	}
	view_db_done(d, stmt);
	return ret;
}

int view_db_chain_prev(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len)
{
	return chain_step(d, "SELECT okey FROM vnodes WHERE zone_id = ?1 AND"
	                  " okey < ?2 AND chain = 1 ORDER BY okey DESC LIMIT 1",
	                  zone_id, okey, okey_len, out, out_len);
}

int view_db_chain_next(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len)
{
	return chain_step(d, "SELECT okey FROM vnodes WHERE zone_id = ?1 AND"
	                  " okey > ?2 AND chain = 1 ORDER BY okey LIMIT 1",
	                  zone_id, okey, okey_len, out, out_len);
}

void view_keys_free(view_keys_t *k)
{
	free(k->buf);
	memset(k, 0, sizeof(*k));
}

int view_keys_add(view_keys_t *k, const uint8_t *okey, size_t okey_len)
{
	if (k->len + 2 + okey_len > k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 4096;
		while (cap < k->len + 2 + okey_len) {
			cap *= 2;
		}
		uint8_t *grown = realloc(k->buf, cap);
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		k->buf = grown;
		k->cap = cap;
	}
	k->buf[k->len] = (uint8_t)(okey_len >> 8);
	k->buf[k->len + 1] = (uint8_t)okey_len;
	memcpy(k->buf + k->len + 2, okey, okey_len);
	k->len += 2 + okey_len;
	k->count++;
	return ZC_EOK;
}

bool view_keys_next(const view_keys_t *k, size_t *pos, const uint8_t **okey,
                    size_t *okey_len)
{
	if (*pos + 2 > k->len) {
		return false;
	}
	*okey_len = (size_t)(k->buf[*pos] << 8 | k->buf[*pos + 1]);
	*okey = k->buf + *pos + 2;
	*pos += 2 + *okey_len;
	return true;
}

int view_db_keys(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                 size_t okey_len, bool with_self, bool chain_only,
                 view_keys_t *out)
{
	/* A name's key ends with the 0 that ends its last label, so the keys
	 * of its descendants are exactly the longer keys it prefixes, and
	 * they follow it directly in key order. */
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT okey, chain FROM vnodes WHERE"
	                          " zone_id = ?1 AND okey >= ?2 ORDER BY okey",
	                          &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		size_t len = (size_t)sqlite3_column_bytes(stmt, 0);
		const uint8_t *k = sqlite3_column_blob(stmt, 0);
		if (len < okey_len || memcmp(k ? k : (const uint8_t *)"", okey,
		                             okey_len) != 0) {
			rc = SQLITE_DONE;
			break;
		}
		if ((len == okey_len && !with_self) ||
		    (chain_only && sqlite3_column_int(stmt, 1) == 0)) {
			continue;
		}
		if (view_keys_add(out, k ? k : (const uint8_t *)"", len) != ZC_EOK) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	ret = view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

/* --- Signatures --- */

int view_db_sigs_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_sig_t *out, size_t max,
                     size_t *count)
{
	*count = 0;
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT covered, ttl, rdata, expire FROM"
	                          " vsigs WHERE zone_id = ? AND okey = ?"
	                          " ORDER BY covered", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW && *count < max) {
		view_sig_t *s = &out[*count];
		size_t len;
		s->covered = (uint16_t)sqlite3_column_int(stmt, 0);
		s->ttl = (uint32_t)sqlite3_column_int64(stmt, 1);
		copy_blob(stmt, 2, s->rdata, sizeof(s->rdata), &len);
		s->rdata_len = (uint16_t)len;
		s->expire = (uint32_t)sqlite3_column_int64(stmt, 3);
		(*count)++;
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

int view_db_sig_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, uint16_t covered, view_sig_t *sig)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT ttl, rdata, expire FROM vsigs WHERE"
	                          " zone_id = ? AND okey = ? AND covered = ?",
	                          &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 3, covered);
	int rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		size_t len;
		sig->covered = covered;
		sig->ttl = (uint32_t)sqlite3_column_int64(stmt, 0);
		copy_blob(stmt, 1, sig->rdata, sizeof(sig->rdata), &len);
		sig->rdata_len = (uint16_t)len;
		sig->expire = (uint32_t)sqlite3_column_int64(stmt, 2);
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : rc == SQLITE_DONE ? KNOT_ENOENT :
	      view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

int view_db_sig_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, const view_sig_t *sig)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "INSERT OR REPLACE INTO vsigs(zone_id, okey,"
	                          " covered, ttl, rdata, expire)"
	                          " VALUES (?, ?, ?, ?, ?, ?)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 3, sig->covered);
	sqlite3_bind_int64(stmt, 4, sig->ttl);
	sqlite3_bind_blob(stmt, 5, sig->rdata, sig->rdata_len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 6, sig->expire);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_sig_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint16_t covered)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "DELETE FROM vsigs WHERE zone_id = ? AND"
	                          " okey = ? AND covered = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
	                  (int)okey_len, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 3, covered);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_sigs_due(view_db_t *d, int64_t zone_id, uint32_t before,
                     size_t limit,
                     int (*cb)(const uint8_t *okey, size_t okey_len,
                               uint16_t covered, void *ctx), void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT okey, covered FROM vsigs WHERE"
	                          " zone_id = ? AND expire < ? ORDER BY expire"
	                          " LIMIT ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int64(stmt, 2, before);
	sqlite3_bind_int64(stmt, 3, (int64_t)limit);
	/* Collected first: the callback rewrites the rows it is given. */
	struct {
		uint8_t okey[DNS_LF_KEY_MAXLEN];
		size_t len;
		uint16_t covered;
	} *due = calloc(limit ? limit : 1, sizeof(*due));
	size_t n = 0;
	int rc = due == NULL ? SQLITE_NOMEM : SQLITE_ROW;
	while (due != NULL && n < limit &&
	       (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		copy_blob(stmt, 0, due[n].okey, sizeof(due[n].okey), &due[n].len);
		due[n].covered = (uint16_t)sqlite3_column_int(stmt, 1);
		n++;
	}
	ret = rc == SQLITE_ROW ? ZC_EOK : view_db_error(d, rc);
	view_db_done(d, stmt);
	for (size_t i = 0; i < n && ret == ZC_EOK; i++) {
		ret = cb(due[i].okey, due[i].len, due[i].covered, ctx);
	}
	free(due);
	return ret;
}

int view_db_sigs_first_expire(view_db_t *d, int64_t zone_id,
                              uint32_t *expire)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT min(expire) FROM vsigs WHERE"
	                          " zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	*expire = rc == SQLITE_ROW ? (uint32_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = rc == SQLITE_ROW ? ZC_EOK : view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

/* --- Journal --- */

int view_db_journal_append(view_db_t *d, int64_t zone_id, uint32_t from,
                           uint32_t to, const uint8_t *data, size_t len)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "INSERT INTO vjournal(zone_id, seq,"
	                          " from_serial, to_serial, at, data) VALUES (?1,"
	                          " coalesce((SELECT max(seq) FROM vjournal WHERE"
	                          " zone_id = ?1), 0) + 1, ?2, ?3, ?4, ?5)",
	                          &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int64(stmt, 2, from);
	sqlite3_bind_int64(stmt, 3, to);
	sqlite3_bind_int64(stmt, 4, (int64_t)ts.tv_sec * 1000 +
	                   ts.tv_nsec / 1000000);
	sqlite3_bind_blob(stmt, 5, len ? data : (const uint8_t *)"", (int)len,
	                  SQLITE_STATIC);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	return ret;
}

int view_db_journal_read(view_db_t *d, int64_t zone_id, uint32_t from,
                         uint32_t to,
                         int (*cb)(const uint8_t *data, size_t len,
                                   void *ctx), void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "SELECT from_serial, to_serial, data FROM"
	                          " vjournal WHERE zone_id = ?1 AND seq >="
	                          " (SELECT max(seq) FROM vjournal WHERE"
	                          " zone_id = ?1 AND from_serial = ?2)"
	                          " ORDER BY seq", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int64(stmt, 2, from);
	uint32_t at = from;
	bool reached = from == to;
	int rc;
	while (!reached && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((uint32_t)sqlite3_column_int64(stmt, 0) != at) {
			break; /* Not chained: a gap. */
		}
		ret = cb(sqlite3_column_blob(stmt, 2),
		         (size_t)sqlite3_column_bytes(stmt, 2), ctx);
		if (ret != ZC_EOK) {
			break;
		}
		at = (uint32_t)sqlite3_column_int64(stmt, 1);
		reached = at == to;
	}
	view_db_done(d, stmt);
	if (ret == ZC_EOK && !reached) {
		ret = KNOT_ENOENT;
	}
	return ret;
}

int view_db_journal_trim(view_db_t *d, int64_t zone_id, int64_t before_ms,
                         bool *has, uint32_t *from)
{
	sqlite3_stmt *stmt;
	int ret = view_db_prepare(d, "DELETE FROM vjournal WHERE zone_id = ?1"
	                          " AND at < ?2 AND seq < (SELECT max(seq) FROM"
	                          " vjournal WHERE zone_id = ?1)", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int64(stmt, 2, before_ms);
	ret = view_db_error(d, sqlite3_step(stmt));
	view_db_done(d, stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = view_db_prepare(d, "SELECT from_serial FROM vjournal WHERE"
	                      " zone_id = ? ORDER BY seq LIMIT 1", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	*has = rc == SQLITE_ROW;
	*from = *has ? (uint32_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = rc == SQLITE_ROW ? ZC_EOK : view_db_error(d, rc);
	view_db_done(d, stmt);
	return ret;
}

int view_db_journal_clear(view_db_t *d, int64_t zone_id)
{
	return view_db_exec(d, "DELETE FROM vjournal WHERE zone_id = ?1",
	                    zone_id);
}
