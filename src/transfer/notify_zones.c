/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Which zones the NOTIFY sender knows and whom each one notifies: the
 * edge store's zones, listed at each cue and merged with the known ones
 * in the store's key order (new zones added, gone ones dropped, serials
 * refreshed), and the zones' own notify targets, reloaded from the
 * records store when its secondaries version moves (checked at each cue
 * and once a second).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "transfer/notify_state.h"

/* Orders apexes as the edge store's zone keys (LF, memcmp, shorter
 * first). */
static int cmp_apex(const uint8_t *a, const uint8_t *b)
{
	uint8_t la[DNS_LF_MAXLEN], lb[DNS_LF_MAXLEN];
	size_t na = dns_name_to_lf(a, la), nb = dns_name_to_lf(b, lb);
	int c = memcmp(la, lb, na < nb ? na : nb);
	return c != 0 ? c : (na > nb) - (na < nb);
}


typedef struct {
	notify_t *n;
	notify_zone_t **list;
	size_t count, cap;
	size_t old;             /* Merge position in n->zones. */
	int error;
} listing_t;

/* Merges one listed zone with the known ones (both in key order). */
static int list_zone(const edge_zone_t *z, void *ctx)
{
	listing_t *l = ctx;
	notify_t *n = l->n;
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		notify_zone_t **list = realloc(l->list, cap * sizeof(*list));
		if (list == NULL) {
			l->error = KNOT_ENOMEM;
			return 1;
		}
		l->list = list;
		l->cap = cap;
	}
	int c = -1;
	while (l->old < n->zone_count &&
	       (c = cmp_apex(n->zones[l->old]->apex, z->apex)) < 0) {
		notify_zone_free(n, n->zones[l->old]); /* Gone from the edge. */
		n->zones[l->old++] = NULL;
	}
	notify_zone_t *zone;
	if (l->old < n->zone_count && c == 0) {
		zone = n->zones[l->old];
		n->zones[l->old++] = NULL;
		zone->zone_id = (int64_t)z->zone_id;
	} else if ((zone = notify_zone_new(n, z)) == NULL) {
		l->error = KNOT_ENOMEM;
		return 1;
	}
	zone->hold = !notify_announced_serial(n, &n->txn, z, &zone->serial);
	l->list[l->count++] = zone;
	return 0;
}

typedef struct {
	notify_zone_target_t *list;
	size_t count, cap;
	int error;
} zt_load_t;

static int load_zone_target(int64_t zone_id, records_secondary_kind_t kind,
                            const char *spec, void *ctx)
{
	zt_load_t *l = ctx;
	char err[512];
	secondary_notify_t t;
	if (kind != RECORDS_SECONDARY_NOTIFY ||
	    secondary_notify_parse(spec, &t, err, sizeof(err)) != ZC_EOK) {
		return 0; /* Checked when stored. */
	}
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		notify_zone_target_t *grown =
			realloc(l->list, cap * sizeof(*grown));
		if (grown == NULL) {
			l->error = KNOT_ENOMEM;
			return 1;
		}
		l->list = grown;
		l->cap = cap;
	}
	l->list[l->count++] = (notify_zone_target_t) { .zone_id = zone_id,
	                                               .spec = t };
	return 0;
}

/*
 * Reloads the zones' own notify targets when the records store says they
 * changed (a number that moves at each change), then gives every known
 * zone its new slots. Runs at each cue and once a second.
 */
static void reload_zone_targets(notify_t *n)
{
	n->secondaries_checked = notify_now_ms();
	uint64_t version = 0;
	int ret = notify_records_open(n);
	if (ret == ZC_EOK) {
		ret = records_secondaries_version(n->rs, &version);
	}
	if (ret != ZC_EOK || (n->secondaries_loaded &&
	                      version == n->secondaries_version)) {
		return;
	}
	zt_load_t l = { 0 };
	ret = records_secondaries_foreach(n->rs, 0, load_zone_target, &l);
	ret = ret != ZC_EOK ? ret : l.error;
	if (ret != ZC_EOK) {
		zc_warn("notify: cannot read the zones' secondaries: %s",
		        zc_strerror(ret));
		free(l.list);
		return;
	}
	free(n->zone_targets);
	n->zone_targets = l.list;
	n->zone_target_count = l.count;
	n->secondaries_version = version;
	if (n->secondaries_loaded) {
		zc_info("notify: zones' secondaries changed: %zu notify "
		        "targets of their own", l.count);
	}
	n->secondaries_loaded = true;
	for (size_t i = 0; i < n->zone_count; i++) {
		if (notify_zone_retarget(n, n->zones[i]) != ZC_EOK) {
			zc_warn("notify: out of memory");
		}
	}
	n->backlog = true;
}

/* Forgets every zone (nobody to notify). */
static void drop_zones(notify_t *n)
{
	for (size_t i = 0; i < n->zone_count; i++) {
		notify_zone_free(n, n->zones[i]);
	}
	free(n->zones);
	n->zones = NULL;
	n->zone_count = 0;
}

/* Lists the edge store's zones: new ones are added, gone ones dropped,
 * serials refreshed; then starts what is due. With no target at all,
 * nothing is listed. */
void notify_refresh(notify_t *n)
{
	reload_zone_targets(n);
	if (n->global_count == 0 && n->zone_target_count == 0) {
		drop_zones(n);
		return;
	}
	listing_t l = { .n = n };
	int ret = edge_txn_begin_read(n->edge, &n->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_foreach(&n->txn, list_zone, &l);
	}
	edge_txn_reset(&n->txn);
	ret = ret != ZC_EOK ? ret : l.error;
	size_t rest = n->zone_count - l.old;
	notify_zone_t **list = NULL;
	if (ret != ZC_EOK) {
		/* Keep the zones not listed yet: they sort after the merged
		 * ones. Dropped only if there is no memory to keep them. */
		zc_warn("notify: cannot list zones: %s", zc_strerror(ret));
		list = realloc(l.list, (l.count + rest + 1) * sizeof(*list));
	}
	if (list != NULL) {
		l.list = list;
		memcpy(l.list + l.count, n->zones + l.old, rest * sizeof(*list));
		l.count += rest;
	} else {
		for (size_t i = l.old; i < n->zone_count; i++) {
			/* Gone from the edge. */
			notify_zone_free(n, n->zones[i]);
		}
	}
	free(n->zones);
	n->zones = l.list;
	n->zone_count = l.count;
	notify_scan(n);
}
