/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * NOTIFY sender (RFC 1996): tells every secondary of a zone, over UDP,
 * that the zone has a new serial, as soon as the edge store serves it;
 * signed with a TSIG key (RFC 8945) when the target names one.
 *
 * Design
 *
 * One thread polls an eventfd (the cue, written by notify_on_pass() on
 * the builder's thread) and one unconnected UDP socket per address family;
 * responses are matched to NOTIFYs by source address, port and id. On a
 * cue it lists the edge store's zones and merges them with the zones it
 * knows, both sorted in the store's key order. Targets (address and key)
 * are kept once each in a table; per (zone, target) a slot holds the last
 * serial notified and the NOTIFY in flight, if any:
 *
 *   - not in flight and the zone's serial differs from the last notified:
 *     send now (RFC 1996 §3.7), with the zone's SOA read at that moment;
 *   - in flight to a target that answers: nothing until the response
 *     (§3.6, matched by id) or the first timeout, which send the newest
 *     serial: serials coalesce and at most one NOTIFY per slot is in
 *     flight;
 *   - in flight to a target that does not answer (its last NOTIFY timed
 *     out, or it never answered yet): a new serial is sent at once, as a
 *     new NOTIFY, so it never waits behind the back-off of an older one;
 *   - no response after timeout_ms: resent (the current SOA, same id)
 *     with the timeout doubling, up to `retries` resends, then given up
 *     until the serial moves again. Each slot backs off on its own.
 *
 * A response other than NOERROR (a secondary refusing: NOTAUTH for a key
 * it does not accept, REFUSED for a zone it does not serve) ends the
 * NOTIFY without resends and is logged at warning level once per target
 * and kind of refusal, and at info when the target accepts again.
 *
 * At most MAX_IN_FLIGHT NOTIFYs per target are outstanding; slots left
 * waiting are picked up by a scan when one completes. On start all zones
 * are notified once (has_done is false).
 *
 * Keys are read from the records store at each send and response (an
 * indexed lookup), so a key created, replaced or deleted while running is
 * used at once. Only the notifier thread touches zones and targets; the
 * cue flag and stop are atomics.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <libknot/codes.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/lookup.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrtype/soa.h>

#include "common/audit.h"
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "dns/tsig.h"
#include "dns/tsig_client.h"
#include "transfer/activity.h"
#include "transfer/internal.h"
#include "transfer/secondary.h"
#include "transfer/transfer.h"

#define MAX_IN_FLIGHT 256
#define NOTIFY_BUF 2048

typedef struct {
	int64_t deadline;       /* Monotonic ms of the next resend. */
	uint32_t target;        /* Index in notify_t.targets. */
	uint32_t done_serial;   /* Last serial answered or given up. */
	uint32_t sent_serial;   /* In flight: the serial sent. */
	uint16_t id;
	uint16_t tries;         /* Sends of the NOTIFY in flight. */
	bool has_done;
	bool in_flight;
	bool refused;           /* The last response refused it. */
	uint8_t mac_len;        /* Signed: the request MAC, for the */
	uint8_t mac[64];        /* response check. */
} slot_t;

typedef struct {
	uint32_t serial;        /* As last listed or read. */
	bool hold;              /* Signed, its view not built: no NOTIFY. */
	int64_t zone_id;
	uint8_t *apex;          /* Allocated with the zone. */
	size_t slot_count;
	slot_t *slots;
} nzone_t;

typedef struct {
	nzone_t *zone;
	uint32_t slot;
	uint16_t id;
} flight_t;

/* A zone's own notify target (records store, zone_secondaries). */
typedef struct {
	int64_t zone_id;
	secondary_notify_t spec;
} zone_target_t;

typedef struct {
	secondary_notify_t spec;
	char name[INET6_ADDRSTRLEN + 8 + KNOT_DNAME_TXT_MAXLEN]; /* For logs. */
	unsigned users;         /* Slots naming it (+1 when server-wide). */
	flight_t *flights;
	size_t flight_count, flight_cap;
	bool answers;           /* Its last NOTIFY got a response. */
	unsigned refused;       /* Slots whose last response refused. */
	uint32_t refusal;       /* rcode << 16 | TSIG error, as last logged. */
	bool key_warned;        /* The key could not be used (logged). */
} target_t;

struct notify {
	pthread_t thread;
	bool started;
	edge_store_t *edge;
	const char *data_dir;
	records_store_t *rs;    /* TSIG keys; opened at first use. */
	unsigned retries;
	unsigned timeout_ms;
	int (*zone_serial)(void *ctx, int64_t zone_id, uint32_t *serial);
	void *zone_serial_ctx;
	int efd;                /* The cue. */
	int fd4, fd6;
	atomic_bool cue;
	atomic_bool stop;
	target_t *targets;
	size_t target_count, target_cap;
	size_t global_count;    /* Targets 0.. are the server-wide ones. */
	zone_target_t *zone_targets; /* Per-zone ones, by zone id. */
	size_t zone_target_count;
	uint64_t secondaries_version; /* records_secondaries_version() */
	bool secondaries_loaded;
	int64_t secondaries_checked;  /* Monotonic ms of the last check. */
	nzone_t **zones;        /* Sorted by apex LF. */
	size_t zone_count;
	bool backlog;           /* A slot waits for a free flight. */
	edge_txn_t txn;
	uint32_t rng;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint16_t next_id(notify_t *n)
{
	n->rng ^= n->rng << 13;
	n->rng ^= n->rng >> 17;
	n->rng ^= n->rng << 5;
	return (uint16_t)(n->rng >> 8);
}

/* Orders apexes as the edge store's zone keys (LF, memcmp, shorter
 * first). */
static int cmp_apex(const uint8_t *a, const uint8_t *b)
{
	uint8_t la[DNS_LF_MAXLEN], lb[DNS_LF_MAXLEN];
	size_t na = dns_name_to_lf(a, la), nb = dns_name_to_lf(b, lb);
	int c = memcmp(la, lb, na < nb ? na : nb);
	return c != 0 ? c : (na > nb) - (na < nb);
}

static bool same_addr(const struct sockaddr_storage *a,
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
	return same_addr(&a->addr, &b->addr) && a->has_key == b->has_key &&
	       (!a->has_key || knot_dname_is_equal(a->key, b->key));
}

/* The index of the target, added to the table when new, with one more
 * user (the caller's); -1 without memory. */
static long target_acquire(notify_t *n, const secondary_notify_t *spec)
{
	long free_slot = -1;
	for (size_t i = 0; i < n->target_count; i++) {
		target_t *tg = &n->targets[i];
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
			target_t *grown = realloc(n->targets, cap * sizeof(*grown));
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
	target_t *tg = &n->targets[free_slot];
	memset(tg, 0, sizeof(*tg));
	tg->spec = *spec;
	tg->users = 1;
	secondary_notify_format(spec, true, tg->name, sizeof(tg->name));
	return free_slot;
}

/* Forgets the flight of a slot, if any. */
static void flight_drop(notify_t *n, nzone_t *zone, uint32_t slot)
{
	target_t *tg = &n->targets[zone->slots[slot].target];
	for (size_t i = 0; i < tg->flight_count; i++) {
		if (tg->flights[i].zone == zone && tg->flights[i].slot == slot) {
			tg->flights[i] = tg->flights[--tg->flight_count];
			n->backlog = true; /* A flight is free. */
			return;
		}
	}
}

static bool flight_add(notify_t *n, nzone_t *zone, uint32_t slot)
{
	target_t *tg = &n->targets[zone->slots[slot].target];
	if (tg->flight_count == tg->flight_cap) {
		size_t cap = tg->flight_cap ? tg->flight_cap * 2 : 8;
		flight_t *grown = realloc(tg->flights, cap * sizeof(*grown));
		if (grown == NULL) {
			return false;
		}
		tg->flights = grown;
		tg->flight_cap = cap;
	}
	tg->flights[tg->flight_count++] = (flight_t) {
		.zone = zone, .slot = slot, .id = zone->slots[slot].id };
	return true;
}

/* A slot leaves its target: counts and refusal state follow. */
static void slot_release(notify_t *n, nzone_t *zone, uint32_t slot)
{
	slot_t *s = &zone->slots[slot];
	target_t *tg = &n->targets[s->target];
	if (s->in_flight) {
		flight_drop(n, zone, slot);
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
static int zone_retarget(notify_t *n, nzone_t *zone)
{
	size_t first = zone_targets_begin(n, zone->zone_id), own = 0;
	while (first + own < n->zone_target_count &&
	       n->zone_targets[first + own].zone_id == zone->zone_id) {
		own++;
	}
	size_t cap = n->global_count + own;
	slot_t *slots = calloc(cap ? cap : 1, sizeof(*slots));
	if (slots == NULL) {
		return KNOT_ENOMEM;
	}
	size_t count = 0;
	for (size_t t = 0; t < n->global_count; t++) {
		n->targets[t].users++;
		slots[count++].target = (uint32_t)t;
	}
	for (size_t i = 0; i < own; i++) {
		long t = target_acquire(n, &n->zone_targets[first + i].spec);
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
			const slot_t *old = &zone->slots[s];
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

static nzone_t *zone_new(notify_t *n, const edge_zone_t *z)
{
	nzone_t *zone = calloc(1, sizeof(*zone) + z->apex_len);
	if (zone == NULL) {
		return NULL;
	}
	zone->serial = z->serial;
	zone->zone_id = (int64_t)z->zone_id;
	zone->apex = (uint8_t *)(zone + 1);
	memcpy(zone->apex, z->apex, z->apex_len);
	if (zone_retarget(n, zone) != ZC_EOK) {
		free(zone);
		return NULL;
	}
	return zone;
}

/* Forgets the zone's NOTIFYs in flight, then frees it. */
static void zone_free(notify_t *n, nzone_t *zone)
{
	for (uint32_t s = 0; s < zone->slot_count; s++) {
		slot_release(n, zone, s);
	}
	free(zone->slots);
	free(zone);
}

static int open_records(notify_t *n)
{
	if (n->rs != NULL) {
		return ZC_EOK;
	}
	int ret = records_open(&n->rs, n->data_dir);
	if (ret != ZC_EOK) {
		zc_error("notify: cannot open the records store: %s",
		         zc_strerror(ret));
	}
	return ret;
}

/* Loads the target's TSIG key into c. Logged once per target until the
 * key works again. */
static int load_key(notify_t *n, target_t *tg, dns_tsig_client_t *c)
{
	records_tsig_key_t key;
	int ret = open_records(n);
	if (ret == ZC_EOK) {
		ret = records_tsig_find(n->rs, tg->spec.key, &key);
	}
	if (ret == ZC_EOK) {
		ret = dns_tsig_client_key(c, key.name, key.algorithm, key.secret,
		                          key.secret_len);
	}
	if (ret != ZC_EOK && !tg->key_warned) {
		zc_warn("notify: cannot sign NOTIFYs to %s: %s; none is sent "
		        "until the key can be used", tg->name,
		        ret == ZC_ENOKEY ? "no such key (zonecast tsig create)" :
		        zc_strerror(ret));
		tg->key_warned = true;
	} else if (ret == ZC_EOK && tg->key_warned) {
		zc_info("notify: key for %s usable again", tg->name);
		tg->key_warned = false;
	}
	return ret;
}

/*
 * The serial to announce for the zone, read in txn: the edge's, or for a
 * signed zone the signed view's (what its transfers serve). False while a
 * signed zone has no view yet.
 */
static bool announced_serial(notify_t *n, edge_txn_t *txn,
                             const edge_zone_t *z, uint32_t *serial)
{
	const uint8_t *raw;
	size_t len;
	*serial = z->serial;
	if (n->zone_serial == NULL ||
	    edge_keys_get(txn, z->zone_id, &raw, &len) != ZC_EOK) {
		return true;
	}
	return n->zone_serial(n->zone_serial_ctx, (int64_t)z->zone_id,
	                      serial) == 1;
}

/* Builds, signs when the target has a key, and sends a NOTIFY: question
 * the apex SOA, the SOA in the answer section (RFC 1996 §3.7, optional
 * and useful). Not sendable (a zone deleted meanwhile, an unusable key):
 * an error, and the slot is not in flight. */
static int send_notify(notify_t *n, nzone_t *zone, uint32_t slot)
{
	edge_zone_t z;
	uint32_t serial = 0;
	int ret = edge_txn_begin_read(n->edge, &n->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&n->txn, zone->apex, &z);
	}
	if (ret == ZC_EOK && !announced_serial(n, &n->txn, &z, &serial)) {
		ret = ZC_EBUSY; /* Signed, no view yet: the view cues us. */
	}
	edge_txn_reset(&n->txn);
	if (ret != ZC_EOK) {
		return ret; /* Deleted meanwhile: the next listing drops it. */
	}
	zone->serial = serial;
	slot_t *s = &zone->slots[slot];
	target_t *tg = &n->targets[s->target];
	dns_tsig_client_t tsig;
	if (tg->spec.has_key && load_key(n, tg, &tsig) != ZC_EOK) {
		return ZC_ENOKEY;
	}
	uint8_t buf[NOTIFY_BUF];
	knot_pkt_t *pkt = knot_pkt_new(buf, NOTIFY_BUF - DNS_TSIG_ROOM, NULL);
	if (pkt == NULL) {
		return KNOT_ENOMEM;
	}
	knot_pkt_clear(pkt); /* A new message, not one to parse. */
	knot_wire_set_id(pkt->wire, s->id);
	knot_wire_set_opcode(pkt->wire, KNOT_OPCODE_NOTIFY);
	knot_wire_set_aa(pkt->wire);
	uint8_t soa_buf[XFR_SOA_BUF];
	knot_rrset_t soa;
	xfr_soa(&z, serial, soa_buf, &soa);
	ret = knot_pkt_put_question(pkt, z.apex, KNOT_CLASS_IN, KNOT_RRTYPE_SOA);
	if (ret == KNOT_EOK) {
		ret = knot_pkt_begin(pkt, KNOT_ANSWER);
	}
	if (ret == KNOT_EOK) {
		ret = knot_pkt_put(pkt, KNOT_COMPR_HINT_QNAME, &soa, 0);
	}
	size_t len = pkt->size;
	knot_pkt_free(pkt);
	s->mac_len = 0;
	if (ret == KNOT_EOK && tg->spec.has_key) {
		ret = dns_tsig_client_sign(&tsig, buf, &len, sizeof(buf));
		s->mac_len = (uint8_t)tsig.mac_len;
		memcpy(s->mac, tsig.mac, tsig.mac_len);
	}
	if (ret != KNOT_EOK) {
		return ret;
	}
	int fd = tg->spec.addr.ss_family == AF_INET6 ? n->fd6 : n->fd4;
	if (sendto(fd, buf, len, 0, (const struct sockaddr *)&tg->spec.addr,
	           tg->spec.addr_len) < 0) {
		ret = -errno; /* Counted as a try: resent at the deadline. */
	}
	zc_count(ZC_COUNT_NOTIFY_SENT);
	s->sent_serial = serial;
	s->tries++;
	unsigned shift = s->tries - 1u < 20 ? s->tries - 1u : 20;
	s->deadline = now_ms() + ((int64_t)n->timeout_ms << shift);
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_debug("notify: zone %s serial %u to %s (id %u, try %u)%s%s", name,
	         serial, tg->name, s->id, s->tries,
	         ret == KNOT_EOK ? "" : ": ",
	         ret == KNOT_EOK ? "" : zc_strerror(ret));
	transfer_activity_notify(zone->apex, tg->name, serial, s->tries,
	                         ret == KNOT_EOK ? "sent" : "not sent");
	return ZC_EOK;
}

/*
 * Starts a NOTIFY for the slot if its serial moved: at once when nothing
 * is in flight or the target does not answer (a new serial never waits
 * behind the resends of an older one); otherwise the response or the
 * first timeout sends it.
 */
static void start_slot(notify_t *n, nzone_t *zone, uint32_t slot)
{
	slot_t *s = &zone->slots[slot];
	target_t *tg = &n->targets[s->target];
	if (zone->hold) {
		return;
	}
	if (s->in_flight) {
		if (s->sent_serial == zone->serial ||
		    (tg->answers && s->tries == 1)) {
			return;
		}
		flight_drop(n, zone, slot);
		s->in_flight = false;
	} else if (s->has_done && s->done_serial == zone->serial) {
		return;
	}
	if (tg->flight_count == MAX_IN_FLIGHT) {
		n->backlog = true;
		return;
	}
	s->id = next_id(n);
	s->tries = 0;
	if (send_notify(n, zone, slot) != ZC_EOK) {
		return;
	}
	s->in_flight = flight_add(n, zone, slot);
}

/* Starts every NOTIFY due. */
static void scan(notify_t *n)
{
	n->backlog = false;
	for (size_t i = 0; i < n->zone_count; i++) {
		for (uint32_t s = 0; s < n->zones[i]->slot_count; s++) {
			start_slot(n, n->zones[i], s);
		}
	}
}

typedef struct {
	notify_t *n;
	nzone_t **list;
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
		nzone_t **list = realloc(l->list, cap * sizeof(*list));
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
		zone_free(n, n->zones[l->old]); /* Gone from the edge. */
		n->zones[l->old++] = NULL;
	}
	nzone_t *zone;
	if (l->old < n->zone_count && c == 0) {
		zone = n->zones[l->old];
		n->zones[l->old++] = NULL;
		zone->zone_id = (int64_t)z->zone_id;
	} else if ((zone = zone_new(n, z)) == NULL) {
		l->error = KNOT_ENOMEM;
		return 1;
	}
	zone->hold = !announced_serial(n, &n->txn, z, &zone->serial);
	l->list[l->count++] = zone;
	return 0;
}

typedef struct {
	zone_target_t *list;
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
		zone_target_t *grown = realloc(l->list, cap * sizeof(*grown));
		if (grown == NULL) {
			l->error = KNOT_ENOMEM;
			return 1;
		}
		l->list = grown;
		l->cap = cap;
	}
	l->list[l->count++] = (zone_target_t) { .zone_id = zone_id, .spec = t };
	return 0;
}

/*
 * Reloads the zones' own notify targets when the records store says they
 * changed (a number that moves at each change), then gives every known
 * zone its new slots. Runs at each cue and once a second.
 */
static void reload_zone_targets(notify_t *n)
{
	n->secondaries_checked = now_ms();
	uint64_t version = 0;
	int ret = open_records(n);
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
		if (zone_retarget(n, n->zones[i]) != ZC_EOK) {
			zc_warn("notify: out of memory");
		}
	}
	n->backlog = true;
}

/* Forgets every zone (nobody to notify). */
static void drop_zones(notify_t *n)
{
	for (size_t i = 0; i < n->zone_count; i++) {
		zone_free(n, n->zones[i]);
	}
	free(n->zones);
	n->zones = NULL;
	n->zone_count = 0;
}

/* Lists the edge store's zones: new ones are added, gone ones dropped,
 * serials refreshed; then starts what is due. With no target at all,
 * nothing is listed. */
static void refresh(notify_t *n)
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
	nzone_t **list = NULL;
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
			zone_free(n, n->zones[i]); /* Gone from the edge. */
		}
	}
	free(n->zones);
	n->zones = l.list;
	n->zone_count = l.count;
	scan(n);
}

