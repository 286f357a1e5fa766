/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Listing queries (records_record_query()): the rows, their order in each
 * direction, pages and totals; the records of many owners at once
 * (records_record_foreach_owners()); and SQLite's plan of every shape, which
 * must use an index for an owner or a type filter (no walk of the zone)
 * and sort only for the TTL order. The plans are those of a store without
 * ANALYZE statistics, as zonecast runs.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/libknot.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/records.h"
#include "tests/unit/test.h"
#include "tests/unit/records_target.h"
#include "zonefile/zonefile.h"

#define NAMES 300

static int add(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
               const uint8_t *rdata, uint16_t rdata_len, const char *file,
               uint64_t line, void *ctx)
{
	(void)file;
	return records_import_add(ctx, owner, type, ttl, rdata, rdata_len, line) != 0;
}

/* A zone of NAMES names with an A each and a TXT on every third, TTLs
 * going down as names go up. */
static int make_zone(records_store_t *rs, const uint8_t *apex)
{
	static char text[64 * NAMES * 2 + 256];
	size_t pos = (size_t)snprintf(text, sizeof(text), "$ORIGIN q.test.\n"
	                              "@ 300 IN SOA ns h 1 2 3 4 5\n"
	                              "@ 300 IN NS ns\n");
	for (int i = 0; i < NAMES; i++) {
		pos += (size_t)snprintf(text + pos, sizeof(text) - pos,
		                        "n%03d %d IN A 192.0.2.%d\n", i, 1000 - i,
		                        i % 250);
		if (i % 3 == 0) {
			pos += (size_t)snprintf(text + pos, sizeof(text) - pos,
			                        "n%03d %d IN TXT \"t%d\"\n", i, 1000 - i,
			                        i);
		}
	}
	records_import_t *imp;
	int ret = records_import_begin(rs, apex, &imp);
	if (ret != ZC_EOK) {
		return ret;
	}
	zonefile_handler_t h = { .record = add, .ctx = imp };
	ret = zonefile_parse_text(text, pos, apex, 300, &h);
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	return records_import_commit(imp, NULL, NULL);
}

typedef struct {
	int count;
	uint16_t types[NAMES * 2 + 4];
	uint32_t ttls[NAMES * 2 + 4];
	char names[NAMES * 2 + 4][16];
} rows_t;

static int collect(const records_record_t *rec, void *ctx)
{
	rows_t *r = ctx;
	r->types[r->count] = rec->type;
	r->ttls[r->count] = rec->ttl;
	knot_dname_to_str(r->names[r->count], rec->owner, sizeof(r->names[0]));
	r->count++;
	return 0;
}

static void test_rows(records_store_t *rs, int64_t zone_id)
{
	static rows_t r;
	int64_t total;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(owner, "n003.q.test.", sizeof(owner));
	/* One name: its A and TXT, in type order. */
	records_query_t q = { .owner = owner, .limit = -1 };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, &total, collect, &r), ZC_EOK);
	CHECK_EQ(total, 2);
	CHECK_EQ(r.count, 2);
	CHECK_EQ(r.types[0], KNOT_RRTYPE_A);
	CHECK_EQ(r.types[1], KNOT_RRTYPE_TXT);
	/* One type: every TXT, by name, a page of 10 from the 5th. */
	q = (records_query_t){ .type = KNOT_RRTYPE_TXT, .offset = 5, .limit = 10 };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, &total, collect, &r), ZC_EOK);
	CHECK_EQ(total, NAMES / 3);
	CHECK_EQ(r.count, 10);
	CHECK(strcmp(r.names[0], "n015.q.test.") == 0);
	CHECK(strcmp(r.names[9], "n042.q.test.") == 0);
	/* Descending: the last TXT first. */
	q.descending = true;
	q.offset = 0;
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, NULL, collect, &r), ZC_EOK);
	CHECK(strcmp(r.names[0], "n297.q.test.") == 0);
	/* By type over the zone: NS, then A..., then TXT (type codes). */
	q = (records_query_t){ .order = RECORDS_ORDER_TYPE, .limit = -1 };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, &total, collect, &r), ZC_EOK);
	CHECK_EQ(total, 2 + NAMES + NAMES / 3);
	CHECK_EQ(r.count, total);
	bool sorted = true;
	for (int i = 1; i < r.count; i++) {
		sorted = sorted && r.types[i - 1] <= r.types[i];
	}
	CHECK(sorted);
	/* By TTL: lowest first, the names' order reversed. */
	q = (records_query_t){ .order = RECORDS_ORDER_TTL, .type = KNOT_RRTYPE_A,
	                       .limit = 3 };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, NULL, collect, &r), ZC_EOK);
	CHECK_EQ(r.ttls[0], 1000 - (NAMES - 1));
	CHECK(strcmp(r.names[0], "n299.q.test.") == 0);
	/* A name outside the zone matches nothing. */
	knot_dname_from_str(owner, "n003.other.", sizeof(owner));
	q = (records_query_t){ .owner = owner, .limit = -1 };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(records_record_query(rs, zone_id, &q, &total, collect, &r), ZC_EOK);
	CHECK_EQ(total, 0);
	CHECK_EQ(r.count, 0);
}

