/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Write transactions and savepoints (records/txn.c) as the group
 * committer uses them: several units of work in one transaction, each in
 * a savepoint. A unit that fails is rolled back alone: its records, its
 * record counts, its change-log events and its version go, the units
 * before and after it commit, and the next unit gets the version again
 * with its own IXFR index entry. Also the inner savepoint of an UPDATE
 * and the rollback of a whole transaction.
 */
#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

/* A unit's own refusal after it wrote (a record of the batch found bad). */
#define NOT_ACCEPTED ZC_ERDATA

/* Units of one batch on one zone: the second fails after it wrote. */
static void test_failed_unit_alone(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "txn.test.", 100, &z), ZC_EOK);
	uint64_t before = fx_last_seq(rs);
	fx_add_t units[3] = {
		{ .zone_id = z.id, .names = { "a.txn.test." } },
		{ .zone_id = z.id, .names = { "b.txn.test.", "b2.txn.test." },
		  .fail = NOT_ACCEPTED },
		{ .zone_id = z.id, .names = { "c.txn.test." } },
	};
	int results[3];
	CHECK_EQ(fx_batch(rs, units, 3, results), ZC_EOK);
	CHECK_EQ(results[0], ZC_EOK);
	CHECK_EQ(results[1], NOT_ACCEPTED);
	CHECK_EQ(results[2], ZC_EOK);
	/* The failed unit's version is handed out again. */
	CHECK_EQ(units[0].version, 101);
	CHECK_EQ(units[1].version, 102);
	CHECK_EQ(units[2].version, 102);
	CHECK_EQ(fx_serial(rs, z.id), 102);

	CHECK_EQ(fx_count(rs, z.id, "a.txn.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z.id, "b.txn.test.", 0), 0);
	CHECK_EQ(fx_count(rs, z.id, "b2.txn.test.", 0), 0);
	CHECK_EQ(fx_count(rs, z.id, "c.txn.test.", 0), 1);
	CHECK_EQ(fx_kept(rs, z.id), 4); /* SOA, NS, a, c */
	CHECK_EQ(fx_count(rs, z.id, NULL, 0), 4);

	fx_events_t e;
	CHECK_EQ(fx_events(rs, before, &e), ZC_EOK);
	CHECK_STR(e.text, "rc:a.txn.test.@101 rc:c.txn.test.@102");

	/* IXFR from each version: the rolled-back unit had indexed 102
	 * first, so c's unit must index it again. */
	fx_journal_t j;
	CHECK_EQ(fx_journal(rs, "txn.test.", 100, 102, &j), ZC_EOK);
	CHECK_STR(j.text, "+a.txn.test.@101 +c.txn.test.@102");
	CHECK_EQ(fx_journal(rs, "txn.test.", 101, 102, &j), ZC_EOK);
	CHECK_STR(j.text, "+c.txn.test.@102");
}

/* Units of two zones in one batch; a unit of each zone fails. */
static void test_two_zones(records_store_t *rs)
{
	records_zone_t x, y;
	CHECK_EQ(fx_zone_create(rs, "x.test.", 1, &x), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "y.test.", 7, &y), ZC_EOK);
	fx_add_t units[5] = {
		{ .zone_id = x.id, .names = { "1.x.test." } },
		{ .zone_id = y.id, .names = { "1.y.test." }, .fail = NOT_ACCEPTED },
		{ .zone_id = y.id, .names = { "2.y.test.", "3.y.test." } },
		{ .zone_id = x.id, .names = { "2.x.test." }, .fail = NOT_ACCEPTED },
		{ .zone_id = x.id, .names = { "3.x.test." } },
	};
	int results[5];
	CHECK_EQ(fx_batch(rs, units, 5, results), ZC_EOK);
	CHECK_EQ(fx_serial(rs, x.id), 3);
	CHECK_EQ(fx_serial(rs, y.id), 8);
	CHECK_EQ(fx_kept(rs, x.id), 4);
	CHECK_EQ(fx_kept(rs, y.id), 4);
	CHECK_EQ(fx_count(rs, x.id, "2.x.test.", 0), 0);
	CHECK_EQ(fx_count(rs, y.id, "1.y.test.", 0), 0);
	fx_journal_t j;
	CHECK_EQ(fx_journal(rs, "x.test.", 1, 3, &j), ZC_EOK);
	CHECK_STR(j.text, "+1.x.test.@2 +3.x.test.@3");
	CHECK_EQ(fx_journal(rs, "y.test.", 7, 8, &j), ZC_EOK);
	CHECK_STR(j.text, "+2.y.test.@8 +3.y.test.@8");
}

