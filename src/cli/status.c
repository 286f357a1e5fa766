/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What `zonecast status` and `zonecast zone status` show, as JSON built
 * by the running server (the control socket's thread): the server's
 * version, uptime, listeners and last reload; the builder's lag behind
 * the change log; the writer's queue; cache hit rates; on a PostgreSQL
 * records store, the leader and every node sharing it (their heartbeats,
 * cli/heartbeat.c); and per zone the stored and served serials, signing,
 * the last change, the build state and what its secondaries did last.
 * Also the zone list logged at start.
 *
 * Reads only: a records-store connection of its own per request, and the
 * edge store in one read transaction per zone.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "cli/serve.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/name_text.h"
#include "transfer/activity.h"

/* Zones listed one per line in the start log, at most. */
#define LOGGED_ZONES_MAX 1000

static int64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "2026-12-03T06:20:01Z", or JSON null for 0. */
static json_t *time_json(int64_t ms)
{
	if (ms <= 0) {
		return json_null();
	}
	char text[32];
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(text);
}

static json_t *rate_json(uint64_t hits, uint64_t misses)
{
	json_t *o = json_pack("{s:I, s:I}", "hits", (json_int_t)hits,
	                      "misses", (json_int_t)misses);
	json_object_set_new(o, "hit_rate", hits + misses == 0 ? json_null() :
	                    json_real((double)hits / (double)(hits + misses)));
	return o;
}

static json_t *listeners_json(const serve_ctx_t *ctx)
{
	const config_t *cfg = ctx->boot;
	json_t *dns = json_array();
	for (size_t i = 0; i < cfg->listen_count; i++) {
		json_array_append_new(dns, json_string(cfg->listen[i]));
	}
	server_stats_t st;
	server_stats(ctx->server, &st);
	return json_pack("{s:o, s:o, s:o, s:I}", "dns", dns,
	                 "api", cfg->api_listen[0] ? json_string(cfg->api_listen) :
	                                             json_null(),
	                 "control", json_string(ctx->control_path),
	                 "workers_per_address", (json_int_t)st.workers);
}

static int count_quarantined(const edge_quarantine_t *q, void *ctx)
{
	(void)q;
	(*(int *)ctx)++;
	return 0;
}

/* A position as records_position_text() writes it, under key: PostgreSQL
 * only, where the _seq fields are packed numbers (commit << 24 | rank). */
static void set_position(json_t *o, const char *key, records_store_t *rs,
                         uint64_t seq)
{
	char text[48];
	records_position_text(rs, seq, text, sizeof(text));
	json_object_set_new(o, key, json_string(text));
}

static json_t *builder_json(serve_ctx_t *ctx, records_store_t *rs)
{
	uint64_t applied = builder_follower_applied(ctx->follower);
	records_backlog_t b = { 0 };
	int ret = rs != NULL ? records_backlog(rs, applied, &b) : ZC_ESQL;
	int stalled = builder_follower_stalled(ctx->follower);
	int quarantined = 0;
	builder_quarantine_list(ctx->es, count_quarantined, &quarantined);
	json_t *o = json_pack("{s:I, s:I, s:I, s:i}",
	                      "applied_seq", (json_int_t)applied,
	                      "passes",
	                      (json_int_t)builder_follower_passes(ctx->follower),
	                      "lag_events", (json_int_t)b.events,
	                      "quarantined_zones", quarantined);
	json_object_set_new(o, "last_seq", ret == ZC_EOK ?
	                    json_integer((json_int_t)b.last_seq) : json_null());
	if (rs != NULL && records_changelog_numbering(rs) == RECORDS_LOG_COMMITS) {
		set_position(o, "applied_position", rs, applied);
		if (ret == ZC_EOK) {
			set_position(o, "last_position", rs, b.last_seq);
		}
	}
	json_object_set_new(o, "lag_ms", json_integer(b.oldest_ms > 0 ?
	                    (json_int_t)(unix_ms() - b.oldest_ms) : 0));
	json_object_set_new(o, "stalled", stalled == ZC_EOK ? json_null() :
	                    json_string(zc_strerror(stalled)));
	return o;
}

static json_t *reload_json(serve_ctx_t *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	json_t *o = json_pack("{s:I, s:o}", "count", (json_int_t)ctx->reloads,
	                      "last", time_json(ctx->last_reload_ms));
	if (ctx->last_reload_ms != 0) {
		json_object_set_new(o, "ok", json_boolean(ctx->last_reload_ok));
		json_object_set_new(o, "message",
		                    json_string(ctx->last_reload_msg));
	}
	pthread_mutex_unlock(&ctx->lock);
	return o;
}

/* --- The nodes sharing a PostgreSQL store --- */

typedef struct {
	serve_ctx_t *ctx;
	records_store_t *rs;
	json_t *nodes;
} nodes_walk_t;

static int add_node(const records_node_t *n, void *arg)
{
	nodes_walk_t *w = arg;
	records_backlog_t b = { 0 };
	bool lag_known = records_backlog(w->rs, n->applied_seq, &b) == ZC_EOK;
	bool up = n->seen_ago_ms >= 0 && n->seen_ago_ms <= RECORDS_NODE_DOWN_MS;
	json_t *o = json_pack("{s:s, s:b, s:s, s:i, s:s, s:o, s:o, s:I, s:b, "
	                      "s:I}",
	                      "name", n->name,
	                      "self", strcmp(n->name, w->ctx->boot->node_name) == 0,
	                      "role", n->role, "pid", n->pid,
	                      "version", n->version,
	                      "started", time_json(n->started_ms),
	                      "last_seen", time_json(n->last_seen_ms),
	                      "seen_ago_ms", (json_int_t)n->seen_ago_ms,
	                      "up", up,
	                      "applied_seq", (json_int_t)n->applied_seq);
	set_position(o, "applied_position", w->rs, n->applied_seq);
	json_object_set_new(o, "lag_events", lag_known ?
	                    json_integer((json_int_t)b.events) : json_null());
	json_object_set_new(o, "lag_ms", !lag_known ? json_null() :
	                    json_integer(b.events > 0 && b.oldest_ms > 0 ?
	                                 (json_int_t)(unix_ms() - b.oldest_ms) :
	                                 0));
	json_object_set_new(o, "stalled", n->stalled == ZC_EOK ? json_null() :
	                    json_string(zc_strerror(n->stalled)));
	json_array_append_new(w->nodes, o);
	return 0;
}

/* Whether the node named so is listed up (a leader that died stays
 * named in the leader row until another takes over). */
static bool is_up(const json_t *nodes, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach(nodes, i, n) {
		if (strcmp(json_string_value(json_object_get(n, "name")),
		           name) == 0) {
			return json_is_true(json_object_get(n, "up"));
		}
	}
	return false;
}

/* The leader and every node into the records store's object (PostgreSQL
 * only), or why they cannot be read. */
static void add_nodes(serve_ctx_t *ctx, records_store_t *rs, json_t *store)
{
	records_leader_row_t leader;
	nodes_walk_t w = { .ctx = ctx, .rs = rs, .nodes = json_array() };
	int ret = rs != NULL ? records_leader_row_get(rs, &leader) :
	          ZC_EUNAVAILABLE;
	if (ret == ZC_EOK) {
		ret = records_nodes_list(rs, add_node, &w);
	}
	if (ret != ZC_EOK) {
		json_decref(w.nodes);
		json_object_set_new(store, "error", json_string(zc_strerror(ret)));
		return;
	}
	json_object_set_new(store, "leader", leader.epoch == 0 ||
	                    leader.node[0] == '\0' ? json_null() :
	                    json_pack("{s:s, s:I, s:o, s:b}", "node", leader.node,
	                              "epoch", (json_int_t)leader.epoch,
	                              "since", time_json(leader.since_ms),
	                              "up", is_up(w.nodes, leader.node)));
	json_object_set_new(store, "nodes", w.nodes);
}

static int count_zone(const records_zone_t *zone, void *arg)
{
	(void)zone;
	(*(json_int_t *)arg)++;
	return 0;
}

json_t *serve_status(serve_ctx_t *ctx)
{
	records_store_t *rs = NULL;
	if (records_open(&rs, ctx->boot->data_dir) != ZC_EOK) {
		rs = NULL;
	}
	json_int_t zones = 0;
	if (rs != NULL) {
		records_zone_list(rs, false, count_zone, &zones);
	}
	writer_stats_t w;
	writer_stats(ctx->writer, &w);
	server_stats_t s;
	server_stats(ctx->server, &s);
	int64_t now = unix_ms();
	const char *backend = "unknown";
	char where[4200] = "";
	records_describe(ctx->boot->data_dir, &backend, where, sizeof(where));
	json_t *o = json_pack(
		"{s:s, s:i, s:s, s:{s:s, s:s}, s:o, s:I, s:o, s:o, s:I, s:o,"
		" s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:o}, s:{s:I, s:I}}",
		"version", ZONECAST_VERSION, "pid", (int)getpid(),
		"data_dir", ctx->boot->data_dir,
		"records_store", "backend", backend, "where", where,
		"started", time_json(ctx->started_ms),
		"uptime_s", (json_int_t)((now - ctx->started_ms) / 1000),
		"listeners", listeners_json(ctx),
		"reload", reload_json(ctx),
		"zones", zones,
		"builder", builder_json(ctx, rs),
		"writer", "queued", (json_int_t)w.queued,
		"batches", (json_int_t)w.batches, "units", (json_int_t)w.units,
		"last_batch", (json_int_t)w.last_batch,
		"cut_batches", (json_int_t)w.splits,
		"replayed_batches", (json_int_t)w.replays,
		"caches", "signatures", rate_json(s.signature_hits,
		                                  s.signature_misses),
		"rrl", "dropped", (json_int_t)s.rrl_dropped,
		"slipped", (json_int_t)s.rrl_slipped);
	json_t *store = json_object_get(o, "records_store");
	json_object_set_new(store, "node", json_string(ctx->boot->node_name));
	if (strcmp(backend, "postgresql") == 0) {
		add_nodes(ctx, rs, store);
	}
	records_close(rs);
	return o;
}

/* --- Zones --- */

static json_t *notify_json(const transfer_activity_t *a)
{
	if (!a->notified) {
		return json_null();
	}
	return json_pack("{s:I, s:s, s:i, s:o}",
	                 "serial", (json_int_t)a->notify_serial,
	                 "result", a->notify_result, "tries", (int)a->notify_tries,
	                 "time", time_json(a->notify_ms));
}

static json_t *transfer_json(const transfer_activity_t *a)
{
	if (!a->transferred) {
		return json_null();
	}
	return json_pack("{s:s, s:I, s:s, s:o}", "kind", a->transfer_kind,
	                 "serial", (json_int_t)a->transfer_serial,
	                 "result", a->transfer_result,
	                 "time", time_json(a->transfer_ms));
}

static int add_peer(const transfer_activity_t *a, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s, s:o, s:o}", "peer", a->peer,
	                                     "notify", notify_json(a),
	                                     "transfer", transfer_json(a)));
	return 0;
}