typedef struct {
	int rows, stop_at;
	int a, txt;
	bool other_owner;
} owner_rows_t;

static int owner_row(const records_record_t *rec, void *ctx)
{
	owner_rows_t *o = ctx;
	o->a += rec->type == KNOT_RRTYPE_A;
	o->txt += rec->type == KNOT_RRTYPE_TXT;
	char name[64];
	knot_dname_to_str(name, rec->owner, sizeof(name));
	o->other_owner |= strncmp(name, "n", 1) != 0;
	return ++o->rows == o->stop_at;
}

/* records_record_foreach_owners: the records of every owner named (any
 * case), none of a name outside the zone or without records; more owners
 * than one statement takes on PostgreSQL; a stop ends the whole reading. */
static void test_foreach_owners(records_store_t *rs, int64_t zone_id)
{
	enum { OWNERS = 4100 };
	static uint8_t names[OWNERS][KNOT_DNAME_MAXLEN];
	static const knot_dname_t *owners[OWNERS];
	/* Past 4,096: the zone's names come last, upper case, and between
	 * them names that hold nothing and one outside the zone. */
	for (int i = 0; i < OWNERS; i++) {
		char text[64];
		int n = i - (OWNERS - NAMES);
		if (n >= 0) {
			snprintf(text, sizeof(text), "N%03d.Q.TEST.", n);
		} else if (i == 7) {
			snprintf(text, sizeof(text), "n001.other.");
		} else {
			snprintf(text, sizeof(text), "none%d.q.test.", i);
		}
		CHECK(knot_dname_from_str(names[i], text, KNOT_DNAME_MAXLEN) != NULL);
		owners[i] = names[i];
	}
	owner_rows_t o = { .stop_at = -1 };
	CHECK_EQ(records_record_foreach_owners(rs, zone_id, owners, OWNERS,
	                                       owner_row, &o), ZC_EOK);
	CHECK_EQ(o.a, NAMES);
	CHECK_EQ(o.txt, NAMES / 3);
	CHECK(!o.other_owner);
	/* Two owners: n003 has an A and a TXT, n004 an A. */
	o = (owner_rows_t){ .stop_at = -1 };
	const knot_dname_t *two[2] = { owners[OWNERS - NAMES + 3],
	                               owners[OWNERS - NAMES + 4] };
	CHECK_EQ(records_record_foreach_owners(rs, zone_id, two, 2, owner_row,
	                                       &o), ZC_EOK);
	CHECK_EQ(o.rows, 3);
	o = (owner_rows_t){ .stop_at = 1 };
	CHECK_EQ(records_record_foreach_owners(rs, zone_id, owners, OWNERS,
	                                       owner_row, &o), ZC_EOK);
	CHECK_EQ(o.rows, 1);
	o = (owner_rows_t){ .stop_at = -1 };
	CHECK_EQ(records_record_foreach_owners(rs, zone_id, owners, 0, owner_row,
	                                       &o), ZC_EOK);
	CHECK_EQ(o.rows, 0);
}

