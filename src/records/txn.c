/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Write transactions of the records store and the savepoints of units
 * (records.h, "Write transactions"). The SQL is the SQL core's (sql.c);
 * what this file adds is keeping each file's per-connection state in
 * step with the transaction: record ids and counts written at commit,
 * and everything a rollback undoes forgotten with it (the zone row, the
 * change log's indexed version, the counts since the savepoint).
 */
#include "common/error.h"
#include "records/changelog.h"
#include "records/internal.h"

int records_write_begin(records_store_t *store)
{
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	int ret = records_sql_exec(store, "BEGIN IMMEDIATE");
	store->in_write = ret == ZC_EOK;
	return ret;
}

int records_write_commit(records_store_t *store)
{
	int ret = records_ids_flush(store);
	if (ret == ZC_EOK) {
		ret = records_counts_flush(store);
	}
	if (ret == ZC_EOK) {
		ret = records_sql_exec(store, "COMMIT");
	}
	if (ret != ZC_EOK) {
		if (records_write_open(store)) {
			records_sql_exec(store, "ROLLBACK");
		}
		records_changelog_rollback(store);
	}
	records_ids_forget(store);
	records_zrow_forget(store);
	store->in_write = false;
	return ret;
}

void records_write_rollback(records_store_t *store)
{
	if (records_write_open(store)) {
		records_sql_exec(store, "ROLLBACK");
	}
	records_changelog_rollback(store);
	records_ids_forget(store);
	records_zrow_forget(store);
	records_counts_forget(store);
	store->in_write = false;
}

int records_savepoint(records_store_t *store)
{
	records_counts_mark(store, 0);
	return records_sql_savepoint(store, 0);
}

int records_savepoint_release(records_store_t *store)
{
	return records_sql_release(store, 0);
}

/* Undoes a savepoint (level 0: the unit's, 1: the inner one) and what
 * this connection keeps of it. */
static void rollback_to(records_store_t *store, int level)
{
	records_sql_rollback_to(store, level);
	records_counts_restore(store, level);
	records_changelog_rollback(store);
	records_zrow_forget(store);
}

void records_savepoint_rollback(records_store_t *store)
{
	rollback_to(store, 0);
}

int records_inner_savepoint(records_store_t *store)
{
	records_counts_mark(store, 1);
	return records_sql_savepoint(store, 1);
}

int records_inner_release(records_store_t *store)
{
	return records_sql_release(store, 1);
}

void records_inner_rollback(records_store_t *store)
{
	rollback_to(store, 1);
}
