/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to records/: the SQL core (sql.c). One SQLite connection with
 * its pragmas, the statement cache, the savepoints of units, read
 * snapshots, and the one place SQLite result codes become zonecast codes.
 * It calls nothing else in records/: every other file of the store sits
 * on it (records.h draws the graph).
 *
 * struct records_store is the connection and what each file of the store
 * keeps per connection; each field names the file that owns it (the only
 * one that writes it).
 */
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
	/* sql.c: the connection and its statements. */
	sqlite3 *db;
	records_cached_stmt_t cache[RECORDS_STMT_CACHE];
	/* changelog.c: the zone_versions row of the unit in progress is
	 * written (dropped at every rollback: the version may be handed
	 * out again). */
	int64_t version_zone;
	uint32_t version_logged;
	/* query.c: zone id -> apex of the last zone looked up by id (ids
	 * are never reused and apexes never change, so this never goes
	 * stale). */
	int64_t apex_zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	/* rows.c: record ids, the next one to hand out, read at the first
	 * insert of a write transaction and written back to counters at its
	 * commit. */
	bool ids_loaded;
	bool ids_dirty;
	int64_t next_id;
	/* txn.c: inside a write transaction (records_write_begin()). */
	bool in_write;
	/* zones.c: inside a write transaction, the zone row last read or
	 * written, kept as this connection changed it (records_zone_get()
	 * is the first read of every unit; the committer runs many per
	 * batch). Dropped at every transaction boundary, every rollback and
	 * every zones write other than the serial's. */
	bool zrow_valid;
	records_zone_t zrow;
	/* counts.c: records_set_max_records(), 0 for no bound; records per
	 * zone changed in this write transaction, written at its commit;
	 * deltas saved at the unit's and the inner savepoint. */
	uint64_t max_records;
	struct {
		int64_t zone_id, base, delta;
	} counts[RECORDS_COUNT_ZONES];
	size_t count_n;
	int64_t count_saved[2][RECORDS_COUNT_ZONES];
	size_t count_saved_n[2];
};

/* Opens the SQLite database at path with the store's pragmas (WAL,
 * synchronous=FULL, foreign keys, a 64 MiB page cache). The schema is
 * schema.c's (records_open() applies it). */
int records_sql_open(records_store_t **out, const char *path);

/* Finalizes the cached statements and closes the connection; frees
 * store (NULL is a no-op). */
void records_sql_close(records_store_t *store);

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

/* The savepoints of units: level 0 is a unit's ("unit"), level 1 the one
 * inside it ("inner"). Only the SQL: txn.c undoes what each file keeps
 * of a savepoint. */
int records_sql_savepoint(records_store_t *store, int level);
int records_sql_release(records_store_t *store, int level);
/* Rolls back to the savepoint and releases it; nothing to do when SQLite
 * already rolled the whole transaction back (disk full, I/O error). */
void records_sql_rollback_to(records_store_t *store, int level);

/* Current time in Unix milliseconds. */
int64_t records_now_ms(void);