/* Every shape's plan: an index for each filter, a sort only by TTL. */
static void test_plans(records_store_t *rs)
{
	static const uint8_t owner[] = "\x01" "x\x00";
	char plan[2048];
	for (int o = 0; o < 2; o++) {
		for (int t = 0; t < 2; t++) {
			for (int order = 0; order < 3; order++) {
				for (int desc = 0; desc < 2; desc++) {
					records_query_t q = {
						.owner = o ? owner : NULL,
						.type = t ? KNOT_RRTYPE_TXT : 0,
						.order = (records_order_t)order,
						.descending = desc, .limit = 10,
					};
					CHECK_EQ(records_query_plan(rs, &q, plan, sizeof(plan)),
					         ZC_EOK);
					bool ok = strstr(plan, "SCAN records") == NULL;
					if (test_backend_is_pg()) {
						/* No scan of the table; a sort only by TTL
						 * (or of one name's few records). */
						ok = strstr(plan, "Seq Scan") == NULL &&
						     strstr(plan, "Index") != NULL &&
						     (order == RECORDS_ORDER_TTL || o ||
						      strstr(plan, "Sort") == NULL);
					} else if (o) {
						ok = ok && strstr(plan, "okey=?") != NULL;
					} else if (t) {
						ok = ok && strstr(plan, "records_type "
						                  "(zone_id=? AND type=?)");
					} else {
						ok = ok && strstr(plan, "USING INDEX");
					}
					bool sorts = strstr(plan, "TEMP B-TREE") != NULL;
					/* One name holds few records: sorting them is
					 * no walk of the zone. */
					ok = ok && (order == RECORDS_ORDER_TTL || o || !sorts);
					if (!ok) {
						fprintf(stderr, "owner %d type %d order %d desc %d:"
						        "\n%s\n", o, t, order, desc, plan);
					}
					CHECK(ok);
				}
			}
		}
	}
}

/* A zone larger than a scan's page on PostgreSQL (8,192 rows): names with
 * an A each and a pair of TXTs on every fifth (RRsets that may straddle a
 * page), for records_scan_*(). */
#define BIG_NAMES 17000

static int make_big_zone(records_store_t *rs, const uint8_t *apex,
                         int *records)
{
	size_t size = (size_t)BIG_NAMES * 100 + 256;
	char *text = malloc(size);
	if (text == NULL) {
		return KNOT_ENOMEM;
	}
	size_t pos = (size_t)snprintf(text, size, "$ORIGIN big.test.\n"
	                              "@ 300 IN SOA ns h 1 2 3 4 5\n"
	                              "@ 300 IN NS ns\n");
	*records = 2;
	for (int i = 0; i < BIG_NAMES; i++) {
		pos += (size_t)snprintf(text + pos, size - pos,
		                        "n%05d 60 IN A 192.0.2.%d\n", i, i % 250);
		(*records)++;
		if (i % 5 == 0) {
			pos += (size_t)snprintf(text + pos, size - pos,
			                        "n%05d 60 IN TXT \"a\"\n"
			                        "n%05d 60 IN TXT \"b\"\n", i, i);
			*records += 2;
		}
	}
	records_import_t *imp;
	int ret = records_import_begin(rs, apex, &imp);
	if (ret == ZC_EOK) {
		zonefile_handler_t h = { .record = add, .ctx = imp };
		ret = zonefile_parse_text(text, pos, apex, 300, &h);
		ret = ret == ZC_EOK ? records_import_commit(imp, NULL, NULL) :
		      (records_import_abort(imp), ret);
	}
	free(text);
	return ret;
}

typedef struct {
	int calls, stop_at;
	size_t nodes[8];
} node_rows_t;

static int node_row(size_t node, const records_row_t *row, void *ctx)
{
	(void)row;
	node_rows_t *n = ctx;
	n->nodes[n->calls < 8 ? n->calls : 7] = node;
	return ++n->calls == n->stop_at;
}

/* records_nodes_foreach over three nodes of the big zone (keys taken from
 * its scan): every row with its node's index, and a stop from the
 * callback ends the whole reading, on both engines. */
