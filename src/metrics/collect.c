/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One scrape: reads every stage's numbers and writes them in the text
 * format, family by family (docs/metrics.md lists them). Runs on the
 * listener's thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "metrics/internal.h"

static const char *const xfr_results[] = {
	[ZC_COUNT_XFR_AXFR - ZC_COUNT_XFR_AXFR] = "axfr",
	[ZC_COUNT_XFR_IXFR - ZC_COUNT_XFR_AXFR] = "ixfr",
	[ZC_COUNT_XFR_IXFR_AXFR - ZC_COUNT_XFR_AXFR] = "ixfr_as_axfr",
	[ZC_COUNT_XFR_UP_TO_DATE - ZC_COUNT_XFR_AXFR] = "up_to_date",
	[ZC_COUNT_XFR_REFUSED - ZC_COUNT_XFR_AXFR] = "refused",
	[ZC_COUNT_XFR_NOTAUTH - ZC_COUNT_XFR_AXFR] = "notauth",
	[ZC_COUNT_XFR_FAILED - ZC_COUNT_XFR_AXFR] = "failed",
};

static const char *const tsig_errors[] = {
	[ZC_COUNT_TSIG_BADKEY - ZC_COUNT_TSIG_BADKEY] = "BADKEY",
	[ZC_COUNT_TSIG_BADSIG - ZC_COUNT_TSIG_BADKEY] = "BADSIG",
	[ZC_COUNT_TSIG_BADTIME - ZC_COUNT_TSIG_BADKEY] = "BADTIME",
	[ZC_COUNT_TSIG_BADTRUNC - ZC_COUNT_TSIG_BADKEY] = "BADTRUNC",
	[ZC_COUNT_TSIG_FORMERR - ZC_COUNT_TSIG_BADKEY] = "FORMERR",
};

static const char *const proto_names[SERVER_STATS_PROTOS] = { "udp", "tcp" };

