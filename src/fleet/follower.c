/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * An edge's follower (see fleet.h): bootstraps from the newest snapshot
 * when it has nothing (or a gap, or another epoch), follows the txn stream
 * applying whole commits; its reporter (report.c) tells the bucket. It
 * drops what a leader older than the newest it saw sends (fencing).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <jansson.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/edge_node.h"

#define RETRY_MS 250
#define STALL_CHECK_MS 2000
#define MAX_BACKOFF_MS 8000
/* The longest an open commit waits for its next part. The primary sends
 * a commit's parts back to back: a commit whose next part does not come
 * within this is abandoned (a forged first part, or a publisher that
 * died mid-commit), its LMDB write transaction aborted, and the edge
 * resyncs as after a gap. */
#define OPEN_MAX_MS 5000


static void set_position(fleet_edge_t *fe, uint64_t epoch, uint64_t commit,
                         uint64_t seq)
{
	pthread_mutex_lock(&fe->lock);
	fe->epoch = epoch;
	fe->commit = commit;
	fe->seq = seq;
	fe->dirty = true;
	pthread_cond_signal(&fe->changed);
	pthread_mutex_unlock(&fe->lock);
}

void fleet_edge_position(fleet_edge_t *fe, uint64_t *epoch, uint64_t *commit,
                         bool *connected)
{
	pthread_mutex_lock(&fe->lock);
	*epoch = fe->epoch;
	*commit = fe->commit;
	*connected = fe->nc != NULL &&
	             natsConnection_Status(fe->nc) == NATS_CONN_STATUS_CONNECTED;
	pthread_mutex_unlock(&fe->lock);
}

static void abort_open(fleet_edge_t *fe)
{
	if (fe->open) {
		edge_apply_abort(&fe->ap);
		fe->open = false;
	}
}

void fleet_edge_fencing(fleet_edge_t *fe, uint64_t *term, uint64_t *fenced)
{
	*term = fe->term;
	*fenced = fe->fenced;
}

/* Whether something of this leader term is older than the newest seen
 * (then it is dropped, counted and logged). */
static bool term_old(fleet_edge_t *fe, uint64_t term, const char *what)
{
	if (term >= fe->term) {
		return false;
	}
	fe->fenced++;
	if (zc_log_due(&fe->fenced_logged, 10000)) {
		zc_warn("fleet: %s of leader term %" PRIu64 " dropped: term %"
		        PRIu64 " leads", what, term, (uint64_t)fe->term);
	}
	return true;
}

/*
 * A snapshot of a newer term was loaded: its term is the newest seen (the
 * load kept it in the store, in its transaction, so that it holds across
 * a restart). Only a loaded snapshot raises it (a message or a manifest
 * alone could be forged, and a forged high term would make the edge drop
 * the real leader's).
 */
static void raise_term(fleet_edge_t *fe, uint64_t term)
{
	if (term > fe->term) {
		fe->term = term;
	}
}

/* Loads the newest snapshot (waiting for one to exist). */
static int bootstrap(fleet_edge_t *fe)
{
	abort_open(fe);
	fleet_manifest_t m;
	int ret = fleet_manifest_get(fe->js, &fe->names, &m);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (term_old(fe, m.term, "snapshot")) {
		return ZC_ENOZONE; /* The new leader's comes. */
	}
	if (m.epoch == fe->epoch && m.commit <= fe->commit) {
		/* Older than what is served here: a zone version never goes
		 * back. Follow on from here (a newer snapshot comes later). */
		zc_debug("fleet: snapshot %s is not newer than commit %" PRIu64
		         "; not loaded", m.id, fe->commit);
		/* Its stream position is a safe one to read on from (what
		 * was applied is skipped), also in a recreated stream. */
		pthread_mutex_lock(&fe->lock);
		fe->seq = m.txn_seq > 0 ? m.txn_seq - 1 : 0;
		pthread_mutex_unlock(&fe->lock);
		return ZC_EOK;
	}
	int64_t t0 = fleet_now_ms();
	ret = fleet_snapshot_load(fe->js, &fe->names, fe->es, &m);
	if (ret == ZC_EOK) {
		zc_info("fleet: loaded snapshot %s (%" PRIu32 " parts) in %" PRId64
		        " ms", m.id, m.parts, fleet_now_ms() - t0);
		raise_term(fe, m.term);
		set_position(fe, m.epoch, m.commit,
		             m.txn_seq > 0 ? m.txn_seq - 1 : 0);
	}
	return ret;
}

