/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The primary's view of its edges (see fleet.h): their reports from the
 * key-value bucket, the ring of which commit made which zone version, and
 * the answer to "which edges serve version N of this zone".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/primary.h"

#define WATCH_SILENCE_MS 3000
/* A report the watcher replays when it starts (the last one stored under
 * each name, of unknown age: the NATS server's clock is not this host's)
 * counts the edge up for this long, so that receipts wait for it until it
 * reports again (every second) or is known silent. */
#define REPLAY_GRACE_MS 2500

void fleet_ring_add(fleet_primary_t *fp, uint64_t commit, uint64_t zone_id,
                    uint32_t serial, int64_t sent_ms)
{
	size_t i = (fp->ring_head + fp->ring_len) % FLEET_RING;
	if (fp->ring_len == FLEET_RING) {
		fp->ring_head = (fp->ring_head + 1) % FLEET_RING;
		fp->ring_len--;
	}
	fp->ring[i] = (fleet_ring_entry_t){ commit, zone_id, serial, sent_ms };
	fp->ring_len++;
}

/* RFC 1982: is serial at least version? */
static bool serial_reached(uint32_t serial, uint32_t version)
{
	return (int32_t)(serial - version) >= 0;
}

/*
 * The commit an edge needs to serve `version` of the zone: the oldest of
 * the newest run of ring entries of the zone that reach it. When the ring
 * has none (not yet sent, or made before this process), every commit the
 * primary has (`current`) is needed. Lock held.
 */
static uint64_t needed_commit(fleet_primary_t *fp, uint64_t zone_id,
                              uint32_t version, uint64_t current)
{
	uint64_t need = 0;
	bool found = false;
	for (size_t k = fp->ring_len; k-- > 0;) {
		const fleet_ring_entry_t *e =
			&fp->ring[(fp->ring_head + k) % FLEET_RING];
		if (e->zone_id != zone_id) {
			continue;
		}
		if (!serial_reached(e->serial, version)) {
			break;
		}
		need = e->commit;
		found = true;
	}
	return found ? need : current;
}

/* The zone version an edge at `commit` serves, when the ring knows. */
static bool version_at(fleet_primary_t *fp, uint64_t zone_id, uint64_t commit,
                       uint32_t *serial)
{
	for (size_t k = fp->ring_len; k-- > 0;) {
		const fleet_ring_entry_t *e =
			&fp->ring[(fp->ring_head + k) % FLEET_RING];
		if (e->zone_id == zone_id && e->commit <= commit) {
			*serial = e->serial;
			return true;
		}
	}
	return false;
}

/* Age of the oldest commit after `commit` that was sent. */
static int64_t lag_ms(fleet_primary_t *fp, uint64_t commit, int64_t now)
{
	for (size_t k = 0; k < fp->ring_len; k++) {
		const fleet_ring_entry_t *e =
			&fp->ring[(fp->ring_head + k) % FLEET_RING];
		if (e->commit > commit) {
			return now - e->sent_ms;
		}
	}
	return 0;
}

size_t fleet_edges(fleet_primary_t *fp, uint64_t zone_id, uint32_t version,
                   fleet_edge_status_t *out, size_t max)
{
	int64_t now = fleet_now_ms(), mono = fleet_mono_ms();
	edge_repl_pos_t pos = { 0 };
	edge_repl_pos(fp->es, &pos);
	pthread_mutex_lock(&fp->lock);
	uint64_t need = zone_id ? needed_commit(fp, zone_id, version,
	                                        pos.commit) : pos.commit;
	size_t n = 0;
	for (size_t i = 0; i < fp->edge_count && n < max; i++) {
		const fleet_edge_report_t *r = &fp->edges[i];
		fleet_edge_status_t *s = &out[n++];
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", r->name);
		bool same = r->epoch == fp->epoch;
		s->up = mono - r->seen_mono <= (int64_t)fp->cfg.edge_timeout_ms;
		s->duplicate = r->duplicate_mono != 0 &&
		               mono - r->duplicate_mono <=
		               (int64_t)fp->cfg.edge_timeout_ms;
		s->commit = same ? r->commit : 0;
		s->term = r->term;
		s->same_history = same;
		s->live = s->up && same && r->commit >= need;
		/* Shown as a wall-clock time, measured here. */
		s->last_seen_ms = now - (mono - r->seen_mono);
		s->lag_commits = pos.commit > s->commit ?
		                 pos.commit - s->commit : 0;
		s->lag_ms = s->lag_commits > 0 ? lag_ms(fp, s->commit, now) : 0;
		if (zone_id != 0 && same) {
			s->version_known = version_at(fp, zone_id, r->commit,
			                              &s->version);
		}
	}
	pthread_mutex_unlock(&fp->lock);
	return n;
}

