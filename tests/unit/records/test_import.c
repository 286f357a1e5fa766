/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Zone imports (records/import.c) as they write, on both backends (meson's
 * import and import@pg: PostgreSQL's COPY, SQLite's INSERT per row):
 *
 * - owners and rdata with odd octets (NUL, backslash, tab, newline, CR,
 *   high octets; RFC 2181 §11) come back byte for byte, as records and
 *   through a build's scan, with their record count and one change-log
 *   event;
 * - an import that fails half-way through its rows (a row the database
 *   refuses, a duplicate record id) leaves nothing behind: a new zone is
 *   not there, a replaced zone keeps its records, serial and count, and
 *   the change log has no new event.
 */
#include <stdlib.h>

#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

/* A record as parsed or as read back. */
typedef struct {
	uint8_t owner[KNOT_DNAME_MAXLEN];
	uint16_t type;
	uint16_t rdata_len;
	uint8_t rdata[1024];
} rr_t;

typedef struct {
	rr_t rr[64];
	int count;
} rrs_t;

static void add_rr(rrs_t *s, const uint8_t *owner, uint16_t type,
                   const uint8_t *rdata, uint16_t len)
{
	if (s->count == 64 || len > sizeof(s->rr[0].rdata)) {
		CHECK(!"too many records for the test");
		return;
	}
	rr_t *r = &s->rr[s->count++];
	memset(r, 0, sizeof(*r));
	knot_dname_copy_lower(r->owner, owner);
	r->type = type;
	r->rdata_len = len;
	memcpy(r->rdata, rdata, len);
}

static int parsed_cb(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	(void)ttl, (void)file, (void)line;
	add_rr(ctx, owner, type, rdata, rdata_len);
	return 0;
}

static int stored_cb(const records_record_t *rec, void *ctx)
{
	add_rr(ctx, rec->owner, rec->type, rec->rdata, rec->rdata_len);
	return 0;
}

static int rr_cmp(const void *pa, const void *pb)
{
	const rr_t *a = pa, *b = pb;
	int c = memcmp(a->owner, b->owner, sizeof(a->owner));
	if (c == 0 && a->type != b->type) {
		c = a->type < b->type ? -1 : 1;
	}
	if (c == 0 && a->rdata_len != b->rdata_len) {
		c = a->rdata_len < b->rdata_len ? -1 : 1;
	}
	return c != 0 ? c : memcmp(a->rdata, b->rdata, a->rdata_len);
}

/* The same records, in any order? */
static bool same_rrs(rrs_t *a, rrs_t *b)
{
	qsort(a->rr, (size_t)a->count, sizeof(a->rr[0]), rr_cmp);
	qsort(b->rr, (size_t)b->count, sizeof(b->rr[0]), rr_cmp);
	if (a->count != b->count) {
		return false;
	}
	for (int i = 0; i < a->count; i++) {
		if (rr_cmp(&a->rr[i], &b->rr[i]) != 0) {
			return false;
		}
	}
	return true;
}

static const char odd_zone[] =
	"@ SOA ns h 7 2 3 4 5\n"
	"@ NS ns\n"
	"ns A 192.0.2.1\n"
	"nul\\000in.label A 192.0.2.2\n"
	"back\\\\slash A 192.0.2.3\n"
	"tab\\009and\\010newline\\013cr A 192.0.2.4\n"
	"high\\255\\128\\200 A 192.0.2.5\n"
	"\\000 A 192.0.2.6\n"
	"txt TXT \"\\000\\\\\\009\\010\\013\\255\\128\" \"\\\\N\" \"\\\\.\"\n"
	"txt TXT \"\"\n"
	"mx MX 10 back\\\\slash\n"
	"alias CNAME tab\\009and\\010newline\\013cr\n"
	"\\\\\\.\\009 TYPE65400 \\# 6 00 5C 09 0A FF 80\n";

/* Odd octets through the import and back, as records and as a build
 * reads them. */
static void test_odd_octets(records_store_t *rs)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	fx_name(apex, "odd.test.");
	static rrs_t parsed, stored, scanned;
	zonefile_handler_t h = { .record = parsed_cb, .ctx = &parsed };
	CHECK_EQ(zonefile_parse_text(odd_zone, strlen(odd_zone), apex, 300, &h),
	         ZC_EOK);
	CHECK_EQ(parsed.count, 13);

	uint64_t before = 0, after = 0;
	CHECK_EQ(records_last_seq(rs, &before), ZC_EOK);
	records_zone_t z;
	CHECK_EQ(fx_import(rs, "odd.test.", odd_zone, &z), ZC_EOK);
	CHECK_EQ(z.serial, 7);
	CHECK_EQ(fx_kept(rs, z.id), 13);
	CHECK_EQ(records_record_foreach(rs, z.id, NULL, 0, stored_cb, &stored),
	         ZC_EOK);
	CHECK(same_rrs(&parsed, &stored));
	/* One event for the whole import. */
	CHECK_EQ(records_last_seq(rs, &after), ZC_EOK);
	CHECK(after > before);

	/* A build's read: owners rebuilt from their keys. */
	records_scan_t *scan;
	uint64_t snap;
	CHECK_EQ(records_scan_begin(rs, apex, &z, &snap, &scan), ZC_EOK);
	records_row_t row;
	int rc;
	while ((rc = records_scan_next(scan, &row)) == 1) {
		add_rr(&scanned, row.owner, row.type, row.rdata, row.rdata_len);
	}
	CHECK_EQ(rc, 0);
	records_scan_end(scan);
	CHECK(same_rrs(&parsed, &scanned));

	/* The owner with a NUL is found by its name. */
	CHECK_EQ(fx_count(rs, z.id, "nul\\000in.label.odd.test.", 0), 1);
	CHECK_EQ(fx_count(rs, z.id, "\\000.odd.test.", KNOT_RRTYPE_A), 1);
}