/* "NOTAUTH (TSIG BADKEY)". libknot's table of TSIG errors holds only
 * BADSIG (Knot 3.2), hence this one (RFC 8945 §7, RFC 2930). */
static void refusal_text(uint32_t refusal, char *out, size_t size)
{
	static const char *const tsig_errors[] = {
		"BADSIG", "BADKEY", "BADTIME", "BADMODE", "BADNAME", "BADALG",
		"BADTRUNC" };
	const knot_lookup_t *rc = knot_lookup_by_id(knot_rcode_names,
	                                            (int)(refusal >> 16));
	unsigned te = refusal & 0xffff;
	char tsig[32] = "";
	if (te >= 16 && te < 16 + sizeof(tsig_errors) / sizeof(tsig_errors[0])) {
		snprintf(tsig, sizeof(tsig), " (TSIG %s)", tsig_errors[te - 16]);
	} else if (te != 0) {
		snprintf(tsig, sizeof(tsig), " (TSIG error %u)", te);
	}
	if (rc != NULL) {
		snprintf(out, size, "%s%s", rc->name, tsig);
	} else {
		snprintf(out, size, "rcode %u%s", refusal >> 16, tsig);
	}
}

/* Logs a refusal once per target and kind, and the return to
 * acceptance. */
static void note_outcome(notify_t *n, nzone_t *zone, slot_t *s,
                         uint32_t refusal, const char *why)
{
	target_t *tg = &n->targets[s->target];
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	if (refusal == 0) {
		if (s->refused) {
			s->refused = false;
			if (--tg->refused == 0) {
				zc_info("notify: %s accepts NOTIFY again (zone "
				        "%s serial %u)", tg->name, name,
				        s->sent_serial);
				tg->refusal = 0;
			}
		}
		return;
	}
	if (!s->refused) {
		s->refused = true;
		tg->refused++;
	}
	if (tg->refusal != refusal) {
		char text[64];
		refusal_text(refusal, text, sizeof(text));
		zc_warn("notify: %s refused the NOTIFY of zone %s serial %u: "
		        "%s%s; it refreshes only on its SOA timer (logged once "
		        "until this changes)", tg->name, name, s->sent_serial,
		        text, why);
		tg->refusal = refusal;
	}
}

