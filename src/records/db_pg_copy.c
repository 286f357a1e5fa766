/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * PostgreSQL's bulk load (db.h, rdb_copy_*()): COPY table (columns) FROM
 * STDIN (FORMAT binary) on the driver's connection (pg_conn_ready(),
 * db_pg_internal.h), rows encoded as they come and sent in chunks of
 * FLUSH_BYTES. docs/design-postgresql.md §6 (M7) and Appendix A.8 give
 * the reasons: one row per round trip was the import's whole cost.
 *
 * Design
 *
 * - Binary, not text: bytea and integers go as they are, with no escaping
 *   of backslashes, tabs, newlines or NULs to get wrong, and no hex
 *   doubling of rdata. The binary form of a value depends on its column's
 *   type, so begin() reads the types first (SELECT columns FROM table
 *   LIMIT 0) and each integer is encoded at its column's width (int8,
 *   int4, int2, oid, bool; out of range: KNOT_ERANGE). Blobs and text go
 *   as raw octets into bytea, text and varchar columns.
 * - The stream's format (PostgreSQL docs, COPY, "Binary Format"): the
 *   11-octet signature, a flags word and a header extension length (both
 *   0); per row a 16-bit count of fields, then each field as a 32-bit
 *   length (-1: NULL) and its octets, all in network order; a 16-bit -1
 *   ends the data.
 * - The server checks rows as they arrive but reports a failure (a
 *   duplicate key, a value a column refuses) only at the end: libpq keeps
 *   accepting data until PQputCopyEnd(). end() then returns the mapped
 *   code (the driver's mapping, pg_map_error(): a unique violation is
 *   ZC_EEXISTS) and the transaction is failed; the caller rolls it back.
 * - The pipeline (db_pg_pipe.c) is synced before the COPY starts:
 *   statements queued before it are answered first, and a failure among
 *   them fails the load's start.
 * - abort() ends the COPY with an error message of ours, which makes the
 *   server discard every row and fail the transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>
#include <libpq-fe.h>

#include "common/error.h"
#include "common/log.h"
#include "records/db_pg_internal.h"

/* Encoded rows are sent once this many octets are waiting. */
#define FLUSH_BYTES (256 * 1024)

typedef struct {
	rdb_copy_t base;
	pg_db_t *db;
	PGconn *conn;
	const char *table;
	/* Each column's type, in the list's order. */
	Oid *types;
	/* Encoded, not yet sent. */
	uint8_t *buf;
	size_t len;
	size_t cap;
} pg_copy_t;

static const uint8_t signature[11] = { 'P', 'G', 'C', 'O', 'P', 'Y', '\n',
                                       0xff, '\r', '\n', 0 };

static pg_copy_t *copy_of(rdb_copy_t *c)
{
	return (pg_copy_t *)c;
}

/* Room for n more octets in the buffer. */
static int reserve(pg_copy_t *p, size_t n)
{
	if (p->len + n <= p->cap) {
		return ZC_EOK;
	}
	size_t cap = p->cap ? p->cap : FLUSH_BYTES + 4096;
	while (cap < p->len + n) {
		cap *= 2;
	}
	uint8_t *grown = realloc(p->buf, cap);
	if (grown == NULL) {
		return KNOT_ENOMEM;
	}
	p->buf = grown;
	p->cap = cap;
	return ZC_EOK;
}

/* Appends x's low `octets` octets in network order (room reserved). */
static void put_be(pg_copy_t *p, uint64_t x, int octets)
{
	for (int i = octets - 1; i >= 0; i--) {
		p->buf[p->len++] = (uint8_t)(x >> (8 * i));
	}
}

/* Appends a field: its length (-1: NULL) and its octets. */
static int put_field(pg_copy_t *p, const void *v, int32_t len)
{
	int ret = reserve(p, 4 + (len > 0 ? (size_t)len : 0));
	if (ret != ZC_EOK) {
		return ret;
	}
	put_be(p, (uint32_t)len, 4);
	if (len > 0) {
		memcpy(p->buf + p->len, v, (size_t)len);
		p->len += (size_t)len;
	}
	return ZC_EOK;
}

