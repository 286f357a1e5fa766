/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Answer logic, table-driven: queries built with libknot, answered by
 * answer_message() from a real edge store, responses parsed back.
 */
#include <libknot/descriptor.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrtype/opt.h>

#include "dns/name.h"
#include "server/answer.h"
#include "tests/unit/zone_fixture.h"

static const char zone[] =
	"$TTL 300\n"
	"@ 3600 IN SOA ns hostmaster 1 7200 900 1209600 60\n"
	"@ IN NS ns\n"
	"@ IN MX 10 mail\n"
	"ns IN A 192.0.2.1\n"
	"mail IN A 192.0.2.25\n"
	"mail IN AAAA 2001:db8::25\n"
	"www IN CNAME web\n"
	"web IN A 192.0.2.80\n"
	"out IN CNAME www.elsewhere.\n"
	"loop1 IN CNAME loop2\n"
	"loop2 IN CNAME loop1\n"
	"*.wild IN A 192.0.2.9\n"
	"exists.wild IN TXT \"x\"\n"
	"a.b.ent IN A 192.0.2.4\n"
	"sub IN NS ns.sub\n"
	"sub IN DS 1 13 2 0000000000000000000000000000000000000000000000000000000000000000\n"
	"ns.sub IN A 192.0.2.53\n"
	"dn IN DNAME target.example.\n"
	"target IN A 192.0.2.7\n"
	"x.target IN A 192.0.2.8\n"
	"svc IN HTTPS 1 t1\n"
	"alias IN HTTPS 0 t1\n"
	"t1 IN A 192.0.2.10\n"
	"t1 IN HTTPS 1 ext.outside. alpn=h2\n"
	"self IN HTTPS 1 self\n";

typedef struct {
	const char *qname;
	uint16_t qtype;
	uint8_t rcode;
	bool aa;
	uint16_t an, ns, ar;  /* Section counts, OPT not counted. */
	uint16_t first_type;  /* Type of the first answer RR, 0: none. */
} case_t;

static const case_t cases[] = {
	/* RFC 9460 §4.1: an HTTPS target's addresses and its own HTTPS
	 * (outside tester 34: knotd gave both, zonecast the A alone); not
	 * the answer's own RRset again for a target naming its owner. */
	{ "svc.example.", KNOT_RRTYPE_HTTPS, 0, true, 1, 0, 2, KNOT_RRTYPE_HTTPS },
	{ "alias.example.", KNOT_RRTYPE_HTTPS, 0, true, 1, 0, 2, KNOT_RRTYPE_HTTPS },
	{ "self.example.", KNOT_RRTYPE_HTTPS, 0, true, 1, 0, 0, KNOT_RRTYPE_HTTPS },
	/* Exact match, case kept, MX additional (A+AAAA). */
	{ "example.", KNOT_RRTYPE_MX, 0, true, 1, 0, 2, KNOT_RRTYPE_MX },
	{ "EXAMPLE.", KNOT_RRTYPE_SOA, 0, true, 1, 0, 0, KNOT_RRTYPE_SOA },
	{ "ns.example.", KNOT_RRTYPE_A, 0, true, 1, 0, 0, KNOT_RRTYPE_A },
	/* NODATA: SOA in authority (RFC 2308). */
	{ "ns.example.", KNOT_RRTYPE_AAAA, 0, true, 0, 1, 0, 0 },
	/* NXDOMAIN. */
	{ "nope.example.", KNOT_RRTYPE_A, KNOT_RCODE_NXDOMAIN, true, 0, 1, 0, 0 },
	/* CNAME chain inside the zone (RFC 1034 §4.3.2). */
	{ "www.example.", KNOT_RRTYPE_A, 0, true, 2, 0, 0, KNOT_RRTYPE_CNAME },
	{ "www.example.", KNOT_RRTYPE_CNAME, 0, true, 1, 0, 0, KNOT_RRTYPE_CNAME },
	{ "out.example.", KNOT_RRTYPE_A, 0, true, 1, 0, 0, KNOT_RRTYPE_CNAME },
	/* A loop stops at the first repeated name: each CNAME once. */
	{ "loop1.example.", KNOT_RRTYPE_A, 0, true, 2, 0, 0, KNOT_RRTYPE_CNAME },
	/* RRSIG at a CNAME name is NODATA, not followed. */
	{ "www.example.", KNOT_RRTYPE_RRSIG, 0, true, 0, 1, 0, 0 },
	/* Wildcards (RFC 4592). */
	{ "x.wild.example.", KNOT_RRTYPE_A, 0, true, 1, 0, 0, KNOT_RRTYPE_A },
	{ "y.x.wild.example.", KNOT_RRTYPE_A, 0, true, 1, 0, 0, KNOT_RRTYPE_A },
	{ "x.wild.example.", KNOT_RRTYPE_MX, 0, true, 0, 1, 0, 0 },
	{ "exists.wild.example.", KNOT_RRTYPE_A, 0, true, 0, 1, 0, 0 },
	{ "wild.example.", KNOT_RRTYPE_A, 0, true, 0, 1, 0, 0 },
	/* Empty non-terminals are NODATA. */
	{ "b.ent.example.", KNOT_RRTYPE_A, 0, true, 0, 1, 0, 0 },
	{ "ent.example.", KNOT_RRTYPE_A, 0, true, 0, 1, 0, 0 },
	{ "c.b.ent.example.", KNOT_RRTYPE_A, KNOT_RCODE_NXDOMAIN, true, 0, 1, 0, 0 },
	/* Referrals: NS in authority, glue, AA clear; DS from the parent. */
	{ "sub.example.", KNOT_RRTYPE_A, 0, false, 0, 1, 1, 0 },
	{ "deep.sub.example.", KNOT_RRTYPE_A, 0, false, 0, 1, 1, 0 },
	{ "ns.sub.example.", KNOT_RRTYPE_A, 0, false, 0, 1, 1, 0 },
	{ "sub.example.", KNOT_RRTYPE_DS, 0, true, 1, 0, 0, KNOT_RRTYPE_DS },
	/* DNAME (RFC 6672): DNAME + synthesised CNAME (+ in-zone target). */
	{ "x.dn.example.", KNOT_RRTYPE_A, 0, true, 3, 0, 0, KNOT_RRTYPE_DNAME },
	{ "y.dn.example.", KNOT_RRTYPE_A, KNOT_RCODE_NXDOMAIN, true, 2, 1, 0,
	  KNOT_RRTYPE_DNAME },
	{ "dn.example.", KNOT_RRTYPE_DNAME, 0, true, 1, 0, 0, KNOT_RRTYPE_DNAME },
	/* ANY (RFC 8482): one RRset, the lowest type (NS at the apex). */
	{ "example.", KNOT_RRTYPE_ANY, 0, true, 1, 0, 1, KNOT_RRTYPE_NS },
	{ "web.example.", KNOT_RRTYPE_ANY, 0, true, 1, 0, 0, KNOT_RRTYPE_A },
	/* Outside every zone. */
	{ "example.org.", KNOT_RRTYPE_A, KNOT_RCODE_REFUSED, false, 0, 0, 0, 0 },
	/* No transfers yet: NOTAUTH over TCP, as Knot without an ACL. */
	{ "example.", KNOT_RRTYPE_AXFR, KNOT_RCODE_NOTAUTH, false, 0, 0, 0, 0 },
};

