/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Records per zone (records/counts.c): the count each write keeps
 * (zones.record_count, which zone-max-records bounds) must equal the
 * zone's records after adds, deletes, updates, imports that replace the
 * zone, units rolled back, and batches touching more zones than the
 * count cache holds; records_counts_verify() (zonecast verify) reports a
 * count that does not.
 */
#include <sqlite3.h>

#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

/* The kept count equals the records, by every way of reading it. */
typedef struct {
	int64_t zone_id;
	int64_t listed;
} listed_t;

static int list_cb(const records_zone_t *zone, void *ctx)
{
	listed_t *l = ctx;
	if (zone->id == l->zone_id) {
		l->listed = zone->record_count;
	}
	return 0;
}

static int mismatches;

static void mismatch_cb(const char *zone, int64_t kept, int64_t real,
                        void *ctx)
{
	(void)ctx;
	fprintf(stderr, "mismatch: %s kept %lld, has %lld\n", zone,
	        (long long)kept, (long long)real);
	mismatches++;
}

static void check_count(records_store_t *rs, int64_t zone_id, int64_t want,
                        int line)
{
	listed_t l = { .zone_id = zone_id, .listed = -1 };
	int64_t kept = fx_kept(rs, zone_id), real = fx_count(rs, zone_id, NULL, 0);
	CHECK_EQ(records_zone_list(rs, true, list_cb, &l), ZC_EOK);
	if (kept != want || real != want || l.listed != want) {
		fprintf(stderr, "line %d: zone %lld: kept %lld, read %lld, "
		        "listed %lld, expected %lld\n", line, (long long)zone_id,
		        (long long)kept, (long long)real, (long long)l.listed,
		        (long long)want);
	}
	CHECK_EQ(kept, want);
	CHECK_EQ(real, want);
	CHECK_EQ(l.listed, want);
	mismatches = 0;
	CHECK_EQ(records_counts_verify(rs, mismatch_cb, NULL), ZC_EOK);
	CHECK_EQ(mismatches, 0);
}

#define COUNT_IS(rs, zone_id, want) check_count(rs, zone_id, want, __LINE__)

static void test_adds_deletes(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "ad.test.", 1, &z), ZC_EOK);
	COUNT_IS(rs, z.id, 2);
	fx_add_t units[3] = {
		{ .zone_id = z.id, .names = { "a.ad.test.", "b.ad.test." } },
		{ .zone_id = z.id, .names = { "c.ad.test." } },
		{ .zone_id = z.id, .names = { "a.ad.test.", "d.ad.test." } },
	};
	int results[3];
	CHECK_EQ(fx_batch(rs, units, 3, results), ZC_EOK);
	COUNT_IS(rs, z.id, 7);
	fx_add_t del = { .zone_id = z.id,
	                 .deletes = { fx_id(rs, z.id, "a.ad.test."),
	                              fx_id(rs, z.id, "c.ad.test.") } };
	CHECK_EQ(fx_single(rs, &del), ZC_EOK);
	COUNT_IS(rs, z.id, 5);
	/* A delete of a record that is gone fails the unit, and its other
	 * writes with it. */
	fx_add_t bad = { .zone_id = z.id, .names = { "e.ad.test." },
	                 .deletes = { fx_id(rs, z.id, "b.ad.test."), 999999 } };
	CHECK_EQ(fx_single(rs, &bad), KNOT_ENOENT);
	COUNT_IS(rs, z.id, 5);
	CHECK_EQ(fx_count(rs, z.id, "b.ad.test.", 0), 1);
}

/* An update as the API and UPDATE make it: the old record deleted and
 * the new one inserted with the same id. */
typedef struct {
	int64_t zone_id, id;
} update_t;

static int update_unit(records_store_t *rs, void *ctx)
{
	update_t *u = ctx;
	records_zone_t zone;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	const uint8_t addr[4] = { 198, 51, 100, 7 };
	int ret = fx_unit_start(rs, u->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = records_record_delete(rs, &zone, u->id);
	}
	records_record_t rec = { .id = u->id,
	                         .owner = fx_name(owner, "renamed.up.test."),
	                         .type = KNOT_RRTYPE_A, .ttl = 60,
	                         .rdata = addr, .rdata_len = 4 };
	return ret == ZC_EOK ? records_record_insert(rs, &zone, &rec) : ret;
}

static void test_update(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "up.test.", 1, &z), ZC_EOK);
	fx_add_t add = { .zone_id = z.id, .names = { "old.up.test." } };
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	update_t u = { .zone_id = z.id, .id = fx_id(rs, z.id, "old.up.test.") };
	CHECK(u.id > 0);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, update_unit, &u), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	COUNT_IS(rs, z.id, 3);
	CHECK_EQ(fx_id(rs, z.id, "renamed.up.test."), u.id);
	CHECK_EQ(fx_count(rs, z.id, "old.up.test.", 0), 0);
}

