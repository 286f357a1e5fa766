/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The zone-level fence of full builds run in steps: a chunked build of a
 * served zone that a newer whole build overtakes between two of its steps
 * gives up (its stage cleared) instead of moving the serial back and
 * bringing back nodes the newer build removed; the edge ends equal to a
 * full build of the records store, and an edge of a fleet that applied the
 * replication log equals it too (a skipped write recorded nothing). Zone
 * metadata older than the stored one is refused (ZC_ESTALE). A renumbering
 * (zonecast migrate, edge_txn_renumber()) caps every fence, so that a
 * build at a smaller position of the new numbering is no longer fenced
 * off, keeps what is served, and reaches the fleet's edges too.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "edge/repl.h"
#include "tests/unit/zone_fixture.h"

/* Enough nodes for several steps of STEP nodes. */
#define NODES 40
#define STEP 4

static char *zone_text(uint32_t serial, const char *prefix)
{
	size_t size = 256 + NODES * 64;
	char *text = malloc(size);
	int len = snprintf(text, size, "$TTL 300\n@ IN SOA ns hostmaster %u "
	                   "7200 900 1209600 300\n@ IN NS ns\nns IN A "
	                   "192.0.2.1\n", serial);
	for (int i = 0; i < NODES; i++) {
		len += snprintf(text + len, size - (size_t)len, "%s%02d IN A "
		                "192.0.2.%d\n", prefix, i, i + 2);
	}
	return text;
}

/* Imports text into the records store only (no build). */
static void import_only(records_store_t *rs, const uint8_t *apex,
                        const char *text)
{
	records_import_t *imp;
	CHECK_EQ(records_import_begin(rs, apex, &imp), ZC_EOK);
	zonefile_handler_t h = { .record = fixture_record,
	                         .error = fixture_error, .ctx = imp };
	CHECK_EQ(zonefile_parse_text(text, strlen(text), apex, 3600, &h), ZC_EOK);
	CHECK_EQ(records_import_check(imp, fixture_problem, NULL), 0);
	CHECK_EQ(records_import_commit(imp, NULL, NULL), ZC_EOK);
}

static uint32_t edge_serial(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t zone = { 0 };
	edge_txn_begin_read(es, &txn);
	int ret = edge_zone_get(&txn, apex, &zone);
	edge_txn_abort(&txn);
	return ret == ZC_EOK ? zone.serial : 0;
}

static edge_store_t *open_edge(const char *base, const char *name)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	CHECK_EQ(mkdir(dir, 0700), 0);
	edge_store_t *es = NULL;
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	return es;
}

/* Applies the primary's outbox to an edge, commit by commit. */
typedef struct {
	edge_store_t *to;
	edge_applier_t ap;
	bool open;
	uint64_t epoch;
	uint64_t commit; /* The last applied. */
	int bad;
} apply_ctx_t;

static int apply_part(const edge_repl_part_t *p, void *arg)
{
	apply_ctx_t *c = arg;
	if (!c->open) {
		c->bad += edge_apply_begin(c->to, &c->ap) != ZC_EOK;
		c->open = true;
	}
	c->bad += edge_apply_feed(&c->ap, p->data, p->len) != ZC_EOK;
	if (p->flags & EDGE_REPL_FINAL) {
		c->bad += edge_apply_finish(&c->ap, c->epoch, p->commit, 0) !=
		          ZC_EOK;
		c->open = false;
		c->commit = p->commit;
	}
	return 0;
}

static void check_same(edge_store_t *a, edge_store_t *b)
{
	uint64_t da, db, na, nb;
	CHECK_EQ(edge_repl_digest(a, &da, &na), ZC_EOK);
	CHECK_EQ(edge_repl_digest(b, &db, &nb), ZC_EOK);
	CHECK_EQ(na, nb);
	CHECK(da == db);
}

/* A chunked build of v2 overtaken by a whole build of v3. */
static void overtaken_build(const char *dir, records_store_t *rs,
                            edge_store_t *es, const uint8_t *apex)
{
	char *v1 = zone_text(100, "a"), *v2 = zone_text(200, "b"),
	     *v3 = zone_text(300, "c");
	CHECK_EQ(fixture_import(rs, es, "example.", v1), ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 100);

	/* The slow build: v2's snapshot, held on a connection of its own. */
	import_only(rs, apex, v2);
	records_store_t *full_rs;
	CHECK_EQ(records_open(&full_rs, dir), ZC_EOK);
	builder_job_t *job;
	CHECK_EQ(builder_full_begin(full_rs, es, apex, &job), ZC_EOK);
	CHECK_EQ(builder_full_step(job, STEP), 1);

	/* A newer version lands and is built whole between two steps. */
	CHECK_EQ(fixture_import(rs, es, "example.", v3), ZC_EOK);
	CHECK_EQ(edge_serial(es, apex), 300);

	int ret, steps = 0;
	while ((ret = builder_full_step(job, STEP)) == 1) {
		steps++;
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(steps, 0); /* It gave up at its next step. */
	builder_stats_t stats;
	builder_full_end(job, &stats);
	CHECK(stats.skipped);
	records_close(full_rs);

	/* The serial never went back and nothing of v2 came back. */
	CHECK_EQ(edge_serial(es, apex), 300);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);
	free(v1);
	free(v2);
	free(v3);
}

