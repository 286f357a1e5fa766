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
 *   journal goes on from the same serials. The data directory's edge store
 *   is built again at the next start: it applied the log by sequences
 *   (SQLite) or by commit positions (PostgreSQL), and the other engine
 *   numbers it the other way (changelog.h, "Positions";
 *   builder_edge_prepare()).
 * - On PostgreSQL the copy of `changes` runs with the seal trigger
 *   disabled (inside the transaction: ALTER TABLE is transactional) and
 *   writes the one log_commits row itself: the copied log is one commit at
 *   position max(seq), as if sealed (schema_pg.sql). The identity columns,
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

/* PostgreSQL after the copy: identities and sequences past the copied
 * maxima, the copied log sealed as one commit at position max(seq), the
 * seal trigger back on. */
static const char pg_finish_sql[] =
	"SELECT setval(pg_get_serial_sequence('zones', 'id'),"
	"  coalesce((SELECT max(id) FROM zones), 0) + 1, false);"
	"SELECT setval(pg_get_serial_sequence('tokens', 'id'),"
	"  coalesce((SELECT max(id) FROM tokens), 0) + 1, false);"
	"SELECT setval(pg_get_serial_sequence('tsig_keys', 'id'),"
	"  coalesce((SELECT max(id) FROM tsig_keys), 0) + 1, false);"
	"SELECT setval(pg_get_serial_sequence('dnssec_keys', 'id'),"
	"  coalesce((SELECT max(id) FROM dnssec_keys), 0) + 1, false);"
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
                 void (*progress)(uint64_t rows, void *ctx), void *ctx,
                 records_copy_summary_t *sum)
{
	if (from == NULL || to == NULL || sum == NULL ||
	    rdb_kind(from->db) == rdb_kind(to->db)) {
		return KNOT_EINVAL;
	}
	memset(sum, 0, sizeof(*sum));
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
