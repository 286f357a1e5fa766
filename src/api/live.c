/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the DNS server serves of a zone, as the API tells it: the
 * propagation receipts (GET /zones/{id}/propagation, with a fleet's edges),
 * writes that answer only once this server serves them (?wait=live), the
 * zone's quarantine (the `quarantine` member of a zone, writes refused
 * with 409) and the way out of it (POST /zones/{id}/retry).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "api/format.h"
#include "api/live.h"
#include "api/pool.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"

/* Longest ?wait=S of a propagation receipt. */
#define MAX_WAIT_S 60
/* How long POST .../retry waits for the builder's verdict. */
#define RETRY_WAIT_MS 10000
#define CODE_QUARANTINED 7009

/* A wait sleeps at most this long at a time, then looks whether the API
 * stops: a SIGTERM does not wait out long polls (up to 60 s each). */
#define STOP_CHECK_MS 100

/* Whether a wait must end now: its deadline passed (left <= 0) or the
 * API stops. */
static bool wait_over(api_req_t *req, int64_t left)
{
	return left <= 0 || atomic_load(&req->api->stopping);
}

/* One sleep of a wait with left ms to go. */
static unsigned nap(int64_t left)
{
	return left < STOP_CHECK_MS ? (unsigned)left : STOP_CHECK_MS;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 1982: is serial at least version? */
static bool serial_reached(uint32_t serial, uint32_t version)
{
	return (int32_t)(serial - version) >= 0;
}

/* The serial the edge store serves for the zone (ZC_ENOZONE: none). */
static int edge_serial(api_req_t *req, int64_t zone_id, const uint8_t *apex,
                       uint32_t *serial)
{
	edge_txn_t txn = { 0 };
	edge_zone_t meta;
	*serial = 0;
	int ret = edge_txn_begin_read(req->api->cfg.edge, &txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&txn, apex, &meta);
		edge_txn_abort(&txn);
	}
	if (ret == ZC_EOK && meta.zone_id != (uint64_t)zone_id) {
		ret = ZC_ENOZONE; /* A deleted zone of the same name. */
	}
	if (ret == ZC_EOK) {
		*serial = meta.serial;
	}
	return ret;
}

json_t *api_quarantine_json(api_req_t *req, int64_t zone_id)
{
	edge_quarantine_t q;
	if (req->api->cfg.edge == NULL ||
	    builder_quarantine_get(req->api->cfg.edge, (uint64_t)zone_id, &q)
	    != ZC_EOK) {
		return json_null();
	}
	return json_pack("{s:s, s:i, s:o, s:o, s:I, s:I, s:b}",
	                 "reason", q.reason, "code", (int)q.code,
	                 "since", api_time(q.since_ms),
	                 "last_attempt", api_time(q.last_ms),
	                 "attempts", (json_int_t)q.attempts,
	                 "serving_serial", (json_int_t)q.serial,
	                 "retry_requested",
	                 (q.flags & EDGE_QUARANTINE_RETRY) != 0);
}

/* 409 naming the quarantine (its reason from the edge store), after
 * `what` ("nothing was written", "the retry failed"). */
static void refuse(api_req_t *req, const records_zone_t *zone,
                   const char *what)
{
	edge_quarantine_t q;
	char id[33];
	api_id_format(zone->id, id);
	if (builder_quarantine_get(req->api->cfg.edge, (uint64_t)zone->id, &q)
	    != ZC_EOK) {
		snprintf(q.reason, sizeof(q.reason), "its last build failed");
		q.serial = 0;
	}
	api_error(req, 409, CODE_QUARANTINED, "zone: %s is quarantined (%s): "
	          "%s. The DNS server answers from serial %u meanwhile; once "
	          "the cause is fixed, POST /zones/%s/retry (or `zonecast zone "
	          "retry %s`) releases it", zone->name, q.reason, what,
	          q.serial, id, zone->name);
}

bool api_zone_writable(api_req_t *req, const records_zone_t *zone)
{
	if (!builder_follower_quarantined(req->api->cfg.follower,
	                                  (uint64_t)zone->id)) {
		return true;
	}
	refuse(req, zone, "nothing was written");
	return false;
}

bool api_wait_arg(api_req_t *req)
{
	const char *w = api_query_arg(req, "wait");
	if (w == NULL || strcmp(req->method, "GET") == 0) {
		return true;
	}
	if (strcmp(w, "live") != 0) {
		api_error(req, 400, 1004, "wait: \"live\" is the only value a "
		          "write takes (answer once the DNS server serves it)");
		return false;
	}
	req->wait_live = true;
	return true;
}

int api_write(api_req_t *req, writer_fn fn, void *ctx)
{
	writer_unit_t u = { .fn = fn, .ctx = ctx, .want_seq = req->wait_live };
	int ret = writer_run_unit(req->api->writer, &u);
	req->live_seq = u.seq;
	req->write_lost = u.lost;
	return ret;
}

