/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to records/: the SQLite connection and its helpers. */
#pragma once

#include <sqlite3.h>
#include <stdint.h>

#include "records/records.h"

struct records_store {
	sqlite3 *db;
};

/* The one place SQLite result codes become zonecast codes. */
int records_sql_error(sqlite3 *db, int rc);

/* Runs SQL text without results. */
int records_sql_exec(records_store_t *store, const char *sql);

/* Prepares a statement. */
int records_sql_prepare(records_store_t *store, const char *sql,
                        sqlite3_stmt **stmt);

/* Applies pending schema migrations (schema.c). */
int records_schema_migrate(records_store_t *store);

/* Current time in Unix milliseconds. */
int64_t records_now_ms(void);

/* Fills a zone row from a statement positioned on
 * "id, name, apex, serial, default_ttl, created_on, modified_on". */
void records_zone_from_stmt(sqlite3_stmt *stmt, records_zone_t *zone);

/* Appends a change-log event; *seq receives its sequence. */
int records_log_append(records_store_t *store, int64_t zone_id,
                       const uint8_t *apex, size_t apex_len, uint32_t version,
                       records_change_kind_t kind, uint64_t *seq);

#define RECORDS_ZONE_COLUMNS \
	"id, name, apex, serial, default_ttl, created_on, modified_on"