static double now_wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Build, start time, CPU and memory of the process. */
static void put_process(metrics_t *m, text_t *t)
{
	text_family(t, "zonecast_build_info", "gauge",
	            "Always 1; the version in a label.");
	text_printf(t, "zonecast_build_info{version=\"%s\",role=\"%s\"} 1\n",
	            ZONECAST_VERSION, m->cfg.follower != NULL ? "serve" : "edge");
	text_family(t, "process_start_time_seconds", "gauge",
	            "When the process started (Unix time; the metrics "
	            "endpoint's start, which is within the process's first "
	            "second).");
	text_sample(t, "process_start_time_seconds", "", (uint64_t)m->started_s);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		text_family(t, "process_cpu_seconds_total", "counter",
		            "User and system CPU time of the process.");
		text_sample_double(t, "process_cpu_seconds_total", "",
		                   ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		                   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, resident;
	if (f != NULL && fscanf(f, "%llu %llu", &size, &resident) == 2) {
		text_family(t, "process_resident_memory_bytes", "gauge",
		            "Resident memory of the process.");
		text_sample(t, "process_resident_memory_bytes", "",
		            resident * (uint64_t)sysconf(_SC_PAGESIZE));
	}
	if (f != NULL) {
		fclose(f);
	}
}

static void put_answers(text_t *t, const server_counts_t *st)
{
	text_family(t, "zonecast_dns_queries_total", "counter",
	            "DNS messages answered by the workers, by transport, "
	            "query type and response code.");
	for (unsigned p = 0; p < SERVER_STATS_PROTOS; p++) {
		for (unsigned ty = 0; ty < SERVER_STATS_TYPES; ty++) {
			for (unsigned r = 0; r < SERVER_STATS_RCODES; r++) {
				uint64_t n = st->proto[p].answers[ty][r];
				if (n == 0) {
					continue;
				}
				char labels[128];
				snprintf(labels, sizeof(labels), "proto=\"%s\","
				         "type=\"%s\",rcode=\"%s\"", proto_names[p],
				         server_stats_type_name(ty),
				         server_stats_rcode_name(r));
				text_sample(t, "zonecast_dns_queries_total", labels, n);
			}
		}
	}
	text_family(t, "zonecast_dns_dropped_total", "counter",
	            "DNS messages given no answer (too short, a response, a "
	            "question that cannot be read), by transport.");
	for (unsigned p = 0; p < SERVER_STATS_PROTOS; p++) {
		char labels[32];
		snprintf(labels, sizeof(labels), "proto=\"%s\"", proto_names[p]);
		text_sample(t, "zonecast_dns_dropped_total", labels,
		            st->proto[p].dropped);
	}
	text_family(t, "zonecast_dns_deferred_total", "counter",
	            "DNS messages handed to another thread: UPDATE, zone "
	            "transfers, TSIG-signed queries, by transport.");
	for (unsigned p = 0; p < SERVER_STATS_PROTOS; p++) {
		for (unsigned k = 0; k < SERVER_STATS_DEFERRED; k++) {
			char labels[64];
			snprintf(labels, sizeof(labels), "proto=\"%s\",kind=\"%s\"",
			         proto_names[p], server_stats_deferred_name(k));
			text_sample(t, "zonecast_dns_deferred_total", labels,
			            st->proto[p].deferred[k]);
		}
	}
	text_family(t, "zonecast_dns_answer_duration_seconds", "histogram",
	            "Time a worker spends answering one message (parsing, "
	            "lookup, signing, RRL), by transport.");
	for (unsigned p = 0; p < SERVER_STATS_PROTOS; p++) {
		char labels[32];
		snprintf(labels, sizeof(labels), "proto=\"%s\"", proto_names[p]);
		text_histogram(t, "zonecast_dns_answer_duration_seconds", labels,
		               &st->proto[p].latency, 1e9);
	}
}

static void put_abuse(text_t *t, const server_counts_t *st)
{
	text_family(t, "zonecast_dns_cookies_total", "counter",
	            "Queries with EDNS by DNS Cookie outcome (RFC 7873): no "
	            "COOKIE option, a new server cookie given, a valid server "
	            "cookie, a malformed option (FORMERR).");
	for (unsigned c = 1; c < SERVER_STATS_COOKIES; c++) {
		uint64_t n = 0;
		for (unsigned p = 0; p < SERVER_STATS_PROTOS; p++) {
			n += st->proto[p].cookies[c];
		}
		char labels[48];
		snprintf(labels, sizeof(labels), "result=\"%s\"",
		         server_stats_cookie_name(c));
		text_sample(t, "zonecast_dns_cookies_total", labels, n);
	}
	text_family(t, "zonecast_rrl_limited_total", "counter",
	            "UDP responses over the response rate limit: dropped, or "
	            "slipped (sent truncated).");
	text_sample(t, "zonecast_rrl_limited_total", "action=\"drop\"",
	            st->rrl_dropped);
	text_sample(t, "zonecast_rrl_limited_total", "action=\"slip\"",
	            st->rrl_slipped);
	text_family(t, "zonecast_tsig_refusals_total", "counter",
	            "TSIG-signed requests refused (UPDATE, transfers, signed "
	            "queries), by the error answered.");
	for (int c = ZC_COUNT_TSIG_BADKEY; c <= ZC_COUNT_TSIG_FORMERR; c++) {
		char labels[32];
		snprintf(labels, sizeof(labels), "error=\"%s\"",
		         tsig_errors[c - ZC_COUNT_TSIG_BADKEY]);
		text_sample(t, "zonecast_tsig_refusals_total", labels,
		            zc_counter_get((zc_counter_t)c));
	}
	text_family(t, "zonecast_signature_cache_hits_total", "counter",
	            "RRSIGs served from the workers' signature caches.");
	text_sample(t, "zonecast_signature_cache_hits_total", "",
	            st->sigcache_hits);
	text_family(t, "zonecast_signature_cache_misses_total", "counter",
	            "RRSIGs made at answer time (not in a cache, or expiring).");
	text_sample(t, "zonecast_signature_cache_misses_total", "",
	            st->sigcache_misses);
	text_family(t, "zonecast_dns_workers", "gauge",
	            "DNS worker threads (UDP and TCP).");
	text_sample(t, "zonecast_dns_workers", "", st->workers);
}

static void put_writer(text_t *t)
{
	zc_hist_read_t h;
	text_family(t, "zonecast_writer_batches_total", "counter",
	            "Group commits of the writer (one transaction, one fsync "
	            "each).");
	text_sample(t, "zonecast_writer_batches_total", "",
	            zc_counter_get(ZC_COUNT_WRITER_BATCHES));
	text_family(t, "zonecast_writer_units_total", "counter",
	            "Writes (an API call, an API batch, an UPDATE) run by the "
	            "writer, by outcome.");
	text_sample(t, "zonecast_writer_units_total", "result=\"ok\"",
	            zc_counter_get(ZC_COUNT_WRITER_UNITS_OK));
	text_sample(t, "zonecast_writer_units_total", "result=\"failed\"",
	            zc_counter_get(ZC_COUNT_WRITER_UNITS_FAILED));
	text_family(t, "zonecast_writer_batch_units", "histogram",
	            "Writes per group commit.");
	zc_histogram_get(ZC_HIST_WRITER_BATCH_UNITS, &h);
	text_histogram(t, "zonecast_writer_batch_units", "", &h, 1);
	text_family(t, "zonecast_writer_commit_duration_seconds", "histogram",
	            "Time of a group commit's COMMIT, its fsync included.");
	zc_histogram_get(ZC_HIST_WRITER_COMMIT_NS, &h);
	text_histogram(t, "zonecast_writer_commit_duration_seconds", "", &h,
	               1e9);
}

/* The records store's latencies, by backend, and whether it answers. */
static void put_records_store(metrics_t *m, text_t *t)
{
	if (m->backend == NULL) {
		return;
	}
	char labels[32];
	snprintf(labels, sizeof(labels), "backend=\"%s\"", m->backend);
	zc_hist_read_t h;
	text_family(t, "zonecast_records_store_up", "gauge",
	            "1 while the records store answers this node (on "
	            "PostgreSQL its heartbeat, every second), 0 while not.");
	text_sample(t, "zonecast_records_store_up", labels,
	            zc_gauge_get(ZC_GAUGE_RECORDS_STORE_UP) > 0);
	text_family(t, "zonecast_records_store_write_duration_seconds",
	            "histogram", "Time of the writer's group commit in the "
	            "records store, from BEGIN to the COMMIT acknowledged "
	            "(every write of the batch included).");
	zc_histogram_get(ZC_HIST_RECORDS_WRITE_NS, &h);
	text_histogram(t, "zonecast_records_store_write_duration_seconds",
	               labels, &h, 1e9);
	text_family(t, "zonecast_records_store_read_duration_seconds",
	            "histogram", "Time of the builder's read of the change log "
	            "at each pass, idle ones included (a snapshot of the "
	            "records store opened, the events since the last pass "
	            "read).");
	zc_histogram_get(ZC_HIST_RECORDS_READ_NS, &h);
	text_histogram(t, "zonecast_records_store_read_duration_seconds",
	               labels, &h, 1e9);
}

/* Opens the records store at the first scrape that needs it. */
static records_store_t *records(metrics_t *m)
{
	if (m->rs == NULL && m->cfg.data_dir != NULL &&
	    records_open(&m->rs, m->cfg.data_dir) != ZC_EOK) {
		m->rs = NULL;
	}
	return m->rs;
}

static void put_builder(metrics_t *m, text_t *t)
{
	builder_follower_t *f = m->cfg.follower;
	zc_hist_read_t h;
	text_family(t, "zonecast_builder_passes_total", "counter",
	            "Passes of the builder over the change log (idle polls "
	            "included).");
	text_sample(t, "zonecast_builder_passes_total", "",
	            zc_counter_get(ZC_COUNT_BUILDER_PASSES));
	text_family(t, "zonecast_builder_pass_failures_total", "counter",
	            "Builder passes that failed (retried from the same place).");
	text_sample(t, "zonecast_builder_pass_failures_total", "",
	            zc_counter_get(ZC_COUNT_BUILDER_PASSES_FAILED));
	text_family(t, "zonecast_builder_pass_duration_seconds", "histogram",
	            "Time of a builder pass that read or built something.");
	zc_histogram_get(ZC_HIST_BUILDER_PASS_NS, &h);
	text_histogram(t, "zonecast_builder_pass_duration_seconds", "", &h, 1e9);
	uint64_t applied = builder_follower_applied(f);
	text_family(t, "zonecast_builder_applied_sequence", "gauge",
	            "Change-log sequence up to which everything is built.");
	text_sample(t, "zonecast_builder_applied_sequence", "", applied);
	text_family(t, "zonecast_builder_stalled", "gauge",
	            "1 while a storage error keeps the builder from applying "
	            "the change log (writes are refused meanwhile).");
	text_sample(t, "zonecast_builder_stalled", "",
	            builder_follower_stalled(f) != ZC_EOK);
	records_backlog_t backlog;
	records_store_t *rs = records(m);
	if (rs == NULL || records_backlog(rs, applied, &backlog) != ZC_EOK) {
		return;
	}
	uint64_t pending = backlog.events;
	int64_t oldest = backlog.oldest_ms;
	text_family(t, "zonecast_builder_lag_events", "gauge",
	            "Change-log events committed and not yet built.");
	text_sample(t, "zonecast_builder_lag_events", "", pending);
	text_family(t, "zonecast_builder_lag_seconds", "gauge",
	            "Age of the oldest change not yet built (0: none).");
	double age = pending > 0 && oldest > 0 ? now_wall_s() - oldest / 1e3 : 0;
	text_sample_double(t, "zonecast_builder_lag_seconds", "",
	                   age > 0 ? age : 0);
}

static void put_transfers(text_t *t)
{
	text_family(t, "zonecast_transfers_total", "counter",
	            "Zone transfers asked of this server, by outcome: AXFR, "
	            "IXFR as differences, IXFR answered with the whole zone, "
	            "IXFR already up to date, refused, NOTAUTH, failed.");
	for (int c = ZC_COUNT_XFR_AXFR; c <= ZC_COUNT_XFR_FAILED; c++) {
		char labels[48];
		snprintf(labels, sizeof(labels), "result=\"%s\"",
		         xfr_results[c - ZC_COUNT_XFR_AXFR]);
		text_sample(t, "zonecast_transfers_total", labels,
		            zc_counter_get((zc_counter_t)c));
	}
	text_family(t, "zonecast_notify_sent_total", "counter",
	            "NOTIFY messages sent to secondaries, resends included.");
	text_sample(t, "zonecast_notify_sent_total", "",
	            zc_counter_get(ZC_COUNT_NOTIFY_SENT));
	text_family(t, "zonecast_notify_results_total", "counter",
	            "NOTIFYs by outcome: answered NOERROR, answered with "
	            "another code, no answer after every resend.");
	text_sample(t, "zonecast_notify_results_total", "result=\"noerror\"",
	            zc_counter_get(ZC_COUNT_NOTIFY_ACKED));
	text_sample(t, "zonecast_notify_results_total", "result=\"error\"",
	            zc_counter_get(ZC_COUNT_NOTIFY_ERROR));
	text_sample(t, "zonecast_notify_results_total", "result=\"timeout\"",
	            zc_counter_get(ZC_COUNT_NOTIFY_TIMEOUT));
}

static int find_zone(const metrics_t *m, int64_t zone_id)
{
	size_t lo = 0, hi = m->zone_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->zones[mid].zone_id < zone_id) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo < m->zone_count && m->zones[lo].zone_id == zone_id ?
	       (int)lo : -(int)lo - 1;
}