/* Metadata older than the stored one of the same zone is refused. */
static void stale_metadata(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta;
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_zone_get(&txn, apex, &meta), ZC_EOK);
	edge_zone_t older = meta;
	older.seq = meta.seq - 1;
	older.serial = 1;
	CHECK_EQ(edge_txn_put_zone(&txn, &older), ZC_ESTALE);
	edge_zone_t same = meta; /* The same build's seq: a serial bump. */
	same.serial = meta.serial + 1;
	CHECK_EQ(edge_txn_put_zone(&txn, &same), ZC_EOK);
	edge_zone_t other = older; /* Another zone id: a zone made anew. */
	other.zone_id = meta.zone_id + 100;
	CHECK_EQ(edge_txn_put_zone(&txn, &other), ZC_EOK);
	edge_txn_abort(&txn);
	CHECK_EQ(edge_serial(es, apex), meta.serial);
}

/* The largest seq of the zone's nodes. */
static uint64_t max_node_seq(edge_store_t *es, uint64_t zone_id)
{
	edge_txn_t txn = { 0 };
	CHECK_EQ(edge_txn_begin_read(es, &txn), ZC_EOK);
	edge_iter_t it;
	uint64_t max = 0;
	int nodes = 0;
	CHECK_EQ(edge_iter_begin(&txn, zone_id, &it), ZC_EOK);
	const uint8_t *rel, *val;
	size_t rel_len, val_len;
	while (edge_iter_next(&it, &rel, &rel_len, &val, &val_len) == 1) {
		uint8_t flags;
		uint64_t seq;
		CHECK_EQ(edge_node_peek(val, val_len, &flags, &seq), ZC_EOK);
		max = seq > max ? seq : max;
		nodes++;
	}
	edge_iter_end(&it);
	edge_txn_abort(&txn);
	CHECK(nodes > 0);
	return max;
}

/* Every fence capped at 1: the nodes and the metadata (serial kept), so
 * that metadata at seq 1 goes in again; a fence already below is kept. */
static void renumbered(edge_store_t *es, const uint8_t *apex)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta;
	CHECK_EQ(edge_txn_begin_read(es, &txn), ZC_EOK);
	CHECK_EQ(edge_zone_get(&txn, apex, &meta), ZC_EOK);
	edge_txn_abort(&txn);
	CHECK(meta.seq > 1);
	CHECK(max_node_seq(es, meta.zone_id) > 1);

	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_txn_renumber(&txn, 1), ZC_EOK);
	CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
	CHECK_EQ(max_node_seq(es, meta.zone_id), 1);
	edge_zone_t after;
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_zone_get(&txn, apex, &after), ZC_EOK);
	CHECK_EQ(after.seq, 1);
	CHECK_EQ(after.serial, meta.serial);
	after.serial = meta.serial + 1;
	CHECK_EQ(edge_txn_put_zone(&txn, &after), ZC_EOK);
	CHECK_EQ(edge_txn_renumber(&txn, 5), ZC_EOK);
	CHECK_EQ(edge_zone_get(&txn, apex, &after), ZC_EOK);
	CHECK_EQ(after.seq, 1);
	edge_txn_abort(&txn);
	CHECK_EQ(edge_serial(es, apex), meta.serial);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	edge_store_t *fleet_edge = open_edge(dir, "edge");
	edge_repl_pos_t pos;
	CHECK_EQ(edge_repl_enable(es, true, &pos), ZC_EOK);
	const uint8_t *apex = (const uint8_t *)"\x07" "example\x00";

	overtaken_build(dir, rs, es, apex);
	stale_metadata(es, apex);

	apply_ctx_t c = { .to = fleet_edge, .epoch = pos.epoch };
	CHECK(edge_repl_outbox_read(es, 0, UINT32_MAX, 1000000, apply_part,
	                            &c) > 0);
	CHECK_EQ(c.bad, 0);
	check_same(es, fleet_edge);

	renumbered(es, apex);
	CHECK(edge_repl_outbox_read(es, c.commit, UINT32_MAX, 1000000,
	                            apply_part, &c) > 0);
	CHECK_EQ(c.bad, 0);
	check_same(es, fleet_edge);

	edge_close(fleet_edge);
	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