/* Checks a signed NOTIFY's response: its TSIG error folds into the
 * refusal, a bad or missing MAC on a NOERROR is a refusal of its own. */
static uint32_t check_response(notify_t *n, slot_t *s, const uint8_t *msg,
                               size_t len, const char **why)
{
	uint32_t rcode = knot_wire_get_rcode(msg);
	target_t *tg = &n->targets[s->target];
	if (!tg->spec.has_key) {
		return rcode << 16;
	}
	uint8_t copy[NOTIFY_BUF];
	memcpy(copy, msg, len);
	knot_pkt_t *pkt = knot_pkt_new(copy, len, NULL);
	dns_tsig_client_t tsig;
	uint16_t error = 0;
	int ret = pkt == NULL ? KNOT_ENOMEM : knot_pkt_parse(pkt, 0);
	if (ret == KNOT_EOK) {
		ret = load_key(n, tg, &tsig);
	}
	if (ret == KNOT_EOK) {
		tsig.mac_len = s->mac_len;
		memcpy(tsig.mac, s->mac, s->mac_len);
		ret = dns_tsig_client_check(&tsig, pkt, &error);
	}
	knot_pkt_free(pkt);
	if (ret != KNOT_EOK && rcode == KNOT_RCODE_NOERROR && error == 0) {
		*why = ret == KNOT_TSIG_EBADSIG ?
		       ", its response unsigned or with a wrong MAC" :
		       ", its response TSIG not verified";
		return (KNOT_RCODE_NOTAUTH << 16) | KNOT_RCODE_BADSIG;
	}
	return rcode << 16 | error;
}

