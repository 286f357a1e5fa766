/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Copying a whole records store into another, empty one, of the other
 * engine (zonecast migrate, docs/design-postgresql.md §1.3): every table,
 * column for column, with its ids, in one write transaction on the target,
 * through the driver (db.h) of two open stores.
 *
 * Design
 *
 * - The source is read inside a write transaction of its own (rolled back
 *   at the end): no writer of another process (a token create) commits
 *   half-way through the copy, and every page reads one state.
 * - Tables go in foreign-key order, read in pages of PAGE_ROWS rows by
 *   their key (PostgreSQL's driver keeps a statement's rows whole: a page
 *   bounds the memory), each table written by one bulk load of the same
 *   columns (db.h, rdb_copy_*()): COPY FROM STDIN in binary into
 *   PostgreSQL, the prepared INSERT per row into SQLite. An empty blob
 *   (the apex's okey) stays an empty blob, not NULL.
 * - Ids are kept: zones, records, tokens, TSIG and DNSSEC keys keep theirs,
 *   and the change log its sequences and zone_versions, so IXFR from the
 *   journal goes on from the same serials.
 * - No id is handed out twice, not even a deleted row's: each table's
 *   high-water mark moves with it (carry_marks()), SQLite's sqlite_sequence
 *   into PostgreSQL's identity sequences (setval) and their last values
 *   back into sqlite_sequence; record ids by counters.record_id and
 *   record_ids.
 * - Positions: the builder follows the log by sequences on SQLite and by
 *   commit positions on PostgreSQL (changelog.h, "Positions"). The
 *   position the data directory's edge store applied is translated into
 *   the copy's numbering (translate_to_pg(), translate_to_sqlite()), in
 *   the source's snapshot of the copy, so that zonecast migrate carries
 *   the edge store over (builder_edge_migrated()) and the next start goes
 *   on from there; counters.trimmed_seq is translated too
 *   (carry_trimmed()).
 * - On PostgreSQL the copy of `changes` runs with the seal trigger
 *   disabled (inside the transaction: ALTER TABLE is transactional) and
 *   writes the one log_commits row itself: the copied log is one commit at
 *   position max(seq), as if sealed (schema_pg.sql). The changes identity,
 *   record_ids and log_pos are then set past the copied maxima.
 * - The target must be empty: no row in any table but counters, whose
 *   values must all be 0 (a new store's). It is checked inside the same
 *   transaction.
 * - At the end the rows of each table are counted on both sides and must
 *   agree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "records/internal.h"

/* Rows read from the source per page. */
#define PAGE_ROWS 4096

/* One table to copy. cols: a letter per column, 'i' integer, 'b' blob,
 * 't' text. keys: how many leading columns page the table (0: read whole,
 * for the small ones). select takes the last page's keys as ?1 (and ?2)
 * and reads `columns`, which the load writes. */
typedef struct {
	const char *name;
	const char *cols;
	int keys;
	const rdb_sql_t *select;
	const char *columns;
	const rdb_sql_t *count;
} table_t;

#define SEL1(cols, table, key) RDB_SQL("SELECT " cols " FROM " table \
	" WHERE " key " > ?1 ORDER BY " key " LIMIT 4096")

#define ZONES_COLS "id, name, apex, serial, default_ttl, settings," \
	" created_on, modified_on, ixfr_from, serial_policy, record_count"
#define RECORDS_COLS "id, zone_id, okey, owner, type, ttl, rdata, comment," \
	" created_on, modified_on, api_form, tags"
#define TOKENS_COLS "id, hash, read_only, zone_id, created_on, name," \
	" expires_on, revoked_on, modified_on"
#define TSIG_COLS "id, name, algorithm, secret, zone_id, grants, transfer," \
	" created_on"
#define DNSSEC_COLS "id, zone_id, flags, algorithm, pem, active," \
	" created_on, active_on, retired_on"
#define SECONDARIES_COLS "zone_id, kind, position, spec"
#define COUNTERS_COLS "name, value"
#define VERSIONS_COLS "zone_id, version, seq"
#define TOMBSTONES_COLS "apex, serial, deleted_on"
#define CHANGES_COLS "seq, zone_id, apex, version, kind, owner, type," \
	" record_id, at, okey, ttl, rdata"

static const table_t tables[] = {
	{ "zones", "itbiitiiiii", 1,
	  SEL1(ZONES_COLS, "zones", "id"), ZONES_COLS,
	  RDB_SQL("SELECT count(*) FROM zones") },
	{ "records", "iibbiibtiiit", 1,
	  SEL1(RECORDS_COLS, "records", "id"), RECORDS_COLS,
	  RDB_SQL("SELECT count(*) FROM records") },
	{ "tokens", "ibiiitiii", 1,
	  SEL1(TOKENS_COLS, "tokens", "id"), TOKENS_COLS,
	  RDB_SQL("SELECT count(*) FROM tokens") },
	{ "tsig_keys", "ibtbitii", 1,
	  SEL1(TSIG_COLS, "tsig_keys", "id"), TSIG_COLS,
	  RDB_SQL("SELECT count(*) FROM tsig_keys") },
	{ "dnssec_keys", "iiiibiiii", 1,
	  SEL1(DNSSEC_COLS, "dnssec_keys", "id"), DNSSEC_COLS,
	  RDB_SQL("SELECT count(*) FROM dnssec_keys") },
	{ "zone_secondaries", "iiit", 0,
	  RDB_SQL("SELECT " SECONDARIES_COLS " FROM zone_secondaries"
	          " ORDER BY zone_id, kind, position"), SECONDARIES_COLS,
	  RDB_SQL("SELECT count(*) FROM zone_secondaries") },
	/* PostgreSQL draws record ids from record_ids, not counters: its
	 * record_id is the sequence's mark, so SQLite never hands out an id
	 * that was drawn there (even one unused). */
	{ "counters", "ti", 0,
	  RDB_SQL2("SELECT " COUNTERS_COLS " FROM counters ORDER BY name",
	           "SELECT name, CASE WHEN name = 'record_id' THEN"
	           " greatest(value, (SELECT last_value FROM record_ids))"
	           " ELSE value END FROM counters ORDER BY name"),
	  COUNTERS_COLS,
	  RDB_SQL("SELECT count(*) FROM counters") },
	{ "zone_versions", "iii", 2,
	  RDB_SQL("SELECT " VERSIONS_COLS " FROM zone_versions"
	          " WHERE (zone_id, version) > (?1, ?2)"
	          " ORDER BY zone_id, version LIMIT 4096"), VERSIONS_COLS,
	  RDB_SQL("SELECT count(*) FROM zone_versions") },
	{ "zone_tombstones", "bii", 0,
	  RDB_SQL("SELECT " TOMBSTONES_COLS " FROM zone_tombstones"
	          " ORDER BY apex"), TOMBSTONES_COLS,
	  RDB_SQL("SELECT count(*) FROM zone_tombstones") },
	/* seq is GENERATED ALWAYS on PostgreSQL: COPY writes the values it
	 * is given all the same (as INSERT's OVERRIDING SYSTEM VALUE). */
	{ "changes", "iibiibiiibib", 1,
	  SEL1(CHANGES_COLS, "changes", "seq"), CHANGES_COLS,
	  RDB_SQL("SELECT count(*) FROM changes") },
};

_Static_assert(sizeof(tables) / sizeof(tables[0]) == RECORDS_COPY_TABLES,
               "records.h counts the tables copied");

/* The first value of a one-row query. */
int records_copy_count(records_store_t *from, uint64_t *rows)
{
	*rows = 0;
	for (size_t i = 0; i < RECORDS_COPY_TABLES; i++) {
		int64_t n;
		int ret = rdb_query_int64(from->db, tables[i].count, &n);
		if (ret != ZC_EOK) {
			return ret;
		}
		*rows += (uint64_t)n;
	}
	return ZC_EOK;
}

/* The target holds nothing but a new store's counters (all 0); else the
 * first table with rows is named in *full. */
static int check_empty(records_store_t *to, const char **full)
{
	for (size_t i = 0; i < RECORDS_COPY_TABLES; i++) {
		int64_t n;
		int ret = rdb_query_int64(to->db, strcmp(tables[i].name, "counters") == 0 ?
			RDB_SQL("SELECT count(*) FROM counters WHERE value <> 0") :
			tables[i].count, &n);
		if (ret != ZC_EOK) {
			return ret;
		}
		if (n > 0) {
			*full = tables[i].name;
			return ZC_EEXISTS;
		}
	}
	int64_t n;
	int ret = rdb_query_int64(to->db, RDB_SQL2("SELECT 0",
		"SELECT count(*) FROM log_commits"), &n);
	if (ret == ZC_EOK && n > 0) {
		*full = "log_commits";
		ret = ZC_EEXISTS;
	}
	return ret;
}

/* Gives column c of the source row to the load. */
static void copy_column(rdb_stmt_t *from, rdb_copy_t *to, int c, char kind)
{
	if (rdb_col_is_null(from, c)) {
		rdb_copy_null(to);
		return;
	}
	if (kind == 'i') {
		rdb_copy_int64(to, rdb_col_int64(from, c));
	} else if (kind == 't') {
		rdb_copy_text(to, rdb_col_text(from, c));
	} else {
		size_t len;
		const void *p = rdb_col_blob(from, c, &len);
		/* An empty blob, not NULL (the apex's okey). */
		rdb_copy_blob(to, p != NULL ? p : "", len);
	}
}

typedef struct {
	void (*progress)(uint64_t rows, void *ctx);
	void *ctx;
	uint64_t done;
} copy_t;

/* Copies one page of rows past keys[] (all of them for an unpaged
 * table) into the load; *got receives how many. */
static int copy_page(records_store_t *from, rdb_copy_t *load,
                     const table_t *t, int64_t keys[2], uint64_t *got,
                     copy_t *c)
{
	rdb_stmt_t *sel = NULL;
	int ncols = (int)strlen(t->cols);
	int ret = rdb_prepare(from->db, t->select, &sel);
	for (int k = 0; ret == ZC_EOK && k < t->keys; k++) {
		rdb_bind_int64(sel, k + 1, keys[k]);
	}
	*got = 0;
	int rc = ret;
	while (ret == ZC_EOK && (rc = rdb_step(sel)) == RDB_ROW) {
		for (int col = 0; col < ncols; col++) {
			copy_column(sel, load, col, t->cols[col]);
		}
		ret = rdb_copy_row(load);
		for (int k = 0; k < t->keys; k++) {
			keys[k] = rdb_col_int64(sel, k);
		}
		(*got)++;
		c->done++;
		if (c->progress != NULL) {
			c->progress(c->done, c->ctx);
		}
	}
	if (ret == ZC_EOK) {
		ret = rdb_status(rc);
	}
	rdb_done(sel);
	return ret;
}

/* Copies a table's pages into one load; *rows receives its row count. */
static int copy_pages(records_store_t *from, rdb_copy_t *load,
                      const table_t *t, uint64_t *rows, copy_t *c)
{
	int64_t keys[2] = { INT64_MIN, INT64_MIN };
	*rows = 0;
	for (;;) {
		uint64_t got;
		int ret = copy_page(from, load, t, keys, &got, c);
		if (ret != ZC_EOK) {
			return ret;
		}
		*rows += got;
		if (t->keys == 0 || got < PAGE_ROWS) {
			return ZC_EOK;
		}
	}
}

/* Copies a table; *rows receives its row count. */
static int copy_table(records_store_t *from, records_store_t *to,
                      const table_t *t, uint64_t *rows, copy_t *c)
{
	rdb_copy_t *load;
	int ret = rdb_copy_begin(to->db, t->name, t->columns, &load);
	if (ret == ZC_EOK) {
		ret = copy_pages(from, load, t, rows, c);
		if (ret == ZC_EOK) {
			ret = rdb_copy_end(load);
		} else {
			rdb_copy_abort(load);
		}
	}
	if (ret != ZC_EOK) {
		zc_error("migrate: copying table %s: %s", t->name,
		         zc_strerror(ret));
	}
	return ret;
}

/* PostgreSQL after the copy: the sequences past the copied maxima (the
 * id identities: carry_marks()), the copied log sealed as one commit at
 * position max(seq), the seal trigger back on. */
static const char pg_finish_sql[] =
	"SELECT setval(pg_get_serial_sequence('changes', 'seq'),"
	"  coalesce((SELECT max(seq) FROM changes), 0) + 1, false);"
	"SELECT setval('record_ids', greatest("
	"  coalesce((SELECT max(id) FROM records), 0),"
	"  coalesce((SELECT value FROM counters WHERE name = 'record_id'), 0))"
	"  + 1, false);"
	"INSERT INTO log_commits(pos, xid, at, node)"
	"  SELECT max(seq), pg_current_xact_id(),"
	"    (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
	"    'zonecast migrate' FROM changes HAVING count(*) > 0;"
	"SELECT setval('log_pos',"
	"  coalesce((SELECT max(pos) FROM log_commits), 0) + 1, false);"
	"ALTER TABLE changes ENABLE TRIGGER changes_seal;";

/* The tables whose ids SQLite draws by AUTOINCREMENT (its mark in
 * sqlite_sequence) and PostgreSQL from an identity sequence (named
 * TABLE_id_seq by schema_pg.sql): the mark, read from either engine (the
 * highest id ever issued, 0 for none; a sequence not yet called, as
 * setval(..., false) leaves it, has issued the one before its value). */
#define MARK(table) { table, RDB_SQL2( \
	"SELECT coalesce((SELECT seq FROM sqlite_sequence" \
	" WHERE name = '" table "'), 0)", \
	"SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END" \
	" FROM " table "_id_seq") }