/* Adds events to a zone's change counter. */
static int add_changes(int64_t zone_id, uint64_t events, void *ctx)
{
	metrics_t *m = ctx;
	int i = find_zone(m, zone_id);
	if (i >= 0) {
		m->zones[i].events += events;
		return 0;
	}
	size_t at = (size_t)(-i - 1);
	if (m->zone_count == m->zone_cap) {
		size_t cap = m->zone_cap ? m->zone_cap * 2 : 64;
		zone_changes_t *grown = realloc(m->zones, cap * sizeof(*grown));
		if (grown == NULL) {
			return 0; /* Uncounted: the counter lags, never lies high. */
		}
		m->zones = grown;
		m->zone_cap = cap;
	}
	memmove(&m->zones[at + 1], &m->zones[at],
	        (m->zone_count - at) * sizeof(m->zones[0]));
	m->zones[at] = (zone_changes_t){ .zone_id = zone_id, .events = events };
	m->zone_count++;
	return 0;
}

/* Reads the change log since the last scrape into the zone counters. */
static void update_changes(metrics_t *m)
{
	records_store_t *rs = records(m);
	if (rs == NULL) {
		return;
	}
	uint64_t last = m->changes_seq;
	if (records_zone_activity(rs, m->changes_seq, add_changes, m, &last) ==
	    ZC_EOK) {
		m->changes_seq = last;
	}
}

