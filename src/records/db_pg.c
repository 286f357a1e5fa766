/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The PostgreSQL driver (db.h, db_driver.h) over libpq: one connection,
 * its statement cache (server-side prepared statements named zc<N>),
 * transactions, savepoints and read snapshots (docs/design-postgresql.md
 * §5.1). SQLSTATEs become zonecast codes in db_pg_wire.c; statements
 * queued without waiting (rdb_defer()) go through db_pg_pipe.c.
 *
 * - Shared SQL's ?N placeholders become $N when a statement is prepared
 *   (a bare ? takes the next number); quoted text is left alone.
 * - A statement is prepared at its first step, with each parameter's
 *   type taken from its first binding (int8, bytea, int8[], bytea[];
 *   text and NULL left to the server). Integers and text go in text
 *   form, blobs and arrays in binary.
 * - Results come back in binary and whole: a step executes the statement
 *   and keeps its rows, so statements may nest as they do on SQLite.
 * - A write transaction is a plain BEGIN (READ COMMITTED): writers of
 *   every process and node run at once. What must take turns locks what
 *   it changes: a unit locks its zone's row before it reads the serial
 *   (records_zone_get(), zones.c), so writers to one zone serialise on
 *   that zone only (docs/design-postgresql.md §4.3); the change log's
 *   commit order is the seal trigger's (schema_pg.sql).
 * - A connection lost (PostgreSQL restarted, network) is
 *   ZC_EUNAVAILABLE; the next use outside a transaction reconnects and
 *   prepares the statements again. An idle connection the server closed
 *   is found before a statement outside a transaction is sent (its socket
 *   has the server's goodbye to read), so the first request after a
 *   restart reconnects instead of failing.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>
#include <libpq-fe.h>

#include "common/error.h"
#include "common/log.h"
#include "records/db_pg_internal.h"

static pg_db_t *db_of(rdb_t *db)
{
	return (pg_db_t *)db;
}

/* The outcome of a result that carries no rows to keep; clears it. */
static int result_code(pg_db_t *d, PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);
	int ret = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? ZC_EOK :
	          pg_map_error(d, res);
	PQclear(res);
	return ret;
}

/* --- Connections --- */

/* Whether the server closed an idle connection (a restart, an
 * administrator's pg_terminate_backend()): libpq notices only at its next
 * read, and that read would be the caller's statement, which fails. A
 * socket with something to read while nothing was asked is the server's
 * goodbye (its FATAL message, then EOF) or a notice; reading it tells. */
static bool hung_up(pg_db_t *d)
{
	struct pollfd p = { .fd = PQsocket(d->conn), .events = POLLIN };
	/* A read takes what is there, the EOF after it shows at the next:
	 * a few rounds, while the socket stays readable. */
	for (int i = 0; i < 4 && p.fd >= 0 && poll(&p, 1, 0) > 0; i++) {
		if (PQconsumeInput(d->conn) == 0 ||
		    PQstatus(d->conn) != CONNECTION_OK) {
			return true;
		}
	}
	return false;
}

/* Connects again when the connection broke, outside a transaction (in
 * one, the transaction is lost: the caller sees ZC_EUNAVAILABLE). */
static int ensure_connected(pg_db_t *d)
{
	if (d->txn && d->severed) {
		return ZC_EUNAVAILABLE;
	}
	if (PQstatus(d->conn) == CONNECTION_OK &&
	    (d->txn || d->piped || !hung_up(d))) {
		return ZC_EOK;
	}
	if (d->txn) {
		return pg_map_error(d, NULL);
	}
	/* The reset leaves pipeline mode; what was queued is lost. */
	d->piped = false;
	d->queued = 0;
	PQreset(d->conn);
	if (PQstatus(d->conn) != CONNECTION_OK) {
		return pg_map_error(d, NULL);
	}
	d->gen++;
	return ZC_EOK;
}

/* Reads what the pipeline holds and leaves it: before any call of
 * libpq's synchronous kind. */
static int unpipe(pg_db_t *d)
{
	int ret = pg_gather_flush(d); /* Rows gathered go first. */
	if (ret != ZC_EOK) {
		pg_pipe_sync(d, NULL);
		return ret;
	}
	return d->piped ? pg_pipe_sync(d, NULL) : ZC_EOK;
}