static void test_nodes_foreach(records_store_t *rs, int64_t zone_id,
                               uint8_t keys[3][DNS_LF_KEY_MAXLEN],
                               const size_t *lens)
{
	const uint8_t *k[3] = { keys[0], keys[1], keys[2] };
	node_rows_t n = { .stop_at = -1 };
	CHECK_EQ(records_nodes_foreach(rs, zone_id, k, lens, 3, node_row, &n),
	         ZC_EOK);
	/* n00000 has an A and two TXTs; n00001 and n00002 an A each. */
	CHECK_EQ(n.calls, 5);
	CHECK_EQ(n.nodes[0], 0);
	CHECK_EQ(n.nodes[2], 0);
	CHECK_EQ(n.nodes[3], 1);
	CHECK_EQ(n.nodes[4], 2);
	n = (node_rows_t){ .stop_at = 1 };
	CHECK_EQ(records_nodes_foreach(rs, zone_id, k, lens, 3, node_row, &n),
	         ZC_EOK);
	CHECK_EQ(n.calls, 1);
}

/* A zone's scan gives every row once, in (node, type) order, across the
 * pages PostgreSQL reads it in. */
static void test_scan_pages(records_store_t *rs)
{
	const uint8_t *apex = (const uint8_t *)"\x03" "big\x04" "test\x00";
	int expected = 0;
	CHECK_EQ(make_big_zone(rs, apex, &expected), ZC_EOK);
	records_zone_t zone;
	uint64_t seq;
	records_scan_t *scan;
	CHECK_EQ(records_scan_begin(rs, apex, &zone, &seq, &scan), ZC_EOK);
	records_row_t row;
	int rows = 0, ret, out_of_order = 0;
	uint8_t last[DNS_LF_KEY_MAXLEN];
	size_t last_len = 0;
	int last_type = -1;
	int64_t last_id = -1;
	uint8_t keys[3][DNS_LF_KEY_MAXLEN];
	size_t lens[3];
	int nodes = 0;
	while ((ret = records_scan_next(scan, &row)) == 1) {
		if (row.okey_len > 0 && nodes < 3 &&
		    (nodes == 0 || records_okey_cmp(row.okey, (size_t)row.okey_len,
		                                    keys[nodes - 1],
		                                    lens[nodes - 1]) != 0)) {
			memcpy(keys[nodes], row.okey, (size_t)row.okey_len);
			lens[nodes++] = (size_t)row.okey_len;
		}
		int c = rows == 0 ? 1 : records_okey_cmp(row.okey,
		                                         (size_t)row.okey_len,
		                                         last, last_len);
		if (c < 0 || (c == 0 && (row.type < last_type ||
		    (row.type == last_type && row.id <= last_id)))) {
			out_of_order++;
		}
		memcpy(last, row.okey, (size_t)row.okey_len);
		last_len = (size_t)row.okey_len;
		last_type = row.type;
		last_id = row.id;
		rows++;
	}
	CHECK_EQ(ret, 0);
	records_scan_end(scan);
	CHECK_EQ(rows, expected);
	CHECK_EQ(out_of_order, 0);
	CHECK_EQ(nodes, 3);
	test_nodes_foreach(rs, zone.id, keys, lens);
}

/* Imports text as the zone apex. */
static int import_text(records_store_t *rs, const uint8_t *apex,
                       const char *text)
{
	records_import_t *imp;
	int ret = records_import_begin(rs, apex, &imp);
	if (ret != ZC_EOK) {
		return ret;
	}
	zonefile_handler_t h = { .record = add, .ctx = imp };
	ret = zonefile_parse_text(text, strlen(text), apex, 300, &h);
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	return records_import_commit(imp, NULL, NULL);
}

static int first_id(const records_record_t *rec, void *ctx)
{
	*(int64_t *)ctx = rec->id;
	return 1;
}

/* One answer of records_dname_above() or _data_below(): found or not,
 * and the name found. */
static void check_subtree(records_store_t *rs, const records_zone_t *zone,
                          bool above, const char *owner, int64_t exclude,
                          const char *want)
{
	uint8_t name[KNOT_DNAME_MAXLEN], at[KNOT_DNAME_MAXLEN];
	CHECK(knot_dname_from_str(name, owner, sizeof(name)) != NULL);
	bool found = true;
	int ret = above ?
	          records_dname_above(rs, zone, name, exclude, &found, at) :
	          records_data_below(rs, zone, name, exclude, &found, at);
	CHECK_EQ(ret, ZC_EOK);
	char got[KNOT_DNAME_TXT_MAXLEN + 1] = "";
	if (found) {
		knot_dname_to_str(got, at, sizeof(got));
	}
	bool ok = want == NULL ? !found : found && strcmp(got, want) == 0;
	if (!ok) {
		fprintf(stderr, "%s %s: found %d (%s), want %s\n",
		        above ? "dname_above" : "data_below", owner, found, got,
		        want ? want : "none");
	}
	CHECK(ok);
}

