/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The change log (changelog.h has the design): appending events with
 * their kind's rules on both engines, IXFR's reads (by sequence, on both),
 * and on SQLite the builder's reads, the figures of status and metrics,
 * and trimming, by sequence; on PostgreSQL those go by commit position
 * (changelog_pg.c). With changelog_pg.c the only file that touches the
 * tables `changes` and `zone_versions` and the column zones.ixfr_from.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/changelog.h"
#include "records/internal.h"

static bool on_pg(const records_store_t *store)
{
	return rdb_kind(store->db) == RDB_PG;
}

/* --- Appending --- */

/* What an append does besides writing the event, by kind (changelog.h
 * gives the reasons). */
typedef struct {
	bool names_node;   /* Binds the node, type, record id, TTL, rdata. */
	bool indexes;      /* Indexes the version's first event. */
	bool restarts;     /* Moves the journal start to its version. */
} rule_t;

static const rule_t rules[] = {
	[RECORDS_CHANGE_RECORD_CREATED] = { true, true, false },
	[RECORDS_CHANGE_RECORD_DELETED] = { true, true, false },
	[RECORDS_CHANGE_ZONE_TOUCHED] = { true, true, false },
	[RECORDS_CHANGE_ZONE_CREATED] = { false, true, true },
	[RECORDS_CHANGE_ZONE_SETTINGS] = { false, true, true },
	[RECORDS_CHANGE_ZONE_IMPORTED] = { false, false, true },
	[RECORDS_CHANGE_ZONE_DELETED] = { false, false, false },
};

void records_changelog_begin(records_store_t *store)
{
	store->log_xid = 0;
	store->log_appended = false;
}

void records_changelog_xid(records_store_t *store, int64_t xid)
{
	if (xid != 0) {
		store->log_xid = xid;
	}
}

void records_changelog_rollback(records_store_t *store)
{
	/* SQLite undid the rows; the memory of them goes too. */
	store->version_zone = 0;
}

/* Was the zone version's first event indexed by this connection? */
static bool version_indexed(const records_store_t *store, int64_t zone_id,
                            uint32_t version)
{
	return store->version_zone == zone_id &&
	       store->version_logged == version;
}

/* Indexes the first event of a zone version (IXFR starts there); once
 * per version and connection. */
static int index_version(records_store_t *store, int64_t zone_id,
                         uint32_t version, int64_t seq)
{
	if (version_indexed(store, zone_id, version)) {
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(
		"INSERT OR REPLACE INTO zone_versions(zone_id, version, seq)"
		" VALUES (?1, ?2, ?3)",
		"INSERT INTO zone_versions(zone_id, version, seq)"
		" VALUES (?1, ?2, ?3) ON CONFLICT (zone_id, version)"
		" DO UPDATE SET seq = excluded.seq"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, version);
	rdb_bind_int64(stmt, 3, seq);
	ret = rdb_defer(stmt);
	rdb_done(stmt);
	if (ret == ZC_EOK) {
		store->version_zone = zone_id;
		store->version_logged = version;
	}
	return ret;
}

/* Starts the zone's IXFR journal afresh at `version` (a zone-wide change:
 * IXFR cannot span it). */
static int restart_journal(records_store_t *store, int64_t zone_id,
                           uint32_t version)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"UPDATE zones SET ixfr_from = ?1"
		" WHERE id = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, version);
	rdb_bind_int64(stmt, 2, zone_id);
	ret = rdb_defer(stmt);
	rdb_done(stmt);
	return ret;
}

/* An event's columns: ?1 zone, ?2 apex, ?3 version, ?4 kind, ?5 node,
 * ?6 type, ?7 record id, ?8 time, ?9 TTL, ?10 rdata. */
#define EVENT_INSERT \
	"INSERT INTO changes(zone_id, apex, version, kind, okey, type," \
	" record_id, at, ttl, rdata)" \
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"

