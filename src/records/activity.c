/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the metrics endpoint reads of the change log besides the
 * builder's backlog (backlog.c): how many events each zone got since a
 * sequence. Read-only, a range of the log's sequence (its rowid), so a
 * scrape costs what is new since the last one.
 */
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/sqlite.h"

int records_zone_activity(records_store_t *store, uint64_t after,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx, uint64_t *last_seq)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_exec(store, "BEGIN");
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The last sequence and the counts from one snapshot. */
	ret = records_last_seq(store, last_seq);
	if (ret == ZC_EOK) {
		ret = records_sql_prepare(store, "SELECT zone_id, count(*) FROM"
		                          " changes WHERE seq > ? AND seq <= ?"
		                          " GROUP BY zone_id", &stmt);
	}
	if (ret != ZC_EOK) {
		records_sql_exec(store, "ROLLBACK");
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, (int64_t)after);
	sqlite3_bind_int64(stmt, 2, (int64_t)*last_seq);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (cb(sqlite3_column_int64(stmt, 0),
		       (uint64_t)sqlite3_column_int64(stmt, 1), ctx) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = records_sql_error(store->db, rc);
	records_sql_done(store, stmt);
	records_sql_exec(store, "ROLLBACK");
	return ret;
}
