/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The primary's publisher (see fleet.h): sends the outbox to the txn
 * stream in commit order, deletes what JetStream acknowledged, publishes
 * snapshots and purges what they make unnecessary. With leadership it
 * first waits to lead, begins a history for its term, and steps down
 * (recording off, leadership given up, back to waiting) when it no longer
 * leads, when JetStream refuses its publish because a newer leader's came
 * first (fenced), or when it could publish nothing for GIVE_UP_MS. Every
 * publish that a newer leader's would conflict with (txn messages,
 * manifests) names what it expects last in its stream, as read before
 * PostgreSQL confirmed this leader's term (fleet.h). A leader publishes
 * only once its own build caught up with the records store, and steps
 * down when its build stops while the store moves on (catchup.c). It keeps
 * its own manifest at the head of the snapshot stream (a forged one there
 * is replaced: pub_keep_head(), publisher_guard.c).
 *
 * This file is its thread: the loop, and the outbox sent in it.
 * Leadership, terms, histories and snapshots are publisher_history.c's;
 * what the leader checks and keeps right in NATS is publisher_guard.c's
 * (publisher_state.h: what they share).
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/publisher_state.h"

#define BATCH 256
#define POLL_MS 100      /* also sends what other processes committed */
#define RETRY_MS 250
/* A leader that could not publish this long (NATS out of its reach, not
 * necessarily of the other nodes') steps down, and tries to lead again
 * only after HOLD_OFF_MS, so that a node that can publish takes over; so
 * does a node that took a term but could not begin its history. */
#define GIVE_UP_MS 3000
#define HOLD_OFF_MS 1000
/* How often a leader looks at the snapshot manifest at the head, and at
 * the terms its edges report. */
#define HEAD_CHECK_MS 2000

static void zone_put(const uint8_t *val, size_t len, void *ctx)
{
	pub_t *p = ctx;
	edge_zone_t zone;
	if (edge_zone_decode(val, len, &zone) == ZC_EOK) {
		pthread_mutex_lock(&p->fp->lock);
		fleet_ring_add(p->fp, p->ring_commit, zone.zone_id, zone.serial,
		               p->now_ms);
		pthread_mutex_unlock(&p->fp->lock);
	}
}

static int send_piece(pub_t *p, uint64_t commit, uint32_t num, uint8_t flags,
                      const uint8_t *data, size_t len)
{
	fleet_primary_t *fp = p->fp;
	int tries = 0;
again:;
	char subject_id[128], num_text[32];
	/* The id names the piece size: a resend cut otherwise (the server's
	 * limit changed) is not taken for the message sent before. */
	snprintf(subject_id, sizeof(subject_id), "%016" PRIx64 ".%" PRIu64
	         ".%" PRIu32 ".%zu", p->epoch, commit, num, p->piece_max);
	natsMsg *msg = NULL;
	natsStatus s = natsMsg_Create(&msg, fp->names.txn_subject, NULL,
	                              (const char *)data, (int)len);
	snprintf(num_text, sizeof(num_text), "%016" PRIx64, p->epoch);
	if (s == NATS_OK) {
		s = natsMsgHeader_Set(msg, "Zc-Epoch", num_text);
	}
	snprintf(num_text, sizeof(num_text), "%" PRIu64, p->term);
	if (s == NATS_OK) {
		s = natsMsgHeader_Set(msg, "Zc-Term", num_text);
	}
	snprintf(num_text, sizeof(num_text), "%" PRIu64, commit);
	if (s == NATS_OK) {
		s = natsMsgHeader_Set(msg, "Zc-Commit", num_text);
	}
	snprintf(num_text, sizeof(num_text), "%" PRIu32, num);
	if (s == NATS_OK) {
		s = natsMsgHeader_Set(msg, "Zc-Part", num_text);
	}
	snprintf(num_text, sizeof(num_text), "%u", (unsigned)flags);
	if (s == NATS_OK) {
		s = natsMsgHeader_Set(msg, "Zc-Flags", num_text);
	}
	if (s == NATS_OK) { /* The fence (fleet.h). */
		s = fleet_expect_last(msg, "Nats-Expected-Last-Sequence",
		                      p->last_seq);
	}
	jsPubOptions po;
	jsPubOptions_Init(&po);
	po.MsgId = subject_id;
	po.MaxWait = 5000;
	jsPubAck *ack = NULL;
	jsErrCode jerr = 0;
	if (s == NATS_OK) {
		s = js_PublishMsg(&ack, fp->js, msg, &po, &jerr);
	}
	natsMsg_Destroy(msg);
	if (s != NATS_OK && jerr == JSStreamWrongLastSequenceErr) {
		p->ret = pub_refused(p);
		if (p->ret == STEPPED_OVER && ++tries < 4) {
			goto again; /* Stepped over what came in between. */
		}
		return 1;
	}
	if (s != NATS_OK) {
		p->ret = fleet_nats_error(s, jerr, "publish");
		return 1;
	}
	/* A duplicate (a resend after a crash) is an older message: the
	 * stream's last one is still the last. */
	bool reset = ack->Sequence <= p->last_seq && !ack->Duplicate;
	if (!ack->Duplicate) {
		p->last_seq = ack->Sequence;
	}
	jsPubAck_Destroy(ack);
	if (reset) {
		/* The stream was recreated under us (NATS lost its storage, or
		 * it was deleted): edges need a snapshot to go on from. */
		p->stream_reset = true;
		p->ret = ZC_EREPLGAP;
		return 1;
	}
	return 0;
}