typedef struct {
	metrics_t *m;
	text_t *serial, *changes;
	unsigned zones, shown;
} zone_walk_t;

static int put_zone(const edge_zone_t *zone, void *ctx)
{
	zone_walk_t *z = ctx;
	z->zones++;
	int at = find_zone(z->m, (int64_t)zone->zone_id);
	if (at >= 0) {
		z->m->zones[at].served = true;
	}
	if (z->shown >= z->m->cfg.zone_limit) {
		return 0;
	}
	z->shown++;
	char name[KNOT_DNAME_TXT_MAXLEN + 1], value[2 * sizeof(name)];
	char labels[sizeof(value) + 16];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	text_label_value(name, value, sizeof(value));
	snprintf(labels, sizeof(labels), "zone=\"%s\"", value);
	text_sample(z->serial, "zonecast_zone_serial", labels, zone->serial);
	if (z->changes != NULL) {
		text_sample(z->changes, "zonecast_zone_changes_total", labels,
		            at >= 0 ? z->m->zones[at].events : 0);
	}
	return 0;
}

static int count_quarantined(const edge_quarantine_t *q, void *ctx)
{
	(void)q;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* Zones: count, quarantined, and per zone (up to zone_limit) the serial
 * served and the changes committed since the start. */
static void put_zones(metrics_t *m, text_t *t)
{
	bool changes = m->cfg.data_dir != NULL;
	if (changes) {
		update_changes(m);
	}
	text_t serial = { 0 }, counted = { 0 };
	zone_walk_t z = { .m = m, .serial = &serial,
	                  .changes = changes ? &counted : NULL };
	edge_txn_t txn = { 0 };
	for (size_t i = 0; i < m->zone_count; i++) {
		m->zones[i].served = false;
	}
	if (edge_txn_begin_read(m->cfg.edge, &txn) == ZC_EOK &&
	    edge_zone_foreach(&txn, put_zone, &z) == ZC_EOK) {
		/* The counters of zones deleted go (zone ids are never
		 * given again: creating and deleting zones grew the table
		 * for good, outside tester 33): of those not served, the
		 * ones the records store no longer holds (a zone not built
		 * yet keeps its count: tester 36). */
		records_store_t *rs = records(m);
		size_t kept = 0;
		for (size_t i = 0; i < m->zone_count; i++) {
			records_zone_t zone;
			if (m->zones[i].served || rs == NULL ||
			    records_zone_get(rs, m->zones[i].zone_id, &zone) !=
			    ZC_ENOZONE) {
				m->zones[kept++] = m->zones[i];
			}
		}
		m->zone_count = kept;
	}
	edge_txn_abort(&txn);
	uint64_t quarantined = 0;
	builder_quarantine_list(m->cfg.edge, count_quarantined, &quarantined);
	text_family(t, "zonecast_zones", "gauge", "Zones served.");
	text_sample(t, "zonecast_zones", "", z.zones);
	text_family(t, "zonecast_zones_quarantined", "gauge",
	            "Zones whose builds fail: served at their last good "
	            "version, writes refused (docs/architecture.md).");
	text_sample(t, "zonecast_zones_quarantined", "", quarantined);
	text_family(t, "zonecast_zone_serial", "gauge",
	            "SOA serial served, per zone (up to metrics-zone-limit "
	            "zones).");
	text_printf(t, "%.*s", (int)serial.len, serial.buf ? serial.buf : "");
	if (changes) {
		text_family(t, "zonecast_zone_changes_total", "counter",
		            "Change-log events committed to the zone (a record "
		            "created or deleted, a zone-level change) since the "
		            "server started, per zone.");
		text_printf(t, "%.*s", (int)counted.len,
		            counted.buf ? counted.buf : "");
	}
	t->failed |= serial.failed || counted.failed;
	free(serial.buf);
	free(counted.buf);
}

static void put_edge_store(metrics_t *m, text_t *t)
{
	uint64_t used, size;
	edge_map_usage(m->cfg.edge, &used, &size);
	text_family(t, "zonecast_lmdb_map_size_bytes", "gauge",
	            "Size of the edge store's LMDB map (it doubles when full).");
	text_sample(t, "zonecast_lmdb_map_size_bytes", "", size);
	text_family(t, "zonecast_lmdb_map_used_bytes", "gauge",
	            "Bytes of the map up to its last used page.");
	text_sample(t, "zonecast_lmdb_map_used_bytes", "", used);
}

/* A family of one sample without labels. */
typedef struct {
	const char *name, *type, *help;
	uint64_t value;
} single_t;

static void put_singles(text_t *t, const single_t *singles, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		text_family(t, singles[i].name, singles[i].type, singles[i].help);
		text_sample(t, singles[i].name, "", singles[i].value);
	}
}

