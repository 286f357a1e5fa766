/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Schema migrations of the records store, on both engines.
 *
 * SQLite runs steps 1 to the last, each its own text, and keeps the
 * applied version in PRAGMA user_version; all pending steps run in one
 * transaction. PostgreSQL starts at a baseline equal to version 11
 * (schema_pg.sql) and runs the steps after it, from 12 on, each of which
 * gives a text for each engine (docs/design-postgresql.md §1.2): also in
 * one transaction (DDL is transactional there), under an advisory lock so
 * that nodes starting together migrate once, with the version in
 * schema_version. A database newer than this program is refused
 * (ZC_ESCHEMA) on both.
 *
 * This is the one file of records/ besides db_sqlite.c that names SQLite
 * (the SQL function of migration 8 through db_sqlite.h).
 */
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "records/db_sqlite.h"
#include "records/internal.h"
#include "records/schema_pg_seal.h"
#ifdef ZC_HAVE_LIBPQ
#include "records/schema_pg_sql.h"
#endif

static const char *const sqlite_steps[] = {
	/* 1: zones, records, change log. */
	"CREATE TABLE zones ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  name TEXT NOT NULL UNIQUE,"
	"  apex BLOB NOT NULL UNIQUE,"
	"  serial INTEGER NOT NULL,"
	"  default_ttl INTEGER NOT NULL DEFAULT 3600,"
	"  settings TEXT NOT NULL DEFAULT '{}',"
	"  created_on INTEGER NOT NULL,"
	"  modified_on INTEGER NOT NULL);"
	"CREATE TABLE records ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,"
	"  okey BLOB NOT NULL,"
	"  owner BLOB NOT NULL,"
	"  type INTEGER NOT NULL,"
	"  ttl INTEGER NOT NULL,"
	"  rdata BLOB NOT NULL,"
	"  comment TEXT,"
	"  created_on INTEGER NOT NULL,"
	"  modified_on INTEGER NOT NULL);"
	"CREATE INDEX records_node ON records(zone_id, okey, type);"
	"CREATE TABLE changes ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  zone_id INTEGER NOT NULL,"
	"  apex BLOB NOT NULL,"
	"  version INTEGER NOT NULL,"
	"  kind INTEGER NOT NULL,"
	"  owner BLOB,"
	"  type INTEGER,"
	"  record_id INTEGER,"
	"  at INTEGER NOT NULL);"
	"CREATE INDEX changes_zone ON changes(zone_id, seq);",
	/* 2: record events name their node; API tokens. */
	"ALTER TABLE changes ADD COLUMN okey BLOB;"
	"CREATE TABLE tokens ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  hash BLOB NOT NULL UNIQUE,"
	"  read_only INTEGER NOT NULL,"
	"  zone_id INTEGER REFERENCES zones(id) ON DELETE CASCADE,"
	"  created_on INTEGER NOT NULL);",
	/* 3: no per-zone index on the log yet: nothing reads by it, and
	 * each commit paid a page write to keep it. */
	"DROP INDEX changes_zone;",
	/* 4: the log as IXFR journal (record events carry TTL and rdata;
	 * each unit's first event is indexed by zone and version; ixfr_from
	 * is the oldest serial IXFR can start from), serial policy, TSIG. */
	"ALTER TABLE changes ADD COLUMN ttl INTEGER;"
	"ALTER TABLE changes ADD COLUMN rdata BLOB;"
	"CREATE TABLE zone_versions ("
	"  zone_id INTEGER NOT NULL,"
	"  version INTEGER NOT NULL,"
	"  seq INTEGER NOT NULL,"
	"  PRIMARY KEY (zone_id, version)) WITHOUT ROWID;"
	"ALTER TABLE zones ADD COLUMN ixfr_from INTEGER;"
	"ALTER TABLE zones ADD COLUMN serial_policy INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE tsig_keys ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  name BLOB NOT NULL UNIQUE,"
	"  algorithm TEXT NOT NULL,"
	"  secret BLOB NOT NULL,"
	"  zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,"
	"  grants TEXT NOT NULL DEFAULT '',"
	"  transfer INTEGER NOT NULL DEFAULT 1,"
	"  created_on INTEGER NOT NULL);",
	/* 5: no AUTOINCREMENT on records and changes: its sqlite_sequence
	 * update cost a fifth of every write (callgrind: 200M -> 155M
	 * instructions for 5,000 batch posts). Record ids come from
	 * counters.record_id (high-water mark kept per transaction, so an
	 * id is never reused); change sequences stay monotonic because the
	 * journal trim never deletes the newest event. */
	"CREATE TABLE counters ("
	"  name TEXT PRIMARY KEY,"
	"  value INTEGER NOT NULL) WITHOUT ROWID;"
	"INSERT INTO counters VALUES ('record_id', max("
	"  coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0),"
	"  coalesce((SELECT max(id) FROM records), 0)));"
	"CREATE TABLE records_v5 ("
	"  id INTEGER PRIMARY KEY,"
	"  zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,"
	"  okey BLOB NOT NULL,"
	"  owner BLOB NOT NULL,"
	"  type INTEGER NOT NULL,"
	"  ttl INTEGER NOT NULL,"
	"  rdata BLOB NOT NULL,"
	"  comment TEXT,"
	"  created_on INTEGER NOT NULL,"
	"  modified_on INTEGER NOT NULL);"
	"INSERT INTO records_v5 SELECT id, zone_id, okey, owner, type, ttl, rdata,"
	"  comment, created_on, modified_on FROM records ORDER BY zone_id, okey,"
	"  type, id;"
	"DROP TABLE records;"
	"ALTER TABLE records_v5 RENAME TO records;"
	"CREATE INDEX records_node ON records(zone_id, okey, type);"
	"CREATE TABLE changes_v5 ("
	"  seq INTEGER PRIMARY KEY,"
	"  zone_id INTEGER NOT NULL,"
	"  apex BLOB NOT NULL,"
	"  version INTEGER NOT NULL,"
	"  kind INTEGER NOT NULL,"
	"  owner BLOB,"
	"  type INTEGER,"
	"  record_id INTEGER,"
	"  at INTEGER NOT NULL,"
	"  okey BLOB,"
	"  ttl INTEGER,"
	"  rdata BLOB);"
	"INSERT INTO changes_v5 SELECT seq, zone_id, apex, version, kind, owner,"
	"  type, record_id, at, okey, ttl, rdata FROM changes;"
	"DROP TABLE changes;"
	"ALTER TABLE changes_v5 RENAME TO changes;",
	/* 6: DNSSEC signing keys (private, PKCS#8 PEM). */
	"CREATE TABLE dnssec_keys ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,"
	"  flags INTEGER NOT NULL,"
	"  algorithm INTEGER NOT NULL,"
	"  pem BLOB NOT NULL,"
	"  active INTEGER NOT NULL DEFAULT 1,"
	"  created_on INTEGER NOT NULL);"
	"CREATE INDEX dnssec_keys_zone ON dnssec_keys(zone_id);",
	/* 7: each zone's record count, kept by every insert and delete, so
	 * the zone-max-records bound costs one row update, not a count. */
	"ALTER TABLE zones ADD COLUMN record_count INTEGER NOT NULL DEFAULT 0;"
	"UPDATE zones SET record_count = (SELECT count(*) FROM records"
	"  WHERE records.zone_id = zones.id);",
	/* 8: owner keys escape the octets 0x00 and 0x01 (dns/name.h), so
	 * that every name has a key of its own: records' keys are computed
	 * again from their owners (zc_okey below). Journal events keep only
	 * the key, and an old key of a name holding a 0x00 octet reads as
	 * another name, so IXFR restarts at every zone's current serial
	 * (a secondary behind it takes one AXFR). */
	"UPDATE records SET okey = zc_okey(owner, (SELECT apex FROM zones"
	"  WHERE zones.id = records.zone_id))"
	"  WHERE instr(owner, x'00') < length(owner)"
	"     OR instr(owner, x'01') > 0;"
	"UPDATE zones SET ixfr_from = serial;",
	/* 9: per-zone secondaries (notify targets, allow-transfer entries,
	 * as text); counters.secondaries moves at each change so that the
	 * notifier reloads them. */
	"CREATE TABLE zone_secondaries ("
	"  zone_id INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,"
	"  kind INTEGER NOT NULL,"
	"  position INTEGER NOT NULL,"
	"  spec TEXT NOT NULL,"
	"  PRIMARY KEY (zone_id, kind, position)) WITHOUT ROWID;"
	"INSERT INTO counters VALUES ('secondaries', 0);",
	/* 10: the HTTP API as Cloudflare's. A record keeps the form its API
	 * content was written in (api_form 1: TXT as plain text, not quoted
	 * strings) and its tags (a JSON array of "name:value" strings); the
	 * (zone_id, type, okey) index serves listings by type without a walk
	 * of the zone. Tokens get a name, an expiry and a revocation time. */
	"ALTER TABLE records ADD COLUMN api_form INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE records ADD COLUMN tags TEXT;"
	"CREATE INDEX records_type ON records(zone_id, type, okey);"
	"ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE tokens ADD COLUMN expires_on INTEGER;"
	"ALTER TABLE tokens ADD COLUMN revoked_on INTEGER;"
	"ALTER TABLE tokens ADD COLUMN modified_on INTEGER;",
	/* 11: when each DNSSEC key began and stopped signing (Unix ms, NULL:
	 * not yet), so that rollover steps can wait as the TTLs require
	 * (signer/timing.c). A key active now has signed since it was made. */
	"ALTER TABLE dnssec_keys ADD COLUMN active_on INTEGER;"
	"ALTER TABLE dnssec_keys ADD COLUMN retired_on INTEGER;"
	"UPDATE dnssec_keys SET active_on = created_on WHERE active = 1;",
};

