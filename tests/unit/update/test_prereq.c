/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RFC 2136 §3.2 prerequisites, table-driven, over a real records store in
 * a temporary directory: the five forms (§3.2.1 name in use and RRset
 * exists, §3.2.2 RRset does not exist, §3.2.3 value-dependent RRset
 * exists, §3.2.4 name not in use), their class, type, TTL and rdlength
 * rules, and the order of §3.2.5's pseudocode, which BIND 9 and Knot DNS
 * follow: one prerequisite after the other, the first failure deciding,
 * the value-dependent ones compared last.
 *
 * Each case is a real UPDATE message (zone section, prerequisites, no
 * update), parsed by update_parse() as a DNS worker parses it, then
 * judged by update_prereq_check() as the committer does; the worker's
 * prescan must agree with it whenever it answers alone (final).
 */
#include <libknot/codes.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/lookup.h>
#include <libknot/packet/pkt.h>

#include "tests/unit/zone_fixture.h"
#include "update/internal.h"

static const char zone_text[] =
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 1 7200 900 1209600 300\n"
	"@ IN NS ns\n"
	"ns IN A 192.0.2.53\n"
	"a IN A 192.0.2.1\n"
	"a IN A 192.0.2.2\n"
	"t IN TXT \"text\"\n"
	"c IN CNAME a\n"
	"deep.ent IN A 192.0.2.3\n";    /* ent.example. is empty */

enum { ANY = KNOT_CLASS_ANY, NONE = KNOT_CLASS_NONE, IN = KNOT_CLASS_IN,
       CH = KNOT_CLASS_CH };
enum { T_A = KNOT_RRTYPE_A, T_NS = KNOT_RRTYPE_NS,
       T_CNAME = KNOT_RRTYPE_CNAME, T_SOA = KNOT_RRTYPE_SOA,
       T_TXT = KNOT_RRTYPE_TXT, T_ANY = KNOT_RRTYPE_ANY,
       T_AXFR = KNOT_RRTYPE_AXFR, T_RRSIG = KNOT_RRTYPE_RRSIG };

/* One prerequisite RR: owner relative to example. ("@": the apex; with a
 * final dot: absolute), type, class, TTL, rdata (rdlen bytes). */
typedef struct {
	const char *owner;
	uint16_t type, rclass;
	uint32_t ttl;
	const char *rdata;
	uint16_t rdlen;
} prereq_t;

#define ADDR(last) "\xc0\x00\x02" last, 4
#define MAX_PREREQS 4

typedef struct {
	const char *what;
	prereq_t rr[MAX_PREREQS];
	uint8_t want;
} case_t;