void api_wait_live(api_req_t *req)
{
	builder_follower_t *f = req->api->cfg.follower;
	if (!req->wait_live || !req->versioned || req->errors != NULL ||
	    req->live_zone_id == 0 || f == NULL) {
		return;
	}
	unsigned wait_ms = __atomic_load_n(&req->api->cfg.live_wait_ms,
	                                   __ATOMIC_RELAXED);
	wait_ms = wait_ms ? wait_ms : API_DEFAULT_LIVE_WAIT_MS;
	int64_t deadline = mono_ms() + wait_ms;
	uint64_t seen = builder_follower_passes(f);
	const char *why = NULL;
	for (;;) {
		uint32_t serial;
		/* The position first: the follower publishes the quarantine
		 * before it (builder/follow.c), so a zone whose build failed
		 * up to it is seen quarantined below, not taken for gone. */
		uint64_t applied = builder_follower_applied(f);
		if (builder_follower_quarantined(f, (uint64_t)req->live_zone_id)) {
			why = "the zone was quarantined meanwhile (GET the zone for "
			      "why); it is served once a build of it succeeds";
			break;
		}
		int ret = edge_serial(req, req->live_zone_id, req->live_apex,
		                      &serial);
		if (ret == ZC_EOK && serial_reached(serial,
		                                    (uint32_t)req->version)) {
			break;
		}
		if (ret == ZC_ENOZONE && req->live_seq != 0 &&
		    applied >= req->live_seq) {
			/* Applied past the write, and the zone is not there:
			 * deleted since (perhaps made again, another id). */
			why = "the zone was deleted after this write";
			break;
		}
		int64_t left = deadline - mono_ms();
		if (wait_over(req, left)) {
			why = left <= 0 ? "not served within live-wait; it is served "
			      "once the builder applies it" : "the server is "
			      "stopping; it is served once the builder applies it";
			break;
		}
		builder_follower_wait_pass(f, &seen, nap(left));
	}
	req->live = why == NULL ? 1 : 0;
	if (why != NULL) {
		req->status = 202; /* Committed, not yet served: no retry. */
		snprintf(req->note, sizeof(req->note), "committed as zone version "
		         "%lld but not live: %s", (long long)req->version, why);
	}
}

/* The fleet's part of a receipt: each edge, and whether every edge that
 * is up serves the version. */
static json_t *edges_json(fleet_primary_t *fleet, uint64_t zone_id,
                          uint32_t version, bool *all_live, size_t *live_count,
                          size_t *count, char *unseen, size_t unseen_size)
{
	static _Thread_local fleet_edge_status_t st[256];
	/* Edges the primary cannot see (its NATS connection or its watch of
	 * their reports down) are not known down: nothing is live at them. */
	unseen[0] = '\0';
	bool seen = fleet_edges_seen(fleet, unseen, unseen_size);
	*count = fleet_edges(fleet, zone_id, version, st, 256);
	*all_live = seen;
	*live_count = 0;
	json_t *arr = json_array();
	for (size_t i = 0; i < *count; i++) {
		*all_live = *all_live && (st[i].live || !st[i].up);
		*live_count += st[i].live;
		json_t *e = json_pack("{s:s, s:b, s:b, s:o, s:o}", "name", st[i].name,
		                      "up", st[i].up, "live", st[i].live,
		                      "version", st[i].version_known ?
		                      json_integer(st[i].version) : json_null(),
		                      "last_seen", api_time(st[i].last_seen_ms));
		json_array_append_new(arr, e);
	}
	return arr;
}

/* GET /zones/{id}/propagation?version=N[&wait=S]: is version N (or newer)
 * what this server answers from, and with a fleet every edge that is up?
 * Waits up to S seconds for it (not for a quarantined zone). */
