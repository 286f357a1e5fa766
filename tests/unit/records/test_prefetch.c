/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Nodes read ahead for a write transaction's units (records/prefetch.c,
 * records_hint_node()). On PostgreSQL a hinted node is read once, right
 * after the transaction locked its zone's row, and the units' reads of it
 * are served from what was read: shown here by a row another connection
 * writes behind the lock (which no writer of zonecast would do), seen by
 * a read of an unhinted node and not by a read of a hinted one. What was
 * read ahead gives what the server gives (rows, order, every field, the
 * type filter); a node this transaction writes, and every node once the
 * lock's unit rolled back, is read from the server again; past the bound
 * of rows nothing is read ahead. On SQLite a hint changes nothing.
 */
#include "records/db.h"
#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

typedef struct {
	char text[4096];
	size_t n;
} rows_t;

/* Every field of each row, in the order given. */
static int rows_cb(const records_record_t *rec, void *ctx)
{
	rows_t *r = ctx;
	size_t at = strlen(r->text);
	snprintf(r->text + at, sizeof(r->text) - at,
	         "[%lld %lld %u %u %u %02x%02x %s %s %u %lld]",
	         (long long)rec->id, (long long)rec->zone_id, rec->owner[0],
	         rec->type, rec->ttl, rec->rdata_len ? rec->rdata[0] : 0,
	         rec->rdata_len > 1 ? rec->rdata[rec->rdata_len - 1] : 0,
	         rec->comment ? rec->comment : "-", rec->tags ? rec->tags : "-",
	         rec->api_form, (long long)rec->created_on);
	r->n++;
	return 0;
}

static rows_t read_node(records_store_t *rs, int64_t zone_id,
                        const char *owner, uint16_t type)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	rows_t r = { .n = 0 };
	CHECK_EQ(records_record_foreach(rs, zone_id, fx_name(name, owner), type,
	                                rows_cb, &r), ZC_EOK);
	return r;
}

static int insert(records_store_t *rs, const records_zone_t *z,
                  const char *owner, uint16_t type, const char *text,
                  const char *comment, const char *tags)
{
	uint8_t name[KNOT_DNAME_MAXLEN], rdata[256];
	size_t len = strlen(text);
	rdata[0] = (uint8_t)len;
	memcpy(rdata + 1, text, len);
	records_record_t rec = { .owner = fx_name(name, owner), .type = type,
	                         .ttl = 300, .rdata = rdata,
	                         .rdata_len = (uint16_t)(len + 1),
	                         .comment = comment, .tags = tags, .api_form = 2 };
	return records_record_insert(rs, z, &rec);
}

/* Copies the record with that id under a new id and rdata, committed by
 * another connection without the zone's lock. */
static void behind(rdb_t *other, int64_t id, int64_t new_id)
{
	char sql[512];
	snprintf(sql, sizeof(sql), "INSERT INTO records(id, zone_id, okey, owner,"
	         " type, ttl, rdata, created_on, modified_on) SELECT %lld,"
	         " zone_id, okey, owner, type, ttl, '\\x0a000063', 0, 0 FROM"
	         " records WHERE id = %lld", (long long)new_id, (long long)id);
	CHECK_EQ(rdb_exec(other, sql), ZC_EOK);
}

static void hint(records_store_t *rs, const records_zone_t *z,
                 const char *owner)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	records_hint_node(rs, z->id, z->apex, fx_name(name, owner));
}

/* The zone: a.pf.test. with an A, two TXT (a comment, tags) and an A
 * again; c.pf.test. with an A. */
static void make_zone(records_store_t *rs, records_zone_t *z)
{
	CHECK_EQ(fx_zone_create(rs, "pf.test.", 1, z), ZC_EOK);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(fx_unit_start(rs, z->id, &zone), ZC_EOK);
	CHECK_EQ(fx_insert_a(rs, &zone, "a.pf.test.", 1, NULL), ZC_EOK);
	CHECK_EQ(insert(rs, &zone, "a.pf.test.", KNOT_RRTYPE_TXT, "one",
	                "a comment", "[\"t\"]"), ZC_EOK);
	CHECK_EQ(insert(rs, &zone, "A.Pf.Test.", KNOT_RRTYPE_TXT, "two", NULL,
	                NULL), ZC_EOK);
	CHECK_EQ(fx_insert_a(rs, &zone, "a.pf.test.", 2, NULL), ZC_EOK);
	CHECK_EQ(fx_insert_a(rs, &zone, "c.pf.test.", 1, NULL), ZC_EOK);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
}

