/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The NOTIFY sender's per-secondary state: the table of targets (each
 * address and key once, with the count of slots naming it), each zone's
 * slot per target (the last serial notified, the NOTIFY in flight), and
 * per target the NOTIFYs in flight, by id, that its responses are matched
 * against. A zone's slots follow its targets when they change
 * (notify_zone_retarget()).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "transfer/notify_state.h"

bool notify_same_addr(const struct sockaddr_storage *a,
                      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family) {
		return false;
	}
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

static bool same_target(const secondary_notify_t *a,
                        const secondary_notify_t *b)
{
	return notify_same_addr(&a->addr, &b->addr) &&
	       a->has_key == b->has_key &&
	       (!a->has_key || knot_dname_is_equal(a->key, b->key));
}

/* The index of the target, added to the table when new, with one more
 * user (the caller's); -1 without memory. */
long notify_target_acquire(notify_t *n, const secondary_notify_t *spec)
{
	long free_slot = -1;
	for (size_t i = 0; i < n->target_count; i++) {
		notify_target_t *tg = &n->targets[i];
		if (tg->users > 0 && same_target(&tg->spec, spec)) {
			tg->users++;
			return (long)i;
		}
		if (tg->users == 0 && free_slot < 0) {
			free_slot = (long)i;
		}
	}
	if (free_slot < 0) {
		if (n->target_count == n->target_cap) {
			size_t cap = n->target_cap ? n->target_cap * 2 : 16;
			notify_target_t *grown =
				realloc(n->targets, cap * sizeof(*grown));
			if (grown == NULL) {
				return -1;
			}
			n->targets = grown;
			n->target_cap = cap;
		}
		free_slot = (long)n->target_count++;
	} else {
		free(n->targets[free_slot].flights);
	}
	notify_target_t *tg = &n->targets[free_slot];
	memset(tg, 0, sizeof(*tg));
	tg->spec = *spec;
	tg->users = 1;
	secondary_notify_format(spec, true, tg->name, sizeof(tg->name));
	return free_slot;
}

/* Forgets the flight of a slot, if any. */
void notify_flight_drop(notify_t *n, notify_zone_t *zone, uint32_t slot)
{
	notify_target_t *tg = &n->targets[zone->slots[slot].target];
	for (size_t i = 0; i < tg->flight_count; i++) {
		if (tg->flights[i].zone == zone && tg->flights[i].slot == slot) {
			tg->flights[i] = tg->flights[--tg->flight_count];
			n->backlog = true; /* A flight is free. */
			return;
		}
	}
}

bool notify_flight_add(notify_t *n, notify_zone_t *zone, uint32_t slot)
{
	notify_target_t *tg = &n->targets[zone->slots[slot].target];
	if (tg->flight_count == tg->flight_cap) {
		size_t cap = tg->flight_cap ? tg->flight_cap * 2 : 8;
		notify_flight_t *grown =
			realloc(tg->flights, cap * sizeof(*grown));
		if (grown == NULL) {
			return false;
		}
		tg->flights = grown;
		tg->flight_cap = cap;
	}
	tg->flights[tg->flight_count++] = (notify_flight_t) {
		.zone = zone, .slot = slot, .id = zone->slots[slot].id };
	return true;
}

/* A slot leaves its target: counts and refusal state follow. */
static void slot_release(notify_t *n, notify_zone_t *zone, uint32_t slot)
{
	notify_slot_t *s = &zone->slots[slot];
	notify_target_t *tg = &n->targets[s->target];
	if (s->in_flight) {
		notify_flight_drop(n, zone, slot);
	}
	if (s->refused) {
		tg->refused--;
	}
	tg->users--;
}

/* The first of the zone's own targets (zone_targets is sorted by zone
 * id); zone_target_count when it has none. */
static size_t zone_targets_begin(const notify_t *n, int64_t zone_id)
{
	size_t lo = 0, hi = n->zone_target_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (n->zone_targets[mid].zone_id < zone_id) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/*
 * Gives the zone one slot per target it has now: the server-wide ones and
 * its own. A slot of a target it keeps keeps its state (the last serial
 * notified), minus the NOTIFY in flight, which is sent again; a new
 * target's slot notifies the current serial at the next scan.
 */
int notify_zone_retarget(notify_t *n, notify_zone_t *zone)
{
	size_t first = zone_targets_begin(n, zone->zone_id), own = 0;
	while (first + own < n->zone_target_count &&
	       n->zone_targets[first + own].zone_id == zone->zone_id) {
		own++;
	}
	size_t cap = n->global_count + own;
	notify_slot_t *slots = calloc(cap ? cap : 1, sizeof(*slots));
	if (slots == NULL) {
		return KNOT_ENOMEM;
	}
	size_t count = 0;
	for (size_t t = 0; t < n->global_count; t++) {
		n->targets[t].users++;
		slots[count++].target = (uint32_t)t;
	}
	for (size_t i = 0; i < own; i++) {
		const secondary_notify_t *spec = &n->zone_targets[first + i].spec;
		long t = notify_target_acquire(n, spec);
		bool dup = t < 0;
		for (size_t j = 0; j < count && !dup; j++) {
			dup = slots[j].target == (uint32_t)t;
		}
		if (dup && t >= 0) {
			n->targets[t].users--; /* Listed twice. */
		} else if (!dup) {
			slots[count++].target = (uint32_t)t;
		}
	}
	for (size_t i = 0; i < count; i++) {
		for (uint32_t s = 0; s < zone->slot_count; s++) {
			const notify_slot_t *old = &zone->slots[s];
			if (old->target != slots[i].target) {
				continue;
			}
			slots[i].has_done = old->has_done;
			slots[i].done_serial = old->done_serial;
			slots[i].refused = old->refused;
			n->targets[old->target].refused += old->refused;
		}
	}
	for (uint32_t s = 0; s < zone->slot_count; s++) {
		slot_release(n, zone, s);
	}
	free(zone->slots);
	zone->slots = slots;
	zone->slot_count = count;
	return ZC_EOK;
}

notify_zone_t *notify_zone_new(notify_t *n, const edge_zone_t *z)
{
	notify_zone_t *zone = calloc(1, sizeof(*zone) + z->apex_len);
	if (zone == NULL) {
		return NULL;
	}
	zone->serial = z->serial;
	zone->zone_id = (int64_t)z->zone_id;
	zone->apex = (uint8_t *)(zone + 1);
	memcpy(zone->apex, z->apex, z->apex_len);
	if (notify_zone_retarget(n, zone) != ZC_EOK) {
		free(zone);
		return NULL;
	}
	return zone;
}

/* Forgets the zone's NOTIFYs in flight, then frees it. */
void notify_zone_free(notify_t *n, notify_zone_t *zone)
{
	for (uint32_t s = 0; s < zone->slot_count; s++) {
		slot_release(n, zone, s);
	}
	free(zone->slots);
	free(zone);
}

bool notify_target_listed(const notify_t *n, const secondary_notify_t *spec)
{
	for (size_t t = 0; t < n->target_count; t++) {
		if (same_target(&n->targets[t].spec, spec)) {
			return true;
		}
	}
	return false;
}
