/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The change log on PostgreSQL, by commit position (changelog.h,
 * "Positions"; docs/design-postgresql.md §2): the builder's reads, the
 * figures of status and metrics, the position of a commit just made, and
 * trimming by whole commits, none that a live node has not applied.
 * Appending and IXFR's reads are changelog.c's, shared with SQLite.
 *
 * Design
 *
 * Writers of several nodes commit at once, so the events' sequences
 * (changes.seq) are not commit order. Each transaction that wrote events
 * is sealed at COMMIT with log_commits(pos, xid) by the changes_seal
 * trigger (schema_pg.sql): pos is drawn under a lock held until the commit
 * is visible, so positions are in commit order and every snapshot sees all
 * the committed positions up to the largest it sees. Events join their
 * commit by xid, the top-level transaction's id.
 *
 * A reader's position is (pos << 24) | rank: rank is the event's place in
 * its commit in sequence order, and the last event of a commit has rank
 * COMMIT_END, so "commit p read whole" has one value, (p << 24) |
 * COMMIT_END. The ranks are computed by the reads (row_number() over the
 * commit's events, which the index changes_xid (xid, seq) gives in order);
 * nothing is stored but what the seal writes.
 *
 * Reading follows positions in pages of PAGE_COMMITS commits and at most
 * PAGE_EVENTS events (the driver keeps a statement's rows whole), from
 * the commit at the cursor on, skipping what was read of it. Inside the
 * builder's REPEATABLE READ snapshot every page reads that snapshot.
 */
#include <inttypes.h>
#include <stdio.h>

#include "common/error.h"
#include "common/log.h"
#include "records/internal.h"

#define RANK_BITS 24
#define COMMIT_END INT64_C(0xFFFFFF)
#define PAGE_COMMITS 1024
#define PAGE_EVENTS 8192
/* Events trimmed in one call, about (whole commits, at least one). */
#define TRIM_EVENTS 100000
/* (ZC_LOCK_CLASS, 5): one node trims at a time. */
#define TRIM_LOCK "2053990243, 5"

static uint64_t position(int64_t commit, int64_t rank)
{
	return (uint64_t)commit << RANK_BITS | (uint64_t)rank;
}

uint64_t changelog_pg_commit_end(int64_t commit)
{
	return commit > 0 ? position(commit, COMMIT_END) : 0;
}

static int64_t commit_of(uint64_t seq)
{
	return (int64_t)(seq >> RANK_BITS);
}

static int64_t rank_of(uint64_t seq)
{
	return (int64_t)(seq & COMMIT_END);
}

/* Whether a position is the end of its commit (or 0, before them all). */
static bool is_commit_end(uint64_t seq)
{
	return seq == 0 || rank_of(seq) == COMMIT_END;
}

uint64_t changelog_pg_position(int64_t commit, int64_t rank)
{
	return position(commit, rank);
}

void changelog_pg_split(uint64_t seq, int64_t *commit, int64_t *rank,
                        bool *whole)
{
	*commit = commit_of(seq);
	*rank = rank_of(seq);
	*whole = is_commit_end(seq);
}

void changelog_pg_position_text(uint64_t seq, char *out, size_t size)
{
	if (is_commit_end(seq)) {
		snprintf(out, size, "%lld", (long long)commit_of(seq));
	} else {
		snprintf(out, size, "%lld.%lld", (long long)commit_of(seq),
		         (long long)rank_of(seq));
	}
}

/* The events of the commits from ?5 on (the cursor's commit ?1, or the
 * next when it was read whole), each with its row number (rn) and its
 * commit's count (n), skipping those of commit ?1 up to rank ?2; ?3
 * commits, ?4 events at most. With them, the identities
 * records_changelog_mark() reads: of a commit with its first event, and
 * of commit ?1 (once a statement). */
#define PAGE_SQL \
	"SELECT c.pos, e.rn, e.n, e.zone_id, e.apex, e.version, e.kind," \
	" e.okey, e.type," \
	" CASE WHEN e.rn = 1 THEN c.xid::text || '/' || c.at END," \
	" (SELECT xid::text || '/' || at FROM log_commits WHERE pos = ?1)" \
	" FROM (SELECT pos, xid, at FROM log_commits WHERE pos >= ?5" \
	"  ORDER BY pos LIMIT ?3) c" \
	" CROSS JOIN LATERAL (SELECT row_number() OVER (ORDER BY seq) AS rn," \
	"  count(*) OVER () AS n, zone_id, apex, version, kind, okey, type" \
	"  FROM changes WHERE xid = c.xid) e" \
	" WHERE c.pos > ?1 OR CASE WHEN e.rn = e.n THEN 16777215" \
	"  ELSE e.rn END > ?2" \
	" ORDER BY c.pos, e.rn LIMIT ?4"

/* A page's progress: the cursor and what it saw. */
typedef struct {
	uint64_t cursor;       /* The last position read. */
	unsigned events;       /* Events read in this page. */
	unsigned commits;      /* Commits they came from. */
	bool stopped;          /* cb asked to stop. */
} page_t;

/* Reads one page past p->cursor (at most max events) into cb. */
static int read_page(records_store_t *store, unsigned max, page_t *p,
                     int (*cb)(const records_change_t *chg, void *ctx),
                     void *ctx)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL, PAGE_SQL), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, commit_of(p->cursor));
	rdb_bind_int64(stmt, 2, rank_of(p->cursor));
	rdb_bind_int64(stmt, 3, PAGE_COMMITS);
	rdb_bind_int64(stmt, 4, max);
	rdb_bind_int64(stmt, 5, commit_of(p->cursor) +
	               (is_commit_end(p->cursor) ? 1 : 0));
	p->events = p->commits = 0;
	int64_t last_commit = -1;
	/* The identity of the commit being read: the cursor's until a
	 * commit's first event names its own. */
	uint64_t from_id = 0, log_id = 0;
	int rc;
	while ((rc = rdb_step(stmt)) == RDB_ROW) {
		if (p->events == 0) {
			from_id = log_id = records_log_mark_id(
				rdb_col_text(stmt, 10));
		}
		if (!rdb_col_is_null(stmt, 9)) {
			log_id = records_log_mark_id(rdb_col_text(stmt, 9));
		}
		int64_t commit = rdb_col_int64(stmt, 0);
		int64_t rn = rdb_col_int64(stmt, 1), n = rdb_col_int64(stmt, 2);
		if (rn != n && rn >= COMMIT_END) {
			zc_error("change log: commit %" PRId64 " holds %" PRId64
			         " events, more than can be read one by one;"
			         " build the edge store again (delete its"
			         " files)", commit, n);
			rc = ZC_ESQL;
			break;
		}
		records_change_t chg;
		bool good = records_change_from_stmt(stmt, 3, &chg);
		chg.seq = position(commit, rn == n ? COMMIT_END : rn);
		chg.log_id = log_id;
		chg.from_id = from_id;
		p->cursor = chg.seq;
		p->events++;
		p->commits += commit != last_commit;
		last_commit = commit;
		if (good && cb(&chg, ctx) != 0) {
			p->stopped = true;
			rc = RDB_DONE;
			break;
		}
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int changelog_pg_since(records_store_t *store, uint64_t after,
                       unsigned limit,
                       int (*cb)(const records_change_t *chg, void *ctx),
                       void *ctx)
{
	page_t p = { .cursor = after };
	unsigned left = limit;
	for (;;) {
		unsigned max = limit == 0 || left > PAGE_EVENTS ? PAGE_EVENTS :
		               left;
		int ret = read_page(store, max, &p, cb, ctx);
		if (ret != ZC_EOK || p.stopped) {
			return ret;
		}
		left -= limit != 0 ? p.events : 0;
		/* Done when the limit is reached, or the page was short in
		 * both events and commits: nothing more in this snapshot (the
		 * cursor's own commit may have counted without an event). */
		if ((limit != 0 && left == 0) ||
		    (p.events < max && p.commits + 1 < PAGE_COMMITS)) {
			return ZC_EOK;
		}
	}
}

int changelog_pg_last(records_store_t *store, uint64_t *seq)
{
	int64_t pos = 0;
	int ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
		"SELECT coalesce(max(pos), 0) FROM log_commits"), &pos);
	*seq = ret == ZC_EOK && pos > 0 ? position(pos, COMMIT_END) : 0;
	return ret;
}