/* Notes how a secondary answered (`zonecast zone status`); a refusal
 * (any rcode but NOERROR, or a response TSIG that does not verify) gets
 * an audit line each time: the secondary does not take the zone from us. */
static void note_activity(const nzone_t *zone, const target_t *tg,
                          const slot_t *s, uint32_t refusal)
{
	char text[64], result[80];
	refusal_text(refusal, text, sizeof(text));
	snprintf(result, sizeof(result), refusal == 0 ? "answered" :
	         "refused (%s)", text);
	transfer_activity_notify(zone->apex, tg->name, s->sent_serial,
	                         s->tries, result);
	if (refusal == 0) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_audit_t a;
	zc_audit_begin(&a, "notify", "refused");
	zc_audit_str(&a, "zone", name);
	zc_audit_str(&a, "secondary", tg->name);
	zc_audit_num(&a, "serial", s->sent_serial);
	zc_audit_str(&a, "rcode", text);
	zc_audit_end(&a);
}

/* A response from address `from`: completes the matching NOTIFY. */
static void on_response(notify_t *n, const struct sockaddr_storage *from,
                        const uint8_t *msg, size_t len)
{
	if (len < KNOT_WIRE_HEADER_SIZE || !knot_wire_get_qr(msg) ||
	    knot_wire_get_opcode(msg) != KNOT_OPCODE_NOTIFY) {
		return;
	}
	uint16_t id = knot_wire_get_id(msg);
	for (size_t t = 0; t < n->target_count; t++) {
		target_t *tg = &n->targets[t];
		if (tg->users == 0 || !same_addr(&tg->spec.addr, from)) {
			continue;
		}
		for (size_t i = 0; i < tg->flight_count; i++) {
			if (tg->flights[i].id != id) {
				continue;
			}
			nzone_t *zone = tg->flights[i].zone;
			uint32_t slot = tg->flights[i].slot;
			slot_t *s = &zone->slots[slot];
			const char *why = "";
			uint32_t refusal = check_response(n, s, msg, len, &why);
			tg->flights[i] = tg->flights[--tg->flight_count];
			tg->answers = true;
			s->in_flight = false;
			s->has_done = true;
			s->done_serial = s->sent_serial;
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, zone->apex, sizeof(name));
			zc_debug("notify: zone %s serial %u answered by %s "
			         "(rcode %u)", name, s->sent_serial, tg->name,
			         knot_wire_get_rcode(msg));
			zc_count(refusal == 0 && knot_wire_get_rcode(msg) ==
			         KNOT_RCODE_NOERROR ? ZC_COUNT_NOTIFY_ACKED :
			         ZC_COUNT_NOTIFY_ERROR);
			note_outcome(n, zone, s, refusal, why);
			note_activity(zone, tg, s, refusal);
			start_slot(n, zone, slot); /* The serial may have moved. */
			return;
		}
	}
}

