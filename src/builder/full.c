/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Full build and verification of one zone: a streaming merge of the records
 * store's (okey, type) order with the edge store's key order (see
 * builder.h).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset.h>
#include <libknot/rrtype/soa.h>

#include "builder/builder.h"
#include "builder/fault.h"
#include "builder/node.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"

/* State shared by the build and the verification. */
typedef struct {
	records_store_t *rs;  /* The scan's connection (same snapshot). */
	records_scan_t *scan;
	records_zone_t zone;
	uint64_t seq;
	edge_txn_t read;     /* Snapshot of the edge the merge walks. */
	edge_txn_t write;    /* Only for a build. */
	edge_iter_t iter;
	bool apply;
	builder_stats_t *stats;
	builder_diff_cb diff;
	void *diff_ctx;
	int differences;
	builder_node_t node;
	records_row_t pending;
	int pending_state;   /* 1: a row is pending, 0: end, <0: error */
	uint8_t apex_lf[DNS_LF_MAXLEN];
	size_t apex_lf_len;
	uint32_t soa_ttl;
	uint16_t soa_len;
	uint8_t soa[EDGE_SOA_MAXLEN];
	bool has_soa;
	void (*progress)(uint64_t records, void *ctx);
	void *progress_ctx;
	/* Resumable state between steps (chunked builds). */
	bool started;
	int node_state;      /* next_node() result for the node held. */
	bool edge_done;
	uint8_t resume[DNS_LF_MAXLEN];
	size_t resume_len;
	int found;           /* edge_zone_get() result for the zone. */
	edge_zone_t have;
	/* A rebuild of a live zone in several steps writes to the stage,
	 * made live with the metadata in the last step (edge.h): queries
	 * (and edges of a fleet) never see the zone half-built. */
	bool stage;
} build_t;

static void report(build_t *b, const uint8_t *owner, const char *what)
{
	b->differences++;
	if (b->diff != NULL) {
		b->diff(owner, what, b->diff_ctx);
	}
}

/* Verifying: the row's stored key must be the key of its own owner, so
 * that two names can never share a node (dns/name.h). */
static void check_key(build_t *b, const records_row_t *row)
{
	uint8_t lf[DNS_LF_MAXLEN];
	size_t len = dns_name_to_lf(row->owner, lf);
	if (len < b->apex_lf_len || len - b->apex_lf_len != row->okey_len ||
	    memcmp(lf, b->apex_lf, b->apex_lf_len) != 0 ||
	    memcmp(lf + b->apex_lf_len, row->okey, row->okey_len) != 0) {
		report(b, row->owner, "stored key is not its owner's key "
		       "(the record is filed under another name)");
	}
}

/* Adds a row's record to the node being assembled. */
static int add_row(build_t *b, const records_row_t *row)
{
	builder_node_t *n = &b->node;
	if (!b->apply) {
		check_key(b, row);
	}
	if (row->okey_len == 0 && row->type == KNOT_RRTYPE_SOA) {
		/* The SOA lives in the zone metadata, not in the apex node. */
		if (!b->has_soa && row->rdata_len <= EDGE_SOA_MAXLEN &&
		    row->rdata_len >= 22) {
			b->soa_ttl = row->ttl;
			b->soa_len = row->rdata_len;
			memcpy(b->soa, row->rdata, row->rdata_len);
			b->has_soa = true;
		}
		return ZC_EOK;
	}
	return builder_node_add(n, row->type, row->ttl, row->rdata,
	                        row->rdata_len);
}

/* Reads rows until the next node is complete. Returns 1, 0 at end, <0. */
static int next_node(build_t *b)
{
	builder_node_t *n = &b->node;
	n->count = 0;
	n->valid = false;
	if (b->pending_state <= 0) {
		return b->pending_state;
	}
	builder_node_start(n, b->pending.okey, b->pending.okey_len,
	                   b->pending.owner);
	for (;;) {
		int ret = add_row(b, &b->pending);
		if (ret != ZC_EOK) {
			return ret;
		}
		if (++b->stats->records % 65536 == 0 && b->progress != NULL) {
			b->progress(b->stats->records, b->progress_ctx);
		}
		b->pending_state = records_scan_next(b->scan, &b->pending);
		if (b->pending_state <= 0 ||
		    b->pending.okey_len != n->okey_len ||
		    memcmp(b->pending.okey, n->okey, n->okey_len) != 0) {
			break;
		}
	}
	if (b->pending_state < 0) {
		return b->pending_state;
	}
	n->valid = true;
	return 1;
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	if (c != 0) {
		return c;
	}
	return (alen > blen) - (alen < blen);
}

