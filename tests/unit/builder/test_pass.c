/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Log passes keep versions whole: three versions of one zone of 33,000
 * records each (99,000 events, more than a pass's 65,536) are built in two
 * passes cut between versions, never with a serial over half a version.
 */
#include <libknot/descriptor.h>

#include "builder/pass.h"
#include "tests/unit/zone_fixture.h"

#define PER_VERSION 33000

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

static uint32_t edge_serial(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta = { .serial = 0 };
	edge_txn_begin_read(es, &txn);
	edge_zone_get(&txn, apex, &meta);
	edge_txn_abort(&txn);
	return meta.serial;
}

/* One version (one write transaction) adding PER_VERSION names u<v>-<i>. */
static uint32_t add_version(records_store_t *rs, records_zone_t *zone, int v)
{
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, zone), ZC_EOK);
	for (int i = 0; i < PER_VERSION; i++) {
		char text[64];
		uint8_t owner[KNOT_DNAME_MAXLEN];
		snprintf(text, sizeof(text), "u%d-%d.v.", v, i);
		knot_dname_from_str(owner, text, sizeof(owner));
		uint8_t rdata[4] = { 192, 0, 2, (uint8_t)i };
		records_record_t rec = { .owner = owner, .type = KNOT_RRTYPE_A,
		                         .ttl = 60, .rdata = rdata, .rdata_len = 4 };
		if (records_record_insert(rs, zone, &rec) != ZC_EOK) {
			CHECK(false);
			break;
		}
	}
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	return zone->serial;
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "v.", zone_text), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	const uint8_t *apex = (const uint8_t *)"\x01" "v\x00";
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);

	pass_state_t st;
	CHECK_EQ(pass_init(&st, rs, rs, es, SIZE_MAX, true), ZC_EOK);
	uint32_t version[3];
	for (int v = 0; v < 3; v++) {
		version[v] = add_version(rs, &zone, v);
	}
	/* Pass 1 reads versions 0 and 1 whole (66,000 events: past the limit
	 * only inside version 1) and stops before version 2. */
	CHECK_EQ(pass_run(&st), 1);
	CHECK_EQ(edge_serial(es, apex), version[1]);
	CHECK(edge_has(es, zone.id, "u1-0"));
	CHECK(edge_has(es, zone.id, "u1-32999"));
	CHECK(!edge_has(es, zone.id, "u2-0"));
	/* Pass 2: version 2. */
	int ret;
	while ((ret = pass_run(&st)) == 1) {
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(edge_serial(es, apex), version[2]);
	CHECK(edge_has(es, zone.id, "u2-32999"));
	pass_deinit(&st);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