static void receive(notify_t *n, int fd)
{
	uint8_t buf[NOTIFY_BUF];
	for (;;) {
		struct sockaddr_storage from;
		socklen_t from_len = sizeof(from);
		ssize_t len = recvfrom(fd, buf, sizeof(buf), 0,
		                       (struct sockaddr *)&from, &from_len);
		if (len < 0) {
			return; /* EAGAIN */
		}
		on_response(n, &from, buf, (size_t)len);
	}
}

/* Resends or gives up NOTIFYs past their deadline; returns the time to
 * the next deadline (-1: none). */
static int expire(notify_t *n)
{
	int64_t now = now_ms();
	int64_t next = -1;
	for (size_t t = 0; t < n->target_count; t++) {
		target_t *tg = &n->targets[t];
		for (size_t i = 0; i < tg->flight_count; i++) {
			nzone_t *zone = tg->flights[i].zone;
			slot_t *s = &zone->slots[tg->flights[i].slot];
			if (s->deadline > now) {
				if (next < 0 || s->deadline < next) {
					next = s->deadline;
				}
				continue;
			}
			tg->answers = false;
			/* RFC 1996 §3.6. A zone deleted meanwhile ends its
			 * NOTIFY here. */
			if (s->tries <= n->retries &&
			    send_notify(n, zone, tg->flights[i].slot) == ZC_EOK) {
				if (next < 0 || s->deadline < next) {
					next = s->deadline;
				}
				continue;
			}
			if (s->tries > n->retries) {
				char name[KNOT_DNAME_TXT_MAXLEN + 1];
				knot_dname_to_str(name, zone->apex, sizeof(name));
				zc_info("notify: zone %s serial %u: no response "
				        "from %s after %u tries, giving up", name,
				        s->sent_serial, tg->name, s->tries);
				zc_count(ZC_COUNT_NOTIFY_TIMEOUT);
				transfer_activity_notify(zone->apex, tg->name,
				                         s->sent_serial, s->tries,
				                         "no response");
				s->has_done = true;
				s->done_serial = s->sent_serial;
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

static void *notify_main(void *arg)
{
	notify_t *n = arg;
	pthread_setname_np(pthread_self(), "zc-notify");
	refresh(n); /* Every zone once at start. */
	while (!atomic_load(&n->stop)) {
		struct pollfd fds[3] = {
			{ .fd = n->efd, .events = POLLIN },
			{ .fd = n->fd4, .events = POLLIN },
			{ .fd = n->fd6, .events = POLLIN },
		};
		int timeout = expire(n);
		if (n->backlog) {
			scan(n);
		}
		/* The zones' own targets are checked for changes once a
		 * second (an API or CLI change moves no serial). */
		int64_t check = n->secondaries_checked + 1000 - now_ms();
		check = check < 0 ? 0 : check;
		if (timeout < 0 || timeout > check) {
			timeout = (int)check;
		}
		poll(fds, 3, timeout);
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			ssize_t r = read(n->efd, &v, sizeof(v));
			(void)r;
		}
		if (atomic_exchange(&n->cue, false) ||
		    now_ms() - n->secondaries_checked >= 1000) {
			refresh(n);
		}
		for (int i = 1; i < 3; i++) {
			if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLERR))) {
				receive(n, fds[i].fd);
			}
		}
	}
	return NULL;
}