/* Deletes (or, verifying, reports) a node found only at the edge. */
static int emit_delete(build_t *b, const uint8_t *rel, size_t rel_len)
{
	if (!b->apply) {
		uint8_t lf[DNS_LF_MAXLEN];
		uint8_t owner[KNOT_DNAME_MAXLEN] = { 0 };
		if (b->apex_lf_len + rel_len <= sizeof(lf)) {
			memcpy(lf, b->apex_lf, b->apex_lf_len);
			memcpy(lf + b->apex_lf_len, rel, rel_len);
			dns_name_from_lf(lf, b->apex_lf_len + rel_len, owner);
		}
		report(b, owner, "stale at the edge (not in the records store)");
		return ZC_EOK;
	}
	b->stats->nodes_deleted++;
	int ret = b->stage ?
	          edge_txn_stage_del(&b->write, b->zone.id, rel, rel_len, b->seq) :
	          edge_txn_del_node(&b->write, b->zone.id, rel, rel_len, b->seq);
	return ret == ZC_ESTALE ? ZC_EOK : ret;
}

/* Writes (or, verifying, compares) the assembled node. */
static int emit_node(build_t *b, const uint8_t *old, size_t old_len)
{
	builder_node_t *n = &b->node;
	if (n->count == 0) {
		/* Only the SOA was here (the apex): nothing to store. */
		if (old != NULL) {
			return emit_delete(b, n->okey, n->okey_len);
		}
		return ZC_EOK;
	}
	uint8_t *buf;
	size_t len;
	int ret = builder_node_encode(n, b->seq, &buf, &len);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (old != NULL && edge_node_same_content(buf, len, old, old_len)) {
		b->stats->nodes_unchanged++;
		return ZC_EOK;
	}
	if (!b->apply) {
		report(b, n->owner, old ? "differs" : "missing at the edge");
		return ZC_EOK;
	}
	b->stats->nodes_written++;
	ret = b->stage ?
	      edge_txn_stage_put(&b->write, b->zone.id, n->okey, n->okey_len, buf,
	                         len) :
	      edge_txn_put_node(&b->write, b->zone.id, n->okey, n->okey_len, buf,
	                        len);
	return ret == ZC_ESTALE ? ZC_EOK : ret;
}

/* Walks both sorted streams and emits their differences, at most `budget`
 * nodes (edge or records side). Returns 1 when stopped by the budget (the
 * edge key to resume at is saved), 0 when both streams are done. */
static int merge(build_t *b, size_t budget)
{
	const uint8_t *rel = NULL, *val = NULL;
	size_t rel_len = 0, val_len = 0;
	int ret = b->started ? b->node_state : next_node(b);
	b->started = true;
	int it = b->edge_done ? 0 :
	         edge_iter_next(&b->iter, &rel, &rel_len, &val, &val_len);
	size_t done = 0;
	while (ret >= 0 && it >= 0 && (ret == 1 || it == 1)) {
		if (done++ == budget) {
			/* Resume at the edge node not consumed yet. */
			b->node_state = ret;
			b->edge_done = (it != 1);
			if (it == 1) {
				memcpy(b->resume, rel, rel_len);
				b->resume_len = rel_len;
			}
			return 1;
		}
		int cmp;
		if (ret != 1) {
			cmp = 1;
		} else if (it != 1) {
			cmp = -1;
		} else {
			cmp = key_cmp(b->node.okey, b->node.okey_len, rel, rel_len);
		}
		int wret;
		if (cmp < 0) {
			wret = emit_node(b, NULL, 0);
			ret = (wret == ZC_EOK) ? next_node(b) : wret;
		} else if (cmp > 0) {
			wret = emit_delete(b, rel, rel_len);
			it = (wret == ZC_EOK) ? edge_iter_next(&b->iter, &rel, &rel_len,
			                                       &val, &val_len) : wret;
		} else {
			wret = emit_node(b, val, val_len);
			ret = (wret == ZC_EOK) ? next_node(b) : wret;
			it = (wret == ZC_EOK) ? edge_iter_next(&b->iter, &rel, &rel_len,
			                                       &val, &val_len) : wret;
		}
	}
	b->node_state = ret;
	return ret < 0 ? ret : (it < 0 ? it : 0);
}

