/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * NOTIFY sender (RFC 1996): tells every configured secondary, over UDP,
 * that a zone has a new serial, as soon as the edge store serves it.
 *
 * Design
 *
 * One thread polls an eventfd (the cue, written by notify_on_pass() on
 * the builder's thread) and one connected UDP socket per target (the
 * kernel then only delivers datagrams from that target's address and
 * port; responses are matched to NOTIFYs by id). On a cue it lists the
 * edge store's zones and merges them with the zones it knows, both
 * sorted in the store's key order. Per (zone, target) a slot holds the
 * last serial notified and the NOTIFY in flight, if any:
 *
 *   - not in flight and the zone's serial differs from the last notified:
 *     send now (RFC 1996 §3.7), with the zone's SOA read at that moment;
 *   - in flight: nothing; when the response comes (§3.6, matched by id)
 *     the serial is checked again and a newer one is sent at once, so
 *     serials coalesce and at most one NOTIFY per slot is in flight;
 *   - no response after timeout_ms: resent (the current SOA, same id)
 *     with the timeout doubling, up to `retries` resends, then given up
 *     until the serial moves again (§3.6).
 *
 * At most MAX_IN_FLIGHT NOTIFYs per target are outstanding; slots left
 * waiting are picked up by a scan when one completes. On start all zones
 * are notified once (has_done is false).
 *
 * Only the notifier thread touches zones and targets; the cue flag and
 * stop are atomics.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrtype/soa.h>

#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "transfer/internal.h"
#include "transfer/transfer.h"

#define MAX_IN_FLIGHT 256
#define NOTIFY_BUF 2048

typedef struct {
	int64_t deadline;       /* Monotonic ms of the next resend. */
	uint32_t done_serial;   /* Last serial answered or given up. */
	uint32_t sent_serial;   /* In flight: the serial sent. */
	uint16_t id;
	uint16_t tries;         /* Sends of the NOTIFY in flight. */
	bool has_done;
	bool in_flight;
} slot_t;

typedef struct {
	uint32_t serial;        /* As last listed or read. */
	uint8_t *apex;          /* Points after slots[]. */
	slot_t slots[];         /* One per target. */
} nzone_t;

typedef struct {
	nzone_t *zone;
	uint16_t id;
} flight_t;

typedef struct {
	int fd;
	const char *name;       /* "ADDR:PORT" as configured. */
	flight_t flights[MAX_IN_FLIGHT];
	size_t flight_count;
} target_t;

struct notify {
	pthread_t thread;
	bool started;
	edge_store_t *edge;
	unsigned retries;
	unsigned timeout_ms;
	int efd;                /* The cue. */
	atomic_bool cue;
	atomic_bool stop;
	size_t target_count;
	target_t targets[NOTIFY_MAX_TARGETS];
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

static nzone_t *zone_new(const notify_t *n, const edge_zone_t *z)
{
	size_t slots = n->target_count * sizeof(slot_t);
	nzone_t *zone = calloc(1, sizeof(*zone) + slots + z->apex_len);
	if (zone != NULL) {
		zone->serial = z->serial;
		zone->apex = (uint8_t *)zone->slots + slots;
		memcpy(zone->apex, z->apex, z->apex_len);
	}
	return zone;
}

/* Forgets the zone's NOTIFYs in flight, then frees it. */
static void zone_free(notify_t *n, nzone_t *zone)
{
	for (size_t t = 0; t < n->target_count; t++) {
		target_t *tg = &n->targets[t];
		for (size_t i = 0; i < tg->flight_count; i++) {
			if (tg->flights[i].zone == zone) {
				tg->flights[i] = tg->flights[--tg->flight_count];
				break;
			}
		}
	}
	free(zone);
}

/* Builds and sends the NOTIFY of a slot: question the apex SOA, the SOA in
 * the answer section (RFC 1996 §3.7, optional and useful). */
static int send_notify(notify_t *n, nzone_t *zone, size_t t)
{
	edge_zone_t z;
	int ret = edge_txn_begin_read(n->edge, &n->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&n->txn, zone->apex, &z);
	}
	edge_txn_reset(&n->txn);
	if (ret != ZC_EOK) {
		return ret; /* Deleted meanwhile: the next listing drops it. */
	}
	zone->serial = z.serial;
	slot_t *s = &zone->slots[t];
	knot_pkt_t *pkt = knot_pkt_new(NULL, NOTIFY_BUF, NULL);
	if (pkt == NULL) {
		return KNOT_ENOMEM;
	}
	knot_wire_set_id(pkt->wire, s->id);
	knot_wire_set_opcode(pkt->wire, KNOT_OPCODE_NOTIFY);
	knot_wire_set_aa(pkt->wire);
	uint8_t soa_buf[XFR_SOA_BUF];
	knot_rrset_t soa;
	xfr_soa(&z, z.serial, soa_buf, &soa);
	ret = knot_pkt_put_question(pkt, z.apex, KNOT_CLASS_IN, KNOT_RRTYPE_SOA);
	if (ret == KNOT_EOK) {
		ret = knot_pkt_begin(pkt, KNOT_ANSWER);
	}
	if (ret == KNOT_EOK) {
		ret = knot_pkt_put(pkt, KNOT_COMPR_HINT_QNAME, &soa, 0);
	}
	if (ret == KNOT_EOK && send(n->targets[t].fd, pkt->wire, pkt->size,
	                            0) < 0 && errno != ECONNREFUSED) {
		ret = -errno; /* Counted as a try: resent at the deadline. */
	}
	knot_pkt_free(pkt);
	zc_count(ZC_COUNT_NOTIFY_SENT);
	s->sent_serial = z.serial;
	s->tries++;
	unsigned shift = s->tries - 1u < 20 ? s->tries - 1u : 20;
	s->deadline = now_ms() + ((int64_t)n->timeout_ms << shift);
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_debug("notify: zone %s serial %u to %s (id %u, try %u)%s%s", name,
	         z.serial, n->targets[t].name, s->id, s->tries,
	         ret == KNOT_EOK ? "" : ": ",
	         ret == KNOT_EOK ? "" : zc_strerror(ret));
	return ZC_EOK;
}

