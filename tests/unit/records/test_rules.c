/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The zone-content rules (records/rules.h), as tables of cases: records
 * written as master-file lines (read by libzscanner, as an import reads
 * them) in the zone example.test., the change asked for, and the verdict
 * the rules must give. One table per function: adding a record to a node
 * (with the stored records it retimes), removing one, rewriting one in
 * place, a whole node as an import checks it, names in or out of the zone,
 * and rdata compared in canonical form (RFC 4034 §6.2), which must agree
 * with libknot's canonical form (the form the signer signs).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/libknot.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/rules.h"
#include "tests/unit/test.h"
#include "zonefile/zonefile.h"

#define ZONE "example.test."
#define MAX_NODE 6

/* A record read from a line. */
typedef struct {
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint16_t type;
	uint32_t ttl;
	uint16_t len;
	uint8_t rdata[2048];
	int records;
} parsed_t;

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	(void)file, (void)line;
	parsed_t *p = ctx;
	if (p->records++ > 0 || rdata_len > sizeof(p->rdata)) {
		return 1;
	}
	knot_dname_to_wire(p->owner, owner, sizeof(p->owner));
	p->type = type;
	p->ttl = ttl;
	p->len = rdata_len;
	memcpy(p->rdata, rdata, rdata_len);
	return 0;
}

static void on_error(const char *file, uint64_t line, const char *msg,
                     void *ctx)
{
	(void)file, (void)line;
	((parsed_t *)ctx)->records = -1;
	fprintf(stderr, "parse error: %s\n", msg);
}

/* Reads "OWNER TTL TYPE RDATA" (names relative to ZONE); exits on a
 * line that does not read, a mistake in the table. */