/* Starts a row at its first value: the count of its fields. */
static int start_value(pg_copy_t *p)
{
	if (p->base.given > 0) {
		return ZC_EOK;
	}
	int ret = reserve(p, 2);
	if (ret == ZC_EOK) {
		put_be(p, (uint16_t)p->base.columns, 2);
	}
	return ret;
}

/* A statement's failed result as a code; clears it. */
static int failed(pg_copy_t *p, PGresult *res)
{
	int ret = pg_map_error(p->db, res);
	PQclear(res);
	return ret;
}

/* Sends what is encoded. */
static int flush(pg_copy_t *p)
{
	if (p->len == 0) {
		return ZC_EOK;
	}
	if (PQputCopyData(p->conn, (const char *)p->buf, (int)p->len) != 1) {
		return pg_map_error(p->db, NULL);
	}
	p->len = 0;
	return ZC_EOK;
}

/* Reads the columns' types: a query that returns no row names them. */
static int read_types(pg_copy_t *p, const char *columns, int n)
{
	char sql[1024];
	if (snprintf(sql, sizeof(sql), "SELECT %s FROM %s LIMIT 0", columns,
	             p->table) >= (int)sizeof(sql)) {
		return KNOT_ESPACE;
	}
	PGresult *res = PQexecParams(p->conn, sql, 0, NULL, NULL, NULL, NULL,
	                             1);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		return failed(p, res);
	}
	int ret = PQnfields(res) == n ? ZC_EOK : KNOT_EINVAL;
	for (int i = 0; ret == ZC_EOK && i < n; i++) {
		p->types[i] = PQftype(res, i);
	}
	PQclear(res);
	return ret;
}

/* Sends COPY ... FROM STDIN and the stream's header. */
static int start_copy(pg_copy_t *p, const char *columns)
{
	char sql[1024];
	if (snprintf(sql, sizeof(sql), "COPY %s (%s) FROM STDIN"
	             " (FORMAT binary)", p->table, columns) >= (int)sizeof(sql)) {
		return KNOT_ESPACE;
	}
	/* The header first: once COPY runs, nothing may fail before it
	 * is sent. */
	int ret = reserve(p, sizeof(signature) + 8);
	if (ret != ZC_EOK) {
		return ret;
	}
	memcpy(p->buf, signature, sizeof(signature));
	p->len = sizeof(signature);
	put_be(p, 0, 4); /* flags */
	put_be(p, 0, 4); /* header extension length */
	PGresult *res = PQexec(p->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		return failed(p, res);
	}
	PQclear(res);
	return ZC_EOK;
}

static void free_copy(pg_copy_t *p)
{
	free(p->types);
	free(p->buf);
	free(p);
}

/* Reads the COPY's results to the end: its outcome as a code. */
static int finish(pg_copy_t *p)
{
	int ret = ZC_EOK;
	PGresult *res;
	while ((res = PQgetResult(p->conn)) != NULL) {
		int code = PQresultStatus(res) == PGRES_COMMAND_OK ? ZC_EOK :
		           pg_map_error(p->db, res);
		PQclear(res);
		ret = ret != ZC_EOK ? ret : code;
	}
	return ret;
}

static int pg_copy_begin(rdb_t *db, const char *table, const char *columns,
                         int ncolumns, rdb_copy_t **out)
{
	pg_copy_t *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->types = calloc((size_t)ncolumns,
	                                    sizeof(Oid))) == NULL) {
		free(p);
		return KNOT_ENOMEM;
	}
	p->db = (pg_db_t *)db;
	p->table = table;
	int ret = pg_conn_ready(p->db);
	p->conn = p->db->conn;
	if (ret == ZC_EOK) {
		ret = read_types(p, columns, ncolumns);
	}
	if (ret == ZC_EOK) {
		ret = start_copy(p, columns);
	}
	if (ret != ZC_EOK) {
		free_copy(p);
		return ret;
	}
	*out = &p->base;
	return ZC_EOK;
}