#define PUT_SINGLES(t, singles) \
	put_singles((t), (singles), sizeof(singles) / sizeof((singles)[0]))

#define CONNECTED_HELP "1 while the NATS connection is up."

static void put_fleet_primary(metrics_t *m, text_t *t)
{
	uint64_t epoch, committed, published, term;
	bool connected, leading;
	fleet_position(m->cfg.fleet, &epoch, &committed, &published, &connected);
	fleet_leading(m->cfg.fleet, &leading, &term);
	const single_t singles[] = {
		{ "zonecast_fleet_connected", "gauge", CONNECTED_HELP, connected },
		{ "zonecast_fleet_commit", "gauge", "Newest commit of the "
		  "replication log (the primary's position).", committed },
		{ "zonecast_fleet_published_commit", "gauge", "Newest commit "
		  "acknowledged by JetStream.", published },
		{ "zonecast_fleet_leader", "gauge", "1 while this node publishes "
		  "to the fleet (leads it).", leading },
		{ "zonecast_fleet_term", "gauge", "This node's leader term while "
		  "it leads (0: no leadership, one node).", term },
		{ "zonecast_fleet_edges_seen", "gauge", "1 while the primary "
		  "reads its edges' reports (0: edge_up and lags say nothing).",
		  fleet_edges_seen(m->cfg.fleet, NULL, 0) },
	};
	PUT_SINGLES(t, singles);
	fleet_edge_status_t edges[64];
	size_t n = fleet_edges(m->cfg.fleet, 0, 0, edges, 64);
	char labels[64][2 * FLEET_NAME_MAX + 16];
	for (size_t i = 0; i < n; i++) {
		char value[2 * FLEET_NAME_MAX];
		text_label_value(edges[i].name, value, sizeof(value));
		snprintf(labels[i], sizeof(labels[i]), "edge=\"%s\"", value);
	}
	text_family(t, "zonecast_fleet_edge_up", "gauge",
	            "1 when the edge reported within fleet-edge-timeout.");
	for (size_t i = 0; i < n; i++) {
		text_sample(t, "zonecast_fleet_edge_up", labels[i], edges[i].up);
	}
	text_family(t, "zonecast_fleet_edge_lag_commits", "gauge",
	            "Commits of the primary an edge has not applied.");
	for (size_t i = 0; i < n; i++) {
		text_sample(t, "zonecast_fleet_edge_lag_commits", labels[i],
		            edges[i].lag_commits);
	}
	text_family(t, "zonecast_fleet_edge_lag_seconds", "gauge",
	            "Age of the oldest commit an edge lacks (0: none).");
	for (size_t i = 0; i < n; i++) {
		text_sample_double(t, "zonecast_fleet_edge_lag_seconds", labels[i],
		                   edges[i].lag_ms / 1e3);
	}
}

