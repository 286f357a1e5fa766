/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The signed view's SQLite file (see db.h for the tables), through the
 * records store's database driver (records/db.h): its statement cache,
 * transactions and error mapping.
 */
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

/* The view's format (PRAGMA user_version). 1: a version whose SOA fields
 * or TTL changed journals the SOA it replaced (sigview/zone.c); entries
 * written before lack it, and are dropped (IXFR from their serials is
 * then answered in AXFR form). */
#define UPGRADE \
	"DELETE FROM vjournal WHERE" \
	" (SELECT user_version FROM pragma_user_version) < 1;" \
	"PRAGMA user_version = 1;"

int view_db_exec(view_db_t *d, const char *sql, int64_t zone_id)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(sql), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (zone_id != 0) {
		rdb_bind_int64(stmt, 1, zone_id);
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

/* The view's format (PRAGMA user_version); -1 when it cannot be read. */
static int64_t format_of(rdb_t *db)
{
	rdb_stmt_t *stmt;
	if (rdb_prepare(db, RDB_SQLITE_ONLY("PRAGMA user_version"), &stmt) !=
	    ZC_EOK) {
		return -1;
	}
	int64_t v = rdb_step(stmt) == RDB_ROW ? rdb_col_int64(stmt, 0) : -1;
	rdb_done(stmt);
	return v;
}

int view_db_open(view_db_t *d, const char *dir, bool read_only)
{
	memset(d, 0, sizeof(*d));
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/signed.db", dir) >= (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	/* Derived data: no fsync at commit. Readers refuse to write. */
	const rdb_options_t opts = {
		.label = "signed view",
		.derived = true,
		.read_only = read_only,
		.busy_timeout_ms = 5000,
	};
	int ret = rdb_open(&d->db, path, &opts);
	if (ret == ZC_EOK && !read_only) {
		ret = rdb_exec(d->db, SCHEMA);
	}
	if (ret == ZC_EOK && !read_only && format_of(d->db) < 1) {
		/* Only then: the PRAGMA writes, and a start on a full disk
		 * must not need a write (it could not start). */
		ret = rdb_exec(d->db, UPGRADE);
	}
	if (ret != ZC_EOK) {
		view_db_close(d);
	}
	return ret;
}

void view_db_close(view_db_t *d)
{
	rdb_close(d->db);
	memset(d, 0, sizeof(*d));
}

int view_db_begin(view_db_t *d, bool write)
{
	return write ? rdb_begin_write(d->db) : rdb_begin_read(d->db);
}

int view_db_commit(view_db_t *d)
{
	return rdb_commit(d->db);
}

void view_db_rollback(view_db_t *d)
{
	rdb_rollback(d->db);
}

/* --- Zones --- */

static void copy_blob(rdb_stmt_t *stmt, int col, uint8_t *out, size_t cap,
                      size_t *len)
{
	size_t n = rdb_col_bytes(stmt, col);
	*len = n <= cap ? n : 0;
	if (*len > 0) {
		memcpy(out, rdb_col_blob(stmt, col, NULL), n);
	}
}

static void zone_from_stmt(rdb_stmt_t *stmt, view_zone_t *z)
{
	memset(z, 0, sizeof(*z));
	size_t len;
	z->zone_id = rdb_col_int64(stmt, 0);
	copy_blob(stmt, 1, z->apex, sizeof(z->apex), &len);
	z->serial = (uint32_t)rdb_col_int64(stmt, 2);
	z->soa_ttl = (uint32_t)rdb_col_int64(stmt, 3);
	copy_blob(stmt, 4, z->soa, sizeof(z->soa), &len);
	z->soa_len = (uint16_t)len;
	copy_blob(stmt, 5, z->keys, sizeof(z->keys), &z->keys_len);
	z->nsec_ttl = (uint32_t)rdb_col_int64(stmt, 6);
	z->has_journal = !rdb_col_is_null(stmt, 7);
	z->journal_from = (uint32_t)rdb_col_int64(stmt, 7);
}

#define ZONE_COLUMNS "zone_id, apex, serial, soa_ttl, soa, keys, nsec_ttl," \
	" journal_from"

int view_db_zone_get(view_db_t *d, int64_t zone_id, view_zone_t *z)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT " ZONE_COLUMNS " FROM vzones"
		" WHERE zone_id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		zone_from_stmt(stmt, z);
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? KNOT_ENOENT :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int view_db_zone_put(view_db_t *d, const view_zone_t *z)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"INSERT OR REPLACE INTO vzones(" ZONE_COLUMNS
		") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, z->zone_id);
	rdb_bind_blob(stmt, 2, z->apex, (int)knot_dname_size(z->apex));
	rdb_bind_int64(stmt, 3, z->serial);
	rdb_bind_int64(stmt, 4, z->soa_ttl);
	rdb_bind_blob(stmt, 5, z->soa, z->soa_len);
	rdb_bind_blob(stmt, 6, z->keys, (int)z->keys_len);
	rdb_bind_int64(stmt, 7, z->nsec_ttl);
	if (z->has_journal) {
		rdb_bind_int64(stmt, 8, z->journal_from);
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
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
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL("SELECT " ZONE_COLUMNS
	                                     " FROM vzones"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		view_zone_t z;
		zone_from_stmt(stmt, &z);
		if (cb(&z, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* --- Nodes --- */

int view_db_node_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_node_t *n, size_t cap)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT data, chain, nsec FROM vnodes"
		" WHERE zone_id = ?1 AND okey = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey, (int)okey_len);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		n->data_len = rdb_col_bytes(stmt, 0);
		if (n->data_len > cap) {
			ret = ZC_ENOSPACE;
		} else {
			memcpy(n->data, rdb_col_blob(stmt, 0, NULL),
			       n->data_len);
			n->chain = rdb_col_int64(stmt, 1) != 0;
			copy_blob(stmt, 2, n->nsec, sizeof(n->nsec), &n->nsec_len);
		}
	} else {
		ret = rc == RDB_DONE ? KNOT_ENOENT : rdb_status(rc);
	}
	rdb_done(stmt);
	return ret;
}

int view_db_node_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, const uint8_t *owner,
                     const uint8_t *data, size_t data_len, bool chain)
{
	rdb_stmt_t *stmt;
	/* An upsert that keeps the row's NSEC (chain.c sets it). */
	int ret = rdb_prepare(d->db, RDB_SQL(
		"INSERT INTO vnodes(zone_id, okey, owner,"
		" data, chain) VALUES (?1, ?2, ?3, ?4, ?5)"
		" ON CONFLICT(zone_id, okey) DO UPDATE SET"
		" data = ?4, chain = ?5"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	rdb_bind_blob(stmt, 3, owner, (int)knot_dname_size(owner));
	rdb_bind_blob(stmt, 4, data, (int)data_len);
	rdb_bind_int64(stmt, 5, chain ? 1 : 0);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int view_db_node_set_nsec(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                          size_t okey_len, const uint8_t *nsec,
                          size_t nsec_len)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"UPDATE vnodes SET nsec = ?3 WHERE"
		" zone_id = ?1 AND okey = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	if (nsec_len > 0) {
		rdb_bind_blob(stmt, 3, nsec, (int)nsec_len);
	}
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int view_db_node_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                        size_t okey_len)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"DELETE FROM vnodes WHERE zone_id = ?1"
		" AND okey = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

static int chain_step(view_db_t *d, const rdb_sql_t *sql, int64_t zone_id,
                      const uint8_t *okey, size_t okey_len, uint8_t *out,
                      size_t *out_len)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		copy_blob(stmt, 0, out, DNS_LF_KEY_MAXLEN, out_len);
		ret = 1;
	} else {
		ret = rc == RDB_DONE ? 0 : rdb_status(rc);
	}
	rdb_done(stmt);
	return ret;
}