/* A unit refused by the zone's record bound (ZC_ETOOMANY) in the middle
 * of a batch: the bound counts what the batch committed before it, not
 * what the refused unit wrote. */
static void test_bound(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "bound.test.", 1, &z), ZC_EOK);
	records_set_max_records(rs, 4); /* SOA, NS and two more. */
	fx_add_t units[4] = {
		{ .zone_id = z.id, .names = { "a.bound.test." } },
		{ .zone_id = z.id, .names = { "b.bound.test.", "c.bound.test." } },
		{ .zone_id = z.id, .names = { "d.bound.test." } },
		{ .zone_id = z.id, .names = { "e.bound.test." } },
	};
	int results[4];
	CHECK_EQ(fx_batch(rs, units, 4, results), ZC_EOK);
	CHECK_EQ(results[0], ZC_EOK);
	CHECK_EQ(results[1], ZC_ETOOMANY);
	CHECK_EQ(results[2], ZC_EOK);
	CHECK_EQ(results[3], ZC_ETOOMANY);
	CHECK_EQ(fx_kept(rs, z.id), 4);
	CHECK_EQ(fx_count(rs, z.id, NULL, 0), 4);
	CHECK_EQ(fx_serial(rs, z.id), 3);
	/* A delete makes room again. */
	fx_add_t swap = { .zone_id = z.id, .names = { "f.bound.test." },
	                  .deletes = { fx_id(rs, z.id, "a.bound.test.") } };
	CHECK_EQ(fx_single(rs, &swap), ZC_EOK);
	CHECK_EQ(fx_kept(rs, z.id), 4);
	CHECK_EQ(fx_count(rs, z.id, "a.bound.test.", 0), 0);
	CHECK_EQ(fx_count(rs, z.id, "f.bound.test.", 0), 1);
	records_set_max_records(rs, 0);
}

/* An UPDATE undoes part of its unit with the inner savepoint (changes
 * that cancel out must not move the serial). */
typedef struct {
	int64_t zone_id;
} inner_t;

static int inner_unit(records_store_t *rs, void *ctx)
{
	inner_t *in = ctx;
	records_zone_t zone;
	int ret = fx_unit_start(rs, in->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = fx_insert_a(rs, &zone, "kept.inner.test.", 1, NULL);
	}
	if (ret == ZC_EOK) {
		ret = records_inner_savepoint(rs);
	}
	if (ret == ZC_EOK) {
		ret = fx_insert_a(rs, &zone, "undone.inner.test.", 2, NULL);
	}
	if (ret == ZC_EOK) {
		ret = fx_insert_a(rs, &zone, "undone2.inner.test.", 3, NULL);
	}
	if (ret == ZC_EOK) {
		records_inner_rollback(rs);
	}
	return ret;
}

static void test_inner(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "inner.test.", 10, &z), ZC_EOK);
	uint64_t before = fx_last_seq(rs);
	inner_t in = { .zone_id = z.id };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, inner_unit, &in), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "kept.inner.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z.id, "undone.inner.test.", 0), 0);
	CHECK_EQ(fx_kept(rs, z.id), 3);
	fx_events_t e;
	CHECK_EQ(fx_events(rs, before, &e), ZC_EOK);
	CHECK_STR(e.text, "rc:kept.inner.test.@11");
}

/* A whole transaction rolled back (SQLite failed it, or the writer
 * stopped): nothing of it stays, and the next one reuses its version. */
