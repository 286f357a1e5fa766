/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The publisher's leadership, terms and histories (its loop in
 * publisher.c calls them): taking the lead and the term to publish with
 * (never below one this node rose to, nor below one its edges follow),
 * beginning a new history when the edge store is behind what was
 * published, when foreign messages edges may have applied came in, or
 * when an edge follows a higher term; and the snapshots, with their
 * history marker and the purges they make possible.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/publisher_state.h"

/* The meta key of this node's edge store that keeps the lowest term it
 * publishes with (pub_rise_above()), across restarts. */
#define TERM_KEY "fleet_lead_term"
/* Terms travel as JSON integers (manifests, reports). */
#define TERM_LIMIT ((uint64_t)INT64_MAX)

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
int pub_snapshot(pub_t *p, fleet_manifest_t *prev)
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
		return pub_manifest_refused(p); /* Another manifest came meanwhile. */
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
		ret = pub_refused(p);
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
		/* Read as the edges read it (fleet_headers_read()). */
		fleet_headers_t h;
		behind = fleet_headers_read(msg, &h) != FLEET_HEADERS_NONE &&
		         h.epoch == pos.epoch && h.commit > pos.commit;
		natsMsg_Destroy(msg);
	}
	return behind;
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
int pub_start_epoch(pub_t *p, fleet_manifest_t *prev)
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
	uint64_t last = 0;
	int64_t created = 0;
	if (ret == ZC_EOK) {
		ret = pub_stream_state(fp, &last, &created, NULL);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if ((p->txn_created != 0 && created != 0 &&
	     created != p->txn_created) || last < p->last_seq) {
		/* Made again (or emptied) since this leader's last look, say
		 * between a refused publish and this: what it published is
		 * gone from NATS (outside tester 46). */
		p->stream_reset = true;
	}
	p->last_seq = last;
	p->txn_created = created;
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
	ret = pub_still_leading(p);
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
		ret = pub_snapshot(p, &none);
	}
	if (ret == ZC_EOK) {
		ret = publish_marker(p, &none);
	}
	*prev = none;
	return ret;
}

/* The lowest term this node publishes with (TERM_KEY; 0: none). */
uint64_t pub_term_floor(fleet_primary_t *fp)
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
 * pub_start_epoch() publishes, once pub_still_leading() says this node leads:
 * every edge loads it, whatever commit it thinks it has. *epoch (unless
 * NULL) gets the history's. ZC_EREPLGAP when it began, ZC_EFENCED or
 * another error otherwise.
 */
static int begin_history(pub_t *p, uint64_t term, uint64_t *epoch)
{
	fleet_primary_t *fp = p->fp;
	int ret = pub_still_leading(p);
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
 * one: PostgreSQL, not NATS, says who leads, and pub_still_leading() says
 * this node does), or a leader's before this one whose term was raised
 * so. That edge drops everything of a lower term for good, so this
 * leader takes a term above it and begins a new history with it (its
 * snapshot loads everywhere: its term is the highest). ZC_EREPLGAP when
 * it did (pub_start_epoch() publishes the snapshot), ZC_EOK when there was
 * nothing to do, ZC_EFENCED or another error when it no longer leads.
 */
int pub_rise_above(pub_t *p)
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
 * Foreign messages edges may have applied (foreign(), publisher_guard.c):
 * a new history, so that every edge loads its snapshot, whatever commit it
 * thinks it has.
 * ZC_EREPLGAP when it began (pub_start_epoch() publishes the snapshot),
 * ZC_EFENCED or another error otherwise.
 */
int pub_restart_history(pub_t *p)
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
 * term (recording on: a new history, whose snapshot pub_start_epoch()
 * publishes). ZC_EOK when it leads; anything else when stopping, or when
 * it took a term but its build is behind (*behind: what it must reach
 * before it tries again) or its history cannot begin (the lead given
 * back).
 */
int pub_lead(pub_t *p, uint64_t *behind)
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
	 * follow (pub_rise_above()). */
	uint64_t floor = pub_term_floor(fp);
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
