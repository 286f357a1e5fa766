/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Nodes share one records store, each with its own edge store (as serve
 * processes on one PostgreSQL store do): A applies new versions and trims
 * the change log while B and C lag behind.
 *
 * - On PostgreSQL, B is live (its heartbeat row is fresh, as zonecast
 *   status says up) but behind: the trim keeps every event B has not
 *   applied, and B follows the log on, building nothing twice.
 * - Then B's heartbeat stops (older than RECORDS_NODE_DOWN_MS; on SQLite
 *   there are no rows): A's trim no longer waits for it. B, paused and
 *   resumed, finds the log trimmed past its position while it runs and
 *   builds every zone again in place (builder_edge_rebuild()), dropping
 *   the zone deleted meanwhile; C, restarted, is built again at start
 *   (builder_edge_prepare()). Both serve every record and equal a full
 *   build, rather than following a log that no longer holds what they
 *   missed.
 *
 * Runs on SQLite and, as trimmed@pg, on PostgreSQL (records_target.h).
 */
#include <time.h>
#include <libknot/descriptor.h>

#include "builder/pass.h"
#include "tests/unit/records_target.h"
#include "tests/unit/zone_fixture.h"

static const char zone_text[] =
	"$TTL 300\n@ IN SOA ns hostmaster 1 7200 900 1209600 300\n@ IN NS ns\n"
	"ns IN A 192.0.2.1\n";

#define APEX_T ((const uint8_t *)"\x01" "t\x00")
#define APEX_U ((const uint8_t *)"\x01" "u\x00")

static bool edge_has(edge_store_t *es, int64_t zone_id, const char *rel)
{
	edge_txn_t txn = { 0 };
	const uint8_t *val;
	size_t vlen;
	edge_txn_begin_read(es, &txn);
	bool found = edge_node_get(&txn, (uint64_t)zone_id, (const uint8_t *)rel,
	                           strlen(rel) + 1, &val, &vlen) == ZC_EOK;
	edge_txn_abort(&txn);
	return found;
}

static bool edge_serves(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t zone;
	edge_txn_begin_read(es, &txn);
	bool found = edge_zone_get(&txn, apex, &zone) == ZC_EOK;
	edge_txn_abort(&txn);
	return found;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One version adding the name <label>.t. */
static void add_version(records_store_t *rs, records_zone_t *zone,
                        const char *label)
{
	char text[64];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	snprintf(text, sizeof(text), "%s.t.", label);
	knot_dname_from_str(owner, text, sizeof(owner));
	uint8_t rdata[4] = { 192, 0, 2, 7 };
	records_record_t rec = { .owner = owner, .type = KNOT_RRTYPE_A,
	                         .ttl = 60, .rdata = rdata, .rdata_len = 4 };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, zone), ZC_EOK);
	CHECK_EQ(records_record_insert(rs, zone, &rec), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
}

/* A catches up and trims everything old enough that the trim may take
 * (now + 60 s: every event); the trim mark. */
static uint64_t a_trims(records_store_t *rs, edge_store_t *a)
{
	uint64_t applied = 0, removed = 0, trimmed = 0;
	CHECK_EQ(builder_catch_up(rs, a, &applied), ZC_EOK);
	CHECK_EQ(records_journal_trim(rs, now_ms() + 60000, applied,
	                              &removed), ZC_EOK);
	CHECK_EQ(records_trimmed_seq(rs, &trimmed), ZC_EOK);
	return trimmed;
}

/* PostgreSQL: B's heartbeat row says it applied up to what its edge has;
 * while the row is fresh the trim keeps every event past that. */