int view_db_chain_prev(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len)
{
	return chain_step(d, RDB_SQL("SELECT okey FROM vnodes"
	                  " WHERE zone_id = ?1 AND okey < ?2 AND chain = 1"
	                  " ORDER BY okey DESC LIMIT 1"),
	                  zone_id, okey, okey_len, out, out_len);
}

int view_db_chain_next(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len)
{
	return chain_step(d, RDB_SQL("SELECT okey FROM vnodes"
	                  " WHERE zone_id = ?1 AND okey > ?2 AND chain = 1"
	                  " ORDER BY okey LIMIT 1"),
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
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT okey, chain FROM vnodes WHERE"
		" zone_id = ?1 AND okey >= ?2 ORDER BY okey"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		size_t len = rdb_col_bytes(stmt, 0);
		const uint8_t *k = rdb_col_blob(stmt, 0, NULL);
		if (len < okey_len || memcmp(k ? k : (const uint8_t *)"", okey,
		                             okey_len) != 0) {
			rc = RDB_DONE;
			break;
		}
		if ((len == okey_len && !with_self) ||
		    (chain_only && rdb_col_int64(stmt, 1) == 0)) {
			continue;
		}
		if (view_keys_add(out, k ? k : (const uint8_t *)"", len) != ZC_EOK) {
			rc = KNOT_ENOMEM;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* --- Signatures --- */

int view_db_sigs_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_sig_t *out, size_t max,
                     size_t *count)
{
	*count = 0;
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT covered, ttl, rdata, expire FROM"
		" vsigs WHERE zone_id = ?1 AND okey = ?2"
		" ORDER BY covered"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW && *count < max) {
		view_sig_t *s = &out[*count];
		size_t len;
		s->covered = (uint16_t)rdb_col_int64(stmt, 0);
		s->ttl = (uint32_t)rdb_col_int64(stmt, 1);
		copy_blob(stmt, 2, s->rdata, sizeof(s->rdata), &len);
		s->rdata_len = (uint16_t)len;
		s->expire = (uint32_t)rdb_col_int64(stmt, 3);
		(*count)++;
	}
	ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int view_db_sig_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, uint16_t covered, view_sig_t *sig)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT ttl, rdata, expire FROM vsigs WHERE"
		" zone_id = ?1 AND okey = ?2 AND covered = ?3"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	rdb_bind_int64(stmt, 3, covered);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		size_t len;
		sig->covered = covered;
		sig->ttl = (uint32_t)rdb_col_int64(stmt, 0);
		copy_blob(stmt, 1, sig->rdata, sizeof(sig->rdata), &len);
		sig->rdata_len = (uint16_t)len;
		sig->expire = (uint32_t)rdb_col_int64(stmt, 2);
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? KNOT_ENOENT :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int view_db_sig_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, const view_sig_t *sig)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"INSERT OR REPLACE INTO vsigs(zone_id, okey,"
		" covered, ttl, rdata, expire)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	rdb_bind_int64(stmt, 3, sig->covered);
	rdb_bind_int64(stmt, 4, sig->ttl);
	rdb_bind_blob(stmt, 5, sig->rdata, sig->rdata_len);
	rdb_bind_int64(stmt, 6, sig->expire);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int view_db_sig_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint16_t covered)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"DELETE FROM vsigs WHERE zone_id = ?1 AND"
		" okey = ?2 AND covered = ?3"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_blob(stmt, 2, okey_len ? okey : (const uint8_t *)"",
		      (int)okey_len);
	rdb_bind_int64(stmt, 3, covered);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int view_db_sigs_due(view_db_t *d, int64_t zone_id, uint32_t before,
                     size_t limit,
                     int (*cb)(const uint8_t *okey, size_t okey_len,
                               uint16_t covered, void *ctx), void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT okey, covered FROM vsigs WHERE"
		" zone_id = ?1 AND expire < ?2 ORDER BY expire"
		" LIMIT ?3"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, before);
	rdb_bind_int64(stmt, 3, (int64_t)limit);
	/* Collected first: the callback rewrites the rows it is given. */
	struct {
		uint8_t okey[DNS_LF_KEY_MAXLEN];
		size_t len;
		uint16_t covered;
	} *due = calloc(limit ? limit : 1, sizeof(*due));
	size_t n = 0;
	int rc = due == NULL ? KNOT_ENOMEM : RDB_ROW;
	while (due != NULL && n < limit &&
	       (rc = rdb_step(stmt)) == RDB_ROW) {
		copy_blob(stmt, 0, due[n].okey, sizeof(due[n].okey), &due[n].len);
		due[n].covered = (uint16_t)rdb_col_int64(stmt, 1);
		n++;
	}
	ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	for (size_t i = 0; i < n && ret == ZC_EOK; i++) {
		ret = cb(due[i].okey, due[i].len, due[i].covered, ctx);
	}
	free(due);
	return ret;
}

