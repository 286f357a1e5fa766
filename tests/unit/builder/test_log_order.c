/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The builder never misses nor reorders a change-log event while many
 * writers commit at once (changelog.h, "Positions";
 * docs/design-postgresql.md §2.3, §4.3): the proof on the real writer and
 * the real builder.
 *
 * NODES group committers (writer/, each its own connection to one records
 * store, as that many `zonecast serve` nodes sharing a PostgreSQL store)
 * take units from one submitter thread each, a few in flight so that
 * batches form. A unit locks one of ZONES zones (few: they are contended,
 * and batches of two nodes meet them in opposite orders), sleeps at random
 * while it holds it, moves the zone's version, adds one to three A records
 * at names no other unit uses, sometimes deletes the record an earlier
 * unit of its node added, sleeps again, and one in ten then fails (rolled
 * back to its savepoint after its writes). Meanwhile:
 *
 * - BUILDERS builder passes (pass_run(), builder/pass.h), each into its own
 *   LMDB edge store, pause at random between passes;
 * - a reader follows records_changes_since() with random small limits
 *   (stopping inside commits), sometimes inside a read snapshot held
 *   across a pause, and checks that positions only grow and each event
 *   follows the one before (records_changelog_follows(): no hole);
 * - on PostgreSQL, a naive reader follows `changes.seq > last` as the log
 *   was read before commit positions, and counts what it skips.
 *
 * Then, the writers stopped and each builder caught up:
 * - every builder's edge store equals a full build of every zone
 *   (builder_verify(): a skipped creation would leave a name missing, a
 *   skipped deletion a stale one, since no two units touch one name
 *   but for those deletions), with each zone's serial, and it applied
 *   everything (applied == records_last_seq());
 * - the events the reader saw are the table's, in the table's order (a
 *   fresh read of the log), as many as the committed units wrote;
 * - in log order each zone's versions step by exactly one, from its
 *   serial before to its serial after, one version per committed unit.
 *
 * The naive reader's skips are printed (the figure that shows the run
 * had commits out of sequence order; 0 on SQLite, which it does not run
 * on). With the builder reading `seq > after` instead of positions
 * (changelog_pg.c's read before commit positions), builder_verify() finds
 * the names it skipped: tried by hand, see docs/design-postgresql.md §2.5.
 *
 * ZC_TEST_NODES (4), ZC_TEST_UNITS (units per node, 200) and ZC_TEST_SEED
 * size and repeat a run. Runs on SQLite (log_order) and PostgreSQL
 * (log_order@pg, records_target.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "builder/pass.h"
#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"
#include "writer/writer.h"

#define ZONES 6
#define NODES_MAX 16
#define BUILDERS 2
#define IN_FLIGHT 8        /* Units a node keeps queued. */
#define REPLACE_AFTER 10   /* A unit may delete the record of the unit
                            * this many before it (done by then). */
#define NAMES_MAX 3

static unsigned nodes = 4, units_per_node = 200, seed0;
static records_zone_t zones[ZONES];
static const char *target;

static unsigned next_rand(unsigned *seed)
{
	return (unsigned)rand_r(seed);
}

/* Sleeps up to max_us (0 to max_us - 1). */
static void nap(unsigned *seed, unsigned max_us)
{
	if (max_us > 0) {
		usleep(next_rand(seed) % max_us);
	}
}

/* --- Writers --- */

typedef struct node node_t;

typedef struct {
	node_t *node;
	int zone;                   /* Index in zones[]. */
	int names;                  /* Records added. */
	char name[NAMES_MAX][64];
	int64_t delete_id;          /* Deleted first (0: none). */
	bool fail;                  /* Fails after its writes. */
	unsigned seed;              /* Its pauses (the same at a rerun). */
	/* Out, when done. */
	int64_t created[NAMES_MAX];
	int events;
	int result;
	writer_unit_t unit;
} wunit_t;

struct node {
	int id;
	writer_t *w;
	wunit_t *units;
	int error;                  /* A refused submission's. */
	pthread_mutex_t lock;       /* Guards in_flight and units' results. */
	pthread_cond_t cond;
	int in_flight;
	pthread_t thread;
};

static int write_unit(records_store_t *rs, void *ctx)
{
	wunit_t *u = ctx;
	unsigned seed = u->seed;
	u->events = 0;
	records_zone_t zone;
	int ret = records_zone_get(rs, zones[u->zone].id, &zone);
	nap(&seed, 2000); /* Holding the zone's row. */
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, &zone);
	}
	if (ret == ZC_EOK && u->delete_id != 0) {
		ret = records_record_delete(rs, &zone, u->delete_id);
		u->events++;
	}
	for (int i = 0; i < u->names && ret == ZC_EOK; i++) {
		ret = fx_insert_a(rs, &zone, u->name[i], (uint8_t)(i + 1),
		                  &u->created[i]);
		u->events++;
	}
	nap(&seed, 1000);
	if (next_rand(&seed) % 50 == 0) {
		usleep(15000); /* Now and then a long hold. */
	}
	return ret == ZC_EOK && u->fail ? ZC_EUSAGE : ret;
}