/* What the edge store serves of a zone. */
typedef struct {
	bool built;
	uint32_t serial;
	bool is_signed;
	bool quarantined;
	edge_quarantine_t q;
} served_t;

static void read_served(edge_store_t *es, const records_zone_t *zone,
                        served_t *out)
{
	memset(out, 0, sizeof(*out));
	edge_txn_t txn = { 0 };
	if (edge_txn_begin_read(es, &txn) == ZC_EOK) {
		edge_zone_t meta;
		if (edge_zone_get(&txn, zone->apex, &meta) == ZC_EOK) {
			out->built = true;
			out->serial = meta.serial;
		}
		const uint8_t *val;
		size_t len;
		out->is_signed = edge_keys_get(&txn, (uint64_t)zone->id, &val,
		                               &len) == ZC_EOK && len > 0;
		edge_txn_abort(&txn);
	}
	out->quarantined = builder_quarantine_get(es, (uint64_t)zone->id,
	                                          &out->q) == ZC_EOK;
}

static const char *build_state(const records_zone_t *zone,
                               const served_t *s)
{
	if (s->quarantined) {
		return "quarantined";
	}
	if (!s->built) {
		return "not built";
	}
	return s->serial == zone->serial ? "ok" : "building";
}

static json_t *zone_json(edge_store_t *es, const records_zone_t *zone)
{
	served_t s;
	read_served(es, zone, &s);
	json_t *peers = json_array();
	transfer_activity_list(zone->apex, add_peer, peers);
	json_t *o = json_pack("{s:s, s:I, s:I, s:o, s:b, s:I, s:o, s:s, s:o}",
	                      "name", zone->name, "id", (json_int_t)zone->id,
	                      "serial", (json_int_t)zone->serial,
	                      "served_serial", s.built ?
	                      json_integer(s.serial) : json_null(),
	                      "signed", s.is_signed,
	                      "records", (json_int_t)zone->record_count,
	                      "last_change", time_json(zone->modified_on),
	                      "state", build_state(zone, &s),
	                      "secondaries", peers);
	if (s.quarantined) {
		json_object_set_new(o, "quarantine", json_pack(
			"{s:o, s:I, s:i, s:s}", "since", time_json(s.q.since_ms),
			"serving_serial", (json_int_t)s.q.serial,
			"attempts", (int)s.q.attempts, "reason", s.q.reason));
	}
	return o;
}

