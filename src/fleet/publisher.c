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
 * is replaced: keep_head()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/primary.h"

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
/* The meta key of this node's edge store that keeps the lowest term it
 * publishes with (rise_above()), across restarts. */
#define TERM_KEY "fleet_lead_term"
/* Terms travel as JSON integers (manifests, reports). */
#define TERM_LIMIT ((uint64_t)INT64_MAX)
/* Foreign messages in the txn stream (publishing there should be
 * restricted: docs/fleet.md) that edges may have applied make the leader
 * begin a new history, at most once in this many ms (each costs a whole
 * snapshot, published and loaded by every edge); foreign messages no edge
 * applies are stepped over. At most FOREIGN_SCAN are looked at. */
#define FOREIGN_HISTORY_MS 5000
#define FOREIGN_SCAN 64
/* foreign(): what came in between was stepped over, publish again. */
#define STEPPED_OVER ZC_EBUSY

typedef struct {
	fleet_primary_t *fp;
	uint64_t term;       /* the leader's (0: no leadership) */
	uint64_t epoch;
	uint64_t commit;     /* last part sent */
	uint64_t ring_commit; /* the part being sent */
	uint32_t part;
	uint64_t last_seq;   /* stream sequence of the last message sent */
	uint64_t head_seq;   /* snapshot stream sequence of the newest manifest */
	uint64_t bytes;      /* sent since the last snapshot */
	int ret;
	int64_t now_ms;
	bool stream_reset;   /* the txn stream was recreated: a new snapshot */
	uint64_t final_commit; /* last commit sent whole (the outbox trim) */
	uint64_t msg_commit; /* the commit msg_next numbers messages of */
	uint32_t msg_next;   /* its next message part number */
	size_t piece_max;    /* its messages' largest payload */
	/* Foreign content edges may have applied (refused()): a new history
	 * is due then (FOREIGN_HISTORY_MS apart). */
	int64_t history_due;
	int64_t history_forced;
	uint64_t stepped_over; /* foreign messages stepped over */
} pub_t;

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

/*
 * Whether this process still leads, with the newest term: PostgreSQL says
 * (fleet.h, confirm()), not a term read from NATS (anyone allowed to
 * publish could forge one and make every leader step down). ZC_EOK;
 * ZC_EFENCED when a newer leader took over; another error when it cannot
 * tell (then held() is false: it steps down too).
 */
static int still_leading(pub_t *p)
{
	fleet_primary_t *fp = p->fp;
	if (fp->lead.confirm == NULL) {
		return ZC_EOK;
	}
	int ret = fp->lead.confirm(fp->lead.ctx);
	if (ret != ZC_EOK) {
		zc_warn("fleet: this node (term %" PRIu64 ") no longer leads: %s",
		        p->term, zc_strerror(ret));
	}
	return ret;
}

static int stream_last_seq(fleet_primary_t *fp, uint64_t *seq);

/*
 * Whether an edge may apply this message, not the leader's, that it reads
 * right after everything the leader sent (as the edges check it:
 * follower.c take()): one of this history and term, not a marker, for
 * the commit after the last one sent whole (it would begin that commit,
 * or be a part of it). Anything else is dropped by every edge (other
 * headers, history or term; a commit applied already), or is a gap after
 * which an edge loads the snapshot and reads on past it.
 */
static bool foreign_applicable(pub_t *p, natsMsg *msg)
{
	fleet_headers_t h;
	if (fleet_headers_read(msg, &h) != FLEET_HEADERS_OK ||
	    h.epoch != p->epoch || h.term != p->term ||
	    (h.flags & FLEET_MARKER)) {
		return false;
	}
	/* What edges have whole before it: p->final_commit (0 right after a
	 * start: unknown, so any commit counts). */
	return h.commit > p->final_commit &&
	       (p->final_commit == 0 || h.commit == p->final_commit + 1);
}

/*
 * Messages that are not this leader's came after its last one (a forged
 * one, an older leader's late one, or the stream recreated). STEPPED_OVER
 * when every one is of no effect at the edges: the leader steps over them
 * (its last sequence moves past them) and publishes on, no snapshot
 * needed. ZC_EREPLGAP otherwise: edges may have applied a commit this
 * leader did not publish, so a new history is due (edges cannot skip its
 * snapshot, as they skip one of a commit they think they have).
 */