static int pg_exec(rdb_t *db, const char *sql)
{
	pg_db_t *d = db_of(db);
	int ret = ensure_connected(d);
	if (ret == ZC_EOK) {
		ret = unpipe(d);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	return result_code(d, PQexec(d->conn, sql));
}

static void stmt_clear(pg_stmt_t *s)
{
	PQclear(s->res);
	s->res = NULL;
	s->row = -1;
}

/* Forgets every binding. */
static void params_clear(pg_stmt_t *s)
{
	for (int i = 0; i < MAX_PARAMS; i++) {
		free(s->params[i].owned);
	}
	memset(s->params, 0, sizeof(s->params));
}

static void pg_close(rdb_t *db)
{
	pg_db_t *d = db_of(db);
	for (int i = 0; i < STMT_CACHE; i++) {
		stmt_clear(&d->cache[i]);
		params_clear(&d->cache[i]);
		free(d->cache[i].sql);
	}
	pg_gather_free(d);
	PQfinish(d->conn);
	free(d->target);
	free(d);
}

/* Notices (e.g. "there is no transaction in progress") go to the debug
 * log, not stderr. */
static void on_notice(void *arg, const char *message)
{
	zc_debug("%s: %s", (const char *)arg, message);
}

/*
 * Connects with the session settings in the connection parameters, so that
 * PQreset() after a lost connection sets them again: acknowledged =
 * committed (synchronous_commit on, whatever the server's default), a
 * bounded wait for locks, warnings only; the settings zonecast depends on
 * whatever the role or database sets (PG_SESSION_SETTINGS: no statement
 * timeout, no idle session timeout, READ COMMITTED); a transaction left
 * open and idle by a client that stopped (a node paused with SIGSTOP, a
 * debugger) ended by the server after PG_IDLE_IN_TRANSACTION_MS, so
 * that the zone rows it locked do not hold every other node's writes for
 * ever; a 10 s connect timeout and an
 * application_name (log_commits.node) unless the URI gives its own.
 * Over TCP, unless the URI says otherwise: keepalive probes after 10 s of
 * silence, every 5 s, 3 unanswered end the connection, and data the
 * server has not acknowledged for 30 s ends it too (tcp_user_timeout).
 * Without them a server that vanished without a reset (power lost, a
 * partition) left a connection waiting for its answer for as long as the
 * system's defaults (keepalives after 2 hours): a writer, and every API
 * write and UPDATE behind it, stuck instead of failing with 503 and
 * reconnecting. A unix socket ignores them.
 */
static PGconn *connect_with_settings(const char *target,
                                     const rdb_options_t *opts)
{
	char options[400];
	snprintf(options, sizeof(options), "-c synchronous_commit=on"
	         " -c lock_timeout=%u -c client_min_messages=warning"
	         " " PG_SESSION_SETTINGS
	         " -c idle_in_transaction_session_timeout=%u",
	         opts->busy_timeout_ms, pg_idle_in_transaction_ms());
	/* Later entries override earlier ones: the defaults come before
	 * the URI (expanded from dbname), the settings after it. */
	const char *const keys[] = { "connect_timeout", "application_name",
	                             PG_KEEPALIVE_KEYS, "dbname", "options",
	                             NULL };
	const char *const values[] = { "10", "zonecast", PG_KEEPALIVE_VALUES,
	                               target, options, NULL };
	return PQconnectdbParams(keys, values, 1);
}

static int pg_open(rdb_t **out, const char *target, const rdb_options_t *opts)
{
	pg_db_t *d = calloc(1, sizeof(*d));
	if (d == NULL) {
		return KNOT_ENOMEM;
	}
	d->base.driver = &rdb_pg_driver;
	d->label = opts->label != NULL ? opts->label : "database";
	d->read_only = opts->read_only;
	d->target = strdup(target);
	d->conn = connect_with_settings(target, opts);
	if (d->target == NULL || d->conn == NULL) {
		pg_close(&d->base);
		return KNOT_ENOMEM;
	}
	if (PQstatus(d->conn) != CONNECTION_OK) {
		zc_error("%s: cannot connect to PostgreSQL: %s", d->label,
		         PQerrorMessage(d->conn));
		pg_close(&d->base);
		return ZC_EUNAVAILABLE;
	}
	PQsetNoticeProcessor(d->conn, on_notice, (void *)d->label);
	*out = &d->base;
	return ZC_EOK;
}

/* --- Statements --- */

/* SQLite's ?N (or ?) placeholders as $N, outside quotes. Returns the
 * number of parameters, or -1. */
static int rewrite_placeholders(const char *in, char **out, uint64_t *used)
{
	size_t n = strlen(in);
	char *o = malloc(2 * n + 1);
	if (o == NULL) {
		return -1;
	}
	int next = 1, max = 0;
	char quote = 0;
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (quote != 0) {
			quote = c == quote ? 0 : quote;
			o[j++] = c;
			continue;
		}
		if (c == '\'' || c == '"') {
			quote = c;
			o[j++] = c;
			continue;
		}
		if (c != '?') {
			o[j++] = c;
			continue;
		}
		int num = 0;
		while (isdigit((unsigned char)in[i + 1])) {
			num = num * 10 + (in[++i] - '0');
		}
		num = num > 0 ? num : next;
		next = num + 1;
		max = num > max ? num : max;
		*used |= num <= 64 ? UINT64_C(1) << (num - 1) : 0;
		j += (size_t)sprintf(o + j, "$%d", num);
	}
	o[j] = '\0';
	*out = o;
	return max <= MAX_PARAMS ? max : -1;
}

