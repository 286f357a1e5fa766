/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the administrative operations (admin_zone.c, admin_tsig.c, ...)
 * share: finding the zone a request names, and making a committed change
 * served before the answer (the server's builder, pass after pass, or a
 * build here when the command runs without a server).
 */
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <libknot/dname.h>

#include "cli/admin.h"
#include "common/error.h"
#include "dns/name_text.h"

/* How long a wait for the builder sleeps between two looks at most. */
#define SETTLE_POLL_MS 500

int admin_find_zone(admin_t *a, const char *cmd, const char *name,
                    records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = name != NULL && dns_name_from_text(apex, name, sizeof(apex)) !=
	          NULL ? ZC_EOK : ZC_EUSAGE;
	if (ret == ZC_EOK) {
		knot_dname_to_lower(apex);
		ret = records_zone_find(a->rs, apex, zone);
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast %s: no zone %s\n", cmd, name ? name : "");
	}
	return ret;
}

/* --- Making a change served --- */

/* RFC 1982: is serial at least version? */
static bool serial_reached(uint32_t serial, uint32_t version)
{
	return (int32_t)(serial - version) >= 0;
}

/* 0 when the edge store serves the change, 1 while not yet, or
 * ZC_EQUARANTINED when a build that read it failed (why: the reason). */
static int settled(admin_t *a, const admin_change_t *c, char *why,
                   size_t why_size)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(a->es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_zone_t zone;
	edge_quarantine_t q;
	bool same = edge_zone_get(&txn, c->apex, &zone) == ZC_EOK &&
	            zone.zone_id == c->zone_id;
	int state = 1;
	if (c->deleted ? !same : same && serial_reached(zone.serial,
	                                                c->version)) {
		state = 0;
	} else if (!c->deleted &&
	           edge_quarantine_get(&txn, c->zone_id, &q) == ZC_EOK &&
	           q.seq >= c->seq) {
		snprintf(why, why_size, "%s (the zone is quarantined, serving "
		         "serial %u)", q.reason, q.serial);
		state = ZC_EQUARANTINED;
	}
	edge_txn_abort(&txn);
	return state;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The server's side: waits for its builder, pass after pass. */
static int await_builder(admin_t *a, const admin_change_t *c, char *why,
                         size_t why_size)
{
	builder_follower_t *f = a->follower;
	for (;;) {
		uint64_t seen = builder_follower_passes(f);
		int ret = settled(a, c, why, why_size);
		if (ret != 1) {
			return ret;
		}
		if (builder_follower_applied(f) >= c->seq) {
			return ZC_EOK; /* Built, and a newer change went over it. */
		}
		if (a->stopping != NULL && atomic_load(a->stopping)) {
			snprintf(why, why_size, "zonecast serve is stopping: the "
			         "change is stored, and served once it runs again");
			return ZC_EBUSY;
		}
		ret = builder_follower_stalled(f);
		if (ret != ZC_EOK) {
			return ret;
		}
		int64_t start = mono_ms();
		if (!builder_follower_wait_pass(f, &seen, SETTLE_POLL_MS) &&
		    mono_ms() - start < SETTLE_POLL_MS / 10) {
			/* The follower is gone: no busy loop until the stop. */
			struct timespec nap = { .tv_nsec = 50 * 1000000L };
			nanosleep(&nap, NULL);
		}
	}
}

int admin_settle(admin_t *a, const admin_change_t *c, builder_stats_t *stats,
                 cli_progress_t *progress, char *why, size_t why_size)
{
	why[0] = '\0';
	a->stored = true; /* Called on a committed change only. */
	int ret;
	if (a->follower != NULL) {
		ret = await_builder(a, c, why, why_size);
	} else {
		ret = builder_full_build(a->rs, a->es, c->apex, stats,
		                         progress != NULL ? cli_progress_records :
		                         NULL, progress);
		if (ret != ZC_EOK) {
			snprintf(why, why_size, "%s", zc_strerror(ret));
		}
	}
	if (ret != ZC_EOK) {
		snprintf(a->unserved, sizeof(a->unserved), "%s",
		         why[0] != '\0' ? why : zc_strerror(ret));
	}
	return ret;
}

bool admin_abandoned(admin_t *a)
{
	if (a->stopping != NULL && atomic_load(a->stopping)) {
		fprintf(a->err, "zonecast: zonecast serve is stopping: the "
		        "request was given up, nothing changed\n");
		return true;
	}
	if (a->client_fd < 0) {
		return false;
	}
	struct pollfd p = { .fd = a->client_fd, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 0) <= 0) {
		return false;
	}
	char byte;
	bool gone = (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0 ||
	            recv(a->client_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
	if (gone) {
		fprintf(a->err, "zonecast: the client went away: the request "
		        "was given up, nothing changed\n");
	}
	return gone;
}