/*
 * Applies one message. ZC_EOK, or ZC_EREPLGAP when the edge must load a
 * snapshot (a gap, another epoch), or another error (retry).
 */
static int take(fleet_edge_t *fe, natsMsg *msg, uint64_t seq)
{
	fleet_headers_t h;
	fleet_headers_read_t got = fleet_headers_read(msg, &h);
	if (got == FLEET_HEADERS_NONE) {
		zc_warn("fleet: message without zonecast headers ignored");
		return ZC_EOK;
	}
	if (got == FLEET_HEADERS_BAD_TERM) {
		zc_warn("fleet: message with a malformed Zc-Term ignored");
		return ZC_EOK;
	}
	uint64_t epoch = h.epoch, commit = h.commit, part = h.part,
	         flags = h.flags, term = h.term;
	if (term_old(fe, term, "message")) {
		return ZC_EOK;
	}
	if (epoch != fe->epoch) {
		fleet_manifest_t m;
		/* Another history: follow it once its snapshot exists. */
		if (fleet_manifest_get(fe->js, &fe->names, &m) == ZC_EOK &&
		    m.epoch == epoch && m.term == term) {
			return ZC_EREPLGAP;
		}
		return ZC_EOK; /* An old history's leftovers. */
	}
	if (term != fe->term) {
		return ZC_EOK; /* A history has one term: not from its leader. */
	}
	if (commit <= fe->commit || (flags & FLEET_MARKER)) {
		return ZC_EOK; /* Applied already (a resend), or a marker. */
	}
	if (commit != fe->commit + 1) {
		zc_info("fleet: gap (have commit %" PRIu64 ", got %" PRIu64 ")",
		        fe->commit, commit);
		return ZC_EREPLGAP;
	}
	if (part == 0) {
		abort_open(fe); /* A resend of the commit from its start. */
		int ret = edge_apply_begin(fe->es, &fe->ap);
		if (ret != ZC_EOK) {
			return ret;
		}
		fe->open = true;
		fe->open_commit = commit;
		fe->open_seq = seq;
		fe->next_part = 0;
	}
	if (!fe->open || fe->open_commit != commit || part != fe->next_part) {
		if (part < fe->next_part && fe->open) {
			return ZC_EOK; /* A resent part. */
		}
		abort_open(fe);
		return ZC_EREPLGAP;
	}
	int ret = edge_apply_feed(&fe->ap, (const uint8_t *)natsMsg_GetData(msg),
	                          (size_t)natsMsg_GetDataLength(msg));
	fe->next_part++;
	fe->open_ms = fleet_now_ms();
	if (ret == ZC_EOK && (flags & EDGE_REPL_FINAL)) {
		fe->open = false;
		ret = edge_apply_finish(&fe->ap, epoch, commit, seq);
		if (ret == ZC_EOK) {
			set_position(fe, epoch, commit, seq);
			fe->backoff_ms = 0;
			return ZC_EOK;
		}
	} else if (ret != ZC_EOK) {
		abort_open(fe);
	}
	if (ret == ZC_EFORMAT) {
		/* Not from the primary (it writes nothing it cannot read):
		 * dropped; the real commit, or a snapshot, follows. */
		if (zc_log_due(&fe->bad_logged, 10000)) {
			zc_error("fleet: commit %" PRIu64 " (stream message %" PRIu64
			         ") is malformed; ignored", commit, seq);
		}
		return ZC_EOK;
	}
	if (ret == ZC_EMAPFULL) {
		edge_grow(fe->es); /* The commit comes again from its start. */
	}
	return ret;
}

/* Whether the txn stream's last message is of this edge's history and
 * term and past its commit: the log is ahead, and nothing comes (a
 * position that a stream made again repeats: an edge back from a restart
 * follows from the number it kept, outside tester 46). */
