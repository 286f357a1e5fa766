/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The database driver's front (db.h): picks a driver by target at open,
 * then hands each call to the driver of its handle (db_driver.h). What
 * every engine shares lives here: choosing the dialect's text of a
 * statement, and running a statement for its effect.
 */
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "records/db_driver.h"

/* Is target a PostgreSQL connection URI? */
bool rdb_target_is_pg(const char *target)
{
	return strncmp(target, "postgresql://", 13) == 0 ||
	       strncmp(target, "postgres://", 11) == 0;
}

int rdb_open(rdb_t **out, const char *target, const rdb_options_t *opts)
{
	if (out == NULL || target == NULL) {
		return KNOT_EINVAL;
	}
	static const rdb_options_t defaults = {
		.label = "records store",
		.busy_timeout_ms = 10000,
	};
	if (opts == NULL) {
		opts = &defaults;
	}
	if (rdb_target_is_pg(target)) {
#ifdef ZC_HAVE_LIBPQ
		return rdb_pg_driver.open(out, target, opts);
#else
		zc_error("%s: this zonecast was built without PostgreSQL"
		         " (libpq)", opts->label ? opts->label : "database");
		return KNOT_ENOTSUP;
#endif
	}
	return rdb_sqlite_driver.open(out, target, opts);
}

void rdb_close(rdb_t *db)
{
	if (db != NULL) {
		db->driver->close(db);
	}
}

rdb_kind_t rdb_kind(const rdb_t *db)
{
	return db->driver->kind;
}

int rdb_exec(rdb_t *db, const char *sql)
{
	return db->driver->exec(db, sql);
}

/* The statement's text in this connection's dialect. */
static const char *dialect_text(const rdb_t *db, const rdb_sql_t *sql)
{
	return db->driver->kind == RDB_SQLITE ? sql->sqlite : sql->pg;
}

int rdb_prepare(rdb_t *db, const rdb_sql_t *sql, rdb_stmt_t **st)
{
	const char *text = dialect_text(db, sql);
	return text != NULL ? db->driver->prepare(db, text, true, st) :
	       KNOT_ENOTSUP;
}

int rdb_prepare_once(rdb_t *db, const rdb_sql_t *sql, rdb_stmt_t **st)
{
	const char *text = dialect_text(db, sql);
	return text != NULL ? db->driver->prepare(db, text, false, st) :
	       KNOT_ENOTSUP;
}

void rdb_bind_int64(rdb_stmt_t *st, int i, int64_t v)
{
	st->driver->bind_int64(st, i, v);
}

void rdb_bind_blob(rdb_stmt_t *st, int i, const void *p, size_t len)
{
	st->driver->bind_blob(st, i, p, len);
}

void rdb_bind_text(rdb_stmt_t *st, int i, const char *s)
{
	st->driver->bind_text(st, i, s);
}

void rdb_bind_null(rdb_stmt_t *st, int i)
{
	st->driver->bind_null(st, i);
}

bool rdb_has_arrays(const rdb_t *db)
{
	return db->driver->bind_int64_array != NULL;
}

void rdb_bind_int64_array(rdb_stmt_t *st, int i, const int64_t *v, size_t n)
{
	st->driver->bind_int64_array(st, i, v, n);
}

void rdb_bind_blob_array(rdb_stmt_t *st, int i, const void *const *v,
                         const size_t *lens, size_t n)
{
	st->driver->bind_blob_array(st, i, v, lens, n);
}

int rdb_step(rdb_stmt_t *st)
{
	return st->driver->step(st);
}

int rdb_run(rdb_stmt_t *st)
{
	int rc = st->driver->step(st);
	return rc < 0 ? rc : ZC_EOK;
}

int rdb_defer(rdb_stmt_t *st)
{
	return st->driver->defer != NULL ? st->driver->defer(st) : rdb_run(st);
}

int rdb_defer_released(rdb_stmt_t *st)
{
	return st->driver->defer_released != NULL ?
	       st->driver->defer_released(st) : rdb_defer(st);
}

int rdb_defer_row(rdb_stmt_t *st, const char *types)
{
	return st->driver->defer_row != NULL ? st->driver->defer_row(st, types) :
	       rdb_defer(st);
}

int rdb_query_int64(rdb_t *db, const rdb_sql_t *sql, int64_t *value)
{
	rdb_stmt_t *st;
	*value = 0;
	int ret = rdb_prepare(db, sql, &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = rdb_step(st);
	*value = rc == RDB_ROW ? rdb_col_int64(st, 0) : 0;
	rdb_done(st);
	return rdb_status(rc);
}

int64_t rdb_col_int64(rdb_stmt_t *st, int i)
{
	return st->driver->col_int64(st, i);
}

const void *rdb_col_blob(rdb_stmt_t *st, int i, size_t *len)
{
	return st->driver->col_blob(st, i, len);
}

size_t rdb_col_bytes(rdb_stmt_t *st, int i)
{
	return st->driver->col_bytes(st, i);
}

const char *rdb_col_text(rdb_stmt_t *st, int i)
{
	return st->driver->col_text(st, i);
}

bool rdb_col_is_null(rdb_stmt_t *st, int i)
{
	return st->driver->col_is_null(st, i);
}

void rdb_reset(rdb_stmt_t *st)
{
	st->driver->reset(st);
}

void rdb_done(rdb_stmt_t *st)
{
	if (st != NULL) {
		st->driver->done(st);
	}
}

int64_t rdb_changes(rdb_t *db)
{
	return db->driver->changes(db);
}

int64_t rdb_last_insert_id(rdb_t *db)
{
	return db->driver->last_insert_id(db);
}

int rdb_begin_write(rdb_t *db)
{
	return db->driver->begin_write(db);
}

int rdb_commit(rdb_t *db)
{
	return db->driver->commit(db);
}

int rdb_commit_then(rdb_t *db, rdb_stmt_t *after)
{
	return db->driver->commit_then != NULL ?
	       db->driver->commit_then(db, after) : db->driver->commit(db);
}

void rdb_rollback(rdb_t *db)
{
	db->driver->rollback(db);
}

int rdb_begin_read(rdb_t *db)
{
	return db->driver->begin_read(db);
}

void rdb_end_read(rdb_t *db)
{
	db->driver->end_read(db);
}

bool rdb_in_txn(rdb_t *db)
{
	return db->driver->in_txn(db);
}

int rdb_savepoint(rdb_t *db, rdb_level_t level)
{
	return db->driver->savepoint(db, level);
}

int rdb_release(rdb_t *db, rdb_level_t level)
{
	return db->driver->release(db, level);
}

int rdb_release_later(rdb_t *db, rdb_level_t level)
{
	return db->driver->release_later != NULL ?
	       db->driver->release_later(db, level) :
	       db->driver->release(db, level);
}

int rdb_savepoint_later(rdb_t *db, rdb_level_t level)
{
	return db->driver->savepoint_later != NULL ?
	       db->driver->savepoint_later(db, level) :
	       db->driver->savepoint(db, level);
}

bool rdb_txn_replay(rdb_t *db)
{
	return db->driver->txn_replay != NULL && db->driver->txn_replay(db);
}

void rdb_rollback_to(rdb_t *db, rdb_level_t level)
{
	db->driver->rollback_to(db, level);
}