typedef struct {
	edge_store_t *es;
	records_store_t *rs;
	json_t *zones;
} list_t;

static int add_zone(const records_zone_t *zone, void *arg)
{
	list_t *l = arg;
	records_zone_t z = *zone;
	records_zone_kept_count(l->rs, z.id, &z.record_count);
	json_array_append_new(l->zones, zone_json(l->es, &z));
	return 0;
}

json_t *serve_zone_status(serve_ctx_t *ctx, const char *name, char *err,
                          size_t err_size)
{
	records_store_t *rs;
	int ret = records_open(&rs, ctx->boot->data_dir);
	if (ret != ZC_EOK) {
		snprintf(err, err_size, "cannot open the records store: %s",
		         zc_strerror(ret));
		return NULL;
	}
	list_t l = { .es = ctx->es, .rs = rs, .zones = json_array() };
	if (name == NULL) {
		ret = records_zone_list(rs, false, add_zone, &l);
	} else {
		uint8_t apex[KNOT_DNAME_MAXLEN];
		records_zone_t zone;
		ret = dns_name_from_text(apex, name, sizeof(apex)) != NULL ?
		      ZC_EOK : ZC_ENOZONE;
		if (ret == ZC_EOK) {
			knot_dname_to_lower(apex);
			ret = records_zone_find(rs, apex, &zone);
		}
		if (ret == ZC_EOK) {
			add_zone(&zone, &l);
		}
	}
	records_close(rs);
	if (ret != ZC_EOK) {
		snprintf(err, err_size, ret == ZC_ENOZONE ? "no zone %s" :
		         "cannot list the zones: %s", ret == ZC_ENOZONE ? name :
		         zc_strerror(ret));
		json_decref(l.zones);
		return NULL;
	}
	return json_pack("{s:o}", "zones", l.zones);
}