static void test_rollback(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "rb.test.", 5, &z), ZC_EOK);
	uint64_t before = fx_last_seq(rs);
	fx_add_t unit = { .zone_id = z.id, .names = { "gone.rb.test." } };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK(records_write_open(rs));
	CHECK_EQ(fx_run_unit(rs, fx_add_unit, &unit), ZC_EOK);
	records_write_rollback(rs);
	CHECK(!records_write_open(rs));
	CHECK_EQ(fx_serial(rs, z.id), 5);
	CHECK_EQ(fx_kept(rs, z.id), 2);
	CHECK_EQ(fx_last_seq(rs), before);

	fx_add_t again = { .zone_id = z.id, .names = { "here.rb.test." } };
	CHECK_EQ(fx_single(rs, &again), ZC_EOK);
	CHECK_EQ(again.version, 6);
	CHECK_EQ(fx_kept(rs, z.id), 3);
	fx_journal_t j;
	CHECK_EQ(fx_journal(rs, "rb.test.", 5, 6, &j), ZC_EOK);
	CHECK_STR(j.text, "+here.rb.test.@6");
}

/* A unit as the writer runs one in a batch (records_fixture.h). */
static int lazy_unit(records_store_t *rs,
                     int (*fn)(records_store_t *rs, void *ctx), void *ctx)
{
	return fx_run_unit_as(rs, true, fn, ctx);
}

/* A unit that writes d, then reads (its savepoint is sent then, after
 * the rows of the units released before it): it sees c, an earlier
 * unit's row still held, and its own d; then it fails. */
static int write_read_fail(records_store_t *rs, void *ctx)
{
	int64_t zone_id = *(int64_t *)ctx;
	records_zone_t zone;
	int ret = fx_unit_start(rs, zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = fx_insert_a(rs, &zone, "d.lazy.test.", 4, NULL);
	}
	if (ret == ZC_EOK && (fx_count(rs, zone_id, "c.lazy.test.", 0) != 1 ||
	                      fx_count(rs, zone_id, "d.lazy.test.", 0) != 1)) {
		ret = ZC_ESQL;
	}
	return ret == ZC_EOK ? NOT_ACCEPTED : ret;
}

/* A unit that inserts a record under the id of record *ctx: refused by
 * the server only when its row is sent. */
typedef struct {
	int64_t zone_id, id;
} clash_t;

static int clash_unit(records_store_t *rs, void *ctx)
{
	clash_t *c = ctx;
	records_zone_t zone;
	uint8_t name[KNOT_DNAME_MAXLEN];
	const uint8_t addr[4] = { 192, 0, 2, 99 };
	int ret = fx_unit_start(rs, c->zone_id, &zone);
	records_record_t rec = { .id = c->id, .type = KNOT_RRTYPE_A, .ttl = 300,
	                         .owner = fx_name(name, "clash.lazy.test."),
	                         .rdata = addr, .rdata_len = 4 };
	return ret == ZC_EOK ? records_record_insert(rs, &zone, &rec) : ret;
}

/* Units whose savepoints are sent late (PostgreSQL: a unit of rows only
 * sends nothing of its own; the rows of a batch go together): a unit
 * failing after its writes loses them alone, a unit that reads sees the
 * rows held before it, each version is indexed at its first event as
 * eager units index it, and a row the server refuses among released
 * units' makes the batch run again (ZC_EREPLAY), committing nothing. */
