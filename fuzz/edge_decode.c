/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: edge store value decoding (nodes, zone metadata,
 * quarantine entries and DNSSEC keysets, a keyset then loaded by the
 * signer as the DNS server loads it). */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "common/arena.h"
#include "edge/codec.h"
#include "fuzz/fuzz.h"
#include "signer/signer.h"

static zc_arena_t arena;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	zc_arena_init(&arena, 64 * 1024);
	return 0;
}

/* A decoded keyset re-encodes as version 2 with the same keys (to the
 * same bytes when it was version 2) and loads in the signer or not, with
 * nothing leaked either way. */
static void check_keyset(const uint8_t *data, size_t size)
{
	static const uint8_t apex[] = "\x07" "example\x00";
	edge_keyset_t ks, again;
	if (edge_keyset_decode(data, size, &ks) != 0) {
		return;
	}
	size_t len = edge_keyset_size(&ks);
	uint8_t *buf = malloc(len);
	if (buf == NULL) {
		return;
	}
	if (edge_keyset_encode(buf, len, &ks) != (int)len ||
	    (ks.version == EDGE_KEYSET_VERSION &&
	     (len != size || memcmp(buf, data, size) != 0)) ||
	    edge_keyset_decode(buf, len, &again) != 0 ||
	    again.count != ks.count) {
		__builtin_trap();
	}
	for (unsigned i = 0; i < ks.count; i++) {
		if (again.keys[i].flags != ks.keys[i].flags ||
		    again.keys[i].algorithm != ks.keys[i].algorithm ||
		    again.keys[i].active != ks.keys[i].active ||
		    again.keys[i].pem_len != ks.keys[i].pem_len ||
		    memcmp(again.keys[i].pem, ks.keys[i].pem,
		           ks.keys[i].pem_len) != 0) {
			__builtin_trap();
		}
	}
	signer_keyset_t loaded;
	if (signer_keyset_load(apex, &ks, &loaded) == 0) {
		signer_keyset_free(&loaded);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t owner[] = "\x03www\x07" "example\x00";
	edge_node_t node;
	zc_arena_reset(&arena);
	if (edge_node_decode(data, size, owner, zc_arena_mm(&arena), &node) == 0) {
		/* A decoded node must re-encode to the same bytes. */
		size_t len = edge_node_size(node.rrsets, node.count);
		uint8_t *buf = zc_arena_alloc(&arena, len);
		if (buf != NULL && len == size) {
			edge_node_encode(buf, len, node.flags, node.seq, node.rrsets,
			                 node.count);
		}
	}
	edge_zone_t zone;
	if (edge_zone_decode(data, size, &zone) == 0) {
		(void)edge_zone_soa_minimum(&zone);
	}
	edge_quarantine_t q;
	if (edge_quarantine_decode(data, size, &q) == 0) {
		/* A decoded entry must re-encode to the same bytes. */
		uint8_t buf[sizeof(q) + 64];
		int len = edge_quarantine_encode(buf, sizeof(buf), &q);
		if (len != (int)size || memcmp(buf, data, size) != 0) {
			__builtin_trap();
		}
	}
	check_keyset(data, size);
	check_keyset(data, size);
	return 0;
}
