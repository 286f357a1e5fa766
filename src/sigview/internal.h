/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to sigview/: the journal diff (diff.c), NSEC rdata (nsec.c)
 * and bringing one zone up to date (zone.c, chain.c). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "edge/edge.h"
#include "records/records.h"
#include "signer/signer.h"
#include "sigview/db.h"
#include "sigview/sigview.h"

/* --- diff.c --- */

typedef struct {
	uint8_t *buf;
	size_t len, cap;
	size_t count;         /* Changes added, recorded or not. */
	size_t limit;
	bool overflow;        /* More than limit: not recorded. */
	int error;
} view_diff_t;

void view_diff_init(view_diff_t *d, size_t limit);
void view_diff_deinit(view_diff_t *d);
void view_diff_add(view_diff_t *d, bool added, const knot_dname_t *owner,
                   uint16_t type, uint32_t ttl, const uint8_t *rdata,
                   uint16_t rdata_len);
/* Each RR of the set. */
void view_diff_rrset(view_diff_t *d, bool added, const knot_rrset_t *rr);
/* Decodes recorded changes. */
int view_diff_foreach(const uint8_t *data, size_t len,
                      int (*cb)(const records_journal_rr_t *rr, void *ctx),
                      void *ctx);

/* --- nsec.c --- */

/* Largest NSEC rdata: a name and every window of the bitmap. */
#define VIEW_NSEC_MAX (KNOT_DNAME_MAXLEN + 256 * 34)

/* The types an NSEC lists at a node (RFC 4035 §2.3): the node's, the SOA
 * at the apex, only NS and DS at a zone cut, then RRSIG and NSEC; sorted,
 * each once. out holds EDGE_NODE_MAX_RRSETS + 4 types. */
size_t view_nsec_types(const edge_node_t *node, bool apex, bool cut,
                       uint16_t *out);

/* NSEC rdata: next (wire) and the bitmap of the sorted types. */
size_t view_nsec_rdata(const knot_dname_t *next, const uint16_t *types,
                       size_t n, uint8_t *out);

/* Whether a type is data of the signed zone (not one the view makes:
 * RRSIG, NSEC, NSEC3, NSEC3PARAM are dropped from the unsigned data). */
bool view_is_data_type(uint16_t type);

/* --- zone.c: bringing one zone up to date --- */

typedef struct {
	view_db_t *db;
	records_store_t *rs;     /* Records journal (what changed). */
	edge_txn_t *txn;         /* The edge read transaction of serial E. */
	edge_zone_t ez;          /* The edge zone at E. */
	signer_keyset_t *ks;
	zc_arena_t *arena;       /* Reset per node. */
	uint32_t now;            /* Unix seconds (tests may set it). */
	/* Set (a stop): a full pass gives up, -ECANCELED, rolled back (the
	 * next start does it again); NULL: never. */
	const atomic_bool *stop;
	/* Filled by the update. */
	uint32_t from_serial;    /* The view's serial before (0: new). */
	bool full;               /* A full pass ran. */
	size_t signatures;       /* Signatures made. */
	size_t changes;          /* RR changes recorded. */
} view_update_t;

/* Brings the zone of u->ez to its serial in one SQLite transaction of
 * u->db (opened here). */
int view_zone_update(view_update_t *u);
