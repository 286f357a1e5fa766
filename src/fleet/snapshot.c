/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Snapshots of the edge store in JetStream (see fleet.h): the primary
 * publishes one as parts and a manifest; an edge loads the newest in one
 * LMDB transaction.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "common/error.h"
#include "common/log.h"
#include "fleet/internal.h"

typedef struct {
	jsCtx *js;
	const fleet_names_t *n;
	const char *id;
	uint32_t parts;
	uint64_t bytes;
	int ret;
} snap_pub_t;

static int publish_part(const edge_repl_part_t *part, void *arg)
{
	snap_pub_t *p = arg;
	char subject[FLEET_STR_MAX + 96];
	snprintf(subject, sizeof(subject), "%s.%s.%" PRIu32, p->n->snap_data,
	         p->id, part->part);
	jsErrCode jerr = 0;
	natsStatus s = js_Publish(NULL, p->js, subject, part->data,
	                          (int)part->len, NULL, &jerr);
	if (s != NATS_OK) {
		p->ret = fleet_nats_error(s, jerr, "snapshot part");
		return 1;
	}
	p->parts = part->part + 1;
	p->bytes += part->len;
	return 0;
}

static int publish_manifest(jsCtx *js, const fleet_names_t *n,
                            const fleet_manifest_t *m)
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
	jsErrCode jerr = 0;
	natsStatus s = js_Publish(NULL, js, n->snap_head, text, (int)strlen(text),
	                          NULL, &jerr);
	free(text);
	return fleet_nats_error(s, jerr, "snapshot manifest");
}

int fleet_snapshot_publish(jsCtx *js, const fleet_names_t *n,
                           edge_store_t *es, uint64_t term, uint64_t txn_seq,
                           fleet_manifest_t *m, uint64_t *bytes)
{
	edge_repl_pos_t pos;
	int ret = edge_repl_pos(es, &pos);
	if (ret != ZC_EOK) {
		return ret;
	}
	/* The id names the epoch and the commit the snapshot starts at; the
	 * snapshot itself reads a later commit if one lands meanwhile. */
	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%016" PRIx64 "-%" PRIu64, pos.epoch,
	         pos.commit);
	snap_pub_t p = { .js = js, .n = n, .id = m->id };
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
	*bytes = p.bytes;
	return publish_manifest(js, n, m);
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
	natsMsg_Destroy(msg);
	const char *epoch = NULL, *id = NULL;
	json_int_t commit = 0, parts = 0, seq = 0, term = 0;
	int ret = ZC_EFORMAT;
	/* "term" is optional: manifests of a zonecast before leadership. */
	if (j != NULL && json_unpack(j, "{s:s, s?I, s:I, s:I, s:I, s:s}",
	                             "epoch", &epoch, "term", &term, "commit",
	                             &commit, "parts", &parts, "txn_seq", &seq,
	                             "id", &id) == 0 &&
	    strlen(id) < sizeof(m->id) && parts > 0 && term >= 0) {
		memset(m, 0, sizeof(*m));
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
		char subject[FLEET_STR_MAX + 96];
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
	char subject[FLEET_STR_MAX + 96];
	snprintf(subject, sizeof(subject), "%s.%s.>", n->snap_data, id);
	jsOptions o;
	jsOptions_Init(&o);
	o.Stream.Purge.Subject = subject;
	jsErrCode jerr = 0;
	natsStatus s = js_PurgeStream(js, n->snap_stream, &o, &jerr);
	return fleet_nats_error(s, jerr, "purge snapshot");
}
