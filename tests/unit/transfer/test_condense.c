/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * IXFR condensing, table-driven: sequences of journal events in, the
 * deleted and added RRs of the one difference sequence out.
 */
#include <libknot/descriptor.h>

#include "common/error.h"
#include "transfer/internal.h"
#include "tests/unit/test.h"

typedef struct {
	const char *owner;   /* Text name. */
	uint16_t type;
	uint32_t ttl;
	const char *rdata;   /* Bytes, compared as given. */
	bool added;
} event_t;

typedef struct {
	const char *what;
	event_t events[6];
	size_t count;
	const char *deleted; /* Expected, as "owner/ttl/rdata;..." */
	const char *added;
} case_t;

#define A KNOT_RRTYPE_A
#define TXT KNOT_RRTYPE_TXT
#define SOA KNOT_RRTYPE_SOA

static const case_t cases[] = {
	{ "added", { { "a.", A, 300, "1111", true } }, 1, "", "a./300/1111;" },
	{ "deleted", { { "a.", A, 300, "1111", false } }, 1,
	  "a./300/1111;", "" },
	{ "added then deleted: nothing",
	  { { "a.", A, 300, "1111", true }, { "a.", A, 300, "1111", false } },
	  2, "", "" },
	{ "deleted then re-added, same TTL: nothing",
	  { { "a.", A, 300, "1111", false }, { "a.", A, 300, "1111", true } },
	  2, "", "" },
	{ "deleted then re-added, new TTL: delete old, add new",
	  { { "a.", A, 300, "1111", false }, { "a.", A, 600, "1111", true } },
	  2, "a./300/1111;", "a./600/1111;" },
	{ "added, TTL changed twice: add the last",
	  { { "a.", A, 300, "1111", true }, { "a.", A, 300, "1111", false },
	    { "a.", A, 900, "1111", true } }, 3, "", "a./900/1111;" },
	{ "TTL changed and back: nothing",
	  { { "a.", A, 300, "1111", false }, { "a.", A, 600, "1111", true },
	    { "a.", A, 600, "1111", false }, { "a.", A, 300, "1111", true } },
	  4, "", "" },
	{ "other rdata, owner or type are other records",
	  { { "a.", A, 300, "1111", false }, { "a.", A, 300, "2222", true },
	    { "b.", A, 300, "1111", true }, { "a.", TXT, 300, "1111", true } },
	  4, "a./300/1111;", "a./300/2222;b./300/1111;a./300/1111;" },
	{ "SOA events are skipped",
	  { { "a.", SOA, 300, "1111", false }, { "a.", SOA, 300, "2222", true } },
	  2, "", "" },
};

typedef struct {
	char text[512];
	size_t len;
} collect_t;

static int collect(const xfr_diff_rr_t *rr, void *ctx)
{
	collect_t *c = ctx;
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, rr->owner, sizeof(name));
	c->len += (size_t)snprintf(c->text + c->len, sizeof(c->text) - c->len,
	                           "%s/%u/%.*s;", name, rr->ttl,
	                           (int)rr->rdata_len, (const char *)rr->rdata);
	return 0;
}

static void run_case(const case_t *c)
{
	xfr_diff_t *d;
	CHECK_EQ(xfr_diff_new(&d), ZC_EOK);
	for (size_t i = 0; i < c->count; i++) {
		const event_t *e = &c->events[i];
		uint8_t owner[KNOT_DNAME_MAXLEN];
		knot_dname_from_str(owner, e->owner, sizeof(owner));
		records_journal_rr_t rr = {
			.version = (uint32_t)i + 2, .added = e->added,
			.owner = owner, .type = e->type, .ttl = e->ttl,
			.rdata = (const uint8_t *)e->rdata,
			.rdata_len = (uint16_t)strlen(e->rdata),
		};
		CHECK_EQ(xfr_diff_add(&rr, d), ZC_EOK);
	}
	collect_t del = { .len = 0 }, add = { .len = 0 };
	xfr_diff_foreach(d, false, collect, &del);
	xfr_diff_foreach(d, true, collect, &add);
	if (strcmp(del.text, c->deleted) != 0 || strcmp(add.text, c->added) != 0) {
		fprintf(stderr, "%s: deleted '%s' added '%s'\n", c->what,
		        del.text, add.text);
	}
	CHECK(strcmp(del.text, c->deleted) == 0);
	CHECK(strcmp(add.text, c->added) == 0);
	xfr_diff_free(d);
}

/* Many records: the table grows and every record is still found. */
static void test_many(void)
{
	xfr_diff_t *d;
	CHECK_EQ(xfr_diff_new(&d), ZC_EOK);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < 20000; i++) {
			char name[32];
			uint8_t owner[KNOT_DNAME_MAXLEN];
			snprintf(name, sizeof(name), "h%u.example.", i);
			knot_dname_from_str(owner, name, sizeof(owner));
			uint8_t rdata[4] = { 10, 0, (uint8_t)(i >> 8), (uint8_t)i };
			records_journal_rr_t rr = {
				.added = pass == 0, .owner = owner, .type = A,
				.ttl = 300, .rdata = rdata, .rdata_len = 4,
			};
			/* Odd ones only added: they stay. */
			if (pass == 0 || i % 2 == 0) {
				CHECK(xfr_diff_add(&rr, d) == ZC_EOK);
			}
		}
	}
	CHECK_EQ(xfr_diff_count(d, true), 10000);
	CHECK_EQ(xfr_diff_count(d, false), 0);
	xfr_diff_free(d);
}

/* The SOA events: not in the difference; the first deleted SOA is the
 * one the client holds (its TTL and fields, RFC 1995 §4). */
static void test_old_soa(void)
{
	xfr_diff_t *d;
	CHECK_EQ(xfr_diff_new(&d), ZC_EOK);
	uint8_t owner[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(owner, "example.", sizeof(owner));
	uint32_t ttl = 0;
	const uint8_t *rdata = NULL;
	uint16_t len = 0;
	CHECK(!xfr_diff_old_soa(d, &ttl, &rdata, &len));
	static const struct { bool added; uint32_t ttl; const char *rd; } ev[] = {
		{ true, 300, "new-before" }, /* An add first: not the old one. */
		{ false, 600, "old-fields" },
		{ true, 700, "mid-fields" },
		{ false, 700, "mid-fields" },
		{ true, 800, "new-fields" },
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		records_journal_rr_t rr = {
			.added = ev[i].added, .owner = owner, .type = SOA,
			.ttl = ev[i].ttl, .rdata = (const uint8_t *)ev[i].rd,
			.rdata_len = (uint16_t)strlen(ev[i].rd),
		};
		CHECK_EQ(xfr_diff_add(&rr, d), ZC_EOK);
	}
	CHECK(xfr_diff_old_soa(d, &ttl, &rdata, &len));
	CHECK_EQ(ttl, 600);
	CHECK(len == 10 && memcmp(rdata, "old-fields", 10) == 0);
	CHECK_EQ(xfr_diff_count(d, true), 0);
	CHECK_EQ(xfr_diff_count(d, false), 0);
	xfr_diff_free(d);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_case(&cases[i]);
	}
	test_many();
	test_old_soa();
	return test_done();
}