int view_db_sigs_first_expire(view_db_t *d, int64_t zone_id,
                              uint32_t *expire)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT min(expire) FROM vsigs WHERE"
		" zone_id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	*expire = rc == RDB_ROW ? (uint32_t)rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* --- Journal --- */

int view_db_journal_append(view_db_t *d, int64_t zone_id, uint32_t from,
                           uint32_t to, const uint8_t *data, size_t len)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"INSERT INTO vjournal(zone_id, seq,"
		" from_serial, to_serial, at, data) VALUES (?1,"
		" coalesce((SELECT max(seq) FROM vjournal WHERE"
		" zone_id = ?1), 0) + 1, ?2, ?3, ?4, ?5)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, from);
	rdb_bind_int64(stmt, 3, to);
	rdb_bind_int64(stmt, 4, (int64_t)ts.tv_sec * 1000 +
	                   ts.tv_nsec / 1000000);
	rdb_bind_blob(stmt, 5, len ? data : (const uint8_t *)"", (int)len);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int view_db_journal_read(view_db_t *d, int64_t zone_id, uint32_t from,
                         uint32_t to,
                         int (*cb)(const uint8_t *data, size_t len,
                                   void *ctx), void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT from_serial, to_serial, data FROM"
		" vjournal WHERE zone_id = ?1 AND seq >="
		" (SELECT max(seq) FROM vjournal WHERE"
		" zone_id = ?1 AND from_serial = ?2)"
		" ORDER BY seq"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, from);
	uint32_t at = from;
	bool reached = from == to;
	int rc;
	while (!reached && (rc = rdb_step(stmt)) == RDB_ROW) {
		if ((uint32_t)rdb_col_int64(stmt, 0) != at) {
			break; /* Not chained: a gap. */
		}
		ret = cb(rdb_col_blob(stmt, 2, NULL),
		         rdb_col_bytes(stmt, 2), ctx);
		if (ret != ZC_EOK) {
			break;
		}
		at = (uint32_t)rdb_col_int64(stmt, 1);
		reached = at == to;
	}
	rdb_done(stmt);
	if (ret == ZC_EOK && !reached) {
		ret = KNOT_ENOENT;
	}
	return ret;
}

int view_db_journal_trim(view_db_t *d, int64_t zone_id, int64_t before_ms,
                         bool *has, uint32_t *from)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(d->db, RDB_SQL(
		"DELETE FROM vjournal WHERE zone_id = ?1"
		" AND at < ?2 AND seq < (SELECT max(seq) FROM"
		" vjournal WHERE zone_id = ?1)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, before_ms);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = rdb_prepare(d->db, RDB_SQL(
		"SELECT from_serial FROM vjournal WHERE"
		" zone_id = ?1 ORDER BY seq LIMIT 1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	*has = rc == RDB_ROW;
	*from = *has ? (uint32_t)rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int view_db_journal_clear(view_db_t *d, int64_t zone_id)
{
	return view_db_exec(d, "DELETE FROM vjournal WHERE zone_id = ?1",
	                    zone_id);
}