static int foreign(pub_t *p)
{
	fleet_primary_t *fp = p->fp;
	uint64_t last = 0;
	int ret = stream_last_seq(fp, &last);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (last < p->last_seq) {
		p->stream_reset = true; /* Recreated: a snapshot in it. */
		return ZC_EREPLGAP;
	}
	bool harm = last - p->last_seq > FOREIGN_SCAN;
	uint64_t n = 0;
	for (uint64_t seq = p->last_seq + 1; !harm && seq <= last; seq++) {
		natsMsg *msg = NULL;
		jsErrCode jerr = 0;
		natsStatus s = js_GetMsg(&msg, fp->js, fp->names.txn_stream, seq,
		                         NULL, &jerr);
		if (s == NATS_OK) {
			harm = foreign_applicable(p, msg);
			n++;
		} else if (s != NATS_NOT_FOUND && jerr != JSNoMessageFoundErr) {
			natsMsg_Destroy(msg);
			return fleet_nats_error(s, jerr, "read a foreign message");
		}
		natsMsg_Destroy(msg);
	}
	if (harm) {
		int64_t now = fleet_now_ms();
		p->history_due = p->history_forced + FOREIGN_HISTORY_MS > now ?
		                 p->history_forced + FOREIGN_HISTORY_MS : now;
		zc_warn("fleet: message(s) not this primary's in %s after "
		        "sequence %" PRIu64 " that edges may apply (forged? restrict "
		        "publishing: docs/fleet.md): a new history begins",
		        fp->names.txn_stream, p->last_seq);
		return ZC_EREPLGAP;
	}
	p->stepped_over += n;
	if (zc_log_due(&fp->foreign_logged, 10000)) {
		zc_warn("fleet: %" PRIu64 " message(s) not this primary's in %s "
		        "(forged? restrict publishing: docs/fleet.md), none that "
		        "edges apply: stepped over (%" PRIu64 " so far)", n,
		        fp->names.txn_stream, p->stepped_over);
	}
	p->last_seq = last;
	return STEPPED_OVER;
}

/*
 * JetStream refused a publish: the stream (or the snapshot head) is not as
 * this publisher saw it last. A newer leader's publish: fenced (or it
 * cannot tell: not leading either). Anything else (an older leader's or a
 * forged message that got in first, the stream recreated): foreign().
 */
static int refused(pub_t *p)
{
	int ret = still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	return foreign(p);
}

/* A manifest came over this leader's (snapshot(), ZC_ESTALE): the
 * snapshot is published again over it. */
static int manifest_refused(pub_t *p)
{
	int ret = still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	p->stream_reset = true;
	return ZC_EREPLGAP;
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
		p->ret = refused(p);
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

/* The txn stream's last sequence (what a snapshot starts after). */
static int stream_last_seq(fleet_primary_t *fp, uint64_t *seq)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, fp->js, fp->names.txn_stream, NULL,
	                                &jerr);
	if (s != NATS_OK) {
		return fleet_nats_error(s, jerr, "stream info");
	}
	*seq = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	return ZC_EOK;
}

static int purge_txn_below(fleet_primary_t *fp, uint64_t seq)
{
	if (seq <= 1) {
		return ZC_EOK;
	}
	jsOptions o;
	jsOptions_Init(&o);
	o.Stream.Purge.Sequence = seq;
	jsErrCode jerr = 0;
	natsStatus s = js_PurgeStream(fp->js, fp->names.txn_stream, &o, &jerr);
	return fleet_nats_error(s, jerr, "purge txn stream");
}

/* Purges every snapshot's parts but those of the ids kept (also what a
 * primary killed while publishing one left behind), and but those of a
 * newer term than this leader's: a leader that lost its lead while it
 * snapshotted purges nothing its successor published. */