static void bind_event(rdb_stmt_t *stmt, const records_change_entry_t *e,
                       const rule_t *rule)
{
	rdb_bind_int64(stmt, 1, e->zone_id);
	rdb_bind_blob(stmt, 2, e->apex, knot_dname_size(e->apex));
	rdb_bind_int64(stmt, 3, e->version);
	rdb_bind_int64(stmt, 4, e->kind);
	if (rule->names_node) {
		rdb_bind_blob(stmt, 5, e->okey_len ? e->okey :
			      (const uint8_t *)"", (int)e->okey_len);
		rdb_bind_int64(stmt, 6, e->type);
		rdb_bind_int64(stmt, 7, e->record_id);
		rdb_bind_int64(stmt, 9, e->ttl);
		rdb_bind_blob(stmt, 10, e->rdata_len ? e->rdata :
			      (const uint8_t *)"", e->rdata_len);
	}
	rdb_bind_int64(stmt, 8, records_now_ms());
}

/*
 * PostgreSQL, once the transaction's id is known and nobody asks for the
 * sequence: the event, queued in the pipeline (rdb_defer()): no round
 * trip of its own. With late savepoints (store->lazy_units) it is a row
 * gathered with the events around it, the batch's units' together (db.h,
 * rdb_defer_row()), and the versions are indexed at the commit
 * (records_changelog_index_versions()); otherwise a version's first event
 * goes with its index, as one statement, so that a failure of the index
 * is its unit's alone.
 */
