/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to builder/: one edge node assembled from records-store rows
 * (consecutive rows of one owner in type order), then encoded.
 */
#pragma once

#include <stdbool.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "dns/name.h"
#include "edge/codec.h"

typedef struct {
	zc_arena_t arena;
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	knot_rrset_t rrsets[EDGE_NODE_MAX_RRSETS];
	uint16_t count;
	bool valid;
	/* The last RRset's records, gathered (copies in the arena) and put
	 * in canonical order once it is whole: knot_rdataset_add() per
	 * record copied the growing set each time (65,600 records at one
	 * name took 69 s to build, 51 of them in the kernel). */
	knot_rdata_t **pend;
	size_t pend_count, pend_cap;
} builder_node_t;

void builder_node_init(builder_node_t *n);
void builder_node_deinit(builder_node_t *n);

/* Starts a new node (forgets the previous one). */
void builder_node_start(builder_node_t *n, const uint8_t *okey,
                        size_t okey_len, const knot_dname_t *owner);

/* Adds one record; rows must come in type order. An RRset takes the
 * lowest TTL of its records (RFC 2181 §5.2 wants one); one of more than
 * 65,535 records (what an RRset can hold) is ZC_ETOOBIG, at the add or
 * the encode. */
int builder_node_add(builder_node_t *n, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len);

/* Encodes the node stamped with seq into arena memory. */
int builder_node_encode(builder_node_t *n, uint64_t seq, uint8_t **buf,
                        size_t *len);
