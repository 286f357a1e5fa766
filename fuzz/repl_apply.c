/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: an edge applying a replicated log (edge/repl.h), the input
 * being what anyone allowed to publish on the txn subject could send. The
 * op stream is fed in two parts (cut where the first byte says); whatever
 * is stored must then decode and go into a DNS message without a read out
 * of bounds (a forged rdata once crashed an edge there). Keysets travel
 * unchecked (opaque values): the edge's DNS server decodes and loads them,
 * so every stored one goes through signer_keyset_decode() too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "edge/edge.h"
#include "edge/repl.h"
#include "fuzz/fuzz.h"
#include "signer/signer.h"

static edge_store_t *store;
static zc_arena_t arena;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char dir[] = "/tmp/zonecast-fuzz-repl-XXXXXX";
	if (mkdtemp(dir) == NULL || edge_open(&store, dir, (size_t)1 << 30) != 0) {
		abort();
	}
	zc_arena_init(&arena, 64 * 1024);
	return 0;
}

/* The zone's keyset, loaded as the answer path loads it (server/
 * signing.c), then freed. */
static void read_keys(edge_txn_t *txn, uint64_t zone)
{
	static const uint8_t apex[] = "\x04test";
	const uint8_t *val;
	size_t len;
	signer_keyset_t ks;
	if (edge_keys_get(txn, zone, &val, &len) == 0 &&
	    signer_keyset_decode(apex, val, len, &ks) == 0) {
		signer_keyset_free(&ks);
	}
}

/* Every stored node decodes and its RRsets go into a message; every
 * keyset is loaded. */
static void read_back(void)
{
	edge_txn_t txn = { 0 };
	if (edge_txn_begin_read(store, &txn) != 0) {
		return;
	}
	static const uint8_t owner[] = "\x01x\x04test";
	knot_pkt_t *pkt = knot_pkt_new(NULL, 65535, NULL);
	for (uint64_t zone = 0; zone < 4 && pkt != NULL; zone++) {
		edge_iter_t it;
		if (edge_iter_begin(&txn, zone, &it) != 0) {
			continue;
		}
		const uint8_t *rel, *val;
		size_t rel_len, val_len;
		while (edge_iter_next(&it, &rel, &rel_len, &val, &val_len) == 1) {
			edge_node_t node;
			zc_arena_reset(&arena);
			if (edge_node_decode(val, val_len, owner, zc_arena_mm(&arena),
			                     &node) != 0) {
				continue;
			}
			for (uint16_t i = 0; i < node.count; i++) {
				knot_pkt_clear(pkt);
				knot_pkt_put(pkt, 0, &node.rrsets[i], 0);
			}
		}
		edge_iter_end(&it);
		read_keys(&txn, zone);
	}
	knot_pkt_free(pkt);
	edge_txn_abort(&txn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	edge_applier_t ap;
	if (edge_apply_begin(store, &ap) != 0) {
		return 0;
	}
	size_t cut = size > 0 ? data[0] % (size + 1) : 0;
	int ret = edge_apply_feed(&ap, data, cut);
	if (ret == 0) {
		ret = edge_apply_feed(&ap, data + cut, size - cut);
	}
	if (ret == 0) {
		ret = edge_apply_finish(&ap, 1, 1, 1);
	} else {
		edge_apply_abort(&ap);
	}
	if (ret == 0) {
		read_back();
	}
	return 0;
}