static const case_t cases[] = {
	{ "empty prerequisite section", { { NULL } }, KNOT_RCODE_NOERROR },

	/* §3.2.1: name is in use (class ANY, type ANY): NXDOMAIN if not. */
	{ "in use: a name with RRs", { { "a", T_ANY, ANY } }, KNOT_RCODE_NOERROR },
	{ "in use: the apex", { { "@", T_ANY, ANY } }, KNOT_RCODE_NOERROR },
	{ "in use: any case", { { "A", T_ANY, ANY } }, KNOT_RCODE_NOERROR },
	{ "in use: no such name", { { "nothing", T_ANY, ANY } },
	  KNOT_RCODE_NXDOMAIN },
	{ "in use: an empty non-terminal has no RRs (§2.4.4)",
	  { { "ent", T_ANY, ANY } }, KNOT_RCODE_NXDOMAIN },
	{ "in use: below a name", { { "x.a", T_ANY, ANY } },
	  KNOT_RCODE_NXDOMAIN },

	/* §3.2.1: RRset exists, value-independent (class ANY): NXRRSET. */
	{ "RRset exists: a A", { { "a", T_A, ANY } }, KNOT_RCODE_NOERROR },
	{ "RRset exists: apex SOA", { { "@", T_SOA, ANY } }, KNOT_RCODE_NOERROR },
	{ "RRset exists: c CNAME", { { "c", T_CNAME, ANY } },
	  KNOT_RCODE_NOERROR },
	{ "RRset exists: a TXT", { { "a", T_TXT, ANY } }, KNOT_RCODE_NXRRSET },
	{ "RRset exists: no such name", { { "nothing", T_A, ANY } },
	  KNOT_RCODE_NXRRSET },
	{ "RRset exists: a RRSIG (unsigned zone)", { { "a", T_RRSIG, ANY } },
	  KNOT_RCODE_NXRRSET },

	/* §3.2.2: RRset does not exist (class NONE): YXRRSET if it does. */
	{ "RRset absent: a TXT", { { "a", T_TXT, NONE } }, KNOT_RCODE_NOERROR },
	{ "RRset absent: no such name", { { "nothing", T_A, NONE } },
	  KNOT_RCODE_NOERROR },
	{ "RRset absent: a A", { { "a", T_A, NONE } }, KNOT_RCODE_YXRRSET },
	{ "RRset absent: apex SOA", { { "@", T_SOA, NONE } },
	  KNOT_RCODE_YXRRSET },
	{ "RRset absent: apex NS", { { "@", T_NS, NONE } }, KNOT_RCODE_YXRRSET },

	/* §3.2.4: name is not in use (class NONE, type ANY): YXDOMAIN. */
	{ "not in use: no such name", { { "nothing", T_ANY, NONE } },
	  KNOT_RCODE_NOERROR },
	{ "not in use: an empty non-terminal", { { "ent", T_ANY, NONE } },
	  KNOT_RCODE_NOERROR },
	{ "not in use: a", { { "a", T_ANY, NONE } }, KNOT_RCODE_YXDOMAIN },
	{ "not in use: the apex", { { "@", T_ANY, NONE } },
	  KNOT_RCODE_YXDOMAIN },

	/* §3.2.3: RRset exists, value-dependent (class IN): the whole RRset
	 * must match, in any order, duplicates aside; NXRRSET if not. */
	{ "value: a A, both", { { "a", T_A, IN, 0, ADDR("\x01") },
	                        { "a", T_A, IN, 0, ADDR("\x02") } },
	  KNOT_RCODE_NOERROR },
	{ "value: a A, other order", { { "a", T_A, IN, 0, ADDR("\x02") },
	                               { "a", T_A, IN, 0, ADDR("\x01") } },
	  KNOT_RCODE_NOERROR },
	{ "value: a A, a duplicate", { { "a", T_A, IN, 0, ADDR("\x02") },
	                               { "a", T_A, IN, 0, ADDR("\x01") },
	                               { "a", T_A, IN, 0, ADDR("\x02") } },
	  KNOT_RCODE_NOERROR },
	{ "value: a A, a subset", { { "a", T_A, IN, 0, ADDR("\x01") } },
	  KNOT_RCODE_NXRRSET },
	{ "value: a A, a superset", { { "a", T_A, IN, 0, ADDR("\x01") },
	                              { "a", T_A, IN, 0, ADDR("\x02") },
	                              { "a", T_A, IN, 0, ADDR("\x03") } },
	  KNOT_RCODE_NXRRSET },
	{ "value: a A, others", { { "a", T_A, IN, 0, ADDR("\x07") },
	                          { "a", T_A, IN, 0, ADDR("\x08") } },
	  KNOT_RCODE_NXRRSET },
	{ "value: t TXT", { { "t", T_TXT, IN, 0, "\x04text", 5 } },
	  KNOT_RCODE_NOERROR },
	{ "value: t TXT, other text", { { "t", T_TXT, IN, 0, "\x05other", 6 } },
	  KNOT_RCODE_NXRRSET },
	{ "value: names in rdata compare in any case (RFC 4034 §6.2)",
	  { { "c", T_CNAME, IN, 0, "\x01" "A\x07" "EXAMPLE", 11 } },
	  KNOT_RCODE_NOERROR },
	{ "value: no such RRset", { { "nothing", T_A, IN, 0, ADDR("\x01") } },
	  KNOT_RCODE_NXRRSET },
	{ "value: two RRsets, both match", { { "t", T_TXT, IN, 0, "\x04text", 5 },
	                                     { "a", T_A, IN, 0, ADDR("\x01") },
	                                     { "a", T_A, IN, 0, ADDR("\x02") } },
	  KNOT_RCODE_NOERROR },
	{ "value: two RRsets, one differs", { { "t", T_TXT, IN, 0, "\x04text", 5 },
	                                      { "a", T_A, IN, 0, ADDR("\x01") } },
	  KNOT_RCODE_NXRRSET },

	/* §3.2.1-3.2.4: TTL 0, the zone, class and rdlength rules. */
	{ "TTL: class ANY", { { "a", T_A, ANY, 300 } }, KNOT_RCODE_FORMERR },
	{ "TTL: class NONE", { { "a", T_A, NONE, 1 } }, KNOT_RCODE_FORMERR },
	{ "TTL: class IN", { { "a", T_A, IN, 300, ADDR("\x01") },
	                     { "a", T_A, IN, 300, ADDR("\x02") } },
	  KNOT_RCODE_FORMERR },
	{ "TTL: before the zone", { { "elsewhere.", T_ANY, ANY, 300 } },
	  KNOT_RCODE_FORMERR },
	{ "zone: another zone", { { "elsewhere.", T_ANY, ANY } },
	  KNOT_RCODE_NOTZONE },
	{ "zone: the parent", { { ".", T_ANY, ANY } }, KNOT_RCODE_NOTZONE },
	{ "zone: a suffix that is no parent", { { "xexample.", T_A, NONE } },
	  KNOT_RCODE_NOTZONE },
	{ "rdlength: class ANY", { { "a", T_A, ANY, 0, ADDR("\x01") } },
	  KNOT_RCODE_FORMERR },
	{ "rdlength: class NONE", { { "a", T_A, NONE, 0, ADDR("\x01") } },
	  KNOT_RCODE_FORMERR },
	{ "class: CH", { { "a", T_A, CH } }, KNOT_RCODE_FORMERR },
	{ "class: IN with type ANY (libknot's parser refuses it)",
	  { { "a", T_ANY, IN } }, KNOT_RCODE_FORMERR },
	{ "class: IN with type AXFR", { { "a", T_AXFR, IN } },
	  KNOT_RCODE_FORMERR },
	/* zonecast's choice (RFC 2136 is silent; BIND and Knot answer
	 * NXRRSET or NOERROR): a meta-type but ANY is FORMERR. */
	{ "type: AXFR, class ANY", { { "a", T_AXFR, ANY } }, KNOT_RCODE_FORMERR },
	{ "type: AXFR, class NONE", { { "a", T_AXFR, NONE } },
	  KNOT_RCODE_FORMERR },

	/* §3.2.5: in order, the first failure deciding ... */
	{ "order: NXDOMAIN, then YXRRSET", { { "nothing", T_ANY, ANY },
	                                     { "a", T_A, NONE } },
	  KNOT_RCODE_NXDOMAIN },
	{ "order: YXRRSET, then NXDOMAIN", { { "a", T_A, NONE },
	                                     { "nothing", T_ANY, ANY } },
	  KNOT_RCODE_YXRRSET },
	{ "order: YXDOMAIN, then a TTL", { { "a", T_ANY, NONE },
	                                   { "a", T_A, ANY, 300 } },
	  KNOT_RCODE_YXDOMAIN },
	{ "order: YXDOMAIN, then another zone", { { "a", T_ANY, NONE },
	                                          { "elsewhere.", T_A, ANY } },
	  KNOT_RCODE_YXDOMAIN },
	{ "order: NXRRSET, then class CH", { { "a", T_TXT, ANY },
	                                     { "a", T_A, CH } },
	  KNOT_RCODE_NXRRSET },
	{ "order: holds, then a TTL", { { "a", T_A, ANY },
	                                { "a", T_ANY, NONE, 300 } },
	  KNOT_RCODE_FORMERR },
	{ "order: a TTL, then YXDOMAIN", { { "a", T_A, ANY, 300 },
	                                   { "a", T_ANY, NONE } },
	  KNOT_RCODE_FORMERR },
	{ "order: another zone, then a TTL", { { "elsewhere.", T_A, ANY },
	                                       { "a", T_A, ANY, 300 } },
	  KNOT_RCODE_NOTZONE },
	/* ... and the value-dependent ones last. */
	{ "order: value NXRRSET, then YXDOMAIN",
	  { { "t", T_TXT, IN, 0, "\x05other", 6 }, { "a", T_ANY, NONE } },
	  KNOT_RCODE_YXDOMAIN },
	{ "order: value NXRRSET, then YXRRSET",
	  { { "a", T_A, IN, 0, ADDR("\x01") }, { "t", T_TXT, NONE } },
	  KNOT_RCODE_YXRRSET },
	{ "order: value NXRRSET, then a TTL",
	  { { "t", T_TXT, IN, 0, "\x05other", 6 }, { "a", T_A, ANY, 300 } },
	  KNOT_RCODE_FORMERR },
	{ "order: value NXRRSET, then holds",
	  { { "t", T_TXT, IN, 0, "\x05other", 6 }, { "a", T_A, ANY } },
	  KNOT_RCODE_NXRRSET },
};