bool changelog_pg_follows(uint64_t after, uint64_t seq)
{
	if (!is_commit_end(after)) {
		/* Inside a commit: the rest of it (a commit is visible and
		 * trimmed whole, so its events have no gap). */
		return commit_of(seq) == commit_of(after);
	}
	return commit_of(seq) == commit_of(after) + 1 &&
	       (rank_of(seq) == 1 || rank_of(seq) == COMMIT_END);
}

int changelog_pg_position_stmt(records_store_t *store, rdb_stmt_t **stmt)
{
	*stmt = NULL;
	if (!store->log_appended || store->log_xid == 0) {
		return ZC_EOK; /* No event appended. */
	}
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT pos FROM log_commits WHERE xid = ?1::text::xid8"),
		stmt);
	if (ret == ZC_EOK) {
		rdb_bind_int64(*stmt, 1, store->log_xid);
	}
	return ret;
}

int changelog_pg_position_read(records_store_t *store, rdb_stmt_t *stmt,
                               uint64_t *seq)
{
	*seq = 0;
	if (stmt == NULL) {
		return ZC_EOK;
	}
	int rc = rdb_step(stmt);
	int64_t pos = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	int ret = rdb_status(rc);
	if (ret == ZC_EOK && pos > 0) {
		*seq = position(pos, COMMIT_END);
	} else if (ret == ZC_EOK) {
		/* Every unit that appended rolled back (no seal), or another
		 * node trimmed the commit already: the newest position is at
		 * or past it. */
		ret = changelog_pg_last(store, seq);
	}
	return ret;
}