/* Zone metadata from the build: serial, SOA with that serial, stamp. */
static void make_meta(build_t *b, edge_zone_t *meta)
{
	memset(meta, 0, sizeof(*meta));
	meta->zone_id = (uint64_t)b->zone.id;
	meta->seq = b->seq;
	meta->serial = b->zone.serial;
	meta->apex_len = knot_dname_size(b->zone.apex);
	memcpy(meta->apex, b->zone.apex, meta->apex_len);
	meta->soa_ttl = b->soa_ttl;
	meta->soa_len = b->soa_len;
	memcpy(meta->soa, b->soa, b->soa_len);
	uint8_t *serial = meta->soa + meta->soa_len - 20;
	serial[0] = (uint8_t)(b->zone.serial >> 24);
	serial[1] = (uint8_t)(b->zone.serial >> 16);
	serial[2] = (uint8_t)(b->zone.serial >> 8);
	serial[3] = (uint8_t)b->zone.serial;
}

/* Compares metadata (verification only). */
static void check_meta(build_t *b, const edge_zone_t *want, int found,
                       const edge_zone_t *have)
{
	if (found != ZC_EOK) {
		report(b, b->zone.apex, "zone missing at the edge");
	} else if (have->serial != want->serial) {
		report(b, b->zone.apex, "serial differs");
	} else if (have->soa_len != want->soa_len || have->soa_ttl != want->soa_ttl ||
	           memcmp(have->soa, want->soa, want->soa_len) != 0) {
		report(b, b->zone.apex, "SOA differs");
	} else if (have->zone_id != want->zone_id) {
		report(b, b->zone.apex, "zone id differs");
	}
}