static bool is_listed(const notify_t *n, const secondary_notify_t *spec)
{
	for (size_t t = 0; t < n->target_count; t++) {
		if (same_target(&n->targets[t].spec, spec)) {
			return true;
		}
	}
	return false;
}

/* Opens the socket of a family (-1 when the family is unavailable). */
static int open_socket(int family)
{
	return socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int notify_start(const notify_config_t *cfg, notify_t **out)
{
	if (cfg == NULL || out == NULL || cfg->edge == NULL ||
	    cfg->target_count > NOTIFY_MAX_TARGETS) {
		return ZC_EUSAGE;
	}
	*out = NULL;
	if (cfg->target_count == 0 && cfg->data_dir == NULL) {
		return ZC_EOK;
	}
	notify_t *n = calloc(1, sizeof(*n));
	if (n == NULL) {
		return KNOT_ENOMEM;
	}
	n->edge = cfg->edge;
	n->data_dir = cfg->data_dir;
	n->retries = cfg->retries;
	n->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 1000;
	n->zone_serial = cfg->zone_serial;
	n->zone_serial_ctx = cfg->zone_serial_ctx;
	n->fd4 = n->fd6 = n->efd = -1;
	if (getrandom(&n->rng, sizeof(n->rng), 0) != sizeof(n->rng) ||
	    n->rng == 0) {
		n->rng = (uint32_t)now_ms() | 1;
	}
	int ret = ZC_EOK;
	for (size_t t = 0; t < cfg->target_count && ret == ZC_EOK; t++) {
		secondary_notify_t spec;
		char err[512];
		ret = secondary_notify_parse(cfg->targets[t], &spec, err,
		                             sizeof(err));
		if (ret != ZC_EOK) {
			zc_error("notify: %s", err);
		} else if (is_listed(n, &spec)) {
			zc_warn("notify: '%s' listed twice", cfg->targets[t]);
		} else if (target_acquire(n, &spec) < 0) {
			ret = KNOT_ENOMEM; /* Its user: the server-wide list. */
		}
	}
	n->global_count = n->target_count;
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	n->fd4 = open_socket(AF_INET);
	n->fd6 = open_socket(AF_INET6);
	if (ret == ZC_EOK && (n->efd < 0 || (n->fd4 < 0 && n->fd6 < 0))) {
		ret = -errno;
	}
	if (ret == ZC_EOK && cfg->data_dir == NULL) {
		for (size_t t = 0; t < n->target_count; t++) {
			ret = n->targets[t].spec.has_key ? ZC_EUSAGE : ret;
		}
	}
	if (ret == ZC_EOK) {
		ret = -pthread_create(&n->thread, NULL, notify_main, n);
		n->started = ret == 0;
	}
	if (ret != ZC_EOK) {
		notify_stop(n);
		return ret;
	}
	*out = n;
	return ZC_EOK;
}

void notify_on_pass(void *ctx)
{
	notify_t *n = ctx;
	if (n == NULL) {
		return;
	}
	atomic_store(&n->cue, true);
	uint64_t one = 1;
	ssize_t w = write(n->efd, &one, sizeof(one));
	(void)w; /* A saturated counter still wakes the thread. */
}

void notify_stop(notify_t *n)
{
	if (n == NULL) {
		return;
	}
	atomic_store(&n->stop, true);
	if (n->started) {
		notify_on_pass(n);
		pthread_join(n->thread, NULL);
	}
	for (size_t i = 0; i < n->zone_count; i++) {
		free(n->zones[i]->slots);
		free(n->zones[i]);
	}
	free(n->zones);
	for (size_t t = 0; t < n->target_count; t++) {
		free(n->targets[t].flights);
	}
	free(n->targets);
	free(n->zone_targets);
	int fds[] = { n->fd4, n->fd6, n->efd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
		}
	}
	edge_txn_abort(&n->txn);
	records_close(n->rs);
	free(n);
}