static void unit_done(writer_unit_t *unit, int result)
{
	wunit_t *u = unit->ctx;
	pthread_mutex_lock(&u->node->lock);
	u->result = result;
	u->node->in_flight--;
	pthread_cond_signal(&u->node->cond);
	pthread_mutex_unlock(&u->node->lock);
}

/* Fills unit i of node n (the units before it that it may look at are
 * done: at most IN_FLIGHT < REPLACE_AFTER are in flight). */
static void plan_unit(node_t *n, int i, unsigned *seed)
{
	wunit_t *u = &n->units[i];
	memset(u, 0, sizeof(*u));
	u->node = n;
	u->seed = next_rand(seed);
	u->zone = (int)(next_rand(seed) % ZONES);
	u->fail = next_rand(seed) % 10 == 0;
	u->names = 1 + (int)(next_rand(seed) % NAMES_MAX);
	if (i >= REPLACE_AFTER && next_rand(seed) % 3 == 0) {
		const wunit_t *old = &n->units[i - REPLACE_AFTER];
		pthread_mutex_lock(&n->lock);
		if (old->result == ZC_EOK) {
			u->zone = old->zone;
			u->delete_id = old->created[0];
		}
		pthread_mutex_unlock(&n->lock);
	}
	for (int k = 0; k < u->names; k++) {
		snprintf(u->name[k], sizeof(u->name[k]), "n%d-u%d-%d.z%d.test.",
		         n->id, i, k, u->zone);
	}
	u->unit = (writer_unit_t){ .fn = write_unit, .ctx = u,
	                           .done = unit_done };
}