static void put_fleet_edge(metrics_t *m, text_t *t)
{
	uint64_t epoch, commit, term, fenced;
	bool connected;
	fleet_edge_position(m->cfg.fleet_edge, &epoch, &commit, &connected);
	fleet_edge_fencing(m->cfg.fleet_edge, &term, &fenced);
	const single_t singles[] = {
		{ "zonecast_fleet_connected", "gauge", CONNECTED_HELP, connected },
		{ "zonecast_fleet_applied_commit", "gauge", "Newest commit of the "
		  "primary's log this edge applied.", commit },
		{ "zonecast_fleet_term", "gauge", "Newest leader term this edge "
		  "has seen.", term },
		{ "zonecast_fleet_fenced_total", "counter", "Messages and "
		  "snapshots of an older leader term dropped.", fenced },
	};
	PUT_SINGLES(t, singles);
}

int metrics_collect(metrics_t *m, char **out, size_t *len)
{
	text_t t = { 0 };
	server_counts_t st;
	server_counts_get(m->cfg.server, &st);
	put_process(m, &t);
	put_answers(&t, &st);
	put_abuse(&t, &st);
	if (m->cfg.follower != NULL) {
		put_writer(&t);
		put_builder(m, &t);
		put_records_store(m, &t);
		put_transfers(&t);
	}
	put_zones(m, &t);
	put_edge_store(m, &t);
	if (m->cfg.fleet != NULL) {
		put_fleet_primary(m, &t);
	}
	if (m->cfg.fleet_edge != NULL) {
		put_fleet_edge(m, &t);
	}
	if (t.failed) {
		free(t.buf);
		return KNOT_ENOMEM;
	}
	*out = t.buf;
	*len = t.len;
	return ZC_EOK;
}