/* A zone file of n A records besides the apex's SOA, NS and the NS's
 * address, record `bad` (unless -1) with TTL 4242. */
static char *many_records(int n, int bad, uint32_t serial)
{
	size_t size = 64 + (size_t)n * 48;
	char *text = malloc(size);
	if (text == NULL) {
		exit(1);
	}
	size_t pos = (size_t)snprintf(text, size, "@ SOA ns h %u 2 3 4 5\n"
	                              "@ NS ns\nns A 192.0.2.1\n", serial);
	for (int i = 0; i < n; i++) {
		pos += (size_t)snprintf(text + pos, size - pos,
		                        "h%d %d A 192.0.2.%d\n", i,
		                        i == bad ? 4242 : 300, i % 250);
	}
	return text;
}

/* The database refuses records with TTL 4242 (a trigger added behind the
 * store's back): a row that fails in the middle of the load. */
static void add_bad_row_trigger(const char *dir, bool pg)
{
	const char *sql = pg ?
		"CREATE FUNCTION zc_test_bad() RETURNS trigger LANGUAGE plpgsql"
		" AS $$ BEGIN IF NEW.ttl = 4242 THEN RAISE EXCEPTION"
		" 'bad row'; END IF; RETURN NEW; END $$;"
		"CREATE TRIGGER zc_test_bad BEFORE INSERT ON records"
		" FOR EACH ROW EXECUTE FUNCTION zc_test_bad()" :
		"CREATE TRIGGER zc_test_bad BEFORE INSERT ON records"
		" WHEN NEW.ttl = 4242 BEGIN SELECT RAISE(ABORT, 'bad row'); END";
	CHECK_EQ(test_records_exec(dir, sql), 0);
}

/* What must not change when an import fails. */
typedef struct {
	uint64_t seq;
	int64_t kept;
	int64_t rows;
	uint32_t serial;
} state_t;

static state_t state_of(records_store_t *rs, const char *zone)
{
	state_t s = { 0 };
	uint8_t apex[KNOT_DNAME_MAXLEN];
	records_zone_t z;
	CHECK_EQ(records_last_seq(rs, &s.seq), ZC_EOK);
	if (records_zone_find(rs, fx_name(apex, zone), &z) == ZC_EOK) {
		s.kept = fx_kept(rs, z.id);
		s.rows = fx_count(rs, z.id, NULL, 0);
		s.serial = fx_serial(rs, z.id);
	}
	return s;
}

static bool same_state(state_t a, state_t b)
{
	return a.seq == b.seq && a.kept == b.kept && a.rows == b.rows &&
	       a.serial == b.serial;
}

/* Imports n records, the bad one at n / 2, and expects a refusal that
 * changed nothing. */
static void import_fails(records_store_t *rs, const char *zone, int n,
                         int bad)
{
	state_t before = state_of(rs, zone);
	char *text = many_records(n, bad, 99);
	records_zone_t z;
	CHECK(fx_import(rs, zone, text, &z) != ZC_EOK);
	free(text);
	CHECK(same_state(before, state_of(rs, zone)));
}

static void test_failure_leaves_nothing(records_store_t *rs, const char *dir,
                                        bool pg)
{
	enum { N = 5000 };
	add_bad_row_trigger(dir, pg);
	/* A new zone: not created. */
	import_fails(rs, "new.test.", N, N / 2);
	uint8_t apex[KNOT_DNAME_MAXLEN];
	records_zone_t z;
	CHECK_EQ(records_zone_find(rs, fx_name(apex, "new.test."), &z),
	         ZC_ENOZONE);

	/* A zone replaced: keeps what it had. */
	char *text = many_records(100, -1, 1);
	CHECK_EQ(fx_import(rs, "kept.test.", text, &z), ZC_EOK);
	free(text);
	CHECK_EQ(fx_kept(rs, z.id), 103);
	import_fails(rs, "kept.test.", N, N / 2);
	CHECK_EQ(fx_serial(rs, z.id), 1);
	CHECK_EQ(fx_count(rs, z.id, NULL, 0), 103);

	/* PostgreSQL: record ids drawn again (the sequence set back behind
	 * the store's back), so that the load meets a duplicate key. */
	for (int i = 0; pg && i < 2; i++) {
		CHECK_EQ(test_records_exec(dir, "ALTER SEQUENCE record_ids"
		                           " RESTART WITH 1"), 0);
		import_fails(rs, i == 0 ? "dup.test." : "kept.test.", N, -1);
	}
	if (pg) {
		CHECK_EQ(fx_count(rs, z.id, NULL, 0), 103);
		CHECK_EQ(test_records_exec(dir, "ALTER SEQUENCE record_ids"
		                           " RESTART WITH 1000000"), 0);
	}

	/* And an import goes on as before. */
	text = many_records(N, -1, 2);
	CHECK_EQ(fx_import(rs, "kept.test.", text, &z), ZC_EOK);
	free(text);
	CHECK_EQ(fx_kept(rs, z.id), N + 3);
	CHECK_EQ(fx_count(rs, z.id, NULL, 0), N + 3);
	CHECK_EQ(fx_serial(rs, z.id), 2);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	if (records_open(&rs, test_records_target(dir)) != ZC_EOK) {
		fprintf(stderr, "cannot open a records store in %s\n", dir);
		return 1;
	}
	test_odd_octets(rs);
	test_failure_leaves_nothing(rs, dir, test_backend_is_pg());
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
