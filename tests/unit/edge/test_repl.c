/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Replication log: every write transaction of a recording store, read back
 * from the outbox and applied commit by commit to another store, leaves
 * that store equal to the first (digest); so does a snapshot; ops larger
 * than a part straddle parts; nested transactions join their parent's
 * commit or vanish; keysets travel as opaque values; nothing is recorded
 * while recording is off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libknot/errcode.h>

#include "common/error.h"
#include "edge/codec.h"
#include "edge/edge.h"
#include "edge/internal.h"
#include "edge/repl.h"
#include "tests/unit/test.h"

static edge_store_t *open_store(const char *base, const char *name)
{
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	if (mkdir(dir, 0700) != 0) {
		perror("mkdir");
		exit(1);
	}
	edge_store_t *es = NULL;
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	return es;
}

/* A node value as the codec writes it: version, flags, seq, one TXT
 * RRset whose rdata hold about `pad` bytes (in rdata of at most 60,000). */
static size_t node_val(uint8_t *buf, uint64_t seq, size_t pad)
{
	int len = edge_node_encode(buf, 64, 0, seq, NULL, 0);
	uint16_t rrs = (uint16_t)(pad / 60000 + 1);
	buf[len - 1] = 1; /* one RRset */
	uint8_t *p = buf + len;
	*p++ = 0; *p++ = 16;                       /* TXT */
	*p++ = 0; *p++ = 0; *p++ = 0x0e; *p++ = 0x10; /* TTL 3600 */
	*p++ = (uint8_t)(rrs >> 8); *p++ = (uint8_t)rrs;
	for (uint16_t i = 0; i < rrs; i++) {
		size_t n = i + 1 < rrs ? 60000 : pad % 60000;
		*p++ = (uint8_t)(n >> 8); *p++ = (uint8_t)n;
		memset(p, 0x5a, n);
		p += n;
	}
	return (size_t)(p - buf);
}

static void write_some(edge_store_t *es, unsigned round)
{
	static uint8_t val[2 * EDGE_REPL_PART_MAX + 4096];
	edge_txn_t txn = { 0 };
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	edge_zone_t zone = { .zone_id = 1 + round % 3, .seq = round,
	                     .serial = round };
	knot_dname_from_str(zone.apex, round % 3 == 0 ? "a.test." :
	                    round % 3 == 1 ? "b.test." : "c.test.",
	                    sizeof(zone.apex));
	zone.apex_len = (uint8_t)knot_dname_size(zone.apex);
	zone.soa_len = 22; /* Two root names and five zero fields. */
	CHECK_EQ(edge_txn_put_zone(&txn, &zone), ZC_EOK);
	for (unsigned i = 0; i < 50 + round * 7; i++) {
		uint8_t rel[8] = { 'n', (uint8_t)(i >> 8), (uint8_t)i, 0 };
		size_t len = node_val(val, round + 1, (i * 37 + round) % 900);
		CHECK_EQ(edge_txn_put_node(&txn, zone.zone_id, rel, 4, val, len),
		         ZC_EOK);
	}
	if (round % 4 == 1) {
		uint8_t rel[4] = { 'n', 0, 3, 0 };
		CHECK_EQ(edge_txn_del_node(&txn, zone.zone_id, rel, 4, round + 1),
		         ZC_EOK);
	}
	if (round % 5 == 2) {
		/* Larger than two parts: straddles three. */
		uint8_t rel[4] = { 'g', 'i', 'a', 0 };
		size_t len = node_val(val, round + 1, 2 * EDGE_REPL_PART_MAX + 100);
		CHECK_EQ(edge_txn_put_node(&txn, zone.zone_id, rel, 4, val, len),
		         ZC_EOK);
	}
	if (round % 3 == 0) {
		CHECK_EQ(edge_txn_put_keys(&txn, zone.zone_id, (const uint8_t *)
		                           "keyset", 6), ZC_EOK);
	}
	if (round == 7) {
		CHECK_EQ(edge_txn_del_zone(&txn, zone.apex, zone.zone_id), ZC_EOK);
	}
	if (round == 9) {
		CHECK_EQ(edge_txn_clear(&txn), ZC_EOK);
	}
	CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
}

typedef struct {
	edge_store_t *to;
	edge_applier_t ap;
	bool open;
	uint64_t epoch, last_commit;
	uint32_t last_part;
	int commits, bad;
} apply_ctx_t;

static int apply_part(const edge_repl_part_t *p, void *arg)
{
	apply_ctx_t *c = arg;
	if (!c->open) {
		if (p->part != 0 || edge_apply_begin(c->to, &c->ap) != ZC_EOK) {
			c->bad++;
			return 1;
		}
		c->open = true;
	}
	if (edge_apply_feed(&c->ap, p->data, p->len) != ZC_EOK) {
		c->bad++;
	}
	c->last_commit = p->commit;
	c->last_part = p->part;
	if (p->flags & EDGE_REPL_FINAL) {
		if (edge_apply_finish(&c->ap, c->epoch, p->commit, 0) != ZC_EOK) {
			c->bad++;
		}
		c->open = false;
		c->commits++;
	}
	return 0;
}