static int pg_prepare(rdb_t *db, const char *sql, bool cached,
                      rdb_stmt_t **out)
{
	pg_db_t *d = db_of(db);
	pg_stmt_t *free_slot = NULL;
	for (int i = 0; cached && i < STMT_CACHE; i++) {
		pg_stmt_t *c = &d->cache[i];
		if (c->key == sql && !c->busy) {
			c->busy = true;
			*out = &c->base;
			return ZC_EOK;
		}
		if (c->key == NULL && free_slot == NULL) {
			free_slot = c;
		}
	}
	pg_stmt_t *s = cached ? free_slot : NULL;
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL) {
			return KNOT_ENOMEM;
		}
	}
	s->sql = NULL;
	s->used = 0;
	int n = rewrite_placeholders(sql, &s->sql, &s->used);
	if (n < 0) {
		int ret = s->sql == NULL ? KNOT_ENOMEM : ZC_ESQL;
		if (ret == ZC_ESQL) {
			zc_error("%s: statement has over %d parameters: %s",
			         d->label, MAX_PARAMS, sql);
		}
		free(s->sql);
		s->sql = NULL;
		if (s != free_slot) {
			free(s);
		}
		return ret;
	}
	s->base.driver = &rdb_pg_driver;
	s->db = d;
	s->nparams = n;
	s->key = s == free_slot ? sql : NULL;
	snprintf(s->name, sizeof(s->name), "zc%u", d->next_name++);
	s->prepared = false;
	s->busy = true;
	s->row = -1;
	*out = &s->base;
	return ZC_EOK;
}

/* Parameter i, its array buffer (if any) freed: it is being bound anew. */
static param_t *param(rdb_stmt_t *st, int i)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (i < 1 || i > MAX_PARAMS) {
		return NULL;
	}
	param_t *p = &s->params[i - 1];
	free(p->owned);
	p->owned = NULL;
	return p;
}

/*
 * Binds a one-dimensional array in PostgreSQL's binary array form: the
 * number of dimensions, a has-NULLs flag, the element type, the length
 * and lower bound (1), then each element as its length and bytes. An
 * element is items[k] of lens[k] bytes, or (items NULL) the int64 ints[k]
 * in network order.
 */
static void bind_array(rdb_stmt_t *st, int i, Oid array_oid, Oid elem_oid,
                       const void *const *items, const size_t *lens,
                       const int64_t *ints, size_t n)
{
	param_t *p = param(st, i);
	if (p == NULL) {
		return;
	}
	size_t size = 20;
	for (size_t k = 0; k < n; k++) {
		size += 4 + (items != NULL ? lens[k] : 8);
	}
	uint8_t *buf = malloc(size);
	if (buf == NULL) {
		/* Binds NULL: the statement then matches nothing, or fails. */
		*p = (param_t){ .kind = P_NULL };
		return;
	}
	uint8_t *w = pg_put_be32(buf, n > 0);
	w = pg_put_be32(w, 0);
	w = pg_put_be32(w, elem_oid);
	if (n > 0) {
		w = pg_put_be32(w, (uint32_t)n);
		w = pg_put_be32(w, 1);
	}
	for (size_t k = 0; k < n; k++) {
		if (items != NULL) {
			w = pg_put_be32(w, (uint32_t)lens[k]);
			if (lens[k] > 0) {
				memcpy(w, items[k], lens[k]);
			}
			w += lens[k];
		} else {
			w = pg_put_be32(w, 8);
			w = pg_put_be32(w, (uint32_t)((uint64_t)ints[k] >> 32));
			w = pg_put_be32(w, (uint32_t)ints[k]);
		}
	}
	*p = (param_t){ .kind = P_ARRAY, .p = buf, .len = (size_t)(w - buf),
	                .oid = array_oid, .owned = buf };
}