static bool log_ahead(fleet_edge_t *fe)
{
	natsMsg *msg = NULL;
	jsErrCode jerr = 0;
	if (js_GetLastMsg(&msg, fe->js, fe->names.txn_stream,
	                  fe->names.txn_subject, NULL, &jerr) != NATS_OK) {
		return false;
	}
	fleet_headers_t h;
	bool ahead = fleet_headers_read(msg, &h) == FLEET_HEADERS_OK &&
	             h.epoch == fe->epoch && h.term == fe->term &&
	             h.commit > fe->commit;
	natsMsg_Destroy(msg);
	return ahead;
}

/*
 * While nothing arrives (a commit open or not): ZC_EREPLGAP when the edge
 * must load a snapshot (a new history began, or the stream was made again
 * or purged past this edge), ZC_EBUSY when the stream holds more than was
 * delivered (a consumer lost with a cluster node: subscribe again), else
 * ZC_EOK.
 *
 * Outside tester 44: a txn stream deleted and made again by someone else
 * every second or so left edges behind until the next write, 1 run in 5:
 * the edge's consumer went with the stream, and the primary's new stream
 * held as many messages as the edge had read of the old one, so its
 * position (a bare sequence number) looked current. The stream's making
 * time tells them apart now, and, for a position kept across a restart,
 * the stream's last message past the edge's commit (log_ahead()). (A
 * manifest newer than the edge is not a reason by itself: one forged
 * message would then have idle edges load it and skip the real commits
 * it claims: outside tester 46.)
 */
static int idle_check(fleet_edge_t *fe)
{
	fleet_manifest_t m;
	bool have = fleet_manifest_get(fe->js, &fe->names, &m) == ZC_EOK &&
	            m.term >= fe->term;
	if (have && m.epoch != fe->epoch) {
		zc_info("fleet: history %016" PRIx64 " began; loading its "
		        "snapshot", m.epoch);
		return ZC_EREPLGAP;
	}
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	if (js_GetStreamInfo(&si, fe->js, fe->names.txn_stream, NULL, &jerr) !=
	    NATS_OK) {
		return ZC_EOK;
	}
	uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
	int64_t created = si->Created;
	jsStreamInfo_Destroy(si);
	if (created != 0 && fe->stream_created != 0 &&
	    created != fe->stream_created) {
		zc_info("fleet: the stream was made again since this edge "
		        "subscribed; loading a snapshot");
		return ZC_EREPLGAP;
	}
	if (last >= first && last > 0 && last != fe->ahead_seq && !fe->open &&
	    log_ahead(fe)) {
		/* Once per last message: a forged one would otherwise have
		 * the edge read the log again every 2 s. */
		fe->ahead_seq = last;
		zc_info("fleet: the stream's last message is past commit %"
		        PRIu64 " and nothing arrives (a stream made again under "
		        "this edge's position?); resyncing", fe->commit);
		return ZC_EREPLGAP;
	}
	/* Also while a commit is open (its next part may never come: the
	 * stream it came from may be gone). Purged past this edge: an empty
	 * stream too (first past last: tester 46, a whole purge). */
	if (last < fe->delivered || first > fe->seq + 1) {
		zc_info("fleet: the stream was recreated or purged past this "
		        "edge (messages %" PRIu64 "-%" PRIu64 ", here %" PRIu64
		        "); loading a snapshot", first, last, fe->seq);
		return ZC_EREPLGAP;
	}
	return last > fe->delivered ? ZC_EBUSY : ZC_EOK;
}

/*
 * An open commit got no next part for OPEN_MAX_MS: its transaction is
 * aborted (the store's writer lock freed) and the edge resyncs as after a
 * gap (ZC_EREPLGAP: the snapshot, or its position in the stream, and what
 * follows read again, so a real commit whose parts were only late
 * completes). The same first part abandoned again right after that resync
 * is not followable (forged: nothing of it comes): ignored (ZC_EOK), the
 * edge follows on without it.
 */
static int abandon_open(fleet_edge_t *fe)
{
	bool again = fe->abandoned_seq == fe->open_seq && fe->loaded_since_gap;
	if (zc_log_due(&fe->abandon_logged, 10000)) {
		zc_warn("fleet: commit %" PRIu64 " (from stream message %" PRIu64
		        ") got no part after part %" PRIu32 " for %d ms: "
		        "abandoned; %s", fe->open_commit, fe->open_seq,
		        fe->next_part - 1, OPEN_MAX_MS,
		        again ? "it came again after a resync: ignored" :
		                "resyncing");
	}
	abort_open(fe);
	if (again) {
		return ZC_EOK;
	}
	fe->abandoned_seq = fe->open_seq;
	fe->loaded_since_gap = false;
	return ZC_EREPLGAP;
}