static void test_lazy_units(records_store_t *rs, bool pg)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "lazy.test.", 10, &z), ZC_EOK);
	uint64_t before = fx_last_seq(rs);
	fx_add_t units[4] = {
		{ .zone_id = z.id, .names = { "a.lazy.test.", "a2.lazy.test." } },
		{ .zone_id = z.id, .names = { "b.lazy.test." },
		  .fail = NOT_ACCEPTED },
		{ .zone_id = z.id, .names = { "c.lazy.test." } },
		{ .zone_id = z.id, .names = { "e.lazy.test." } },
	};
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(lazy_unit(rs, fx_add_unit, &units[0]), ZC_EOK);
	CHECK_EQ(lazy_unit(rs, fx_add_unit, &units[1]), NOT_ACCEPTED);
	CHECK_EQ(lazy_unit(rs, fx_add_unit, &units[2]), ZC_EOK);
	CHECK_EQ(lazy_unit(rs, write_read_fail, &z.id), NOT_ACCEPTED);
	CHECK_EQ(lazy_unit(rs, fx_add_unit, &units[3]), ZC_EOK);
	CHECK(!records_write_replay(rs));
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(units[0].version, 11);
	CHECK_EQ(units[2].version, 12);
	CHECK_EQ(units[3].version, 13);
	CHECK_EQ(fx_serial(rs, z.id), 13);
	CHECK_EQ(fx_count(rs, z.id, "b.lazy.test.", 0), 0);
	CHECK_EQ(fx_count(rs, z.id, "d.lazy.test.", 0), 0);
	CHECK_EQ(fx_kept(rs, z.id), 6); /* SOA, NS, a, a2, c, e */
	fx_events_t e;
	CHECK_EQ(fx_events(rs, before, &e), ZC_EOK);
	CHECK_STR(e.text, "rc:a.lazy.test.@11 rc:a2.lazy.test.@11"
	                  " rc:c.lazy.test.@12 rc:e.lazy.test.@13");
	fx_journal_t j;
	CHECK_EQ(fx_journal(rs, "lazy.test.", 10, 13, &j), ZC_EOK);
	CHECK_STR(j.text, "+a.lazy.test.@11 +a2.lazy.test.@11"
	                  " +c.lazy.test.@12 +e.lazy.test.@13");
	CHECK_EQ(fx_journal(rs, "lazy.test.", 11, 13, &j), ZC_EOK);
	CHECK_STR(j.text, "+c.lazy.test.@12 +e.lazy.test.@13");
	CHECK_EQ(fx_journal(rs, "lazy.test.", 12, 13, &j), ZC_EOK);
	CHECK_STR(j.text, "+e.lazy.test.@13");

	/* A clash the server finds when the released rows are sent. */
	clash_t clash = { .zone_id = z.id, .id = fx_id(rs, z.id, "c.lazy.test.") };
	fx_add_t after = { .zone_id = z.id, .names = { "f.lazy.test." } };
	fx_add_t first = { .zone_id = z.id, .names = { "g.lazy.test." } };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(lazy_unit(rs, fx_add_unit, &first), ZC_EOK);
	int ret = lazy_unit(rs, clash_unit, &clash);
	if (pg) {
		CHECK_EQ(ret, ZC_EOK); /* Held: not sent yet. */
		CHECK_EQ(lazy_unit(rs, fx_add_unit, &after), ZC_EOK);
		CHECK_EQ(records_write_commit(rs), ZC_EREPLAY);
	} else {
		CHECK(ret != ZC_EOK); /* SQLite refuses it at once. */
		CHECK_EQ(lazy_unit(rs, fx_add_unit, &after), ZC_EOK);
		records_write_rollback(rs);
	}
	CHECK_EQ(fx_count(rs, z.id, "f.lazy.test.", 0), 0);
	CHECK_EQ(fx_count(rs, z.id, "g.lazy.test.", 0), 0);
	CHECK_EQ(fx_serial(rs, z.id), 13);
}

/* The zone's serial is written once per transaction, not per unit
 * (records/store.h, zrow): units of one zone, a failed unit between
 * them, another zone's unit in between (the row read again must hold
 * what was pending), a lookup by apex inside the transaction, and a
 * failed last unit; the table holds the last kept version after the
 * commit, each unit's events carry its own. */
typedef struct {
	int64_t zone_id;
	const uint8_t *apex;
	uint32_t found;         /* Out: the serial a lookup by apex gave. */
} lookup_t;

static int lookup_unit(records_store_t *rs, void *ctx)
{
	lookup_t *l = ctx;
	records_zone_t zone, found;
	int ret = fx_unit_start(rs, l->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = records_zone_find(rs, l->apex, &found);
	}
	l->found = ret == ZC_EOK ? found.serial : 0;
	return ret == ZC_EOK ? fx_insert_a(rs, &zone, "look.once.test.", 9,
	                                   NULL) : ret;
}

