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
 *
 * This file holds the thread and its start and stop; the rest is told
 * file by file atop notify_state.h.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "transfer/notify_state.h"

static void *notify_main(void *arg)
{
	notify_t *n = arg;
	pthread_setname_np(pthread_self(), "zc-notify");
	notify_refresh(n); /* Every zone once at start. */
	while (!atomic_load(&n->stop)) {
		struct pollfd fds[3] = {
			{ .fd = n->efd, .events = POLLIN },
			{ .fd = n->fd4, .events = POLLIN },
			{ .fd = n->fd6, .events = POLLIN },
		};
		int timeout = notify_expire(n);
		if (n->backlog) {
			notify_scan(n);
		}
		/* The zones' own targets are checked for changes once a
		 * second (an API or CLI change moves no serial). */
		int64_t check = n->secondaries_checked + 1000 - notify_now_ms();
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
		    notify_now_ms() - n->secondaries_checked >= 1000) {
			notify_refresh(n);
		}
		for (int i = 1; i < 3; i++) {
			if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLERR))) {
				notify_receive(n, fds[i].fd);
			}
		}
	}
	return NULL;
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
		n->rng = (uint32_t)notify_now_ms() | 1;
	}
	int ret = ZC_EOK;
	for (size_t t = 0; t < cfg->target_count && ret == ZC_EOK; t++) {
		secondary_notify_t spec;
		char err[512];
		ret = secondary_notify_parse(cfg->targets[t], &spec, err,
		                             sizeof(err));
		if (ret != ZC_EOK) {
			zc_error("notify: %s", err);
		} else if (notify_target_listed(n, &spec)) {
			zc_warn("notify: '%s' listed twice", cfg->targets[t]);
		} else if (notify_target_acquire(n, &spec) < 0) {
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