/*
 * Ends a subscription without racing nats.c 3.4's read loop, which looks a
 * subscription up and then uses it unlocked: destroyed meanwhile by this
 * thread, it is used freed (nats.c issue 637, fixed in 3.5), and the read
 * loop hangs on its mutex, no reply ever arriving again: the edge stops
 * following (test_attack_leader.py caught it after a run of handovers,
 * each of which ends a subscription). So the server first stops sending to
 * it (its consumer deleted), a round trip makes sure the read loop handled
 * whatever came before, and then it goes.
 */
static void end_subscription(fleet_edge_t *fe, natsSubscription *sub)
{
	jsConsumerInfo *ci = NULL;
	if (!fe->stop &&
	    natsSubscription_GetConsumerInfo(&ci, sub, NULL, NULL) == NATS_OK) {
		js_DeleteConsumer(fe->js, ci->Stream, ci->Name, NULL, NULL);
		jsConsumerInfo_Destroy(ci);
		natsConnection_FlushTimeout(fe->nc, 2000);
	}
	/* Destroy() sends the UNSUB without deleting the consumer (done
	 * above). */
	natsSubscription_Destroy(sub);
}

/*
 * The stream and consumer positions of a delivered message: ZC_EOK, or
 * ZC_EBUSY when the consumer skipped one (its sequence is not the next:
 * the server lost or reset it) and the edge must subscribe again from
 * what it applied. This is the ordered consumer's check, done here: nats.c
 * 3.4 resets an ordered consumer by swapping its subscription under the
 * thread that delivers to it, which used a freed subscription after NATS
 * came back (ASan, test_fleet's NATS outage).
 */
static int position(fleet_edge_t *fe, natsMsg *msg, uint64_t *consumed,
                    uint64_t *seq)
{
	jsMsgMetaData *meta = NULL;
	if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
		zc_warn("fleet: message without JetStream metadata; subscribing "
		        "again");
		return ZC_EBUSY;
	}
	uint64_t cseq = meta->Sequence.Consumer;
	*seq = meta->Sequence.Stream;
	jsMsgMetaData_Destroy(meta);
	if (cseq != *consumed + 1) {
		zc_info("fleet: consumer message %" PRIu64 " after %" PRIu64
		        "; subscribing again", cseq, *consumed);
		return ZC_EBUSY;
	}
	*consumed = cseq;
	fe->delivered = *seq;
	return ZC_EOK;
}