static const struct {
	const char *table;
	const rdb_sql_t *read;
} marks[] = {
	MARK("zones"), MARK("tokens"), MARK("tsig_keys"), MARK("dnssec_keys"),
};

/* Each table's high-water mark from the source into the target, never
 * below the copied ids: PostgreSQL's identity goes on past it, SQLite's
 * sqlite_sequence row (made by the copy's inserts, or now) is raised to
 * it. Deleted rows' ids are so never handed out again. */
static int carry_marks(records_store_t *from, records_store_t *to)
{
	bool pg = rdb_kind(to->db) == RDB_PG;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		int64_t mark = 0;
		int ret = rdb_query_int64(from->db, marks[i].read, &mark);
		if (ret != ZC_EOK) {
			return ret;
		}
		const char *t = marks[i].table;
		char sql[512];
		if (pg) {
			snprintf(sql, sizeof(sql), "SELECT setval("
			         "pg_get_serial_sequence('%s', 'id'), greatest("
			         "coalesce((SELECT max(id) FROM %s), 0), %" PRId64
			         ") + 1, false)", t, t, mark);
		} else {
			snprintf(sql, sizeof(sql), "INSERT INTO sqlite_sequence"
			         "(name, seq) SELECT '%s', 0 WHERE NOT EXISTS"
			         " (SELECT 1 FROM sqlite_sequence WHERE name = '%s');"
			         "UPDATE sqlite_sequence SET seq = max(seq, %" PRId64
			         ") WHERE name = '%s'", t, t, mark, t);
		}
		ret = rdb_exec(to->db, sql);
		if (ret != ZC_EOK) {
			zc_error("migrate: the id mark of table %s: %s", t,
			         zc_strerror(ret));
			return ret;
		}
	}
	return ZC_EOK;
}

