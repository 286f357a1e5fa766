/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The PostgreSQL driver's gathered inserts (rdb_defer_row(), db.h): rows
 * of one single-row INSERT deferred one after another in a write
 * transaction are held here and sent as ONE statement that inserts them
 * all from arrays ("INSERT INTO t(c1, ..., cn) SELECT * FROM unnest($1,
 * ..., $n)"), into the pipeline (db_pg_pipe.c). A batch of 1,000 records
 * was 2,000 statements, each with its own executor start, foreign-key
 * trigger set-up and protocol messages (about half of postgres' time per
 * record, bench/pg_nodes --pg-statements); it is now two.
 *
 * - Order: rows of one statement keep their order (unnest reads the
 *   arrays in order; the changes' seq follows it). Rows of two gathered
 *   statements (records and changes) may go in another order relative to
 *   each other: neither reads the other's table. Every other statement
 *   (a read, a queued UPDATE, a savepoint, its release, the commit) sends
 *   what is gathered first, so nothing else ever sees the rows late.
 * - Errors: a row that fails fails its whole statement, with the row's
 *   SQLSTATE, as the unit's first failure: the unit fails as it did.
 * - A savepoint sends first, so held rows always belong to the innermost
 *   savepoint: its rollback (or the transaction's) drops them unsent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libknot/errcode.h>

#include "common/error.h"
#include "records/db_pg_internal.h"

/* Rows in one gathered statement at most. */
#define GATHER_ROWS 2048

static bool grow(pg_column_t *c, size_t more)
{
	if (c->len + more <= c->cap) {
		return true;
	}
	size_t cap = c->cap ? c->cap : 4096;
	while (cap < c->len + more) {
		cap *= 2;
	}
	uint8_t *buf = realloc(c->buf, cap);
	if (buf == NULL) {
		return false;
	}
	c->buf = buf;
	c->cap = cap;
	return true;
}

static void clear(pg_gather_t *g)
{
	for (int k = 0; k < g->stmt.nparams; k++) {
		g->cols[k].len = 0;
		g->cols[k].has_null = false;
	}
	g->rows = 0;
}

static void release(pg_gather_t *g)
{
	for (int k = 0; k < MAX_PARAMS; k++) {
		free(g->cols[k].buf);
	}
	free(g->stmt.sql);
	memset(g, 0, sizeof(*g));
}

void pg_gather_free(pg_db_t *d)
{
	for (int i = 0; i < PG_GATHERS; i++) {
		release(&d->gather[i]);
	}
}

void pg_gather_drop(pg_db_t *d)
{
	for (int i = 0; i < PG_GATHERS; i++) {
		clear(&d->gather[i]);
	}
	d->unit_pending = false;
	d->released_rows = false;
}

bool pg_gathering(const pg_db_t *d)
{
	for (int i = 0; i < PG_GATHERS; i++) {
		if (d->gather[i].rows > 0) {
			return true;
		}
	}
	return false;
}

/* The element type of a column type letter: i int8, b bytea, t text. */
static bool column_type(char t, Oid *elem, Oid *array, const char **name)
{
	switch (t) {
	case 'i':
		*elem = OID_INT8, *array = OID_INT8_ARRAY, *name = "int8";
		return true;
	case 'b':
		*elem = OID_BYTEA, *array = OID_BYTEA_ARRAY, *name = "bytea";
		return true;
	case 't':
		*elem = OID_TEXT, *array = OID_TEXT_ARRAY, *name = "text";
		return true;
	default:
		return false;
	}
}

/*
 * The array form of the statement's text, "INSERT INTO t(...) VALUES ($1,
 * ..., $n)" with every parameter once and in order; NULL when it is not
 * of that form (then the row is deferred as it is).
 */
static char *array_sql(const pg_stmt_t *s, const char *types)
{
	int n = (int)strlen(types);
	if (n != s->nparams || n > MAX_PARAMS ||
	    strncmp(s->sql, "INSERT INTO ", 12) != 0) {
		return NULL;
	}
	const char *values = strstr(s->sql, " VALUES (");
	if (values == NULL) {
		return NULL;
	}
	char want[MAX_PARAMS * 6 + 16];
	size_t len = (size_t)snprintf(want, sizeof(want), " VALUES (");
	for (int k = 1; k <= n; k++) {
		len += (size_t)snprintf(want + len, sizeof(want) - len, "$%d%s", k,
		                        k < n ? ", " : ")");
	}
	if (strcmp(values, want) != 0) {
		return NULL;
	}
	size_t head = (size_t)(values - s->sql);
	size_t size = head + 64 + (size_t)n * 16;
	char *sql = malloc(size);
	if (sql == NULL) {
		return NULL;
	}
	len = (size_t)snprintf(sql, size, "%.*s SELECT * FROM unnest(",
	                       (int)head, s->sql);
	for (int k = 0; k < n; k++) {
		Oid elem = 0, array = 0;
		const char *name;
		if (!column_type(types[k], &elem, &array, &name)) {
			free(sql);
			return NULL;
		}
		len += (size_t)snprintf(sql + len, size - len, "$%d::%s[]%s",
		                        k + 1, name, k + 1 < n ? ", " : ")");
	}
	return sql;
}

/* Appends the statement's bound row to the columns; false when a value
 * is not of its column's type (the row is then not gathered). */
static bool fits(const pg_stmt_t *s, const char *types)
{
	for (int k = 0; k < s->nparams; k++) {
		param_kind_t kind = s->params[k].kind;
		bool ok = kind == P_NULL ||
		          (types[k] == 'i' && kind == P_INT) ||
		          (types[k] == 'b' && kind == P_BLOB) ||
		          (types[k] == 't' && kind == P_TEXT);
		if (!ok) {
			return false;
		}
	}
	return true;
}

static bool append(pg_gather_t *g, const pg_stmt_t *s)
{
	for (int k = 0; k < g->stmt.nparams; k++) {
		const param_t *p = &s->params[k];
		pg_column_t *c = &g->cols[k];
		size_t size = p->kind == P_INT ? 8 : p->kind == P_BLOB ? p->len :
		              p->kind == P_TEXT ? strlen(p->p) : 0;
		/* Room for the array's header ahead of the first element. */
		if (!grow(c, 4 + size + (c->len == 0 ? 20 : 0))) {
			return false;
		}
		if (c->len == 0) {
			c->len = 20;
		}
		uint8_t *w = c->buf + c->len;
		if (p->kind == P_NULL) {
			w = pg_put_be32(w, UINT32_MAX); /* Length -1: NULL. */
			c->has_null = true;
		} else if (p->kind == P_INT) {
			uint64_t v = (uint64_t)p->i64;
			w = pg_put_be32(w, 8);
			w = pg_put_be32(w, (uint32_t)(v >> 32));
			w = pg_put_be32(w, (uint32_t)v);
		} else {
			w = pg_put_be32(w, (uint32_t)size);
			if (size > 0) {
				memcpy(w, p->p, size);
			}
			w += size;
		}
		c->len = (size_t)(w - c->buf);
	}
	g->rows++;
	return true;
}

static uint32_t get_be32(const uint8_t *r)
{
	return (uint32_t)r[0] << 24 | (uint32_t)r[1] << 16 |
	       (uint32_t)r[2] << 8 | r[3];
}

/* Whether the first row can go as its own INSERT (the cache entry still
 * that statement); it is prepared in the queue if the session lacks it. */
static bool single_ready(const pg_db_t *d, const pg_gather_t *g)
{
	(void)d;
	const pg_stmt_t *s = g->single;
	return s != NULL && s->key == g->key && s->nparams == g->stmt.nparams;
}

/*
 * A lone row sent as the INSERT it came as: an array statement of one
 * row cost postgres more than the plain one (its function scan), and an
 * UPDATE unit has one record. Integers go as text (the INSERT was
 * prepared with int8 or with the column's own type), text as text,
 * bytea in binary, as the driver sends them (db_pg_wire.c).
 */
static int send_single(pg_db_t *d, pg_gather_t *g)
{
	const char *values[MAX_PARAMS];
	int lengths[MAX_PARAMS], formats[MAX_PARAMS];
	char nums[MAX_PARAMS][24];
	char *texts[MAX_PARAMS] = { NULL };
	int ret = ZC_EOK;
	for (int k = 0; k < g->stmt.nparams; k++) {
		const uint8_t *e = g->cols[k].buf + 20;
		uint32_t len = get_be32(e);
		values[k] = NULL;
		lengths[k] = 0;
		formats[k] = 0;
		if (len == UINT32_MAX) {
			continue; /* NULL */
		}
		if (g->types[k] == 'i') {
			uint64_t v = (uint64_t)get_be32(e + 4) << 32 | get_be32(e + 8);
			pg_int64_text(nums[k], (int64_t)v);
			values[k] = nums[k];
		} else if (g->types[k] == 't') {
			texts[k] = malloc(len + 1);
			if (texts[k] == NULL) {
				ret = KNOT_ENOMEM;
				break;
			}
			memcpy(texts[k], e + 4, len);
			texts[k][len] = '\0';
			values[k] = texts[k];
		} else {
			values[k] = len > 0 ? (const char *)e + 4 : "";
			lengths[k] = (int)len;
			formats[k] = 1;
		}
	}
	pg_stmt_t *single = g->single;
	if (ret == ZC_EOK && (!single->prepared || single->gen != d->gen)) {
		Oid types[MAX_PARAMS];
		for (int k = 0; k < g->stmt.nparams; k++) {
			types[k] = g->types[k] == 'i' ? OID_INT8 :
			           g->types[k] == 't' ? OID_TEXT : OID_BYTEA;
		}
		ret = pg_pipe_prepare(single, types);
	}
	if (ret == ZC_EOK) {
		ret = pg_pipe_prepared(d, single->name, g->stmt.nparams, values,
		                       lengths, formats);
	}
	for (int k = 0; k < g->stmt.nparams; k++) {
		free(texts[k]);
	}
	return ret;
}

/*
 * Sends the first `rows` rows of g (lens: each column's length up to
 * their end) as one statement, or as the single INSERT they came as, and
 * keeps the rest, moved to the front.
 */
static int send_rows(pg_db_t *d, pg_gather_t *g, size_t rows,
                     const size_t *lens)
{
	int ret;
	if (rows == 1 && single_ready(d, g)) {
		ret = send_single(d, g);
	} else {
		for (int k = 0; k < g->stmt.nparams; k++) {
			pg_column_t *c = &g->cols[k];
			Oid elem = 0, array = 0;
			const char *name;
			column_type(g->types[k], &elem, &array, &name);
			uint8_t *w = pg_put_be32(c->buf, 1);
			w = pg_put_be32(w, c->has_null);
			w = pg_put_be32(w, elem);
			w = pg_put_be32(w, (uint32_t)rows);
			pg_put_be32(w, 1);
			g->stmt.params[k] = (param_t){ .kind = P_ARRAY, .p = c->buf,
			                               .len = lens[k], .oid = array };
		}
		/* libpq copies the parameters as it queues them. */
		ret = pg_pipe_send(&g->stmt);
	}
	if (rows >= g->rows) {
		clear(g);
		return ret;
	}
	for (int k = 0; k < g->stmt.nparams; k++) {
		pg_column_t *c = &g->cols[k];
		size_t rest = c->len - lens[k];
		memmove(c->buf + 20, c->buf + lens[k], rest);
		c->len = 20 + rest;
	}
	g->rows -= rows;
	return ret;
}

int pg_gather_flush(pg_db_t *d)
{
	if (d->severed && pg_gathering(d)) {
		/* The session was reset: the rows' transaction is gone, and
		 * they must not run on their own. */
		pg_gather_drop(d);
		return ZC_EUNAVAILABLE;
	}
	int first = pg_gather_materialize(d);
	bool released = d->released_rows;
	d->released_rows = false;
	for (int i = 0; i < PG_GATHERS; i++) {
		pg_gather_t *g = &d->gather[i];
		if (g->rows == 0) {
			continue;
		}
		size_t lens[MAX_PARAMS];
		for (int k = 0; k < g->stmt.nparams; k++) {
			lens[k] = g->cols[k].len;
		}
		/* Held no more, whatever the send gives (a failed send fails
		 * the transaction). */
		int ret = send_rows(d, g, g->rows, lens);
		first = first != ZC_EOK ? first : ret;
	}
	if (released && first == ZC_EOK) {
		d->released_slot = d->queued; /* Theirs, as at a RELEASE. */
	}
	return first;
}

void pg_gather_mark(pg_db_t *d)
{
	for (int i = 0; i < PG_GATHERS; i++) {
		pg_gather_t *g = &d->gather[i];
		g->mark_rows = g->rows;
		for (int k = 0; k < MAX_PARAMS; k++) {
			g->mark_len[k] = g->cols[k].len;
			g->mark_null[k] = g->cols[k].has_null;
		}
	}
	d->unit_pending = true;
}

void pg_gather_unmark(pg_db_t *d)
{
	if (!d->unit_pending) {
		return;
	}
	d->unit_pending = false;
	for (int i = 0; i < PG_GATHERS; i++) {
		pg_gather_t *g = &d->gather[i];
		if (g->mark_rows == 0) {
			clear(g);
			continue;
		}
		g->rows = g->mark_rows;
		for (int k = 0; k < g->stmt.nparams; k++) {
			g->cols[k].len = g->mark_len[k];
			g->cols[k].has_null = g->mark_null[k];
		}
	}
}

int pg_gather_materialize(pg_db_t *d)
{
	if (!d->unit_pending) {
		return ZC_EOK;
	}
	d->unit_pending = false;
	d->released_rows = false; /* All before the mark: sent here. */
	int first = ZC_EOK;
	bool sent = false;
	for (int i = 0; i < PG_GATHERS; i++) {
		pg_gather_t *g = &d->gather[i];
		if (g->mark_rows == 0 || g->rows == 0) {
			continue;
		}
		int ret = send_rows(d, g, g->mark_rows, g->mark_len);
		first = first != ZC_EOK ? first : ret;
		sent = true;
	}
	if (sent && first == ZC_EOK) {
		/* Released units' rows: a failure among them is theirs. */
		d->released_slot = d->queued;
	}
	return first != ZC_EOK ? first :
	       pg_pipe_send_text(d, "SAVEPOINT zc_unit");
}

int pg_gather_send_released(pg_db_t *d)
{
	int first = ZC_EOK;
	for (int i = 0; i < PG_GATHERS && d->unit_pending; i++) {
		pg_gather_t *g = &d->gather[i];
		if (g->mark_rows == 0 || g->rows == 0) {
			continue;
		}
		int ret = send_rows(d, g, g->mark_rows, g->mark_len);
		first = first != ZC_EOK ? first : ret;
		g->mark_rows = 0; /* Its rollback now drops all held. */
	}
	return first;
}

int pg_gather_row(pg_stmt_t *s, const char *types, bool *gathered)
{
	pg_db_t *d = s->db;
	*gathered = false;
	if (s->key == NULL || !fits(s, types)) {
		return ZC_EOK;
	}
	pg_gather_t *g = NULL;
	for (int i = 0; i < PG_GATHERS && g == NULL; i++) {
		if (d->gather[i].key == s->key) {
			g = &d->gather[i];
		}
	}
	if (g == NULL) {
		/* A slot of its own: a free one, or the first one's, sent. */
		for (int i = 0; i < PG_GATHERS && g == NULL; i++) {
			if (d->gather[i].key == NULL) {
				g = &d->gather[i];
			}
		}
		if (g == NULL) {
			int ret = pg_gather_flush(d);
			if (ret != ZC_EOK) {
				return ret;
			}
			g = &d->gather[0];
			release(g);
		}
		char *sql = array_sql(s, types);
		if (sql == NULL) {
			return ZC_EOK;
		}
		/* A statement of the driver's, never in its cache: prepared
		 * on the server once per session, as cached ones are. */
		g->key = s->key;
		g->stmt = (pg_stmt_t){ .db = d, .key = s->key, .sql = sql,
		                       .nparams = s->nparams, .row = -1 };
		g->stmt.used = s->nparams == 64 ? UINT64_MAX :
		               (UINT64_C(1) << s->nparams) - 1;
		snprintf(g->stmt.name, sizeof(g->stmt.name), "zc%u",
		         d->next_name++);
		memcpy(g->types, types, (size_t)s->nparams);
	}
	if (g->rows == 0) {
		g->single = s; /* The entry the first row would go as. */
	}
	if (!append(g, s)) {
		/* A row in part: nothing gathered can be trusted, and the
		 * transaction must not commit without it. */
		pg_gather_drop(d);
		d->severed = d->txn;
		return KNOT_ENOMEM;
	}
	*gathered = true;
	return g->rows >= GATHER_ROWS ? pg_gather_flush(d) : ZC_EOK;
}