static size_t make_query(uint8_t *buf, const char *qname, uint16_t qtype,
                         bool edns)
{
	memset(buf, 0, 512);
	knot_pkt_t *q = knot_pkt_new(buf, 512, NULL);
	uint8_t name[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(name, qname, sizeof(name));
	knot_wire_set_id(q->wire, 0x1234);
	knot_pkt_put_question(q, name, KNOT_CLASS_IN, qtype);
	if (edns) {
		knot_rrset_t opt;
		knot_edns_init(&opt, 1232, 0, 0, NULL);
		knot_pkt_begin(q, KNOT_ADDITIONAL);
		knot_pkt_put(q, 0, &opt, 0);
		knot_rrset_clear(&opt, NULL);
	}
	size_t len = q->size;
	knot_pkt_free(q);
	return len;
}

static void run_case(answer_ctx_t *ctx, const case_t *c)
{
	uint8_t query[512], resp[65535];
	size_t qlen = make_query(query, c->qname, c->qtype, true);
	size_t len = answer_message(ctx, query, qlen, resp, sizeof(resp), true);
	CHECK(len > 0);
	knot_pkt_t *r = knot_pkt_new(resp, len, NULL);
	CHECK_EQ(knot_pkt_parse(r, 0), KNOT_EOK);
	const knot_pktsection_t *an = knot_pkt_section(r, KNOT_ANSWER);
	int failed = test_failed;
	CHECK_EQ(knot_wire_get_rcode(resp), c->rcode);
	CHECK_EQ(knot_wire_get_aa(resp) != 0, c->aa);
	CHECK_EQ(an->count, c->an);
	CHECK_EQ(knot_pkt_section(r, KNOT_AUTHORITY)->count, c->ns);
	CHECK_EQ(knot_pkt_section(r, KNOT_ADDITIONAL)->count, c->ar + 1);
	CHECK(r->opt_rr != NULL);
	if (c->first_type != 0 && an->count > 0) {
		const knot_rrset_t *rr = knot_pkt_rr(an, 0);
		CHECK_EQ(rr->type, c->first_type);
		/* The answer owner is written as asked (0x20 kept). */
		CHECK(memcmp(resp + 12, query + 12, knot_dname_size(query + 12)) == 0);
	}
	if (test_failed != failed) {
		fprintf(stderr, "  in case %s type %u\n", c->qname, c->qtype);
	}
	knot_pkt_free(r);
}

/* Malformed and unusual messages. */
static void run_malformed(answer_ctx_t *ctx)
{
	uint8_t query[600], resp[65535];
	size_t qlen = make_query(query, "ns.example.", KNOT_RRTYPE_A, false);
	/* Too short or a response: dropped. */
	CHECK_EQ(answer_message(ctx, query, 11, resp, sizeof(resp), false), 0);
	query[2] |= 0x80;
	CHECK_EQ(answer_message(ctx, query, qlen, resp, sizeof(resp), false), 0);
	query[2] &= ~0x80;
	/* Trailing garbage: FORMERR. */
	query[qlen] = 0xff;
	size_t len = answer_message(ctx, query, qlen + 1, resp, sizeof(resp), false);
	CHECK(len >= 12 && knot_wire_get_rcode(resp) == KNOT_RCODE_FORMERR);
	/* QDCOUNT 2: FORMERR. */
	knot_wire_set_qdcount(query, 2);
	len = answer_message(ctx, query, qlen, resp, sizeof(resp), false);
	CHECK(len >= 12 && knot_wire_get_rcode(resp) == KNOT_RCODE_FORMERR);
	knot_wire_set_qdcount(query, 1);
	/* Unknown opcode: NOTIMP. */
	knot_wire_set_opcode(query, 3);
	len = answer_message(ctx, query, qlen, resp, sizeof(resp), false);
	CHECK(len >= 12 && knot_wire_get_rcode(resp) == KNOT_RCODE_NOTIMPL);
	knot_wire_set_opcode(query, 0);
	/* No EDNS: no OPT in the answer; UDP limit 512 gives TC on big data. */
	len = answer_message(ctx, query, qlen, resp, sizeof(resp), false);
	CHECK_EQ(knot_wire_get_arcount(resp), 0);
	CHECK_EQ(knot_wire_get_ancount(resp), 1);
	/* EDNS version 1: BADVERS (RFC 6891 §6.1.3). */
	qlen = make_query(query, "ns.example.", KNOT_RRTYPE_A, true);
	query[qlen - 11 + 6] = 1; /* OPT TTL byte 2: version */
	len = answer_message(ctx, query, qlen, resp, sizeof(resp), false);
	knot_pkt_t *r = knot_pkt_new(resp, len, NULL);
	CHECK_EQ(knot_pkt_parse(r, 0), KNOT_EOK);
	CHECK_EQ(knot_pkt_ext_rcode(r), KNOT_RCODE_BADVERS);
	CHECK_EQ(knot_wire_get_ancount(resp), 0);
	knot_pkt_free(r);
}

/* A node whose value cannot be read, reached through a CNAME: SERVFAIL
 * with nothing of the failed answer (its CNAME, unsigned data of a
 * signed zone: outside tester 27 saw a SERVFAIL carrying its answer) and
 * AA clear, as Knot answers a failure; the next query is answered whole. */
static void run_failed_answer(answer_ctx_t *ctx, edge_store_t *es)
{
	uint8_t name[KNOT_DNAME_MAXLEN], lf[DNS_LF_MAXLEN];
	knot_dname_from_str(name, "web.example.", sizeof(name));
	size_t len = dns_name_to_lf(name, lf);
	edge_txn_t txn = { 0 };
	edge_zone_t z;
	size_t apex_len = 0;
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_zone_find(&txn, lf, len, &z, &apex_len), ZC_EOK);
	/* The node header (version, flags, the newest seq), then bytes no
	 * RRset decodes from. */
	uint8_t junk[24];
	memset(junk, 0xff, sizeof(junk));
	junk[0] = EDGE_NODE_VERSION;
	junk[1] = 0;
	int ret = edge_txn_put_node(&txn, z.zone_id, lf + apex_len,
	                            len - apex_len, junk, sizeof(junk));
	CHECK_EQ(ret, ZC_EOK);
	CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
	uint8_t query[512], resp[65535];
	size_t qlen = make_query(query, "www.example.", KNOT_RRTYPE_A, true);
	size_t n = answer_message(ctx, query, qlen, resp, sizeof(resp), true);
	CHECK(n >= 12);
	CHECK_EQ(knot_wire_get_rcode(resp), KNOT_RCODE_SERVFAIL);
	CHECK_EQ(knot_wire_get_ancount(resp), 0);
	CHECK_EQ(knot_wire_get_nscount(resp), 0);
	CHECK_EQ(knot_wire_get_aa(resp), 0);
	CHECK_EQ(knot_wire_get_arcount(resp), 1); /* OPT */
	qlen = make_query(query, "mail.example.", KNOT_RRTYPE_A, true);
	n = answer_message(ctx, query, qlen, resp, sizeof(resp), true);
	CHECK(n >= 12);
	CHECK_EQ(knot_wire_get_rcode(resp), KNOT_RCODE_NOERROR);
	CHECK_EQ(knot_wire_get_ancount(resp), 1);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "example.", zone), ZC_EOK);
	answer_ctx_t ctx;
	answer_ctx_init(&ctx, es, NULL, 64);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_case(&ctx, &cases[i]);
	}
	run_malformed(&ctx);
	run_failed_answer(&ctx, es);
	answer_ctx_deinit(&ctx);
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
