/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Snapshots of the edge store in JetStream (see fleet.h): the primary
 * publishes one as parts and a manifest; an edge loads the newest in one
 * LMDB transaction.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <jansson.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/internal.h"

typedef struct {
	jsCtx *js;
	const fleet_names_t *n;
	const char *id;
	size_t piece_max;  /* the server's max_payload, less header room */
	uint32_t parts;    /* messages published */
	uint64_t bytes;
	int ret;
} snap_pub_t;

/* A part of the snapshot's op stream goes as one message or, when the
 * server takes less than a part (its max_payload), as several: the
 * loader feeds the messages in order, wherever they cut the stream. */
static int publish_part(const edge_repl_part_t *part, void *arg)
{
	snap_pub_t *p = arg;
	size_t off = 0;
	do {
		size_t n = part->len - off;
		n = n < p->piece_max ? n : p->piece_max;
		char subject[FLEET_STR_MAX + 128];
		snprintf(subject, sizeof(subject), "%s.%s.%" PRIu32,
		         p->n->snap_data, p->id, p->parts);
		jsErrCode jerr = 0;
		natsStatus s = js_Publish(NULL, p->js, subject, part->data + off,
		                          (int)n, NULL, &jerr);
		if (s != NATS_OK) {
			p->ret = fleet_nats_error(s, jerr, "snapshot part");
			return 1;
		}
		p->parts++;
		p->bytes += n;
		off += n;
	} while (off < part->len);
	return 0;
}

int fleet_manifest_publish(jsCtx *js, const fleet_names_t *n,
                           fleet_manifest_t *m)
{
	char epoch[17];
	snprintf(epoch, sizeof(epoch), "%016" PRIx64, m->epoch);
	json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s}", "epoch", epoch,
	                      "term", (json_int_t)m->term,
	                      "commit", (json_int_t)m->commit,
	                      "parts", (json_int_t)m->parts,
	                      "txn_seq", (json_int_t)m->txn_seq, "id", m->id);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text == NULL) {
		return ZC_ENOSPACE;
	}
	natsMsg *msg = NULL;
	natsStatus s = natsMsg_Create(&msg, n->snap_head, NULL, text,
	                              (int)strlen(text));
	free(text);
	if (s == NATS_OK) {
		s = fleet_expect_last(msg, "Nats-Expected-Last-Subject-Sequence",
		                      m->head_seq);
	}
	jsPubAck *ack = NULL;
	jsErrCode jerr = 0;
	if (s == NATS_OK) {
		s = js_PublishMsg(&ack, js, msg, NULL, &jerr);
	}
	natsMsg_Destroy(msg);
	if (s == NATS_OK) {
		m->head_seq = ack->Sequence;
	}
	jsPubAck_Destroy(ack);
	if (s != NATS_OK && jerr == JSStreamWrongLastSequenceErr) {
		return ZC_ESTALE;
	}
	return fleet_nats_error(s, jerr, "snapshot manifest");
}

uint64_t fleet_snapshot_id_term(const char *id)
{
	const char *dash = strchr(id, '-');
	dash = dash != NULL ? strchr(dash + 1, '-') : NULL;
	return dash != NULL ? strtoull(dash + 1, NULL, 10) : 0;
}