uint64_t fleet_edges_top_term(fleet_primary_t *fp, char *name, size_t size)
{
	int64_t now = fleet_mono_ms();
	uint64_t top = 0;
	pthread_mutex_lock(&fp->lock);
	for (size_t i = 0; i < fp->edge_count; i++) {
		const fleet_edge_report_t *r = &fp->edges[i];
		if (now - r->seen_mono <= (int64_t)fp->cfg.edge_timeout_ms &&
		    r->term > top) {
			top = r->term;
			snprintf(name, size, "%s", r->name);
		}
	}
	pthread_mutex_unlock(&fp->lock);
	return top;
}

void fleet_position(fleet_primary_t *fp, uint64_t *epoch, uint64_t *committed,
                    uint64_t *published, bool *connected)
{
	edge_repl_pos_t pos = { 0 };
	edge_repl_pos(fp->es, &pos);
	pthread_mutex_lock(&fp->lock);
	*epoch = fp->epoch;
	*committed = pos.commit;
	*published = fp->published;
	/* Ready to publish, and the connection up now: with nothing to
	 * publish, the publisher does not notice NATS going away, and GET
	 * /fleet said connected beside edges_unknown saying NATS was down
	 * (outside tester 29). fp->nc is replaced under the lock. */
	*connected = fp->connected && fp->nc != NULL &&
	             natsConnection_Status(fp->nc) == NATS_CONN_STATUS_CONNECTED;
	pthread_mutex_unlock(&fp->lock);
}

void fleet_wait(fleet_primary_t *fp, unsigned ms)
{
	/* Edges also go down by silence, which wakes nobody: look again. */
	ms = ms > 250 ? 250 : ms;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&fp->lock);
	pthread_cond_timedwait(&fp->changed, &fp->lock, &ts);
	pthread_mutex_unlock(&fp->lock);
}

/* The slot of an edge: its own, a free one, or the one silent longest. */
static size_t edge_slot(fleet_primary_t *fp, const char *name)
{
	size_t oldest = 0;
	for (size_t i = 0; i < fp->edge_count; i++) {
		if (strcmp(fp->edges[i].name, name) == 0) {
			return i;
		}
		if (fp->edges[i].seen_mono < fp->edges[oldest].seen_mono) {
			oldest = i;
		}
	}
	size_t i = fp->edge_count < FLEET_MAX_EDGES ? fp->edge_count++ : oldest;
	memset(&fp->edges[i], 0, sizeof(fp->edges[i]));
	snprintf(fp->edges[i].name, sizeof(fp->edges[i].name), "%s", name);
	return i;
}

/*
 * Takes one report {"name","epoch","commit","instance","term",...} from the
 * bucket, with its revision there. Its time is when this process saw it,
 * on its own monotonic clock: never the NATS server's time of storing it
 * (another host's clock: a primary ahead of it took every edge for
 * down). The revision last seen is no sign of life (a watcher that starts
 * over gets the last report of every edge again); a report replayed when
 * the watcher starts with nothing of that name (this process started) is
 * of unknown age: it counts the edge up for REPLAY_GRACE_MS (receipts wait
 * for it), the edge's next report (every second) makes that sure. A
 * process that replaces another under one name (an edge restarted) takes
 * its place; two that keep reporting under one name (one replaced comes
 * back) are flagged and logged.
 */
