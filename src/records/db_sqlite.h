/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to records/: the SQLite driver's extras, for the little code
 * that is SQLite by nature and says so (schema.c registers an SQL
 * function its migrations call). Everything else goes through db.h.
 */
#pragma once

#include <sqlite3.h>

#include "records/db.h"

/* The connection's sqlite3 handle; NULL when db is not SQLite. */
sqlite3 *rdb_sqlite_handle(rdb_t *db);

/* The one place SQLite result codes become zonecast codes. */
int rdb_sqlite_error(rdb_t *db, int rc);