void api_propagation(api_req_t *req, const records_zone_t *zone)
{
	static const char *const params[] = { "version", "wait", NULL };
	if (!api_args_only(req, params)) {
		return;
	}
	const char *v = api_query_arg(req, "version");
	const char *w = api_query_arg(req, "wait");
	char *end;
	long long version = v ? strtoll(v, &end, 10) : -1;
	if (v == NULL || end == v || *end != '\0' || version < 0 ||
	    version > UINT32_MAX) {
		api_error(req, 400, 1004, "version: a zone version is required");
		return;
	}
	double wait = w ? strtod(w, &end) : 0;
	/* Written so that NaN fails too (it would wait for ever). */
	if (w != NULL && (end == w || *end != '\0' ||
	                  !(wait >= 0 && wait <= MAX_WAIT_S))) {
		api_error(req, 400, 1004, "wait: 0 to %d seconds", MAX_WAIT_S);
		return;
	}
	/* What follows reads the edge store and the fleet, never the
	 * records store: its connection goes back before the wait (16 long
	 * polls held all 16 and stopped every other request). */
	api_store_release(req);
	builder_follower_t *f = req->api->cfg.follower;
	fleet_primary_t *fleet = req->api->cfg.fleet;
	int64_t deadline = mono_ms() + (int64_t)(wait * 1000);
	uint64_t seen = f != NULL ? builder_follower_passes(f) : 0;
	uint32_t serial = 0;
	int ret;
	bool here = false, edges_live = true;
	size_t live_count = 0, count = 0;
	json_t *edges = NULL;
	char unseen[512] = "";
	for (;;) {
		ret = edge_serial(req, zone->id, zone->apex, &serial);
		here = ret == ZC_EOK && serial_reached(serial, (uint32_t)version);
		if (here && fleet != NULL) {
			json_decref(edges);
			edges = edges_json(fleet, (uint64_t)zone->id,
			                   (uint32_t)version, &edges_live, &live_count,
			                   &count, unseen, sizeof(unseen));
		}
		if ((here && edges_live) || (ret != ZC_EOK && ret != ZC_ENOZONE) ||
		    f == NULL || builder_follower_quarantined(f, (uint64_t)zone->id)) {
			break;
		}
		int64_t left = deadline - mono_ms();
		if (wait_over(req, left)) {
			break;
		}
		if (!here) {
			builder_follower_wait_pass(f, &seen, nap(left));
		} else {
			fleet_wait(fleet, nap(left) + 1);
		}
	}
	if (fleet != NULL && edges == NULL) {
		edges = edges_json(fleet, (uint64_t)zone->id, (uint32_t)version,
		                   &edges_live, &live_count, &count, unseen,
		                   sizeof(unseen));
		edges_live = false; /* Not here yet: nowhere yet. */
	}
	req->result = json_pack("{s:I, s:I, s:b, s:o}", "version",
	                        (json_int_t)version, "edge_version",
	                        (json_int_t)(ret == ZC_EOK ? serial : 0),
	                        "live", here && edges_live, "quarantine",
	                        api_quarantine_json(req, zone->id));
	if (fleet != NULL) {
		json_object_set_new(req->result, "local_live", json_boolean(here));
		json_object_set_new(req->result, "edges", edges);
		json_object_set_new(req->result, "live_edges",
		                    json_integer((json_int_t)live_count));
		json_object_set_new(req->result, "edge_count",
		                    json_integer((json_int_t)count));
		/* Why the edges' state is not known (null: it is). */
		json_object_set_new(req->result, "edges_unknown", unseen[0] ?
		                    json_string(unseen) : json_null());
	}
}

/* POST /zones/{id}/retry: asks the builder to build a quarantined zone
 * again and waits (a bounded while) for the verdict. 200 with the zone
 * (quarantine null) when released, 409 when the build failed again, 202
 * while it has not finished; 200 at once for a zone not quarantined. */
void api_zone_retry(api_req_t *req, const records_zone_t *zone,
                    json_t *(*zone_json)(api_req_t *, const records_zone_t *))
{
	edge_store_t *es = req->api->cfg.edge;
	uint32_t attempts = 0;
	int ret = builder_quarantine_request_retry(es, (uint64_t)zone->id,
	                                           &attempts);
	if (ret == KNOT_ENOENT) {
		req->result = zone_json(req, zone);
		return;
	}
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "zone");
		return;
	}
	/* The zone as the answer shows it, read before the wait, which
	 * reads the edge store only and so holds no records store
	 * connection; read again after it when a connection comes. */
	json_t *answer = zone_json(req, zone);
	api_store_release(req);
	builder_follower_t *f = req->api->cfg.follower;
	if (f != NULL) {
		builder_follower_wake(f);
	}
	int64_t deadline = mono_ms() + RETRY_WAIT_MS;
	uint64_t seen = f != NULL ? builder_follower_passes(f) : 0;
	edge_quarantine_t q;
	for (;;) {
		ret = builder_quarantine_get(es, (uint64_t)zone->id, &q);
		int64_t left = deadline - mono_ms();
		if (ret != ZC_EOK || q.attempts != attempts ||
		    wait_over(req, left) || f == NULL) {
			break;
		}
		builder_follower_wait_pass(f, &seen, nap(left));
	}
	if (ret == ZC_EOK && q.attempts != attempts) {
		json_decref(answer);
		refuse(req, zone, "the retry failed again");
		return;
	}
	req->status = ret == ZC_EOK ? 202 : 200;
	if (ret == ZC_EOK) {
		snprintf(req->note, sizeof(req->note), "the retry has not "
		         "finished yet; GET the zone for its outcome");
	}
	/* A zone released takes writes again, and a quarantined one can be
	 * deleted: the zone as it is now, with a connection for this read
	 * alone (api_dispatch() gives it back); the one read before the
	 * wait when none comes or the zone is gone. */
	records_zone_t now;
	bool full;
	if (api_pool_get(req->api, true, &req->pool_slot, &req->rs, &full) ==
	    ZC_EOK && records_zone_get(req->rs, zone->id, &now) == ZC_EOK) {
		json_decref(answer);
		answer = zone_json(req, &now);
	}
	json_t *quarantine = api_quarantine_json(req, zone->id);
	json_object_set_new(answer, "status", json_string(
	                    json_is_null(quarantine) ? "active" : "quarantined"));
	json_object_set_new(answer, "quarantine", quarantine);
	req->result = answer;
}
