/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What an UPDATE's answer waits for (docs/security.md "Acknowledged =
 * servable"): update_live_wait()'s table, and the zone version
 * update_apply() leaves in the message for the wait, over a real records
 * store with group commit (several units in savepoints of one
 * transaction, as the writer runs them).
 *
 * The bug this pins: an UPDATE that changed nothing (its record was
 * already there, added by a concurrent UPDATE not built yet: a duplicate,
 * a retry) was answered NOERROR at once, so the next query got NXDOMAIN.
 * Its NOERROR now waits for the version it read, which includes the
 * concurrent write's.
 */
#include <libknot/codes.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/pkt.h>

#include "tests/unit/zone_fixture.h"
#include "update/internal.h"

static const char zone_text[] =
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 1 7200 900 1209600 300\n"
	"@ IN NS ns\n"
	"ns IN A 192.0.2.53\n";

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static size_t put_name(uint8_t *p, const char *text)
{
	knot_dname_t *name = knot_dname_from_str(p, text, KNOT_DNAME_MAXLEN);
	return name == NULL ? 0 : knot_dname_size(name);
}

/* Appends owner TXT "x" of class rclass and ttl. */
static size_t put_txt(uint8_t *p, const char *owner, uint16_t rclass,
                      uint16_t ttl)
{
	size_t len = put_name(p, owner);
	put_u16(p + len, KNOT_RRTYPE_TXT);
	put_u16(p + len + 2, rclass);
	put_u16(p + len + 4, 0);
	put_u16(p + len + 6, ttl);
	put_u16(p + len + 8, 2);
	p[len + 10] = 1;
	p[len + 11] = 'x';
	return len + 12;
}

/* An UPDATE of example. adding `owner` 300 TXT "x" (class IN), and with
 * delete_too deleting it again in the same message (class NONE). */
static size_t make_add(const char *owner, bool delete_too, uint8_t *wire)
{
	memset(wire, 0, 12);
	put_u16(wire, 4343);
	wire[2] = KNOT_OPCODE_UPDATE << 3;
	put_u16(wire + 4, 1);  /* zone */
	put_u16(wire + 8, delete_too ? 2 : 1);  /* update */
	size_t len = 12 + put_name(wire + 12, "example.");
	put_u16(wire + len, KNOT_RRTYPE_SOA);
	put_u16(wire + len + 2, KNOT_CLASS_IN);
	len += 4;
	len += put_txt(wire + len, owner, KNOT_CLASS_IN, 300);
	if (delete_too) {
		len += put_txt(wire + len, owner, KNOT_CLASS_NONE, 0);
	}
	return len;
}

typedef struct {
	uint8_t wire[512];
	update_msg_t m;
} msg_t;

/* Applies an add of owner as a unit of the open transaction; returns the
 * unit's result, with msg->m holding the outcome. */
static int apply_msg(records_store_t *rs, const records_zone_t *zone,
                     const char *owner, bool delete_too, msg_t *msg)
{
	memset(msg, 0, sizeof(*msg));
	size_t len = make_add(owner, delete_too, msg->wire);
	msg->m.pkt = knot_pkt_new(msg->wire, len, NULL);
	CHECK(msg->m.pkt != NULL);
	CHECK_EQ(update_parse(msg->m.pkt), KNOT_EOK);
	msg->m.zone = *zone;
	CHECK_EQ(records_savepoint(rs), ZC_EOK);
	int ret = update_apply(rs, &msg->m);
	if (ret == ZC_EOK) {
		CHECK_EQ(records_savepoint_release(rs), ZC_EOK);
	} else {
		records_savepoint_rollback(rs);
	}
	return ret;
}

static int apply_add(records_store_t *rs, const records_zone_t *zone,
                     const char *owner, msg_t *msg)
{
	return apply_msg(rs, zone, owner, false, msg);
}

static void msg_clear(msg_t *msg)
{
	knot_pkt_free(msg->m.pkt);
	update_net_free(&msg->m.net);
	msg->m.pkt = NULL;
}