static void live_node_holds_the_log(records_store_t *rs, const char *dir,
                                    edge_store_t *a, edge_store_t *b,
                                    records_zone_t *zone)
{
	uint64_t b_applied = 0;
	CHECK_EQ(builder_catch_up(rs, b, &b_applied), ZC_EOK);
	records_node_t node_b = { .name = "b", .role = "serve",
	                          .version = "test", .pid = 2,
	                          .started_ms = 1, .applied_seq = b_applied };
	CHECK_EQ(records_node_beat(rs, &node_b), ZC_EOK);
	add_version(rs, zone, "one");
	add_version(rs, zone, "two");
	uint64_t trimmed = a_trims(rs, a);
	CHECK(trimmed > 0);          /* What B had applied went... */
	CHECK(trimmed <= b_applied); /* ...and nothing B lacks. */
	/* B follows the log: no hole, nothing built again. */
	uint64_t last = 0;
	CHECK_EQ(records_last_seq(rs, &last), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, b, &b_applied), ZC_EOK);
	CHECK_EQ(b_applied, last);
	CHECK(edge_has(b, zone->id, "one") && edge_has(b, zone->id, "two"));
	/* B's heartbeat stops: its row is older than the liveness window. */
	CHECK_EQ(test_records_exec(dir, "UPDATE nodes SET last_seen ="
	                           " now() - interval '6 seconds'"), 0);
}

int main(void)
{
	const char *dir_a = test_tmpdir();
	static char dir_b[] = "/tmp/zonecast-test-b-XXXXXX";
	static char dir_c[] = "/tmp/zonecast-test-c-XXXXXX";
	if (mkdtemp(dir_b) == NULL || mkdtemp(dir_c) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	records_store_t *rs;
	edge_store_t *a, *b, *c;
	CHECK_EQ(records_open(&rs, test_records_target(dir_a)), ZC_EOK);
	CHECK_EQ(edge_open(&a, dir_a, 0), ZC_EOK);
	CHECK_EQ(edge_open(&b, dir_b, 0), ZC_EOK);
	CHECK_EQ(edge_open(&c, dir_c, 0), ZC_EOK);
	CHECK_EQ(builder_edge_prepare(rs, a), ZC_EOK);
	CHECK_EQ(fixture_import(rs, a, "t.", zone_text), ZC_EOK);
	CHECK_EQ(fixture_import(rs, a, "u.", zone_text), ZC_EOK);
	CHECK_EQ(builder_edge_prepare(rs, b), ZC_EOK);
	CHECK_EQ(builder_edge_prepare(rs, c), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, a, NULL), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, c, NULL), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, APEX_T, &zone), ZC_EOK);
	CHECK(edge_has(b, zone.id, "ns") && edge_serves(b, APEX_U));

	if (test_backend_is_pg()) {
		live_node_holds_the_log(rs, dir_a, a, b, &zone);
	}

	/* B and C are not live: A applies three versions, deletes zone u
	 * and trims all but the newest event (the trim always keeps one). */
	uint64_t b_applied = 0;
	CHECK_EQ(builder_catch_up(rs, b, &b_applied), ZC_EOK);
	add_version(rs, &zone, "three");
	add_version(rs, &zone, "four");
	CHECK_EQ(records_zone_delete(rs, APEX_U, NULL), ZC_EOK);
	add_version(rs, &zone, "five");
	CHECK(a_trims(rs, a) > b_applied);

	/* B resumes (it was paused, not restarted): its pass finds the log
	 * trimmed past it and builds every zone again in place. */
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_EOK);
	/* C comes back (a restart): built again before it follows. */
	CHECK_EQ(builder_edge_prepare(rs, c), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, c, NULL), ZC_EOK);
	edge_store_t *lagged[] = { b, c };
	for (size_t i = 0; i < 2; i++) {
		edge_store_t *es = lagged[i];
		CHECK(edge_has(es, zone.id, "three"));
		CHECK(edge_has(es, zone.id, "four"));
		CHECK(edge_has(es, zone.id, "five"));
		CHECK(!edge_serves(es, APEX_U));
		CHECK_EQ(builder_verify(rs, es, APEX_T, NULL, NULL), 0);
	}
	/* Everyone, A left as it was, follows on. */
	CHECK_EQ(builder_edge_prepare(rs, a), ZC_EOK);
	add_version(rs, &zone, "six");
	edge_store_t *all[] = { a, b, c };
	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ(builder_catch_up(rs, all[i], NULL), ZC_EOK);
		CHECK(edge_has(all[i], zone.id, "six"));
		CHECK_EQ(builder_verify(rs, all[i], APEX_T, NULL, NULL), 0);
	}

	edge_close(c);
	edge_close(b);
	edge_close(a);
	records_close(rs);
	test_rmdir(dir_c);
	test_rmdir(dir_b);
	test_rmdir(dir_a);
	return test_done();
}
