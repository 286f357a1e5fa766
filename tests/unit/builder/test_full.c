/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Full build and verify on real SQLite and LMDB files: build, verify finds
 * nothing, a re-import rewrites only what changed, tampering with the edge
 * is found, deletion removes the zone, the import checks refuse bad zones.
 */
#include "tests/unit/zone_fixture.h"

static const char zone_v1[] =
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 10 7200 900 1209600 300\n"
	"@ IN NS ns\n"
	"ns IN A 192.0.2.1\n"
	"a IN A 192.0.2.2\n"
	"b IN A 192.0.2.3\n"
	"c.d IN TXT \"x\"\n";

static const char zone_v2[] =  /* b changed, a gone, e new, serial same */
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 10 7200 900 1209600 300\n"
	"@ IN NS ns\n"
	"ns IN A 192.0.2.1\n"
	"b IN A 192.0.2.33\n"
	"c.d IN TXT \"x\"\n"
	"e IN AAAA 2001:db8::1\n";

static void count_diff(const knot_dname_t *owner, const char *what, void *ctx)
{
	(void)owner, (void)what;
	(*(int *)ctx)++;
}

static uint32_t edge_serial(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t zone = { 0 };
	edge_txn_begin_read(es, &txn);
	int ret = edge_zone_get(&txn, apex, &zone);
	edge_txn_abort(&txn);
	return ret == ZC_EOK ? zone.serial : 0;
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	const uint8_t *apex = (const uint8_t *)"\x07" "example\x00";

	CHECK_EQ(fixture_import(rs, es, "example.", zone_v1), ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 10);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* Same serial in the file: serials only grow (old + 1). */
	CHECK_EQ(fixture_import(rs, es, "example.", zone_v2), ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 11);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* A rebuild with nothing changed writes nothing. */
	builder_stats_t st;
	CHECK_EQ(builder_full_build(rs, es, apex, &st, NULL, NULL), ZC_EOK);
	CHECK_EQ(st.nodes_written, 0);
	CHECK_EQ(st.nodes_deleted, 0);
	CHECK(st.nodes_unchanged >= 4);

	/* Tampering at the edge is found by verify and repaired by a build. */
	edge_txn_t txn = { 0 };
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_txn_del_node(&txn, 1 /* first zone id */, (const uint8_t *)"b\0", 2,
	                           UINT64_MAX), ZC_EOK);
	CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
	int diffs = 0;
	CHECK_EQ(builder_verify(rs, es, apex, count_diff, &diffs), 1);
	CHECK_EQ(diffs, 1);
	CHECK_EQ(builder_full_build(rs, es, apex, &st, NULL, NULL), ZC_EOK);
	CHECK_EQ(st.nodes_written, 1);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* Bad zones change nothing. */
	CHECK(fixture_import(rs, es, "example.",
	      "@ 300 IN SOA ns h 1 1 1 1 1\n@ IN NS ns\nx IN CNAME a\n"
	      "x IN A 1.2.3.4\n") > 0);
	CHECK(fixture_import(rs, es, "example.",
	      "@ 300 IN SOA ns h 1 1 1 1 1\nx IN A 1.2.3.4\n") > 0);
	CHECK(fixture_import(rs, es, "example.",
	      "@ 300 IN SOA ns h 1 1 1 1 1\n@ IN NS ns\nx 1 IN A 1.2.3.4\n"
	      "x 2 IN A 1.2.3.5\n") > 0);
	CHECK(fixture_import(rs, es, "example.",
	      "@ 300 IN SOA ns h 1 1 1 1 1\n@ IN NS ns\nx.other. IN A 1.2.3.4\n")
	      != ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 11);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* Deleting the zone removes it from the edge. */
	uint64_t seq;
	CHECK_EQ(records_zone_delete(rs, apex, &seq), ZC_EOK);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 0);

	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
