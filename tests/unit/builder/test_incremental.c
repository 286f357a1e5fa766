/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-record builds and chunked full builds on real stores: record writes
 * reach the edge through the change log; a rename leaves nothing stale;
 * a full build in small steps interleaved with per-record builds of
 * another zone ends with both zones equal to their records (verify).
 */
#include <libknot/descriptor.h>

#include "tests/unit/zone_fixture.h"

static const char zone_text[] =
	"$TTL 300\n@ IN SOA ns hostmaster 1 7200 900 1209600 300\n@ IN NS ns\n"
	"ns IN A 192.0.2.1\nold IN A 192.0.2.2\n";

static bool edge_has(edge_store_t *es, int64_t zone_id, const char *rel,
                     size_t len)
{
	edge_txn_t txn = { 0 };
	const uint8_t *val;
	size_t vlen;
	edge_txn_begin_read(es, &txn);
	bool found = edge_node_get(&txn, (uint64_t)zone_id, (const uint8_t *)rel,
	                           len, &val, &vlen) == ZC_EOK;
	edge_txn_abort(&txn);
	return found;
}

static int add_a(records_store_t *rs, records_zone_t *zone, const char *name,
                 uint8_t last, int64_t *id)
{
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint8_t rdata[4] = { 192, 0, 2, last };
	knot_dname_from_str(owner, name, sizeof(owner));
	records_record_t rec = { .owner = owner, .type = KNOT_RRTYPE_A,
	                         .ttl = 60, .rdata = rdata, .rdata_len = 4 };
	int ret = records_record_insert(rs, zone, &rec);
	if (id != NULL) {
		*id = rec.id;
	}
	return ret;
}

static int first_id(const records_record_t *rec, void *ctx)
{
	*(int64_t *)ctx = rec->id;
	return 1;
}

static void per_record(records_store_t *rs, edge_store_t *es)
{
	records_zone_t zone;
	const uint8_t *apex = (const uint8_t *)"\x01" "a\x00";
	CHECK_EQ(fixture_import(rs, es, "a.", zone_text), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);
	uint32_t serial = zone.serial;

	/* A rename: delete old.a, create new.a, one version. */
	int64_t id = 0, old_id = 0;
	CHECK(edge_has(es, zone.id, "old\0", 4));
	CHECK_EQ(records_record_foreach(rs, zone.id, (const uint8_t *)
	                                "\x03old\x01" "a\x00", 0, first_id,
	                                &old_id), ZC_EOK);
	CHECK(old_id > 0);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, &zone), ZC_EOK);
	CHECK_EQ(records_record_delete(rs, &zone, old_id), ZC_EOK);
	CHECK_EQ(add_a(rs, &zone, "new.a.", 9, &id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK(edge_has(es, zone.id, "new\0", 4));
	CHECK(!edge_has(es, zone.id, "old\0", 4)); /* Nothing stale. */
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, &zone), ZC_EOK);
	CHECK_EQ(records_record_delete(rs, &zone, id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK(!edge_has(es, zone.id, "new\0", 4)); /* Nothing stale. */
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	edge_txn_t txn = { 0 };
	edge_zone_t meta;
	edge_txn_begin_read(es, &txn);
	CHECK_EQ(edge_zone_get(&txn, apex, &meta), ZC_EOK);
	edge_txn_abort(&txn);
	CHECK_EQ(meta.serial, serial + 2);
}

/*
 * An import built by another process (the CLI) while a record change
 * follows it in the log: the follower reads both in one pass, queues a
 * full build for the import, and must not skip it as already built, or
 * the record change (dropped as covered by that build) never reaches the
 * edge.
 */
static void import_then_record(records_store_t *rs, edge_store_t *es)
{
	const uint8_t *apex = (const uint8_t *)"\x01" "c\x00";
	records_zone_t zone;
	CHECK_EQ(fixture_import(rs, es, "c.", zone_text), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "c.", zone_text), ZC_EOK);
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, &zone), ZC_EOK);
	CHECK_EQ(add_a(rs, &zone, "after.c.", 7, NULL), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK(edge_has(es, zone.id, "after\0", 6));
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);
}

/* A full build of zone b in 3-node steps while zone a gets record builds. */
static void chunked(records_store_t *rs, records_store_t *full_rs,
                    edge_store_t *es)
{
	char text[65536];
	size_t len = snprintf(text, sizeof(text), "%s", zone_text);
	for (int i = 0; i < 200; i++) {
		len += snprintf(text + len, sizeof(text) - len,
		                "h%d IN A 192.0.2.%d\n", i, i % 250);
	}
	const uint8_t *apex_a = (const uint8_t *)"\x01" "a\x00";
	const uint8_t *apex_b = (const uint8_t *)"\x01" "b\x00";
	CHECK_EQ(fixture_import(rs, es, "b.", text), ZC_EOK);
	/* Change b wholesale in the records store, then rebuild in steps. */
	len = snprintf(text, sizeof(text), "%s", zone_text);
	for (int i = 100; i < 300; i++) {
		len += snprintf(text + len, sizeof(text) - len,
		                "h%d IN TXT \"v%d\"\n", i, i);
	}
	uint8_t apex[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(apex, "b.", sizeof(apex));
	records_import_t *imp;
	CHECK_EQ(records_import_begin(rs, apex, &imp), ZC_EOK);
	zonefile_handler_t h = { .record = fixture_record, .error = fixture_error,
	                         .ctx = imp };
	CHECK_EQ(zonefile_parse_text(text, len, apex, 3600, &h), ZC_EOK);
	CHECK_EQ(records_import_commit(imp, NULL, NULL), ZC_EOK);
	CHECK(builder_verify(rs, es, apex_b, NULL, NULL) > 0);

	builder_job_t *job;
	CHECK_EQ(builder_full_begin(full_rs, es, apex_b, &job), ZC_EOK);
	records_zone_t za;
	CHECK_EQ(records_zone_find(rs, apex_a, &za), ZC_EOK);
	int steps = 0, ret;
	while ((ret = builder_full_step(job, 3)) == 1) {
		steps++;
		/* Between steps, zone a changes and is built per record. */
		char name[32];
		snprintf(name, sizeof(name), "s%d.a.", steps);
		CHECK_EQ(records_write_begin(rs), ZC_EOK);
		CHECK_EQ(records_zone_bump(rs, &za), ZC_EOK);
		CHECK_EQ(add_a(rs, &za, name, (uint8_t)steps, NULL), ZC_EOK);
		CHECK_EQ(records_write_commit(rs), ZC_EOK);
		builder_touch_t t = { .zone_id = za.id, .version = za.serial };
		memcpy(t.apex, apex_a, 3);
		t.okey_len = (size_t)snprintf((char *)t.okey, sizeof(t.okey), "s%d",
		                              steps) + 1;
		builder_stats_t st;
		CHECK_EQ(builder_record_build(rs, es, &t, 1, &st, NULL, NULL), ZC_EOK);
	}
	CHECK_EQ(ret, 0);
	builder_full_end(job, NULL);
	CHECK(steps > 50);
	CHECK_EQ(builder_verify(rs, es, apex_b, NULL, NULL), 0);
	CHECK_EQ(builder_verify(rs, es, apex_a, NULL, NULL), 0);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs, *full_rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(records_open(&full_rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	per_record(rs, es);
	chunked(rs, full_rs, es);
	import_then_record(rs, es);
	edge_close(es);
	records_close(full_rs);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