/*
 * Sends one outbox part: one message, or several when the server takes
 * less than the part (max_payload): the edge feeds a commit's messages
 * in order into one applier, wherever they cut the op stream. A commit's
 * messages are numbered from 0 across its parts; a commit always starts
 * at its part 0 (the outbox is trimmed by whole commits), so the
 * numbering, and the message ids, are the same when it is sent again.
 */
static int send_part(const edge_repl_part_t *part, void *arg)
{
	pub_t *p = arg;
	fleet_primary_t *fp = p->fp;
	size_t max = fleet_payload_max(fp->nc);
	if (part->part == 0 || p->msg_commit != part->commit) {
		p->msg_commit = part->commit;
		/* Not from its part 0: an outbox an older zonecast trimmed
		 * inside a commit (it numbered messages as parts). */
		p->msg_next = part->part;
		p->piece_max = max;
	} else if (max < p->piece_max) {
		/* The server takes less than this commit's first messages
		 * (another server of a cluster): the commit goes again from
		 * its part 0, cut to fit (edges begin it again there). */
		zc_info("fleet: the NATS server takes at most %zu bytes now: "
		        "commit %" PRIu64 " is sent again in smaller messages", max,
		        part->commit);
		p->commit = part->commit - 1;
		p->part = UINT32_MAX;
		p->msg_commit = 0;
		return 1;
	}
	/* The ring first: an edge may apply and report the commit before
	 * the acknowledgement is back here. */
	p->now_ms = fleet_now_ms();
	p->ring_commit = part->commit;
	if (!(part->flags & EDGE_REPL_CONT)) {
		edge_repl_zone_puts(part->data, part->len, zone_put, p);
	}
	uint32_t num = p->msg_next;
	size_t off = 0;
	do {
		size_t n = part->len - off;
		n = n < p->piece_max ? n : p->piece_max;
		bool last = off + n == part->len;
		uint8_t flags = off == 0 ? (uint8_t)(part->flags & ~EDGE_REPL_FINAL) :
		                           EDGE_REPL_CONT;
		if (last) {
			flags |= part->flags & EDGE_REPL_FINAL;
		}
		if (send_piece(p, part->commit, num++, flags, part->data + off,
		               n) != 0) {
			return 1; /* This part goes again from its first piece. */
		}
		off += n;
	} while (off < part->len);
	p->msg_next = num;
	p->commit = part->commit;
	p->part = part->part;
	p->bytes += part->len;
	if (part->flags & EDGE_REPL_FINAL) {
		p->final_commit = part->commit;
		pthread_mutex_lock(&fp->lock);
		fp->published = part->commit;
		pthread_cond_broadcast(&fp->changed);
		pthread_mutex_unlock(&fp->lock);
	}
	return 0;
}

/* Waits for the next commit (or the poll interval). */
static void wait_more(fleet_primary_t *fp, unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&fp->lock);
	while (!fp->pending && !fp->stop) {
		if (pthread_cond_timedwait(&fp->wake, &fp->lock, &ts) != 0) {
			break;
		}
	}
	fp->pending = false;
	pthread_mutex_unlock(&fp->lock);
}