static void test_wait_table(void)
{
	/* Every NOERROR waits until served, over UDP as over TCP. */
	CHECK_EQ(update_live_wait(ZC_EOK, KNOT_RCODE_NOERROR, false),
	         UPDATE_AWAIT_SERVED);
	CHECK_EQ(update_live_wait(ZC_EOK, KNOT_RCODE_NOERROR, true),
	         UPDATE_AWAIT_SERVED);
	/* A failed prerequisite, a refusal, a failed commit: no promise
	 * about what is served; TCP keeps its answers in order. */
	CHECK_EQ(update_live_wait(ZC_EUSAGE, KNOT_RCODE_NXRRSET, false),
	         UPDATE_ANSWER_NOW);
	CHECK_EQ(update_live_wait(ZC_EUSAGE, KNOT_RCODE_NXRRSET, true),
	         UPDATE_AWAIT_ORDER);
	CHECK_EQ(update_live_wait(ZC_EUSAGE, KNOT_RCODE_REFUSED, false),
	         UPDATE_ANSWER_NOW);
	CHECK_EQ(update_live_wait(KNOT_ENOMEM, KNOT_RCODE_SERVFAIL, false),
	         UPDATE_ANSWER_NOW);
	CHECK_EQ(update_live_wait(KNOT_ENOMEM, KNOT_RCODE_SERVFAIL, true),
	         UPDATE_AWAIT_ORDER);
}

/* Two identical UPDATEs in one group commit, then a third alone: the
 * first changes the zone, the others find the record and change nothing,
 * and each one's zone.serial (the version its answer waits for) covers
 * the first's. */
static void test_duplicates_wait_for_the_first(records_store_t *rs,
                                               edge_store_t *es,
                                               const records_zone_t *zone)
{
	msg_t a, b, c, d;
	uint32_t s0 = zone->serial;
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(apply_add(rs, zone, "dup.example.", &a), ZC_EOK);
	CHECK(a.m.changed);
	CHECK_EQ(a.m.zone.serial, s0 + 1);
	CHECK_EQ(update_live_wait(ZC_EOK, a.m.rcode, false), UPDATE_AWAIT_SERVED);
	CHECK_EQ(apply_add(rs, zone, "dup.example.", &b), ZC_EOK);
	CHECK(!b.m.changed);
	CHECK_EQ(b.m.rcode, KNOT_RCODE_NOERROR);
	CHECK_EQ(b.m.zone.serial, s0 + 1);
	CHECK_EQ(update_live_wait(ZC_EOK, b.m.rcode, false), UPDATE_AWAIT_SERVED);
	/* Another zone version in the same transaction. */
	CHECK_EQ(apply_add(rs, zone, "other.example.", &c), ZC_EOK);
	CHECK_EQ(c.m.zone.serial, s0 + 2);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);

	/* Not built yet: the edge serves s0, below what b waits for. */
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(apply_add(rs, zone, "dup.example.", &d), ZC_EOK);
	CHECK(!d.m.changed);
	CHECK_EQ(d.m.zone.serial, s0 + 2);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);

	/* Added and deleted again in one message: no change, and the
	 * version it waits for is the one it read, not the serial its
	 * rolled-back add had taken (never served: it waited for ever). */
	msg_t e;
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(apply_msg(rs, zone, "gone.example.", true, &e), ZC_EOK);
	CHECK(!e.m.changed);
	CHECK_EQ(e.m.rcode, KNOT_RCODE_NOERROR);
	CHECK_EQ(e.m.zone.serial, s0 + 2);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	msg_clear(&e);

	/* Built: the serial they waited for is served. */
	uint64_t applied = 0;
	CHECK_EQ(builder_catch_up(rs, es, &applied), ZC_EOK);
	edge_txn_t txn = { 0 };
	edge_zone_t meta;
	CHECK_EQ(edge_txn_begin_read(es, &txn), ZC_EOK);
	CHECK_EQ(edge_zone_get(&txn, zone->apex, &meta), ZC_EOK);
	CHECK_EQ(meta.serial, s0 + 2);
	edge_txn_abort(&txn);
	msg_clear(&a);
	msg_clear(&b);
	msg_clear(&c);
	msg_clear(&d);
}

int main(void)
{
	test_wait_table();
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "example.", zone_text), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, (const uint8_t *)"\x07" "example\x00",
	                           &zone), ZC_EOK);
	test_duplicates_wait_for_the_first(rs, es, &zone);
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
