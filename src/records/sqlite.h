/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to records/: the SQLite connection and its helpers. */
#pragma once

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "records/records.h"

#define RECORDS_STMT_CACHE 48

/* A prepared statement kept for reuse, keyed by its SQL text's address
 * (callers pass string literals). */
typedef struct {
	const char *sql;
	sqlite3_stmt *stmt;
	bool busy;
} records_cached_stmt_t;

#define RECORDS_COUNT_ZONES 8

struct records_store {
	sqlite3 *db;
	records_cached_stmt_t cache[RECORDS_STMT_CACHE];
	/* The zone_versions row of the unit in progress is written (cleared
	 * on rollback: the version may be handed out again). */
	int64_t version_zone;
	uint32_t version_logged;
	/* Zone id -> apex of the last zone looked up by id (ids are never
	 * reused and apexes never change, so this never goes stale). */
	int64_t apex_zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	/* Record ids: the next one to hand out, read at the first insert of
	 * a write transaction and written back to counters at its commit. */
	bool ids_loaded;
	bool ids_dirty;
	int64_t next_id;
	/* Inside a write transaction: the zone row last read or written,
	 * kept as this connection changed it (records_zone_get() is the
	 * first read of every unit; the committer runs many per batch).
	 * Dropped at every transaction boundary, every rollback and every
	 * zones write other than the serial's. */
	bool in_write;
	bool zrow_valid;
	records_zone_t zrow;
	/* records_set_max_records(): 0 for no bound. */
	uint64_t max_records;
	/* Records per zone changed in this write transaction, written at
	 * its commit; deltas saved at the unit's and the inner savepoint
	 * (counts.c). */
	struct {
		int64_t zone_id, base, delta;
	} counts[RECORDS_COUNT_ZONES];
	size_t count_n;
	int64_t count_saved[2][RECORDS_COUNT_ZONES];
	size_t count_saved_n[2];
};

/* Record counts (counts.c). level: 0 the unit's savepoint, 1 the inner. */
int records_count_add(records_store_t *store, int64_t zone_id, int delta);
int records_counts_flush(records_store_t *store);
void records_counts_forget(records_store_t *store);
void records_counts_mark(records_store_t *store, int level);
void records_counts_restore(records_store_t *store, int level);

/* The one place SQLite result codes become zonecast codes. */
int records_sql_error(sqlite3 *db, int rc);

/* Runs SQL text without results (any number of statements). */
int records_sql_exec(records_store_t *store, const char *sql);

/* Runs one statement without parameters or results from the statement
 * cache (sql a string literal): for the statements of every unit
 * (savepoints), which sqlite3_exec() would parse each time. */
int records_sql_run(records_store_t *store, const char *sql);

/*
 * Prepares a statement, or takes the cached one for this SQL (sql must be
 * a string literal or otherwise live as long as the store). Parsing SQL
 * per call cost more than the writes themselves. Release it with
 * records_sql_done(), never sqlite3_finalize().
 */
int records_sql_prepare(records_store_t *store, const char *sql,
                        sqlite3_stmt **stmt);

/* Resets a statement back into the cache (or finalizes an uncached one). */
void records_sql_done(records_store_t *store, sqlite3_stmt *stmt);

/* Starts the zone's IXFR journal afresh at `version` (a zone-wide change:
 * IXFR cannot span it). */
int records_journal_restart(records_store_t *store, int64_t zone_id,
                            uint32_t version);

/* A new record id, never handed out before (write.c). Forget what was
 * loaded at every transaction start (another process may have written);
 * flush before its commit. */
int records_alloc_id(records_store_t *store, int64_t *id);
void records_ids_forget(records_store_t *store);
int records_ids_flush(records_store_t *store);

/* Drops the cached zone row (write.c). */
static inline void records_zrow_forget(records_store_t *store)
{
	store->zrow_valid = false;
}

/* Applies pending schema migrations (schema.c). */
int records_schema_migrate(records_store_t *store);

/* Current time in Unix milliseconds. */
int64_t records_now_ms(void);

/* Fills a zone row from a statement positioned on RECORDS_ZONE_COLUMNS. */
void records_zone_from_stmt(sqlite3_stmt *stmt, records_zone_t *zone);

/* Appends a change-log event; *seq receives its sequence. */
int records_log_append(records_store_t *store, int64_t zone_id,
                       const uint8_t *apex, size_t apex_len, uint32_t version,
                       records_change_kind_t kind, uint64_t *seq);

/* The columns records_rows_foreach() reads, in its order. */
#define RECORDS_RECORD_COLUMNS "id, zone_id, owner, type, ttl, rdata," \
	" comment, created_on, modified_on, api_form, tags"

/* Steps stmt (selecting RECORDS_RECORD_COLUMNS) and calls cb for each
 * row until it returns non-zero (write.c). */
int records_rows_foreach(sqlite3_stmt *stmt, records_store_t *store,
                         int (*cb)(const records_record_t *rec, void *ctx),
                         void *ctx);

/* The owner's key relative to the zone's apex, for a filter: NULL owner
 * gives length 0; KNOT_EOUTOFZONE or ZC_ENAMEKEY when no record can have
 * that owner (write.c). */
int records_filter_key(records_store_t *store, int64_t zone_id,
                       const knot_dname_t *owner, uint8_t *okey,
                       size_t *okey_len);

#define RECORDS_ZONE_COLUMNS \
	"id, name, apex, serial, default_ttl, created_on, modified_on," \
	" serial_policy"