static void purge_other_snapshots(fleet_primary_t *fp, uint64_t term,
                                  const char *keep1, const char *keep2)
{
	char filter[FLEET_STR_MAX + 4];
	snprintf(filter, sizeof(filter), "%s.>", fp->names.snap_data);
	jsOptions o;
	jsOptions_Init(&o);
	o.Stream.Info.SubjectsFilter = filter;
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	if (js_GetStreamInfo(&si, fp->js, fp->names.snap_stream, &o, &jerr) !=
	    NATS_OK) {
		return;
	}
	size_t plen = strlen(fp->names.snap_data) + 1;
	char done[8][96] = { { 0 } };
	int ndone = 0;
	for (int i = 0; si->State.Subjects != NULL &&
	                i < si->State.Subjects->Count; i++) {
		const char *subj = si->State.Subjects->List[i].Subject;
		if (strlen(subj) <= plen) {
			continue;
		}
		char id[96];
		snprintf(id, sizeof(id), "%s", subj + plen);
		char *dot = strchr(id, '.');
		if (dot != NULL) {
			*dot = '\0';
		}
		bool seen = strcmp(id, keep1) == 0 || strcmp(id, keep2) == 0 ||
		            fleet_snapshot_id_term(id) > term;
		for (int j = 0; j < ndone && !seen; j++) {
			seen = strcmp(done[j], id) == 0;
		}
		if (!seen && ndone < 8) {
			fleet_snapshot_purge(fp->js, &fp->names, id);
			snprintf(done[ndone++], sizeof(done[0]), "%s", id);
		}
	}
	jsStreamInfo_Destroy(si);
}

/*
 * A new snapshot; then what it makes unnecessary goes: the parts of every
 * snapshot but the new and the previous one (an edge may be loading it),
 * and the txn messages before the previous snapshot's position (what an
 * edge loading it needs next is kept).
 */
static int snapshot(pub_t *p, fleet_manifest_t *prev)
{
	fleet_primary_t *fp = p->fp;
	edge_repl_pos_t pos;
	if (prev->id[0] != '\0' && !p->stream_reset &&
	    edge_repl_pos(fp->es, &pos) == ZC_EOK && pos.epoch == prev->epoch &&
	    pos.commit == prev->commit && prev->term == p->term) {
		/* The store has not moved since the last one (the log sent
		 * since is the rest of that commit, which it covers): the
		 * same snapshot again would be of no use. */
		p->bytes = 0;
		return ZC_EOK;
	}
	fleet_manifest_t m;
	uint64_t bytes = 0;
	int64_t t0 = fleet_now_ms();
	int ret = fleet_snapshot_publish(fp->js, &fp->names, fp->es,
	                                 fleet_payload_max(fp->nc), p->term,
	                                 p->last_seq + 1, p->head_seq, &m,
	                                 &bytes);
	if (ret == ZC_ESTALE) {
		return manifest_refused(p); /* Another manifest came meanwhile. */
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	p->head_seq = m.head_seq;
	zc_info("fleet: snapshot %s published (%" PRIu32 " parts, %" PRIu64
	        " KiB, %" PRId64 " ms)", m.id, m.parts, bytes >> 10,
	        fleet_now_ms() - t0);
	purge_other_snapshots(fp, p->term, m.id, prev->id);
	if (prev->id[0] != '\0' && strcmp(prev->id, m.id) != 0) {
		purge_txn_below(fp, prev->txn_seq);
	}
	*prev = m;
	p->bytes = 0;
	return ZC_EOK;
}

/*
 * What the fleet needs in NATS is still there: the txn and snapshot
 * streams, the reports bucket, this history's snapshot (its manifest and
 * its first part). Something deleted or purged (by an operator, another
 * tool) is created again here, within HEAD_CHECK_MS, not only when a
 * publish fails: a new edge would otherwise wait for a snapshot for ever,
 * and edges could not report. ZC_EREPLGAP when a snapshot must be
 * published again (start_epoch()), else ZC_EOK (a failure is tried again
 * at the next look).
 */
static int keep_objects(pub_t *p, const fleet_manifest_t *prev)
{
	fleet_primary_t *fp = p->fp;
	unsigned changed = 0;
	if (fleet_ensure_streams(&fp->cfg, &fp->names, fp->js, true,
	                         &changed) != ZC_EOK &&
	    changed == 0) {
		return ZC_EOK; /* Logged; tried again at the next look. */
	}
	if (changed & FLEET_BUCKET_CHANGED) {
		atomic_store(&fp->rewatch, true); /* Its watcher starts over. */
	}
	if (changed & (FLEET_TXN_CHANGED | FLEET_SNAP_CHANGED)) {
		p->stream_reset = true;
		return ZC_EREPLGAP;
	}
	if (prev->id[0] == '\0') {
		return ZC_EOK;
	}
	fleet_manifest_t head;
	int ret = fleet_manifest_get(fp->js, &fp->names, &head);
	const char *why = NULL;
	if (ret == ZC_ENOZONE) {
		why = "no snapshot manifest";
	} else if (ret == ZC_EOK && strcmp(head.id, prev->id) == 0) {
		char subject[FLEET_STR_MAX + 128];
		snprintf(subject, sizeof(subject), "%s.%s.0", fp->names.snap_data,
		         head.id);
		natsMsg *msg = NULL;
		jsErrCode jerr = 0;
		natsStatus s = js_GetLastMsg(&msg, fp->js, fp->names.snap_stream,
		                             subject, NULL, &jerr);
		natsMsg_Destroy(msg);
		if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) {
			why = "the newest snapshot's parts are gone";
		}
	}
	if (why == NULL) {
		return ZC_EOK;
	}
	zc_warn("fleet: %s in stream %s (purged?): publishing a snapshot again",
	        why, fp->names.snap_stream);
	p->stream_reset = true;
	return ZC_EREPLGAP;
}