static void pg_bind_int64_array(rdb_stmt_t *st, int i, const int64_t *v,
                                size_t n)
{
	bind_array(st, i, OID_INT8_ARRAY, OID_INT8, NULL, NULL, v, n);
}

static void pg_bind_blob_array(rdb_stmt_t *st, int i, const void *const *v,
                               const size_t *lens, size_t n)
{
	bind_array(st, i, OID_BYTEA_ARRAY, OID_BYTEA, v, lens, NULL, n);
}

static void pg_bind_int64(rdb_stmt_t *st, int i, int64_t v)
{
	param_t *p = param(st, i);
	if (p != NULL) {
		*p = (param_t){ .kind = P_INT, .i64 = v };
		pg_int64_text(p->num, v);
	}
}

static void pg_bind_blob(rdb_stmt_t *st, int i, const void *v, size_t len)
{
	param_t *p = param(st, i);
	if (p != NULL) {
		/* An empty blob is an empty bytea, not NULL. */
		*p = (param_t){ .kind = v ? P_BLOB : P_NULL,
		                .p = v ? v : NULL, .len = len };
	}
}

static void pg_bind_text(rdb_stmt_t *st, int i, const char *v)
{
	param_t *p = param(st, i);
	if (p != NULL) {
		*p = (param_t){ .kind = v ? P_TEXT : P_NULL, .p = v };
	}
}

static void pg_bind_null(rdb_stmt_t *st, int i)
{
	param_t *p = param(st, i);
	if (p != NULL) {
		*p = (param_t){ .kind = P_NULL };
	}
}

/* Prepares the statement on the server, with the parameter types of its
 * first bindings. */
static int prepare_on_server(pg_stmt_t *s)
{
	Oid types[MAX_PARAMS];
	pg_param_types(s, types);
	PGresult *res = PQprepare(s->db->conn, s->name, s->sql, s->nparams,
	                          types);
	int ret = result_code(s->db, res);
	if (ret == ZC_EOK) {
		s->prepared = true;
		s->gen = s->db->gen;
	}
	return ret;
}

/* Runs the statement and keeps its rows. In pipeline mode it joins the
 * statements queued before it, and the sync reports theirs first. */
static int execute(pg_stmt_t *s)
{
	pg_db_t *d = s->db;
	int ret = ensure_connected(d);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (d->piped || pg_gathering(d) || d->unit_pending) {
		ret = pg_gather_flush(d); /* A pending SAVEPOINT first. */
		ret = ret == ZC_EOK ? pg_pipe_send(s) : ret;
		return ret == ZC_EOK ? pg_pipe_sync(d, s) : ret;
	}
	const char *values[MAX_PARAMS];
	int lengths[MAX_PARAMS], formats[MAX_PARAMS];
	pg_param_arrays(s, values, lengths, formats);
	PGresult *res;
	if (s->key == NULL) {
		Oid types[MAX_PARAMS];
		pg_param_types(s, types);
		res = PQexecParams(d->conn, s->sql, s->nparams, types, values,
		                   lengths, formats, 1);
	} else {
		if (!s->prepared || s->gen != d->gen) {
			ret = prepare_on_server(s);
			if (ret != ZC_EOK) {
				return ret;
			}
		}
		res = PQexecPrepared(d->conn, s->name, s->nparams, values,
		                     lengths, formats, 1);
	}
	return pg_keep_result(s, res);
}

static int pg_step(rdb_stmt_t *st)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (s->res != NULL && s->row >= PQntuples(s->res)) {
		stmt_clear(s); /* Stepped past its end: runs again, as SQLite. */
	}
	if (s->res == NULL) {
		int ret = execute(s);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	if (s->row + 1 < PQntuples(s->res)) {
		s->row++;
		return RDB_ROW;
	}
	/* Past the end (the next step runs it again); columns read nothing. */
	s->row = PQntuples(s->res);
	return RDB_DONE;
}

static bool have_value(const pg_stmt_t *s, int i)
{
	return s->res != NULL && s->row >= 0 && s->row < PQntuples(s->res) &&
	       i >= 0 && i < PQnfields(s->res) &&
	       !PQgetisnull(s->res, s->row, i);
}