/* A unit's start with the zone locked; the hinted nodes read ahead. */
static void start(records_store_t *rs, const records_zone_t *z,
                  records_zone_t *zone)
{
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z->id, zone), ZC_EOK);
}

static void test_read_ahead(records_store_t *rs, rdb_t *other, bool pg)
{
	records_zone_t z, zone;
	make_zone(rs, &z);
	/* What the server gives, outside any write transaction. */
	rows_t a_all = read_node(rs, z.id, "a.pf.test.", 0);
	rows_t a_txt = read_node(rs, z.id, "a.pf.test.", KNOT_RRTYPE_TXT);
	CHECK_EQ(a_all.n, 4);
	CHECK_EQ(a_txt.n, 2);
	int64_t a_id = fx_id(rs, z.id, "a.pf.test.");
	int64_t c_id = fx_id(rs, z.id, "c.pf.test.");

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	hint(rs, &z, "A.PF.test.");
	hint(rs, &z, "b.pf.test."); /* No record: read ahead as empty. */
	hint(rs, &z, "outside.example."); /* Ignored. */
	start(rs, &z, &zone);
	if (pg) {
		behind(other, a_id, 900001);
		behind(other, c_id, 900002);
	}
	/* Read ahead: as the server gave it, the row behind unseen. */
	rows_t got = read_node(rs, z.id, "a.pf.test.", 0);
	CHECK_STR(got.text, a_all.text);
	got = read_node(rs, z.id, "a.PF.test.", KNOT_RRTYPE_TXT);
	CHECK_STR(got.text, a_txt.text);
	CHECK_EQ(fx_count(rs, z.id, "b.pf.test.", 0), 0);
	/* Not hinted: from the server, the row behind seen. */
	CHECK_EQ(fx_count(rs, z.id, "c.pf.test.", 0), pg ? 2 : 1);
	/* This transaction's own write: from the server again. */
	CHECK_EQ(fx_insert_a(rs, &zone, "b.pf.test.", 7, NULL), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "b.pf.test.", 0), 1);
	CHECK_EQ(insert(rs, &zone, "a.pf.test.", KNOT_RRTYPE_TXT, "three", NULL,
	                NULL), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), pg ? 6 : 5);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);

	/* The next unit, the lock kept: what was read ahead still serves
	 * its unwritten nodes; written ones come from the server. */
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), pg ? 6 : 5);
	CHECK_EQ(fx_count(rs, z.id, "b.pf.test.", 0), 1);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
}

/* The unit that took the zone's lock rolls back (the lock goes with it):
 * nothing read ahead serves until the zone is locked and read again. */
static void test_lock_rolled_back(records_store_t *rs, rdb_t *other, bool pg)
{
	records_zone_t z, zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "pf.test."), &z), ZC_EOK);
	int64_t before = fx_count(rs, z.id, "a.pf.test.", 0);
	int64_t a_id = fx_id(rs, z.id, "a.pf.test.");

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	hint(rs, &z, "a.pf.test.");
	start(rs, &z, &zone);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before);
	records_savepoint_rollback(rs);
	if (pg) {
		behind(other, a_id, 900003);
	}
	/* No unit holds the lock: from the server. */
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + pg);
	/* Locked again: read again, the row behind it seen. */
	start(rs, &z, &zone);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + pg);
	if (pg) {
		behind(other, a_id, 900004);
		CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + 1);
	}
	records_savepoint_rollback(rs);
	records_write_rollback(rs);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + 2 * pg);
}

/* A zone of another node's batch in between: each locking read of the
 * zone's row reads its nodes again; a node of a zone read is not served
 * for the other zone. */