/*
 * A manifest that is not this leader's at the head of the snapshot stream
 * (a forged one: an older leader's late one is refused, and a newer
 * leader's means this one no longer leads) would keep new edges from
 * loading anything until the next snapshot: the leader publishes its own
 * manifest again, over it (its parts and the txn messages after it are
 * still kept). ZC_EFENCED when a newer leader leads; ZC_EOK otherwise (a
 * failure is tried again at the next look).
 */
static int keep_head(pub_t *p, fleet_manifest_t *prev)
{
	fleet_primary_t *fp = p->fp;
	fleet_manifest_t head;
	int ret = fleet_manifest_get(fp->js, &fp->names, &head);
	if (prev->id[0] == '\0' || (ret != ZC_EOK && ret != ZC_EFORMAT) ||
	    head.head_seq == p->head_seq) {
		return ZC_EOK;
	}
	ret = still_leading(p);
	if (ret != ZC_EOK) {
		return ret == ZC_EFENCED ? ret : ZC_EOK; /* held() says. */
	}
	fleet_manifest_t m = *prev;
	m.head_seq = head.head_seq;
	if (fleet_manifest_publish(fp->js, &fp->names, &m) == ZC_EOK) {
		zc_warn("fleet: the newest snapshot manifest was not this "
		        "leader's (forged?): published snapshot %s's again", m.id);
		p->head_seq = prev->head_seq = m.head_seq;
	}
	return ZC_EOK;
}

/* Tells edges at once that a new history began (they would see it within
 * seconds anyway): a message never applied, of the new history. With
 * leadership it is also the new term's fence: from here on JetStream
 * refuses an older leader's publish (fleet.h). */
static int publish_marker(pub_t *p, const fleet_manifest_t *m)
{
	natsMsg *msg = NULL;
	char num[32];
	if (natsMsg_Create(&msg, p->fp->names.txn_subject, NULL, "", 0) !=
	    NATS_OK) {
		return ZC_ENOSPACE;
	}
	snprintf(num, sizeof(num), "%016" PRIx64, m->epoch);
	natsMsgHeader_Set(msg, "Zc-Epoch", num);
	snprintf(num, sizeof(num), "%" PRIu64, p->term);
	natsMsgHeader_Set(msg, "Zc-Term", num);
	snprintf(num, sizeof(num), "%" PRIu64, m->commit);
	natsMsgHeader_Set(msg, "Zc-Commit", num);
	natsMsgHeader_Set(msg, "Zc-Part", "0");
	snprintf(num, sizeof(num), "%u", FLEET_MARKER);
	natsMsgHeader_Set(msg, "Zc-Flags", num);
	jsPubAck *ack = NULL;
	jsErrCode jerr = 0;
	natsStatus s = fleet_expect_last(msg, "Nats-Expected-Last-Sequence",
	                                 p->last_seq);
	if (s == NATS_OK) {
		s = js_PublishMsg(&ack, p->fp->js, msg, NULL, &jerr);
	}
	natsMsg_Destroy(msg);
	int ret = ZC_EOK;
	if (s == NATS_OK) {
		p->last_seq = ack->Sequence;
	} else if (jerr == JSStreamWrongLastSequenceErr) {
		ret = refused(p);
	} else {
		ret = fleet_nats_error(s, jerr, "history marker");
	}
	jsPubAck_Destroy(ack);
	return ret;
}