/* Starts a NOTIFY for the slot if its serial moved and a flight is free. */
static void start_slot(notify_t *n, nzone_t *zone, size_t t)
{
	slot_t *s = &zone->slots[t];
	target_t *tg = &n->targets[t];
	if (s->in_flight || (s->has_done && s->done_serial == zone->serial)) {
		return;
	}
	if (tg->flight_count == MAX_IN_FLIGHT) {
		n->backlog = true;
		return;
	}
	s->id = next_id(n);
	s->tries = 0;
	if (send_notify(n, zone, t) != ZC_EOK) {
		return;
	}
	s->in_flight = true;
	tg->flights[tg->flight_count++] = (flight_t) { .zone = zone, .id = s->id };
}

/* Starts every NOTIFY due. */
static void scan(notify_t *n)
{
	n->backlog = false;
	for (size_t i = 0; i < n->zone_count; i++) {
		for (size_t t = 0; t < n->target_count; t++) {
			start_slot(n, n->zones[i], t);
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
		zone->serial = z->serial;
	} else if ((zone = zone_new(n, z)) == NULL) {
		l->error = KNOT_ENOMEM;
		return 1;
	}
	l->list[l->count++] = zone;
	return 0;
}

/* Lists the edge store's zones: new ones are added, gone ones dropped,
 * serials refreshed; then starts what is due. */
static void refresh(notify_t *n)
{
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

/* A response from target t: completes the matching NOTIFY. */
static void on_response(notify_t *n, size_t t, const uint8_t *msg, size_t len)
{
	if (len < KNOT_WIRE_HEADER_SIZE || !knot_wire_get_qr(msg) ||
	    knot_wire_get_opcode(msg) != KNOT_OPCODE_NOTIFY) {
		return;
	}
	target_t *tg = &n->targets[t];
	uint16_t id = knot_wire_get_id(msg);
	for (size_t i = 0; i < tg->flight_count; i++) {
		if (tg->flights[i].id != id) {
			continue;
		}
		nzone_t *zone = tg->flights[i].zone;
		slot_t *s = &zone->slots[t];
		tg->flights[i] = tg->flights[--tg->flight_count];
		s->in_flight = false;
		s->has_done = true;
		s->done_serial = s->sent_serial;
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, zone->apex, sizeof(name));
		zc_debug("notify: zone %s serial %u answered by %s (rcode %u)",
		         name, s->sent_serial, tg->name,
		         knot_wire_get_rcode(msg));
		zc_count(knot_wire_get_rcode(msg) == KNOT_RCODE_NOERROR ?
		         ZC_COUNT_NOTIFY_ACKED : ZC_COUNT_NOTIFY_ERROR);
		start_slot(n, zone, t); /* The serial may have moved since. */
		return;
	}
}

static void receive(notify_t *n, size_t t)
{
	uint8_t buf[NOTIFY_BUF];
	for (;;) {
		ssize_t len = recv(n->targets[t].fd, buf, sizeof(buf), 0);
		if (len < 0) {
			return; /* EAGAIN, or ECONNREFUSED: resent at timeout. */
		}
		on_response(n, t, buf, (size_t)len);
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
			slot_t *s = &zone->slots[t];
			bool gone = false;
			if (s->deadline <= now && s->tries <= n->retries) {
				/* RFC 1996 §3.6. A zone deleted meanwhile
				 * ends its NOTIFY here. */
				gone = send_notify(n, zone, t) != ZC_EOK;
			}
			if (gone) {
				s->in_flight = false;
				tg->flights[i--] = tg->flights[--tg->flight_count];
				continue;
			}
			if (s->deadline <= now) {
				char name[KNOT_DNAME_TXT_MAXLEN + 1];
				knot_dname_to_str(name, zone->apex, sizeof(name));
				zc_info("notify: zone %s serial %u: no response "
				        "from %s after %u tries, giving up", name,
				        s->sent_serial, tg->name, s->tries);
				zc_count(ZC_COUNT_NOTIFY_TIMEOUT);
				s->in_flight = false;
				s->has_done = true;
				s->done_serial = s->sent_serial;
				tg->flights[i--] = tg->flights[--tg->flight_count];
				n->backlog = true; /* A flight is free. */
				continue;
			}
			if (next < 0 || s->deadline < next) {
				next = s->deadline;
			}
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
		struct pollfd fds[1 + NOTIFY_MAX_TARGETS];
		fds[0] = (struct pollfd) { .fd = n->efd, .events = POLLIN };
		for (size_t t = 0; t < n->target_count; t++) {
			fds[1 + t] = (struct pollfd) { .fd = n->targets[t].fd,
			                               .events = POLLIN };
		}
		int timeout = expire(n);
		if (n->backlog) {
			scan(n);
		}
		poll(fds, 1 + n->target_count, timeout);
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			ssize_t r = read(n->efd, &v, sizeof(v));
			(void)r;
		}
		if (atomic_exchange(&n->cue, false)) {
			refresh(n);
		}
		for (size_t t = 0; t < n->target_count; t++) {
			if (fds[1 + t].revents & (POLLIN | POLLERR)) {
				receive(n, t);
			}
		}
	}
	return NULL;
}