/* Appends an owner (text, relative to example. unless it ends in a dot). */
static size_t put_owner(uint8_t *p, const char *owner)
{
	char text[300];
	if (strcmp(owner, "@") == 0) {
		snprintf(text, sizeof(text), "example.");
	} else if (owner[strlen(owner) - 1] == '.') {
		snprintf(text, sizeof(text), "%s", owner);
	} else {
		snprintf(text, sizeof(text), "%s.example.", owner);
	}
	knot_dname_t *name = knot_dname_from_str(p, text, KNOT_DNAME_MAXLEN);
	return name == NULL ? 0 : knot_dname_size(name);
}

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The UPDATE message of a case: zone example. (SOA, IN), its
 * prerequisites, nothing to update. Returns its length. */
static size_t make_update(const case_t *c, uint8_t *wire)
{
	memset(wire, 0, 12);
	put_u16(wire, 4242);
	wire[2] = KNOT_OPCODE_UPDATE << 3;
	put_u16(wire + 4, 1);
	size_t len = 12;
	len += put_owner(wire + len, "@");
	put_u16(wire + len, T_SOA);
	put_u16(wire + len + 2, IN);
	len += 4;
	uint16_t count = 0;
	for (; count < MAX_PREREQS && c->rr[count].owner != NULL; count++) {
		const prereq_t *rr = &c->rr[count];
		len += put_owner(wire + len, rr->owner);
		put_u16(wire + len, rr->type);
		put_u16(wire + len + 2, rr->rclass);
		put_u16(wire + len + 4, (uint16_t)(rr->ttl >> 16));
		put_u16(wire + len + 6, (uint16_t)rr->ttl);
		put_u16(wire + len + 8, rr->rdlen);
		if (rr->rdlen > 0) {
			memcpy(wire + len + 10, rr->rdata, rr->rdlen);
		}
		len += 10 + rr->rdlen;
	}
	put_u16(wire + 6, count);
	return len;
}