static void test_serial_once(records_store_t *rs)
{
	records_zone_t a, b;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	CHECK_EQ(fx_zone_create(rs, "once.test.", 20, &a), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "other-once.test.", 40, &b), ZC_EOK);
	uint64_t before = fx_last_seq(rs);
	fx_add_t units[6] = {
		{ .zone_id = a.id, .names = { "a1.once.test." } },
		{ .zone_id = a.id, .names = { "no.once.test." }, .fail = ZC_EUSAGE },
		{ .zone_id = a.id, .names = { "a2.once.test." } },
		{ .zone_id = b.id, .names = { "b1.other-once.test." } },
		{ .zone_id = a.id, .names = { "a3.once.test." } },
		{ .zone_id = a.id, .names = { "no2.once.test." }, .fail = ZC_EUSAGE },
	};
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	for (size_t i = 0; i < 5; i++) {
		int ret = fx_run_unit(rs, fx_add_unit, &units[i]);
		CHECK_EQ(ret, units[i].fail);
	}
	lookup_t l = { .zone_id = a.id, .apex = fx_name(apex, "once.test.") };
	CHECK_EQ(fx_run_unit(rs, lookup_unit, &l), ZC_EOK);
	CHECK_EQ(l.found, 24);
	CHECK_EQ(fx_run_unit(rs, fx_add_unit, &units[5]), ZC_EUSAGE);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(units[0].version, 21);
	CHECK_EQ(units[2].version, 22);
	CHECK_EQ(units[3].version, 41);
	CHECK_EQ(units[4].version, 23);
	CHECK_EQ(fx_serial(rs, a.id), 24);
	CHECK_EQ(fx_serial(rs, b.id), 41);
	records_zone_t read;
	CHECK_EQ(records_zone_find(rs, apex, &read), ZC_EOK);
	CHECK_EQ(read.serial, 24);
	fx_events_t e;
	CHECK_EQ(fx_events(rs, before, &e), ZC_EOK);
	CHECK_STR(e.text, "rc:a1.once.test.@21 rc:a2.once.test.@22 "
	          "rc:b1.other-once.test.@41 rc:a3.once.test.@23 "
	          "rc:look.once.test.@24");
	/* The next transaction goes on from there. */
	fx_add_t next = { .zone_id = a.id, .names = { "a4.once.test." } };
	CHECK_EQ(fx_single(rs, &next), ZC_EOK);
	CHECK_EQ(next.version, 25);
}

/* Another connection sees nothing of a batch before its commit. */
static void test_isolation(records_store_t *rs, const char *dir)
{
	records_store_t *other;
	CHECK_EQ(records_open(&other, test_records_target(dir)), ZC_EOK);
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "iso.test.", 1, &z), ZC_EOK);
	uint64_t before = fx_last_seq(other);
	fx_add_t unit = { .zone_id = z.id, .names = { "a.iso.test." } };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, fx_add_unit, &unit), ZC_EOK);
	CHECK_EQ(fx_last_seq(other), before);
	CHECK_EQ(fx_count(other, z.id, "a.iso.test.", 0), 0);
	fx_events_t e;
	CHECK_EQ(fx_events(other, before, &e), ZC_EOK);
	CHECK_EQ(e.count, 0);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(fx_events(other, before, &e), ZC_EOK);
	CHECK_EQ(e.count, 1);
	CHECK(fx_last_seq(other) > before);
	CHECK_EQ(e.last, fx_last_seq(other));
	CHECK_EQ(fx_count(other, z.id, "a.iso.test.", 0), 1);
	records_close(other);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	if (records_open(&rs, test_records_target(dir)) != ZC_EOK) {
		fprintf(stderr, "cannot open a records store in %s\n", dir);
		return 1;
	}
	test_failed_unit_alone(rs);
	test_two_zones(rs);
	test_bound(rs);
	test_inner(rs);
	test_rollback(rs);
	test_serial_once(rs);
	test_isolation(rs, dir);
	test_lazy_units(rs, test_backend_is_pg());
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
