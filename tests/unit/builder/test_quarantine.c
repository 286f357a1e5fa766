/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One zone's failed build never stops another's: a per-record build of two
 * zones where one fails (ZONECAST_FAULT_BUILD) commits the other and rolls
 * the failing one back; the log passes quarantine it (its last good build
 * stays, its changes wait), skip its events, and release it once a build
 * of it succeeds. Which errors are store-wide.
 */
#include <errno.h>
#include <stdlib.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "tests/unit/zone_fixture.h"

static const char zone_text[] =
	"$TTL 300\n@ IN SOA ns hostmaster 1 7200 900 1209600 300\n@ IN NS ns\n"
	"ns IN A 192.0.2.1\n";

static char fault_path[512];

static void set_failing(const char *zones)
{
	FILE *f = fopen(fault_path, "w");
	CHECK(f != NULL);
	if (f != NULL) {
		fputs(zones, f);
		fclose(f);
	}
}

static bool edge_has(edge_store_t *es, int64_t zone_id, const char *rel)
{
	edge_txn_t txn = { 0 };
	const uint8_t *val;
	size_t vlen;
	edge_txn_begin_read(es, &txn);
	bool found = edge_node_get(&txn, (uint64_t)zone_id, (const uint8_t *)rel,
	                           strlen(rel) + 1, &val, &vlen) == ZC_EOK;
	edge_txn_abort(&txn);
	return found;
}

static uint32_t edge_serial(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta = { .serial = 0 };
	edge_txn_begin_read(es, &txn);
	edge_zone_get(&txn, apex, &meta);
	edge_txn_abort(&txn);
	return meta.serial;
}

/* One version of `zone` adding owner `label`.zone A; fills *touch. */
static void add_version(records_store_t *rs, records_zone_t *zone,
                        const char *label, builder_touch_t *touch)
{
	char text[KNOT_DNAME_TXT_MAXLEN + 64];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	snprintf(text, sizeof(text), "%s.%s", label, zone->name);
	knot_dname_from_str(owner, text, sizeof(owner));
	uint8_t rdata[4] = { 192, 0, 2, 9 };
	records_record_t rec = { .owner = owner, .type = KNOT_RRTYPE_A,
	                         .ttl = 60, .rdata = rdata, .rdata_len = 4 };
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_zone_bump(rs, zone), ZC_EOK);
	CHECK_EQ(records_record_insert(rs, zone, &rec), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	if (touch != NULL) {
		memset(touch, 0, sizeof(*touch));
		touch->zone_id = zone->id;
		touch->version = zone->serial;
		memcpy(touch->apex, zone->apex, knot_dname_size(zone->apex));
		touch->okey_len = strlen(label) + 1;
		memcpy(touch->okey, label, touch->okey_len);
	}
}

typedef struct {
	int calls;
	int64_t zone_id;
	int error;
} failed_t;

static void on_failed(const builder_touch_t *node, int error, void *ctx)
{
	failed_t *f = ctx;
	f->calls++;
	f->zone_id = node->zone_id;
	f->error = error;
}

/* builder_record_build() of zones a and b, b failing. */
static void nested(records_store_t *rs, edge_store_t *es, records_zone_t *a,
                   records_zone_t *b)
{
	uint32_t b_serial = edge_serial(es, b->apex);
	builder_touch_t t[2];
	add_version(rs, a, "n1", &t[0]);
	add_version(rs, b, "n1", &t[1]);
	set_failing("b.\n");
	builder_stats_t st;
	/* Without a callback, b's failure fails it all: nothing written. */
	CHECK_EQ(builder_record_build(rs, es, t, 2, &st, NULL, NULL),
	         ZC_EINJECTED);
	CHECK(!edge_has(es, a->id, "n1"));
	/* With one, a is committed and b rolled back alone. */
	failed_t f = { 0 };
	CHECK_EQ(builder_record_build(rs, es, t, 2, &st, on_failed, &f), ZC_EOK);
	CHECK_EQ(f.calls, 1);
	CHECK_EQ(f.zone_id, b->id);
	CHECK_EQ(f.error, ZC_EINJECTED);
	CHECK(edge_has(es, a->id, "n1"));
	CHECK_EQ(edge_serial(es, a->apex), a->serial);
	CHECK(!edge_has(es, b->id, "n1")); /* Written, then rolled back. */
	CHECK_EQ(edge_serial(es, b->apex), b_serial);
	set_failing("");
}

