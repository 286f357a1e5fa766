/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to sigview/: the signed view's SQLite file, DATA_DIR/signed.db.
 *
 *   vzones    zone_id, apex (wire), serial, SOA TTL and rdata (with the
 *             serial), the signing keys' fingerprint, NSEC TTL, and
 *             journal_from: the oldest serial IXFR can start from (NULL:
 *             none yet)
 *   vnodes    (zone_id, okey) -> owner, the unsigned RRsets (an edge node
 *             value, src/edge/codec.h), chain (1: authoritative, so in
 *             the NSEC chain; 0: glue or occluded), the NSEC rdata
 *   vsigs     (zone_id, okey, covered type) -> RRSIG TTL, rdata and
 *             expiration; indexed by (zone_id, expire) for refreshes
 *   vjournal  (zone_id, seq) -> from and to serial, the RR changes (diff.c)
 *
 * okey is the owner's lookup form relative to the apex (dns/name.h):
 * SQLite compares blobs with memcmp, so ORDER BY okey is DNSSEC's
 * canonical order (RFC 4034 §6.1) and the NSEC chain is the chain rows in
 * okey order. The view is derived data (rebuilt from the edge store when
 * lost), so it is written with synchronous=OFF; readers (transfers) see
 * one consistent version per read transaction (WAL).
 *
 * A view_db_t is one connection of the records store's database driver
 * (records/db.h, SQLite with synchronous=OFF): one per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/consts.h>

#include "dns/name.h"
#include "edge/codec.h"
#include "records/db.h"

typedef struct {
	rdb_t *db;
} view_db_t;

/* Opens (creating) DIR/signed.db; read_only for transfer readers. */
int view_db_open(view_db_t *d, const char *dir, bool read_only);
void view_db_close(view_db_t *d);

int view_db_begin(view_db_t *d, bool write);
int view_db_commit(view_db_t *d);
void view_db_rollback(view_db_t *d);

/* Statements go through the driver: rdb_prepare(d->db, ...) (records/db.h).
 * Runs a statement binding nothing (or ?1 = zone_id when not 0). */
int view_db_exec(view_db_t *d, const char *sql, int64_t zone_id);

/* --- Zones --- */

typedef struct {
	int64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint32_t serial;
	uint32_t soa_ttl;
	uint16_t soa_len;
	uint8_t soa[EDGE_SOA_MAXLEN];
	uint8_t keys[64];         /* Fingerprint of the signing keys. */
	size_t keys_len;
	uint32_t nsec_ttl;
	bool has_journal;
	uint32_t journal_from;
} view_zone_t;

/* KNOT_ENOENT when the view does not hold the zone. */
int view_db_zone_get(view_db_t *d, int64_t zone_id, view_zone_t *z);
int view_db_zone_put(view_db_t *d, const view_zone_t *z);
/* Deletes the zone and everything of it. */
int view_db_zone_delete(view_db_t *d, int64_t zone_id);
/* Calls cb for each zone held. */
int view_db_zone_foreach(view_db_t *d,
                         int (*cb)(const view_zone_t *z, void *ctx),
                         void *ctx);

/* --- Nodes --- */

typedef struct {
	uint8_t *data;            /* Edge node value (caller's buffer). */
	size_t data_len;
	bool chain;
	uint8_t nsec[KNOT_DNAME_MAXLEN + 34 * 256];
	size_t nsec_len;          /* 0: no NSEC. */
} view_node_t;

/* Reads a node into n (data into n->data, of cap bytes). KNOT_ENOENT
 * when absent; ZC_ENOSPACE when data does not fit. */
int view_db_node_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_node_t *n, size_t cap);
int view_db_node_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, const uint8_t *owner,
                     const uint8_t *data, size_t data_len, bool chain);
int view_db_node_set_nsec(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                          size_t okey_len, const uint8_t *nsec,
                          size_t nsec_len);
int view_db_node_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                        size_t okey_len);

/* The chain node before (after) okey, into out (DNS_LF_KEY_MAXLEN bytes):
 * 1 found, 0 none, or a negative code. */
int view_db_chain_prev(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len);
int view_db_chain_next(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint8_t *out, size_t *out_len);

/* Node keys, packed (u16 length, key, ...), so that a million of them
 * take tens of megabytes, not hundreds. */
typedef struct {
	uint8_t *buf;
	size_t len, cap;
	size_t count;
} view_keys_t;

void view_keys_free(view_keys_t *k);
/* Appends one key; KNOT_ENOMEM. */
int view_keys_add(view_keys_t *k, const uint8_t *okey, size_t okey_len);
/* Iterates: pos starts at 0; false at the end. */
bool view_keys_next(const view_keys_t *k, size_t *pos, const uint8_t **okey,
                    size_t *okey_len);

/* Appends to out the keys of the zone's nodes strictly below okey (okey
 * empty: every node but the apex... and the apex itself when with_self),
 * in order; chain nodes only when chain_only. */
int view_db_keys(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                 size_t okey_len, bool with_self, bool chain_only,
                 view_keys_t *out);

/* --- Signatures --- */

typedef struct {
	uint16_t covered;
	uint32_t ttl;
	uint32_t expire;
	uint16_t rdata_len;
	uint8_t rdata[512];
} view_sig_t;

/* The node's signatures (at most max; more are ignored), by type. */
int view_db_sigs_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                     size_t okey_len, view_sig_t *out, size_t max,
                     size_t *count);
/* One signature of the node; KNOT_ENOENT when none. */
int view_db_sig_get(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, uint16_t covered, view_sig_t *sig);
int view_db_sig_put(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                    size_t okey_len, const view_sig_t *sig);
int view_db_sig_delete(view_db_t *d, int64_t zone_id, const uint8_t *okey,
                       size_t okey_len, uint16_t covered);
/* Up to limit (okey, covered) whose signature expires before `before`,
 * earliest first. */
int view_db_sigs_due(view_db_t *d, int64_t zone_id, uint32_t before,
                     size_t limit,
                     int (*cb)(const uint8_t *okey, size_t okey_len,
                               uint16_t covered, void *ctx), void *ctx);
/* The earliest expiration in the zone (0: none). */
int view_db_sigs_first_expire(view_db_t *d, int64_t zone_id,
                              uint32_t *expire);

/* --- Journal --- */

int view_db_journal_append(view_db_t *d, int64_t zone_id, uint32_t from,
                           uint32_t to, const uint8_t *data, size_t len);
/* Calls cb with each entry's data for versions in (from, to], in order;
 * KNOT_ENOENT when the entries do not chain from `from` to `to`. */
int view_db_journal_read(view_db_t *d, int64_t zone_id, uint32_t from,
                         uint32_t to,
                         int (*cb)(const uint8_t *data, size_t len,
                                   void *ctx), void *ctx);
/* Deletes entries older than before_ms but the newest; returns the new
 * oldest from-serial in *from (has false: no entry left). */
int view_db_journal_trim(view_db_t *d, int64_t zone_id, int64_t before_ms,
                         bool *has, uint32_t *from);
/* Drops every entry of the zone. */
int view_db_journal_clear(view_db_t *d, int64_t zone_id);
