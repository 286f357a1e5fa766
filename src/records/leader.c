/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet's leadership among nodes sharing a PostgreSQL records store
 * (records.h, records_leader_*; docs/postgresql.md "The fleet's leader").
 *
 * Who leads: the node holding a session advisory lock, on a connection of
 * its own that nothing else uses. A node killed loses it as soon as
 * PostgreSQL sees its socket close; a node paused (SIGSTOP, a frozen VM)
 * or cut off loses it when the server ends its idle session
 * (idle_session_timeout, SESSION_TIMEOUT_MS): a heartbeat thread sends a
 * query every HEARTBEAT_MS, so a running leader is never idle that long.
 * The leader also demotes itself: records_leader_held() is false once no
 * heartbeat succeeded within HELD_MS, which is shorter than the server's
 * timeout, so a leader cut off stops before another can take over. No
 * query on that connection waits longer than HELD_MS for its answer (a
 * server cut off silently never answers), so nothing that gives
 * leadership up hangs.
 *
 * Fencing: each new leader adds one to leader.epoch in the same session
 * and gets the result, its term. Terms only grow, whichever node wins,
 * so whatever a leader publishes carries its term and whoever receives it
 * (the fleet's stream and its edges, fleet.h) can refuse a term older
 * than one already seen: a paused old leader that wakes up can act only
 * until it is refused, never against a newer one's history. Whether a
 * newer leader exists is PostgreSQL's to say (records_leader_confirm()),
 * never a term read from NATS, which anyone allowed to publish could
 * forge.
 *
 * The log's head: records_leader_head() reads the newest commit position
 * on the same session (bounded like every query here), so that a leader
 * compares what its own build applied with what the store holds without
 * a query that could hang.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>
#ifdef ZC_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

#include "common/error.h"
#include "common/log.h"
#include "records/internal.h"
#include "records/records.h"

#define HEARTBEAT_MS 300
#define HELD_MS 1200
#define SESSION_TIMEOUT_MS 1500
#define TRY_MS 200
/* Class "zc" "ro" in ASCII; the role: publishing to the fleet. */
#define LOCK_CLASS 2053207663
#define LOCK_FLEET 1

#ifdef ZC_HAVE_LIBPQ
static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

struct records_leader {
	char *target;
	char *node;
	uint64_t term;       /* this leader's (once taken) */
	pthread_mutex_t conn_lock; /* one query at a time on conn */
	PGconn *conn;
	pthread_t beat;
	bool beating;
	_Atomic bool stop_beat;
	_Atomic bool lost;
	_Atomic int64_t last_ok_ms;  /* send time of the last heartbeat answered */
};

int records_leader_new(const char *target, const char *node,
                       records_leader_t **out)
{
	*out = NULL;
	char uri[4096];
	if (!records_target_is_pg(target)) {
		int bound = records_bound_target(target, uri, sizeof(uri));
		if (bound <= 0) {
			return bound; /* SQLite (0): serve.lock makes one node. */
		}
	}
	records_leader_t *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return KNOT_ENOMEM;
	}
	pthread_mutex_init(&l->conn_lock, NULL);
	if ((l->target = strdup(target)) == NULL ||
	    (l->node = strdup(node)) == NULL) {
		records_leader_free(l);
		return KNOT_ENOMEM;
	}
	*out = l;
	return ZC_EOK;
}

static bool ok(PGresult *res, ExecStatusType want)
{
	bool good = res != NULL && PQresultStatus(res) == want;
	PQclear(res);
	return good;
}

/* Runs sql (with its text parameters) on conn, waiting at most HELD_MS
 * for the answer: its last result, or NULL (failed, or no answer in time:
 * the connection is spent then, a query still in flight on it). */
static PGresult *query_within(PGconn *conn, const char *sql, int nparams,
                              const char *const *params)
{
	if (PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL,
	                      0) == 0) {
		return NULL;
	}
	int64_t deadline = mono_ms() + HELD_MS;
	PGresult *last = NULL;
	for (;;) {
		while (PQisBusy(conn)) {
			int64_t left = deadline - mono_ms();
			struct pollfd pfd = { .fd = PQsocket(conn), .events = POLLIN };
			if (left <= 0 || (poll(&pfd, 1, (int)left) < 0 &&
			                  errno != EINTR) ||
			    PQconsumeInput(conn) == 0) {
				PQclear(last);
				return NULL;
			}
		}
		PGresult *res = PQgetResult(conn);
		if (res == NULL) {
			return last;
		}
		PQclear(last);
		last = res;
	}
}

static void *heartbeat_main(void *arg)
{
	records_leader_t *l = arg;
	while (!l->stop_beat && !l->lost) {
		int64_t sent = mono_ms();
		pthread_mutex_lock(&l->conn_lock);
		bool answered = ok(query_within(l->conn, "SELECT 1", 0, NULL),
		                   PGRES_TUPLES_OK);
		pthread_mutex_unlock(&l->conn_lock);
		if (!answered) {
			zc_warn("fleet leadership lost: %s",
			        PQerrorMessage(l->conn)[0] != '\0' ?
			        PQerrorMessage(l->conn) :
			        "no answer from the records store");
			l->lost = true;
			break;
		}
		l->last_ok_ms = sent;
		for (int i = 0; i < HEARTBEAT_MS / 50 && !l->stop_beat; i++) {
			sleep_ms(50);
		}
	}
	return NULL;
}

/* One attempt: ZC_EOK and the term when the lock was free, ZC_EBUSY when
 * another node holds it, ZC_EUNAVAILABLE when PostgreSQL is away. */