/* The passes: quarantine, skip, release. */
static void passes(records_store_t *rs, edge_store_t *es, records_zone_t *a,
                   records_zone_t *b)
{
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	uint32_t b_good = edge_serial(es, b->apex);
	set_failing("b.\n");
	add_version(rs, a, "p1", NULL);
	add_version(rs, b, "p1", NULL);
	add_version(rs, a, "p2", NULL);
	/* b fails: not an error of the pass; a goes on. */
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK(edge_has(es, a->id, "p2"));
	CHECK_EQ(edge_serial(es, a->apex), a->serial);
	CHECK(!edge_has(es, b->id, "p1"));
	CHECK_EQ(edge_serial(es, b->apex), b_good);
	edge_quarantine_t q;
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), ZC_EOK);
	CHECK(strstr(q.reason, "injected") != NULL);
	CHECK_EQ(q.serial, b_good);
	CHECK_EQ(q.code, ZC_EINJECTED);
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)a->id, &q), KNOT_ENOENT);
	/* Still failing: a catch-up (a start) retries, b stays quarantined. */
	add_version(rs, b, "p2", NULL);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), ZC_EOK);
	CHECK(q.attempts >= 2);
	CHECK(!edge_has(es, b->id, "p2"));
	/* A retry request is recorded for the running builder. */
	uint32_t attempts = 0;
	CHECK_EQ(builder_quarantine_request_retry(es, (uint64_t)b->id,
	                                          &attempts), ZC_EOK);
	CHECK_EQ(attempts, q.attempts);
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), ZC_EOK);
	CHECK(q.flags & EDGE_QUARANTINE_RETRY);
	CHECK_EQ(builder_quarantine_request_retry(es, (uint64_t)a->id, NULL),
	         KNOT_ENOENT);
	/* Fixed: the next start releases b with everything it skipped. */
	set_failing("");
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), KNOT_ENOENT);
	CHECK(edge_has(es, b->id, "p1"));
	CHECK(edge_has(es, b->id, "p2"));
	CHECK_EQ(edge_serial(es, b->apex), b->serial);
	CHECK_EQ(builder_verify(rs, es, b->apex, NULL, NULL), 0);
	CHECK_EQ(builder_verify(rs, es, a->apex, NULL, NULL), 0);
}

/* A whole build (the CLI's after an import) ends a quarantine. */
static void full_build_releases(records_store_t *rs, edge_store_t *es,
                                records_zone_t *b)
{
	set_failing("b.\n");
	add_version(rs, b, "f1", NULL);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	edge_quarantine_t q;
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), ZC_EOK);
	CHECK(builder_full_build(rs, es, b->apex, NULL, NULL, NULL) ==
	      ZC_EINJECTED);
	set_failing("");
	CHECK_EQ(builder_full_build(rs, es, b->apex, NULL, NULL, NULL), ZC_EOK);
	CHECK_EQ(builder_quarantine_get(es, (uint64_t)b->id, &q), KNOT_ENOENT);
	CHECK(edge_has(es, b->id, "f1"));
}

static void store_wide(void)
{
	static const int wide[] = { -ENOSPC, -EROFS, -EACCES, -EIO, -ENOMEM,
	                            ZC_EMAPFULL, ZC_EBUSY, ZC_ESQL, ZC_ELMDB,
	                            ZC_EUNAVAILABLE, ZC_EINDOUBT, ZC_ETRIMMED };
	static const int own[] = { ZC_EFORMAT, ZC_ETOOBIG, ZC_ENAMEKEY,
	                           ZC_EINJECTED, ZC_EZONEFILE, ZC_ENOSPACE,
	                           KNOT_ESPACE, KNOT_EMALF, KNOT_EINVAL };
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
		CHECK(builder_error_is_store_wide(wide[i]));
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		CHECK(!builder_error_is_store_wide(own[i]));
	}
}

int main(void)
{
	const char *dir = test_tmpdir();
	snprintf(fault_path, sizeof(fault_path), "%s/failing-zones", dir);
	set_failing("");
	setenv("ZONECAST_FAULT_BUILD", fault_path, 1);
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "a.", zone_text), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "b.", zone_text), ZC_EOK);
	CHECK_EQ(builder_catch_up(rs, es, NULL), ZC_EOK);
	records_zone_t a, b;
	CHECK_EQ(records_zone_find(rs, (const uint8_t *)"\x01" "a\x00", &a),
	         ZC_EOK);
	CHECK_EQ(records_zone_find(rs, (const uint8_t *)"\x01" "b\x00", &b),
	         ZC_EOK);
	nested(rs, es, &a, &b);
	passes(rs, es, &a, &b);
	full_build_releases(rs, es, &b);
	store_wide();
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
