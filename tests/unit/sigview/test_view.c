/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The signed view on real stores: a signed zone's view has an RRSIG for
 * every authoritative RRset (none for glue, only DS and NSEC at a cut),
 * an NSEC chain that visits every authoritative name in order and closes
 * at the apex; an added or deleted name changes the chain around it and
 * the journal entry holds just those changes; the journal diff codec
 * round-trips.
 */
#include <libknot/descriptor.h>
#include <libknot/rrtype/rrsig.h>

#include "signer/zone.h"
#include "sigview/internal.h"
#include "tests/unit/zone_fixture.h"

static const char zone_text[] =
	"$TTL 300\n@ IN SOA ns hostmaster 1 7200 900 1209600 300\n@ IN NS ns\n"
	"ns IN A 192.0.2.1\nwww IN A 192.0.2.2\nwww IN AAAA 2001:db8::2\n"
	"sub IN NS ns.sub\nns.sub IN A 192.0.2.3\n*.wild IN TXT \"w\"\n"
	"a.b IN TXT \"below an empty non-terminal\"\n";

#define MAX_RRS 256

typedef struct {
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint16_t type;
	uint16_t covered;          /* RRSIG */
	uint8_t next[KNOT_DNAME_MAXLEN]; /* NSEC */
} seen_t;

typedef struct {
	seen_t rr[MAX_RRS];
	size_t count;
} zone_t;

static int collect(const knot_rrset_t *rr, void *ctx)
{
	zone_t *z = ctx;
	knot_rdata_t *rd = rr->rrs.rdata;
	for (uint16_t i = 0; i < rr->rrs.count && z->count < MAX_RRS; i++) {
		seen_t *s = &z->rr[z->count++];
		memset(s, 0, sizeof(*s));
		knot_dname_copy_lower(s->owner, rr->owner);
		s->type = rr->type;
		if (rr->type == KNOT_RRTYPE_RRSIG) {
			s->covered = (uint16_t)(rd->data[0] << 8 | rd->data[1]);
		} else if (rr->type == KNOT_RRTYPE_NSEC) {
			knot_dname_copy_lower(s->next, rd->data);
		}
		rd = knot_rdataset_next(rd);
	}
	return 0;
}

static void read_zone(const char *dir, int64_t zone_id, zone_t *z,
                      uint32_t *serial)
{
	sigview_reader_t *r;
	zc_arena_t arena;
	zc_arena_init(&arena, 4096);
	memset(z, 0, sizeof(*z));
	CHECK(sigview_reader_open(dir, &r) == ZC_EOK);
	sigview_zone_t vz;
	CHECK(sigview_read_begin(r, zone_id, &vz) == ZC_EOK);
	*serial = vz.serial;
	CHECK(sigview_read_zone(r, zone_id, &arena, collect, z) == ZC_EOK);
	sigview_read_end(r);
	sigview_reader_close(r);
	zc_arena_deinit(&arena);
}

