/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Two nodes share one records store, each with its own edge store (as two
 * serve processes on one PostgreSQL store do). Node B is away while node A
 * applies new versions and trims the change log past what B applied. When
 * B comes back, its edge store is built again from the records
 * (builder_edge_prepare()): it serves every record and equals a full
 * build, rather than following a log that no longer holds what it missed.
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

int main(void)
{
	const char *dir_a = test_tmpdir();
	static char dir_b[] = "/tmp/zonecast-test-b-XXXXXX";
	if (mkdtemp(dir_b) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	records_store_t *rs;
	edge_store_t *a, *b;
	CHECK_EQ(records_open(&rs, test_records_target(dir_a)), ZC_EOK);
	CHECK_EQ(edge_open(&a, dir_a, 0), ZC_EOK);
	CHECK_EQ(edge_open(&b, dir_b, 0), ZC_EOK);
	CHECK_EQ(builder_edge_prepare(rs, a), ZC_EOK);
	CHECK_EQ(fixture_import(rs, a, "t.", zone_text), ZC_EOK);
	CHECK_EQ(builder_edge_prepare(rs, b), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, a, NULL), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_EOK);
	const uint8_t *apex = (const uint8_t *)"\x01" "t\x00";
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);
	CHECK(edge_has(b, zone.id, "ns"));

	/* B is away: A applies three versions and trims all but the newest
	 * event (the trim always keeps one). */
	add_version(rs, &zone, "one");
	add_version(rs, &zone, "two");
	add_version(rs, &zone, "three");
	uint64_t applied = 0, removed = 0, trimmed = 0;
	CHECK_EQ(builder_catch_up(rs, a, &applied), ZC_EOK);
	CHECK_EQ(records_journal_trim(rs, now_ms() + 60000, applied,
	                              &removed), ZC_EOK);
	CHECK(removed > 0);
	CHECK_EQ(records_trimmed_seq(rs, &trimmed), ZC_EOK);
	CHECK(trimmed > 0);

	/* B, had it stayed up, would stall rather than follow a log that no
	 * longer holds what it missed. */
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_ETRIMMED);

	/* B comes back: the log no longer holds "one" and "two". */
	CHECK_EQ(builder_edge_prepare(rs, b), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_EOK);
	CHECK(edge_has(b, zone.id, "one"));
	CHECK(edge_has(b, zone.id, "two"));
	CHECK(edge_has(b, zone.id, "three"));
	CHECK_EQ(builder_verify(rs, b, apex, NULL, NULL), 0);
	/* A, which applied everything, is left as it is, and follows on. */
	CHECK_EQ(builder_edge_prepare(rs, a), ZC_EOK);
	add_version(rs, &zone, "four");
	CHECK_EQ(builder_catch_up(rs, a, NULL), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, b, NULL), ZC_EOK);
	CHECK(edge_has(a, zone.id, "four") && edge_has(b, zone.id, "four"));
	CHECK_EQ(builder_verify(rs, a, apex, NULL, NULL), 0);
	CHECK_EQ(builder_verify(rs, b, apex, NULL, NULL), 0);

	edge_close(b);
	edge_close(a);
	records_close(rs);
	test_rmdir(dir_b);
	test_rmdir(dir_a);
	return test_done();
}
