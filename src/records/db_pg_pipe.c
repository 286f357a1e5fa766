/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The PostgreSQL driver's pipeline (rdb_defer(), db.h): statements whose
 * rows nobody reads are sent without waiting for their answers, in
 * libpq's pipeline mode, and answered together with the next statement
 * that must wait (a read, a savepoint's release, the commit). A unit of
 * one record then costs the round trips of its reads, not one per
 * statement (docs/design-postgresql.md §4.2).
 *
 * - Order is kept: the server runs the queue as it was sent.
 * - Errors: a statement that fails makes the server skip the rest of the
 *   queue up to the sync (PGRES_PIPELINE_ABORTED); the sync returns the
 *   first failure's code, and the transaction is then in error until the
 *   unit's savepoint is rolled back, as with a failed statement run
 *   alone. The caller of the synchronous call gets that code: it belongs
 *   to the same unit when the unit's release synced. A unit released
 *   without waiting (rdb_release_later()) leaves its statements in the
 *   queue: one of them failing at a later unit's sync, or at the commit,
 *   gives ZC_EREPLAY instead (released_slot tells whose it was), and the
 *   writer runs the batch again with releases that sync.
 * - A statement the server has not prepared yet is prepared in the queue
 *   (a PREPARE ahead of its execution); a failed PREPARE is forgotten.
 * - A transaction's BEGIN is queued too (db_pg.c begin()): it costs no
 *   round trip of its own. Should it fail, the transaction is severed:
 *   its later statements fail instead of running on their own.
 */
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "records/db_pg_internal.h"

static int enter(pg_db_t *d)
{
	if (d->piped) {
		return ZC_EOK;
	}
	if (!PQenterPipelineMode(d->conn)) {
		return pg_map_error(d, NULL);
	}
	d->piped = true;
	d->queued = 0;
	return ZC_EOK;
}

/* Counts a sent query (prepares: the statement it prepares). */
static int queued(pg_db_t *d, int sent, pg_stmt_t *prepares)
{
	if (!sent) {
		return pg_map_error(d, NULL);
	}
	d->queue[d->queued++] = prepares;
	return ZC_EOK;
}

/* In pipeline mode with room for n more queries: the queue synced first
 * when it is that full. */
static int room(pg_db_t *d, int n)
{
	int ret = enter(d);
	if (ret == ZC_EOK && d->queued + n > PIPE_MAX) {
		ret = pg_pipe_sync(d, NULL);
		ret = ret == ZC_EOK ? enter(d) : ret;
	}
	return ret;
}

/* Queues s's PREPARE; it counts as prepared (a failure unprepares it at
 * the sync). */
static int send_prepare(pg_db_t *d, pg_stmt_t *s, const Oid *types)
{
	int ret = queued(d, PQsendPrepare(d->conn, s->name, s->sql, s->nparams,
	                                  types), s);
	if (ret == ZC_EOK) {
		s->prepared = true;
		s->gen = d->gen;
	}
	return ret;
}

int pg_pipe_params(pg_db_t *d, const char *sql, int n, const Oid *types,
                   const char *const *values, const int *lengths,
                   const int *formats)
{
	int ret = room(d, 1);
	return ret != ZC_EOK ? ret :
	       queued(d, PQsendQueryParams(d->conn, sql, n, types, values,
	                                   lengths, formats, 1), NULL);
}

int pg_pipe_prepare(pg_stmt_t *s, const Oid *types)
{
	int ret = room(s->db, 2);
	return ret != ZC_EOK ? ret : send_prepare(s->db, s, types);
}

int pg_pipe_prepared(pg_db_t *d, const char *name, int n,
                     const char *const *values, const int *lengths,
                     const int *formats)
{
	int ret = room(d, 1);
	return ret != ZC_EOK ? ret :
	       queued(d, PQsendQueryPrepared(d->conn, name, n, values, lengths,
	                                     formats, 1), NULL);
}

int pg_pipe_send_text(pg_db_t *d, const char *sql)
{
	return pg_pipe_params(d, sql, 0, NULL, NULL, NULL, NULL);
}

int pg_pipe_send(pg_stmt_t *s)
{
	pg_db_t *d = s->db;
	/* Room for a PREPARE, the execution and one more (a release). */
	int ret = room(d, 3);
	if (ret != ZC_EOK) {
		return ret;
	}
	const char *values[MAX_PARAMS];
	int lengths[MAX_PARAMS], formats[MAX_PARAMS];
	Oid types[MAX_PARAMS];
	pg_param_arrays(s, values, lengths, formats);
	pg_param_types(s, types);
	if (s->key == NULL) {
		return queued(d, PQsendQueryParams(d->conn, s->sql, s->nparams,
		                                   types, values, lengths,
		                                   formats, 1), NULL);
	}
	if ((!s->prepared || s->gen != d->gen) &&
	    (ret = send_prepare(d, s, types)) != ZC_EOK) {
		return ret;
	}
	return queued(d, PQsendQueryPrepared(d->conn, s->name, s->nparams,
	                                     values, lengths, formats, 1),
	              NULL);
}

/*
 * The connection broke in the middle, or libpq's pipeline is not where
 * the queue says: the session is reset (libpq's reset leaves pipeline
 * mode; the statements prepared are gone with the session), and a
 * transaction open on it is lost: its next statements fail, none runs on
 * its own (severed, until the transaction ends).
 */
static int lost(pg_db_t *d)
{
	d->piped = false;
	d->queued = 0;
	d->begin_slot = 0;
	d->commit_slot = 0; /* A COMMIT sent and unanswered stays SENT. */
	d->released_slot = 0;
	d->severed = d->txn;
	if (PQstatus(d->conn) == CONNECTION_OK) {
		zc_error("%s: PostgreSQL pipeline out of step; reconnecting",
		         d->label);
		PQreset(d->conn);
		d->gen++;
	}
	return ZC_EUNAVAILABLE;
}

/* What COMMIT's result says of the commit. An error that comes with the
 * connection's end is libpq's, not the server's: the server may have
 * committed and lost the answer (a crash, a stop -m immediate after the
 * WAL flush), so the commit stays in doubt. */
static int commit_outcome(pg_db_t *d, PGresult *res, ExecStatusType st)
{
	if (st == PGRES_COMMAND_OK) {
		return strcmp(PQcmdStatus(res), "ROLLBACK") == 0 ?
		       PG_COMMIT_ROLLBACK : PG_COMMIT_DONE;
	}
	if (st != PGRES_PIPELINE_ABORTED &&
	    PQstatus(d->conn) == CONNECTION_BAD) {
		return PG_COMMIT_SENT;
	}
	return PG_COMMIT_FAILED; /* Skipped, or refused by the server. */
}

/* A statement of a unit released already (rdb_release_later()) failed
 * with ret: the transaction wants its units run again. */
static int replay(pg_db_t *d, int ret)
{
	static _Atomic int64_t logged;
	if (zc_log_due(&logged, 1000)) {
		zc_info("%s: a write of a unit released without waiting failed"
		        " (%s): its batch runs again, unit by unit", d->label,
		        zc_strerror(ret));
	}
	d->replay = true;
	return ZC_EREPLAY;
}

int pg_pipe_sync(pg_db_t *d, pg_stmt_t *keep)
{
	if (!d->piped) {
		return ZC_EOK;
	}
	if (!PQpipelineSync(d->conn)) {
		return lost(d);
	}
	int first = ZC_EOK;
	/* Each query's results end with a NULL; the sync's result has none. */
	for (int i = 0; i < d->queued; i++) {
		bool last = i == d->queued - 1;
		PGresult *res;
		while ((res = PQgetResult(d->conn)) != NULL) {
			ExecStatusType st = PQresultStatus(res);
			if (i + 1 == d->commit_slot) {
				d->commit_state = commit_outcome(d, res, st);
			}
			if (st == PGRES_PIPELINE_ABORTED) {
				/* Skipped: a PREPARE among them did not happen. */
				if (d->queue[i] != NULL) {
					d->queue[i]->prepared = false;
				}
				PQclear(res);
				continue;
			}
			if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
				if (last && keep != NULL && first == ZC_EOK) {
					pg_keep_result(keep, res);
				} else {
					PQclear(res);
				}
				continue;
			}
			int ret = pg_map_error(d, res);
			PQclear(res);
			if (i + 1 <= d->released_slot &&
			    PQstatus(d->conn) != CONNECTION_BAD) {
				ret = replay(d, ret);
			}
			if (d->queue[i] != NULL) {
				d->queue[i]->prepared = false;
			}
			if (i + 1 == d->begin_slot) {
				/* No transaction: what follows must not run
				 * on its own. */
				d->severed = d->txn;
			}
			first = first != ZC_EOK ? first : ret;
			if (PQstatus(d->conn) == CONNECTION_BAD) {
				return lost(d);
			}
		}
	}
	PGresult *res = PQgetResult(d->conn);
	bool synced = res != NULL && PQresultStatus(res) == PGRES_PIPELINE_SYNC;
	PQclear(res);
	d->answered_ms = pg_now_ms();
	d->queued = 0;
	d->begin_slot = 0;
	d->commit_slot = 0;
	d->released_slot = 0;
	if (!synced || !PQexitPipelineMode(d->conn)) {
		return lost(d);
	}
	d->piped = false;
	if (first != ZC_EOK && keep != NULL) {
		PQclear(keep->res);
		keep->res = NULL;
	}
	return first;
}

int pg_pipe_commit(pg_db_t *d, pg_stmt_t *after)
{
	d->commit_state = PG_COMMIT_NONE;
	/* Room for COMMIT and after's PREPARE and execution: no sync
	 * between them. */
	int ret = room(d, 4);
	if (ret == ZC_EOK) {
		ret = pg_pipe_send_text(d, "COMMIT");
	}
	if (ret != ZC_EOK) {
		return ret; /* Not sent: the session's end rolls it back. */
	}
	d->commit_slot = d->queued;
	d->commit_state = PG_COMMIT_SENT;
	/* Should after not be queued, the caller runs it when it steps. */
	bool sent = after != NULL && pg_pipe_send(after) == ZC_EOK;
	return pg_pipe_sync(d, sent ? after : NULL);
}