/* Removes a zone that no longer exists in the records store. */
static int drop_zone(records_store_t *rs, edge_store_t *es,
                     const knot_dname_t *apex, build_t *b)
{
	uint64_t seq;
	int ret = records_last_seq(rs, &seq);
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_txn_t *txn = b->apply ? &b->write : &b->read;
	ret = b->apply ? edge_txn_begin_write(es, txn) :
	      edge_txn_begin_read(es, txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_zone_t meta;
	ret = edge_zone_get(txn, apex, &meta);
	if (ret == ZC_EOK && !b->apply) {
		report(b, apex, "zone deleted but still at the edge");
	} else if (ret == ZC_EOK && meta.seq <= seq) {
		ret = edge_txn_del_zone(txn, apex, meta.zone_id);
	} else if (ret == ZC_ENOZONE) {
		ret = ZC_EOK;
	}
	if (ret == ZC_EOK && b->apply) {
		return edge_txn_commit(txn);
	}
	edge_txn_abort(txn);
	return ret;
}

/* First step: the zone-level fence, a zone re-created under a new id, and
 * whether to stage (a live zone rebuilt in several steps). */
static int fence(build_t *b, bool chunked)
{
	b->found = edge_zone_get(&b->read, b->zone.apex, &b->have);
	if (b->found == ZC_EOK && b->have.seq > b->seq && b->apply) {
		b->stats->skipped = true; /* The edge holds a newer build. */
		return 1;
	}
	if (b->found == ZC_EOK && b->have.zone_id != (uint64_t)b->zone.id &&
	    b->apply) {
		return edge_txn_del_zone(&b->write, b->zone.apex, b->have.zone_id);
	}
	if (!b->apply) {
		return ZC_EOK;
	}
	b->stage = chunked && b->found == ZC_EOK;
	/* What an abandoned build of the zone left goes. */
	return edge_txn_stage_clear(&b->write, (uint64_t)b->zone.id);
}

/* The zone's DNSSEC keys as the records store lists them, copied (a row's
 * PEM is borrowed for the callback only) for the edge keyset (codec.h). */
typedef struct {
	edge_keyset_t set;
	int64_t id[EDGE_KEYSET_MAX_KEYS];
	unsigned listed;     /* Every key of the zone, kept or not. */
	bool failed;
} keys_t;

static int add_key(const records_dnssec_key_t *key, void *ctx)
{
	keys_t *k = ctx;
	if (k->listed++ >= EDGE_KEYSET_MAX_KEYS) {
		return 0; /* Counted: the encoder refuses the keyset. */
	}
	uint8_t *pem = malloc(key->pem_len > 0 ? key->pem_len : 1);
	if (pem == NULL) {
		k->failed = true;
		return 1;
	}
	memcpy(pem, key->pem, key->pem_len);
	k->id[k->set.count] = key->id;
	k->set.keys[k->set.count++] = (edge_key_t){
		.flags = key->flags, .algorithm = key->algorithm,
		.active = key->active, .pem = pem, .pem_len = key->pem_len };
	return 0;
}

static void keys_free(keys_t *k)
{
	for (unsigned i = 0; i < k->set.count; i++) {
		free((uint8_t *)k->set.keys[i].pem);
	}
}

/* Encodes the keys (an empty value: the zone is not signed); a keyset the
 * edge cannot hold is an error of the zone's build, logged here with what
 * is wrong (never a key left out). */
static int encode_keys(build_t *b, keys_t *k, uint8_t **val, size_t *len)
{
	*val = NULL;
	*len = 0;
	if (k->listed == 0) {
		return ZC_EOK;
	}
	size_t size = edge_keyset_size(&k->set);
	uint8_t *buf = malloc(size);
	if (buf == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = k->listed > EDGE_KEYSET_MAX_KEYS ? ZC_EKEYCOUNT :
	          edge_keyset_encode(buf, size, &k->set);
	if (ret == ZC_EKEYCOUNT) {
		zc_error("zone %s: %u DNSSEC keys, the edge store holds %u at "
		         "most (retire some: zonecast dnssec rollover ZONE "
		         "ksk|zsk retire)", b->zone.name, k->listed,
		         EDGE_KEYSET_MAX_KEYS);
	}
	for (unsigned i = 0; ret == ZC_EKEYSIZE && i < k->set.count; i++) {
		size_t pem_len = k->set.keys[i].pem_len;
		if (pem_len == 0 || pem_len > EDGE_KEYSET_PEM_MAX) {
			zc_error("zone %s: DNSSEC key id %lld does not fit the "
			         "edge store: its private key (PEM) has %zu bytes, "
			         "1 to %u fit", b->zone.name, (long long)k->id[i],
			         pem_len, EDGE_KEYSET_PEM_MAX);
		}
	}
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*val = buf;
	*len = (size_t)ret;
	return ZC_EOK;
}

/* Whether the stored keyset holds the same keys as `want` (in either
 * version: a keyset written before version 2 is still the same keys). */
static bool same_keys(const uint8_t *have, size_t have_len,
                      const uint8_t *want, size_t want_len)
{
	if (have_len == want_len && (want_len == 0 ||
	                             memcmp(have, want, want_len) == 0)) {
		return true;
	}
	edge_keyset_t set;
	if (have_len == 0 || want_len == 0 ||
	    edge_keyset_decode(have, have_len, &set) != ZC_EOK ||
	    edge_keyset_size(&set) != want_len) {
		return false;
	}
	uint8_t *buf = malloc(want_len);
	bool same = buf != NULL &&
	            edge_keyset_encode(buf, want_len, &set) == (int)want_len &&
	            memcmp(buf, want, want_len) == 0;
	free(buf);
	return same;
}

/* The signing keys go live with the zone's metadata (or are dropped). */
static int finish_keys(build_t *b)
{
	keys_t k = { 0 };
	uint8_t *val = NULL;
	size_t len = 0;
	int ret = records_dnssec_keys(b->rs, b->zone.id, add_key, &k);
	if (ret == ZC_EOK && k.failed) {
		ret = KNOT_ENOMEM;
	}
	if (ret == ZC_EOK) {
		ret = encode_keys(b, &k, &val, &len);
	}
	if (ret == ZC_EOK && b->apply) {
		ret = edge_txn_put_keys(&b->write, (uint64_t)b->zone.id, val, len);
	} else if (ret == ZC_EOK) {
		const uint8_t *have = NULL;
		size_t have_len = 0;
		if (edge_keys_get(&b->read, (uint64_t)b->zone.id, &have,
		                  &have_len) != ZC_EOK) {
			have_len = 0;
		}
		if (!same_keys(have, have_len, val, len)) {
			report(b, b->zone.apex, "DNSSEC signing keys differ");
		}
	}
	free(val);
	keys_free(&k);
	return ret;
}

/* Last step: the metadata (the serial goes live with the last chunk). */
static int finish(build_t *b)
{
	edge_zone_t want;
	if (!b->has_soa) {
		zc_error("zone %s: no SOA record, not built", b->zone.name);
		return ZC_EZONEFILE;
	}
	make_meta(b, &want);
	int ret = finish_keys(b);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (!b->apply) {
		check_meta(b, &want, b->found, &b->have);
		return ZC_EOK;
	}
	ret = builder_fault_check(b->zone.apex);
	if (ret == ZC_EOK && b->stage) {
		ret = edge_txn_stage_commit(&b->write, (uint64_t)b->zone.id);
	}
	return ret != ZC_EOK ? ret : edge_txn_put_zone(&b->write, &want);
}

/* One step: at most `budget` nodes in one LMDB write transaction. Returns
 * 1 when more steps are needed, 0 when the build is complete. */
static int step(build_t *b, edge_store_t *es, size_t budget)
{
	int ret = b->apply ? edge_txn_begin_write(es, &b->write) : ZC_EOK;
	if (ret == ZC_EOK) {
		/* A read snapshot taken while holding the write lock shows the
		 * state the write transaction starts from. */
		ret = edge_txn_begin_read(es, &b->read);
	}
	int more = 0;
	if (ret == ZC_EOK && !b->started) {
		more = fence(b, budget != SIZE_MAX);
		ret = more < 0 ? more : ZC_EOK;
	}
	if (ret == ZC_EOK && more == 0) {
		ret = edge_iter_begin_at(&b->read, (uint64_t)b->zone.id, b->resume,
		                         b->resume_len, &b->iter);
		if (ret == ZC_EOK) {
			more = merge(b, budget);
			ret = more < 0 ? more : ZC_EOK;
			edge_iter_end(&b->iter);
		}
		if (ret == ZC_EOK && more == 0) {
			ret = finish(b);
		}
	} else if (more == 1) {
		more = 0; /* Fenced off: nothing to do. */
	}
	edge_txn_abort(&b->read);
	if (ret == ZC_EOK && b->apply) {
		ret = edge_txn_commit(&b->write);
	} else {
		edge_txn_abort(&b->write);
	}
	return ret < 0 ? ret : more;
}

struct builder_job {
	build_t b;
	builder_stats_t stats;
	records_store_t *rs;
	edge_store_t *es;
	bool dropped;        /* The zone no longer exists: delete it. */
	uint8_t apex[KNOT_DNAME_MAXLEN];
};

int builder_full_begin(records_store_t *rs, edge_store_t *es,
                       const knot_dname_t *apex, builder_job_t **out)
{
	builder_job_t *job = calloc(1, sizeof(*job));
	if (job == NULL) {
		return KNOT_ENOMEM;
	}
	job->rs = rs;
	job->es = es;
	knot_dname_copy_lower(job->apex, apex);
	build_t *b = &job->b;
	b->apply = true;
	b->rs = rs;
	b->stats = &job->stats;
	int ret = records_scan_begin(rs, job->apex, &b->zone, &b->seq, &b->scan);
	if (ret == ZC_ENOZONE) {
		job->dropped = true;
		*out = job;
		return ZC_EOK;
	}
	if (ret != ZC_EOK) {
		free(job);
		return ret;
	}
	b->stats->seq = b->seq;
	b->apex_lf_len = dns_name_to_lf(b->zone.apex, b->apex_lf);
	builder_node_init(&b->node);
	b->pending_state = records_scan_next(b->scan, &b->pending);
	*out = job;
	return ZC_EOK;
}

int builder_full_step(builder_job_t *job, size_t budget)
{
	if (job->dropped) {
		return drop_zone(job->rs, job->es, job->apex, &job->b);
	}
	return step(&job->b, job->es, budget);
}

const knot_dname_t *builder_job_apex(const builder_job_t *job)
{
	return job->apex;
}

uint64_t builder_job_zone_id(const builder_job_t *job)
{
	return job->dropped ? 0 : (uint64_t)job->b.zone.id;
}

void builder_full_end(builder_job_t *job, builder_stats_t *stats)
{
	if (job == NULL) {
		return;
	}
	if (stats != NULL) {
		*stats = job->stats;
	}
	if (!job->dropped) {
		builder_node_deinit(&job->b.node);
		records_scan_end(job->b.scan);
	}
	free(job);
}

/* Map doublings one build may ask for (a small map, a large zone). */
#define MAX_GROWS 24

/* After a whole build of the zone succeeded (the CLI's, after an import):
 * it is not quarantined any more. A running zonecast notices the entry is
 * gone and releases the zone after a build of its own. */
static int clear_quarantine(edge_store_t *es, uint64_t zone_id)
{
	edge_txn_t txn = { 0 };
	edge_quarantine_t q;
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = edge_quarantine_get(&txn, zone_id, &q);
	if (ret == ZC_EOK) {
		ret = edge_txn_del_quarantine(&txn, zone_id);
		ret = ret == ZC_EOK ? edge_txn_commit(&txn) : ret;
		if (ret == ZC_EOK) {
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, q.apex, sizeof(name));
			zc_info("zone %s: released from quarantine: built whole",
			        name);
			return ZC_EOK;
		}
	}
	edge_txn_abort(&txn);
	return ret == KNOT_ENOENT ? ZC_EOK : ret;
}

int builder_full_build(records_store_t *rs, edge_store_t *es,
                       const knot_dname_t *apex, builder_stats_t *stats,
                       void (*progress)(uint64_t records, void *ctx),
                       void *ctx)
{
	for (int attempt = 0; ; attempt++) {
		builder_job_t *job;
		int ret = builder_full_begin(rs, es, apex, &job);
		if (ret != ZC_EOK) {
			return ret;
		}
		job->b.progress = progress;
		job->b.progress_ctx = ctx;
		ret = builder_full_step(job, SIZE_MAX);
		uint64_t zone_id = builder_job_zone_id(job);
		builder_full_end(job, stats);
		if (ret >= 0 && zone_id != 0) {
			ret = clear_quarantine(es, zone_id);
		}
		if (ret != ZC_EMAPFULL || attempt == MAX_GROWS) {
			return ret < 0 ? ret : ZC_EOK;
		}
		ret = edge_grow(es); /* Then build again. */
		if (ret != ZC_EOK) {
			return ret;
		}
	}
}

int builder_verify(records_store_t *rs, edge_store_t *es,
                   const knot_dname_t *apex, builder_diff_cb diff, void *ctx)
{
	return builder_verify_progress(rs, es, apex, diff, ctx, NULL, NULL);
}

int builder_verify_progress(records_store_t *rs, edge_store_t *es,
                            const knot_dname_t *apex, builder_diff_cb diff,
                            void *ctx,
                            void (*progress)(uint64_t records, void *pctx),
                            void *pctx)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, apex);
	build_t *b = calloc(1, sizeof(*b));
	builder_stats_t stats = { 0 };
	if (b == NULL) {
		return KNOT_ENOMEM;
	}
	b->stats = &stats;
	b->rs = rs;
	b->diff = diff;
	b->diff_ctx = ctx;
	b->progress = progress;
	b->progress_ctx = pctx;
	int ret = records_scan_begin(rs, lower, &b->zone, &b->seq, &b->scan);
	if (ret == ZC_ENOZONE) {
		ret = drop_zone(rs, es, lower, b);
	} else if (ret == ZC_EOK) {
		b->apex_lf_len = dns_name_to_lf(b->zone.apex, b->apex_lf);
		builder_node_init(&b->node);
		b->pending_state = records_scan_next(b->scan, &b->pending);
		ret = step(b, es, SIZE_MAX);
		builder_node_deinit(&b->node);
		records_scan_end(b->scan);
	}
	int differences = b->differences;
	free(b);
	return ret < 0 ? ret : differences;
}
