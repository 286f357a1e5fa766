/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bulk loads (db.h, rdb_copy_*()): the front that every engine shares,
 * and the load of an engine without a COPY of its own (SQLite), which
 * runs the prepared INSERT of the same columns once per row.
 *
 * The front keeps the load's sticky error and counts each row's values,
 * so that a driver sees only whole rows of the right width. A driver with
 * a COPY (db_pg_copy.c) names its functions in its table's `copy`
 * (db_driver.h); the others get the INSERT below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/db_driver.h"

/* --- The INSERT per row --- */

typedef struct {
	rdb_copy_t base;
	rdb_stmt_t *insert;
} insert_copy_t;

static const rdb_copy_ops_t insert_ops;

/* "INSERT INTO table(columns) VALUES (?1, ..., ?n)", malloc'ed. */
static char *insert_text(const char *table, const char *columns, int n)
{
	size_t size = strlen(table) + strlen(columns) + 40 + 8 * (size_t)n;
	char *sql = malloc(size);
	if (sql == NULL) {
		return NULL;
	}
	size_t len = (size_t)snprintf(sql, size, "INSERT INTO %s(%s) VALUES (",
	                              table, columns);
	for (int i = 1; i <= n; i++) {
		len += (size_t)snprintf(sql + len, size - len, "%s?%d",
		                        i > 1 ? ", " : "", i);
	}
	snprintf(sql + len, size - len, ")");
	return sql;
}

static int insert_begin(rdb_t *db, const char *table, const char *columns,
                        int ncolumns, rdb_copy_t **out)
{
	insert_copy_t *c = calloc(1, sizeof(*c));
	char *sql = insert_text(table, columns, ncolumns);
	if (c == NULL || sql == NULL) {
		free(c);
		free(sql);
		return KNOT_ENOMEM;
	}
	/* Kept out of the cache: the text is ours, freed below. */
	int ret = rdb_prepare_once(db, RDB_SQL(sql), &c->insert);
	free(sql);
	if (ret != ZC_EOK) {
		free(c);
		return ret;
	}
	c->base.ops = &insert_ops;
	*out = &c->base;
	return ZC_EOK;
}

static insert_copy_t *insert_of(rdb_copy_t *c)
{
	return (insert_copy_t *)c;
}

/* The parameter of the value being given (from 1). */
static int next_param(const rdb_copy_t *c)
{
	return c->given + 1;
}

static int insert_put_int64(rdb_copy_t *c, int64_t v)
{
	rdb_bind_int64(insert_of(c)->insert, next_param(c), v);
	return ZC_EOK;
}

static int insert_put_blob(rdb_copy_t *c, const void *p, size_t len)
{
	rdb_bind_blob(insert_of(c)->insert, next_param(c), p, len);
	return ZC_EOK;
}

static int insert_put_text(rdb_copy_t *c, const char *s)
{
	rdb_bind_text(insert_of(c)->insert, next_param(c), s);
	return ZC_EOK;
}

static int insert_put_null(rdb_copy_t *c)
{
	rdb_bind_null(insert_of(c)->insert, next_param(c));
	return ZC_EOK;
}

/* Runs the row's INSERT while its borrowed values are still valid. */
static int insert_row(rdb_copy_t *c)
{
	rdb_stmt_t *st = insert_of(c)->insert;
	int ret = rdb_run(st);
	rdb_reset(st);
	return ret;
}

static void insert_abort(rdb_copy_t *c)
{
	rdb_done(insert_of(c)->insert);
	free(c);
}

static int insert_end(rdb_copy_t *c)
{
	insert_abort(c);
	return ZC_EOK;
}

static const rdb_copy_ops_t insert_ops = {
	.begin = insert_begin,
	.put_int64 = insert_put_int64,
	.put_blob = insert_put_blob,
	.put_text = insert_put_text,
	.put_null = insert_put_null,
	.row = insert_row,
	.end = insert_end,
	.abort = insert_abort,
};

/* --- The front --- */

/* The number of names in a column list ("a, b, c": 3). */
static int count_columns(const char *columns)
{
	int n = 1;
	for (const char *p = columns; *p != '\0'; p++) {
		n += *p == ',';
	}
	return n;
}

int rdb_copy_begin(rdb_t *db, const char *table, const char *columns,
                   rdb_copy_t **out)
{
	if (db == NULL || table == NULL || columns == NULL || out == NULL) {
		return KNOT_EINVAL;
	}
	const rdb_copy_ops_t *ops = db->driver->copy != NULL ?
	                            db->driver->copy : &insert_ops;
	int n = count_columns(columns);
	int ret = ops->begin(db, table, columns, n, out);
	if (ret == ZC_EOK) {
		(*out)->ops = ops;
		(*out)->error = ZC_EOK;
		(*out)->columns = n;
		(*out)->given = 0;
	}
	return ret;
}

/* May the next value go in? Sets the sticky error for one too many. */
static bool takes_value(rdb_copy_t *c)
{
	if (c->error == ZC_EOK && c->given >= c->columns) {
		c->error = KNOT_EINVAL;
	}
	return c->error == ZC_EOK;
}

/* Counts a value given, or keeps its failure. */
static void given(rdb_copy_t *c, int ret)
{
	c->error = ret;
	c->given += ret == ZC_EOK;
}

void rdb_copy_int64(rdb_copy_t *c, int64_t v)
{
	if (takes_value(c)) {
		given(c, c->ops->put_int64(c, v));
	}
}

void rdb_copy_blob(rdb_copy_t *c, const void *p, size_t len)
{
	if (takes_value(c)) {
		given(c, p != NULL ? c->ops->put_blob(c, p, len) :
		      c->ops->put_null(c));
	}
}

void rdb_copy_text(rdb_copy_t *c, const char *s)
{
	if (takes_value(c)) {
		given(c, s != NULL ? c->ops->put_text(c, s) :
		      c->ops->put_null(c));
	}
}

void rdb_copy_null(rdb_copy_t *c)
{
	if (takes_value(c)) {
		given(c, c->ops->put_null(c));
	}
}

int rdb_copy_row(rdb_copy_t *c)
{
	if (c->error == ZC_EOK && c->given != c->columns) {
		c->error = KNOT_EINVAL;
	}
	if (c->error == ZC_EOK) {
		c->error = c->ops->row(c);
	}
	c->given = 0;
	return c->error;
}

int rdb_copy_end(rdb_copy_t *c)
{
	if (c->error == ZC_EOK && c->given != 0) {
		c->error = KNOT_EINVAL; /* A row begun and not ended. */
	}
	if (c->error != ZC_EOK) {
		int ret = c->error;
		c->ops->abort(c);
		return ret;
	}
	return c->ops->end(c);
}

void rdb_copy_abort(rdb_copy_t *c)
{
	if (c != NULL) {
		c->ops->abort(c);
	}
}