/* A binary NUMERIC holding an integer (sum() of int8 columns). */
static int64_t numeric_int64(const uint8_t *v, int len)
{
	if (len < 8) {
		return 0;
	}
	int ndigits = (int16_t)(v[0] << 8 | v[1]);
	int weight = (int16_t)(v[2] << 8 | v[3]);
	uint16_t sign = (uint16_t)(v[4] << 8 | v[5]);
	int64_t out = 0;
	for (int i = 0; i <= weight; i++) {
		int64_t digit = 0;
		if (i < ndigits && 8 + 2 * i + 1 < len) {
			digit = v[8 + 2 * i] << 8 | v[8 + 2 * i + 1];
		}
		out = out * 10000 + digit;
	}
	return sign == 0x4000 ? -out : out;
}

static uint64_t be(const uint8_t *v, int len)
{
	uint64_t x = 0;
	for (int i = 0; i < len; i++) {
		x = x << 8 | v[i];
	}
	return x;
}

static int64_t pg_col_int64(rdb_stmt_t *st, int i)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (!have_value(s, i)) {
		return 0;
	}
	const uint8_t *v = (const uint8_t *)PQgetvalue(s->res, s->row, i);
	int len = PQgetlength(s->res, s->row, i);
	switch (PQftype(s->res, i)) {
	case OID_INT8:
		return len == 8 ? (int64_t)be(v, 8) : 0;
	case OID_INT4:
	case OID_OID:
		return len == 4 ? (int64_t)(int32_t)be(v, 4) : 0;
	case OID_INT2:
		return len == 2 ? (int64_t)(int16_t)be(v, 2) : 0;
	case OID_BOOL:
		return len == 1 ? v[0] != 0 : 0;
	case OID_NUMERIC:
		return numeric_int64(v, len);
	case OID_FLOAT8: {
		uint64_t bits = be(v, 8);
		double dv;
		memcpy(&dv, &bits, sizeof(dv));
		return len == 8 ? (int64_t)dv : 0;
	}
	default:
		return strtoll((const char *)v, NULL, 10);
	}
}

static const void *pg_col_blob(rdb_stmt_t *st, int i, size_t *len)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (!have_value(s, i)) {
		if (len != NULL) {
			*len = 0;
		}
		return NULL;
	}
	if (len != NULL) {
		*len = (size_t)PQgetlength(s->res, s->row, i);
	}
	return PQgetvalue(s->res, s->row, i);
}

static size_t pg_col_bytes(rdb_stmt_t *st, int i)
{
	size_t len;
	pg_col_blob(st, i, &len);
	return len;
}

static const char *pg_col_text(rdb_stmt_t *st, int i)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (!have_value(s, i)) {
		return NULL;
	}
	Oid type = PQftype(s->res, i);
	if (type == OID_TEXT || type == OID_VARCHAR || type == OID_BYTEA) {
		return PQgetvalue(s->res, s->row, i);
	}
	snprintf(s->text, sizeof(s->text), "%" PRId64, pg_col_int64(st, i));
	return s->text;
}

static bool pg_col_is_null(rdb_stmt_t *st, int i)
{
	return !have_value((pg_stmt_t *)st, i);
}

static void pg_reset(rdb_stmt_t *st)
{
	stmt_clear((pg_stmt_t *)st);
}

static void pg_done(rdb_stmt_t *st)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	stmt_clear(s);
	params_clear(s);
	if (s->key == NULL) {
		free(s->sql);
		free(s);
		return;
	}
	s->busy = false;
}

static int64_t pg_changes(rdb_t *db)
{
	return db_of(db)->changes;
}

/* The id the last INSERT took from its table's sequence (ids are
 * identity columns on PostgreSQL). */
static int64_t pg_last_insert_id(rdb_t *db)
{
	pg_db_t *d = db_of(db);
	if (unpipe(d) != ZC_EOK) {
		return 0;
	}
	PGresult *res = PQexecParams(d->conn, "SELECT lastval()", 0, NULL,
	                             NULL, NULL, NULL, 0);
	int64_t id = 0;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	}
	PQclear(res);
	return id;
}

/* --- Transactions --- */

static bool pg_in_txn(rdb_t *db)
{
	return db_of(db)->txn;
}

/*
 * Begins a transaction with sql, queued in the pipeline: it goes to the
 * server with the transaction's first statement that waits for an answer
 * (a read, a release, the commit), not in a round trip of its own (one
 * per write batch, one per builder read, on a two-core machine where a
 * round trip is most of an UPDATE's cost). The connection is checked
 * first (ensure_connected(): a server that hung up while it was idle is
 * met now, not inside the transaction). A BEGIN that fails when it is
 * answered severs the transaction (db_pg_pipe.c).
 */