/* counters.trimmed_seq (the last position trimmed, records_trimmed_seq())
 * copied as a position of the source's numbering, made one of the
 * target's: everything trimmed came before the events copied. PostgreSQL:
 * the end of the commit before the copied one (position max(seq)).
 * SQLite: the sequence before the first one copied. */
static int carry_trimmed(records_store_t *to)
{
	return rdb_exec(to->db, rdb_kind(to->db) == RDB_PG ?
		"UPDATE counters SET value = coalesce((SELECT CASE WHEN"
		" max(seq) > 1 THEN (max(seq) - 1) << 24 | 16777215 ELSE 0 END"
		" FROM changes), 0) WHERE name = 'trimmed_seq' AND value > 0" :
		"UPDATE counters SET value = coalesce((SELECT min(seq) - 1"
		" FROM changes), 0) WHERE name = 'trimmed_seq' AND value > 0");
}

/* Runs sql with ?1 to ?np bound to p[]; the first row's n columns into
 * v[] (a NULL as -1). */
static int query_row(records_store_t *store, const rdb_sql_t *sql,
                     const int64_t *p, int np, int64_t *v, int n)
{
	rdb_stmt_t *st;
	int ret = rdb_prepare(store->db, sql, &st);
	if (ret != ZC_EOK) {
		return ret;
	}
	for (int i = 0; i < np; i++) {
		rdb_bind_int64(st, i + 1, p[i]);
	}
	int rc = rdb_step(st);
	for (int i = 0; i < n; i++) {
		v[i] = rc != RDB_ROW || rdb_col_is_null(st, i) ? -1 :
		       rdb_col_int64(st, i);
	}
	ret = rc == RDB_ROW ? ZC_EOK : rc == RDB_DONE ? ZC_ESQL : rc;
	rdb_done(st);
	return ret;
}