static void take_report(fleet_primary_t *fp, const char *key,
                        const char *val, int len, uint64_t revision,
                        bool replay)
{
	json_error_t err;
	json_t *j = json_loadb(val, (size_t)len, 0, &err);
	const char *epoch = NULL;
	json_int_t commit = 0, instance = 0, term = 0;
	if (j == NULL || json_unpack(j, "{s:s, s:I, s?I, s?I}", "epoch", &epoch,
	                             "commit", &commit, "instance", &instance,
	                             "term", &term) != 0 || term < 0) {
		json_decref(j);
		return;
	}
	uint64_t e = strtoull(epoch, NULL, 16);
	int64_t now = fleet_mono_ms();
	int64_t timeout = (int64_t)fp->cfg.edge_timeout_ms;
	pthread_mutex_lock(&fp->lock);
	fleet_edge_report_t *r = &fp->edges[edge_slot(fp, key)];
	/* (A lower revision: the bucket was recreated, it is news.) */
	if (revision == r->revision) {
		pthread_mutex_unlock(&fp->lock); /* Seen already. */
		json_decref(j);
		return;
	}
	bool known = r->revision != 0;
	if (known && r->instance != (uint64_t)instance) {
		if (instance != 0 && r->prev_instance == (uint64_t)instance &&
		    now - r->seen_mono <= timeout) {
			r->duplicate_mono = now;
			if (zc_log_due(&fp->dup_logged, 10000)) {
				zc_warn("fleet: two edges report as '%s': give each "
				        "its own --name", key);
			}
		}
		r->prev_instance = r->instance;
	}
	r->epoch = e;
	r->commit = (uint64_t)commit;
	r->instance = (uint64_t)instance;
	r->term = (uint64_t)term;
	r->revision = revision;
	if (replay && !known) {
		int64_t grace = timeout < REPLAY_GRACE_MS ? timeout :
		                REPLAY_GRACE_MS;
		r->seen_mono = now - timeout + grace;
	} else {
		r->seen_mono = now;
	}
	pthread_cond_broadcast(&fp->changed);
	pthread_mutex_unlock(&fp->lock);
	json_decref(j);
}

bool fleet_edges_seen(fleet_primary_t *fp, char *why, size_t size)
{
	pthread_mutex_lock(&fp->lock);
	bool seen = fp->watching;
	if (!seen && why != NULL) {
		snprintf(why, size, "%s", fp->blind_why[0] != '\0' ?
		         fp->blind_why : "the primary does not read its edges' "
		         "reports yet");
	}
	pthread_mutex_unlock(&fp->lock);
	return seen;
}

/*
 * The watcher sees the edges' reports again, or stops seeing them. The
 * silence while it did not is no sign of the edges: an edge that was up
 * when the primary went blind counts as up for REPLAY_GRACE_MS from now,
 * as a replayed report does, so that receipts wait for its next report
 * (every second) rather than take it for down (a NATS outage longer than
 * fleet-edge-timeout made receipts live at once, edges lacking the
 * version: outside tester 24).
 */
static void set_watching(fleet_primary_t *fp, bool on, const char *why)
{
	pthread_mutex_lock(&fp->lock);
	int64_t now = fleet_mono_ms();
	int64_t timeout = (int64_t)fp->cfg.edge_timeout_ms;
	int64_t grace = timeout < REPLAY_GRACE_MS ? timeout : REPLAY_GRACE_MS;
	if (fp->watching != on) {
		fp->watching = on;
		if (!on) {
			fp->blind_mono = now;
		}
		for (size_t i = 0; on && i < fp->edge_count; i++) {
			fleet_edge_report_t *r = &fp->edges[i];
			if (r->revision != 0 &&
			    fp->blind_mono - r->seen_mono <= timeout &&
			    r->seen_mono < now - timeout + grace) {
				r->seen_mono = now - timeout + grace;
			}
		}
		pthread_cond_broadcast(&fp->changed);
	}
	if (!on) {
		snprintf(fp->blind_why, sizeof(fp->blind_why), "%s", why);
	}
	pthread_mutex_unlock(&fp->lock);
}

/* When the bucket's stream was created (ZC_ENOZONE: it is gone). */
static int bucket_created(fleet_primary_t *fp, int64_t *created)
{
	char name[FLEET_STR_MAX + 4];
	snprintf(name, sizeof(name), "KV_%s", fp->names.bucket);
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, fp->wjs, name, NULL, &jerr);
	if (s != NATS_OK) {
		return s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr ?
		       ZC_ENOZONE : ZC_ENATS;
	}
	*created = si->Created;
	jsStreamInfo_Destroy(si);
	return ZC_EOK;
}

/*
 * Watches the reports bucket on a connection of its own (the publisher
 * replaces its own when the library closes it; this thread does the same
 * with its own). It starts over (a new watcher) when the watch fails, when
 * it was silent for WATCH_SILENCE_MS (its consumer lost with a cluster
 * node), when the bucket was made again (looked at every second: its
 * stream's creation time; or the publisher recreated it), and with a new
 * connection when the library closed this one. While its connection is
 * down or its watch is not running, fleet_edges_seen() says so: receipts
 * then call nothing live.
 */
