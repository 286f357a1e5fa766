/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to records/: what the files of the store call of each other
 * besides the driver (db.h), the connection (store.h) and the change log
 * (changelog.h), each under the file that defines it. records.h draws who
 * calls whom.
 */
#pragma once

#include "records/store.h"

/* --- schema.c --- */

/* Applies pending schema migrations. */
int records_schema_migrate(records_store_t *store);

/* --- changelog_rows.c: shared by the change log's two readers --- */

/* Fills chg (all but seq) from the statement's columns col.. col + 5:
 * zone_id, apex, version, kind, okey, type. false: a row to skip (no
 * apex). */
bool records_change_from_stmt(rdb_stmt_t *stmt, int col,
                              records_change_t *chg);

/* A change-log identity (records_changelog_mark()) from its text as the
 * store writes it (NULL or empty: 0, none; never 0 otherwise). */
uint64_t records_log_mark_id(const char *text);

/* The tail of records_zone_activity() on both engines: steps stmt, bound
 * and selecting (zone_id, events), into cb until it returns non-zero,
 * releases stmt and ends the read snapshot the caller began. */
int records_activity_rows(records_store_t *store, rdb_stmt_t *stmt,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx);

/* Runs one statement binding ?1 = x. */
int records_exec_int64(records_store_t *store, const rdb_sql_t *sql,
                       int64_t x);

/* The first column of the one row a query binding ?1 = x gives (0 when
 * it gives none) into *out. */
int records_query_int64(records_store_t *store, const rdb_sql_t *sql,
                        int64_t x, int64_t *out);

/* Records that the log was trimmed up to position seq
 * (records_trimmed_seq()), inside the trim's transaction. */
int records_trimmed_mark(records_store_t *store, uint64_t seq);

/* Ends a trim's write transaction: commits when ret is ZC_EOK, else (or
 * when the commit fails) rolls back; returns the outcome. */
int records_trim_end(records_store_t *store, int ret);

/* --- changelog_pg.c: the change log by commit position (PostgreSQL;
 * changelog.h, "Positions"), behind changelog.c's functions of the same
 * purpose --- */

int changelog_pg_since(records_store_t *store, uint64_t after,
                       unsigned limit,
                       int (*cb)(const records_change_t *chg, void *ctx),
                       void *ctx);
int changelog_pg_last(records_store_t *store, uint64_t *seq);
/* The position of commit p read whole (0 for p 0): what a reader that
 * applied that commit holds (leader.c compares builds with it). */
uint64_t changelog_pg_commit_end(int64_t commit);
/* The position of the event of rank `rank` (from 1) inside commit
 * `commit`, and the commit a position is in with the rank it reached
 * there (*whole: the commit read whole, or 0), for migrate.c. Ranks past
 * CHANGELOG_PG_RANK_MAX have no position inside their commit. */
#define CHANGELOG_PG_RANK_MAX INT64_C(0xFFFFFE)
uint64_t changelog_pg_position(int64_t commit, int64_t rank);
void changelog_pg_split(uint64_t seq, int64_t *commit, int64_t *rank,
                        bool *whole);
/* "C" for commit C read whole (or 0), "C.R" inside it. */
void changelog_pg_position_text(uint64_t seq, char *out, size_t size);
bool changelog_pg_follows(uint64_t after, uint64_t seq);
int changelog_pg_committed(records_store_t *store, uint64_t *seq);
/* changelog_pg_committed() in two steps: the read of the commit's
 * position prepared before the COMMIT (NULL when nothing was appended),
 * so that it can go in the COMMIT's round trip (txn.c); its answer after
 * (stepping it runs it if it did not run). */
int changelog_pg_position_stmt(records_store_t *store, rdb_stmt_t **stmt);
int changelog_pg_position_read(records_store_t *store, rdb_stmt_t *stmt,
                               uint64_t *seq);
int changelog_pg_backlog(records_store_t *store, uint64_t after,
                         records_backlog_t *out);
int changelog_pg_activity(records_store_t *store, uint64_t after,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx, uint64_t *last_seq);
int changelog_pg_trim(records_store_t *store, int64_t before_ms,
                      uint64_t max_seq, uint64_t *removed);

/* --- nodes.c --- */

/* The lowest applied position (records_node_t.applied_seq) of the nodes
 * that are live, their heartbeat no older than RECORDS_NODE_DOWN_MS (as
 * zonecast status judges up); UINT64_MAX when none is. PostgreSQL only
 * (KNOT_ENOTSUP on SQLite, with UINT64_MAX). */
int records_nodes_live_applied(records_store_t *store, uint64_t *applied);

/* --- counts.c: records per zone, kept through a write transaction --- */

/* level: 0 the unit's savepoint, 1 the inner one. */
int records_count_add(records_store_t *store, int64_t zone_id, int delta);
int records_counts_flush(records_store_t *store);
/* planner_stats.c: records added, for records_keep_stats(). */
void records_stats_grew(records_store_t *store, int64_t added);
void records_counts_forget(records_store_t *store);
void records_counts_mark(records_store_t *store, int level);
void records_counts_restore(records_store_t *store, int level);
/* The zone's record count as its row says, read with the row's lock in
 * the write transaction (zones.c): kept as the base of its changes,
 * unless the zone has an entry already (or the table is full). */
void records_counts_seed(records_store_t *store, int64_t zone_id,
                         int64_t count);
/* At the commit: the zone's pending change of its count, taken away from
 * records_counts_flush() (the caller writes it). */
