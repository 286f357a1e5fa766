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
 * The connection is made by records_own_connect(), which leader.c uses
 * too for the fleet's leadership.
 */
#include <stdio.h>
#include <stdlib.h>
#include <libknot/errcode.h>
#ifdef ZC_HAVE_LIBPQ
#include <libpq-fe.h>

#include "records/db_pg_internal.h"
#endif

#include "common/error.h"
#include "common/log.h"
#include "records/records.h"

#include "records/internal.h"

#ifdef ZC_HAVE_LIBPQ
struct records_listen {
	PGconn *conn;
};

int records_own_connect(const char *target, const char *options,
                        PGconn **out)
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
	/* The settings zonecast depends on first, the caller's after them
	 * (a later -c wins: the leader's own idle_session_timeout). */
	char all[512];
	snprintf(all, sizeof(all), PG_SESSION_SETTINGS " %s",
	         options != NULL ? options : "");
	const char *const keys[] = { "connect_timeout", "application_name",
	                             PG_KEEPALIVE_KEYS, "dbname", "options",
	                             NULL };
	const char *const values[] = { "5", "zonecast", PG_KEEPALIVE_VALUES,
	                               pg, all, NULL };
	*out = PQconnectdbParams(keys, values, 1);
	return *out != NULL ? ZC_EOK : KNOT_ENOMEM;
}

static int connect_own(const char *target, records_listen_t **out)
{
	*out = NULL;
	PGconn *conn;
	int ret = records_own_connect(target, NULL, &conn);
	if (ret != ZC_EOK || conn == NULL) {
		return ret;
	}
	records_listen_t *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		PQfinish(conn);
		return KNOT_ENOMEM;
	}
	l->conn = conn;
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

#endif