static bool has(const zone_t *z, const char *owner, uint16_t type,
                uint16_t covered)
{
	uint8_t o[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(o, owner, sizeof(o));
	for (size_t i = 0; i < z->count; i++) {
		if (knot_dname_is_equal(z->rr[i].owner, o) &&
		    z->rr[i].type == type && z->rr[i].covered == covered) {
			return true;
		}
	}
	return false;
}

/* Every NSEC's next is the next NSEC's owner; the last one's the apex. */
static void check_chain(const zone_t *z, const uint8_t *apex, size_t names)
{
	const seen_t *nsec[MAX_RRS];
	size_t n = 0;
	for (size_t i = 0; i < z->count; i++) {
		if (z->rr[i].type == KNOT_RRTYPE_NSEC) {
			nsec[n++] = &z->rr[i];
		}
	}
	CHECK_EQ(n, names);
	for (size_t i = 0; i + 1 < n; i++) {
		CHECK(knot_dname_is_equal(nsec[i]->next, nsec[i + 1]->owner));
	}
	CHECK(n > 0 && knot_dname_is_equal(nsec[n - 1]->next, apex));
	CHECK(n > 0 && knot_dname_is_equal(nsec[0]->owner, apex));
}

static void check_signed(const zone_t *z)
{
	/* apex: NS DNSKEY CDS CDNSKEY SOA NSEC; ns A; www A AAAA; sub DS? no:
	 * NSEC only; *.wild TXT; a.b TXT. */
	CHECK(has(z, "example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_SOA));
	CHECK(has(z, "example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_NS));
	CHECK(has(z, "example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_DNSKEY));
	CHECK(has(z, "www.example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_AAAA));
	CHECK(has(z, "*.wild.example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_TXT));
	CHECK(has(z, "a.b.example.test.", KNOT_RRTYPE_NSEC, 0));
	/* A cut: its NS unsigned, its NSEC signed; glue neither. */
	CHECK(!has(z, "sub.example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_NS));
	CHECK(has(z, "sub.example.test.", KNOT_RRTYPE_RRSIG, KNOT_RRTYPE_NSEC));
	CHECK(has(z, "ns.sub.example.test.", KNOT_RRTYPE_A, 0));
	CHECK(!has(z, "ns.sub.example.test.", KNOT_RRTYPE_NSEC, 0));
	CHECK(!has(z, "ns.sub.example.test.", KNOT_RRTYPE_RRSIG,
	           KNOT_RRTYPE_A));
	/* No empty non-terminal in the chain. */
	CHECK(!has(z, "b.example.test.", KNOT_RRTYPE_NSEC, 0));
}

typedef struct {
	size_t added, deleted;
	size_t nsec, rrsig, data;
} journal_t;

static int count_change(const records_journal_rr_t *rr, void *ctx)
{
	journal_t *j = ctx;
	if (rr->added) {
		j->added++;
	} else {
		j->deleted++;
	}
	if (rr->type == KNOT_RRTYPE_NSEC) {
		j->nsec++;
	} else if (rr->type == KNOT_RRTYPE_RRSIG) {
		j->rrsig++;
	} else {
		j->data++;
	}
	return ZC_EOK;
}

static void journal(const char *dir, int64_t zone_id, uint32_t from,
                    uint32_t to, journal_t *j)
{
	sigview_reader_t *r;
	memset(j, 0, sizeof(*j));
	CHECK(sigview_reader_open(dir, &r) == ZC_EOK);
	sigview_zone_t vz;
	CHECK(sigview_read_begin(r, zone_id, &vz) == ZC_EOK);
	CHECK(sigview_read_journal(r, zone_id, from, to, count_change, j) ==
	      ZC_EOK);
	sigview_read_end(r);
	sigview_reader_close(r);
}

typedef struct {
	int64_t ids[4];
	size_t n;
} ids_t;

static int collect_id(const records_record_t *rec, void *ctx)
{
	ids_t *c = ctx;
	if (c->n < 4) {
		c->ids[c->n++] = rec->id;
	}
	return 0;
}

/* Adds an A record at name, or deletes every record there, as one
 * version. */
static int change(records_store_t *rs, records_zone_t *zone, bool add,
                  const char *name)
{
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint8_t rdata[4] = { 192, 0, 2, 9 };
	knot_dname_from_str(owner, name, sizeof(owner));
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, zone);
	}
	if (ret == ZC_EOK && add) {
		records_record_t rec = { .owner = owner, .type = KNOT_RRTYPE_A,
		                         .ttl = 300, .rdata = rdata,
		                         .rdata_len = 4 };
		ret = records_record_insert(rs, zone, &rec);
	}
	ids_t ids = { .n = 0 };
	if (ret == ZC_EOK && !add) {
		ret = records_record_foreach(rs, zone->id, owner, 0, collect_id,
		                             &ids);
		for (size_t i = 0; i < ids.n && ret == ZC_EOK; i++) {
			ret = records_record_delete(rs, zone, ids.ids[i]);
		}
	}
	if (ret != ZC_EOK) {
		records_write_rollback(rs);
		return ret;
	}
	return records_write_commit(rs);
}

static void test_diff_codec(void)
{
	view_diff_t d;
	view_diff_init(&d, 10);
	uint8_t owner[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(owner, "x.example.test.", sizeof(owner));
	uint8_t rd[4] = { 1, 2, 3, 4 };
	view_diff_add(&d, true, owner, KNOT_RRTYPE_A, 300, rd, 4);
	view_diff_add(&d, false, owner, KNOT_RRTYPE_TXT, 60, rd, 0);
	journal_t j = { 0 };
	CHECK(view_diff_foreach(d.buf, d.len, count_change, &j) == ZC_EOK);
	CHECK_EQ(j.added, 1);
	CHECK_EQ(j.deleted, 1);
	CHECK(view_diff_foreach(d.buf, d.len - 1, count_change, &j) ==
	      ZC_EFORMAT);
	for (int i = 0; i < 20; i++) {
		view_diff_add(&d, true, owner, KNOT_RRTYPE_A, 300, rd, 4);
	}
	CHECK(d.overflow);
	view_diff_deinit(&d);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK(records_open(&rs, dir) == ZC_EOK);
	CHECK(edge_open(&es, dir, 1 << 26) == ZC_EOK);
	CHECK(fixture_import(rs, es, "example.test.", zone_text) == ZC_EOK);
	uint8_t apex[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(apex, "example.test.", sizeof(apex));
	records_zone_t zone;
	CHECK(records_zone_find(rs, apex, &zone) == ZC_EOK);
	CHECK(records_write_begin(rs) == ZC_EOK);
	CHECK(signer_zone_enable(rs, &zone, 13, false) == ZC_EOK);
	CHECK(records_write_commit(rs) == ZC_EOK);
	CHECK(builder_catch_up(rs, es, NULL) == ZC_EOK);
	CHECK(sigview_sync(dir, es) == ZC_EOK);

	zone_t z;
	uint32_t s1, s2, s3;
	read_zone(dir, zone.id, &z, &s1);
	/* Chain: apex, a.b, ns, sub, *.wild, www. */
	check_chain(&z, apex, 6);
	check_signed(&z);

	/* A new name: its RRset and RRSIG, its NSEC and RRSIG, the
	 * predecessor's NSEC out and in with its RRSIG, the SOA's RRSIG. */
	CHECK(records_zone_find(rs, apex, &zone) == ZC_EOK);
	CHECK(change(rs, &zone, true, "c.b.example.test.") == ZC_EOK);
	CHECK(builder_catch_up(rs, es, NULL) == ZC_EOK);
	CHECK(sigview_sync(dir, es) == ZC_EOK);
	read_zone(dir, zone.id, &z, &s2);
	CHECK(s2 != s1);
	check_chain(&z, apex, 7);
	journal_t j;
	journal(dir, zone.id, s1, s2, &j);
	CHECK_EQ(j.data, 1);           /* c.b A */
	CHECK_EQ(j.nsec, 3);           /* c.b's; a.b's out and in */
	CHECK_EQ(j.rrsig, 6);          /* c.b A, c.b NSEC, a.b NSEC x2, SOA x2 */
	CHECK_EQ(j.added, 7);         /* the A, 2 NSEC, 4 RRSIG */
	CHECK_EQ(j.deleted, 3);       /* a.b NSEC, its RRSIG, the SOA RRSIG */

	/* A name gone: the chain closes over it. */
	CHECK(change(rs, &zone, false, "www.example.test.") == ZC_EOK);
	CHECK(builder_catch_up(rs, es, NULL) == ZC_EOK);
	CHECK(sigview_sync(dir, es) == ZC_EOK);
	read_zone(dir, zone.id, &z, &s3);
	check_chain(&z, apex, 6);
	CHECK(!has(&z, "www.example.test.", KNOT_RRTYPE_NSEC, 0));
	journal(dir, zone.id, s1, s3, &j); /* Two versions, condensed by IXFR. */
	CHECK(j.added > 0 && j.deleted > 0);

	test_diff_codec();
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
