/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The commit order of the change log on PostgreSQL, proved at the SQL
 * level (docs/design-postgresql.md §2): the baseline schema
 * (records/schema_pg.sql) seals every transaction that writes events with
 * a position in commit order, and a reader that follows positions in
 * REPEATABLE READ snapshots sees every committed event exactly once, in
 * commit order, with each zone's versions gap-free and ascending.
 *
 * Two parts, in a fresh database of the cluster at $ZC_TEST_PGHOST (dev/pg;
 * without it the test exits 77, which meson counts as skipped):
 *
 * 1. Two transactions commit in the opposite order of their events'
 *    sequence numbers. A reader of `seq > last` skips the first event for
 *    good; the position reader gets both, in commit order. This is the
 *    problem itself, made to happen on purpose.
 * 2. Writers on their own connections run group-commit style transactions
 *    (the batch's zones locked in id order, a savepoint per unit, one unit
 *    in ten rolled back, random sleeps between statements, and one commit
 *    in twenty stalling 20 ms while it holds the position lock), against a
 *    reader that pauses at random, keeps its snapshot open a while, and
 *    stops at a random event count inside a commit (the builder's bound).
 *    Checked: positions dense and ascending, each committed event seen
 *    once and no other, each zone's versions stepping by one up to its
 *    serial, and real-time order (a transaction that began after another's
 *    COMMIT returned has the larger position). A naive `seq > last` reader
 *    runs beside it, and the events it skipped are printed: the figure that
 *    shows the checks above can fail.
 *
 * ZC_TEST_PG_WRITERS and ZC_TEST_PG_TXNS size part 2 (default 8 x 60; the
 * design's run was 16 x 300); ZC_TEST_SEED repeats a run's random choices.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "records/schema_pg_seal.h"
#include "records/schema_pg_sql.h"
#include "tests/unit/test.h"

#define ZONES 8
#define WRITERS_MAX 64
#define UNITS_MAX 4             /* units per transaction */
#define UNIT_EVENTS_MAX 3       /* events per unit */
#define TXN_EVENTS_MAX (UNITS_MAX * UNIT_EVENTS_MAX)
#define SKIPPED 77              /* meson's exit code for a skipped test */

/* A test-only companion of changes_seal: fires after it at COMMIT (the
 * triggers of one event fire in name order) and sleeps 20 ms once in a
 * transaction that asked for it, while the position lock is held, as a
 * slow WAL flush would. */
static const char *const stall_sql =
	"CREATE FUNCTION zctest_stall() RETURNS trigger LANGUAGE plpgsql AS $$"
	" BEGIN"
	"  IF current_setting('zctest.stall', true) = 'on' THEN"
	"   PERFORM set_config('zctest.stall', 'done', true);"
	"   PERFORM pg_sleep(0.02);"
	"  END IF;"
	"  RETURN NULL;"
	" END $$;"
	"CREATE CONSTRAINT TRIGGER changes_stall AFTER INSERT ON changes"
	"  DEFERRABLE INITIALLY DEFERRED"
	"  FOR EACH ROW EXECUTE FUNCTION zctest_stall();";

/* One reading of the log, (commit, event) after a cursor: design §2.2's
 * query. $3 bounds the commits, $4 the events (a pass's bound, which may
 * cut a commit in the middle). */
static const char *const read_sql =
	"SELECT c.pos, e.seq, e.zone_id, e.version, e.record_id"
	"  FROM (SELECT pos, xid FROM log_commits WHERE pos >= $1"
	"         ORDER BY pos LIMIT $3) c"
	"  CROSS JOIN LATERAL (SELECT * FROM changes e"
	"         WHERE e.xid = c.xid"
	"           AND e.seq > CASE WHEN c.pos = $1 THEN $2 ELSE 0 END"
	"         ORDER BY e.seq) e"
	" ORDER BY c.pos, e.seq LIMIT $4";

static const char *const event_sql =
	"INSERT INTO changes(zone_id, apex, version, kind, okey, type,"
	" record_id, at) VALUES ($1, '\\x00', $2, 5, '\\x61', 1, $3, 0)"
	" RETURNING seq";

static char conninfo[1024];

/* --- libpq helpers: any failure ends the test, from any thread --- */

static void die(PGconn *conn, const char *what)
{
	fprintf(stderr, "%s: %s", what, conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

static PGconn *connect_to(const char *info)
{
	PGconn *conn = PQconnectdb(info);
	if (PQstatus(conn) != CONNECTION_OK) {
		die(conn, "connect");
	}
	return conn;
}

/* Runs `sql` with text parameters; returns its result (the caller clears
 * it). */
static PGresult *query(PGconn *conn, const char *sql, int n,
                       const char *const *values)
{
	PGresult *res = PQexecParams(conn, sql, n, NULL, values, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		die(conn, sql);
	}
	return res;
}

static void exec(PGconn *conn, const char *sql)
{
	PQclear(query(conn, sql, 0, NULL));
}

/* Runs several statements in one simple query (one implicit transaction). */
static void exec_script(PGconn *conn, const char *sql, const char *what)
{
	PGresult *res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		die(conn, what);
	}
	PQclear(res);
}

static int64_t value_int(PGresult *res, int row, int col)
{
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static int64_t scalar(PGconn *conn, const char *sql)
{
	PGresult *res = query(conn, sql, 0, NULL);
	int64_t v = value_int(res, 0, 0);
	PQclear(res);
	return v;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_random_us(unsigned *seed, int max_us)
{
	usleep((useconds_t)(rand_r(seed) % max_us));
}

/* --- The position reader --- */

typedef struct {
	int64_t pos, seq, zone_id, version, event_id;
} log_row_t;

typedef struct {
	int64_t pos, seq;       /* the (commit, event) cursor */
} log_cursor_t;

/* Reads at most `max_events` events after the cursor in one REPEATABLE
 * READ snapshot into rows[], moves the cursor, and returns the count.
 * Checks that nothing read lies past the snapshot's own newest commit. */
static int read_log(PGconn *conn, log_cursor_t *cur, int max_commits,
                    int max_events, log_row_t *rows, unsigned *seed)
{
	exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
	int64_t fence = scalar(conn, "SELECT coalesce(max(pos), 0)"
	                       " FROM log_commits");
	if (seed != NULL) {
		sleep_random_us(seed, 500); /* writers commit meanwhile */
	}
	char pos[24], seq[24], commits[16], events[16];
	snprintf(pos, sizeof(pos), "%" PRId64, cur->pos);
	snprintf(seq, sizeof(seq), "%" PRId64, cur->seq);
	snprintf(commits, sizeof(commits), "%d", max_commits);
	snprintf(events, sizeof(events), "%d", max_events);
	const char *values[] = { pos, seq, commits, events };
	PGresult *res = query(conn, read_sql, 4, values);
	int n = PQntuples(res);
	for (int i = 0; i < n; i++) {
		log_row_t *row = &rows[i];
		row->pos = value_int(res, i, 0);
		row->seq = value_int(res, i, 1);
		row->zone_id = value_int(res, i, 2);
		row->version = value_int(res, i, 3);
		row->event_id = value_int(res, i, 4);
		CHECK(row->pos <= fence);
		cur->pos = row->pos;
		cur->seq = row->seq;
	}
	PQclear(res);
	exec(conn, "COMMIT");
	return n;
}

/* --- Part 1: two commits in the opposite order of their events --- */

static int64_t insert_event(PGconn *conn, int zone, int version,
                            int64_t event_id)
{
	char z[16], v[16], id[24];
	snprintf(z, sizeof(z), "%d", zone);
	snprintf(v, sizeof(v), "%d", version);
	snprintf(id, sizeof(id), "%" PRId64, event_id);
	const char *values[] = { z, v, id };
	PGresult *res = query(conn, event_sql, 3, values);
	int64_t seq = value_int(res, 0, 0);
	PQclear(res);
	return seq;
}

static void test_reversed_commits(PGconn *reader)
{
	PGconn *first = connect_to(conninfo), *second = connect_to(conninfo);
	exec(first, "BEGIN");
	int64_t seq1 = insert_event(first, 1, 1, 101);
	exec(second, "BEGIN");
	int64_t seq2 = insert_event(second, 2, 1, 102);
	CHECK(seq1 < seq2);
	exec(second, "COMMIT");

	/* The naive reader passes seq2 while seq1 is still uncommitted... */
	int64_t naive_last = scalar(reader, "SELECT coalesce(max(seq), 0)"
	                            " FROM changes");
	CHECK_EQ(naive_last, seq2);
	exec(first, "COMMIT");
	/* ...and never comes back for it. */
	char last[24];
	snprintf(last, sizeof(last), "%" PRId64, naive_last);
	const char *values[] = { last };
	PGresult *res = query(reader, "SELECT count(*) FROM changes"
	                      " WHERE seq > $1", 1, values);
	CHECK_EQ(value_int(res, 0, 0), 0);
	PQclear(res);

	/* The position reader gets both, in commit order. */
	log_cursor_t cur = { 0, 0 };
	log_row_t rows[4];
	int n = read_log(reader, &cur, 1024, 4, rows, NULL);
	CHECK_EQ(n, 2);
	CHECK_EQ(rows[0].event_id, 102);
	CHECK_EQ(rows[0].pos, 1);
	CHECK_EQ(rows[1].event_id, 101);
	CHECK_EQ(rows[1].pos, 2);
	CHECK_EQ(read_log(reader, &cur, 1024, 4, rows, NULL), 0);
	PQfinish(first);
	PQfinish(second);
	exec_script(reader, "TRUNCATE changes, log_commits, zone_versions;"
	            "ALTER SEQUENCE log_pos RESTART", "reset the log");
}

/* --- Part 2: concurrent writers, a position reader, a naive reader --- */

/* One transaction of a writer, as the writer saw it. */
typedef struct {
	int64_t begin_ns;       /* before BEGIN was sent */
	int64_t commit_ns;      /* after COMMIT returned */
	int first_event, events;        /* its committed events' slots */
	int64_t pos;            /* as the reader saw it (0: not seen) */
} txn_log_t;

/* One event slot of a writer: id = writer * events_per_writer + slot. */
typedef struct {
	int txn;
	bool committed;
	int seen;               /* times the position reader saw it */
} event_log_t;

typedef struct {
	int index;
	unsigned seed;
	txn_log_t *txns;
	event_log_t *events;
	int next_event;
	long stalls, rolled_back;
} writer_t;

static int writers_count = 8, txns_count = 60, events_per_writer;
static atomic_int writers_left;
static atomic_long committed_events;

static int64_t lock_zones(PGconn *conn, const int *zones, int n)
{
	char list[64] = "{";
	for (int i = 0; i < n; i++) {
		size_t len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "",
		         zones[i]);
	}
	strcat(list, "}");
	const char *values[] = { list };
	PGresult *res = query(conn, "SELECT id FROM zones WHERE id ="
	                      " ANY($1::bigint[]) ORDER BY id FOR UPDATE", 1,
	                      values);
	int64_t locked = PQntuples(res);
	PQclear(res);
	return locked;
}

/* One unit in a savepoint: the zone's next version and 1..3 events, then
 * released, or (one in ten) rolled back. Returns its committed events. */
static int run_unit(PGconn *conn, writer_t *w, int txn, int zone)
{
	exec(conn, "SAVEPOINT unit");
	char z[16];
	snprintf(z, sizeof(z), "%d", zone);
	const char *values[] = { z };
	PGresult *res = query(conn, "UPDATE zones SET serial = serial + 1"
	                      " WHERE id = $1 RETURNING serial", 1, values);
	int version = (int)value_int(res, 0, 0);
	PQclear(res);
	int n = 1 + rand_r(&w->seed) % UNIT_EVENTS_MAX;
	int first = w->next_event;
	for (int e = 0; e < n; e++) {
		int slot = w->next_event++;
		w->events[slot].txn = txn;
		int64_t id = (int64_t)w->index * events_per_writer + slot;
		int64_t seq = insert_event(conn, zone, version, id);
		if (e == 0) {
			char v[16], s[24];
			snprintf(v, sizeof(v), "%d", version);
			snprintf(s, sizeof(s), "%" PRId64, seq);
			const char *vs[] = { z, v, s };
			PQclear(query(conn, "INSERT INTO zone_versions VALUES"
			              " ($1, $2, $3) ON CONFLICT (zone_id, version)"
			              " DO UPDATE SET seq = excluded.seq", 3, vs));
		}
		sleep_random_us(&w->seed, 1000);
	}
	if (rand_r(&w->seed) % 10 == 0) {
		exec(conn, "ROLLBACK TO unit");
		exec(conn, "RELEASE unit");
		w->rolled_back++;
		return 0;
	}
	exec(conn, "RELEASE unit");
	for (int slot = first; slot < first + n; slot++) {
		w->events[slot].committed = true;
	}
	return n;
}

static void *writer_main(void *arg)
{
	writer_t *w = arg;
	PGconn *conn = connect_to(conninfo);
	for (int t = 0; t < txns_count; t++) {
		txn_log_t *txn = &w->txns[t];
		int units = 1 + rand_r(&w->seed) % UNITS_MAX;
		int zones[UNITS_MAX];
		for (int u = 0; u < units; u++) {
			zones[u] = 1 + rand_r(&w->seed) % ZONES;
		}
		txn->begin_ns = now_ns();
		txn->first_event = w->next_event;
		exec(conn, "BEGIN");
		/* In id order: batches never deadlock on each other. */
		lock_zones(conn, zones, units);
		for (int u = 0; u < units; u++) {
			txn->events += run_unit(conn, w, t, zones[u]);
		}
		if (txn->events > 0 && rand_r(&w->seed) % 20 == 0) {
			exec(conn, "SET LOCAL zctest.stall = 'on'");
			w->stalls++;
		}
		sleep_random_us(&w->seed, 2000);
		exec(conn, "COMMIT");
		txn->commit_ns = now_ns();
		committed_events += txn->events;
	}
	PQfinish(conn);
	writers_left--;
	return NULL;
}

static atomic_long naive_seen;

/* Follows `seq > last`, as a reader that trusts the sequence would. */
static void *naive_main(void *arg)
{
	unsigned seed = *(unsigned *)arg;
	PGconn *conn = connect_to(conninfo);
	int64_t last = 0;
	for (bool done = false;;) {
		char l[24];
		snprintf(l, sizeof(l), "%" PRId64, last);
		const char *values[] = { l };
		PGresult *res = query(conn, "SELECT seq FROM changes WHERE"
		                      " seq > $1 ORDER BY seq LIMIT 500", 1,
		                      values);
		int n = PQntuples(res);
		for (int i = 0; i < n; i++) {
			last = value_int(res, i, 0);
		}
		naive_seen += n;
		PQclear(res);
		if (done && n == 0) {
			break;
		}
		done = writers_left == 0;
		sleep_random_us(&seed, 300);
	}
	PQfinish(conn);
	return NULL;
}

typedef struct {
	long events, polls, dense_errors, version_errors, unknown_events;
	int64_t last_pos;
	int64_t zone_version[ZONES + 1];
} reader_result_t;

/* Follows the log until the writers are done and a snapshot taken after
 * that holds nothing more; checks each row as it comes. */
static void follow_log(PGconn *conn, writer_t *writers, unsigned seed,
                       reader_result_t *out)
{
	log_cursor_t cur = { 0, 0 };
	log_row_t rows[64];
	for (;;) {
		bool done = writers_left == 0; /* before the snapshot */
		int max_events = 1 + rand_r(&seed) % 64;
		int n = read_log(conn, &cur, 16, max_events, rows, &seed);
		out->polls++;
		for (int i = 0; i < n; i++) {
			log_row_t *row = &rows[i];
			/* A new commit is the next position: nothing between. */
			if (row->pos != out->last_pos &&
			    row->pos != out->last_pos + 1) {
				out->dense_errors++;
			}
			out->last_pos = row->pos;
			int64_t w = row->event_id / events_per_writer;
			int64_t slot = row->event_id % events_per_writer;
			if (row->zone_id < 1 || row->zone_id > ZONES ||
			    w < 0 || w >= writers_count) {
				out->unknown_events++;
				continue;
			}
			int64_t *zv = &out->zone_version[row->zone_id];
			if (row->version != *zv && row->version != *zv + 1) {
				out->version_errors++;
			}
			*zv = row->version;
			event_log_t *ev = &writers[w].events[slot];
			ev->seen++;
			writers[w].txns[ev->txn].pos = row->pos;
			out->events++;
		}
		if (done && n == 0) {
			return;
		}
		if (n < max_events) {
			sleep_random_us(&seed, 2000);
		}
	}
}

typedef struct {
	int64_t pos, begin_ns, commit_ns;
} txn_order_t;

static int by_pos(const void *a, const void *b)
{
	const txn_order_t *x = a, *y = b;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Real-time order: in position order, no transaction's COMMIT returned
 * before an earlier-positioned one began. Returns the violations. */
static long count_realtime_violations(writer_t *writers, long *sealed)
{
	size_t n = 0, cap = (size_t)writers_count * txns_count;
	txn_order_t *order = calloc(cap, sizeof(*order));
	for (int w = 0; w < writers_count; w++) {
		for (int t = 0; t < txns_count; t++) {
			txn_log_t *txn = &writers[w].txns[t];
			if (txn->events > 0) {
				order[n++] = (txn_order_t){ txn->pos,
				        txn->begin_ns, txn->commit_ns };
			}
		}
	}
	qsort(order, n, sizeof(*order), by_pos);
	long violations = 0;
	int64_t later_min_commit = INT64_MAX;
	for (size_t i = n; i-- > 0;) {
		if (later_min_commit < order[i].begin_ns) {
			violations++;
		}
		if (order[i].commit_ns < later_min_commit) {
			later_min_commit = order[i].commit_ns;
		}
	}
	free(order);
	*sealed = (long)n;
	return violations;
}

/* Each event committed was seen once; no other event was seen. */
static long count_delivery_errors(writer_t *writers, long *unseen)
{
	long errors = 0;
	*unseen = 0;
	for (int w = 0; w < writers_count; w++) {
		for (int e = 0; e < writers[w].next_event; e++) {
			event_log_t *ev = &writers[w].events[e];
			if (ev->seen != (ev->committed ? 1 : 0)) {
				errors++;
			}
			if (ev->committed && ev->seen == 0) {
				(*unseen)++;
			}
		}
		for (int t = 0; t < txns_count; t++) {
			txn_log_t *txn = &writers[w].txns[t];
			if (txn->events > 0 && txn->pos == 0) {
				errors++;
			}
		}
	}
	return errors;
}

/* Prints what a run did and checks it against what the writers saw and
 * what the tables hold. */
static void check_run(PGconn *reader, writer_t *writers,
                      const reader_result_t *rr, double secs)
{
	long stalls = 0, rolled_back = 0, sealed, unseen;
	for (int w = 0; w < writers_count; w++) {
		stalls += writers[w].stalls;
		rolled_back += writers[w].rolled_back;
	}
	long realtime = count_realtime_violations(writers, &sealed);
	long delivery = count_delivery_errors(writers, &unseen);
	printf("writers %d x %d transactions in %.1f s: %ld committed events"
	       " in %ld sealed transactions, %ld units rolled back, %ld"
	       " commits stalled holding the position lock\n",
	       writers_count, txns_count, secs, (long)committed_events, sealed,
	       rolled_back, stalls);
	printf("position reader: %ld events in %ld polls, last position %"
	       PRId64 ", %ld position gaps, %ld zone version errors, %ld"
	       " delivery errors (%ld unseen), %ld real-time order errors\n",
	       rr->events, rr->polls, rr->last_pos, rr->dense_errors,
	       rr->version_errors, delivery, unseen, realtime);
	printf("naive reader (seq > last): %ld events, skipped %ld\n",
	       (long)naive_seen, (long)committed_events - (long)naive_seen);

	CHECK_EQ(rr->events, committed_events);
	CHECK_EQ(rr->last_pos, sealed);
	CHECK_EQ(rr->dense_errors, 0);
	CHECK_EQ(rr->version_errors, 0);
	CHECK_EQ(rr->unknown_events, 0);
	CHECK_EQ(delivery, 0);
	CHECK_EQ(realtime, 0);
	/* Every zone's versions are 1..serial, all seen, and the table agrees. */
	PGresult *res = query(reader, "SELECT id, serial FROM zones ORDER BY id",
	                      0, NULL);
	for (int i = 0; i < PQntuples(res); i++) {
		int64_t zone = value_int(res, i, 0);
		CHECK_EQ(rr->zone_version[zone], value_int(res, i, 1));
	}
	PQclear(res);
	CHECK_EQ(scalar(reader, "SELECT count(*) FROM changes"), committed_events);
	CHECK_EQ(scalar(reader, "SELECT count(*) FROM log_commits"), sealed);
	CHECK_EQ(scalar(reader, "SELECT coalesce(sum(serial), 0) FROM zones"),
	         scalar(reader, "SELECT count(DISTINCT (zone_id, version))"
	                " FROM changes"));
	/* Each unit's first event is its zone_versions row. */
	CHECK_EQ(scalar(reader, "SELECT count(*) FROM (SELECT zone_id, version,"
	                " min(seq) AS seq FROM changes GROUP BY 1, 2) u"
	                " LEFT JOIN zone_versions v USING (zone_id, version)"
	                " WHERE v.seq IS DISTINCT FROM u.seq"), 0);
}

static void test_concurrent_commits(PGconn *reader, unsigned seed)
{
	events_per_writer = txns_count * TXN_EVENTS_MAX;
	writer_t writers[WRITERS_MAX];
	for (int w = 0; w < writers_count; w++) {
		writers[w] = (writer_t){
			.index = w,
			.seed = seed + 7919u * (unsigned)(w + 1),
			.txns = calloc((size_t)txns_count, sizeof(txn_log_t)),
			.events = calloc((size_t)events_per_writer,
			                 sizeof(event_log_t)),
		};
	}
	writers_left = writers_count;
	pthread_t threads[WRITERS_MAX], naive;
	unsigned naive_seed = seed + 1;
	int64_t t0 = now_ns();
	for (int w = 0; w < writers_count; w++) {
		pthread_create(&threads[w], NULL, writer_main, &writers[w]);
	}
	pthread_create(&naive, NULL, naive_main, &naive_seed);
	reader_result_t rr = { 0 };
	follow_log(reader, writers, seed + 2, &rr);
	for (int w = 0; w < writers_count; w++) {
		pthread_join(threads[w], NULL);
	}
	pthread_join(naive, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	check_run(reader, writers, &rr, secs);
	for (int w = 0; w < writers_count; w++) {
		free(writers[w].txns);
		free(writers[w].events);
	}
}

static int env_int(const char *name, int fallback, int max)
{
	const char *v = getenv(name);
	int n = v != NULL ? atoi(v) : fallback;
	return n >= 1 && n <= max ? n : fallback;
}

int main(void)
{
	const char *host = getenv("ZC_TEST_PGHOST");
	if (host == NULL || *host == '\0') {
		printf("ZC_TEST_PGHOST is not set (dev/pg start DIR): skipped\n");
		return SKIPPED;
	}
	writers_count = env_int("ZC_TEST_PG_WRITERS", 8, WRITERS_MAX);
	txns_count = env_int("ZC_TEST_PG_TXNS", 60, 100000);
	const char *seed_env = getenv("ZC_TEST_SEED");
	unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) :
	                (unsigned)time(NULL) ^ (unsigned)getpid();
	printf("seed %u (ZC_TEST_SEED repeats it)\n", seed);

	/* A database of our own, with the baseline schema as the driver
	 * will load it, and step 13's seal (queued once per transaction,
	 * records/schema_pg_seal.h): the rolled-back units below prove that
	 * a marker rolled back with its savepoint queues the seal again. */
	char admin_info[512], db[64], sql[128];
	snprintf(admin_info, sizeof(admin_info), "host=%s user=zc"
	         " dbname=postgres", host);
	snprintf(db, sizeof(db), "zc_order_%d", (int)getpid());
	PGconn *admin = connect_to(admin_info);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	exec(admin, sql);
	snprintf(conninfo, sizeof(conninfo), "host=%s user=zc dbname=%s"
	         " application_name=test_pg_order", host, db);
	PGconn *reader = connect_to(conninfo);
	exec_script(reader, RECORDS_SCHEMA_PG_SQL, "load schema_pg.sql");
	CHECK_EQ(scalar(reader, "SELECT version FROM schema_version"), 11);
	exec_script(reader, RECORDS_PG_SEAL_ONCE_SQL, "schema step 13");
	exec_script(reader, stall_sql, "create the stall trigger");
	for (int z = 1; z <= ZONES; z++) {
		snprintf(sql, sizeof(sql), "INSERT INTO zones(id, name, apex,"
		         " serial, created_on, modified_on) VALUES (%d, 'z%d.',"
		         " '\\x%02x', 0, 0, 0)", z, z, z);
		exec(reader, sql);
	}

	test_reversed_commits(reader);
	test_concurrent_commits(reader, seed);

	PQfinish(reader);
	snprintf(sql, sizeof(sql), "DROP DATABASE %s", db);
	exec(admin, sql);
	PQfinish(admin);
	return test_done();
}