static void parse(const char *owner, const char *rest, parsed_t *out)
{
	static uint8_t origin[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(origin, ZONE, sizeof(origin));
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s %s\n", owner, rest);
	memset(out, 0, sizeof(*out));
	zonefile_handler_t h = { .record = on_record, .error = on_error,
	                         .ctx = out };
	if (zonefile_parse_text(line, (size_t)n, origin, 3600, &h) != ZC_EOK ||
	    out->records != 1) {
		fprintf(stderr, "the table has a line that does not read: %s",
		        line);
		exit(2);
	}
}

static records_rules_rr_t rr_of(const parsed_t *p, uint64_t tag)
{
	return (records_rules_rr_t){ .type = p->type, .ttl = p->ttl,
	                             .rdata = p->rdata, .rdata_len = p->len,
	                             .tag = tag };
}

/* A node of a case: the owner and its stored records. */
typedef struct {
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint8_t apex[KNOT_DNAME_MAXLEN];
	parsed_t parsed[MAX_NODE];
	records_rules_rr_t rr[MAX_NODE];
	records_rules_node_t node;
} node_t;

static void build_node(const char *owner, const char *const *lines,
                       node_t *n)
{
	size_t count = 0;
	knot_dname_from_str(n->apex, ZONE, sizeof(n->apex));
	parsed_t p;
	parse(owner, "0 TXT x", &p);
	memcpy(n->owner, p.owner, sizeof(n->owner));
	while (count < MAX_NODE && lines[count] != NULL) {
		parse(owner, lines[count], &n->parsed[count]);
		n->rr[count] = rr_of(&n->parsed[count], count + 1);
		count++;
	}
	n->node = (records_rules_node_t){ .apex = n->apex, .owner = n->owner,
	                                  .rr = n->rr, .count = count };
}

#define NONE SIZE_MAX
#define SOA_LINE "3600 SOA ns1 hostmaster 1 7200 3600 1209600 300"
#define SIG "A 13 3 300 20300101000000 20200101000000 12345 " ZONE \
	" dGVzdHNpZ25hdHVyZXRlc3RzaWduYXR1cmU="
#define KEY "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF" \
	"+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="

/* --- Adding a record --- */

typedef struct {
	const char *what;
	const char *owner;
	const char *node[MAX_NODE];  /* Stored at owner ("TTL TYPE RDATA"). */
	const char *added;
	records_verdict_t want;
	size_t at;                   /* The stored record in question. */
	unsigned retimed;            /* Bit i: stored record i gets the TTL. */
} add_case_t;

static const add_case_t add_cases[] = {
	{ "A beside A", "www", { "300 A 192.0.2.1" }, "300 A 192.0.2.2",
	  RECORDS_RULE_OK, NONE, 0 },
	{ "empty node", "new", { NULL }, "300 A 192.0.2.1",
	  RECORDS_RULE_OK, NONE, 0 },
	/* CNAME and other data, both orders (RFC 1034 §3.6.2). */
	{ "CNAME beside A", "www", { "300 A 192.0.2.1" }, "300 CNAME t",
	  RECORDS_RULE_CNAME_BESIDE_DATA, 0, 0 },
	{ "CNAME beside TXT and A", "www", { "300 TXT x", "300 A 192.0.2.1" },
	  "300 CNAME t", RECORDS_RULE_CNAME_BESIDE_DATA, 0, 0 },
	{ "A beside CNAME", "www", { "300 CNAME t" }, "300 A 192.0.2.1",
	  RECORDS_RULE_DATA_BESIDE_CNAME, 0, 0 },
	{ "MX beside CNAME", "www", { "300 CNAME t" }, "300 MX 10 mail",
	  RECORDS_RULE_DATA_BESIDE_CNAME, 0, 0 },
	{ "CNAME beside RRSIG (RFC 4035 section 2.5)", "www", { "300 RRSIG " SIG },
	  "300 CNAME t", RECORDS_RULE_OK, NONE, 0 },
	{ "CNAME beside NSEC", "www", { "300 NSEC z." ZONE " CNAME RRSIG NSEC" },
	  "300 CNAME t", RECORDS_RULE_OK, NONE, 0 },
	/* CNAME at the apex (it holds the SOA and NS). */
	{ "CNAME at the apex", "@", { SOA_LINE, "3600 NS ns1" }, "300 CNAME t",
	  RECORDS_RULE_CNAME_AT_APEX, NONE, 0 },
	{ "CNAME at an empty apex", "@", { NULL }, "300 CNAME t",
	  RECORDS_RULE_CNAME_AT_APEX, NONE, 0 },
	/* One CNAME at a name (RFC 2181 §10.1). */
	{ "second CNAME", "www", { "300 CNAME one" }, "300 CNAME two",
	  RECORDS_RULE_SECOND_CNAME, 0, 0 },
	{ "same CNAME", "www", { "300 CNAME one" }, "300 CNAME one",
	  RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "same CNAME in other case", "www", { "300 CNAME one" },
	  "60 CNAME ONE.Example.TEST.", RECORDS_RULE_DUPLICATE, 0, 1 },
	{ "CNAME a\\.b is not a.b", "www", { "300 CNAME a.b" },
	  "300 CNAME a\\.b", RECORDS_RULE_SECOND_CNAME, 0, 0 },
	{ "CNAME A\\.B is a\\.b", "www", { "300 CNAME a\\.b" },
	  "300 CNAME A\\.B", RECORDS_RULE_DUPLICATE, 0, 0 },
	/* DNAME is other data to a CNAME; it may share its name with other
	 * data (RFC 6672 section 2.4). */
	{ "DNAME beside CNAME", "www", { "300 CNAME t" }, "300 DNAME other.test.",
	  RECORDS_RULE_DATA_BESIDE_CNAME, 0, 0 },
	{ "CNAME beside DNAME", "www", { "300 DNAME other.test." }, "300 CNAME t",
	  RECORDS_RULE_CNAME_BESIDE_DATA, 0, 0 },
	{ "DNAME beside A", "www", { "300 A 192.0.2.1" }, "300 DNAME other.test.",
	  RECORDS_RULE_OK, NONE, 0 },
	{ "same DNAME in other case", "www", { "300 DNAME other.test." },
	  "300 DNAME OTHER.test.", RECORDS_RULE_DUPLICATE, 0, 0 },
	/* One DNAME at a name (RFC 6672 section 2.4). */
	{ "second DNAME", "www", { "300 A 192.0.2.1", "300 DNAME one.test." },
	  "300 DNAME two.test.", RECORDS_RULE_SECOND_DNAME, 1, 0 },
	/* Duplicates in canonical form (RFC 2136 §1.1.1, RFC 4034 §6.2). */
	{ "same A", "www", { "300 A 192.0.2.1", "300 A 192.0.2.2" },
	  "300 A 192.0.2.2", RECORDS_RULE_DUPLICATE, 1, 0 },
	{ "MX in other case", "@", { "300 MX 10 mail" },
	  "300 MX 10 MAIL.Example.Test.", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "MX of another preference", "@", { "300 MX 10 mail" },
	  "300 MX 20 MAIL", RECORDS_RULE_OK, NONE, 0 },
	{ "MX to another name", "@", { "300 MX 10 mail" },
	  "300 MX 10 mail2", RECORDS_RULE_OK, NONE, 0 },
	{ "MX a\\000b in other case", "@", { "300 MX 10 a\\000b" },
	  "300 MX 10 A\\000B", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "MX a\\000b is not a\\000c", "@", { "300 MX 10 a\\000b" },
	  "300 MX 10 a\\000c", RECORDS_RULE_OK, NONE, 0 },
	{ "MX a\\.b is not a.b", "@", { "300 MX 10 a.b" },
	  "300 MX 10 a\\.b", RECORDS_RULE_OK, NONE, 0 },
	{ "MX \\065 is a", "@", { "300 MX 10 a" }, "300 MX 10 \\065",
	  RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "NS in other case", "sub", { "300 NS ns.other.test." },
	  "300 NS NS.Other.Test.", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "SRV in other case", "_sip._tcp", { "300 SRV 0 5 5060 sip" },
	  "300 SRV 0 5 5060 SIP", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "SRV to another port", "_sip._tcp", { "300 SRV 0 5 5060 sip" },
	  "300 SRV 0 5 5061 SIP", RECORDS_RULE_OK, NONE, 0 },
	{ "PTR in other case", "1", { "300 PTR host.other.test." },
	  "300 PTR HOST.other.test.", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "TXT in other case is another record", "www", { "300 TXT abc" },
	  "300 TXT ABC", RECORDS_RULE_OK, NONE, 0 },
	{ "CAA in other case is another record", "@", { "300 CAA 0 issue ca" },
	  "300 CAA 0 issue CA", RECORDS_RULE_OK, NONE, 0 },
	/* The SOA: one, at the apex. */
	{ "SOA below the apex", "www", { NULL }, SOA_LINE,
	  RECORDS_RULE_SOA_ELSEWHERE, NONE, 0 },
	{ "second SOA", "@", { SOA_LINE, "3600 NS ns1" },
	  "3600 SOA NS1 HOSTMASTER 2 7200 3600 1209600 300",
	  RECORDS_RULE_SECOND_SOA, 0, 0 },
	/* The online signer's types. */
	{ "RRSIG", "www", { NULL }, "300 RRSIG " SIG,
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "NSEC", "www", { NULL }, "300 NSEC z." ZONE " A",
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "NSEC3", "www", { NULL },
	  "300 NSEC3 1 0 0 - 2VPTU5TIMAMQTTGL4LUU9KG21E0AOR3S A",
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "NSEC3PARAM", "@", { NULL }, "300 NSEC3PARAM 1 0 0 -",
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "DNSKEY", "@", { NULL }, "300 DNSKEY " KEY,
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "CDS", "@", { NULL },
	  "300 CDS 12345 13 2 3F0C9C2AB8E7D4C23F0C9C2AB8E7D4C23F0C9C2AB8E7D4C2"
	  "3F0C9C2AB8E7D4C2", RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	{ "CDNSKEY", "@", { NULL }, "300 CDNSKEY " KEY,
	  RECORDS_RULE_SIGNER_TYPE, NONE, 0 },
	/* One TTL per RRset (RFC 2181 §5.2): the other records take it. */
	{ "new TTL retimes the RRset", "www",
	  { "300 A 192.0.2.1", "300 A 192.0.2.2", "300 TXT x" },
	  "600 A 192.0.2.3", RECORDS_RULE_OK, NONE, 0x3 },
	{ "same TTL retimes nothing", "www", { "300 A 192.0.2.1", "600 TXT x" },
	  "300 A 192.0.2.3", RECORDS_RULE_OK, NONE, 0 },
	{ "duplicate with a new TTL retimes", "www",
	  { "300 A 192.0.2.1", "300 A 192.0.2.2" },
	  "60 A 192.0.2.1", RECORDS_RULE_DUPLICATE, 0, 0x3 },
	{ "mixed TTLs all take the new one", "www",
	  { "300 A 192.0.2.1", "60 A 192.0.2.2" },
	  "60 A 192.0.2.3", RECORDS_RULE_OK, NONE, 0x1 },
	/* Wildcard owners follow the same rules (RFC 4592 §4). */
	{ "wildcard CNAME beside A", "*", { "300 A 192.0.2.1" }, "300 CNAME t",
	  RECORDS_RULE_CNAME_BESIDE_DATA, 0, 0 },
	{ "wildcard TXT beside CNAME", "*", { "300 CNAME t" }, "300 TXT x",
	  RECORDS_RULE_DATA_BESIDE_CNAME, 0, 0 },
	{ "wildcard MX in other case", "*.sub", { "300 MX 10 mail" },
	  "300 MX 10 MAIL", RECORDS_RULE_DUPLICATE, 0, 0 },
	{ "wildcard A", "*", { "300 A 192.0.2.1" }, "300 A 192.0.2.2",
	  RECORDS_RULE_OK, NONE, 0 },
	/* Names outside the zone. */
	{ "another zone", "www.other.test.", { NULL }, "300 A 192.0.2.1",
	  RECORDS_RULE_OUTSIDE_ZONE, NONE, 0 },
	{ "a suffix that is not a label", "www.xexample.test.", { NULL },
	  "300 A 192.0.2.1", RECORDS_RULE_OUTSIDE_ZONE, NONE, 0 },
	{ "the parent", "test.", { NULL }, "300 A 192.0.2.1",
	  RECORDS_RULE_OUTSIDE_ZONE, NONE, 0 },
	{ "apex in other case", "EXAMPLE.Test.", { NULL }, "300 A 192.0.2.1",
	  RECORDS_RULE_OK, NONE, 0 },
};

static void test_add(void)
{
	for (size_t c = 0; c < sizeof(add_cases) / sizeof(add_cases[0]); c++) {
		const add_case_t *t = &add_cases[c];
		node_t n;
		build_node(t->owner, t->node, &n);
		parsed_t p;
		parse(t->owner, t->added, &p);
		records_rules_rr_t added = rr_of(&p, 0);
		size_t at = 42;
		records_verdict_t v = records_rules_check_add(&n.node, &added, &at);
		unsigned retimed = 0;
		for (size_t i = 0; i < n.node.count; i++) {
			retimed |= records_rules_needs_retime(&n.rr[i], &added) << i;
		}
		if (v != t->want || at != t->at || retimed != t->retimed) {
			fprintf(stderr, "add \"%s\": verdict %d (%s) at %zu retimed "
			        "%#x, expected %d at %zu retimed %#x\n", t->what, v,
			        records_rules_reason(v), at, retimed, t->want, t->at,
			        t->retimed);
		}
		CHECK_EQ(v, t->want);
		CHECK(at == t->at);
		CHECK_EQ(retimed, t->retimed);
	}
}

/* --- Removing a record, or rewriting it in place --- */

typedef struct {
	const char *what;
	const char *owner;
	const char *node[MAX_NODE];
	size_t index;                /* The stored record removed. */
	const char *new_owner;       /* NULL: removed; else rewritten as ... */
	uint16_t new_type;           /* ... a record of this type there. */
	records_verdict_t want;
} remove_case_t;

static const remove_case_t remove_cases[] = {
	{ "an A", "www", { "300 A 192.0.2.1" }, 0, NULL, 0, RECORDS_RULE_OK },
	{ "the SOA", "@", { SOA_LINE, "3600 NS ns1" }, 0, NULL, 0,
	  RECORDS_RULE_REMOVES_SOA },
	{ "one apex NS of two", "@", { "3600 NS ns1", "3600 NS ns2" }, 1, NULL, 0,
	  RECORDS_RULE_OK },
	{ "the last apex NS", "@", { SOA_LINE, "3600 NS ns1", "300 A 192.0.2.1" },
	  1, NULL, 0, RECORDS_RULE_LAST_APEX_NS },
	{ "the last NS of a delegation", "sub", { "3600 NS ns.other.test." }, 0,
	  NULL, 0, RECORDS_RULE_OK },
	{ "a DNSKEY", "@", { "3600 DNSKEY " KEY, "3600 NS ns1" }, 0, NULL, 0,
	  RECORDS_RULE_SIGNER_TYPE },
	{ "a CDS", "@", { "3600 CDS 12345 13 2 3F0C9C2AB8E7D4C23F0C9C2AB8E7D4C2"
	                  "3F0C9C2AB8E7D4C23F0C9C2AB8E7D4C2" }, 0, NULL, 0,
	  RECORDS_RULE_SIGNER_TYPE },
	{ "the last apex NS, rewritten as another apex NS", "@", { "3600 NS ns1" },
	  0, ZONE, KNOT_RRTYPE_NS, RECORDS_RULE_OK },
	{ "the last apex NS, retyped", "@", { "3600 NS ns1" }, 0, ZONE,
	  KNOT_RRTYPE_A, RECORDS_RULE_LAST_APEX_NS },
	{ "the last apex NS, renamed", "@", { "3600 NS ns1" }, 0, "sub." ZONE,
	  KNOT_RRTYPE_NS, RECORDS_RULE_LAST_APEX_NS },
	{ "an apex NS of two, renamed", "@", { "3600 NS ns1", "3600 NS ns2" }, 0,
	  "sub." ZONE, KNOT_RRTYPE_NS, RECORDS_RULE_OK },
	{ "the SOA, rewritten", "@", { SOA_LINE }, 0, ZONE, KNOT_RRTYPE_SOA,
	  RECORDS_RULE_REMOVES_SOA },
	{ "an A, renamed", "www", { "300 A 192.0.2.1" }, 0, "other." ZONE,
	  KNOT_RRTYPE_A, RECORDS_RULE_OK },
};

static void test_remove(void)
{
	for (size_t c = 0; c < sizeof(remove_cases) / sizeof(remove_cases[0]);
	     c++) {
		const remove_case_t *t = &remove_cases[c];
		node_t n;
		build_node(t->owner, t->node, &n);
		records_verdict_t v;
		if (t->new_owner == NULL) {
			v = records_rules_check_remove(&n.node, t->index);
		} else {
			uint8_t owner[KNOT_DNAME_MAXLEN];
			knot_dname_from_str(owner, t->new_owner, sizeof(owner));
			v = records_rules_check_replace(&n.node, t->index, owner,
			                                t->new_type);
		}
		if (v != t->want) {
			fprintf(stderr, "remove \"%s\": verdict %d (%s), expected "
			        "%d\n", t->what, v, records_rules_reason(v), t->want);
		}
		CHECK_EQ(v, t->want);
	}
}

/* --- Deleting RRsets (RFC 2136 §3.4.2.3) --- */

typedef struct {
	const char *owner;
	uint16_t type;
	bool protected;
} rrset_case_t;

static const rrset_case_t rrset_cases[] = {
	{ ZONE, KNOT_RRTYPE_SOA, true },
	{ ZONE, KNOT_RRTYPE_NS, true },
	{ "EXAMPLE.TEST.", KNOT_RRTYPE_NS, true },
	{ ZONE, KNOT_RRTYPE_A, false },
	{ ZONE, KNOT_RRTYPE_MX, false },
	{ "sub." ZONE, KNOT_RRTYPE_NS, false },
	{ "*." ZONE, KNOT_RRTYPE_NS, false },
};

static void test_rrset_delete(void)
{
	uint8_t apex[KNOT_DNAME_MAXLEN], owner[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(apex, ZONE, sizeof(apex));
	for (size_t c = 0; c < sizeof(rrset_cases) / sizeof(rrset_cases[0]);
	     c++) {
		const rrset_case_t *t = &rrset_cases[c];
		knot_dname_from_str(owner, t->owner, sizeof(owner));
		bool got = records_rules_is_apex_protected(apex, owner, t->type);
		if (got != t->protected) {
			fprintf(stderr, "rrset delete %s type %u: %d\n", t->owner,
			        t->type, got);
		}
		CHECK(got == t->protected);
	}
}

/* --- A whole node, as an import checks it --- */

typedef struct {
	const char *what;
	const char *owner;
	const char *node[MAX_NODE];  /* In file order: the tags 1, 2, ... */
	records_verdict_t want[4];   /* The problems, in any order. */
	uint64_t tags[4];            /* The tag each problem names (0: node). */
} node_case_t;

static const node_case_t node_cases[] = {
	{ "a good apex", "@", { SOA_LINE, "3600 NS ns1", "3600 NS ns2" },
	  { 0 }, { 0 } },
	{ "an apex without SOA", "@", { "3600 NS ns1" },
	  { RECORDS_RULE_NO_SOA }, { 0 } },
	{ "an apex without NS", "@", { SOA_LINE, "300 A 192.0.2.1" },
	  { RECORDS_RULE_NO_APEX_NS }, { 0 } },
	{ "an empty apex", "@", { NULL },
	  { RECORDS_RULE_NO_SOA, RECORDS_RULE_NO_APEX_NS }, { 0, 0 } },
	{ "two SOAs", "@",
	  { SOA_LINE, "3600 NS ns1", "3600 SOA ns2 hm 5 1 1 1 1" },
	  { RECORDS_RULE_SECOND_SOA }, { 3 } },
	{ "an SOA below the apex", "www", { SOA_LINE },
	  { RECORDS_RULE_SOA_ELSEWHERE }, { 1 } },
	{ "a CNAME at the apex", "@", { SOA_LINE, "3600 NS ns1", "300 CNAME t" },
	  { RECORDS_RULE_CNAME_AT_APEX }, { 3 } },
	{ "CNAME after data", "www", { "300 A 192.0.2.1", "300 CNAME t" },
	  { RECORDS_RULE_CNAME_BESIDE_DATA }, { 2 } },
	{ "data after a CNAME", "www", { "300 CNAME t", "300 TXT x" },
	  { RECORDS_RULE_DATA_BESIDE_CNAME }, { 2 } },
	{ "CNAME beside RRSIG: the signer's, refused", "www",
	  { "300 CNAME t", "300 RRSIG " SIG },
	  { RECORDS_RULE_SIGNER_TYPE }, { 2 } },
	{ "an NSEC3PARAM", "@",
	  { SOA_LINE, "3600 NS ns1", "0 NSEC3PARAM 1 0 0 -" },
	  { RECORDS_RULE_SIGNER_TYPE }, { 3 } },
	{ "two DNAMEs", "www",
	  { "300 DNAME one.other.test.", "300 DNAME two.other.test." },
	  { RECORDS_RULE_SECOND_DNAME }, { 2 } },
	{ "two CNAMEs", "www", { "300 CNAME one", "300 CNAME two" },
	  { RECORDS_RULE_SECOND_CNAME }, { 2 } },
	{ "DNAME after a CNAME", "www", { "300 CNAME t", "300 DNAME other.test." },
	  { RECORDS_RULE_DATA_BESIDE_CNAME }, { 2 } },
	{ "MX twice, in other case", "www", { "300 MX 10 Mail", "300 MX 10 mail" },
	  { RECORDS_RULE_DUPLICATE }, { 2 } },
	{ "MX a\\000b twice, in other case", "www",
	  { "300 MX 10 A\\000b", "300 A 192.0.2.1", "300 MX 10 a\\000B" },
	  { RECORDS_RULE_DUPLICATE }, { 3 } },
	{ "MX a\\.b and a.b", "www", { "300 MX 10 a\\.b", "300 MX 10 a.b" },
	  { 0 }, { 0 } },
	{ "NS twice, in other case", "sub",
	  { "300 NS ns.other.test.", "300 NS NS.OTHER.TEST." },
	  { RECORDS_RULE_DUPLICATE }, { 2 } },
	{ "TXT in two cases", "www", { "300 TXT abc", "300 TXT ABC" },
	  { 0 }, { 0 } },
	{ "two TTLs in one RRset", "www", { "300 A 192.0.2.1", "600 A 192.0.2.2" },
	  { RECORDS_RULE_TTL_DIFFERS }, { 2 } },
	{ "the signer's records re-import", "@",
	  { SOA_LINE, "3600 NS ns1", "3600 DNSKEY " KEY },
	  { 0 }, { 0 } },
	{ "a wildcard with data after a CNAME", "*", { "300 CNAME t", "300 A 192.0.2.1" },
	  { RECORDS_RULE_DATA_BESIDE_CNAME }, { 2 } },
};

typedef struct {
	const records_rules_node_t *node;
	records_verdict_t got[8];
	uint64_t tags[8];
	int count;
} problems_t;

static void on_problem(size_t index, records_verdict_t v, void *ctx)
{
	problems_t *p = ctx;
	if (p->count < 8) {
		p->got[p->count] = v;
		p->tags[p->count++] = index == NONE ? 0 : p->node->rr[index].tag;
	}
}

static int rr_order(const void *a, const void *b)
{
	return records_rules_rr_cmp(a, b);
}

static void test_node(void)
{
	for (size_t c = 0; c < sizeof(node_cases) / sizeof(node_cases[0]); c++) {
		const node_case_t *t = &node_cases[c];
		node_t n;
		build_node(t->owner, t->node, &n);
		qsort(n.rr, n.node.count, sizeof(n.rr[0]), rr_order);
		problems_t p = { .node = &n.node };
		int ret = records_rules_check_node(&n.node, on_problem, &p);
		int want = 0;
		while (want < 4 && t->want[want] != RECORDS_RULE_OK) {
			want++;
		}
		bool same = ret == want && p.count == want;
		for (int i = 0; same && i < want; i++) {
			bool found = false;
			for (int j = 0; j < p.count && !found; j++) {
				found = p.got[j] == t->want[i] && p.tags[j] == t->tags[i];
			}
			same = found;
		}
		if (!same) {
			fprintf(stderr, "node \"%s\": %d problems:", t->what, ret);
			for (int j = 0; j < p.count; j++) {
				fprintf(stderr, " %d (tag %llu)", p.got[j],
				        (unsigned long long)p.tags[j]);
			}
			fprintf(stderr, "; expected %d\n", want);
		}
		CHECK(same);
	}
}

/* --- Names in the zone --- */

typedef struct {
	const char *apex, *owner;
	bool in;
} zone_case_t;

static const zone_case_t zone_cases[] = {
	{ ZONE, ZONE, true },
	{ ZONE, "www." ZONE, true },
	{ ZONE, "a.b.c." ZONE, true },
	{ ZONE, "*." ZONE, true },
	{ ZONE, "WWW.EXAMPLE.TEST.", true },
	{ ZONE, "a\\.." ZONE, true },       /* The label "a.". */
	{ ZONE, "a\\000." ZONE, true },
	{ ZONE, "test.", false },
	{ ZONE, "www.other.test.", false },
	{ ZONE, "wwwexample.test.", false },
	{ ZONE, "example\\.test.", false },
	{ ZONE, ".", false },
	{ ".", "anything.", true },
	{ ".", ".", true },
};

static void test_in_zone(void)
{
	uint8_t apex[KNOT_DNAME_MAXLEN], owner[KNOT_DNAME_MAXLEN];
	for (size_t c = 0; c < sizeof(zone_cases) / sizeof(zone_cases[0]); c++) {
		const zone_case_t *t = &zone_cases[c];
		CHECK(knot_dname_from_str(apex, t->apex, sizeof(apex)) != NULL);
		CHECK(knot_dname_from_str(owner, t->owner, sizeof(owner)) != NULL);
		bool got = records_rules_in_zone(apex, owner);
		if (got != t->in) {
			fprintf(stderr, "in zone %s: %s: %d\n", t->apex, t->owner, got);
		}
		CHECK(got == t->in);
	}
}

/* --- Rdata in canonical form --- */

typedef struct {
	const char *a, *b;   /* "TYPE RDATA" */
	bool equal;
} rdata_case_t;

static const rdata_case_t rdata_cases[] = {
	{ "MX 10 mail", "MX 10 MAIL", true },
	{ "MX 10 mail", "MX 11 mail", false },
	{ "NS ns1", "NS NS1.EXAMPLE.TEST.", true },
	{ "CNAME a\\000b", "CNAME A\\000B", true },
	{ "CNAME a\\000b", "CNAME a\\001b", false },
	{ "CNAME a\\.b", "CNAME a.b", false },
	{ "CNAME a\\.B", "CNAME A\\.b", true },
	{ "CNAME \\196", "CNAME \\228", false },  /* Not ASCII: no case. */
	{ "PTR x.y", "PTR X.Y", true },
	{ "SRV 1 2 3 t", "SRV 1 2 3 T", true },
	{ "SRV 1 2 3 t", "SRV 1 2 4 t", false },
	{ "DNAME d.test.", "DNAME D.TEST.", true },
	{ "SOA ns1 hm 1 2 3 4 5", "SOA NS1 HM 1 2 3 4 5", true },
	{ "SOA ns1 hm 1 2 3 4 5", "SOA ns1 hm 2 2 3 4 5", false },
	{ "NAPTR 1 2 \"S\" \"SIP+D2U\" \"\" sip", "NAPTR 1 2 \"S\" \"SIP+D2U\" \"\" SIP",
	  true },
	{ "NAPTR 1 2 \"s\" \"SIP+D2U\" \"\" sip", "NAPTR 1 2 \"S\" \"SIP+D2U\" \"\" sip",
	  false },
	{ "RP mbox.x txt.x", "RP MBOX.X TXT.X", true },
	{ "TXT abc", "TXT ABC", false },
	{ "NSEC a.test. A", "NSEC A.TEST. A", false },   /* RFC 6840 §5.1. */
	{ "A 192.0.2.1", "A 192.0.2.1", true },
	{ "HINFO a b", "HINFO A B", false },
	{ "SVCB 1 t.test.", "SVCB 1 T.TEST.", false },   /* Not in §6.2. */
};

/* The rdata in libknot's canonical form, into out (the signer's form). */
static void knot_canonical(const parsed_t *p, uint8_t *out)
{
	knot_rrset_t rr;
	knot_rrset_init(&rr, NULL, p->type, KNOT_CLASS_IN, 0);
	CHECK(knot_rrset_add_rdata(&rr, p->rdata, p->len, NULL) == KNOT_EOK);
	CHECK(knot_rrset_rr_to_canonical(&rr) == KNOT_EOK);
	memcpy(out, rr.rrs.rdata->data, p->len);
	knot_rdataset_clear(&rr.rrs, NULL);
}

static void test_rdata(void)
{
	for (size_t c = 0; c < sizeof(rdata_cases) / sizeof(rdata_cases[0]); c++) {
		const rdata_case_t *t = &rdata_cases[c];
		char line[512];
		parsed_t a, b;
		snprintf(line, sizeof(line), "300 %s", t->a);
		parse("x", line, &a);
		snprintf(line, sizeof(line), "300 %s", t->b);
		parse("x", line, &b);
		CHECK_EQ(a.type, b.type);
		bool equal = records_rules_rdata_equal(a.type, a.rdata, a.len,
		                                       b.rdata, b.len);
		int ab = records_rules_rdata_cmp(a.type, a.rdata, a.len, b.rdata,
		                                 b.len);
		int ba = records_rules_rdata_cmp(b.type, b.rdata, b.len, a.rdata,
		                                 a.len);
		/* libknot's canonical form agrees, and orders alike. */
		static uint8_t ca[2048], cb[2048];
		bool knot_equal = false;
		int knot_order = 0;
		if (a.len == b.len) {
			knot_canonical(&a, ca);
			knot_canonical(&b, cb);
			knot_equal = memcmp(ca, cb, a.len) == 0;
			knot_order = memcmp(ca, cb, a.len);
		} else {
			knot_order = a.len < b.len ? -1 : 1;
		}
		if (equal != t->equal || knot_equal != t->equal) {
			fprintf(stderr, "rdata \"%s\" vs \"%s\": equal %d, libknot %d,"
			        " expected %d\n", t->a, t->b, equal, knot_equal,
			        t->equal);
		}
		CHECK(equal == t->equal);
		CHECK(knot_equal == t->equal);
		CHECK((ab == 0) == t->equal);
		CHECK((ab < 0) == (ba > 0));
		if (a.len == b.len) {
			CHECK((ab < 0) == (knot_order < 0));
		}
	}
}


/* A name holds at most RECORDS_RULES_MAX_TYPES types (an edge store node's
 * limit): a new type past it is refused, in a write and in an import; one
 * more record of a type already there is not. */
static void ignore_problem(size_t index, records_verdict_t verdict, void *ctx)
{
	(void)index, (void)verdict, (void)ctx;
}

static void test_types_limit(void)
{
	static const uint8_t apex[] = "\x04" "zone" "\x04" "test";
	static const uint8_t owner[] = "\x03" "big" "\x04" "zone" "\x04" "test";
	static const uint8_t rdata[1] = { 0 };
	static records_rules_rr_t rr[RECORDS_RULES_MAX_TYPES + 1];
	for (size_t i = 0; i <= RECORDS_RULES_MAX_TYPES; i++) {
		rr[i] = (records_rules_rr_t){ .type = (uint16_t)(1000 + i),
		                              .ttl = 300, .rdata = rdata,
		                              .rdata_len = 1, .tag = i };
	}
	records_rules_node_t node = { .apex = apex, .owner = owner, .rr = rr,
	                              .count = RECORDS_RULES_MAX_TYPES };
	CHECK_EQ(records_rules_check_add(&node, &rr[RECORDS_RULES_MAX_TYPES],
	                                 NULL), RECORDS_RULE_TOO_MANY_TYPES);
	records_rules_rr_t again = rr[7];
	static const uint8_t other[1] = { 1 };
	again.rdata = other;
	CHECK_EQ(records_rules_check_add(&node, &again, NULL), RECORDS_RULE_OK);
	CHECK_EQ(records_rules_check_node(&node, ignore_problem, NULL), 0);
	node.count++;
	CHECK_EQ(records_rules_check_node(&node, ignore_problem, NULL), 1);
	/* An RRset of 65,535 records is whole: one more is refused. */
	static records_rules_rr_t many[RECORDS_RULES_MAX_RRSET + 1];
	static uint8_t addr[RECORDS_RULES_MAX_RRSET + 1][4];
	for (size_t i = 0; i <= RECORDS_RULES_MAX_RRSET; i++) {
		addr[i][0] = 10;
		addr[i][1] = (uint8_t)(i >> 16);
		addr[i][2] = (uint8_t)(i >> 8);
		addr[i][3] = (uint8_t)i;
		many[i] = (records_rules_rr_t){ .type = KNOT_RRTYPE_A, .ttl = 300,
		                                .rdata = addr[i], .rdata_len = 4,
		                                .tag = i };
	}
	records_rules_node_t big = { .apex = apex, .owner = owner, .rr = many,
	                             .count = RECORDS_RULES_MAX_RRSET };
	CHECK_EQ(records_rules_check_add(&big, &many[RECORDS_RULES_MAX_RRSET],
	                                 NULL), RECORDS_RULE_RRSET_FULL);
	/* ... and first larger than a DNS message: reported once, where it
	 * crosses; 65,536 records are past both. */
	CHECK_EQ(records_rules_check_node(&big, ignore_problem, NULL), 1);
	CHECK_EQ(records_rules_check_size(&big), RECORDS_RULE_RRSET_TOO_LARGE);
	big.count++;
	CHECK_EQ(records_rules_check_node(&big, ignore_problem, NULL), 2);
	CHECK_EQ(records_rules_check_size(&big), RECORDS_RULE_RRSET_TOO_LARGE);
	/* An RRset fits in one DNS message: the owner once, 12 + 4 octets an
	 * A record. */
	size_t fit = (RECORDS_RULES_MAX_RRSET_OCTETS - knot_dname_size(owner)) /
	             16;
	big.count = fit;
	CHECK_EQ(records_rules_check_node(&big, ignore_problem, NULL), 0);
	CHECK_EQ(records_rules_check_size(&big), RECORDS_RULE_OK);
	CHECK_EQ(records_rules_check_add(&big, &many[fit], NULL),
	         RECORDS_RULE_RRSET_TOO_LARGE);
	big.count = fit + 1;
	CHECK_EQ(records_rules_check_node(&big, ignore_problem, NULL), 1);
	CHECK_EQ(records_rules_check_size(&big), RECORDS_RULE_RRSET_TOO_LARGE);
	/* One record of a size no message carries. */
	static uint8_t huge[65535];
	records_rules_rr_t one = { .type = 65280, .ttl = 300, .rdata = huge,
	                           .rdata_len = sizeof(huge) };
	records_rules_node_t empty = { .apex = apex, .owner = owner };
	CHECK_EQ(records_rules_check_add(&empty, &one, NULL),
	         RECORDS_RULE_RRSET_TOO_LARGE);
}

/* The owner key of text relative to ZONE (records.h's okey). */
static size_t key_of(const char *text, uint8_t *key)
{
	uint8_t name[KNOT_DNAME_MAXLEN], apex[KNOT_DNAME_MAXLEN];
	uint8_t lf[DNS_LF_MAXLEN], alf[DNS_LF_MAXLEN];
	CHECK(knot_dname_from_str(name, text, sizeof(name)) != NULL);
	CHECK(knot_dname_from_str(apex, ZONE, sizeof(apex)) != NULL);
	knot_dname_to_lower(name);
	size_t len = dns_name_to_lf(name, lf), alen = dns_name_to_lf(apex, alf);
	memcpy(key, lf + alen, len - alen);
	return len - alen;
}

static int blob_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
                    size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c != 0 ? c : (alen > blen) - (alen < blen);
}

/* The subtree rules' key functions (RFC 6672 section 2.4): strictly
 * below, the ancestors' keys, and the subtree's range, which must hold
 * every descendant and no sibling bordering it. */
static void test_dname_keys(void)
{
	static const struct {
		const char *name, *anc;
		bool below;
	} cases[] = {
		{ "a.b." ZONE, "b." ZONE, true },
		{ "x.y.a.b." ZONE, "b." ZONE, true },
		{ "b." ZONE, "b." ZONE, false },
		{ "ab." ZONE, "b." ZONE, false },
		{ "ba." ZONE, "b." ZONE, false },
		{ "b\\000." ZONE, "b." ZONE, false },
		{ "b\\001." ZONE, "b." ZONE, false },
		{ "b\\255." ZONE, "b." ZONE, false },
		{ "a.b\\000." ZONE, "b." ZONE, false },
		{ "\\000.b." ZONE, "b." ZONE, true },
		{ "\\255.b." ZONE, "b." ZONE, true },
		{ "B." ZONE, ZONE, true },
		{ ZONE, ZONE, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t key[DNS_LF_MAXLEN], anc[DNS_LF_MAXLEN], end[DNS_LF_MAXLEN];
		size_t klen = key_of(cases[i].name, key);
		size_t alen = key_of(cases[i].anc, anc);
		bool below = records_rules_key_is_below(key, klen, anc, alen);
		size_t elen = records_rules_subtree_end(anc, alen, end);
		bool in_range = blob_cmp(key, klen, anc, alen) > 0 &&
		                (elen == 0 || blob_cmp(key, klen, end, elen) < 0);
		if (below != cases[i].below || in_range != cases[i].below) {
			fprintf(stderr, "%s below %s: %d, in range %d\n",
			        cases[i].name, cases[i].anc, below, in_range);
		}
		CHECK_EQ(below, cases[i].below);
		CHECK_EQ(in_range, cases[i].below);
	}
	uint8_t key[DNS_LF_MAXLEN];
	size_t lens[DNS_LF_MAXLEN / 2 + 1];
	size_t klen = key_of("c.b.a." ZONE, key);
	CHECK_EQ(records_rules_ancestor_keys(key, klen, lens), 3);
	CHECK_EQ(lens[0], 0);
	CHECK_EQ(lens[1], 2);   /* "a\0" */
	CHECK_EQ(lens[2], 4);   /* "a\0b\0" */
	klen = key_of("a\\000." ZONE, key);
	CHECK_EQ(records_rules_ancestor_keys(key, klen, lens), 1);
	CHECK_EQ(records_rules_ancestor_keys(key, 0, lens), 0);
}

int main(void)
{
	test_dname_keys();
	test_add();
	test_types_limit();
	test_remove();
	test_rrset_delete();
	test_node();
	test_in_zone();
	test_rdata();
	return test_done();
}
