/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: edge store value decoding (nodes, zone metadata and
 * quarantine entries). */
#include <string.h>
#include <libknot/dname.h>

#include "common/arena.h"
#include "edge/codec.h"
#include "fuzz/fuzz.h"

static zc_arena_t arena;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	zc_arena_init(&arena, 64 * 1024);
	return 0;
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
	return 0;
}