bool metrics_ready(metrics_t *m, char *why, size_t size)
{
	why[0] = '\0';
	if (m->cfg.fleet_edge != NULL) {
		uint64_t epoch, commit;
		bool connected;
		fleet_edge_position(m->cfg.fleet_edge, &epoch, &commit, &connected);
		snprintf(why, size, "%s%s", epoch == 0 ? "no data from the fleet "
		         "yet; " : "", connected ? "" : "not connected to NATS; ");
		return why[0] == '\0';
	}
	int stalled = builder_follower_stalled(m->cfg.follower);
	if (stalled != ZC_EOK) {
		snprintf(why, size, "builder stalled: %s; ", zc_strerror(stalled));
		return false;
	}
	records_backlog_t backlog;
	records_store_t *rs = records(m);
	if (rs == NULL || records_backlog(rs, builder_follower_applied(
	    m->cfg.follower), &backlog) != ZC_EOK) {
		snprintf(why, size, "cannot read the change log; ");
		return false;
	}
	uint64_t pending = backlog.events;
	int64_t oldest = backlog.oldest_ms;
	double lag = pending > 0 ? now_wall_s() - oldest / 1e3 : 0;
	if (lag * 1000 > m->cfg.ready_lag_ms) {
		snprintf(why, size, "builder behind: %llu changes, the oldest "
		         "%.1f s old; ", (unsigned long long)pending, lag);
		return false;
	}
	return true;
}
