/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Records store: the source of truth (SQLite in WAL mode; PostgreSQL
 * next, behind the same driver interface, db.h).
 *
 * Design
 *
 * Tables (schema.c holds the migrations):
 *
 *   zones    id, name (text, lowercase, trailing dot), apex (wire), serial,
 *            default_ttl, settings, created_on, modified_on
 *   records  id (stable, never reused), zone_id, okey (LF of the owner
 *            relative to the apex, see dns/name.h), owner (wire), type,
 *            ttl, rdata (wire, uncompressed), comment, created_on,
 *            modified_on, and the API's api_form and tags; indexed by
 *            (zone_id, okey, type) and, for listings by type, by
 *            (zone_id, type, okey)
 *   tokens   API bearer tokens by SHA-256 hash, with scope, name, expiry
 *            and revocation (tokens.c)
 *   changes  the change log (outbox) and its index zone_versions, with
 *            zones.ixfr_from: changelog.h (the only file touching them
 *            is changelog.c)
 *   and tsig_keys, dnssec_keys, zone_secondaries, counters.
 *
 * Every write transaction appends its change events to the change log in
 * the same SQLite transaction, so an acknowledged change is never missing
 * from the log. Commits use synchronous=FULL: committed means on disk.
 *
 * Builds read records in (okey, type) order, which is the edge store's key
 * order, so a full build is a streaming merge of two sorted sequences.
 *
 * A records_store_t is one database connection: use one per thread.
 *
 * Files. Each .c file calls only files of lower layers (in records/;
 * `dev/module_graph --layers src/records` prints this and fails on a
 * cycle):
 *
 *   7  import.c      bulk import        changelog, rows, rules, zones,
 *                                       db, db_copy
 *   7  query.c       lookups, listings  rows, zones, db
 *   7  scan.c        snapshot reads     changelog, zones, db
 *   7  txn.c         write txns,        changelog, counts, rows, zones,
 *                    savepoints         db
 *   6  zones.c       zone operations,   changelog, rows, db
 *                    zone row locks
 *   5  rows.c        record rows, ids   changelog, counts, db
 *   5  leader.c      the fleet's leader changelog_pg, listen, store
 *   4  changelog.c   the change log     changelog_pg, changelog_rows, db
 *   4  pool.c, listen.c                 store
 *   4  db_pg_copy.c  PostgreSQL's COPY  db_pg, db_pg_wire
 *   3  changelog_pg.c  the log by commit position (PostgreSQL)
 *                                       changelog_rows, nodes, db
 *   3  store.c       open, close        schema, redact, db
 *   3  tsig_create.c TSIG keys made     tsig_keys
 *   3  db_pg.c       libpq's driver     db_pg_pipe, db_pg_wire
 *   3  migrate.c     a store copied     db, db_copy
 *                    into another
 *   2  changelog_rows.c  what both log readers share                db
 *   2  counts.c      records per zone   db
 *   2  db_copy.c     bulk loads (COPY,  db
 *                    else INSERTs)
 *   2  db_pg_pipe.c  statements queued  db_pg_wire
 *                    (pipeline mode)
 *   2  schema.c      migrations         db, db_sqlite
 *   2  tokens.c, tsig_keys.c, dnssec_keys.c, secondaries.c,
 *      nodes.c                                                      db
 *   1  db.c          the driver: picks one by target, dispatches to it
 *   1  db_pg_wire.c  libpq results, SQLSTATEs, parameters
 *   1  db_sqlite.c   the SQLite driver (the only file calling SQLite,
 *                    with schema.c's SQL function)
 *   1  redact.c, rules.c                zone-content rules, URIs shown
 *
 * Headers: records.h (this contract) includes changelog.h (the change
 * log's interface, free of SQLite); internal ones are db.h (the
 * engine-neutral driver: statements, transactions, savepoints; the SQL
 * text is shared, with RDB_SQL2 where the dialects differ), store.h (the
 * connection struct, which names the file owning each field) and
 * internal.h (what the files above call of each other).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <libknot/dname.h>

#include "dns/name.h"
#include "records/changelog.h"

typedef struct records_store records_store_t;

/* How a zone's serial moves at each change. */
typedef enum {
	RECORDS_SERIAL_INCREMENT = 0,  /* serial + 1 */
	RECORDS_SERIAL_UNIXTIME = 1,   /* now, or serial + 1 if not newer */
} records_serial_policy_t;

typedef struct {
	int64_t id;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint32_t serial;
	uint32_t default_ttl;
	int64_t created_on;  /* Unix milliseconds. */
	int64_t modified_on;
	int64_t record_count;
	records_serial_policy_t serial_policy;
} records_zone_t;

/* One stored record, borrowed from a scan until its next step. */
typedef struct {
	int64_t id;
	const uint8_t *okey;
	size_t okey_len;
	const uint8_t *owner;
	uint16_t type;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
} records_row_t;

/* A record as callers see it; pointers are borrowed (see each call). */
/* api_form's bit for a record written through the API with Cloudflare's
 * TTL 1, "automatic": stored with the zone's default TTL, shown as 1 (so
 * a client that wrote 1 reads 1 back). A write that gives the record's
 * RRset a TTL of its own (RFC 2181 §5.2) clears it. */
#define RECORDS_API_TTL_AUTO 0x02

typedef struct {
	int64_t id;
	int64_t zone_id;
	const uint8_t *owner;  /* Wire, lowercase. */
	uint16_t type;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
	const char *comment;   /* NULL: none. */
	const char *tags;      /* The API's tags, a JSON array; NULL: none. */
	uint8_t api_form;      /* How the API renders the content (api/),
	                        * and RECORDS_API_TTL_AUTO. */
	int64_t created_on;    /* Unix milliseconds. */
	int64_t modified_on;
} records_record_t;

/*
 * Opens a records store: target is a data directory (its records.db,
 * SQLite, created as needed) or a PostgreSQL connection URI
 * ("postgresql://..." or "postgres://...", docs/postgresql.md), whose
 * empty database gets the schema. Migrations are applied as needed.
 * Returns ZC_ESCHEMA for a store newer than this program,
 * ZC_EUNAVAILABLE when PostgreSQL cannot be reached.
 */
int records_open(records_store_t **out, const char *target);

/* Sets a store opened for reads only (the API's pool) to hold little of
 * the database in its own memory: on SQLite an 8 MiB page cache instead
 * of 64 (each of the 16 API connections filled its cache with what its
 * requests read: listing a 300,000-record zone on all of them took the
 * server from 34 MB to 772 MB); the kernel's page cache, shared, holds
 * the rest. Nothing on PostgreSQL. */
int records_tune_for_reads(records_store_t *store);

/* Is target a PostgreSQL connection URI (records_open())? */
bool records_target_is_pg(const char *target);

/*
 * A data directory whose records live in PostgreSQL names them in
 * DIR/records-store (the URI, mode 0600): records_open(DIR) then opens
 * that store, so every command given the data directory finds it, and
 * the directory's edge store is never filled from another store.
 * records_bind() writes it (serve's records-store, --records); it refuses
 * a different URI than the one bound, or a directory that already has an
 * SQLite records.db. records_bound_target() reads it: 1 and the URI when
 * bound, ZC_EOK (0) when not.
 */
#define RECORDS_STORE_FILE "records-store"

/*
 * Commits of other processes (listen.c). records_listen_open() gives a
 * listener whose descriptor turns readable at each commit to the change
 * log by any node (PostgreSQL: LISTEN on its own connection), or NULL
 * with ZC_EOK when the store has no such signal (SQLite); ZC_EUNAVAILABLE
 * when PostgreSQL cannot be reached (try again later).
 * records_listen_drain() consumes what arrived: the number of commits
 * heard, or ZC_EUNAVAILABLE when the connection is lost (close and open
 * again).
 */
typedef struct records_listen records_listen_t;
int records_listen_open(const char *target, records_listen_t **out);
int records_listen_fd(const records_listen_t *l);
int records_listen_drain(records_listen_t *l);
void records_listen_close(records_listen_t *l);

/*
 * The fleet's leadership (leader.c): one node sharing a PostgreSQL store
 * at a time publishes to the fleet, and each leader has a term (a number
 * that only grows) that fences older leaders. records_leader_new() gives
 * NULL with ZC_EOK for an SQLite store (serve.lock makes one node).
 * records_leader_take() blocks until this node leads (ZC_EOK, *term) or
 * *stop (ZC_EBUSY); records_leader_held() says whether it still does
 * (cheap; false once a heartbeat failed or none succeeded lately: stop
 * acting as leader, then drop); records_leader_confirm() asks PostgreSQL,
 * on the session holding the lock, whether this node still leads with the
 * newest term now (ZC_EOK; ZC_EFENCED when a newer term exists,
 * ZC_EUNAVAILABLE when it cannot tell: either way no longer held());
 * records_leader_head() reads, on that session, the change log's newest
 * position now (records_last_seq(): everything committed before the call
 * is at or before it), so a new leader knows what its build must reach
 * before it publishes (ZC_EUNAVAILABLE when not held or unanswered);
 * records_leader_drop() gives it up.
 */
typedef struct records_leader records_leader_t;
int records_leader_new(const char *target, const char *node,
                       records_leader_t **out);
int records_leader_take(records_leader_t *l, const _Atomic bool *stop,
                        uint64_t *term);
bool records_leader_held(records_leader_t *l);
int records_leader_confirm(records_leader_t *l);
int records_leader_head(records_leader_t *l, uint64_t *pos);
void records_leader_drop(records_leader_t *l);
void records_leader_free(records_leader_t *l);
int records_bind(const char *dir, const char *uri);
/* The same for a directory that still holds records.db (zonecast
 * migrate, which puts it aside next): the binding wins at open, so a
 * crash in between leaves the directory on the new store. */
int records_bind_replacing(const char *dir, const char *uri);

/* The store that records_open(target) opens, for status output:
 * *backend "sqlite" or "postgresql", and in where its file or its URI
 * with any password hidden. */
int records_describe(const char *target, const char **backend, char *where,
                     size_t size);

/* uri as it may be printed (redact.c): a password given as
 * user:password@ or as ?password=... shows as ***. */
void records_uri_redact(const char *uri, char *out, size_t size);
int records_bound_target(const char *dir, char *uri, size_t size);

void records_close(records_store_t *store);

/* --- Nodes sharing a PostgreSQL store (nodes.c; SQLite: KNOT_ENOTSUP) --- */

/* A node not seen for longer than this is down (status, the heartbeat's
 * claim on a name: RECORDS_NODE_DOWN_MS after a node stops beating,
 * another process may take its name). */
#define RECORDS_NODE_DOWN_MS 5000

/* The longest leader node name kept (records_leader_row_t). */
#define RECORDS_NODE_NAME_MAX 1024

/* One row of `nodes`: a `zonecast serve` using the store. */
typedef struct {
	const char *name;       /* node-name */
	const char *role;       /* "serve" */
	const char *version;    /* zonecast's */
	int pid;
	int64_t started_ms;     /* Unix ms the process started. */
	uint64_t applied_seq;   /* The builder's: builder_follower_applied(). */
	int stalled;            /* builder_follower_stalled(): 0 or a code. */
	/* Read by records_nodes_list() only, by the store's clock: */
	int64_t last_seen_ms;   /* Unix ms of the last heartbeat. */
	int64_t seen_ago_ms;    /* Its age (-1: never). */
} records_node_t;

/*
 * The heartbeat: upserts self's row with last_seen = now(), outside any
 * transaction (no write lock: it is not a change). ZC_EEXISTS, writing
 * nothing, when another process (another pid or start time) holds the
 * name and was seen within RECORDS_NODE_DOWN_MS; ZC_EUNAVAILABLE when
 * PostgreSQL cannot be reached.
 */
int records_node_beat(records_store_t *store, const records_node_t *self);

/* Deletes self's row (a clean stop), unless another process holds the
 * name now. */
int records_node_leave(records_store_t *store, const records_node_t *self);

/* Calls cb for each row in name order (pointers valid during the call;
 * cb returns non-zero to stop). */
int records_nodes_list(records_store_t *store,
                       int (*cb)(const records_node_t *node, void *ctx),
                       void *ctx);

/* The `leader` row, read for status: records_leader_take() (leader.c)
 * writes it as each new leader takes its term. */
typedef struct {
	uint64_t epoch;                    /* 0: no node ever led. */
	char node[RECORDS_NODE_NAME_MAX];  /* "": none. */
	int64_t since_ms;                  /* Unix ms (0: never). */
	uint64_t built_pos;
} records_leader_row_t;

int records_leader_row_get(records_store_t *store, records_leader_row_t *out);

/* --- Moving a store to the other engine (migrate.c, zonecast migrate) --- */

/* The tables copied: zones, records, tokens, tsig_keys, dnssec_keys,
 * zone_secondaries, counters, zone_versions, zone_tombstones, changes. */
#define RECORDS_COPY_TABLES 10

typedef struct {
	struct {
		const char *table;   /* Static. */
		uint64_t rows;
	} tables[RECORDS_COPY_TABLES];
	uint64_t rows;           /* All tables. */
	uint64_t last_seq;       /* The newest change-log sequence copied. */
	const char *not_empty;   /* ZC_EEXISTS: the target's table with rows. */
	uint64_t position;       /* The position given, in the target's
	                          * numbering (when position_kept). */
	bool position_kept;      /* False: it has no place there (the log
	                          * it had not read was trimmed, or the
	                          * copied commit is too large to stop in). */
} records_copy_summary_t;

/* The rows records_copy() would copy (for a progress line). */
int records_copy_count(records_store_t *from, uint64_t *rows);

/*
 * Copies every table of `from` into `to`, a store of the other engine,
 * column for column with every id and change-log sequence kept, in one
 * write transaction on `to` (all or nothing), reading `from` in a write
 * transaction of its own (no other writer commits meanwhile; nothing is
 * written there). On PostgreSQL the copied change log becomes one sealed
 * commit at position max(seq) and the identities and sequences move past
 * the copied ids and the source's high-water marks (no id, even a deleted
 * row's, is handed out twice; docs/design-postgresql.md §1.3). position,
 * a position of from's change log (changelog.h, "Positions": the one an
 * edge store applied), is translated into the target's numbering, in the
 * copy's snapshot, into sum->position: everything at or before it in the
 * target was at or before position in from. progress (may be NULL)
 * gets the rows copied so far. ZC_EEXISTS when `to` is not empty
 * (sum->not_empty names a table with rows); ZC_EUNAVAILABLE when
 * PostgreSQL went away; else the store's errors.
 */
int records_copy(records_store_t *from, records_store_t *to,
                 uint64_t position,
                 void (*progress)(uint64_t rows, void *ctx), void *ctx,
                 records_copy_summary_t *sum);

/* Finds a zone by apex. ZC_ENOZONE when absent. */
int records_zone_find(records_store_t *store, const knot_dname_t *apex,
                      records_zone_t *zone);

/* Calls cb for every zone whose kept record count (zones.record_count,
 * bounded by zone-max-records) differs from its records: zonecast verify. */
int records_counts_verify(records_store_t *store,
                          void (*cb)(const char *zone, int64_t kept,
                                     int64_t real, void *ctx),
                          void *ctx);

/* Calls cb for each zone in name order; cb returns non-zero to stop.
 * with_counts fills record_count (a walk over every record). */
int records_zone_list(records_store_t *store, bool with_counts,
                      int (*cb)(const records_zone_t *zone, void *ctx),
                      void *ctx);

/* Deletes a zone and its records inside the caller's write transaction;
 * logs zone_deleted and keeps the zone's serial under its apex (a
 * tombstone) for records_zone_first_serial(). */
int records_zone_remove(records_store_t *store, records_zone_t *zone);

/* A new zone's first serial: *serial, unless a zone deleted under the
 * apex (lowercase) had a serial as new or newer (RFC 1982); then that
 * serial plus one, so that secondaries holding the old zone take the new
 * one. records_zone_create() and imports of a new zone apply it. */
int records_zone_first_serial(records_store_t *store,
                              const knot_dname_t *apex, uint32_t *serial);

/* Sets a zone's default TTL (for records created without one). */
int records_zone_set_default_ttl(records_store_t *store,
                                 records_zone_t *zone, uint32_t ttl);

/* Deletes a zone and its records in its own transaction; logs
 * zone_deleted. *seq (unless NULL) receives the commit's change-log
 * position (records_changelog_committed()). */
int records_zone_delete(records_store_t *store, const knot_dname_t *apex,
                        uint64_t *seq);

/* The zone's record count as kept by every write (zones.record_count):
 * one row read, where records_zone_list()'s with_counts walks them. */
int records_zone_kept_count(records_store_t *store, int64_t zone_id,
                            int64_t *count);

/* --- Bulk import: one transaction replacing a zone's contents. --- */

typedef struct records_import records_import_t;

/*
 * Begins an import of the zone `apex`. Records are collected in memory
 * (the zone once, about 70 bytes a record), sorted into the stores' key
 * order, checked, and written in that order at commit, so the index is
 * appended to rather than updated at random and the table ends up
 * clustered in build order. Nothing touches the database before commit.
 * store NULL: a check only (zonecast zone check), with no bound on the
 * record count; commit must not be called.
 */
int records_import_begin(records_store_t *store, const knot_dname_t *apex,
                         records_import_t **out);

/*
 * Adds one record. `tag` is the caller's (e.g. file and line) and comes
 * back with any problem found in this record. KNOT_EOUTOFZONE when the
 * owner is not inside the zone.
 */
int records_import_add(records_import_t *imp, const knot_dname_t *owner,
                       uint16_t type, uint32_t ttl, const uint8_t *rdata,
                       uint16_t rdata_len, uint64_t tag);

/* Reports one problem: the record's owner, type and tag (0 when the
 * problem concerns the zone as a whole). */
typedef void (*records_problem_cb)(const knot_dname_t *owner, uint16_t type,
                                   uint64_t tag, const char *what, void *ctx);

/*
 * Checks the collected data against the zone-content rules, node by node
 * (records_rules_check_node(), records/rules.h): CNAME beside other data
 * or at the apex (RFC 1034 §3.6.2, RFC 2181 §10.1), more than one CNAME
 * at a name, RRsets with differing TTLs (RFC 2181 §5.2), duplicate records
 * (names in rdata compared ignoring case, RFC 4034 §6.2), SOA other than
 * exactly one at the apex, no NS at the apex, and each record below a
 * DNAME (RFC 6672 section 2.4: one pass over the sorted names, whose
 * subtrees are contiguous). Returns the number of
 * problems found (each reported), or a negative code.
 */
int records_import_check(records_import_t *imp, records_problem_cb problem,
                         void *ctx);

/*
 * Writes the zone in one transaction: creates the zone or replaces its
 * records, sets its serial (the file's SOA serial when it is newer in
 * RFC 1982 terms or the zone is new, else the old serial plus one), logs
 * zone_imported, commits, and frees imp. *seq receives the commit's
 * change-log position (records_changelog_committed()) and *zone the zone
 * row (either may be NULL). On PostgreSQL the zone's row is locked from
 * the first write to the commit: writers of other zones go on meanwhile.
 */
int records_import_commit(records_import_t *imp, uint64_t *seq,
                          records_zone_t *zone);

/* Number of records collected so far. */
uint64_t records_import_count(const records_import_t *imp);

/* Frees imp without writing anything (NULL is a no-op). */
void records_import_abort(records_import_t *imp);

/*
 * Bounds the records of one zone (zone-max-records) for the writes made
 * through this connection: an insert or import past it fails with
 * ZC_ETOOMANY (the caller rolls back). 0, the default, sets no bound.
 */
void records_set_max_records(records_store_t *store, uint64_t max);

/* --- Write transactions (records/txn.c; zones.c and rows.c write) --- */

/*
 * A write transaction is the store's transaction: begin, any number of
 * the calls below, commit. Each caller's unit of work (one API request,
 * one UPDATE message) bumps the zone's version once with
 * records_zone_bump(); group commit wraps several units in savepoints of
 * one transaction so one fsync acknowledges them all.
 *
 * Concurrency. On SQLite a write transaction holds the database's write
 * lock (BEGIN IMMEDIATE): writers take turns. On PostgreSQL writers of
 * every node run at once and serialise per zone: records_zone_get()
 * inside a write transaction locks the zone's row until the transaction
 * ends (a unit reads its zone first, before its serial), so a zone's
 * versions stay gap-free and in order, and writers to other zones never
 * wait. A unit that finds its zone locked by another transaction while
 * this one keeps earlier units (records_write_holds_units()) does not
 * wait: it fails with ZC_EBUSY at once (waiting could close a cycle
 * with another node's batch, which PostgreSQL would break only after
 * deadlock_timeout). The caller rolls that unit back, commits the units
 * before it, and runs it again first in a transaction of its own, where
 * it waits (writer/writer.c). A lock that is still not free after the
 * connection's lock timeout (10 s) gives ZC_EBUSY too, as does a
 * deadlock PostgreSQL breaks.
 */
int records_write_begin(records_store_t *store);
int records_write_commit(records_store_t *store);
/* records_write_commit(), then *seq as records_changelog_committed()
 * gives it (0 when it could not be read: committed all the same). On
 * PostgreSQL the position is read in the COMMIT's round trip. */
int records_write_commit_seq(records_store_t *store, uint64_t *seq);
void records_write_rollback(records_store_t *store);
int records_savepoint(records_store_t *store);
int records_savepoint_release(records_store_t *store);
void records_savepoint_rollback(records_store_t *store);
/* records_savepoint_release() that does not wait for the unit's writes
 * to be answered (PostgreSQL: they go with the next unit's first read or
 * with the commit; db.h, rdb_release_later()). Should one of them fail
 * later, the transaction wants its units run again:
 * records_write_replay() says so until it is rolled back; meanwhile the
 * sync that met the failure, later releases and the commit fail
 * (ZC_EREPLAY), other calls with their own errors.
 * SQLite: records_savepoint_release(). */
int records_savepoint_release_later(records_store_t *store);
/* records_savepoint() of a unit that records_savepoint_release_later()
 * will release: PostgreSQL sends its SAVEPOINT only with its first
 * statement that is not a row it writes, so a unit that only writes rows
 * sends nothing of its own, and its rows go with its batch's others
 * (db.h, rdb_savepoint_later()). SQLite: records_savepoint(). */
int records_savepoint_later(records_store_t *store);
bool records_write_replay(records_store_t *store);
/* Whether a unit of the open write transaction was released (kept): its
 * locks are held to the end of the transaction (see "Concurrency"). */
bool records_write_holds_units(records_store_t *store);
/* How many units one write transaction should hold at most; 0: no
 * bound (SQLite). PostgreSQL keeps the ids of a session's subtransactions
 * that wrote in a cache of 64 (PGPROC_MAX_CACHED_SUBXIDS); past it, every
 * other session's snapshot has to look them up in pg_subtrans for as long
 * as the transaction runs. A unit writes in its savepoint and, for an
 * UPDATE that deletes, in an inner one: 32 units fill the cache at most. */
size_t records_write_units_max(const records_store_t *store);
/* Whether the write transaction is still open: SQLite rolls a whole
 * transaction back by itself after some errors (disk full, I/O), and then
 * every unit run in it so far is lost with it. */
bool records_write_open(records_store_t *store);
/* A savepoint inside a unit's (to undo part of a unit: an UPDATE whose
 * changes cancel out must not move the serial). */
int records_inner_savepoint(records_store_t *store);
int records_inner_release(records_store_t *store);
void records_inner_rollback(records_store_t *store);

/* PostgreSQL: analyzes the tables that grow with the records, on a
 * thread and connection of its own, once this process added as many
 * records as the last ANALYZE saw (at least 10,000), so that no
 * connection keeps a plan made for nearly empty tables (planner_stats.c).
 * Cheap when nothing is due; call it after answering. SQLite: nothing.
 * records_stats_running(): whether such an ANALYZE runs (tests). */
int records_keep_stats(records_store_t *store);
bool records_stats_running(void);

/* Finds a zone by its row id. ZC_ENOZONE when absent. Inside a write
 * transaction on PostgreSQL it locks the zone's row to the end of the
 * transaction (see "Concurrency" above: ZC_EBUSY when it is locked by
 * another and this transaction holds earlier units). */
int records_zone_get(records_store_t *store, int64_t id,
                     records_zone_t *zone);

/* records_zone_get(), and in the same statement whether the TSIG key of
 * key_id (0: none) exists: when it does, records_tsig_alive() then says so
 * without a read of its own for the rest of the write transaction. */
int records_zone_get_keyed(records_store_t *store, int64_t id,
                           int64_t key_id, records_zone_t *zone);

/*
 * Creates a zone with the given SOA rdata and NS targets at its apex; logs
 * zone_created. Fills *zone. ZC_EEXISTS when it exists.
 */
int records_zone_create(records_store_t *store, const knot_dname_t *apex,
                        uint32_t ttl, const uint8_t *soa, uint16_t soa_len,
                        const knot_dname_t *const *ns, unsigned ns_count,
                        records_zone_t *zone);

/*
 * Gives the zone its next version (serial + 1, RFC 1982) for the unit of
 * work in progress; changes logged after it carry that version.
 */
int records_zone_bump(records_store_t *store, records_zone_t *zone);

/* Gives the zone a new version with no record change (the unit's bump
 * and a zone_touched event): secondaries get a new serial, e.g. for the
 * signed view's refreshed signatures. */
int records_zone_touch(records_store_t *store, records_zone_t *zone);

/* Logs the touch of records_zone_touch() at the zone's version, which
 * the caller has set (an UPDATE's SOA that moves the serial alone). */
int records_log_touch(records_store_t *store, const records_zone_t *zone);

/* The zone's SOA as served: a stored SOA keeps the serial of its import
 * or last replacement, and the zone row holds the live one (RFC 1035
 * §3.3.13); this writes it into the rdata (len octets, at least 22: 20
 * of numbers after two names). The API's listing and UPDATE's
 * prerequisites show and compare the SOA so. */
static inline void records_soa_set_serial(uint8_t *rdata, uint16_t len,
                                          uint32_t serial)
{
	if (len >= 22) {
		uint8_t *p = rdata + len - 20;
		p[0] = (uint8_t)(serial >> 24), p[1] = (uint8_t)(serial >> 16);
		p[2] = (uint8_t)(serial >> 8), p[3] = (uint8_t)serial;
	}
}

/* Inserts a record (rec->id is set) and logs record_created. */
int records_record_insert(records_store_t *store, const records_zone_t *zone,
                          records_record_t *rec);

/* records_record_insert() of a record removed and put back as it was
 * (an UPDATE's change that cancelled out: update/net.c): its
 * modified_on, when set, is kept. */
int records_record_restore(records_store_t *store, const records_zone_t *zone,
                           records_record_t *rec);

/* Deletes a record by id and logs record_deleted. KNOT_ENOENT if absent. */
int records_record_delete(records_store_t *store, const records_zone_t *zone,
                          int64_t id);

/* Logs a zone-wide change at the zone's version: kind is
 * RECORDS_CHANGE_ZONE_SETTINGS (or _CREATED, records_zone_create()'s);
 * the zone's IXFR journal restarts there (changelog.h). Imports and
 * deletions log their own. */
int records_log_zone_event(records_store_t *store, const records_zone_t *zone,
                           records_change_kind_t kind);

/*
 * Calls cb for each record of a zone matching the filter, ordered by
 * (okey, type, id). owner (wire) and type 0 mean "any". Pointers in the
 * record are valid during the callback only. cb returns non-zero to stop.
 */
int records_record_foreach(records_store_t *store, int64_t zone_id,
                           const knot_dname_t *owner, uint16_t type,
                           int (*cb)(const records_record_t *rec, void *ctx),
                           void *ctx);

/*
 * The subtree rules of DNAME (RFC 6672 section 2.4: no data below a
 * DNAME), as the write paths ask them (records/rules.h): whether a DNAME
 * is stored at an ancestor of owner, from the zone's apex (included) to
 * owner's parent; and whether any record is stored strictly below owner.
 * The record with id `exclude` (0: none) is not counted (the one a write
 * rewrites). *found tells; at (unless NULL) gets the owner of one such
 * record, lowercased (for the ancestors, the one nearest the apex). Both
 * read the (zone_id, okey, type) index: point lookups of the ancestors'
 * keys (one statement on PostgreSQL), one key range for the descendants
 * (dns/name.h: a node's descendants are a contiguous range of keys).
 * Returns ZC_EOK or a store error; an owner outside the zone finds none.
 */
int records_dname_above(records_store_t *store, const records_zone_t *zone,
                        const knot_dname_t *owner, int64_t exclude,
                        bool *found, knot_dname_t *at);
int records_data_below(records_store_t *store, const records_zone_t *zone,
                       const knot_dname_t *owner, int64_t exclude,
                       bool *found, knot_dname_t *at);

/*
 * Names a node a unit of the write transaction just begun will read with
 * records_record_foreach() (owner in the zone whose id and apex are given;
 * any case). On PostgreSQL the named nodes of a zone are read in one
 * statement when the transaction locks the zone's row, and the units'
 * reads of them cost no round trip (prefetch.c); elsewhere, or outside a
 * write transaction, nothing happens. Only a hint: a node not named is
 * read as before.
 */
void records_hint_node(records_store_t *store, int64_t zone_id,
                       const knot_dname_t *apex, const knot_dname_t *owner);

/* The orders of records_record_query(). */
typedef enum {
	RECORDS_ORDER_NAME = 0,  /* (okey, type, id): DNSSEC canonical order. */
	RECORDS_ORDER_TYPE = 1,  /* (type code, okey, id). */
	RECORDS_ORDER_TTL = 2,   /* (ttl, okey, type, id). */
} records_order_t;

typedef struct {
	const knot_dname_t *owner;   /* NULL: any owner. */
	uint16_t type;               /* 0: any type. */
	records_order_t order;
	bool descending;             /* Every key of the order reversed. */
	int64_t offset;              /* Rows skipped. */
	int64_t limit;               /* Rows at most; < 0: all. */
} records_query_t;

/*
 * A listing (query.c): calls cb for each record of the zone matching q's
 * owner and type, in q's order, from offset on, at most limit of them
 * (cb returns non-zero to stop); *total (unless NULL) gets the number of
 * matching records. An owner or a type filter is served by an index, in
 * name and type order without a sort: the cost is the page plus an index
 * count, never a walk of the zone; the TTL order sorts the matches.
 */
int records_record_query(records_store_t *store, int64_t zone_id,
                         const records_query_t *q, int64_t *total,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx);

/* SQLite's query plan of q's statement (EXPLAIN QUERY PLAN, one line per
 * step) into out: for the tests that prove the indexes are used. */
int records_query_plan(records_store_t *store, const records_query_t *q,
                       char *out, size_t size);

/* One record by id (callback form, as above). KNOT_ENOENT if absent. */
int records_record_find(records_store_t *store, int64_t zone_id, int64_t id,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx);

/* The records of a zone with these ids (callback form, in no particular
 * order; ids not found are left out): one statement on PostgreSQL. */
int records_record_find_many(records_store_t *store, int64_t zone_id,
                             const int64_t *ids, size_t count,
                             int (*cb)(const records_record_t *rec, void *ctx),
                             void *ctx);

/* Whether records_record_find_many() and records_record_foreach_owners()
 * read many keys in one statement (PostgreSQL), not one lookup per key
 * (SQLite, in-process): reading ahead of need pays only then. */
bool records_reads_at_once(const records_store_t *store);

/* Inside a write transaction, before a unit inserts n new records: their
 * ids drawn at once (PostgreSQL: one draw of up to 1,024 from record_ids,
 * not blocks doubling from 16, each draw a read that sends the rows
 * gathered so far, db_pg_gather.c). SQLite: nothing (ids are counted in
 * memory). */
int records_ids_reserve(records_store_t *store, size_t n);

/*
 * The records of a zone at these owners (wire, any case), as
 * records_record_foreach() gives each owner's with type 0, in no
 * particular order; an owner outside the zone matches nothing. The
 * owners should be distinct (ignoring case), or their records come once
 * per time they are named on SQLite. One statement per 4,096 owners on
 * PostgreSQL (okey = ANY), one indexed lookup per owner on SQLite. A
 * non-zero return from cb stops the reading.
 */
int records_record_foreach_owners(records_store_t *store, int64_t zone_id,
                                  const knot_dname_t *const *owners,
                                  size_t count,
                                  int (*cb)(const records_record_t *rec,
                                            void *ctx),
                                  void *ctx);

/* --- Ordered reads for builds and exports. --- */

/* Begins and ends a read snapshot (a SQLite read transaction) spanning
 * several calls. */
int records_read_begin(records_store_t *store);
void records_read_end(records_store_t *store);

/*
 * Calls cb for each record of one node (zone id, owner LF relative to the
 * apex), in type order: the indexed lookup of a per-record build, whose
 * cost does not depend on the zone's size.
 */
int records_node_foreach(records_store_t *store, int64_t zone_id,
                         const uint8_t *okey, size_t okey_len,
                         int (*cb)(const records_row_t *row, void *ctx),
                         void *ctx);

/*
 * Several nodes of one zone at once: okeys[k] (lens[k] bytes) must be
 * distinct and in records_okey_cmp() order; cb gets each row with the
 * index k of its node, nodes in that order, a node's rows in type order
 * (a node without rows gets no call). One statement on PostgreSQL
 * (okey = ANY), one indexed lookup per node on SQLite. A non-zero return
 * from cb stops the reading.
 */
int records_nodes_foreach(records_store_t *store, int64_t zone_id,
                          const uint8_t *const *okeys, const size_t *lens,
                          size_t count,
                          int (*cb)(size_t node, const records_row_t *row,
                                    void *ctx),
                          void *ctx);

/* The order of nodes (their keys' bytes, then their lengths: a key
 * before its extensions), as both engines sort the okey column. */
int records_okey_cmp(const uint8_t *a, size_t a_len, const uint8_t *b,
                     size_t b_len);

typedef struct records_scan records_scan_t;

/*
 * Begins a consistent read (a SQLite read transaction) of a zone's records
 * ordered by (okey, type). *snapshot_seq receives the newest change-log
 * sequence visible in that snapshot (the build's fence) and *zone the zone
 * row. ZC_ENOZONE when the zone does not exist in the snapshot.
 */
int records_scan_begin(records_store_t *store, const knot_dname_t *apex,
                       records_zone_t *zone, uint64_t *snapshot_seq,
                       records_scan_t **out);

/* Next record: 1 with *row filled, 0 at the end, or a negative code. */
int records_scan_next(records_scan_t *scan, records_row_t *row);

/* Ends the read transaction and frees scan (NULL is a no-op). */
void records_scan_end(records_scan_t *scan);

/* --- The change log as IXFR journal (records/scan.c) --- */

/*
 * Calls cb for every record event of the zone with from < version <= to,
 * in log order, from one read snapshot (records_changelog_journal() in
 * the snapshot that found the zone). ZC_ENOJOURNAL when the journal
 * does not reach back to `from` (trimmed, or a zone-wide change such as
 * an import lies in between); ZC_ENOZONE when the zone does not exist.
 */
int records_journal_read(records_store_t *store, const knot_dname_t *apex,
                         uint32_t from, uint32_t to,
                         int (*cb)(const records_journal_rr_t *rr, void *ctx),
                         void *ctx);

/* Sets a zone's serial policy (inside the caller's write transaction). */
int records_zone_set_serial_policy(records_store_t *store,
                                   records_zone_t *zone,
                                   records_serial_policy_t policy);

/* --- TSIG keys (records/tsig_keys.c) --- */

#define RECORDS_TSIG_SECRET_MAX 128
#define RECORDS_TSIG_GRANTS_MAX 1024

typedef struct {
	int64_t id;
	uint8_t name[KNOT_DNAME_MAXLEN];        /* Wire, lowercase. */
	char algorithm[32];                     /* "hmac-sha256" */
	uint8_t secret[RECORDS_TSIG_SECRET_MAX];
	size_t secret_len;
	int64_t zone_id;
	char grants[RECORDS_TSIG_GRANTS_MAX];   /* "" : the whole zone */
	bool transfer;
	int64_t created_on;
} records_tsig_key_t;

/* Stores a new key (key->id and created_on are set). ZC_EEXISTS when a
 * key of that name exists. Runs in the caller's write transaction. */
int records_tsig_add(records_store_t *store, records_tsig_key_t *key);

/*
 * Makes and stores a key for the zone (records/tsig_create.c), inside the
 * caller's write transaction: checks the name, the algorithm (NULL:
 * hmac-sha256) and the grants (NULL or "": the whole zone; syntax in
 * dns/tsig_grants.h), draws a secret of the algorithm's size. On a
 * problem (ZC_EUSAGE, ZC_EEXISTS), err names the field at fault.
 */
int records_tsig_create(records_store_t *store, int64_t zone_id,
                        const char *name, const char *algorithm,
                        const char *grants, bool transfer,
                        records_tsig_key_t *key, char *err, size_t err_size);

/* Finds a key by name (wire, any case). ZC_ENOKEY when absent. */
int records_tsig_find(records_store_t *store, const knot_dname_t *name,
                      records_tsig_key_t *key);

/*
 * Whether the key of that id still exists (keys are never changed, only
 * added and deleted, and ids are never reused: alive means as it was
 * read). In a write transaction, an id found alive is remembered until the
 * transaction ends, and not read again: the committer's units all arrived
 * before its transaction began, so a delete acknowledged before any of
 * them arrived committed before the first read (update/apply.c).
 */
int records_tsig_alive(records_store_t *store, int64_t id, bool *alive);

/* Calls cb for each key (of one zone, or all with zone_id 0), by name. */
int records_tsig_list(records_store_t *store, int64_t zone_id,
                      int (*cb)(const records_tsig_key_t *key, void *ctx),
                      void *ctx);

/* Deletes a key by id (zone_id 0: any zone). ZC_ENOKEY when absent. */
int records_tsig_delete(records_store_t *store, int64_t zone_id, int64_t id);

/* --- API tokens (records/tokens.c) --- */

/* The longest token name, in bytes. */
#define RECORDS_TOKEN_NAME_MAX 120

typedef struct {
	int64_t id;
	char name[RECORDS_TOKEN_NAME_MAX + 8];
	bool read_only;          /* GET requests only. */
	int64_t zone_id;         /* 0: every zone. */
	int64_t created_on;      /* Unix milliseconds. */
	int64_t modified_on;
	int64_t expires_on;      /* 0: never. */
	int64_t revoked_on;      /* 0: not revoked. */
} records_token_t;

typedef enum {
	RECORDS_TOKEN_ACTIVE,
	RECORDS_TOKEN_EXPIRED,
	RECORDS_TOKEN_REVOKED,
} records_token_status_t;

/* Whether text may name a token: 1 to RECORDS_TOKEN_NAME_MAX bytes, no
 * control character (a line break made `token list` print a row of its
 * own), and not the 32 lower-case hex digits of an id (`token revoke`
 * takes those as an id), nor "-" (how `token list` shows no name). */
bool records_token_name_valid(const char *text);

/* Stores a token by the SHA-256 hash of its secret (tok's name,
 * read_only, zone_id and expires_on; id, created_on and modified_on are
 * set). ZC_EEXISTS for a hash already stored. */
int records_token_add(records_store_t *store, const uint8_t hash[32],
                      records_token_t *tok);

/* Finds a token by the hash of its secret, or by id. ZC_ENOKEY when
 * absent. Each call reads the store, so a revocation is seen at once. */
int records_token_find(records_store_t *store, const uint8_t hash[32],
                       records_token_t *tok);
int records_token_get(records_store_t *store, int64_t id,
                      records_token_t *tok);

/* Calls cb for every token, oldest first (cb returns non-zero to stop). */
int records_token_list(records_store_t *store,
                       int (*cb)(const records_token_t *tok, void *ctx),
                       void *ctx);

/* Revokes a token for good (a second revocation keeps the first time).
 * ZC_ENOKEY when there is no such token. */
int records_token_revoke(records_store_t *store, int64_t id);

/* Whether a token is active, expired or revoked at now_ms. */
records_token_status_t records_token_status(const records_token_t *tok,
                                            int64_t now_ms);

/* --- Per-zone secondaries (records/secondaries.c) --- */

typedef enum {
	RECORDS_SECONDARY_NOTIFY = 1,    /* "ADDR[:PORT] [key NAME]" */
	RECORDS_SECONDARY_TRANSFER = 2,  /* "ADDR[/PREFIX]" or "key NAME" */
} records_secondary_kind_t;

/* Replaces the zone's entries of one kind (in the caller's write
 * transaction); specs are stored as given, in order. The caller reads the
 * zone first with records_zone_get(), which locks its row on PostgreSQL:
 * two replacements of one zone's list take turns (each deletes what the
 * other would insert). */
int records_secondaries_set(records_store_t *store, int64_t zone_id,
                            records_secondary_kind_t kind,
                            const char *const *specs, size_t count);

/* Calls cb for each entry of one zone (zone_id 0: of every zone), by zone,
 * kind and position; cb returns non-zero to stop. */
int records_secondaries_foreach(records_store_t *store, int64_t zone_id,
                                int (*cb)(int64_t zone_id,
                                          records_secondary_kind_t kind,
                                          const char *spec, void *ctx),
                                void *ctx);

/* A number that moves at every records_secondaries_set(). */
int records_secondaries_version(records_store_t *store, uint64_t *version);

/* --- Connection pool (records/pool.c) --- */

typedef struct records_pool records_pool_t;

records_pool_t *records_pool_new(const char *dir);
void records_pool_free(records_pool_t *pool);
/* Borrows a connection (opened on first use); give it back with put. */
int records_pool_get(records_pool_t *pool, records_store_t **out);
void records_pool_put(records_pool_t *pool, records_store_t *rs);

/* Sets the zone's serial (an SOA given by RFC 2136 UPDATE, newer than the
 * current one) for the unit in progress, instead of records_zone_bump(). */
int records_zone_set_serial(records_store_t *store, records_zone_t *zone,
                            uint32_t serial);

/* --- DNSSEC signing keys (records/dnssec_keys.c) --- */

/* The largest TTL among the zone's records (0: none): how long a
 * signature over any of them may stay in caches. */
int records_zone_max_ttl(records_store_t *store, int64_t zone_id,
                         uint32_t *ttl);

typedef struct {
	int64_t id;
	int64_t zone_id;
	uint16_t flags;          /* 257 KSK/CSK, 256 ZSK */
	uint8_t algorithm;
	const uint8_t *pem;      /* Borrowed during the callback. */
	size_t pem_len;
	bool active;
	int64_t created_on;      /* Unix ms: made, and published in DNSKEY. */
	int64_t active_on;       /* Began signing (0: never). */
	int64_t retired_on;      /* Stopped signing (0: signs, or never did). */
} records_dnssec_key_t;

/* Stores a key (key->id and created_on are set), in the caller's write
 * transaction. */
int records_dnssec_key_add(records_store_t *store, records_dnssec_key_t *key);

/* Calls cb for each key of the zone, oldest first. */
int records_dnssec_keys(records_store_t *store, int64_t zone_id,
                        int (*cb)(const records_dnssec_key_t *key, void *ctx),
                        void *ctx);

/* Deletes every key of the zone. */
int records_dnssec_keys_delete(records_store_t *store, int64_t zone_id);

/* Marks one key active (signs) or not (published only); deletes one. */
int records_dnssec_key_set_active(records_store_t *store, int64_t id,
                                  bool active);
int records_dnssec_key_delete(records_store_t *store, int64_t id);