static int begin(rdb_t *db, const char *sql)
{
	pg_db_t *d = db_of(db);
	if (d->txn) {
		/* PostgreSQL would only warn, and the inner end would commit
		 * the outer transaction half-way; SQLite refuses. */
		zc_error("%s: a transaction is already open", d->label);
		return ZC_ESQL;
	}
	int ret = ensure_connected(d);
	if (ret == ZC_EOK) {
		ret = unpipe(d);
	}
	if (ret == ZC_EOK) {
		ret = pg_pipe_send_text(d, sql);
	}
	if (ret != ZC_EOK) {
		(void)unpipe(d);
		if (PQtransactionStatus(d->conn) == PQTRANS_INTRANS ||
		    PQtransactionStatus(d->conn) == PQTRANS_INERROR) {
			result_code(d, PQexec(d->conn, "ROLLBACK"));
		}
		return ret;
	}
	d->begin_slot = d->queued;
	d->severed = false;
	d->replay = false;
	d->unit_pending = false;
	d->lazy_txn = false;
	d->answered_ms = pg_now_ms();
	d->txn = true;
	return ZC_EOK;
}

/* Ends the transaction with sql (COMMIT or ROLLBACK; NULL: it ended
 * already, on the server or with the session). */
static PGresult *end(pg_db_t *d, const char *sql)
{
	pg_gather_drop(d); /* Sent before a COMMIT; undone by a ROLLBACK. */
	d->txn = false;
	d->writing = false;
	d->severed = false;
	d->replay = false;
	return sql != NULL ? PQexec(d->conn, sql) : NULL;
}

/* Leaves pipeline mode when its outcome no longer matters (the
 * transaction or savepoint is being undone). */
static void unpipe_quietly(pg_db_t *d)
{
	(void)unpipe(d);
}

static int pg_begin_write(rdb_t *db)
{
	/* No lock here: writers lock the rows they change (the zone's). */
	int ret = begin(db, "BEGIN");
	db_of(db)->writing = ret == ZC_EOK;
	return ret;
}

/*
 * COMMIT goes in the pipeline behind the statements queued, and `after`
 * behind it: one round trip for the three (before, the queue was synced,
 * then COMMIT sent alone, then the commit's position read). A statement
 * of the queue that fails makes the server skip COMMIT: the transaction
 * is then rolled back and the failure returned, as before.
 */
static int pg_commit_then(rdb_t *db, rdb_stmt_t *st)
{
	pg_db_t *d = db_of(db);
	pg_stmt_t *after = (pg_stmt_t *)st;
	if (after != NULL) {
		stmt_clear(after);
	}
	int ret = d->severed ? ZC_EUNAVAILABLE : d->replay ? ZC_EREPLAY :
	          pg_gather_flush(d);
	if (ret == ZC_EOK && d->lazy_txn) {
		/* Late savepoints: the statements before COMMIT finish the
		 * released units' work; should one fail, they run again one by
		 * one, each with its own. */
		d->released_slot = d->queued;
	}
	if (ret == ZC_EOK) {
		ret = pg_pipe_commit(d, after);
	} else {
		d->commit_state = PG_COMMIT_NONE;
		unpipe_quietly(d);
	}
	switch (d->commit_state) {
	case PG_COMMIT_DONE:
		end(d, NULL);
		return ZC_EOK; /* after's failure is its own. */
	case PG_COMMIT_SENT:
		/* Sent, and no answer: it may have committed or not. */
		end(d, NULL);
		zc_error("%s: PostgreSQL connection lost at COMMIT: the"
		         " transaction may or may not have committed", d->label);
		return ZC_EINDOUBT;
	case PG_COMMIT_ROLLBACK:
		end(d, NULL);
		zc_error("%s: transaction had failed and was rolled back",
		         d->label);
		return ZC_ESQL;
	default:
		break;
	}
	/* Not committed: a queued statement failed (COMMIT was skipped),
	 * the COMMIT itself failed (its deferred checks), or the session is
	 * gone. Out of pipeline mode first (a send that failed left the
	 * queue there). */
	if (d->piped) {
		unpipe_quietly(d);
	}
	bool open = PQstatus(d->conn) == CONNECTION_OK &&
	            PQtransactionStatus(d->conn) != PQTRANS_IDLE;
	PQclear(end(d, open ? "ROLLBACK" : NULL));
	return ret != ZC_EOK ? ret : ZC_ESQL;
}

static int pg_commit(rdb_t *db)
{
	return pg_commit_then(db, NULL);
}

static void pg_rollback(rdb_t *db)
{
	pg_db_t *d = db_of(db);
	if (d->txn) {
		pg_gather_drop(d);
		unpipe_quietly(d);
		PQclear(end(d, "ROLLBACK"));
	}
}