/* SQLite's sequence pos as a position of the copy on PostgreSQL: the
 * copied log is one commit at max(seq), its events ranked by sequence. */
static int translate_to_pg(records_store_t *from, uint64_t pos,
                           uint64_t *out, bool *kept)
{
	/* max(seq), count, events at or before pos, trimmed_seq. */
	int64_t v[4];
	int ret = query_row(from, RDB_SQLITE_ONLY(
		"SELECT coalesce(max(seq), 0), count(*),"
		" coalesce(sum(seq <= ?1), 0), (SELECT coalesce(max(value), 0)"
		" FROM counters WHERE name = 'trimmed_seq') FROM changes"),
		(const int64_t[]){ (int64_t)pos }, 1, v, 4);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t last = v[0], count = v[1], upto = v[2], trimmed = v[3];
	*kept = true;
	if (last <= 0 || pos >= (uint64_t)last) {
		*out = changelog_pg_commit_end(last > 0 ? last : 0);
	} else if (pos < (uint64_t)trimmed || count > CHANGELOG_PG_RANK_MAX) {
		/* Events it did not apply are gone, or the commit is too
		 * large to be read inside. */
		*kept = false;
	} else if (upto == 0) {
		*out = changelog_pg_commit_end(last - 1);
	} else {
		*out = changelog_pg_position(last, upto);
	}
	return ZC_EOK;
}