int fleet_snapshot_publish(jsCtx *js, const fleet_names_t *n,
                           edge_store_t *es, size_t piece_max, uint64_t term,
                           uint64_t txn_seq, uint64_t head_seq,
                           fleet_manifest_t *m, uint64_t *bytes)
{
	edge_repl_pos_t pos;
	int ret = edge_repl_pos(es, &pos);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The id names the epoch and the commit the snapshot starts at (the
	 * snapshot itself reads a later commit if one lands meanwhile), the
	 * term (no leader purges a newer one's snapshot) and a random nonce:
	 * no two publishes share an id, so none overwrites the parts of
	 * another (cut at another size: another cluster node's max_payload,
	 * or read at another commit) while an edge loads it. */
	uint32_t nonce = 0;
	if (getrandom(&nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
		nonce = (uint32_t)fleet_mono_ms();
	}
	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%016" PRIx64 "-%" PRIu64 "-%" PRIu64
	         "-%08" PRIx32, pos.epoch, pos.commit, term, nonce);
	snap_pub_t p = { .js = js, .n = n, .id = m->id,
	                 .piece_max = piece_max > 0 ? piece_max : 1 };
	ret = edge_repl_snapshot(es, &pos, publish_part, &p);
	if (ret == ZC_EOK) {
		ret = p.ret;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	m->epoch = pos.epoch;
	m->term = term;
	m->commit = pos.commit;
	m->parts = p.parts;
	m->txn_seq = txn_seq;
	m->head_seq = head_seq;
	*bytes = p.bytes;
	return fleet_manifest_publish(js, n, m);
}

int fleet_manifest_get(jsCtx *js, const fleet_names_t *n, fleet_manifest_t *m)
{
	natsMsg *msg = NULL;
	jsErrCode jerr = 0;
	natsStatus s = js_GetLastMsg(&msg, js, n->snap_stream, n->snap_head, NULL,
	                             &jerr);
	if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr ||
	    jerr == JSStreamNotFoundErr) {
		return ZC_ENOZONE;
	}
	if (s != NATS_OK) {
		return fleet_nats_error(s, jerr, "snapshot manifest");
	}
	json_error_t err;
	json_t *j = json_loadb(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg),
	                       0, &err);
	uint64_t head_seq = natsMsg_GetSequence(msg);
	natsMsg_Destroy(msg);
	memset(m, 0, sizeof(*m));
	m->head_seq = head_seq;
	const char *epoch = NULL, *id = NULL;
	json_int_t commit = 0, parts = 0, seq = 0, term = 0;
	int ret = ZC_EFORMAT;
	/* "term" is optional: manifests of a zonecast before leadership. */
	if (j != NULL && json_unpack(j, "{s:s, s?I, s:I, s:I, s:I, s:s}",
	                             "epoch", &epoch, "term", &term, "commit",
	                             &commit, "parts", &parts, "txn_seq", &seq,
	                             "id", &id) == 0 &&
	    strlen(id) < sizeof(m->id) && parts > 0 && term >= 0) {
		m->epoch = strtoull(epoch, NULL, 16);
		m->term = (uint64_t)term;
		m->commit = (uint64_t)commit;
		m->parts = (uint32_t)parts;
		m->txn_seq = (uint64_t)seq;
		strcpy(m->id, id);
		ret = ZC_EOK;
	}
	json_decref(j);
	return ret;
}

int fleet_snapshot_load(jsCtx *js, const fleet_names_t *n, edge_store_t *es,
                        const fleet_manifest_t *m)
{
	edge_applier_t ap;
	int ret = edge_apply_begin(es, &ap);
	for (uint32_t i = 0; ret == ZC_EOK && i < m->parts; i++) {
		char subject[FLEET_STR_MAX + 128];
		snprintf(subject, sizeof(subject), "%s.%s.%" PRIu32, n->snap_data,
		         m->id, i);
		natsMsg *msg = NULL;
		jsErrCode jerr = 0;
		natsStatus s = js_GetLastMsg(&msg, js, n->snap_stream, subject,
		                             NULL, &jerr);
		if (s != NATS_OK) {
			ret = s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr ?
			      ZC_EREPLGAP : fleet_nats_error(s, jerr, "snapshot");
			break;
		}
		ret = edge_apply_feed(&ap, (const uint8_t *)natsMsg_GetData(msg),
		                      (size_t)natsMsg_GetDataLength(msg));
		natsMsg_Destroy(msg);
	}
	if (ret == ZC_EOK) {
		/* The snapshot's term goes with it, in its transaction: an
		 * edge stopped right after holds the term of its history. */
		ret = edge_meta_put(&ap.txn, "fleet_term", m->term);
	}
	if (ret != ZC_EOK) {
		edge_apply_abort(&ap);
		return ret;
	}
	/* The stream position to resume from: just before txn_seq. */
	return edge_apply_finish(&ap, m->epoch, m->commit,
	                         m->txn_seq > 0 ? m->txn_seq - 1 : 0);
}

/* Purges what the snapshot with this id left in the snapshot stream. */
int fleet_snapshot_purge(jsCtx *js, const fleet_names_t *n, const char *id)
{
	char subject[FLEET_STR_MAX + 128];
	snprintf(subject, sizeof(subject), "%s.%s.>", n->snap_data, id);
	jsOptions o;
	jsOptions_Init(&o);
	o.Stream.Purge.Subject = subject;
	jsErrCode jerr = 0;
	natsStatus s = js_PurgeStream(js, n->snap_stream, &o, &jerr);
	return fleet_nats_error(s, jerr, "purge snapshot");
}