void *fleet_watcher_main(void *arg)
{
	fleet_primary_t *fp = arg;
	fleet_renew_t renew = { 0 };
	set_watching(fp, false, "the primary is connecting to NATS to read its "
	             "edges' reports");
	if (fleet_connect_retry(&fp->cfg, &fp->stop, &fp->lock, &fp->wnc,
	                        &fp->wjs) != ZC_EOK) {
		return NULL;
	}
	while (!fp->stop) {
		if (fp->wnc == NULL || fleet_conn_closed(fp->wnc)) {
			set_watching(fp, false, "the primary's NATS connection for "
			             "its edges' reports was closed: connecting again");
			if (fleet_conn_renew(&fp->cfg, "receipts watcher", &fp->stop,
			                     &fp->lock, &fp->wnc, &fp->wjs, &renew) !=
			    ZC_EOK) {
				continue;
			}
		}
		atomic_store(&fp->rewatch, false);
		kvStore *kv = NULL;
		kvWatcher *w = NULL;
		natsStatus s = js_KeyValue(&kv, fp->wjs, fp->names.bucket);
		if (s == NATS_OK) {
			s = kvStore_WatchAll(&w, kv, NULL);
		}
		int64_t created = 0;
		if (s == NATS_OK) {
			bucket_created(fp, &created);
		}
		/* Edges report every second: a watcher silent for longer lost
		 * its consumer (a cluster node went away) and starts over. */
		int64_t last = fleet_mono_ms(), checked = last;
		bool replay = true; /* until the watcher's end-of-replay mark */
		const char *again = NULL;
		while (s == NATS_OK && !fp->stop && again == NULL) {
			kvEntry *e = NULL;
			s = kvWatcher_Next(&e, w, 250);
			int64_t now = fleet_mono_ms();
			if (natsConnection_Status(fp->wnc) !=
			    NATS_CONN_STATUS_CONNECTED) {
				set_watching(fp, false, "the primary's NATS connection "
				             "is down: it cannot see its edges' reports");
			} else if (!replay) {
				set_watching(fp, true, NULL);
			}
			bool got = s != NATS_TIMEOUT;
			if (!got) {
				s = now - last > WATCH_SILENCE_MS ? NATS_TIMEOUT : NATS_OK;
			} else {
				last = now;
			}
			if (got && s == NATS_OK && e == NULL) {
				replay = false;
				set_watching(fp, true, NULL);
			} else if (s == NATS_OK && e != NULL) {
				if (kvEntry_Operation(e) == kvOp_Put) {
					take_report(fp, kvEntry_Key(e), kvEntry_Value(e),
					            kvEntry_ValueLen(e), kvEntry_Revision(e),
					            replay);
				}
				kvEntry_Destroy(e);
			}
			if (atomic_load(&fp->rewatch)) {
				again = "the bucket was made again";
			} else if (s == NATS_OK && now - checked >= 1000) {
				checked = now;
				int64_t c = 0;
				int ret = bucket_created(fp, &c);
				if (ret == ZC_ENOZONE) {
					again = "the bucket is gone";
				} else if (ret == ZC_EOK && created == 0) {
					created = c;
				} else if (ret == ZC_EOK && c != created) {
					again = "the bucket was made again";
				}
			}
		}
		const char *why = again != NULL ? again : natsStatus_GetText(s);
		if (!fp->stop) {
			char text[512];
			snprintf(text, sizeof(text), "the primary is watching its "
			         "edges' reports (bucket %s) again: %s",
			         fp->names.bucket, why);
			set_watching(fp, false, text);
			if (zc_log_due(&fp->rewatch_logged, 10000)) {
				zc_info("fleet: watching %s again (%s)", fp->names.bucket,
				        why);
			}
		}
		if (w != NULL && !fp->stop && fp->wnc != NULL) {
			/* libnats 3.4 deletes a watcher's consumer when it is
			 * destroyed, and reads the consumer's name while its
			 * own thread, resetting the consumer after its stream
			 * went away, frees it (AddressSanitizer: a heap use
			 * after free in jsSub_deleteConsumer aborted the
			 * primary, when NATS lost its storage). On a closed
			 * connection nothing is deleted: it is made again at
			 * the loop's top, as after the library closed it. */
			natsConnection_Close(fp->wnc);
		}
		kvWatcher_Destroy(w);
		kvStore_Destroy(kv);
		if (!fp->stop && again == NULL) {
			fleet_sleep_ms(250);
		}
	}
	return NULL;
}