int changelog_pg_committed(records_store_t *store, uint64_t *seq)
{
	rdb_stmt_t *stmt;
	int ret = changelog_pg_position_stmt(store, &stmt);
	if (ret == ZC_EOK) {
		ret = changelog_pg_position_read(store, stmt, seq);
	}
	if (stmt != NULL) {
		rdb_done(stmt);
	}
	return ret;
}

int changelog_pg_backlog(records_store_t *store, uint64_t after,
                         records_backlog_t *out)
{
	rdb_stmt_t *stmt;
	/* Events per commit past the cursor (what is left of its own), and
	 * the first such commit's time. */
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT (SELECT coalesce(max(pos), 0) FROM log_commits),"
		" coalesce(sum(k.n - CASE WHEN c.pos = ?1 THEN ?2 ELSE 0 END),"
		"  0), min(c.at)"
		" FROM log_commits c CROSS JOIN LATERAL"
		"  (SELECT count(*) AS n FROM changes e WHERE e.xid = c.xid) k"
		" WHERE c.pos >= ?1 AND (c.pos > ?1 OR k.n > ?2)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, commit_of(after));
	rdb_bind_int64(stmt, 2, rank_of(after));
	int rc = rdb_step(stmt);
	if (rc == RDB_ROW) {
		int64_t pos = rdb_col_int64(stmt, 0);
		out->last_seq = pos > 0 ? position(pos, COMMIT_END) : 0;
		out->events = (uint64_t)rdb_col_int64(stmt, 1);
		out->oldest_ms = rdb_col_int64(stmt, 2);
	}
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

int changelog_pg_activity(records_store_t *store, uint64_t after,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx, uint64_t *last_seq)
{
	int ret = rdb_begin_read(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The last position and the counts from one snapshot. */
	rdb_stmt_t *stmt = NULL;
	ret = changelog_pg_last(store, last_seq);
	if (ret == ZC_EOK) {
		ret = rdb_prepare(store->db, RDB_SQL2(NULL,
			"SELECT e.zone_id, count(*) FROM log_commits c"
			" CROSS JOIN LATERAL (SELECT zone_id,"
			"  row_number() OVER (ORDER BY seq) AS rn,"
			"  count(*) OVER () AS n FROM changes"
			"  WHERE xid = c.xid) e"
			" WHERE c.pos >= ?1 AND c.pos <= ?3 AND (c.pos > ?1 OR"
			"  CASE WHEN e.rn = e.n THEN 16777215 ELSE e.rn END > ?2)"
			" GROUP BY e.zone_id"), &stmt);
	}
	if (ret != ZC_EOK) {
		rdb_end_read(store->db);
		return ret;
	}
	rdb_bind_int64(stmt, 1, commit_of(after));
	rdb_bind_int64(stmt, 2, rank_of(after));
	rdb_bind_int64(stmt, 3, commit_of(*last_seq));
	return records_activity_rows(store, stmt, cb, ctx);
}

/* --- Trimming --- */

/*
 * The newest commit a trim may remove: commits in position order up to
 * the last one every builder read whole (max_commit), never the newest
 * (records_last_seq() reads it), while they are older than before_ms,
 * until about TRIM_EVENTS events (at least one commit). 0: none.
 */
static int trim_bound(records_store_t *store, int64_t max_commit,
                      int64_t before_ms, int64_t *last)
{
	rdb_stmt_t *stmt;
	int ret = rdb_prepare(store->db, RDB_SQL2(NULL,
		"SELECT coalesce(max(pos), 0) FROM (SELECT c.pos,"
		"  bool_and(c.at < ?2) OVER w AS old,"
		"  sum(k.n) OVER w - k.n AS before"
		" FROM (SELECT pos, xid, at FROM log_commits WHERE pos <="
		"  least(?1, (SELECT max(pos) FROM log_commits) - 1)"
		"  ORDER BY pos LIMIT 100000) c"
		" CROSS JOIN LATERAL (SELECT count(*) AS n FROM changes e"
		"  WHERE e.xid = c.xid) k"
		" WINDOW w AS (ORDER BY c.pos)) t"
		" WHERE old AND before < ?3"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, max_commit);
	rdb_bind_int64(stmt, 2, before_ms);
	rdb_bind_int64(stmt, 3, TRIM_EVENTS);
	int rc = rdb_step(stmt);
	*last = rc == RDB_ROW ? rdb_col_int64(stmt, 0) : 0;
	ret = rdb_status(rc);
	rdb_done(stmt);
	return ret;
}

/* Removes the commits up to `last` and their events; the zones' journal
 * starts move past them first (as on SQLite). */
static int trim_commits(records_store_t *store, int64_t last,
                        uint64_t *removed)
{
	int ret = records_exec_int64(store, RDB_SQL2(NULL,
		"UPDATE zones SET ixfr_from = t.v FROM"
		" (SELECT e.zone_id, max(e.version) AS v FROM log_commits c"
		"  JOIN changes e ON e.xid = c.xid WHERE c.pos <= ?1"
		"  GROUP BY e.zone_id) AS t"
		" WHERE zones.id = t.zone_id AND (zones.ixfr_from IS NULL"
		" OR t.v > zones.ixfr_from)"), last);
	if (ret == ZC_EOK) {
		ret = records_exec_int64(store, RDB_SQL2(NULL,
			"DELETE FROM zone_versions v USING log_commits c, changes e"
			" WHERE c.pos <= ?1 AND e.xid = c.xid AND v.seq = e.seq"),
			last);
	}
	if (ret == ZC_EOK) {
		ret = records_exec_int64(store, RDB_SQL2(NULL,
			"DELETE FROM changes e USING log_commits c"
			" WHERE c.pos <= ?1 AND e.xid = c.xid"), last);
		*removed = (uint64_t)rdb_changes(store->db);
	}
	if (ret == ZC_EOK) {
		ret = records_exec_int64(store, RDB_SQL2(NULL,
			"DELETE FROM log_commits WHERE pos <= ?1"), last);
	}
	if (ret == ZC_EOK) {
		ret = records_trimmed_mark(store, position(last, COMMIT_END));
	}
	return ret;
}

/* The last commit whose every event is at or before position seq (the
 * commit before seq's when seq stops inside it). */
static int64_t last_whole_commit(uint64_t seq)
{
	return commit_of(seq) - (is_commit_end(seq) ? 0 : 1);
}

int changelog_pg_trim(records_store_t *store, int64_t before_ms,
                      uint64_t max_seq, uint64_t *removed)
{
	*removed = 0;
	int ret = rdb_begin_write(store->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* Another node's trim running: let it be (two trims would lock
	 * the zones' rows in their own orders). */
	int64_t mine = 0, last = 0;
	ret = rdb_query_int64(store->db, RDB_SQL2(NULL,
		"SELECT pg_try_advisory_xact_lock(" TRIM_LOCK ")::int"), &mine);
	/* Nothing a live node has not applied goes, this node's builder
	 * (max_seq) included; a node down longer than the liveness window
	 * holds nothing back and builds every zone again when it returns
	 * (builder/pass.c, builder/prepare.c). Only commits read whole: a
	 * builder may have stopped inside the one it reads. */
	uint64_t live = UINT64_MAX;
	if (ret == ZC_EOK && mine) {
		ret = records_nodes_live_applied(store, &live);
	}
	if (ret == ZC_EOK && mine) {
		ret = trim_bound(store, last_whole_commit(live < max_seq ? live :
		                 max_seq), before_ms, &last);
	}
	if (ret == ZC_EOK && last > 0) {
		ret = trim_commits(store, last, removed);
	}
	if (ret != ZC_EOK) {
		*removed = 0;
	}
	return records_trim_end(store, ret);
}