/* PostgreSQL's position pos as a sequence of the copy on SQLite, where
 * the builder reads sequences in order: the one before the first event
 * not at or before pos (sequences are not commit order there), or the
 * last when it applied them all. Events past that it applied already are
 * applied again (builds are idempotent). */
static int translate_to_sqlite(records_store_t *from, uint64_t pos,
                               uint64_t *out, bool *kept)
{
	int64_t commit, rank;
	bool whole;
	changelog_pg_split(pos, &commit, &rank, &whole);
	/* The first event not applied (of the commits from ?3 on: past
	 * commit ?1, or in it past rank ?2), the last event, trimmed_seq. */
	int64_t v[3];
	int ret = query_row(from, RDB_SQL2(NULL,
		"SELECT (SELECT min(seq) FROM (SELECT e.seq, c.pos,"
		"  row_number() OVER (PARTITION BY c.pos ORDER BY e.seq) AS rn"
		"  FROM log_commits c JOIN changes e ON e.xid = c.xid"
		"  WHERE c.pos >= ?3) x WHERE pos > ?1 OR rn > ?2),"
		" (SELECT coalesce(max(seq), 0) FROM changes),"
		" (SELECT coalesce(max(value), 0) FROM counters"
		"  WHERE name = 'trimmed_seq')"),
		(const int64_t[]){ commit, whole ? INT64_MAX : rank,
		                   whole ? commit + 1 : commit }, 3, v, 3);
	if (ret != ZC_EOK) {
		return ret;
	}
	*kept = pos >= (uint64_t)v[2];
	*out = v[0] >= 0 ? (uint64_t)v[0] - 1 : (uint64_t)v[1];
	return ZC_EOK;
}