/*
 * A read transaction (an export to a slow reader, a verify, a scan, the
 * builder's snapshot) locks no row: it holds nobody's writes, so
 * PostgreSQL's idle_in_transaction_session_timeout, there for paused
 * writers, is off for it (SET LOCAL: this transaction only; queued with
 * the BEGIN, no round trip of its own). An export piped to a pager left
 * for a minute was cut short with "PostgreSQL down".
 */
static int pg_begin_read(rdb_t *db)
{
	int ret = begin(db, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	if (ret == ZC_EOK) {
		ret = pg_pipe_send_text(db_of(db), "SET LOCAL "
		                        "idle_in_transaction_session_timeout = 0");
		if (ret != ZC_EOK) {
			pg_rollback(db);
		}
	}
	return ret;
}

static void pg_end_read(rdb_t *db)
{
	pg_db_t *d = db_of(db);
	if (d->txn) {
		unpipe_quietly(d);
		PQclear(end(d, "COMMIT"));
	}
}

static const char *const savepoint_sql[2] = {
	"SAVEPOINT zc_unit", "SAVEPOINT zc_inner",
};
static const char *const release_sql[2] = {
	"RELEASE zc_unit", "RELEASE zc_inner",
};
static const char *const rollback_to_sql[2] = {
	"ROLLBACK TO zc_unit; RELEASE zc_unit",
	"ROLLBACK TO zc_inner; RELEASE zc_inner",
};

/* A savepoint is queued in the pipeline (its failure surfaces with the
 * unit's next read); its release syncs, so that a unit's queued
 * statements are answered before the unit is counted as kept, unless it
 * is released later (pg_release_later()). */
static int pg_savepoint(rdb_t *db, rdb_level_t level)
{
	pg_db_t *d = db_of(db);
	int ret = ensure_connected(d);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (!d->writing) {
		return pg_exec(db, savepoint_sql[level]);
	}
	ret = pg_gather_flush(d); /* The rows before it are not its. */
	return ret == ZC_EOK ? pg_pipe_send_text(d, savepoint_sql[level]) : ret;
}

static int pg_release(rdb_t *db, rdb_level_t level)
{
	pg_db_t *d = db_of(db);
	if (!d->piped && !pg_gathering(d)) {
		return pg_exec(db, release_sql[level]);
	}
	int ret = pg_gather_flush(d);
	ret = ret == ZC_EOK ? pg_pipe_send_text(d, release_sql[level]) : ret;
	int synced = pg_pipe_sync(d, NULL);
	return ret != ZC_EOK ? ret : synced;
}

/* The unit's RELEASE queued behind its statements, no sync: they are
 * answered with the next unit's first read, or with the commit (db.h,
 * rdb_release_later(); db_pg_pipe.c tells an earlier unit's failure from
 * the current one's by released_slot). */
static int pg_release_later(rdb_t *db, rdb_level_t level)
{
	pg_db_t *d = db_of(db);
	if (level == RDB_SP_UNIT && d->unit_pending) {
		/* Never sent: the unit's rows stay held, now a released
		 * unit's (pg_gather_materialize(), pg_gather_flush()). */
		d->unit_pending = false;
		d->released_rows = pg_gathering(d);
		return d->replay ? ZC_EREPLAY : ZC_EOK;
	}
	if (!d->writing || level != RDB_SP_UNIT || d->severed) {
		return pg_release(db, level);
	}
	if (d->replay) {
		return ZC_EREPLAY;
	}
	int ret = pg_gather_flush(d);
	ret = ret == ZC_EOK ? pg_pipe_send_text(d, release_sql[level]) : ret;
	if (ret == ZC_EOK) {
		d->released_slot = d->queued;
	}
	return d->replay ? ZC_EREPLAY : ret;
}

static bool pg_txn_replay(rdb_t *db)
{
	return db_of(db)->replay;
}

/* A unit savepoint sent with the unit's first statement that is not a
 * gathered row (db.h, rdb_savepoint_later()); in a write transaction
 * that may replay only. */
static int pg_savepoint_later(rdb_t *db, rdb_level_t level)
{
	pg_db_t *d = db_of(db);
	if (!d->writing || level != RDB_SP_UNIT || d->severed || d->replay ||
	    d->unit_pending) {
		return pg_savepoint(db, level);
	}
	pg_gather_mark(d);
	d->lazy_txn = true;
	return ZC_EOK;
}

static void pg_rollback_to(rdb_t *db, rdb_level_t level)
{
	pg_db_t *d = db_of(db);
	if (level == RDB_SP_UNIT && d->unit_pending) {
		pg_gather_unmark(d); /* Never sent: its rows go unsent. */
		return;
	}
	if (d->txn) {
		/* Rows held came after the innermost savepoint (a savepoint
		 * sends them): undone unsent. */
		pg_gather_drop(d);
		unpipe_quietly(d);
		pg_exec(db, rollback_to_sql[level]);
	}
}

/* Queues s in a write transaction: behind what is gathered (all of it,
 * or with `released` only the released units' rows, a unit's SAVEPOINT
 * still pending behind it: then s counts as theirs), syncing when the
 * queue is full. */
static int queue(pg_stmt_t *s, bool released)
{
	pg_db_t *d = s->db;
	int ret = ensure_connected(d);
	if (ret != ZC_EOK) {
		return ret;
	}
	stmt_clear(s);
	ret = released ? pg_gather_send_released(d) : pg_gather_flush(d);
	ret = ret == ZC_EOK ? pg_pipe_send(s) : ret;
	if (ret == ZC_EOK && released) {
		d->released_slot = d->queued;
	}
	if (ret == ZC_EOK && d->queued + 2 > PIPE_MAX) {
		ret = pg_pipe_sync(d, NULL);
	}
	return ret;
}

/* Queues the statement inside a write transaction (db.h, rdb_defer());
 * runs it at once outside one. */
static int pg_defer(rdb_stmt_t *st)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	if (!s->db->writing) {
		int rc = pg_step(st);
		return rc < 0 ? rc : ZC_EOK;
	}
	return queue(s, false);
}