static void check_equal(edge_store_t *a, edge_store_t *b)
{
	uint64_t da, db, na, nb;
	CHECK_EQ(edge_repl_digest(a, &da, &na), ZC_EOK);
	CHECK_EQ(edge_repl_digest(b, &db, &nb), ZC_EOK);
	CHECK_EQ(na, nb);
	CHECK(da == db);
}

/* Applies one commit of a single forged PUT into the nodes table (as a
 * publisher that should not be one could send it); the feed's result,
 * the commit aborted. */
static int apply_forged_put(edge_store_t *es, const uint8_t *key,
                            size_t klen, const uint8_t *val, size_t vlen)
{
	static uint8_t msg[1024];
	size_t m = 0;
	msg[m++] = EDGE_OP_PUT;
	msg[m++] = EDGE_TABLE_NODES;
	msg[m++] = (uint8_t)(klen >> 8);
	msg[m++] = (uint8_t)klen;
	msg[m++] = 0;
	msg[m++] = 0;
	msg[m++] = (uint8_t)(vlen >> 8);
	msg[m++] = (uint8_t)vlen;
	memcpy(msg + m, key, klen);
	m += klen;
	memcpy(msg + m, val, vlen);
	m += vlen;
	edge_applier_t ap;
	CHECK_EQ(edge_apply_begin(es, &ap), ZC_EOK);
	int ret = edge_apply_feed(&ap, msg, m);
	edge_apply_abort(&ap);
	return ret;
}

