/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The PostgreSQL driver's dealings with libpq results and parameters,
 * shared by db_pg.c (statements run one at a time) and db_pg_pipe.c
 * (statements queued): SQLSTATEs as zonecast codes (the one place that
 * maps them), a statement's rows kept, and its bindings as libpq takes
 * them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "records/db_pg_internal.h"

/* --- Errors --- */

/* Says that PostgreSQL is unavailable: at most every 10 s per process at
 * error level (while it is down every request, the builder's retries and
 * the heartbeat meet it), the rest at debug level. */
static void log_unavailable(const pg_db_t *d, const char *why)
{
	static _Atomic int64_t logged;
	if (zc_log_due(&logged, 10000)) {
		zc_error("%s: PostgreSQL unavailable: %s", d->label, why);
	} else {
		zc_debug("%s: PostgreSQL unavailable: %s", d->label, why);
	}
}

int64_t pg_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned pg_idle_in_transaction_ms(void)
{
	const char *env = getenv("ZONECAST_PG_IDLE_IN_TRANSACTION_MS");
	unsigned long ms = env != NULL ? strtoul(env, NULL, 10) : 0;
	return ms > 0 && ms <= 86400000 ? (unsigned)ms :
	       PG_IDLE_IN_TRANSACTION_MS;
}

/* Maps a failed result (or a NULL one: the connection) to a code, and
 * logs what is not a plain outcome. */
int pg_map_error(pg_db_t *d, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) :
	                    NULL;
	/* libpq's own failure (no SQLSTATE), the connection still marked
	 * good: a send to a server that went away fails ("server closed the
	 * connection unexpectedly") before anything read its end; reading
	 * now finds it, so that this is unavailability (503, a retry), not
	 * an SQL error (500). */
	if (state == NULL && PQstatus(d->conn) == CONNECTION_OK) {
		(void)PQconsumeInput(d->conn);
	}
	/* PostgreSQL ended the session for being idle (25P03: in a
	 * transaction, past idle_in_transaction_session_timeout; 57P05: past
	 * idle_session_timeout): the server is up, the client waited. Said
	 * as such, not as "PostgreSQL down"; the connection is gone all the
	 * same (the next use reconnects). */
	const char *why = res != NULL ? PQresultErrorMessage(res) :
	                  PQerrorMessage(d->conn);
	if ((state != NULL && (strcmp(state, "25P03") == 0 ||
	                       strcmp(state, "57P05") == 0)) ||
	    (state == NULL && (strstr(why, "idle-in-transaction timeout") ||
	                       strstr(why, "idle-session timeout")))) {
		zc_error("%s: PostgreSQL ended the session, idle too long "
		         "(the transaction is rolled back): %s", d->label, why);
		return ZC_ESESSIONEND;
	}
	/* Its FATAL message is not always read (a send into the closed
	 * session fails first): a write transaction that heard nothing from
	 * the server for the bound or longer lost its session to it. */
	int64_t idle = d->txn && d->writing ? pg_now_ms() - d->answered_ms : 0;
	if (PQstatus(d->conn) == CONNECTION_BAD &&
	    idle >= (int64_t)pg_idle_in_transaction_ms()) {
		zc_error("%s: PostgreSQL ended the session, idle too long: the "
		         "write transaction waited %lld ms for this node, past "
		         "idle_in_transaction_session_timeout (%u ms; the node "
		         "paused?), and is rolled back: %s", d->label,
		         (long long)idle, pg_idle_in_transaction_ms(), why);
		return ZC_ESESSIONEND;
	}
	if (PQstatus(d->conn) == CONNECTION_BAD) {
		log_unavailable(d, PQerrorMessage(d->conn));
		return ZC_EUNAVAILABLE;
	}
	if (state == NULL) {
		zc_error("%s: %s", d->label, res ? PQresultErrorMessage(res) :
		         PQerrorMessage(d->conn));
		return ZC_ESQL;
	}
	if (strcmp(state, "23505") == 0 || strcmp(state, "23503") == 0) {
		return ZC_EEXISTS; /* unique or foreign-key violation */
	}
	if (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0 ||
	    strcmp(state, "55P03") == 0) {
		return ZC_EBUSY; /* deadlock, serialisation, lock timeout */
	}
	if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
	    strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0) {
		log_unavailable(d, PQresultErrorMessage(res));
		return ZC_EUNAVAILABLE;
	}
	if (strcmp(state, "53100") == 0) {
		return -ENOSPC;
	}
	if (strcmp(state, "53200") == 0) {
		return KNOT_ENOMEM;
	}
	if (strcmp(state, "25006") == 0) {
		/* A standby, or default_transaction_read_only set on the role
		 * or database (after a failover): the records store, not the
		 * data directory, refuses writes. */
		static _Atomic int64_t logged;
		if (zc_log_due(&logged, 10000)) {
			zc_error("%s: PostgreSQL is read-only (a standby, or"
			         " default_transaction_read_only set), nothing"
			         " was written: %s", d->label,
			         PQresultErrorMessage(res));
		}
		return -EROFS;
	}
	if (strcmp(state, "42501") == 0) {
		zc_error("%s: %s", d->label, PQresultErrorMessage(res));
		return -EACCES;
	}
	zc_error("%s: %s (SQLSTATE %s)", d->label, PQresultErrorMessage(res),
	         state);
	return ZC_ESQL;
}

/* The parameters' types, from their bindings. */
void pg_param_types(const pg_stmt_t *s, Oid *types)
{
	for (int i = 0; i < s->nparams; i++) {
		param_kind_t k = s->params[i].kind;
		types[i] = !(s->used & UINT64_C(1) << i) ? OID_INT8 :
		           k == P_ARRAY ? s->params[i].oid :
		           k == P_INT ? OID_INT8 : k == P_BLOB ? OID_BYTEA :
		           k == P_TEXT ? OID_TEXT : 0;
	}
}

void pg_param_arrays(const pg_stmt_t *s, const char **values, int *lengths,
                     int *formats)
{
	for (int i = 0; i < s->nparams; i++) {
		const param_t *p = &s->params[i];
		bool unused = !(s->used & UINT64_C(1) << i);
		values[i] = p->kind == P_NULL || unused ? NULL :
		            p->kind == P_INT ? p->num : p->p;
		bool binary = p->kind == P_BLOB || p->kind == P_ARRAY;
		lengths[i] = binary ? (int)p->len : 0;
		formats[i] = binary && !unused;
		if (p->kind == P_BLOB && p->len == 0 && !unused) {
			values[i] = ""; /* non-NULL: an empty value */
		}
	}
}

/* Keeps a statement's rows (or maps its error). */
int pg_keep_result(pg_stmt_t *s, PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
		const char *n = PQcmdTuples(res);
		s->db->changes = n[0] ? strtoll(n, NULL, 10) : 0;
		s->res = res;
		return ZC_EOK;
	}
	int ret = pg_map_error(s->db, res);
	PQclear(res);
	return ret;
}