static int try_take(records_leader_t *l, uint64_t *term)
{
	if (l->conn == NULL || PQstatus(l->conn) != CONNECTION_OK) {
		PQfinish(l->conn);
		char opts[96];
		snprintf(opts, sizeof(opts), "-c idle_session_timeout=%d",
		         SESSION_TIMEOUT_MS);
		int ret = records_own_connect(l->target, opts, &l->conn);
		if (ret != ZC_EOK) {
			return ret;
		}
		if (PQstatus(l->conn) != CONNECTION_OK) {
			return ZC_EUNAVAILABLE;
		}
	}
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(%d, %d)",
	         LOCK_CLASS, LOCK_FLEET);
	PGresult *res = query_within(l->conn, sql, 0, NULL);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
		PQclear(res);
		PQfinish(l->conn); /* Spent, or broken: the next try connects. */
		l->conn = NULL;
		return ZC_EUNAVAILABLE;
	}
	bool got = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (!got) {
		return ZC_EBUSY;
	}
	const char *params[1] = { l->node };
	res = query_within(l->conn, "UPDATE leader SET epoch = epoch + 1, "
	                   "node = $1, since = now() RETURNING epoch", 1, params);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ||
	    PQntuples(res) != 1) {
		zc_warn("fleet leadership: cannot take a term: %s",
		        PQerrorMessage(l->conn));
		PQclear(res);
		PQfinish(l->conn); /* Gives the lock back. */
		l->conn = NULL;
		return ZC_EUNAVAILABLE;
	}
	*term = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return ZC_EOK;
}

int records_leader_take(records_leader_t *l, const _Atomic bool *stop,
                        uint64_t *term)
{
	records_leader_drop(l);
	bool said = false;
	while (!*stop) {
		int ret = try_take(l, term);
		if (ret == ZC_EOK) {
			l->term = *term;
			l->lost = false;
			l->stop_beat = false;
			l->last_ok_ms = mono_ms();
			l->beating = pthread_create(&l->beat, NULL, heartbeat_main,
			                            l) == 0;
			if (!l->beating) {
				records_leader_drop(l);
				return KNOT_ENOMEM;
			}
			zc_info("fleet leadership taken by %s (term %llu)", l->node,
			        (unsigned long long)*term);
			return ZC_EOK;
		}
		if (ret != ZC_EBUSY && ret != ZC_EUNAVAILABLE &&
		    ret != ZC_ESESSIONEND) {
			return ret;
		}
		if (!said) {
			zc_info("fleet leadership: %s; %s waits to take over",
			        ret == ZC_EBUSY ? "another node leads" :
			                          "the records store is away",
			        l->node);
			said = true;
		}
		for (int i = 0; i < TRY_MS / 50 && !*stop; i++) {
			sleep_ms(50);
		}
	}
	return ZC_EBUSY;
}

bool records_leader_held(records_leader_t *l)
{
	return l->beating && !l->lost && mono_ms() - l->last_ok_ms < HELD_MS;
}

int records_leader_confirm(records_leader_t *l)
{
	if (!records_leader_held(l)) {
		return ZC_EUNAVAILABLE;
	}
	pthread_mutex_lock(&l->conn_lock);
	PGresult *res = query_within(l->conn, "SELECT epoch FROM leader", 0,
	                              NULL);
	pthread_mutex_unlock(&l->conn_lock);
	int ret = ZC_EUNAVAILABLE;
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1) {
		uint64_t newest = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		ret = newest == l->term ? ZC_EOK : ZC_EFENCED;
	}
	PQclear(res);
	if (ret != ZC_EOK) {
		l->lost = true; /* Not the leader, or cannot tell: held() no more. */
	}
	return ret;
}

int records_leader_head(records_leader_t *l, uint64_t *pos)
{
	*pos = 0;
	if (!records_leader_held(l)) {
		return ZC_EUNAVAILABLE;
	}
	pthread_mutex_lock(&l->conn_lock);
	PGresult *res = query_within(l->conn, "SELECT coalesce(max(pos), 0) "
	                             "FROM log_commits", 0, NULL);
	pthread_mutex_unlock(&l->conn_lock);
	int ret = ZC_EUNAVAILABLE;
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1) {
		/* What records_last_seq() would say (changelog.h
		 * "Positions"). */
		*pos = changelog_pg_commit_end(strtoll(PQgetvalue(res, 0, 0),
		                                       NULL, 10));
		ret = ZC_EOK;
	}
	PQclear(res);
	if (ret != ZC_EOK) {
		l->lost = true; /* The session is spent, or gone. */
	}
	return ret;
}

void records_leader_drop(records_leader_t *l)
{
	if (l->beating) {
		l->stop_beat = true;
		pthread_join(l->beat, NULL);
		l->beating = false;
	}
	/* Closing the session gives the lock back at once. */
	PQfinish(l->conn);
	l->conn = NULL;
}

void records_leader_free(records_leader_t *l)
{
	if (l != NULL) {
		records_leader_drop(l);
		pthread_mutex_destroy(&l->conn_lock);
		free(l->target);
		free(l->node);
		free(l);
	}
}
#else
int records_leader_new(const char *target, const char *node,
                       records_leader_t **out)
{
	(void)target;
	(void)node;
	*out = NULL;
	return ZC_EOK;
}

int records_leader_take(records_leader_t *l, const _Atomic bool *stop,
                        uint64_t *term)
{
	(void)l;
	(void)stop;
	*term = 0;
	return ZC_EOK;
}

bool records_leader_held(records_leader_t *l)
{
	(void)l;
	return true;
}

int records_leader_confirm(records_leader_t *l)
{
	(void)l;
	return ZC_EOK;
}

int records_leader_head(records_leader_t *l, uint64_t *pos)
{
	(void)l;
	*pos = 0;
	return ZC_EOK;
}

void records_leader_drop(records_leader_t *l)
{
	(void)l;
}

void records_leader_free(records_leader_t *l)
{
	(void)l;
}
#endif