int main(void)
{
	const char *base = test_tmpdir();
	edge_store_t *primary = open_store(base, "primary");
	edge_store_t *edge = open_store(base, "edge");
	edge_store_t *boot = open_store(base, "boot");

	/* Off: nothing recorded. */
	write_some(primary, 0);
	edge_repl_pos_t pos;
	CHECK_EQ(edge_repl_pos(primary, &pos), ZC_EOK);
	CHECK(!pos.on);
	CHECK_EQ(pos.commit, 0);

	/* On: a new epoch; the edge starts from a snapshot of what is there. */
	CHECK_EQ(edge_repl_enable(primary, true, &pos), ZC_EOK);
	CHECK(pos.on && pos.epoch != 0);
	apply_ctx_t c = { .to = edge, .epoch = pos.epoch };
	edge_repl_pos_t snap;
	CHECK_EQ(edge_repl_snapshot(primary, &snap, apply_part, &c), ZC_EOK);
	CHECK_EQ(snap.commit, 0);
	CHECK_EQ(c.commits, 1);
	check_equal(primary, edge);

	for (unsigned round = 1; round <= 12; round++) {
		write_some(primary, round);
		/* A transaction of meta writes only is not a commit. */
		edge_txn_t txn = { 0 };
		CHECK_EQ(edge_txn_begin_write(primary, &txn), ZC_EOK);
		CHECK_EQ(edge_meta_put(&txn, "applied_seq", round), ZC_EOK);
		CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
	}
	CHECK_EQ(edge_repl_pos(primary, &pos), ZC_EOK);
	CHECK_EQ(pos.commit, 12);
	c.commits = 0;
	int n = edge_repl_outbox_read(primary, 0, UINT32_MAX, 1000000,
	                              apply_part, &c);
	CHECK(n > 12); /* The giant nodes took several parts. */
	CHECK_EQ(c.commits, 12);
	CHECK_EQ(c.bad, 0);
	check_equal(primary, edge);
	uint64_t epoch, commit, seq;
	CHECK_EQ(edge_applied_pos(edge, &epoch, &commit, &seq), ZC_EOK);
	CHECK(epoch == pos.epoch);
	CHECK_EQ(commit, 12);

	/* Reading on from a position skips what was read; trimming drops. */
	CHECK_EQ(edge_repl_outbox_read(primary, c.last_commit, c.last_part, 10,
	                               apply_part, &c), 0);
	CHECK_EQ(edge_repl_outbox_trim(primary, 6, UINT32_MAX), ZC_EOK);
	apply_ctx_t rest = { .to = boot, .epoch = pos.epoch };
	edge_repl_outbox_read(primary, 0, UINT32_MAX, 1000000, apply_part, &rest);
	CHECK_EQ(rest.commits, 6);

	/* A snapshot equals the log's result. */
	apply_ctx_t s = { .to = boot, .epoch = pos.epoch };
	CHECK_EQ(edge_repl_snapshot(primary, &snap, apply_part, &s), ZC_EOK);
	CHECK_EQ(snap.commit, 12);
	CHECK_EQ(s.bad, 0);
	check_equal(primary, boot);

	/* A staged build: invisible until committed, then live at once, and
	 * the edge follows (STAGE_APPLY is replayed there). */
	{
		static uint8_t val[256];
		edge_txn_t txn = { 0 };
		uint8_t rel[4] = { 's', 't', 'g', 0 }, old[4] = { 'n', 0, 5, 0 };
		CHECK_EQ(edge_txn_begin_write(primary, &txn), ZC_EOK);
		size_t len = node_val(val, 100, 10);
		CHECK_EQ(edge_txn_stage_put(&txn, 3, rel, 4, val, len), ZC_EOK);
		CHECK_EQ(edge_txn_stage_del(&txn, 3, old, 4, 100), ZC_EOK);
		CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
		const uint8_t *got;
		size_t got_len;
		CHECK_EQ(edge_txn_begin_read(primary, &txn), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 3, rel, 4, &got, &got_len), KNOT_ENOENT);
		CHECK_EQ(edge_node_get(&txn, 3, old, 4, &got, &got_len), ZC_EOK);
		edge_txn_abort(&txn);
		CHECK_EQ(edge_txn_begin_write(primary, &txn), ZC_EOK);
		CHECK_EQ(edge_txn_stage_commit(&txn, 3), ZC_EOK);
		CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
		CHECK_EQ(edge_txn_begin_read(primary, &txn), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 3, rel, 4, &got, &got_len), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 3, old, 4, &got, &got_len), KNOT_ENOENT);
		edge_txn_abort(&txn);
		c.commits = 0;
		edge_repl_outbox_read(primary, c.last_commit, c.last_part, 100,
		                      apply_part, &c);
		CHECK_EQ(c.commits, 2);
		CHECK_EQ(c.bad, 0);
		check_equal(primary, edge);
	}

	/* Nested transactions (one zone's build rolled back in a pass): a
	 * committed child's ops, even larger than a part, go with the parent's
	 * commit; an aborted child's vanish; one commit of the log. */
	{
		static uint8_t val[2 * EDGE_REPL_PART_MAX + 4096];
		edge_txn_t txn = { 0 }, child = { 0 };
		uint8_t kept[4] = { 'k', 'p', 't', 0 }, gone[4] = { 'g', 'o', 'n', 0 };
		uint8_t big[4] = { 'b', 'i', 'g', 0 };
		CHECK_EQ(edge_txn_begin_write(primary, &txn), ZC_EOK);
		size_t len = node_val(val, 200, 10);
		CHECK_EQ(edge_txn_put_node(&txn, 4, kept, 4, val, len), ZC_EOK);
		CHECK_EQ(edge_txn_begin_nested(&txn, &child), ZC_EOK);
		CHECK_EQ(edge_txn_put_node(&child, 5, gone, 4, val, len), ZC_EOK);
		edge_txn_abort(&child);
		CHECK_EQ(edge_txn_begin_nested(&txn, &child), ZC_EOK);
		len = node_val(val, 200, 2 * EDGE_REPL_PART_MAX + 100);
		CHECK_EQ(edge_txn_put_node(&child, 6, big, 4, val, len), ZC_EOK);
		CHECK_EQ(edge_txn_commit(&child), ZC_EOK);
		CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
		const uint8_t *got;
		size_t got_len;
		CHECK_EQ(edge_txn_begin_read(primary, &txn), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 5, gone, 4, &got, &got_len), KNOT_ENOENT);
		CHECK_EQ(edge_node_get(&txn, 6, big, 4, &got, &got_len), ZC_EOK);
		edge_txn_abort(&txn);
		c.commits = 0;
		edge_repl_outbox_read(primary, c.last_commit, c.last_part, 100,
		                      apply_part, &c);
		CHECK_EQ(c.commits, 1);
		CHECK_EQ(c.bad, 0);
		check_equal(primary, edge);
		CHECK_EQ(edge_txn_begin_read(edge, &txn), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 4, kept, 4, &got, &got_len), ZC_EOK);
		CHECK_EQ(edge_node_get(&txn, 5, gone, 4, &got, &got_len), KNOT_ENOENT);
		edge_txn_abort(&txn);
	}

	/* Keysets replicate as opaque values: a version-2 keyset, one in the
	 * unmarked form written before version 2, and one of a version this
	 * zonecast does not know all reach the edge byte for byte (the edge's
	 * signer reads them, not the log), in the log and in a snapshot. */
	{
		static const uint8_t pem[] = "-----BEGIN PRIVATE KEY-----\n";
		edge_keyset_t ks = { .count = 1, .keys = { {
			.flags = 257, .algorithm = 13, .active = true, .pem = pem,
			.pem_len = sizeof(pem) - 1 } } };
		uint8_t v2[128], v1[128], v9[128];
		int v2_len = edge_keyset_encode(v2, sizeof(v2), &ks);
		CHECK(v2_len > 0);
		memcpy(v1, v2 + 2, (size_t)v2_len - 2); /* No version, no count. */
		memcpy(v9, v2, (size_t)v2_len);
		v9[0] = 9;
		const struct { uint64_t zone; const uint8_t *val; size_t len; }
		sets[] = { { 7, v2, (size_t)v2_len }, { 8, v1, (size_t)v2_len - 2 },
		           { 9, v9, (size_t)v2_len } };
		edge_txn_t txn = { 0 };
		CHECK_EQ(edge_txn_begin_write(primary, &txn), ZC_EOK);
		for (unsigned i = 0; i < 3; i++) {
			CHECK_EQ(edge_txn_put_keys(&txn, sets[i].zone, sets[i].val,
			                           sets[i].len), ZC_EOK);
		}
		CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
		c.commits = 0;
		edge_repl_outbox_read(primary, c.last_commit, c.last_part, 100,
		                      apply_part, &c);
		CHECK_EQ(c.commits, 1);
		CHECK_EQ(c.bad, 0);
		check_equal(primary, edge);
		apply_ctx_t sk = { .to = boot, .epoch = pos.epoch };
		CHECK_EQ(edge_repl_snapshot(primary, &snap, apply_part, &sk),
		         ZC_EOK);
		CHECK_EQ(sk.bad, 0);
		check_equal(primary, boot);
		edge_store_t *stores[] = { edge, boot };
		for (unsigned st = 0; st < 2; st++) {
			CHECK_EQ(edge_txn_begin_read(stores[st], &txn), ZC_EOK);
			for (unsigned i = 0; i < 3; i++) {
				const uint8_t *got = NULL;
				size_t got_len = 0;
				CHECK_EQ(edge_keys_get(&txn, sets[i].zone, &got,
				                       &got_len), ZC_EOK);
				CHECK_EQ(got_len, sets[i].len);
				CHECK(got != NULL &&
				      memcmp(got, sets[i].val, sets[i].len) == 0);
				edge_keyset_t out;
				CHECK_EQ(edge_keyset_decode(got, got_len, &out),
				         i < 2 ? ZC_EOK : ZC_EVERSION);
			}
			edge_txn_abort(&txn);
		}
	}

	/* A forged node from the log whose flags do not say what its RRsets
	 * are (DNAME flagged, a TXT only: the server read the missing DNAME
	 * and crashed, on every edge, after every restart) is refused with
	 * its commit, and nothing of the commit is stored. */
	{
		static uint8_t val[256];
		size_t vlen = node_val(val, 500, 4);
		uint8_t key[11] = { 0, 0, 0, 0, 0, 0, 0, 1, 'f', 'd', 0 };
		for (uint8_t bad = 1; bad <= 2; bad++) {
			val[1] = bad == 1 ? EDGE_NODE_DNAME : EDGE_NODE_CNAME;
			CHECK_EQ(apply_forged_put(edge, key, sizeof(key), val, vlen),
			         ZC_EFORMAT);
			edge_txn_t txn = { 0 };
			const uint8_t *got;
			size_t got_len;
			CHECK_EQ(edge_txn_begin_read(edge, &txn), ZC_EOK);
			CHECK_EQ(edge_node_get(&txn, 1, key + 8, 3, &got, &got_len),
			         KNOT_ENOENT);
			edge_txn_abort(&txn);
		}
		check_equal(primary, edge);
		/* The apex flag says where the node is: on the zone's own key
		 * (the zone id alone) and nowhere else. */
		for (int bad = 0; bad < 2; bad++) {
			vlen = node_val(val, 501, 4);
			val[1] = bad ? EDGE_NODE_APEX : 0;
			CHECK_EQ(apply_forged_put(edge, key, bad ? 11 : 8, val, vlen),
			         ZC_EFORMAT);
		}
		check_equal(primary, edge);
	}

	/* Off empties the outbox; on again is a new epoch. */
	uint64_t old_epoch = pos.epoch;
	CHECK_EQ(edge_repl_enable(primary, false, &pos), ZC_EOK);
	CHECK_EQ(edge_repl_outbox_read(primary, 0, UINT32_MAX, 10, apply_part,
	                               &s), 0);
	CHECK_EQ(edge_repl_enable(primary, true, &pos), ZC_EOK);
	CHECK(pos.epoch != old_epoch);
	CHECK_EQ(pos.commit, 0);

	edge_close(primary);
	edge_close(edge);
	edge_close(boot);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	CHECK_EQ(system(cmd), 0);
	return test_done();
}