/* Follows the stream from the applied position until a gap or stop. */
static int follow(fleet_edge_t *fe)
{
	jsSubOptions so;
	jsSubOptions_Init(&so);
	so.Stream = fe->names.txn_stream;
	/* A plain ephemeral consumer, in memory, that wants no acks: the
	 * follower checks its sequence itself (position()). */
	so.Config.AckPolicy = js_AckNone;
	so.Config.MemoryStorage = true;
	so.Config.Replicas = 1;
	so.Config.DeliverPolicy = js_DeliverByStartSequence;
	so.Config.OptStartSeq = fe->seq + 1;
	/* Consumers of gone subscriptions go soon (if not deleted). */
	so.Config.InactiveThreshold = (int64_t)10 * 1000 * 1000 * 1000;
	natsSubscription *sub = NULL;
	jsErrCode jerr = 0;
	fe->delivered = fe->seq;
	/* Which stream is followed: taken before subscribing, so that one
	 * made again in between is seen as such (idle_check()). */
	jsStreamInfo *si = NULL;
	fe->stream_created = 0;
	if (js_GetStreamInfo(&si, fe->js, fe->names.txn_stream, NULL,
	                     &jerr) == NATS_OK) {
		fe->stream_created = si->Created;
		jsStreamInfo_Destroy(si);
	}
	natsStatus s = js_SubscribeSync(&sub, fe->js, fe->names.txn_subject,
	                                NULL, &so, &jerr);
	if (s != NATS_OK) {
		return fleet_nats_error(s, jerr, "subscribe");
	}
	natsSubscription_SetPendingLimits(sub, -1, -1);
	int ret = ZC_EOK;
	int idle_ms = 0;
	uint64_t consumed = 0;
	while (!fe->stop && ret == ZC_EOK) {
		natsMsg *msg = NULL;
		s = natsSubscription_NextMsg(&msg, sub, 500);
		if (s == NATS_TIMEOUT) {
			idle_ms += 500;
			if (idle_ms >= STALL_CHECK_MS) {
				idle_ms = 0;
				ret = idle_check(fe);
				if (ret == ZC_EBUSY) {
					zc_info("fleet: the stream has more than was "
					        "delivered; subscribing again");
				}
			}
		} else if (s != NATS_OK) {
			ret = fleet_nats_error(s, 0, "next message");
			break;
		} else {
			idle_ms = 0;
			uint64_t seq = 0;
			ret = position(fe, msg, &consumed, &seq);
			if (ret == ZC_EOK) {
				ret = take(fe, msg, seq);
			}
			natsMsg_Destroy(msg);
		}
		if (ret == ZC_EOK && fe->open &&
		    fleet_now_ms() - fe->open_ms >= OPEN_MAX_MS) {
			/* Whatever else arrived meanwhile (or nothing). */
			ret = abandon_open(fe);
			continue;
		}
		if (s == NATS_TIMEOUT) {
			continue; /* idle_check()'s verdict */
		}
		if (ret == ZC_EREPLGAP && fe->delivered == fe->gap_seq &&
		    fe->loaded_since_gap) {
			/* Still a gap right after a snapshot: not followable. */
			if (zc_log_due(&fe->bad_logged, 10000)) {
				zc_error("fleet: stream message %" PRIu64 " does not "
				         "follow the snapshot (forged, or from outside "
				         "the history); ignored", fe->gap_seq);
			}
			ret = ZC_EOK;
		} else if (ret == ZC_EREPLGAP) {
			fe->gap_seq = fe->delivered;
			fe->loaded_since_gap = false;
		}
	}
	abort_open(fe);
	end_subscription(fe, sub);
	return ret;
}

static void *follower_main(void *arg)
{
	fleet_edge_t *fe = arg;
	if (fleet_connect_retry(&fe->cfg, &fe->stop, &fe->lock, &fe->nc,
	                        &fe->js) != ZC_EOK) {
		return NULL;
	}
	pthread_mutex_lock(&fe->lock);
	fe->reporter_started = !fe->stop &&
		pthread_create(&fe->reporter, NULL, fleet_reporter_main, fe) == 0;
	pthread_mutex_unlock(&fe->lock);
	bool need_snapshot = fe->epoch == 0;
	fleet_renew_t renew = { 0 };
	while (!fe->stop) {
		if (fe->nc == NULL || fleet_conn_closed(fe->nc)) {
			/* Closed for good by the library: a new one (its
			 * subscription is made again by follow()). */
			fleet_conn_renew(&fe->cfg, "follower", &fe->stop, &fe->lock,
			                 &fe->nc, &fe->js, &renew);
			continue;
		}
		if (need_snapshot) {
			/* Loads in a row back off (250 ms doubling to 8 s). */
			if (fleet_now_ms() - fe->last_load_ms < 1000) {
				fe->backoff_ms = fe->backoff_ms ? fe->backoff_ms * 2 :
				                                  RETRY_MS;
				fe->backoff_ms = fe->backoff_ms > MAX_BACKOFF_MS ?
				                 MAX_BACKOFF_MS : fe->backoff_ms;
				fleet_sleep_ms(fe->backoff_ms);
			}
			fe->last_load_ms = fleet_now_ms();
			int ret = bootstrap(fe);
			if (ret == ZC_EMAPFULL) {
				edge_grow(fe->es);
				continue;
			}
			if (ret == ZC_EREPLGAP && fe->epoch != 0) {
				/* The manifest names parts that are not there
				 * (forged, or purged meanwhile): follow the
				 * history held here; a real gap comes back here,
				 * backing off. */
				zc_warn("fleet: the newest snapshot cannot be "
				        "loaded (parts missing); following on");
				need_snapshot = false;
			} else if (ret != ZC_EOK) {
				if (ret != ZC_ENOZONE) {
					zc_warn("fleet: cannot load a snapshot: %s; "
					        "retrying", zc_strerror(ret));
				}
				fleet_sleep_ms(RETRY_MS);
				continue;
			}
			fe->last_load_ms = fleet_now_ms();
			fe->loaded_since_gap = ret == ZC_EOK;
			need_snapshot = false;
		}
		int ret = follow(fe);
		if (ret == ZC_EREPLGAP) {
			need_snapshot = true;
		} else if (ret != ZC_EOK && ret != ZC_EBUSY &&
		           ret != ZC_EMAPFULL && !fe->stop) {
			if (zc_log_due(&fe->paused_logged, 10000)) {
				zc_warn("fleet: following paused: %s%s%s; retrying",
				        zc_strerror(ret), ret == ZC_ENATS ? ": " : "",
				        ret == ZC_ENATS ? fleet_nats_last_error() : "");
			}
			fleet_sleep_ms(RETRY_MS);
		}
	}
	return NULL;
}