/*
 * Whether this store is behind what it published before (restored from a
 * copy, or rolled back by an operating-system crash: the edge store is not
 * synced): then its commit numbers would be given out again with other
 * content, and a new history must start.
 */
static bool store_behind(pub_t *p, const fleet_manifest_t *head, bool have)
{
	edge_repl_pos_t pos;
	if (edge_repl_pos(p->fp->es, &pos) != ZC_EOK) {
		return false;
	}
	if (have && head->epoch == pos.epoch && head->commit > pos.commit) {
		return true;
	}
	natsMsg *msg = NULL;
	jsErrCode jerr = 0;
	bool behind = false;
	if (js_GetLastMsg(&msg, p->fp->js, p->fp->names.txn_stream,
	                  p->fp->names.txn_subject, NULL, &jerr) == NATS_OK) {
		const char *e = NULL, *c = NULL;
		if (natsMsgHeader_Get(msg, "Zc-Epoch", &e) == NATS_OK &&
		    natsMsgHeader_Get(msg, "Zc-Commit", &c) == NATS_OK &&
		    strtoull(e, NULL, 16) == pos.epoch &&
		    strtoull(c, NULL, 10) > pos.commit) {
			behind = true;
		}
		natsMsg_Destroy(msg);
	}
	return behind;
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

/* Begins a new history of the replication log (a new epoch; edges load
 * its snapshot): its position in pos. */
static int new_history(fleet_primary_t *fp, edge_repl_pos_t *pos)
{
	int ret = edge_repl_enable(fp->es, false, pos);
	return ret == ZC_EOK ? edge_repl_enable(fp->es, true, pos) : ret;
}

/*
 * Connects the streams; publishes a snapshot when the newest one is not of
 * this history (a new history, or NATS lost its storage), starting a new
 * history first when this store is behind what was published.
 */
static int start_epoch(pub_t *p, fleet_manifest_t *prev)
{
	fleet_primary_t *fp = p->fp;
	unsigned changed = 0;
	int ret = fleet_ensure_streams(&fp->cfg, &fp->names, fp->js, false,
	                               &changed);
	if (changed & (FLEET_TXN_CHANGED | FLEET_SNAP_CHANGED)) {
		p->stream_reset = true; /* Made again: its snapshot too. */
	}
	if (changed & FLEET_BUCKET_CHANGED) {
		atomic_store(&fp->rewatch, true);
	}
	if (ret == ZC_EOK) {
		ret = stream_last_seq(fp, &p->last_seq);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	fleet_manifest_t head = { .id = "" };
	ret = fleet_manifest_get(fp->js, &fp->names, &head);
	if (ret == ZC_EFORMAT) {
		zc_warn("fleet: the newest snapshot manifest cannot be read "
		        "(forged?): a snapshot replaces it");
	} else if (ret != ZC_EOK && ret != ZC_ENOZONE) {
		return ret;
	}
	bool have = ret == ZC_EOK;
	p->head_seq = head.head_seq;
	/* What the publishes below expect was read before PostgreSQL says
	 * this process leads: a newer leader's publish is either among what
	 * was read (then it leads no more) or refused (fleet.h). */
	ret = still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (store_behind(p, &head, have)) {
		edge_repl_pos_t pos;
		ret = new_history(fp, &pos);
		if (ret != ZC_EOK) {
			return ret;
		}
		zc_warn("fleet: this edge store is behind what it published "
		        "(restored, or rolled back by a crash): new history "
		        "%016" PRIx64 "; edges load its snapshot", pos.epoch);
		pthread_mutex_lock(&fp->lock);
		fp->epoch = pos.epoch;
		fp->ring_len = 0;
		pthread_mutex_unlock(&fp->lock);
		p->epoch = pos.epoch;
		p->commit = 0;
		p->part = UINT32_MAX;
		have = false;
	}
	if (have && head.epoch == p->epoch && !p->stream_reset) {
		*prev = head;
		return ZC_EOK;
	}
	p->stream_reset = false;
	zc_info("fleet: history %016" PRIx64 " has no snapshot in NATS yet: "
	        "publishing one", p->epoch);
	fleet_manifest_t none = { .id = "" };
	if (have && head.epoch != p->epoch) {
		/* Another history's messages are of no use to anyone now. */
		ret = purge_txn_below(fp, p->last_seq + 1);
	}
	if (ret == ZC_EOK || ret == ZC_ENOZONE) {
		ret = snapshot(p, &none);
	}
	if (ret == ZC_EOK) {
		ret = publish_marker(p, &none);
	}
	*prev = none;
	return ret;
}

/* The lowest term this node publishes with (TERM_KEY; 0: none). */
static uint64_t term_floor(fleet_primary_t *fp)
{
	edge_txn_t txn = { 0 };
	uint64_t term = 0;
	if (edge_txn_begin_read(fp->es, &txn) == ZC_EOK) {
		edge_meta_get(&txn, TERM_KEY, &term);
		edge_txn_abort(&txn);
	}
	return term;
}

static void keep_term(fleet_primary_t *fp, uint64_t term)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(fp->es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&txn, TERM_KEY, term);
		if (ret == ZC_EOK) {
			ret = edge_txn_commit(&txn);
		} else {
			edge_txn_abort(&txn);
		}
	}
	if (ret != ZC_EOK) {
		zc_warn("fleet: cannot keep term %" PRIu64 " in the edge store: "
		        "%s (after a restart it is taken again)", term,
		        zc_strerror(ret));
	}
}