/* The PostgreSQL baseline (schema_pg.sql) equals this version. */
#define PG_BASELINE 11

/* The steps after the baseline, a text for each engine; step
 * PG_BASELINE + 1 + i is later[i]. */
typedef struct {
	const char *sqlite;
	const char *pg;
} step_t;

static const step_t later[] = {
	/* 12: the last serial of each deleted zone, by apex, so that a zone
	 * made again under the name never goes back to a serial its
	 * secondaries hold (records_zone_create(), import.c); filled from
	 * the change log's ZONE_DELETED events (kind 2), the last per apex.
	 * PostgreSQL drops the records' foreign key to zones: its check
	 * cost a lookup of the zone row per record written, and every writer
	 * of a zone's records holds that row's lock already, which a zone's
	 * delete takes too; records_zone_remove() deletes the records
	 * itself (SQLite's cascade then finds none). */
	{
		"CREATE TABLE zone_tombstones ("
		"  apex BLOB PRIMARY KEY,"
		"  serial INTEGER NOT NULL,"
		"  deleted_on INTEGER NOT NULL) WITHOUT ROWID;"
		"INSERT INTO zone_tombstones SELECT apex, version, at FROM"
		"  (SELECT apex, version, at, max(seq) FROM changes"
		"   WHERE kind = 2 GROUP BY apex);",
		"CREATE TABLE zone_tombstones ("
		"  apex bytea PRIMARY KEY,"
		"  serial bigint NOT NULL,"
		"  deleted_on bigint NOT NULL);"
		"INSERT INTO zone_tombstones SELECT DISTINCT ON (apex)"
		"  apex, version, at FROM changes WHERE kind = 2"
		"  ORDER BY apex, seq DESC;"
		"ALTER TABLE records DROP CONSTRAINT records_zone_id_fkey;",
	},
	/* 13: PostgreSQL's changes_seal queued once per transaction, not
	 * once per event (schema_pg_seal.h). Nothing on SQLite. */
	{
		"",
		RECORDS_PG_SEAL_ONCE_SQL,
	},
};