/* Opens a non-blocking UDP socket connected to the target. */
static int open_target(target_t *tg, const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len;
	tg->name = text;
	tg->fd = -1;
	if (server_parse_addr(text, &ss, &len) != ZC_EOK) {
		zc_error("notify: invalid target '%s' (want ADDR:PORT or "
		         "[ADDR6]:PORT)", text);
		return ZC_EUSAGE;
	}
	tg->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	                0);
	if (tg->fd < 0) {
		return -errno;
	}
	if (connect(tg->fd, (struct sockaddr *)&ss, len) != 0) {
		return -errno;
	}
	return ZC_EOK;
}

int notify_start(const notify_config_t *cfg, notify_t **out)
{
	if (cfg == NULL || out == NULL || cfg->edge == NULL ||
	    cfg->target_count > NOTIFY_MAX_TARGETS) {
		return ZC_EUSAGE;
	}
	*out = NULL;
	if (cfg->target_count == 0) {
		return ZC_EOK;
	}
	notify_t *n = calloc(1, sizeof(*n));
	if (n == NULL) {
		return KNOT_ENOMEM;
	}
	n->edge = cfg->edge;
	n->retries = cfg->retries;
	n->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 1000;
	n->target_count = cfg->target_count;
	for (size_t t = 0; t < NOTIFY_MAX_TARGETS; t++) {
		n->targets[t].fd = -1;
	}
	if (getrandom(&n->rng, sizeof(n->rng), 0) != sizeof(n->rng) ||
	    n->rng == 0) {
		n->rng = (uint32_t)now_ms() | 1;
	}
	int ret = ZC_EOK;
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->efd < 0) {
		ret = -errno;
	}
	for (size_t t = 0; t < n->target_count && ret == ZC_EOK; t++) {
		ret = open_target(&n->targets[t], cfg->targets[t]);
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
		free(n->zones[i]);
	}
	free(n->zones);
	for (size_t t = 0; t < NOTIFY_MAX_TARGETS; t++) {
		if (n->targets[t].fd >= 0) {
			close(n->targets[t].fd);
		}
	}
	if (n->efd >= 0) {
		close(n->efd);
	}
	edge_txn_abort(&n->txn);
	free(n);
}
