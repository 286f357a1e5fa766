/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The net effect of one UPDATE message: the records of the zone as it was
 * that the message removed, and the records it added that are still
 * there. A message whose two lists hold the same records (a record
 * deleted and added again, a TTL moved and moved back, an RRset deleted
 * and made again whole) changed nothing, and the zone keeps its serial
 * (RFC 2136 §3.6).
 */
#ifndef ZC_UPDATE_NET_H
#define ZC_UPDATE_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "records/records.h"

typedef struct update_net_rec update_net_rec_t;

typedef struct {
	update_net_rec_t *added, *removed;
	size_t added_count, added_cap, removed_count, removed_cap;
} update_net_t;

/* Notes rec (its id given: records_record_insert() set it) as added;
 * copies it. KNOT_ENOMEM, else ZC_EOK. */
int update_net_added(update_net_t *net, const records_record_t *rec);

/* Notes the record rec (id, owner, content, comment, tags) as deleted: a
 * record the message added (its id among the added) is no longer added,
 * any other one was the zone's and is removed. KNOT_ENOMEM, else
 * ZC_EOK. */
int update_net_removed(update_net_t *net, const records_record_t *rec);

/* Whether what was removed and what was added are the same records as
 * DNS and the API's TTL see them (owner, type, TTL, rdata octet for
 * octet, whether the API shows the TTL as automatic), ids aside: rolled
 * back, the records keep their ids, comments and tags. Sorts both
 * lists. */
bool update_net_none(update_net_t *net);

/* For each record removed and one added that update_net_none() takes for
 * the same (a record deleted and added again in a message that changes
 * something else), calls relink(ctx, the removed one as it was, the
 * added one's id), unless they are one row (a TTL moved and moved back),
 * and forgets both: the caller puts the record back as it was, with its
 * id, comment and tags. Stops at relink's first error, returned. */
int update_net_relink(update_net_t *net,
                      int (*relink)(void *ctx, const records_record_t *orig,
                                    int64_t added_id),
                      void *ctx);

/* Forgets every record noted (the lists' room is kept). */
void update_net_clear(update_net_t *net);

void update_net_free(update_net_t *net);

#endif