#define SQLITE_STEPS (int)(sizeof(sqlite_steps) / sizeof(sqlite_steps[0]))
#define LATER_STEPS (int)(sizeof(later) / sizeof(later[0]))
#define SCHEMA_VERSION (PG_BASELINE + LATER_STEPS)
_Static_assert(SQLITE_STEPS == PG_BASELINE,
               "SQLite's own steps end at the PostgreSQL baseline");

/* Step version's text for an engine (version from 1). */
static const char *step_text(int version, bool pg)
{
	if (version <= PG_BASELINE) {
		return pg ? NULL : sqlite_steps[version - 1];
	}
	const step_t *s = &later[version - PG_BASELINE - 1];
	return pg ? s->pg : s->sqlite;
}

static int user_version(records_store_t *store, int *version)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQLITE_ONLY("PRAGMA user_version"),
	                      &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = rdb_step(stmt);
	*version = (rc == RDB_ROW) ? (int)rdb_col_int64(stmt, 0) : 0;
	rdb_done(stmt);
	return rdb_status(rc);
}

/*
 * zc_okey(owner, apex): the owner's key relative to the apex (records
 * keys, dns/name.h), for migrations that compute keys again. NULL when an
 * argument is no wire name or the owner is not under the apex.
 */
static void sql_okey(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	const uint8_t *name[2];
	for (int i = 0; i < 2; i++) {
		int len = sqlite3_value_bytes(argv[i]);
		name[i] = sqlite3_value_blob(argv[i]);
		if (name[i] == NULL || len < 1 || len > KNOT_DNAME_MAXLEN ||
		    knot_dname_wire_check(name[i], name[i] + len, NULL) != len) {
			sqlite3_result_null(ctx);
			return;
		}
	}
	uint8_t lf[DNS_LF_MAXLEN], apex_lf[DNS_LF_MAXLEN];
	size_t len = dns_name_to_lf(name[0], lf);
	size_t apex_len = dns_name_to_lf(name[1], apex_lf);
	if (len < apex_len || memcmp(lf, apex_lf, apex_len) != 0) {
		sqlite3_result_null(ctx);
		return;
	}
	sqlite3_result_blob(ctx, lf + apex_len, (int)(len - apex_len),
	                    SQLITE_TRANSIENT);
}