/* records_dname_above() and records_data_below() (RFC 6672 section 2.4):
 * the ancestors' DNAMEs, the apex's included, the name's own not; the
 * records strictly below a name, siblings whose keys border its range
 * (a longer label, labels ending in the octets 0x00 and 0x01) not; the
 * record a write rewrites left out. */
static void test_dname_subtree(records_store_t *rs)
{
	const uint8_t *apex = (const uint8_t *)"\x01" "d\x04" "test\x00";
	CHECK_EQ(import_text(rs, apex, "$ORIGIN d.test.\n"
	                     "@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n"
	                     "dn DNAME x.example.\ndn A 192.0.2.2\n"
	                     "a.b A 192.0.2.3\nc A 192.0.2.4\n"
	                     "ca A 192.0.2.5\nc\\000 A 192.0.2.6\n"
	                     "c\\001 A 192.0.2.7\nc\\255 A 192.0.2.8\n"
	                     "sub NS ns.other.\nx.sub DNAME y.example.\n"), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);
	check_subtree(rs, &zone, true, "x.dn.d.test.", 0, "dn.d.test.");
	check_subtree(rs, &zone, true, "Y.X.DN.d.test.", 0, "dn.d.test.");
	check_subtree(rs, &zone, true, "dn.d.test.", 0, NULL);
	check_subtree(rs, &zone, true, "dn\\000.d.test.", 0, NULL);
	check_subtree(rs, &zone, true, "a.b.d.test.", 0, NULL);
	check_subtree(rs, &zone, true, "d.test.", 0, NULL);
	check_subtree(rs, &zone, true, "www.example.", 0, NULL);
	/* Below an NS cut too. */
	check_subtree(rs, &zone, true, "z.x.sub.d.test.", 0, "x.sub.d.test.");
	check_subtree(rs, &zone, false, "b.d.test.", 0, "a.b.d.test.");
	check_subtree(rs, &zone, false, "B.d.test.", 0, "a.b.d.test.");
	check_subtree(rs, &zone, false, "a.b.d.test.", 0, NULL);
	check_subtree(rs, &zone, false, "c.d.test.", 0, NULL);
	check_subtree(rs, &zone, false, "dn.d.test.", 0, NULL);
	check_subtree(rs, &zone, false, "sub.d.test.", 0, "x.sub.d.test.");
	check_subtree(rs, &zone, false, "d.test.", 0, "a.b.d.test.");
	check_subtree(rs, &zone, false, "nothing.d.test.", 0, NULL);
	uint8_t ab[KNOT_DNAME_MAXLEN], dn[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(ab, "a.b.d.test.", sizeof(ab));
	knot_dname_from_str(dn, "dn.d.test.", sizeof(dn));
	int64_t ab_id = 0, dn_id = 0;
	CHECK_EQ(records_record_foreach(rs, zone.id, ab, 0, first_id, &ab_id),
	         ZC_EOK);
	CHECK_EQ(records_record_foreach(rs, zone.id, dn, KNOT_RRTYPE_DNAME,
	                                first_id, &dn_id), ZC_EOK);
	CHECK(ab_id > 0 && dn_id > 0);
	check_subtree(rs, &zone, false, "b.d.test.", ab_id, NULL);
	check_subtree(rs, &zone, true, "x.dn.d.test.", dn_id, NULL);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	const uint8_t *apex = (const uint8_t *)"\x01" "q\x04" "test\x00";
	CHECK_EQ(records_open(&rs, test_records_target(dir)), ZC_EOK);
	CHECK_EQ(make_zone(rs, apex), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);
	test_rows(rs, zone.id);
	test_foreach_owners(rs, zone.id);
	test_plans(rs);
	test_scan_pages(rs);
	test_dname_subtree(rs);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