static int read_term(fleet_edge_t *fe)
{
	edge_txn_t txn = { 0 };
	uint64_t term = 0;
	int ret = edge_txn_begin_read(fe->es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "fleet_term", &term); /* 0: none */
		edge_txn_abort(&txn);
	}
	fe->term = term;
	return ret;
}

int fleet_edge_start(const fleet_config_t *cfg, edge_store_t *es,
                     fleet_edge_t **out)
{
	fleet_edge_t *fe = calloc(1, sizeof(*fe));
	if (fe == NULL) {
		return ZC_ENOSPACE;
	}
	fe->cfg = *cfg;
	fleet_config_defaults(&fe->cfg);
	fe->es = es;
	while (fe->instance >> 1 == 0) {
		if (getrandom(&fe->instance, sizeof(fe->instance), 0) < 0) {
			fe->instance = (uint64_t)fleet_now_ms() << 1;
		}
	}
	pthread_mutex_init(&fe->lock, NULL);
	pthread_cond_init(&fe->changed, NULL);
	int ret = fleet_names(fe->cfg.prefix, &fe->names);
	edge_repl_pos_t rec = { 0 };
	if (ret == ZC_EOK) {
		ret = edge_repl_pos(es, &rec);
	}
	if (ret == ZC_EOK && rec.on) {
		/* A primary's store (copied here): it records nothing as an
		 * edge's, and says it is one (`fleet digest`). */
		ret = edge_repl_enable(es, false, &rec);
		if (ret == ZC_EOK) {
			zc_info("fleet: this store was a primary's (history %016"
			        PRIx64 "): recording turned off, it is an edge's "
			        "now", rec.epoch);
		}
	}
	if (ret == ZC_EOK) {
		ret = edge_applied_pos(es, &fe->epoch, &fe->commit, &fe->seq);
	}
	if (ret == ZC_EOK) {
		ret = read_term(fe);
	}
	if (ret == ZC_EOK) {
		fe->started = pthread_create(&fe->thread, NULL, follower_main,
		                             fe) == 0;
		ret = fe->started ? ZC_EOK : ZC_ENOSPACE;
	}
	if (ret != ZC_EOK) {
		fleet_edge_stop(fe);
		return ret;
	}
	zc_info("fleet: edge %s following %s from commit %" PRIu64, fe->cfg.name,
	        fe->cfg.urls, fe->commit);
	*out = fe;
	return ZC_EOK;
}

void fleet_edge_stop(fleet_edge_t *fe)
{
	if (fe == NULL) {
		return;
	}
	pthread_mutex_lock(&fe->lock);
	fe->stop = true;
	pthread_cond_broadcast(&fe->changed);
	/* Requests in flight (and reconnect attempts) end at once. */
	if (fe->nc != NULL) {
		natsConnection_Close(fe->nc);
	}
	if (fe->rnc != NULL) {
		natsConnection_Close(fe->rnc);
	}
	pthread_mutex_unlock(&fe->lock);
	if (fe->started) {
		pthread_join(fe->thread, NULL);
	}
	if (fe->reporter_started) {
		pthread_join(fe->reporter, NULL);
	}
	jsCtx_Destroy(fe->js);
	natsConnection_Destroy(fe->nc);
	jsCtx_Destroy(fe->rjs);
	natsConnection_Destroy(fe->rnc);
	pthread_cond_destroy(&fe->changed);
	pthread_mutex_destroy(&fe->lock);
	free(fe);
}