#ifdef ZC_HAVE_LIBPQ
/* The lock under which a PostgreSQL store's schema is loaded or moved on
 * (a session lock: taken before the transaction begins, because a
 * transaction begun while another changed the schema would keep seeing
 * the old catalog; PostgreSQL reads its catalog caches' invalidations at
 * a transaction's start). */
#define PG_SCHEMA_LOCK "2053206898"

/* The baseline into an empty database and the steps after it, in one
 * transaction under the schema lock; *version receives the version
 * found. */
static int pg_upgrade(records_store_t *store, int64_t *version)
{
	int ret = rdb_exec(store->db,
	                   "SELECT pg_advisory_lock(" PG_SCHEMA_LOCK ")");
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t present = 0;
	ret = rdb_begin_write(store->db);
	if (ret == ZC_EOK) {
		ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
			"SELECT to_regclass('schema_version') IS NOT NULL"),
			&present);
	}
	if (ret == ZC_EOK && !present) {
		ret = rdb_exec(store->db, RECORDS_SCHEMA_PG_SQL);
	}
	if (ret == ZC_EOK) {
		/* The row locked too: migrators stay in turn even if the
		 * session lock went with a connection made again. */
		ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
			"SELECT version FROM schema_version FOR UPDATE"),
			version);
	}
	int64_t v = *version;
	for (; ret == ZC_EOK && v >= PG_BASELINE && v < SCHEMA_VERSION; v++) {
		zc_info("records store: schema %d to %d", (int)v, (int)v + 1);
		ret = rdb_exec(store->db, step_text((int)v + 1, true));
	}
	if (ret == ZC_EOK && v != *version) {
		char sql[64];
		snprintf(sql, sizeof(sql),
		         "UPDATE schema_version SET version = %d", (int)v);
		ret = rdb_exec(store->db, sql);
	}
	if (ret == ZC_EOK) {
		ret = rdb_commit(store->db);
	} else {
		rdb_rollback(store->db);
	}
	if (ret == ZC_EOK) {
		*version = v;
	}
	rdb_exec(store->db, "SELECT pg_advisory_unlock(" PG_SCHEMA_LOCK ")");
	return ret;
}

/* PostgreSQL: every open of a store (each node's pools, each status
 * request) reads the version without the lock; only a store that is
 * empty or older than this program takes it. */
static int pg_migrate(records_store_t *store)
{
	int64_t present = 0, version = 0;
	int ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
		"SELECT to_regclass('schema_version') IS NOT NULL"), &present);
	if (ret == ZC_EOK && present) {
		ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
			"SELECT version FROM schema_version"), &version);
	}
	if (ret == ZC_EOK && (!present || version < SCHEMA_VERSION)) {
		ret = pg_upgrade(store, &version);
	}
	if (ret == ZC_EOK && version != SCHEMA_VERSION) {
		zc_error("records store has schema %d, this zonecast knows %d",
		         (int)version, SCHEMA_VERSION);
		ret = ZC_ESCHEMA;
	}
	return ret;
}
#endif

int records_schema_migrate(records_store_t *store)
{
	sqlite3 *conn = rdb_sqlite_handle(store->db);
	if (conn == NULL) {
#ifdef ZC_HAVE_LIBPQ
		return pg_migrate(store);
#else
		return KNOT_ENOTSUP;
#endif
	}
	int rc = sqlite3_create_function(conn, "zc_okey", 2,
	                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC,
	                                 NULL, sql_okey, NULL, NULL);
	if (rc != SQLITE_OK) {
		return rdb_sqlite_error(store->db, rc);
	}
	/* A store already at this schema (every open but a new store's or
	 * an upgrade's) has nothing to write: no write lock to wait for (an
	 * API read opening a connection of the pool waited for a large
	 * import's transaction: outside tester 42). */
	int version;
	int ret = user_version(store, &version);
	if (ret == ZC_EOK && version == SCHEMA_VERSION) {
		return ZC_EOK;
	}
	ret = rdb_begin_write(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = user_version(store, &version);
	if (ret == ZC_EOK && version > SCHEMA_VERSION) {
		zc_error("records store has schema %d, this zonecast knows %d",
		         version, SCHEMA_VERSION);
		ret = ZC_ESCHEMA;
	}
	for (; ret == ZC_EOK && version < SCHEMA_VERSION; version++) {
		ret = rdb_exec(store->db, step_text(version + 1, false));
		if (ret == ZC_EOK) {
			char sql[64];
			snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
			         version + 1);
			ret = rdb_exec(store->db, sql);
		}
	}
	if (ret != ZC_EOK) {
		rdb_rollback(store->db);
		return ret;
	}
	return rdb_commit(store->db);
}