/* --- The start log --- */

typedef struct {
	edge_store_t *es;
	unsigned count;
} logged_t;

static int log_zone(const records_zone_t *zone, void *arg)
{
	logged_t *l = arg;
	if (l->count++ >= LOGGED_ZONES_MAX) {
		return 0;
	}
	served_t s;
	read_served(l->es, zone, &s);
	char served[32] = "not served";
	if (s.built) {
		snprintf(served, sizeof(served), "serving %u", s.serial);
	}
	zc_info("zone %s: serial %u, %s%s%s", zone->name, zone->serial, served,
	        s.is_signed ? ", signed" : "",
	        s.quarantined ? ", QUARANTINED (zonecast zone status says "
	                        "why)" : "");
	return 0;
}

void serve_log_zones(const char *data_dir, edge_store_t *es)
{
	records_store_t *rs;
	if (records_open(&rs, data_dir) != ZC_EOK) {
		return;
	}
	logged_t l = { .es = es };
	records_zone_list(rs, false, log_zone, &l);
	records_close(rs);
	if (l.count > LOGGED_ZONES_MAX) {
		zc_info("... and %u more zones (zonecast zone status lists them "
		        "all)", l.count - LOGGED_ZONES_MAX);
	}
	zc_info("%u zone(s)", l.count);
}