/* A term above what the edges that are up report, when one of them
 * reports one at least `term` (0: none). */
static uint64_t term_above_edges(fleet_primary_t *fp, uint64_t term,
                                 char *name, size_t size)
{
	uint64_t top = fleet_edges_top_term(fp, name, size);
	if (top < term || (top == 0 && term == 0)) {
		return 0;
	}
	if (top >= TERM_LIMIT) {
		zc_error("fleet: edge %s reports term %" PRIu64 ", the last one: "
		         "no leader can go above it (forged; its store must be "
		         "deleted)", name, top);
		return 0;
	}
	return top + 1;
}

/*
 * Begins a new history of term (this leader's own when 0), whose snapshot
 * start_epoch() publishes, once still_leading() says this node leads:
 * every edge loads it, whatever commit it thinks it has. *epoch (unless
 * NULL) gets the history's. ZC_EREPLGAP when it began, ZC_EFENCED or
 * another error otherwise.
 */
static int begin_history(pub_t *p, uint64_t term, uint64_t *epoch)
{
	fleet_primary_t *fp = p->fp;
	int ret = still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_repl_pos_t pos;
	ret = new_history(fp, &pos);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (term != 0) {
		keep_term(fp, term);
	}
	pthread_mutex_lock(&fp->lock);
	if (term != 0) {
		fp->term = term;
	}
	fp->epoch = pos.epoch;
	fp->published = 0;
	fp->ring_len = 0;
	pthread_mutex_unlock(&fp->lock);
	if (term != 0) {
		p->term = term;
	}
	p->epoch = pos.epoch;
	p->commit = p->final_commit = p->msg_commit = 0;
	p->part = UINT32_MAX;
	p->bytes = 0;
	if (epoch != NULL) {
		*epoch = pos.epoch;
	}
	return ZC_EREPLGAP;
}

/*
 * An edge that is up reports a term higher than this leader's: it loaded
 * a snapshot of that term, which this leader did not publish (a forged
 * one: PostgreSQL, not NATS, says who leads, and still_leading() says
 * this node does), or a leader's before this one whose term was raised
 * so. That edge drops everything of a lower term for good, so this
 * leader takes a term above it and begins a new history with it (its
 * snapshot loads everywhere: its term is the highest). ZC_EREPLGAP when
 * it did (start_epoch() publishes the snapshot), ZC_EOK when there was
 * nothing to do, ZC_EFENCED or another error when it no longer leads.
 */
static int rise_above(pub_t *p)
{
	char name[FLEET_NAME_MAX] = "";
	uint64_t term = term_above_edges(p->fp, p->term + 1, name,
	                                 sizeof(name));
	if (term == 0) {
		return ZC_EOK;
	}
	uint64_t was = p->term, epoch = 0;
	int ret = begin_history(p, term, &epoch);
	if (ret == ZC_EREPLGAP) {
		zc_warn("fleet: edge %s follows leader term %" PRIu64 ", above "
		        "this leader's %" PRIu64 " (a snapshot this leader did "
		        "not publish: forged?); taking term %" PRIu64 " with new "
		        "history %016" PRIx64 ": edges load its snapshot", name,
		        term - 1, was, term, epoch);
	}
	return ret;
}