/* An integer in its column's binary form. */
static int pg_copy_put_int64(rdb_copy_t *c, int64_t v)
{
	pg_copy_t *p = copy_of(c);
	int ret = start_value(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	Oid type = p->types[c->given];
	int octets = type == OID_INT8 ? 8 : type == OID_INT4 ? 4 :
	             type == OID_OID ? 4 : type == OID_INT2 ? 2 :
	             type == OID_BOOL ? 1 : 0;
	if (octets == 0) {
		zc_error("COPY %s: column %d (type %u) takes no integer",
		         p->table, c->given + 1, (unsigned)type);
		return ZC_ESQL;
	}
	bool fits = type == OID_INT8 ? true :
	            type == OID_INT4 ? v >= INT32_MIN && v <= INT32_MAX :
	            type == OID_OID ? v >= 0 && v <= UINT32_MAX :
	            type == OID_INT2 ? v >= INT16_MIN && v <= INT16_MAX :
	            v == 0 || v == 1;
	if (!fits) {
		return KNOT_ERANGE;
	}
	ret = reserve(p, 4 + (size_t)octets);
	if (ret == ZC_EOK) {
		put_be(p, (uint32_t)octets, 4);
		put_be(p, (uint64_t)v, octets);
	}
	return ret;
}

/* Octets as they are, into a column whose binary form is its octets. */
static int put_octets(rdb_copy_t *c, const void *v, size_t len)
{
	pg_copy_t *p = copy_of(c);
	Oid type = p->types[c->given];
	if (type != OID_BYTEA && type != OID_TEXT && type != OID_VARCHAR) {
		zc_error("COPY %s: column %d (type %u) takes no octets",
		         p->table, c->given + 1, (unsigned)type);
		return ZC_ESQL;
	}
	if (len > INT32_MAX) {
		return KNOT_ERANGE;
	}
	int ret = start_value(p);
	return ret == ZC_EOK ? put_field(p, v, (int32_t)len) : ret;
}

static int pg_copy_put_blob(rdb_copy_t *c, const void *v, size_t len)
{
	return put_octets(c, v, len);
}

static int pg_copy_put_text(rdb_copy_t *c, const char *s)
{
	return put_octets(c, s, strlen(s));
}

static int pg_copy_put_null(rdb_copy_t *c)
{
	pg_copy_t *p = copy_of(c);
	int ret = start_value(p);
	return ret == ZC_EOK ? put_field(p, NULL, -1) : ret;
}

static int pg_copy_row(rdb_copy_t *c)
{
	pg_copy_t *p = copy_of(c);
	return p->len >= FLUSH_BYTES ? flush(p) : ZC_EOK;
}

static void pg_copy_abort(rdb_copy_t *c);

static int pg_copy_end(rdb_copy_t *c)
{
	pg_copy_t *p = copy_of(c);
	int ret = reserve(p, 2);
	if (ret == ZC_EOK) {
		put_be(p, 0xffff, 2); /* the trailer: -1 */
		ret = flush(p);
	}
	if (ret != ZC_EOK) {
		pg_copy_abort(c);
		return ret;
	}
	if (PQputCopyEnd(p->conn, NULL) != 1) {
		ret = pg_map_error(p->db, NULL);
	}
	int outcome = finish(p);
	free_copy(p);
	return ret != ZC_EOK ? ret : outcome;
}

static void pg_copy_abort(rdb_copy_t *c)
{
	pg_copy_t *p = copy_of(c);
	if (PQputCopyEnd(p->conn, "load cancelled by zonecast") == 1) {
		/* The server's answer: an error ("COPY from stdin failed"),
		 * expected, so not logged. */
		PGresult *res;
		while ((res = PQgetResult(p->conn)) != NULL) {
			PQclear(res);
		}
	}
	free_copy(p);
}

const rdb_copy_ops_t rdb_pg_copy_ops = {
	.begin = pg_copy_begin,
	.put_int64 = pg_copy_put_int64,
	.put_blob = pg_copy_put_blob,
	.put_text = pg_copy_put_text,
	.put_null = pg_copy_put_null,
	.row = pg_copy_row,
	.end = pg_copy_end,
	.abort = pg_copy_abort,
};