static int append_queued(records_store_t *store,
                         const records_change_entry_t *e, const rule_t *rule)
{
	bool index = !store->lazy_units && rule->indexes &&
	             !version_indexed(store, e->zone_id, e->version);
	rdb_stmt_t *stmt;
	int ret = index ?
		rdb_prepare(store->db, RDB_SQL2(NULL,
			"WITH e AS (" EVENT_INSERT " RETURNING seq)"
			" INSERT INTO zone_versions(zone_id, version, seq)"
			" SELECT ?1, ?3, seq FROM e"
			" ON CONFLICT (zone_id, version)"
			" DO UPDATE SET seq = excluded.seq"), &stmt) :
		rdb_prepare(store->db, RDB_SQL2(NULL, EVENT_INSERT), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_event(stmt, e, rule);
	ret = index ? rdb_defer(stmt) : rdb_defer_row(stmt, "ibiibiiiib");
	rdb_done(stmt);
	if (ret == ZC_EOK && index) {
		store->version_zone = e->zone_id;
		store->version_logged = e->version;
	}
	return ret;
}

int records_changelog_index_versions(records_store_t *store)
{
	if (!on_pg(store) || !store->lazy_units || !store->log_appended) {
		return ZC_EOK;
	}
	/* Each version's first event of the kinds that index (rules[]),
	 * among this transaction's: what index_version() wrote per version
	 * (a version's events are all one unit's, so its first in this
	 * transaction is its first), the events of rolled-back units gone
	 * with them. */
	int64_t kinds[sizeof(rules) / sizeof(rules[0])];
	size_t n = 0;
	for (size_t k = 0; k < sizeof(rules) / sizeof(rules[0]); k++) {
		if (rules[k].indexes) {
			kinds[n++] = (int64_t)k;
		}
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"INSERT INTO zone_versions(zone_id, version, seq)"
		" SELECT zone_id, version, min(seq) FROM changes"
		" WHERE xid = pg_current_xact_id() AND kind = ANY(?1)"
		" GROUP BY zone_id, version"
		" ON CONFLICT (zone_id, version)"
		" DO UPDATE SET seq = excluded.seq"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64_array(stmt, 1, kinds, n);
	ret = rdb_defer(stmt);
	rdb_done(stmt);
	return ret;
}

int records_changelog_append(records_store_t *store,
                             const records_change_entry_t *e, uint64_t *seq)
{
	assert(e->kind >= RECORDS_CHANGE_ZONE_CREATED &&
	       e->kind <= RECORDS_CHANGE_ZONE_TOUCHED);
	const rule_t *rule = &rules[e->kind];
	if (on_pg(store) && store->log_xid != 0 && seq == NULL &&
	    !rule->restarts) {
		int ret = append_queued(store, e, rule);
		store->log_appended |= ret == ZC_EOK;
		return ret;
	}
	rdb_stmt_t *stmt;
	/* PostgreSQL returns the sequence and the (top-level) transaction
	 * id: no lastval() round trip, and the commit's position can be
	 * looked up once it committed. */
	int ret = rdb_prepare(store->db, RDB_SQL2(EVENT_INSERT,
		EVENT_INSERT " RETURNING seq, xid::text::bigint"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	bind_event(stmt, e, rule);
	int rc = rdb_step(stmt);
	int64_t appended = 0;
	if (rc == RDB_ROW) {
		appended = rdb_col_int64(stmt, 0);
		store->log_xid = rdb_col_int64(stmt, 1);
		store->log_appended = true;
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	if (ret == ZC_EOK && rc == RDB_DONE) {
		appended = rdb_last_insert_id(store->db); /* SQLite */
	}
	if (ret == ZC_EOK && seq != NULL) {
		*seq = (uint64_t)appended;
	}
	if (ret == ZC_EOK && rule->indexes &&
	    !(on_pg(store) && store->lazy_units)) {
		/* Late savepoints on PostgreSQL: at the commit, for the whole
		 * transaction. */
		ret = index_version(store, e->zone_id, e->version, appended);
	}
	if (ret == ZC_EOK && rule->restarts) {
		ret = restart_journal(store, e->zone_id, e->version);
	}
	return ret;
}

int records_changelog_committed(records_store_t *store, uint64_t *seq)
{
	if (on_pg(store)) {
		return changelog_pg_committed(store, seq);
	}
	/* Right after the commit the newest sequence is its last event's:
	 * a serve's writer is the only one (serve.lock). Another process's
	 * commit in between would only make it later, which the builder
	 * reaches after this one. */
	return records_last_seq(store, seq);
}

/* --- Reading: the builder --- */

bool records_changelog_follows(records_store_t *store, uint64_t after,
                               uint64_t seq)
{
	return on_pg(store) ? changelog_pg_follows(after, seq) :
	       seq == after + 1;
}

unsigned records_changelog_numbering(records_store_t *store)
{
	return on_pg(store) ? RECORDS_LOG_COMMITS : RECORDS_LOG_SEQUENCES;
}

void records_position_text(records_store_t *store, uint64_t seq, char *out,
                           size_t size)
{
	if (on_pg(store)) {
		changelog_pg_position_text(seq, out, size);
	} else {
		snprintf(out, size, "%" PRIu64, seq);
	}
}

int records_last_seq(records_store_t *store, uint64_t *seq)
{
	if (on_pg(store)) {
		return changelog_pg_last(store, seq);
	}
	int64_t v;
	int ret = rdb_query_int64(store->db, RDB_SQL(
		"SELECT coalesce(max(seq), 0) FROM changes"), &v);
	*seq = (uint64_t)v;
	return ret;
}

/* SQLite: an event's identity as text. */
#define SQLITE_EVENT_ID \
	"at || '/' || zone_id || '/' || version || '/' || kind || '/' ||" \
	" coalesce(record_id, 0)"

int records_changelog_mark(records_store_t *store, uint64_t a, uint64_t b,
                           uint64_t *head, uint64_t *id_a, uint64_t *id_b,
                           uint64_t *trimmed)
{
	*head = *id_a = *id_b = *trimmed = 0;
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(
		"SELECT (SELECT coalesce(max(seq), 0) FROM changes),"
		" (SELECT " SQLITE_EVENT_ID " FROM changes WHERE seq = ?1),"
		" (SELECT " SQLITE_EVENT_ID " FROM changes WHERE seq = ?2),"
		" (SELECT coalesce(max(value), 0) FROM counters"
		"  WHERE name = 'trimmed_seq')",
		"SELECT (SELECT coalesce(max(pos), 0) FROM log_commits),"
		" (SELECT xid::text || '/' || at FROM log_commits WHERE pos = ?1),"
		" (SELECT xid::text || '/' || at FROM log_commits WHERE pos = ?2),"
		" (SELECT coalesce(max(value), 0) FROM counters"
		"  WHERE name = 'trimmed_seq')"),
		&stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	bool pg = on_pg(store);
	/* PostgreSQL: the commit holding the position (an event's, or a
	 * commit read whole). */
	rdb_bind_int64(stmt, 1, (int64_t)(pg ? a >> 24 : a));
	rdb_bind_int64(stmt, 2, (int64_t)(pg ? b >> 24 : b));
	int rc = rdb_step(stmt);
	ret = rdb_status(rc);
	if (ret == ZC_EOK && rc == RDB_ROW) {
		int64_t last = rdb_col_int64(stmt, 0);
		*head = pg ? changelog_pg_commit_end(last) : (uint64_t)last;
		*id_a = a != 0 ? records_log_mark_id(rdb_col_text(stmt, 1)) : 0;
		*id_b = b != 0 ? records_log_mark_id(rdb_col_text(stmt, 2)) : 0;
		*trimmed = (uint64_t)rdb_col_int64(stmt, 3);
	}
	rdb_done(stmt);
	return ret;
}

int records_changes_since(records_store_t *store, uint64_t after,
                          unsigned limit,
                          int (*cb)(const records_change_t *chg, void *ctx),
                          void *ctx)
{
	if (on_pg(store)) {
		return changelog_pg_since(store, after, limit, cb, ctx);
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQLITE_ONLY(
		"SELECT seq, zone_id, apex, version, kind, okey, type,"
		" " SQLITE_EVENT_ID ","
		" (SELECT " SQLITE_EVENT_ID " FROM changes WHERE seq = ?1)"
		" FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, (int64_t)after);
	/* No limit: the largest (a negative LIMIT is SQLite's only). */
	rdb_bind_int64(stmt, 2, limit == 0 ? INT64_MAX : (int64_t)limit);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_change_t chg;
		if (!records_change_from_stmt(stmt, 1, &chg)) {
			continue;
		}
		chg.seq = (uint64_t)rdb_col_int64(stmt, 0);
		chg.log_id = records_log_mark_id(rdb_col_text(stmt, 7));
		chg.from_id = records_log_mark_id(rdb_col_text(stmt, 8));
		if (cb(&chg, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* --- Reading: IXFR --- */

/* RFC 1982: a < b. */
static bool serial_lt(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(b - a) > 0;
}

int records_changelog_journal_start(records_store_t *store, int64_t zone_id,
                                    bool *has, uint32_t *from)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT ixfr_from FROM zones"
		" WHERE id = ?1"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	int rc = rdb_step(stmt);
	*has = rc == RDB_ROW && !rdb_col_is_null(stmt, 0);
	*from = *has ? (uint32_t)rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? ZC_ENOZONE :
	      rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* Whether `from` is a version the zone had within its journal: the
 * journal's start, or a version the log holds. A serial never issued (a
 * gap the unixtime policy leaves, a secondary restored from elsewhere)
 * has no differences to give: the events after it would be applied to a
 * zone that never was (a Knot secondary took such an IXFR and kept a
 * record the primary never had, at the primary's serial, for ever). */
static int version_known(records_store_t *store, int64_t zone_id,
                         uint32_t start, uint32_t from, bool *known)
{
	*known = from == start;
	if (*known) {
		return ZC_EOK;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT 1 FROM zone_versions"
		" WHERE zone_id = ?1 AND version = ?2"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, from);
	int rc = rdb_step(stmt);
	*known = rc == RDB_ROW;
	ret = rc == RDB_ROW || rc == RDB_DONE ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* The first event of the first version after `from` (0: none). */
static int first_seq(records_store_t *store, int64_t zone_id, uint32_t from,
                     uint32_t to, int64_t *seq)
{
	rdb_stmt_t *stmt;
	/* Versions are serials (RFC 1982): a range across 2^32 is the
	 * versions above from and those up to to, each an index range. */
	int ret = rdb_prepare(store->db, from < to ? RDB_SQL(
		"SELECT min(seq) FROM zone_versions"
		" WHERE zone_id = ?1 AND version > ?2"
		" AND version <= ?3") : RDB_SQL(
		"SELECT min(seq) FROM zone_versions"
		" WHERE zone_id = ?1 AND (version > ?2"
		" OR version <= ?3)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, zone_id);
	rdb_bind_int64(stmt, 2, from);
	rdb_bind_int64(stmt, 3, to);
	int rc = rdb_step(stmt);
	*seq = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	ret = rc == RDB_ROW ? ZC_EOK : rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

static int read_events(records_store_t *store, int64_t zone_id,
                       const knot_dname_t *apex, int64_t seq, uint32_t from,
                       uint32_t to,
                       int (*cb)(const records_journal_rr_t *rr, void *ctx),
                       void *ctx)
{
	rdb_stmt_t *stmt;
	/* The events from the range's first on whose versions are serials
	 * after from and not after to (RFC 1982: across 2^32 too). */
	int ret = rdb_prepare(store->db, RDB_SQL(
		"SELECT version, kind, okey, type,"
		" ttl, rdata FROM changes WHERE seq >= ?1"
		" AND zone_id = ?2 AND ((version - ?4) & 4294967295)"
		" BETWEEN 1 AND ((?3 - ?4) & 4294967295)"
		" ORDER BY seq"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, seq);
	rdb_bind_int64(stmt, 2, zone_id);
	rdb_bind_int64(stmt, 3, to);
	rdb_bind_int64(stmt, 4, from);
	uint8_t lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(apex, lf);
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		int kind = (int)rdb_col_int64(stmt, 1);
		if (kind == RECORDS_CHANGE_ZONE_TOUCHED) {
			continue; /* A version without record changes. */
		}
		if (kind != RECORDS_CHANGE_RECORD_CREATED &&
		    kind != RECORDS_CHANGE_RECORD_DELETED) {
			ret = ZC_ENOJOURNAL;
			break;
		}
		size_t okey_len = rdb_col_bytes(stmt, 2);
		if (apex_len + okey_len > sizeof(lf)) {
			ret = ZC_EFORMAT;
			break;
		}
		if (okey_len > 0) {
			memcpy(lf + apex_len, rdb_col_blob(stmt, 2, NULL),
			       okey_len);
		}
		uint8_t owner[KNOT_DNAME_MAXLEN];
		if (dns_name_from_lf(lf, apex_len + okey_len, owner) < 0) {
			ret = ZC_EFORMAT;
			break;
		}
		const uint8_t *rdata = rdb_col_blob(stmt, 5, NULL);
		records_journal_rr_t rr = {
			.version = (uint32_t)rdb_col_int64(stmt, 0),
			.added = kind == RECORDS_CHANGE_RECORD_CREATED,
			.owner = owner,
			.type = (uint16_t)rdb_col_int64(stmt, 3),
			.ttl = (uint32_t)rdb_col_int64(stmt, 4),
			.rdata = rdata ? rdata : (const uint8_t *)"",
			.rdata_len = (uint16_t)rdb_col_bytes(stmt, 5),
		};
		if (rdb_col_is_null(stmt, 4)) {
			ret = ZC_ENOJOURNAL; /* Logged before the journal existed. */
			break;
		}
		ret = cb(&rr, ctx);
		if (ret != ZC_EOK) {
			break;
		}
	}
	if (ret == ZC_EOK && rc != RDB_ROW) {
		ret = rdb_status(rc);
	}
	rdb_done(stmt);
	return ret;
}

int records_changelog_journal(records_store_t *store, int64_t zone_id,
                              const knot_dname_t *apex, uint32_t serial,
                              uint32_t from, uint32_t to,
                              int (*cb)(const records_journal_rr_t *rr,
                                        void *ctx),
                              void *ctx)
{
	bool has = false;
	uint32_t start = 0;
	int64_t seq = 0;
	int ret = records_changelog_journal_start(store, zone_id, &has, &start);
	if (ret == ZC_EOK && (!has || serial_lt(from, start) ||
	                      serial_lt(serial, to))) {
		ret = ZC_ENOJOURNAL;
	}
	bool known = false;
	if (ret == ZC_EOK) {
		ret = version_known(store, zone_id, start, from, &known);
	}
	if (ret == ZC_EOK && !known) {
		ret = ZC_ENOJOURNAL; /* AXFR form (RFC 1995 §4). */
	}
	if (ret == ZC_EOK) {
		ret = first_seq(store, zone_id, from, to, &seq);
	}
	if (ret == ZC_EOK && seq > 0) {
		ret = read_events(store, zone_id, apex, seq, from, to, cb, ctx);
	}
	return ret;
}

/* --- Reading: status and metrics --- */

int records_backlog(records_store_t *store, uint64_t after,
                    records_backlog_t *out)
{
	*out = (records_backlog_t){ 0 };
	if (on_pg(store)) {
		return changelog_pg_backlog(store, after, out);
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQLITE_ONLY(
		"SELECT coalesce(max(seq), 0),"
		" (SELECT at FROM changes WHERE seq > ?1"
		"  ORDER BY seq LIMIT 1) FROM changes"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, (int64_t)after);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		out->last_seq = (uint64_t)rdb_col_int64(stmt, 0);
		out->events = out->last_seq > after ? out->last_seq - after : 0;
		if (!rdb_col_is_null(stmt, 1)) {
			out->oldest_ms = rdb_col_int64(stmt, 1);
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int records_zone_activity(records_store_t *store, uint64_t after,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx, uint64_t *last_seq)
{
	if (on_pg(store)) {
		return changelog_pg_activity(store, after, cb, ctx, last_seq);
	}
	rdb_stmt_t *stmt;
	int ret = rdb_begin_read(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The last sequence and the counts from one snapshot. */
	ret = records_last_seq(store, last_seq);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQLITE_ONLY(
			"SELECT zone_id, count(*) FROM"
			" changes WHERE seq > ?1 AND seq <= ?2"
			" GROUP BY zone_id"), &stmt);
	}
	if (ret != ZC_EOK) {
		rdb_end_read(store->db);
		return ret;
	}
	rdb_bind_int64(stmt, 1, (int64_t)after);
	rdb_bind_int64(stmt, 2, (int64_t)*last_seq);
	return records_activity_rows(store, stmt, cb, ctx);
}

/* --- Trimming --- */

int records_journal_trim(records_store_t *store, int64_t before_ms,
                         uint64_t max_seq, uint64_t *removed)
{
	*removed = 0;
	if (on_pg(store)) {
		return changelog_pg_trim(store, before_ms, max_seq, removed);
	}
	/* A transaction of its own, not a unit's (txn.c): between two
	 * units' transactions nothing of theirs is pending. */
	int ret = rdb_begin_write(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_stmt_t *stmt;
	/* Never the newest event: sequences are max(seq) + 1 (no
	 * AUTOINCREMENT), so the newest row keeps them from going back. */
	ret = rdb_prepare(store->db, RDB_SQLITE_ONLY(
		"SELECT max(seq), count(*) FROM changes WHERE seq <= min(?1,"
		" (SELECT min(seq) FROM changes) + 100000,"
		" (SELECT max(seq) FROM changes) - 1) AND at < ?2"), &stmt);
	int64_t last = 0;
	if (ret == ZC_EOK) {
		rdb_bind_int64(stmt, 1, (int64_t)max_seq);
		rdb_bind_int64(stmt, 2, before_ms);
		int rc = rdb_step(stmt);
		if (rc == RDB_ROW) {
			last = rdb_col_int64(stmt, 0);
			*removed = (uint64_t)rdb_col_int64(stmt, 1);
		} else {
			ret = rdb_status(rc);
		}
		rdb_done(stmt);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = records_exec_int64(store, RDB_SQL(
			"UPDATE zones SET ixfr_from = t.v FROM"
			" (SELECT zone_id, max(version) AS v FROM changes"
			" WHERE seq <= ?1 GROUP BY zone_id) AS t"
			" WHERE zones.id = t.zone_id AND (zones.ixfr_from"
			" IS NULL OR t.v > zones.ixfr_from)"), last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = records_exec_int64(store, RDB_SQL("DELETE FROM zone_versions"
		                              " WHERE seq <= ?1"), last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = records_exec_int64(store, RDB_SQL("DELETE FROM changes"
		                              " WHERE seq <= ?1"), last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = records_trimmed_mark(store, (uint64_t)last);
	}
	if (ret != ZC_EOK) {
		*removed = 0;
	}
	return records_trim_end(store, ret);
}

int records_trimmed_seq(records_store_t *store, uint64_t *seq)
{
	int64_t v;
	int ret = rdb_query_int64(store->db, RDB_SQL(
		"SELECT value FROM counters WHERE name = 'trimmed_seq'"), &v);
	*seq = (uint64_t)v;
	return ret;
}