/* rdb_defer() of a statement that finishes the work of units released
 * already (db.h, rdb_defer_released()): with a unit's SAVEPOINT pending,
 * it goes ahead of it, behind their rows, and a failure of it is theirs
 * (released_slot: ZC_EREPLAY). */
static int pg_defer_released(rdb_stmt_t *st)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	pg_db_t *d = s->db;
	if (!d->writing || !d->unit_pending || d->severed || d->replay) {
		return pg_defer(st);
	}
	return queue(s, true);
}

/* A row of a single-row INSERT, gathered with the rows of the same
 * statement before it (db_pg_gather.c) inside a write transaction. */
static int pg_defer_row(rdb_stmt_t *st, const char *types)
{
	pg_stmt_t *s = (pg_stmt_t *)st;
	pg_db_t *d = s->db;
	if (!d->writing) {
		return pg_defer(st);
	}
	int ret = ensure_connected(d);
	bool gathered = false;
	if (ret == ZC_EOK) {
		stmt_clear(s);
		ret = pg_gather_row(s, types, &gathered);
	}
	if (ret != ZC_EOK || gathered) {
		return ret;
	}
	return pg_defer(st);
}

const rdb_driver_t rdb_pg_driver = {
	.kind = RDB_PG,
	.open = pg_open,
	.close = pg_close,
	.exec = pg_exec,
	.prepare = pg_prepare,
	.bind_int64 = pg_bind_int64,
	.bind_blob = pg_bind_blob,
	.bind_text = pg_bind_text,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.col_int64 = pg_col_int64,
	.col_blob = pg_col_blob,
	.col_bytes = pg_col_bytes,
	.col_text = pg_col_text,
	.col_is_null = pg_col_is_null,
	.reset = pg_reset,
	.done = pg_done,
	.changes = pg_changes,
	.last_insert_id = pg_last_insert_id,
	.begin_write = pg_begin_write,
	.commit = pg_commit,
	.commit_then = pg_commit_then,
	.rollback = pg_rollback,
	.begin_read = pg_begin_read,
	.end_read = pg_end_read,
	.in_txn = pg_in_txn,
	.savepoint = pg_savepoint,
	.release = pg_release,
	.release_later = pg_release_later,
	.savepoint_later = pg_savepoint_later,
	.txn_replay = pg_txn_replay,
	.rollback_to = pg_rollback_to,
	.defer = pg_defer,
	.defer_row = pg_defer_row,
	.defer_released = pg_defer_released,
	.bind_int64_array = pg_bind_int64_array,
	.bind_blob_array = pg_bind_blob_array,
	.copy = &rdb_pg_copy_ops,
};

/* --- For COPY (db_pg_copy.c) --- */

int pg_conn_ready(pg_db_t *d)
{
	int ret = ensure_connected(d);
	if (ret == ZC_EOK) {
		ret = unpipe(d);
	}
	return ret;
}