static const char *rcode_name(uint8_t rcode)
{
	const knot_lookup_t *item = knot_lookup_by_id(knot_rcode_names, rcode);
	return item != NULL ? item->name : "?";
}

static void run_case(records_store_t *rs, const records_zone_t *zone,
                     const case_t *c)
{
	uint8_t wire[2048];
	size_t len = make_update(c, wire);
	knot_pkt_t *pkt = knot_pkt_new(wire, len, NULL);
	CHECK(pkt != NULL);
	if (pkt == NULL || update_parse(pkt) != KNOT_EOK) {
		/* update_handle() answers what does not parse FORMERR. */
		if (c->want != KNOT_RCODE_FORMERR) {
			fprintf(stderr, "%s: the message does not parse\n", c->what);
		}
		CHECK_EQ(c->want, KNOT_RCODE_FORMERR);
		knot_pkt_free(pkt);
		return;
	}
	const knot_pktsection_t *sec = knot_pkt_section(pkt, KNOT_ANSWER);
	int ret;
	uint8_t got = update_prereq_check(rs, zone, sec, &ret);
	CHECK_EQ(ret, ZC_EOK);
	if (got != c->want) {
		fprintf(stderr, "%s: %s, expected %s\n", c->what, rcode_name(got),
		        rcode_name(c->want));
	}
	CHECK_EQ(got, c->want);
	/* The worker's prescan answers alone only for what it can know. */
	bool final = false;
	uint8_t pre = update_prereq_prescan(sec, zone->apex, &final);
	if (pre != KNOT_RCODE_NOERROR && final && pre != c->want) {
		fprintf(stderr, "%s: prescan %s, expected %s\n", c->what,
		        rcode_name(pre), rcode_name(c->want));
		CHECK(false);
	}
	CHECK(pre == KNOT_RCODE_NOERROR || pre == KNOT_RCODE_FORMERR ||
	      pre == KNOT_RCODE_NOTZONE);
	knot_pkt_free(pkt);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "example.", zone_text), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, (const uint8_t *)"\x07" "example\x00",
	                           &zone), ZC_EOK);
	uint64_t seq_before = 0, seq_after = 0;
	CHECK_EQ(records_last_seq(rs, &seq_before), ZC_EOK);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_case(rs, &zone, &cases[i]);
	}
	/* Prerequisites only read. */
	CHECK_EQ(records_last_seq(rs, &seq_after), ZC_EOK);
	CHECK_EQ(seq_after, seq_before);
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