/* Each table's rows counted on the target agree with the copy. */
static int check_counts(records_store_t *to,
                        const records_copy_summary_t *sum)
{
	for (size_t i = 0; i < RECORDS_COPY_TABLES; i++) {
		int64_t n;
		int ret = rdb_query_int64(to->db, tables[i].count, &n);
		if (ret != ZC_EOK) {
			return ret;
		}
		if ((uint64_t)n != sum->tables[i].rows) {
			zc_error("migrate: table %s has %" PRId64 " rows in the"
			         " target, %" PRIu64 " were copied", tables[i].name,
			         n, sum->tables[i].rows);
			return ZC_ESQL;
		}
	}
	return ZC_EOK;
}

/* The copy inside both transactions. */
static int copy_all(records_store_t *from, records_store_t *to,
                    records_copy_summary_t *sum, copy_t *c)
{
	bool pg = rdb_kind(to->db) == RDB_PG;
	int ret = check_empty(to, &sum->not_empty);
	if (ret == ZC_EOK) {
		/* A new store's counters give way to the source's. */
		ret = rdb_exec(to->db, "DELETE FROM counters");
	}
	if (ret == ZC_EOK && pg) {
		ret = rdb_exec(to->db,
			"ALTER TABLE changes DISABLE TRIGGER changes_seal");
	}
	for (size_t i = 0; ret == ZC_EOK && i < RECORDS_COPY_TABLES; i++) {
		sum->tables[i].table = tables[i].name;
		ret = copy_table(from, to, &tables[i], &sum->tables[i].rows, c);
		sum->rows += sum->tables[i].rows;
	}
	if (ret == ZC_EOK && pg) {
		ret = rdb_exec(to->db, pg_finish_sql);
	}
	if (ret == ZC_EOK) {
		ret = carry_marks(from, to);
	}
	if (ret == ZC_EOK) {
		ret = carry_trimmed(to);
	}
	if (ret == ZC_EOK) {
		ret = (pg ? translate_to_pg : translate_to_sqlite)(from,
			sum->position, &sum->position, &sum->position_kept);
	}
	if (ret == ZC_EOK) {
		ret = check_counts(to, sum);
	}
	int64_t last = 0;
	if (ret == ZC_EOK) {
		ret = rdb_query_int64(to->db, RDB_SQL("SELECT coalesce(max(seq), 0)"
		                            " FROM changes"), &last);
	}
	sum->last_seq = (uint64_t)last;
	return ret;
}

int records_copy(records_store_t *from, records_store_t *to,
                 uint64_t position,
                 void (*progress)(uint64_t rows, void *ctx), void *ctx,
                 records_copy_summary_t *sum)
{
	if (from == NULL || to == NULL || sum == NULL ||
	    rdb_kind(from->db) == rdb_kind(to->db)) {
		return KNOT_EINVAL;
	}
	memset(sum, 0, sizeof(*sum));
	sum->position = position;
	copy_t c = { .progress = progress, .ctx = ctx };
	int ret = rdb_begin_write(from->db);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = rdb_begin_write(to->db);
	if (ret != ZC_EOK) {
		rdb_rollback(from->db);
		return ret;
	}
	ret = copy_all(from, to, sum, &c);
	if (ret == ZC_EOK) {
		ret = rdb_commit(to->db);
	} else {
		rdb_rollback(to->db);
	}
	rdb_rollback(from->db);
	return ret;
}