/* No longer the leader: records nothing more (what the outbox holds goes:
 * the next leader's snapshot covers it) and gives leadership up. */
static void step_down(fleet_primary_t *fp, const char *why)
{
	zc_warn("fleet: stepping down as leader: %s", why);
	edge_repl_pos_t pos;
	edge_repl_enable(fp->es, false, &pos);
	pthread_mutex_lock(&fp->lock);
	fp->leading = false;
	fp->connected = false;
	pthread_mutex_unlock(&fp->lock);
	fp->lead.drop(fp->lead.ctx);
}

/* With leadership: steps down when nothing could be published since ok_ms
 * for GIVE_UP_MS (then *hold_until says when to try to lead again). */
static bool give_up(fleet_primary_t *fp, int64_t ok_ms, int64_t *hold_until)
{
	int64_t now = fleet_now_ms();
	if (fp->lead.take == NULL || now - ok_ms < GIVE_UP_MS) {
		return false;
	}
	step_down(fp, "nothing could be published to NATS for 3 s: another "
	          "node may lead");
	*hold_until = now + HOLD_OFF_MS;
	return true;
}

void *fleet_publisher_main(void *arg)
{
	fleet_primary_t *fp = arg;
	pub_t p = { .fp = fp, .epoch = fp->epoch, .part = UINT32_MAX };
	if (fp->lead.take == NULL) {
		/* One primary (SQLite): term 0, or the one it rose to. */
		p.term = pub_term_floor(fp);
		pthread_mutex_lock(&fp->lock);
		fp->term = p.term;
		pthread_mutex_unlock(&fp->lock);
	}
	if (fleet_connect_retry(&fp->cfg, &fp->stop, &fp->lock, &fp->nc,
	                        &fp->js) != ZC_EOK) {
		return NULL;
	}
	pthread_mutex_lock(&fp->lock);
	fp->watcher_started = !fp->stop && pthread_create(&fp->watcher, NULL,
	                                   fleet_watcher_main, fp) == 0;
	pthread_mutex_unlock(&fp->lock);
	fleet_manifest_t prev = { .id = "" };
	uint64_t trimmed_commit = 0;
	bool ready = false;
	bool led = fp->lead.take != NULL;
	int64_t ok_ms = 0, hold_until = 0; /* publishing worked; give_up() */
	int64_t head_checked = 0; /* pub_keep_head() */
	uint64_t behind = 0; /* the build must reach this before leading */
	fleet_build_watch_t build = { 0 };
	fleet_renew_t renew = { 0 };
	while (!fp->stop) {
		if (fp->nc == NULL || fleet_conn_closed(fp->nc)) {
			/* Closed for good by the library (the server closed it:
			 * it never reconnects): a new one, and everything from
			 * the streams on checked again on it (pub_start_epoch()). */
			pthread_mutex_lock(&fp->lock);
			fp->connected = false;
			pthread_mutex_unlock(&fp->lock);
			if (fleet_conn_renew(&fp->cfg, "publisher", &fp->stop,
			                     &fp->lock, &fp->nc, &fp->js, &renew) !=
			    ZC_EOK) {
				continue; /* Stopping (or tried again). */
			}
			ready = false;
			head_checked = 0;
			continue;
		}
		if (led && !fp->leading) {
			while (!fp->stop && fleet_now_ms() < hold_until) {
				fleet_sleep_ms(50);
			}
			fleet_wait_built(fp, behind);
			behind = 0;
			if (pub_lead(&p, &behind) != ZC_EOK) {
				/* Stopping, or this node cannot lead now: others may. */
				hold_until = fleet_now_ms() + HOLD_OFF_MS;
				continue;
			}
			ok_ms = fleet_now_ms();
			fleet_build_watch_start(fp, &build);
			prev = (fleet_manifest_t){ .id = "" };
			trimmed_commit = 0;
			ready = false;
		}
		if (led && !fp->lead.held(fp->lead.ctx)) {
			step_down(fp, "leadership lost (records store unreachable "
			          "or this process was paused)");
			continue;
		}
		uint64_t head = 0;
		if (led && fleet_build_stalled(fp, &build, &head)) {
			/* It would publish nothing new: a node whose build goes
			 * on leads, this one once its build is back. */
			step_down(fp, "this node's build is stuck behind the records "
			          "store");
			behind = head;
			continue;
		}
		if (p.history_due != 0) {
			int64_t now = fleet_now_ms();
			if (now < p.history_due) {
				int64_t left = p.history_due - now;
				wait_more(fp, left < POLL_MS ? (unsigned)left : POLL_MS);
				continue;
			}
			int ret = pub_restart_history(&p);
			if (ret == ZC_EFENCED) {
				step_down(fp, zc_strerror(ret));
				continue;
			}
			ready = false; /* pub_start_epoch(): the new history's snapshot */
			if (ret != ZC_EREPLGAP) {
				wait_more(fp, RETRY_MS);
				continue;
			}
		}
		if (!ready) {
			int ret = pub_start_epoch(&p, &prev);
			ready = ret == ZC_EOK;
			pthread_mutex_lock(&fp->lock);
			fp->connected = ready;
			pthread_mutex_unlock(&fp->lock);
			if (ret == ZC_EFENCED) {
				step_down(fp, zc_strerror(ret));
				continue;
			}
			if (!ready && !give_up(fp, ok_ms, &hold_until)) {
				wait_more(fp, RETRY_MS * 4);
			}
			if (!ready) {
				continue;
			}
		}
		p.ret = ZC_EOK;
		int n = edge_repl_outbox_read(fp->es, p.commit, p.part, BATCH,
		                              send_part, &p);
		/* Whole commits only: a commit is sent again from its part 0
		 * (send_part()). */
		if (p.final_commit != trimmed_commit &&
		    edge_repl_outbox_trim(fp->es, p.final_commit, UINT32_MAX) ==
		    ZC_EOK) {
			trimmed_commit = p.final_commit;
		}
		if (p.ret == ZC_EFENCED) {
			step_down(fp, zc_strerror(p.ret));
			continue;
		}
		if (p.ret != ZC_EOK || n < 0) {
			int why = p.ret != ZC_EOK ? p.ret : n;
			if (zc_log_due(&fp->paused_logged, 5000)) {
				zc_warn("fleet: publishing paused: %s%s%s; retrying",
				        why == STEPPED_OVER ? "messages not this "
				        "primary's keep coming into the txn stream" :
				        zc_strerror(why), why == ZC_ENATS ? ": " : "",
				        why == ZC_ENATS ? fleet_nats_last_error() : "");
			}
			pthread_mutex_lock(&fp->lock);
			fp->connected = false;
			pthread_mutex_unlock(&fp->lock);
			ready = false;
			if (!give_up(fp, ok_ms, &hold_until)) {
				wait_more(fp, RETRY_MS);
			}
			continue;
		}
		ok_ms = fleet_now_ms();
		int snap = p.bytes >= fp->cfg.snapshot_bytes ?
		           pub_snapshot(&p, &prev) : ZC_EOK;
		if (snap == ZC_EFENCED) {
			step_down(fp, zc_strerror(snap));
			continue;
		}
		if (snap == ZC_EREPLGAP) {
			ready = false; /* Refused: a snapshot from the stream as is. */
			continue;
		}
		if (snap != ZC_EOK) {
			zc_warn("fleet: snapshot failed: %s%s%s; trying again later",
			        zc_strerror(snap), snap == ZC_ENATS ? ": " : "",
			        snap == ZC_ENATS ? fleet_nats_last_error() : "");
			p.bytes = fp->cfg.snapshot_bytes / 2;
			head_checked = 0; /* Its stream may be gone: look now. */
		}
		if (ok_ms - head_checked >= HEAD_CHECK_MS) {
			head_checked = ok_ms;
			int ret = pub_rise_above(&p);
			if (ret == ZC_EOK) {
				ret = pub_keep_objects(&p, &prev);
			}
			if (ret == ZC_EOK) {
				ret = pub_keep_head(&p, &prev);
			}
			if (ret == ZC_EFENCED) {
				step_down(fp, zc_strerror(ZC_EFENCED));
				continue;
			}
			if (ret == ZC_EREPLGAP) {
				ready = false; /* The new history's snapshot. */
				continue;
			}
		}
		if (n < BATCH) {
			wait_more(fp, POLL_MS);
		}
	}
	if (led && fp->leading) {
		fp->lead.drop(fp->lead.ctx);
	}
	return NULL;
}
