/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The change log read as an IXFR journal, and its trimming.
 *
 * Record events carry the record (owner key, type, TTL, rdata), so the
 * changes between two versions of a zone are the record events logged in
 * between. zone_versions maps (zone, version) to the version's first
 * event, so reading a zone's journal does not scan other zones' history
 * further back than needed. zones.ixfr_from is the oldest serial the
 * journal can start from: set at every zone-wide change (an import or a
 * settings change cannot be expressed as record differences) and moved on
 * when old events are trimmed.
 */
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/sqlite.h"

/* RFC 1982: a < b. */
static bool serial_lt(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(b - a) > 0;
}

/* Reads the zone's journal start (false: none). */
static int journal_start(records_store_t *store, int64_t zone_id,
                         bool *has, uint32_t *from)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT ixfr_from FROM zones"
	                              " WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	int rc = sqlite3_step(stmt);
	*has = rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL;
	*from = *has ? (uint32_t)sqlite3_column_int64(stmt, 0) : 0;
	ret = rc == SQLITE_ROW ? ZC_EOK : rc == SQLITE_DONE ? ZC_ENOZONE :
	      records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

/* The first event of the first version after `from` (0: none). */
static int first_seq(records_store_t *store, int64_t zone_id, uint32_t from,
                     uint32_t to, int64_t *seq)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT min(seq) FROM zone_versions"
	                              " WHERE zone_id = ?1 AND version > ?2"
	                              " AND version <= ?3", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, zone_id);
	sqlite3_bind_int64(stmt, 2, from);
	sqlite3_bind_int64(stmt, 3, to);
	int rc = sqlite3_step(stmt);
	*seq = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
	ret = rc == SQLITE_ROW ? ZC_EOK : records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	return ret;
}

static int read_events(records_store_t *store, const records_zone_t *zone,
                       int64_t seq, uint32_t to,
                       int (*cb)(const records_journal_rr_t *rr, void *ctx),
                       void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, "SELECT version, kind, okey, type,"
	                              " ttl, rdata FROM changes WHERE seq >= ?1"
	                              " AND zone_id = ?2 AND version <= ?3"
	                              " ORDER BY seq", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, seq);
	sqlite3_bind_int64(stmt, 2, zone->id);
	sqlite3_bind_int64(stmt, 3, to);
	uint8_t lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(zone->apex, lf);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		int kind = sqlite3_column_int(stmt, 1);
		if (kind == RECORDS_CHANGE_ZONE_TOUCHED) {
			continue; /* A version without record changes. */
		}
		if (kind != RECORDS_CHANGE_RECORD_CREATED &&
		    kind != RECORDS_CHANGE_RECORD_DELETED) {
			ret = ZC_ENOJOURNAL;
			break;
		}
		size_t okey_len = (size_t)sqlite3_column_bytes(stmt, 2);
		if (apex_len + okey_len > sizeof(lf)) {
			ret = ZC_EFORMAT;
			break;
		}
		if (okey_len > 0) {
			memcpy(lf + apex_len, sqlite3_column_blob(stmt, 2), okey_len);
		}
		uint8_t owner[KNOT_DNAME_MAXLEN];
		if (dns_name_from_lf(lf, apex_len + okey_len, owner) < 0) {
			ret = ZC_EFORMAT;
			break;
		}
		const uint8_t *rdata = sqlite3_column_blob(stmt, 5);
		records_journal_rr_t rr = {
			.version = (uint32_t)sqlite3_column_int64(stmt, 0),
			.added = kind == RECORDS_CHANGE_RECORD_CREATED,
			.owner = owner,
			.type = (uint16_t)sqlite3_column_int(stmt, 3),
			.ttl = (uint32_t)sqlite3_column_int64(stmt, 4),
			.rdata = rdata ? rdata : (const uint8_t *)"",
			.rdata_len = (uint16_t)sqlite3_column_bytes(stmt, 5),
		};
		if (sqlite3_column_type(stmt, 4) == SQLITE_NULL) {
			ret = ZC_ENOJOURNAL; /* Logged before the journal existed. */
			break;
		}
		ret = cb(&rr, ctx);
		if (ret != ZC_EOK) {
			break;
		}
	}
	if (ret == ZC_EOK && rc != SQLITE_ROW) {
		ret = records_sql_error(store->db, rc);
	}
	records_sql_done(store, stmt);
	return ret;
}

