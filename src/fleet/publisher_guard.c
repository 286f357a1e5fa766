/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the publisher's leader checks and keeps right in NATS (publisher.c
 * and publisher_history.c call it): whether it still leads, what to make
 * of a publish JetStream refused (a newer leader's, or foreign messages
 * to step over or to begin a new history after), and the streams, the
 * reports bucket, its snapshot and its manifest at the head of the
 * snapshot stream, made again when deleted, purged or forged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/publisher_state.h"

/* Foreign messages in the txn stream (publishing there should be
 * restricted: docs/fleet.md) that edges may have applied make the leader
 * begin a new history, at most once in this many ms (each costs a whole
 * snapshot, published and loaded by every edge); foreign messages no edge
 * applies are stepped over. At most FOREIGN_SCAN are looked at. */
#define FOREIGN_HISTORY_MS 5000
#define FOREIGN_SCAN 64

/*
 * Whether this process still leads, with the newest term: PostgreSQL says
 * (fleet.h, confirm()), not a term read from NATS (anyone allowed to
 * publish could forge one and make every leader step down). ZC_EOK;
 * ZC_EFENCED when a newer leader took over; another error when it cannot
 * tell (then held() is false: it steps down too).
 */
int pub_still_leading(pub_t *p)
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
	int ret = pub_stream_last_seq(fp, &last);
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
int pub_refused(pub_t *p)
{
	int ret = pub_still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	return foreign(p);
}

/* A manifest came over this leader's (pub_snapshot(), ZC_ESTALE): the
 * snapshot is published again over it. */
int pub_manifest_refused(pub_t *p)
{
	int ret = pub_still_leading(p);
	if (ret != ZC_EOK) {
		return ret;
	}
	p->stream_reset = true;
	return ZC_EREPLGAP;
}

int pub_stream_state(fleet_primary_t *fp, uint64_t *seq, int64_t *created,
                     uint64_t *first)
{
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetStreamInfo(&si, fp->js, fp->names.txn_stream, NULL,
	                                &jerr);
	if (s != NATS_OK) {
		return fleet_nats_error(s, jerr, "stream info");
	}
	*seq = si->State.LastSeq;
	if (created != NULL) {
		*created = si->Created;
	}
	if (first != NULL) {
		*first = si->State.FirstSeq;
	}
	jsStreamInfo_Destroy(si);
	return ZC_EOK;
}

/* The txn stream's last sequence (what a snapshot starts after). */
int pub_stream_last_seq(fleet_primary_t *fp, uint64_t *seq)
{
	return pub_stream_state(fp, seq, NULL, NULL);
}

/*
 * What the fleet needs in NATS is still there: the txn and snapshot
 * streams, the reports bucket, this history's snapshot (its manifest and
 * its first part). Something deleted or purged (by an operator, another
 * tool) is created again here, within HEAD_CHECK_MS (publisher.c), not
 * only when a publish fails: a new edge would otherwise wait for a
 * snapshot for ever, and edges could not report. ZC_EREPLGAP when a
 * snapshot must be published again (pub_start_epoch()), else ZC_EOK (a
 * failure is tried again at the next look).
 */
int pub_keep_objects(pub_t *p, const fleet_manifest_t *prev)
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
	/* The txn stream made again with the fleet's very settings between
	 * two looks, emptied, or purged past the snapshot's start: what this
	 * leader published since its snapshot, which edges may not have
	 * read, is gone from NATS, and edges would wait for the next write
	 * (outside testers 44, 46). */
	uint64_t last = 0, first = 0;
	int64_t created = 0;
	if (pub_stream_state(fp, &last, &created, &first) == ZC_EOK &&
	    (last < p->last_seq || (created != 0 && p->txn_created != 0 &&
	                            created != p->txn_created) ||
	     (prev->txn_seq > 0 && first > prev->txn_seq))) {
		zc_warn("fleet: stream %s was made again, emptied or purged "
		        "(messages %" PRIu64 "-%" PRIu64 ", this leader's last %"
		        PRIu64 ", its snapshot's first %" PRIu64 "): publishing "
		        "a snapshot again", fp->names.txn_stream, first, last,
		        p->last_seq, prev->txn_seq);
		p->stream_reset = true;
		return ZC_EREPLGAP;
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
int pub_keep_head(pub_t *p, fleet_manifest_t *prev)
{
	fleet_primary_t *fp = p->fp;
	fleet_manifest_t head;
	int ret = fleet_manifest_get(fp->js, &fp->names, &head);
	if (prev->id[0] == '\0' || (ret != ZC_EOK && ret != ZC_EFORMAT) ||
	    head.head_seq == p->head_seq) {
		return ZC_EOK;
	}
	ret = pub_still_leading(p);
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
