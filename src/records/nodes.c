/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The nodes sharing a PostgreSQL records store, as the store keeps them
 * (records.h, "Nodes"): each `zonecast serve` upserts its row of `nodes`
 * every second (its heartbeat: what it has applied, whether its builder
 * is stalled) and deletes it when it stops cleanly; `zonecast status`
 * lists the rows and reads the `leader` row (which the leader election
 * writes, never this file). Times are the store's clock (now()), so the
 * age of a heartbeat does not depend on the nodes' clocks agreeing. The
 * change log's trim reads the live nodes' applied positions here
 * (records_nodes_live_applied()): it keeps what one of them lacks.
 *
 * SQLite has no such tables (one serve per data directory: serve.lock):
 * every call gives KNOT_ENOTSUP there.
 */
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"

static bool is_pg(const records_store_t *store)
{
	return rdb_kind(store->db) == RDB_PG;
}

/*
 * Runs sql on this node's row with the node's fields bound, in this order:
 * ?1 name, ?2 pid, ?3 start (ms) (what names one run of a node), ?4 role,
 * ?5 version, ?6 applied position, ?7 stalled, ?8 RECORDS_NODE_DOWN_MS. A
 * statement uses the first of them it needs (a binding past its last
 * parameter is not sent).
 */
static int run_on_row(records_store_t *store, const rdb_sql_t *sql,
                      const records_node_t *self)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, sql, &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_text(stmt, 1, self->name);
	rdb_bind_int64(stmt, 2, self->pid);
	rdb_bind_int64(stmt, 3, self->started_ms);
	rdb_bind_text(stmt, 4, self->role);
	rdb_bind_text(stmt, 5, self->version);
	rdb_bind_int64(stmt, 6, (int64_t)self->applied_seq);
	rdb_bind_int64(stmt, 7, self->stalled);
	rdb_bind_int64(stmt, 8, RECORDS_NODE_DOWN_MS);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret;
}

int records_node_beat(records_store_t *store, const records_node_t *self)
{
	if (!is_pg(store)) {
		return KNOT_ENOTSUP;
	}
	/* A row another live node beats (another pid or start time, seen
	 * within RECORDS_NODE_DOWN_MS) is left alone: 0 rows. */
	int ret = run_on_row(store, RDB_SQL2(NULL,
		"INSERT INTO nodes AS n (name, role, pid, version, started,"
		"  last_seen, applied_pos, stalled)"
		" VALUES (?1, ?4, ?2, ?5, to_timestamp(?3::float8 / 1000), now(),"
		"  ?6, ?7)"
		" ON CONFLICT (name) DO UPDATE SET role = excluded.role,"
		"  pid = excluded.pid, version = excluded.version,"
		"  started = excluded.started, last_seen = excluded.last_seen,"
		"  applied_pos = excluded.applied_pos, stalled = excluded.stalled"
		" WHERE (n.pid = excluded.pid AND n.started = excluded.started)"
		"  OR n.last_seen IS NULL"
		"  OR n.last_seen < now() - make_interval(secs => ?8::float8 / 1000)"),
		self);
	if (ret == ZC_EOK && rdb_changes(store->db) == 0) {
		return ZC_EEXISTS;
	}
	return ret;
}

int records_node_leave(records_store_t *store, const records_node_t *self)
{
	if (!is_pg(store)) {
		return KNOT_ENOTSUP;
	}
	return run_on_row(store, RDB_SQL2(NULL,
		"DELETE FROM nodes WHERE name = ?1 AND pid = ?2"
		" AND started = to_timestamp(?3::float8 / 1000)"), self);
}

int records_nodes_list(records_store_t *store,
                       int (*cb)(const records_node_t *node, void *ctx),
                       void *ctx)
{
	if (!is_pg(store)) {
		return KNOT_ENOTSUP;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT name, role, pid, coalesce(version, ''),"
		" coalesce((extract(epoch FROM started) * 1000)::bigint, 0),"
		" coalesce((extract(epoch FROM last_seen) * 1000)::bigint, 0),"
		" coalesce((extract(epoch FROM now() - last_seen) * 1000)::bigint,"
		"  -1),"
		" coalesce(applied_pos, 0), stalled"
		" FROM nodes ORDER BY name"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		records_node_t node = {
			.name = rdb_col_text(stmt, 0),
			.role = rdb_col_text(stmt, 1),
			.pid = (int)rdb_col_int64(stmt, 2),
			.version = rdb_col_text(stmt, 3),
			.started_ms = rdb_col_int64(stmt, 4),
			.last_seen_ms = rdb_col_int64(stmt, 5),
			.seen_ago_ms = rdb_col_int64(stmt, 6),
			.applied_seq = (uint64_t)rdb_col_int64(stmt, 7),
			.stalled = (int)rdb_col_int64(stmt, 8),
		};
		if (cb(&node, ctx) != 0) {
			rc = RDB_DONE;
			break;
		}
	}
	rdb_done(stmt);
	return rdb_status(rc);
}

int records_nodes_live_applied(records_store_t *store, uint64_t *applied)
{
	*applied = UINT64_MAX;
	if (!is_pg(store)) {
		return KNOT_ENOTSUP;
	}
	/* Live as zonecast status says up: seen within RECORDS_NODE_DOWN_MS
	 * (a beat newer than this statement's now() counts too). A row
	 * without a position holds everything. */
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT min(coalesce(applied_pos, 0)) FROM nodes WHERE"
		" last_seen >= now() - make_interval(secs => ?1::float8 / 1000)"),
		&stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, RECORDS_NODE_DOWN_MS);
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW && !rdb_col_is_null(stmt, 0)) {
		*applied = (uint64_t)rdb_col_int64(stmt, 0);
	}
	rdb_done(stmt);
	return rdb_status(rc);
}

int records_leader_row_get(records_store_t *store, records_leader_row_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!is_pg(store)) {
		return KNOT_ENOTSUP;
	}
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT epoch, coalesce(node, ''),"
		" coalesce((extract(epoch FROM since) * 1000)::bigint, 0),"
		" built_pos FROM leader"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		out->epoch = (uint64_t)rdb_col_int64(stmt, 0);
		const char *node = rdb_col_text(stmt, 1);
		size_t len = node != NULL ? strlen(node) : 0;
		len = len < sizeof(out->node) ? len : sizeof(out->node) - 1;
		memcpy(out->node, node != NULL ? node : "", len);
		out->node[len] = '\0';
		out->since_ms = rdb_col_int64(stmt, 2);
		out->built_pos = (uint64_t)rdb_col_int64(stmt, 3);
	}
	rdb_done(stmt);
	return rdb_status(rc);
}