int records_journal_read(records_store_t *store, const knot_dname_t *apex,
                         uint32_t from, uint32_t to,
                         int (*cb)(const records_journal_rr_t *rr, void *ctx),
                         void *ctx)
{
	int ret = records_read_begin(store);
	if (ret != ZC_EOK) {
		return ret;
	}
	records_zone_t zone;
	bool has = false;
	uint32_t start = 0;
	int64_t seq = 0;
	ret = records_zone_find(store, apex, &zone);
	if (ret == ZC_EOK) {
		ret = journal_start(store, zone.id, &has, &start);
	}
	if (ret == ZC_EOK && (!has || serial_lt(from, start) ||
	                      serial_lt(zone.serial, to))) {
		ret = ZC_ENOJOURNAL;
	}
	if (ret == ZC_EOK) {
		ret = first_seq(store, zone.id, from, to, &seq);
	}
	if (ret == ZC_EOK && seq > 0) {
		ret = read_events(store, &zone, seq, to, cb, ctx);
	}
	records_read_end(store);
	return ret;
}

/* Runs one statement binding ?1 = x. */
static int exec_seq(records_store_t *store, const char *sql, int64_t x)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(store, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, x);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	return ret;
}

int records_journal_trim(records_store_t *store, int64_t before_ms,
                         uint64_t max_seq, uint64_t *removed)
{
	*removed = 0;
	int ret = records_write_begin(store);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_stmt *stmt;
	/* Never the newest event: sequences are max(seq) + 1 (no
	 * AUTOINCREMENT), so the newest row keeps them from going back. */
	ret = records_sql_prepare(store, "SELECT max(seq), count(*) FROM changes"
	                          " WHERE seq <= min(?1, (SELECT min(seq) FROM"
	                          " changes) + 100000, (SELECT max(seq) FROM"
	                          " changes) - 1) AND at < ?2", &stmt);
	int64_t last = 0;
	if (ret == ZC_EOK) {
		sqlite3_bind_int64(stmt, 1, (int64_t)max_seq);
		sqlite3_bind_int64(stmt, 2, before_ms);
		int rc = sqlite3_step(stmt);
		if (rc == SQLITE_ROW) {
			last = sqlite3_column_int64(stmt, 0);
			*removed = (uint64_t)sqlite3_column_int64(stmt, 1);
		} else {
			ret = records_sql_error(store->db, rc);
		}
		records_sql_done(store, stmt);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = exec_seq(store, "UPDATE zones SET ixfr_from = t.v FROM"
		               " (SELECT zone_id, max(version) AS v FROM changes"
		               " WHERE seq <= ?1 GROUP BY zone_id) AS t"
		               " WHERE zones.id = t.zone_id AND (zones.ixfr_from"
		               " IS NULL OR t.v > zones.ixfr_from)", last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = exec_seq(store, "DELETE FROM zone_versions WHERE seq <= ?1",
		               last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = exec_seq(store, "DELETE FROM changes WHERE seq <= ?1", last);
	}
	if (ret != ZC_EOK) {
		records_write_rollback(store);
		*removed = 0;
		return ret;
	}
	return records_write_commit(store);
}

int records_zone_set_serial_policy(records_store_t *store,
                                   records_zone_t *zone,
                                   records_serial_policy_t policy)
{
	sqlite3_stmt *stmt;
	records_zrow_forget(store);
	int ret = records_sql_prepare(store, "UPDATE zones SET serial_policy = ?"
	                              " WHERE id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int(stmt, 1, policy);
	sqlite3_bind_int64(stmt, 2, zone->id);
	ret = records_sql_error(store->db, sqlite3_step(stmt));
	records_sql_done(store, stmt);
	if (ret == ZC_EOK) {
		zone->serial_policy = policy;
	}
	return ret;
}
