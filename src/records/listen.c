/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Hearing other processes' commits to the change log (records.h,
 * records_listen_*). On PostgreSQL the seal trigger sends NOTIFY
 * zonecast_log at every commit that wrote events (schema_pg.sql), and this
 * is a connection of its own that LISTENs: its socket turns readable at
 * each commit of any node, so a builder starts its pass at once instead
 * of at its next poll. SQLite has no such signal (in-process commits wake
 * the builder directly; the CLI's are found by polling): no listener.
 *
 * Also here, as it too is a connection held for the process's life: the
 * role that one node at a time may hold (records_role_take(), a session
 * advisory lock), such as publishing to a fleet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <libknot/errcode.h>
#ifdef ZC_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

#include "common/error.h"
#include "common/log.h"
#include "records/records.h"

#ifdef ZC_HAVE_LIBPQ
struct records_listen {
	PGconn *conn;
};

/*
 * A connection of its own to target's PostgreSQL store (a URI, or a data
 * directory bound to one), given up after 5 s when PostgreSQL does not
 * answer (the callers retry; a stopping server is not held up long).
 * ZC_EOK with *out NULL: the store is SQLite.
 */
static int connect_own(const char *target, records_listen_t **out)
{
	*out = NULL;
	char uri[4096];
	const char *pg = target;
	if (!records_target_is_pg(target)) {
		int bound = records_bound_target(target, uri, sizeof(uri));
		if (bound <= 0) {
			return bound;
		}
		pg = uri;
	}
	records_listen_t *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return KNOT_ENOMEM;
	}
	const char *const keys[] = { "connect_timeout", "application_name",
	                             "dbname", NULL };
	const char *const values[] = { "5", "zonecast", pg, NULL };
	l->conn = PQconnectdbParams(keys, values, 1);
	*out = l;
	return ZC_EOK;
}

int records_listen_open(const char *target, records_listen_t **out)
{
	records_listen_t *l;
	int ret = connect_own(target, &l);
	if (ret != ZC_EOK || l == NULL) {
		*out = NULL;
		return ret; /* SQLite: no signal (ZC_EOK), or an error. */
	}
	PGresult *res = PQstatus(l->conn) == CONNECTION_OK ?
	                PQexec(l->conn, "LISTEN zonecast_log") : NULL;
	bool ok = res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK &&
	          PQsetnonblocking(l->conn, 1) == 0;
	PQclear(res);
	if (!ok) {
		zc_debug("records store: cannot listen for commits: %s",
		         PQerrorMessage(l->conn));
		records_listen_close(l);
		return ZC_EUNAVAILABLE;
	}
	*out = l;
	return ZC_EOK;
}

int records_listen_fd(const records_listen_t *l)
{
	return PQsocket(l->conn);
}

int records_listen_drain(records_listen_t *l)
{
	if (PQconsumeInput(l->conn) == 0 || PQstatus(l->conn) != CONNECTION_OK) {
		return ZC_EUNAVAILABLE;
	}
	int heard = 0;
	PGnotify *n;
	while ((n = PQnotifies(l->conn)) != NULL) {
		heard++;
		PQfreemem(n);
	}
	return heard;
}

void records_listen_close(records_listen_t *l)
{
	if (l != NULL) {
		PQfinish(l->conn);
		free(l);
	}
}

int records_role_take(const char *target, int role, records_listen_t **out)
{
	records_listen_t *l;
	int ret = connect_own(target, &l);
	*out = NULL;
	if (ret != ZC_EOK || l == NULL) {
		return ret; /* SQLite: serve.lock makes one node. */
	}
	char sql[96];
	/* Class "zc" "ro" in ASCII, then the role. */
	snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(2053207663,"
	         " %d)", role);
	PGresult *res = PQstatus(l->conn) == CONNECTION_OK ?
	                PQexec(l->conn, sql) : NULL;
	ret = res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ?
	          ZC_EUNAVAILABLE :
	          PQgetvalue(res, 0, 0)[0] == 't' ? ZC_EOK : ZC_EBUSY;
	PQclear(res);
	if (ret != ZC_EOK) {
		records_listen_close(l);
		return ret;
	}
	*out = l;
	return ZC_EOK;
}
#else
int records_listen_open(const char *target, records_listen_t **out)
{
	(void)target;
	*out = NULL;
	return ZC_EOK;
}

int records_listen_fd(const records_listen_t *l)
{
	(void)l;
	return -1;
}

int records_listen_drain(records_listen_t *l)
{
	(void)l;
	return 0;
}

void records_listen_close(records_listen_t *l)
{
	(void)l;
}

int records_role_take(const char *target, int role, records_listen_t **out)
{
	(void)target;
	(void)role;
	*out = NULL;
	return ZC_EOK;
}
#endif