static void *submitter(void *arg)
{
	node_t *n = arg;
	unsigned seed = seed0 * 131u + (unsigned)n->id;
	for (unsigned i = 0; i < units_per_node; i++) {
		pthread_mutex_lock(&n->lock);
		while (n->in_flight >= IN_FLIGHT) {
			pthread_cond_wait(&n->cond, &n->lock);
		}
		pthread_mutex_unlock(&n->lock);
		plan_unit(n, (int)i, &seed);
		pthread_mutex_lock(&n->lock);
		n->in_flight++;
		pthread_mutex_unlock(&n->lock);
		int ret = writer_submit(n->w, &n->units[i].unit);
		if (ret != ZC_EOK) {
			n->error = ret;
			break;
		}
		nap(&seed, 2000);
	}
	pthread_mutex_lock(&n->lock);
	while (n->in_flight > 0) {
		pthread_cond_wait(&n->cond, &n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

static atomic_bool writers_done;

/* --- Builders --- */

typedef struct {
	int id;
	char dir[64];
	records_store_t *rs, *full_rs;
	edge_store_t *es;
	uint64_t passes;
	int error;
	pthread_t thread;
} builder_t;

/* One pass, growing the map when it is full (as builder_catch_up()). */
static int run_pass(pass_state_t *st, edge_store_t *es)
{
	int ret;
	for (int grows = 0; grows < 24; grows++) {
		ret = pass_run(st);
		if (ret != ZC_EMAPFULL) {
			return ret;
		}
		ret = edge_grow(es);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ret;
}

static void *builder_main(void *arg)
{
	builder_t *b = arg;
	unsigned seed = seed0 * 977u + (unsigned)b->id;
	pass_state_t st;
	int ret = pass_init(&st, b->rs, b->full_rs, b->es, 64, true);
	/* Until the writers are done, then until a pass finds nothing. */
	while (ret >= 0) {
		bool last = atomic_load(&writers_done);
		ret = run_pass(&st, b->es);
		b->passes++;
		if (ret == 0 && last) {
			break;
		}
		nap(&seed, 3000);
	}
	b->error = ret;
	pass_deinit(&st);
	return NULL;
}

/* --- The reader --- */

typedef struct {
	int64_t zone_id;
	uint32_t version;
	records_change_kind_t kind;
	uint8_t okey[DNS_LF_KEY_MAXLEN];
	size_t okey_len;
} event_t;

typedef struct {
	event_t *ev;
	size_t count, cap;
	uint64_t last;              /* Position of the last event. */
	records_store_t *rs;
	unsigned holes, backwards;  /* Both must stay 0. */
} events_t;

static int keep_event(const records_change_t *chg, void *ctx)
{
	events_t *e = ctx;
	if (chg->seq <= e->last) {
		e->backwards++;
	} else if (!records_changelog_follows(e->rs, e->last, chg->seq)) {
		e->holes++;
	}
	e->last = chg->seq;
	if (e->count == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 1024;
		e->ev = realloc(e->ev, e->cap * sizeof(*e->ev));
		if (e->ev == NULL) {
			abort();
		}
	}
	event_t *x = &e->ev[e->count++];
	x->zone_id = chg->zone_id;
	x->version = chg->version;
	x->kind = chg->kind;
	memcpy(x->okey, chg->okey, chg->okey_len);
	x->okey_len = chg->okey_len;
	return 0;
}

typedef struct {
	events_t seen;
	unsigned reads;
	int error;                  /* The first failed read's. */
	pthread_t thread;
} reader_t;

static void *reader_main(void *arg)
{
	reader_t *r = arg;
	unsigned seed = seed0 * 7919u + 1;
	for (unsigned idle = 0; idle < 3;) {
		bool last = atomic_load(&writers_done);
		bool snapshot = next_rand(&seed) % 2 == 0;
		size_t before = r->seen.count;
		int ret = snapshot ? records_read_begin(r->seen.rs) : ZC_EOK;
		for (int i = 0; i < (snapshot ? 3 : 1) && ret == ZC_EOK; i++) {
			unsigned limit = 1 + next_rand(&seed) % 7;
			ret = records_changes_since(r->seen.rs, r->seen.last, limit,
			                            keep_event, &r->seen);
			r->reads++;
			nap(&seed, 1500); /* Inside the snapshot, when one. */
		}
		if (ret != ZC_EOK) {
			r->error = ret;
			return NULL;
		}
		if (snapshot) {
			records_read_end(r->seen.rs);
		}
		idle = last && r->seen.count == before ? idle + 1 : 0;
		nap(&seed, 1000);
	}
	return NULL;
}

/* --- The naive reader (PostgreSQL): `seq > last` --- */

typedef struct {
	long long start, seen;
	pthread_t thread;
} naive_t;

#ifdef ZC_HAVE_LIBPQ
static long long pg_int(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	long long v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ?
	              atoll(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	return v;
}

static void *naive_main(void *arg)
{
	naive_t *nv = arg;
	PGconn *c = PQconnectdb(target);
	long long last = nv->start;
	unsigned seed = seed0 + 5;
	for (int idle = 0; idle < 3;) {
		bool done = atomic_load(&writers_done);
		char sql[128];
		snprintf(sql, sizeof(sql), "SELECT seq FROM changes WHERE seq > %lld"
		         " ORDER BY seq LIMIT 500", last);
		PGresult *r = PQexec(c, sql);
		int n = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : 0;
		for (int i = 0; i < n; i++) {
			last = atoll(PQgetvalue(r, i, 0));
			nv->seen++;
		}
		PQclear(r);
		idle = done && n == 0 ? idle + 1 : 0;
		nap(&seed, 500);
	}
	PQfinish(c);
	return NULL;
}
#endif

/* --- Checks --- */

static void check_edges(builder_t *b, records_store_t *rs)
{
	uint64_t last = 0;
	CHECK_EQ(records_last_seq(rs, &last), ZC_EOK);
	for (int k = 0; k < BUILDERS; k++) {
		CHECK_EQ(b[k].error, 0);
		edge_txn_t txn = { 0 };
		uint64_t applied = 0;
		CHECK_EQ(edge_txn_begin_read(b[k].es, &txn), ZC_EOK);
		CHECK_EQ(edge_meta_get(&txn, "applied_seq", &applied), ZC_EOK);
		CHECK_EQ(applied, last);
		for (int z = 0; z < ZONES; z++) {
			records_zone_t now;
			edge_zone_t ez;
			CHECK_EQ(records_zone_get(rs, zones[z].id, &now), ZC_EOK);
			CHECK_EQ(edge_zone_get(&txn, now.apex, &ez), ZC_EOK);
			CHECK_EQ(ez.serial, now.serial);
		}
		edge_txn_abort(&txn);
		for (int z = 0; z < ZONES; z++) {
			CHECK_EQ(builder_verify(rs, b[k].es, zones[z].apex, NULL,
			                        NULL), 0);
		}
	}
}

/* Log order, per zone: versions step by one, from the serial before to
 * the serial after, one per committed unit. */
static void check_versions(const events_t *log, records_store_t *rs,
                           const unsigned *committed)
{
	for (int z = 0; z < ZONES; z++) {
		uint32_t v = zones[z].serial;
		unsigned versions = 0, steps_wrong = 0;
		for (size_t i = 0; i < log->count; i++) {
			const event_t *e = &log->ev[i];
			if (e->zone_id != zones[z].id || e->version == v) {
				continue;
			}
			steps_wrong += e->version != v + 1;
			v = e->version;
			versions++;
		}
		records_zone_t now;
		CHECK_EQ(records_zone_get(rs, zones[z].id, &now), ZC_EOK);
		CHECK_EQ(steps_wrong, 0);
		CHECK_EQ(v, now.serial);
		CHECK_EQ(versions, committed[z]);
		CHECK_EQ(now.serial - zones[z].serial, committed[z]);
	}
}

static bool same_events(const events_t *a, const events_t *b)
{
	if (a->count != b->count) {
		return false;
	}
	for (size_t i = 0; i < a->count; i++) {
		const event_t *x = &a->ev[i], *y = &b->ev[i];
		if (x->zone_id != y->zone_id || x->version != y->version ||
		    x->kind != y->kind || x->okey_len != y->okey_len ||
		    memcmp(x->okey, y->okey, x->okey_len) != 0) {
			return false;
		}
	}
	return true;
}

static unsigned env_or(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0' ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

int main(void)
{
	nodes = env_or("ZC_TEST_NODES", 4);
	nodes = nodes > NODES_MAX ? NODES_MAX : nodes < 1 ? 1 : nodes;
	units_per_node = env_or("ZC_TEST_UNITS", 200);
	seed0 = env_or("ZC_TEST_SEED", (unsigned)time(NULL));
	printf("seed %u (ZC_TEST_SEED), %u nodes x %u units, %d zones\n",
	       seed0, nodes, units_per_node, ZONES);
	const char *dir = test_tmpdir();
	target = test_records_target(dir);
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, target), ZC_EOK);
	for (int z = 0; z < ZONES; z++) {
		char name[32];
		snprintf(name, sizeof(name), "z%d.test.", z);
		CHECK_EQ(fx_zone_create(rs, name, 100 * (uint32_t)z + 1,
		                        &zones[z]), ZC_EOK);
	}
	uint64_t start = 0;
	CHECK_EQ(records_last_seq(rs, &start), ZC_EOK);

	builder_t b[BUILDERS];
	for (int k = 0; k < BUILDERS; k++) {
		memset(&b[k], 0, sizeof(b[k]));
		b[k].id = k;
		snprintf(b[k].dir, sizeof(b[k].dir), "/tmp/zonecast-edge-XXXXXX");
		CHECK(mkdtemp(b[k].dir) != NULL);
		CHECK_EQ(records_open(&b[k].rs, target), ZC_EOK);
		CHECK_EQ(records_open(&b[k].full_rs, target), ZC_EOK);
		CHECK_EQ(edge_open(&b[k].es, b[k].dir, 0), ZC_EOK);
		CHECK_EQ(builder_edge_prepare(b[k].rs, b[k].es), ZC_EOK);
	}
	reader_t reader = { .seen = { .last = start } };
	CHECK_EQ(records_open(&reader.seen.rs, target), ZC_EOK);
	naive_t naive = { 0 };
#ifdef ZC_HAVE_LIBPQ
	if (test_backend_is_pg()) {
		PGconn *c = PQconnectdb(target);
		naive.start = pg_int(c, "SELECT coalesce(max(seq), 0) FROM changes");
		PQfinish(c);
		pthread_create(&naive.thread, NULL, naive_main, &naive);
	}
#endif
	node_t node[NODES_MAX];
	writer_config_t cfg = { .data_dir = target };
	for (unsigned i = 0; i < nodes; i++) {
		node_t *n = &node[i];
		memset(n, 0, sizeof(*n));
		n->id = (int)i;
		n->units = calloc(units_per_node, sizeof(*n->units));
		pthread_mutex_init(&n->lock, NULL);
		pthread_cond_init(&n->cond, NULL);
		CHECK_EQ(writer_start(&cfg, &n->w), ZC_EOK);
	}
	for (int k = 0; k < BUILDERS; k++) {
		pthread_create(&b[k].thread, NULL, builder_main, &b[k]);
	}
	pthread_create(&reader.thread, NULL, reader_main, &reader);
	for (unsigned i = 0; i < nodes; i++) {
		pthread_create(&node[i].thread, NULL, submitter, &node[i]);
	}

	/* The writers run to the end; then the builders catch up. */
	unsigned committed[ZONES] = { 0 }, ok = 0, failed = 0, busy = 0;
	int events = 0;
	uint64_t splits = 0, batches = 0;
	for (unsigned i = 0; i < nodes; i++) {
		pthread_join(node[i].thread, NULL);
		CHECK_EQ(node[i].error, ZC_EOK);
		writer_stats_t st;
		writer_stats(node[i].w, &st);
		splits += st.splits;
		batches += st.batches;
		writer_stop(node[i].w);
		for (unsigned u = 0; u < units_per_node; u++) {
			const wunit_t *x = &node[i].units[u];
			if (x->result == ZC_EOK) {
				committed[x->zone]++;
				events += x->events;
				ok++;
			} else {
				CHECK_EQ(x->result, x->fail ? ZC_EUSAGE : ZC_EOK);
				failed++;
				busy += x->result == ZC_EBUSY;
			}
		}
	}
	atomic_store(&writers_done, true);
	for (int k = 0; k < BUILDERS; k++) {
		pthread_join(b[k].thread, NULL);
	}
	pthread_join(reader.thread, NULL);
#ifdef ZC_HAVE_LIBPQ
	if (test_backend_is_pg()) {
		pthread_join(naive.thread, NULL);
	}
#endif
	events_t table = { .last = start, .rs = rs };
	CHECK_EQ(records_changes_since(rs, start, 0, keep_event, &table), ZC_EOK);
	printf("%u units committed, %u failed (%u busy), %d events; %llu"
	       " batches, %llu cut at a zone held by another node\n", ok,
	       failed, busy, events, (unsigned long long)batches,
	       (unsigned long long)splits);
	printf("builders: %llu and %llu passes; reader: %u reads, %zu events"
	       " (%u holes, %u backwards)\n", (unsigned long long)b[0].passes,
	       (unsigned long long)b[1].passes, reader.reads, reader.seen.count,
	       reader.seen.holes, reader.seen.backwards);
	if (test_backend_is_pg()) {
		printf("naive reader (changes.seq > last): %lld events, skipped"
		       " %lld\n", naive.seen, (long long)table.count - naive.seen);
	}

	CHECK_EQ(busy, 0);
	CHECK_EQ(reader.error, ZC_EOK);
	CHECK_EQ(table.count, (size_t)events);
	CHECK_EQ(table.holes + table.backwards, 0);
	CHECK_EQ(reader.seen.holes, 0);
	CHECK_EQ(reader.seen.backwards, 0);
	CHECK(same_events(&reader.seen, &table));
	check_versions(&table, rs, committed);
	check_edges(b, rs);

	for (int k = 0; k < BUILDERS; k++) {
		edge_close(b[k].es);
		records_close(b[k].full_rs);
		records_close(b[k].rs);
		test_rmdir(b[k].dir);
	}
	for (unsigned i = 0; i < nodes; i++) {
		free(node[i].units);
	}
	free(table.ev);
	free(reader.seen.ev);
	records_close(reader.seen.rs);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
