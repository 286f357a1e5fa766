/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * When the NOTIFY sender sends: a slot whose serial moved starts a NOTIFY
 * at once, unless one is in flight to a target that answers (then the
 * response or the first timeout sends the newest serial: coalescing);
 * unanswered NOTIFYs are resent with the timeout doubling, up to
 * `retries` resends, then given up until the serial moves again.
 */
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "transfer/activity.h"
#include "transfer/notify_state.h"

static uint16_t next_id(notify_t *n)
{
	n->rng ^= n->rng << 13;
	n->rng ^= n->rng >> 17;
	n->rng ^= n->rng << 5;
	return (uint16_t)(n->rng >> 8);
}

/*
 * Starts a NOTIFY for the slot if its serial moved: at once when nothing
 * is in flight or the target does not answer (a new serial never waits
 * behind the resends of an older one); otherwise the response or the
 * first timeout sends it.
 */
void notify_start_slot(notify_t *n, notify_zone_t *zone, uint32_t slot)
{
	notify_slot_t *s = &zone->slots[slot];
	notify_target_t *tg = &n->targets[s->target];
	if (zone->hold) {
		return;
	}
	if (s->in_flight) {
		if (s->sent_serial == zone->serial ||
		    (tg->answers && s->tries == 1)) {
			return;
		}
		notify_flight_drop(n, zone, slot);
		s->in_flight = false;
	} else if (s->has_done && s->done_serial == zone->serial) {
		return;
	}
	if (tg->flight_count == NOTIFY_MAX_IN_FLIGHT) {
		n->backlog = true;
		return;
	}
	s->id = next_id(n);
	s->tries = 0;
	if (notify_send(n, zone, slot) != ZC_EOK) {
		return;
	}
	s->in_flight = notify_flight_add(n, zone, slot);
}

/* Starts every NOTIFY due. */
void notify_scan(notify_t *n)
{
	n->backlog = false;
	for (size_t i = 0; i < n->zone_count; i++) {
		for (uint32_t s = 0; s < n->zones[i]->slot_count; s++) {
			notify_start_slot(n, n->zones[i], s);
		}
	}
}

/* No response after the last resend: the serial counts as done (the
 * next one starts a new NOTIFY). */
static void give_up(const notify_zone_t *zone, const notify_target_t *tg,
                    notify_slot_t *s)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_info("notify: zone %s serial %u: no response from %s after %u "
	        "tries, giving up", name, s->sent_serial, tg->name, s->tries);
	zc_count(ZC_COUNT_NOTIFY_TIMEOUT);
	transfer_activity_notify(zone->apex, tg->name, s->sent_serial,
	                         s->tries, "no response");
	s->has_done = true;
	s->done_serial = s->sent_serial;
}

/* Resends or gives up NOTIFYs past their deadline; returns the time to
 * the next deadline (-1: none). */
int notify_expire(notify_t *n)
{
	int64_t now = notify_now_ms();
	int64_t next = -1;
	for (size_t t = 0; t < n->target_count; t++) {
		notify_target_t *tg = &n->targets[t];
		for (size_t i = 0; i < tg->flight_count; i++) {
			notify_zone_t *zone = tg->flights[i].zone;
			notify_slot_t *s = &zone->slots[tg->flights[i].slot];
			if (s->deadline > now) {
				if (next < 0 || s->deadline < next) {
					next = s->deadline;
				}
				continue;
			}
			tg->answers = false;
			/* RFC 1996 §3.6. A zone deleted meanwhile ends its
			 * NOTIFY here. */
			uint32_t slot = tg->flights[i].slot;
			if (s->tries <= n->retries &&
			    notify_send(n, zone, slot) == ZC_EOK) {
				if (next < 0 || s->deadline < next) {
					next = s->deadline;
				}
				continue;
			}
			if (s->tries > n->retries) {
				give_up(zone, tg, s);
			}
			s->in_flight = false;
			tg->flights[i--] = tg->flights[--tg->flight_count];
			n->backlog = true; /* A flight is free. */
		}
	}
	if (next < 0) {
		return -1;
	}
	return next <= now ? 0 : (int)(next - now > 60000 ? 60000 : next - now);
}