static void test_two_zones(records_store_t *rs, rdb_t *other, bool pg)
{
	records_zone_t z, y, zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "pf.test."), &z), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "pf2.test.", 1, &y), ZC_EOK);
	int64_t before = fx_count(rs, z.id, "a.pf.test.", 0);
	int64_t a_id = fx_id(rs, z.id, "a.pf.test.");

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	hint(rs, &z, "a.pf.test.");
	hint(rs, &y, "a.pf2.test.");
	start(rs, &z, &zone);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	start(rs, &y, &zone);
	CHECK_EQ(fx_count(rs, y.id, "a.pf2.test.", 0), 0);
	CHECK_EQ(fx_insert_a(rs, &zone, "a.pf2.test.", 3, NULL), ZC_EOK);
	CHECK_EQ(fx_count(rs, y.id, "a.pf2.test.", 0), 1);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	if (pg) {
		behind(other, a_id, 900005);
	}
	/* z again: its row read (and its nodes) again. */
	start(rs, &z, &zone);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + pg);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
}

/* A unit that writes a node, locks another zone's row and then this
 * zone's again (which reads the nodes again, its own write in them), and
 * rolls back: what was read inside it goes with it. */
static void test_read_inside_rolled_back(records_store_t *rs)
{
	records_zone_t z, y, zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "pf.test."), &z), ZC_EOK);
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "pf2.test."), &y), ZC_EOK);
	int64_t before = fx_count(rs, z.id, "a.pf.test.", 0);

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	hint(rs, &z, "a.pf.test.");
	start(rs, &z, &zone);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	start(rs, &z, &zone);
	CHECK_EQ(fx_insert_a(rs, &zone, "a.pf.test.", 9, NULL), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, y.id, &zone), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + 1);
	records_savepoint_rollback(rs);
	/* The lock of the unit before is kept: z's row too. */
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before);
	/* The inner savepoint of an UPDATE, the same. */
	CHECK_EQ(records_inner_savepoint(rs), ZC_EOK);
	CHECK_EQ(fx_insert_a(rs, &zone, "a.pf.test.", 10, NULL), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, y.id, &zone), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + 1);
	records_inner_rollback(rs);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before);
}

/* Past the bound of rows read ahead: nothing is, every read is the
 * server's. */
static void test_bound(records_store_t *rs, rdb_t *other, bool pg)
{
	records_zone_t z, zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "pf.test."), &z), ZC_EOK);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	CHECK_EQ(records_zone_get(rs, z.id, &zone), ZC_EOK);
	for (int i = 0; i < 4100; i++) {
		char text[16];
		snprintf(text, sizeof(text), "t%d", i);
		CHECK_EQ(insert(rs, &zone, "big.pf.test.", KNOT_RRTYPE_TXT, text,
		                NULL, NULL), ZC_EOK);
	}
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	int64_t before = fx_count(rs, z.id, "a.pf.test.", 0);
	int64_t a_id = fx_id(rs, z.id, "a.pf.test.");

	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	hint(rs, &z, "a.pf.test.");
	hint(rs, &z, "big.pf.test.");
	start(rs, &z, &zone);
	if (pg) {
		behind(other, a_id, 900006);
	}
	CHECK_EQ(fx_count(rs, z.id, "a.pf.test.", 0), before + pg);
	CHECK_EQ(fx_count(rs, z.id, "big.pf.test.", 0), 4100);
	CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
}

int main(void)
{
	const char *dir = test_tmpdir();
	const char *target = test_records_target(dir);
	records_store_t *rs;
	if (records_open(&rs, target) != ZC_EOK) {
		fprintf(stderr, "cannot open a records store in %s\n", dir);
		return 1;
	}
	bool pg = test_backend_is_pg();
	rdb_t *other = NULL;
	if (pg && rdb_open(&other, target, NULL) != ZC_EOK) {
		fprintf(stderr, "cannot open a second connection\n");
		return 1;
	}
	test_read_ahead(rs, other, pg);
	test_lock_rolled_back(rs, other, pg);
	test_two_zones(rs, other, pg);
	test_read_inside_rolled_back(rs);
	test_bound(rs, other, pg);
	rdb_close(other);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