/*
 * Foreign messages edges may have applied (foreign()): a new history, so
 * that every edge loads its snapshot, whatever commit it thinks it has.
 * ZC_EREPLGAP when it began (start_epoch() publishes the snapshot),
 * ZC_EFENCED or another error otherwise.
 */
static int restart_history(pub_t *p)
{
	uint64_t epoch = 0;
	int ret = begin_history(p, 0, &epoch);
	if (ret == ZC_EREPLGAP) {
		zc_warn("fleet: new history %016" PRIx64 " after messages not "
		        "this primary's: edges load its snapshot", epoch);
		p->history_forced = fleet_now_ms();
		p->history_due = 0;
	}
	return ret;
}

/*
 * Leadership: waits until this process leads and its own build has caught
 * up with the records store (catchup.c), then begins a history for the
 * term (recording on: a new history, whose snapshot start_epoch()
 * publishes). ZC_EOK when it leads; anything else when stopping, or when
 * it took a term but its build is behind (*behind: what it must reach
 * before it tries again) or its history cannot begin (the lead given
 * back).
 */
static int lead(pub_t *p, uint64_t *behind)
{
	fleet_primary_t *fp = p->fp;
	uint64_t term = 0;
	int ret = fp->lead.take(fp->lead.ctx, &fp->stop, &term);
	edge_repl_pos_t pos;
	if (ret == ZC_EOK) {
		ret = fleet_catch_up(fp, term, behind);
		if (ret != ZC_EOK) {
			fp->lead.drop(fp->lead.ctx);
		}
	}
	if (ret == ZC_EOK) {
		ret = edge_repl_enable(fp->es, true, &pos);
		if (ret != ZC_EOK) {
			zc_warn("fleet: term %" PRIu64 " taken, but its history "
			        "cannot begin in the edge store: %s; giving the lead "
			        "back", term, zc_strerror(ret));
			fp->lead.drop(fp->lead.ctx);
		}
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	/* Never below a term this node rose to, nor below one its edges
	 * follow (rise_above()). */
	uint64_t floor = term_floor(fp);
	char name[FLEET_NAME_MAX] = "";
	uint64_t above = term_above_edges(fp, term > floor ? term : floor,
	                                  name, sizeof(name));
	if (floor > term || above > term) {
		uint64_t taken = term;
		term = above > floor ? above : floor;
		zc_info("fleet: term %" PRIu64 " taken; publishing with term %"
		        PRIu64 ", above what this node or its edges had", taken,
		        term);
	}
	if (above != 0) {
		keep_term(fp, term);
	}
	pthread_mutex_lock(&fp->lock);
	fp->leading = true;
	fp->term = term;
	fp->epoch = pos.epoch;
	fp->committed = fp->published = 0;
	fp->ring_len = 0;
	pthread_mutex_unlock(&fp->lock);
	*p = (pub_t){ .fp = fp, .term = term, .epoch = pos.epoch,
	              .part = UINT32_MAX };
	zc_info("fleet: leading (term %" PRIu64 "): publishing history %016"
	        PRIx64 " to %s", term, pos.epoch, fp->cfg.urls);
	return ZC_EOK;
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
		p.term = term_floor(fp);
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
	int64_t head_checked = 0; /* keep_head() */
	uint64_t behind = 0; /* the build must reach this before leading */
	fleet_build_watch_t build = { 0 };
	fleet_renew_t renew = { 0 };
	while (!fp->stop) {
		if (fp->nc == NULL || fleet_conn_closed(fp->nc)) {
			/* Closed for good by the library (the server closed it:
			 * it never reconnects): a new one, and everything from
			 * the streams on checked again on it (start_epoch()). */
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
			if (lead(&p, &behind) != ZC_EOK) {
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
			int ret = restart_history(&p);
			if (ret == ZC_EFENCED) {
				step_down(fp, zc_strerror(ret));
				continue;
			}
			ready = false; /* start_epoch(): the new history's snapshot */
			if (ret != ZC_EREPLGAP) {
				wait_more(fp, RETRY_MS);
				continue;
			}
		}
		if (!ready) {
			int ret = start_epoch(&p, &prev);
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
		           snapshot(&p, &prev) : ZC_EOK;
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
			int ret = rise_above(&p);
			if (ret == ZC_EOK) {
				ret = keep_objects(&p, &prev);
			}
			if (ret == ZC_EOK) {
				ret = keep_head(&p, &prev);
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