/* An import replaces the zone's records: the count is the file's. */
static void test_replace(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_import(rs, "imp.test.", "@ SOA ns h 1 2 3 4 5\n@ NS ns\n"
	                   "ns A 192.0.2.1\nwww A 192.0.2.2\nwww A 192.0.2.3\n",
	                   &z), ZC_EOK);
	COUNT_IS(rs, z.id, 5);
	fx_add_t add = { .zone_id = z.id,
	                 .names = { "x.imp.test.", "y.imp.test." } };
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	COUNT_IS(rs, z.id, 7);
	CHECK_EQ(fx_import(rs, "imp.test.", "@ SOA ns h 9 2 3 4 5\n@ NS ns\n"
	                   "ns A 192.0.2.1\n", &z), ZC_EOK);
	COUNT_IS(rs, z.id, 3);
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	COUNT_IS(rs, z.id, 5);
	/* An import past the bound is refused before it writes. */
	records_set_max_records(rs, 4);
	CHECK(fx_import(rs, "imp.test.", "@ SOA ns h 10 2 3 4 5\n@ NS ns\n"
	                "a A 192.0.2.1\nb A 192.0.2.1\nc A 192.0.2.1\n", &z)
	      != ZC_EOK);
	records_import_t *imp;
	uint8_t apex[KNOT_DNAME_MAXLEN], owner[KNOT_DNAME_MAXLEN];
	const uint8_t addr[4] = { 192, 0, 2, 1 };
	CHECK_EQ(records_import_begin(rs, fx_name(apex, "imp.test."), &imp),
	         ZC_EOK);
	int ret = ZC_EOK;
	for (int i = 0; i < 5 && ret == ZC_EOK; i++) {
		ret = records_import_add(imp, fx_name(owner, "a.imp.test."),
		                         KNOT_RRTYPE_A, 300, addr, 4, i);
	}
	CHECK_EQ(ret, ZC_ETOOMANY);
	CHECK_EQ(records_import_count(imp), 4);
	records_import_abort(imp);
	records_set_max_records(rs, 0);
	COUNT_IS(rs, z.id, 5);
}

/* More zones in one batch than the counts kept in memory (8): the others
 * are written at once, and rolled back by SQLite with their unit. */
static void test_many_zones(records_store_t *rs)
{
	enum { ZONES = 11 };
	records_zone_t z[ZONES];
	char names[ZONES][2][32], apex[ZONES][32];
	fx_add_t units[2 * ZONES];
	int results[2 * ZONES];
	for (int i = 0; i < ZONES; i++) {
		snprintf(apex[i], sizeof(apex[i]), "m%d.test.", i);
		CHECK_EQ(fx_zone_create(rs, apex[i], 1, &z[i]), ZC_EOK);
		for (int k = 0; k < 2; k++) {
			snprintf(names[i][k], sizeof(names[i][k]), "r%d.m%d.test.",
			         k, i);
		}
	}
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < ZONES; i++) {
			/* Every third unit of the second round fails. */
			units[round * ZONES + i] = (fx_add_t){
				.zone_id = z[i].id,
				.names = { names[i][round] },
				.fail = round == 1 && i % 3 == 0 ? ZC_ERDATA :
				        ZC_EOK,
			};
		}
	}
	CHECK_EQ(fx_batch(rs, units, 2 * ZONES, results), ZC_EOK);
	for (int i = 0; i < ZONES; i++) {
		COUNT_IS(rs, z[i].id, i % 3 == 0 ? 3 : 4);
	}
}

/* A count that does not match its records is reported (written here
 * behind the store's back, as a bug or a manual edit would). */
static void test_verify_reports(records_store_t *rs, const char *dir)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "wrong.test.", 1, &z), ZC_EOK);
	char sql[128];
	snprintf(sql, sizeof(sql), "UPDATE zones SET record_count = 9 WHERE"
	         " id = %lld", (long long)z.id);
	CHECK_EQ(test_records_exec(dir, sql), 0);
	mismatches = 0;
	CHECK_EQ(records_counts_verify(rs, mismatch_cb, NULL), ZC_EOK);
	CHECK_EQ(mismatches, 1);
	CHECK_EQ(fx_kept(rs, z.id), 9);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	if (records_open(&rs, test_records_target(dir)) != ZC_EOK) {
		fprintf(stderr, "cannot open a records store in %s\n", dir);
		return 1;
	}
	test_adds_deletes(rs);
	test_update(rs);
	test_replace(rs);
	test_many_zones(rs);
	test_verify_reports(rs, dir);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