int64_t records_counts_take(records_store_t *store, int64_t zone_id);
/* changelog.c: the write transaction's id, read with a zone row's lock
 * (0: not known): the first event appended then goes in the pipeline. */
void records_changelog_xid(records_store_t *store, int64_t xid);

/* --- rows.c: record rows --- */

/* A new record id, never handed out before. Forget what was loaded at
 * every transaction start (another process may have written); flush
 * before its commit. */
int records_alloc_id(records_store_t *store, int64_t *id);
/* n new record ids at once, in ascending order, for a bulk write (an
 * import): on PostgreSQL drawn in one statement, not block by block. */
int records_alloc_ids(records_store_t *store, size_t n, int64_t *ids);
void records_ids_forget(records_store_t *store);
int records_ids_flush(records_store_t *store);

/* The owner's key (its LF relative to the zone's apex); KNOT_EOUTOFZONE
 * if outside the zone, ZC_ENAMEKEY if no store can key it (dns/name.h). */
int records_owner_key(const knot_dname_t *apex, const knot_dname_t *owner,
                      uint8_t *okey, size_t *okey_len);

/* prefetch.c: nodes read ahead for a write transaction's units (see
 * there). _hint() notes an owner's key (PostgreSQL, in a write
 * transaction); _zone() reads the zone's noted nodes, right after this
 * transaction locked its row; _prefetched() serves records_record_foreach()
 * of one node, filtered by type (0: all), and returns false when it
 * cannot (then nothing was called); _forget_node() and _forget_zone()
 * drop what this transaction writes; _reset() at every transaction
 * boundary; _mark() at a savepoint (level 0: the unit's, 1: the inner one)
 * and _restore() at its rollback. */
void records_prefetch_hint(records_store_t *store, int64_t zone_id,
                           const uint8_t *okey, size_t len);
int records_prefetch_zone(records_store_t *store, int64_t zone_id);
bool records_prefetched(records_store_t *store, int64_t zone_id,
                        const uint8_t *okey, size_t len, uint16_t type,
                        int (*cb)(const records_record_t *rec, void *ctx),
                        void *ctx);
void records_prefetch_forget_node(records_store_t *store, int64_t zone_id,
                                  const uint8_t *okey, size_t len);
void records_prefetch_forget_zone(records_store_t *store, int64_t zone_id);
void records_prefetch_reset(records_store_t *store);
void records_prefetch_mark(records_store_t *store, int level);
void records_prefetch_restore(records_store_t *store, int level);
void records_prefetch_free(records_store_t *store);

/* The zone's DNAME owners (key, id), read once while this transaction
 * holds the zone's row lock on PostgreSQL (one statement per lock, not
 * one per record written: the DNAME subtree rule asks at every add);
 * false when not available (SQLite, no lock held, too many): the caller
 * asks the store. Dropped with the read-ahead nodes, at a DNAME written
 * or deleted by this transaction (_forget_dnames()), and at a rollback
 * to a savepoint it was read after. */
typedef struct {
	int64_t id;
	size_t len;
	uint8_t okey[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
} records_dname_t;
bool records_prefetch_dnames(records_store_t *store, int64_t zone_id,
                             const records_dname_t **out, size_t *n,
                             int *ret);
void records_prefetch_forget_dnames(records_store_t *store, int64_t zone_id);

/* The columns records_rows_foreach() reads, in its order. */
#define RECORDS_RECORD_COLUMNS "id, zone_id, owner, type, ttl, rdata," \
	" comment, created_on, modified_on, api_form, tags"

/* Steps stmt (selecting RECORDS_RECORD_COLUMNS) and calls cb for each
 * row until it returns non-zero. */
int records_rows_foreach(rdb_stmt_t *stmt,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx);

/* --- tsig_keys.c --- */

/* The key of that id was read alive in this write transaction (zones.c
 * reads it with the zone's row): records_tsig_alive() remembers it. */
void records_tsig_alive_seen(records_store_t *store, int64_t id);

/* --- zones.c --- */

#define RECORDS_ZONE_COLUMNS \
	"id, name, apex, serial, default_ttl, created_on, modified_on," \
	" serial_policy"

/* Fills a zone row from a statement positioned on RECORDS_ZONE_COLUMNS. */
void records_zone_from_stmt(rdb_stmt_t *stmt, records_zone_t *zone);

/* Drops the zone row kept through a write transaction. */
void records_zrow_forget(records_store_t *store);
/* Writes the kept row's pending serial (zones.c; store.h); last: at the
 * commit, with the zone's record count changes (records_counts_take()). */
int records_zrow_flush(records_store_t *store, bool last);
/* Saves (at a savepoint, level as rdb_level_t) and puts back (at its
 * rollback) the kept row. */
void records_zrow_mark(records_store_t *store, int level);
void records_zrow_restore(records_store_t *store, int level);

/* records_zone_find() that also locks the zone's row to the end of the
 * write transaction on PostgreSQL, waiting for it: for the transactions
 * that write one zone by themselves (an import, records_zone_delete()),
 * which hold nothing else. */
int records_zone_find_locked(records_store_t *store, const knot_dname_t *apex,
                             records_zone_t *zone);

/* --- listen.c --- */

#ifdef ZC_HAVE_LIBPQ
struct pg_conn;
/*
 * A connection of its own (PQconnectdbParams: check its status) to
 * target's PostgreSQL store, a URI or a data directory bound to one, with
 * extra server options ("-c name=value ...", or NULL), given up after 5 s
 * when PostgreSQL does not answer. ZC_EOK with *out NULL: the store is
 * SQLite.
 */
int records_own_connect(const char *target, const char *options,
                        struct pg_conn **out);
#endif
