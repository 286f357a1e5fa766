/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bringing one zone of the signed view up to the edge's serial (see
 * sigview.h for the design): the changed nodes, the NSEC chain around
 * them, the SOA's signature, a batch of refreshes, and the journal entry
 * of exactly what changed, in one SQLite transaction.
 *
 * Every change goes through node(), which makes a node of the view equal
 * to the edge's (data, signatures, chain membership) and records the RR
 * changes; nsec() then makes a chain node's NSEC right. A full pass is
 * node() for every name of either store, then nsec() along the chain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/name.h"
#include "sigview/internal.h"

#define NODE_BUF (1 << 20)
#define MAX_SIGS 64

typedef struct {
	view_update_t *u;
	int64_t zone_id;
	uint8_t apex_lf[DNS_LF_MAXLEN];
	size_t apex_lf_len;
	view_zone_t old;          /* The view's zone before (had_zone). */
	bool had_zone;
	bool keys_changed;        /* Every signature is made again. */
	uint32_t nsec_ttl;        /* RFC 9077: min(SOA minimum, SOA TTL). */
	uint32_t old_nsec_ttl;
	uint8_t keys_fp[64];
	size_t keys_fp_len;
	view_diff_t diff;
	view_keys_t touched;      /* Incremental: names whose NSEC to check. */
	bool track;               /* Record touched names (not in a full pass). */
	uint8_t last[DNS_LF_KEY_MAXLEN]; /* journal_name(): the last name. */
	size_t last_len;
	bool has_last;
	uint8_t *buf;             /* A node's stored data. */
} job_t;

/* The owner of a node key. */
static int owner_of(const job_t *j, const uint8_t *okey, size_t okey_len,
                    uint8_t *owner)
{
	uint8_t lf[DNS_LF_MAXLEN];
	if (j->apex_lf_len + okey_len > sizeof(lf)) {
		return ZC_EFORMAT;
	}
	memcpy(lf, j->apex_lf, j->apex_lf_len);
	memcpy(lf + j->apex_lf_len, okey, okey_len);
	return dns_name_from_lf(lf, j->apex_lf_len + okey_len, owner) < 0 ?
	       ZC_EFORMAT : ZC_EOK;
}

/* A node's edge flags (0 when the edge has no such node). */
static uint8_t edge_flags(const job_t *j, const uint8_t *okey, size_t len)
{
	const uint8_t *val;
	size_t vlen;
	uint8_t flags = 0;
	uint64_t seq;
	if (edge_node_get(j->u->txn, (uint64_t)j->zone_id, okey, len, &val,
	                  &vlen) == ZC_EOK) {
		(void)edge_node_peek(val, vlen, &flags, &seq);
	}
	return flags;
}

/* Whether a node's flags hide the names below it: a zone cut or a DNAME
 * (their data is glue or occluded, RFC 4035 §2.2, RFC 6672 §2.3). */
static bool hides_below(uint8_t flags, bool apex)
{
	return !apex && (flags & (EDGE_NODE_DELEG | EDGE_NODE_DNAME)) != 0;
}

/* Whether an ancestor of the name (below the apex) hides it. */
static bool is_hidden(const job_t *j, const uint8_t *okey, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (okey[i] == 0 && hides_below(edge_flags(j, okey, i + 1), false)) {
			return true;
		}
	}
	return false;
}

static const knot_rrset_t *rrset_of(const edge_node_t *n, uint16_t type)
{
	return n->count > 0 ? edge_node_rrset(n, type) : NULL;
}

static bool same_rrset(const knot_rrset_t *a, const knot_rrset_t *b)
{
	return a != NULL && b != NULL && a->ttl == b->ttl &&
	       knot_rdataset_eq(&a->rrs, &b->rrs);
}

/* FNV-1a over the owner key and type: where in the jitter window a
 * signature expires, the same for an RRset each time it is signed. */
static uint32_t jitter(const uint8_t *okey, size_t len, uint16_t type,
                       uint32_t window)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h = (h ^ okey[i]) * 16777619u;
	}
	h = (h ^ (type >> 8)) * 16777619u;
	h = (h ^ (type & 0xff)) * 16777619u;
	return window > 0 ? h % window : 0;
}

/* Signs rr (owned by the node okey) into sig with the key of its type. */
static int sign(job_t *j, const knot_rrset_t *rr, const uint8_t *okey,
                size_t okey_len, view_sig_t *sig)
{
	const signer_keyset_t *ks = j->u->ks;
	bool apex_key = rr->type == KNOT_RRTYPE_DNSKEY ||
	                rr->type == KNOT_RRTYPE_CDS ||
	                rr->type == KNOT_RRTYPE_CDNSKEY;
	int idx = apex_key ? ks->ksk : ks->zsk;
	if (idx < 0) {
		return ZC_ENOKEY;
	}
	const sigview_timing_t *t = sigview_timing();
	uint32_t inception = j->u->now - VIEW_INCEPTION_BACK;
	uint32_t expire = j->u->now + t->validity +
	                  jitter(okey, okey_len, rr->type, t->jitter);
	int len = signer_sign_rdata(rr, &ks->keys[idx], j->u->ez.apex,
	                            inception, expire, sig->rdata,
	                            sizeof(sig->rdata),
	                            zc_arena_mm(j->u->arena));
	if (len < 0) {
		return len;
	}
	sig->covered = rr->type;
	sig->ttl = rr->ttl;
	sig->expire = expire;
	sig->rdata_len = (uint16_t)len;
	j->u->signatures++;
	return ZC_EOK;
}

static void diff_sig(job_t *j, bool added, const uint8_t *owner,
                     const view_sig_t *sig)
{
	view_diff_add(&j->diff, added, owner, KNOT_RRTYPE_RRSIG, sig->ttl,
	              sig->rdata, sig->rdata_len);
}

/* Makes rr's signature again: the old one (if any) out, a new one in. */
static int resign(job_t *j, const knot_rrset_t *rr, const uint8_t *okey,
                  size_t okey_len, const view_sig_t *old)
{
	view_sig_t sig;
	int ret = sign(j, rr, okey, okey_len, &sig);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (old != NULL) {
		diff_sig(j, false, rr->owner, old);
	}
	diff_sig(j, true, rr->owner, &sig);
	return view_db_sig_put(j->u->db, j->zone_id, okey, okey_len, &sig);
}

static int drop_sig(job_t *j, const uint8_t *owner, const uint8_t *okey,
                    size_t okey_len, const view_sig_t *sig)
{
	diff_sig(j, false, owner, sig);
	return view_db_sig_delete(j->u->db, j->zone_id, okey, okey_len,
	                          sig->covered);
}

/* The unsigned RR changes between the view's node and the edge's. */
static void diff_data(job_t *j, const edge_node_t *on, const edge_node_t *nn)
{
	uint16_t i = 0, k = 0;
	while (i < on->count || k < nn->count) {
		uint16_t ot = i < on->count ? on->rrsets[i].type : UINT16_MAX;
		uint16_t nt = k < nn->count ? nn->rrsets[k].type : UINT16_MAX;
		uint16_t t = ot < nt ? ot : nt;
		const knot_rrset_t *o = ot == t ? &on->rrsets[i++] : NULL;
		const knot_rrset_t *n = nt == t ? &nn->rrsets[k++] : NULL;
		if (!view_is_data_type(t) || same_rrset(o, n)) {
			continue;
		}
		if (o != NULL) {
			view_diff_rrset(&j->diff, false, o);
		}
		if (n != NULL) {
			view_diff_rrset(&j->diff, true, n);
		}
	}
}

/* The RRSIGs of the node's data (its NSEC's and the SOA's apart). */
static int sign_data(job_t *j, const uint8_t *okey, size_t len,
                     const uint8_t *owner, const edge_node_t *on,
                     const edge_node_t *nn, bool chain, bool cut)
{
	view_sig_t sigs[MAX_SIGS];
	size_t count;
	int ret = view_db_sigs_get(j->u->db, j->zone_id, okey, len, sigs,
	                           MAX_SIGS, &count);
	bool kept[MAX_SIGS] = { false };
	for (size_t s = 0; s < count && ret == ZC_EOK; s++) {
		uint16_t t = sigs[s].covered;
		if (t == KNOT_RRTYPE_NSEC || t == KNOT_RRTYPE_SOA) {
			continue;
		}
		const knot_rrset_t *n = rrset_of(nn, t);
		bool wanted = chain && (!cut || t == KNOT_RRTYPE_DS);
		kept[s] = n != NULL && wanted && !j->keys_changed &&
		          same_rrset(rrset_of(on, t), n);
		if (!kept[s] && (n == NULL || !wanted)) {
			ret = drop_sig(j, owner, okey, len, &sigs[s]);
		}
	}
	for (uint16_t i = 0; i < nn->count && ret == ZC_EOK; i++) {
		const knot_rrset_t *n = &nn->rrsets[i];
		if (!chain || !view_is_data_type(n->type) ||
		    (cut && n->type != KNOT_RRTYPE_DS)) {
			continue;
		}
		const view_sig_t *old = NULL;
		bool keep = false;
		for (size_t s = 0; s < count; s++) {
			if (sigs[s].covered == n->type) {
				old = &sigs[s];
				keep = kept[s];
			}
		}
		if (!keep) {
			ret = resign(j, n, okey, len, old);
		}
	}
	return ret;
}

static int node(job_t *j, const uint8_t *okey, size_t len);

/* A name stopped or started hiding what is below it: every name below
 * (in either store) is made again. */
static int node_subtree(job_t *j, const uint8_t *okey, size_t len)
{
	view_keys_t keys = { 0 };
	int ret = view_db_keys(j->u->db, j->zone_id, okey, len, false, false,
	                       &keys);
	edge_iter_t it;
	if (ret == ZC_EOK) {
		ret = edge_iter_begin_at(j->u->txn, (uint64_t)j->zone_id, okey,
		                         len, &it);
	}
	if (ret == ZC_EOK) {
		const uint8_t *rel, *val;
		size_t rel_len, val_len;
		while ((ret = edge_iter_next(&it, &rel, &rel_len, &val,
		                             &val_len)) == 1) {
			if (rel_len < len || memcmp(rel, okey, len) != 0) {
				break;
			}
			if (rel_len > len) {
				ret = view_keys_add(&keys, rel, rel_len);
				if (ret != ZC_EOK) {
					break;
				}
			}
		}
		edge_iter_end(&it);
		ret = ret < 0 ? ret : ZC_EOK;
	}
	size_t pos = 0;
	const uint8_t *k;
	size_t klen;
	while (ret == ZC_EOK && view_keys_next(&keys, &pos, &k, &klen)) {
		ret = node(j, k, klen); /* A name in both lists: twice, harmless. */
	}
	view_keys_free(&keys);
	return ret;
}

/* Makes the view's node equal to the edge's: data, signatures, chain
 * membership (its NSEC is nsec()'s). */
static int node(job_t *j, const uint8_t *okey, size_t len)
{
	view_update_t *u = j->u;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	int ret = owner_of(j, okey, len, owner);
	if (ret != ZC_EOK) {
		return ret;
	}
	bool apex = len == 0;
	const uint8_t *val = NULL;
	size_t vlen = 0;
	bool exists = edge_node_get(u->txn, (uint64_t)j->zone_id, okey, len,
	                            &val, &vlen) == ZC_EOK;
	view_node_t old = { .data = j->buf };
	ret = view_db_node_get(u->db, j->zone_id, okey, len, &old, NODE_BUF);
	bool had = ret == ZC_EOK;
	if (ret != ZC_EOK && ret != KNOT_ENOENT) {
		return ret;
	}
	if (!exists && !had) {
		return ZC_EOK;
	}
	zc_arena_reset(u->arena);
	knot_mm_t *mm = zc_arena_mm(u->arena);
	edge_node_t on = { 0 }, nn = { 0 };
	ret = exists ? edge_node_decode(val, vlen, owner, mm, &nn) : ZC_EOK;
	if (ret == ZC_EOK && had) {
		ret = edge_node_decode(old.data, old.data_len, owner, mm, &on);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bool chain = exists && (apex || !is_hidden(j, okey, len));
	bool cut = !apex && (nn.flags & EDGE_NODE_DELEG);
	diff_data(j, &on, &nn);
	ret = sign_data(j, okey, len, owner, &on, &nn, chain, cut);
	if (ret == ZC_EOK && had && old.nsec_len > 0 && !chain) {
		/* Out of the chain (gone, or now below a cut): its NSEC goes. */
		view_diff_add(&j->diff, false, owner, KNOT_RRTYPE_NSEC,
		              j->old_nsec_ttl, old.nsec, (uint16_t)old.nsec_len);
		view_sig_t sig;
		if (view_db_sig_get(u->db, j->zone_id, okey, len,
		                    KNOT_RRTYPE_NSEC, &sig) == ZC_EOK) {
			ret = drop_sig(j, owner, okey, len, &sig);
		}
	}
	if (ret == ZC_EOK && exists) {
		ret = view_db_node_put(u->db, j->zone_id, okey, len, owner, val,
		                       vlen, chain);
		if (ret == ZC_EOK && !chain && old.nsec_len > 0) {
			ret = view_db_node_set_nsec(u->db, j->zone_id, okey, len,
			                            NULL, 0);
		}
	} else if (ret == ZC_EOK) {
		ret = view_db_node_delete(u->db, j->zone_id, okey, len);
	}
	if (ret == ZC_EOK && j->track) {
		ret = view_keys_add(&j->touched, okey, len);
	}
	bool hid = had && hides_below(on.flags, apex);
	bool hides = exists && hides_below(nn.flags, apex);
	if (ret == ZC_EOK && j->track && hid != hides) {
		ret = node_subtree(j, okey, len);
	}
	return ret;
}

/* Makes a chain node's NSEC (next name, types) and its signature right. */
static int nsec(job_t *j, const uint8_t *okey, size_t len)
{
	view_update_t *u = j->u;
	view_node_t n = { .data = j->buf };
	int ret = view_db_node_get(u->db, j->zone_id, okey, len, &n, NODE_BUF);
	if (ret == KNOT_ENOENT || (ret == ZC_EOK && !n.chain)) {
		return ZC_EOK;
	}
	uint8_t owner[KNOT_DNAME_MAXLEN], next[KNOT_DNAME_MAXLEN];
	uint8_t next_key[DNS_LF_KEY_MAXLEN];
	size_t next_len = 0;
	if (ret == ZC_EOK) {
		ret = owner_of(j, okey, len, owner);
	}
	if (ret == ZC_EOK) {
		/* The last NSEC points back at the apex (RFC 4034 §4.1.1). */
		ret = view_db_chain_next(u->db, j->zone_id, okey, len, next_key,
		                         &next_len);
		ret = ret < 0 ? ret : owner_of(j, next_key, ret ? next_len : 0,
		                               next);
	}
	zc_arena_reset(u->arena);
	edge_node_t node_data = { 0 };
	if (ret == ZC_EOK) {
		ret = edge_node_decode(n.data, n.data_len, owner,
		                       zc_arena_mm(u->arena), &node_data);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	bool apex = len == 0;
	uint16_t types[EDGE_NODE_MAX_RRSETS + 4];
	size_t ntypes = view_nsec_types(&node_data, apex,
	                                !apex && (node_data.flags &
	                                          EDGE_NODE_DELEG), types);
	uint8_t rdata[VIEW_NSEC_MAX];
	size_t rlen = view_nsec_rdata(next, types, ntypes, rdata);
	bool same = n.nsec_len == rlen && memcmp(n.nsec, rdata, rlen) == 0 &&
	            j->nsec_ttl == j->old_nsec_ttl;
	view_sig_t sig;
	ret = view_db_sig_get(u->db, j->zone_id, okey, len, KNOT_RRTYPE_NSEC,
	                      &sig);
	bool has_sig = ret == ZC_EOK;
	if (ret != ZC_EOK && ret != KNOT_ENOENT) {
		return ret;
	}
	if (same && has_sig && !j->keys_changed) {
		return ZC_EOK;
	}
	if (!same) {
		if (n.nsec_len > 0) {
			view_diff_add(&j->diff, false, owner, KNOT_RRTYPE_NSEC,
			              j->old_nsec_ttl, n.nsec, (uint16_t)n.nsec_len);
		}
		view_diff_add(&j->diff, true, owner, KNOT_RRTYPE_NSEC,
		              j->nsec_ttl, rdata, (uint16_t)rlen);
		ret = view_db_node_set_nsec(u->db, j->zone_id, okey, len, rdata,
		                            rlen);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	knot_rrset_t rr;
	knot_rrset_init(&rr, owner, KNOT_RRTYPE_NSEC, KNOT_CLASS_IN,
	                j->nsec_ttl);
	ret = knot_rrset_add_rdata(&rr, rdata, (uint16_t)rlen,
	                           zc_arena_mm(u->arena));
	return ret != KNOT_EOK ? ret : resign(j, &rr, okey, len,
	                                      has_sig ? &sig : NULL);
}

/* The SOA of the new serial, signed (it changes at every version). */
static int sign_soa(job_t *j)
{
	edge_zone_t *ez = &j->u->ez;
	uint8_t buf[4 + EDGE_SOA_MAXLEN];
	knot_rdata_t *rd = (knot_rdata_t *)buf;
	knot_rdata_init(rd, ez->soa_len, ez->soa);
	knot_soa_serial_set(rd, ez->serial);
	knot_rrset_t soa;
	knot_rrset_init(&soa, ez->apex, KNOT_RRTYPE_SOA, KNOT_CLASS_IN,
	                ez->soa_ttl);
	soa.rrs.count = 1;
	soa.rrs.size = (uint32_t)knot_rdata_size(ez->soa_len);
	soa.rrs.rdata = rd;
	view_sig_t old;
	int ret = view_db_sig_get(j->u->db, j->zone_id, (const uint8_t *)"", 0,
	                          KNOT_RRTYPE_SOA, &old);
	if (ret != ZC_EOK && ret != KNOT_ENOENT) {
		return ret;
	}
	return resign(j, &soa, (const uint8_t *)"", 0,
	              ret == ZC_EOK ? &old : NULL);
}

/* Makes one due signature again (view_db_sigs_due()'s callback). */
static int refresh_one(const uint8_t *okey, size_t len, uint16_t covered,
                       void *ctx)
{
	job_t *j = ctx;
	view_update_t *u = j->u;
	if (covered == KNOT_RRTYPE_SOA) {
		return ZC_EOK; /* Made this version. */
	}
	uint8_t owner[KNOT_DNAME_MAXLEN];
	view_node_t n = { .data = j->buf };
	view_sig_t old;
	int ret = owner_of(j, okey, len, owner);
	if (ret == ZC_EOK) {
		ret = view_db_node_get(u->db, j->zone_id, okey, len, &n, NODE_BUF);
	}
	if (ret == ZC_EOK) {
		ret = view_db_sig_get(u->db, j->zone_id, okey, len, covered, &old);
	}
	if (ret != ZC_EOK) {
		return ret == KNOT_ENOENT ? ZC_EOK : ret;
	}
	zc_arena_reset(u->arena);
	knot_mm_t *mm = zc_arena_mm(u->arena);
	knot_rrset_t nsec_rr;
	const knot_rrset_t *rr = NULL;
	edge_node_t node_data = { 0 };
	if (covered == KNOT_RRTYPE_NSEC && n.nsec_len > 0) {
		knot_rrset_init(&nsec_rr, owner, KNOT_RRTYPE_NSEC, KNOT_CLASS_IN,
		                j->nsec_ttl);
		ret = knot_rrset_add_rdata(&nsec_rr, n.nsec, (uint16_t)n.nsec_len,
		                           mm);
		rr = &nsec_rr;
	} else if (covered != KNOT_RRTYPE_NSEC) {
		ret = edge_node_decode(n.data, n.data_len, owner, mm, &node_data);
		rr = ret == ZC_EOK ? rrset_of(&node_data, covered) : NULL;
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if (rr == NULL) {
		return drop_sig(j, owner, okey, len, &old); /* Stale. */
	}
	return resign(j, rr, okey, len, &old);
}

/* The NSECs of the changed names and of their predecessors. */
static int fix_chain(job_t *j)
{
	size_t pos = 0;
	const uint8_t *k;
	size_t klen;
	int ret = ZC_EOK;
	while (ret == ZC_EOK && view_keys_next(&j->touched, &pos, &k, &klen)) {
		ret = nsec(j, k, klen);
		uint8_t prev[DNS_LF_KEY_MAXLEN];
		size_t prev_len;
		int found = ret == ZC_EOK ?
		            view_db_chain_prev(j->u->db, j->zone_id, k, klen, prev,
		                               &prev_len) : 0;
		if (found < 0) {
			ret = found;
		} else if (found == 1) {
			ret = nsec(j, prev, prev_len);
		}
	}
	return ret;
}

/* The names the records journal says changed between the view's serial
 * and the edge's (ZC_ENOJOURNAL: a zone-wide change; a full pass). */
static int journal_name(const records_journal_rr_t *rr, void *ctx)
{
	job_t *j = ctx;
	uint8_t lf[DNS_LF_MAXLEN];
	size_t len = dns_name_to_lf(rr->owner, lf);
	if (len < j->apex_lf_len) {
		return ZC_EFORMAT;
	}
	const uint8_t *okey = lf + j->apex_lf_len;
	size_t okey_len = len - j->apex_lf_len;
	if (j->has_last && okey_len == j->last_len &&
	    memcmp(okey, j->last, okey_len) == 0) {
		return ZC_EOK; /* Events of one name come together. */
	}
	memcpy(j->last, okey, okey_len);
	j->last_len = okey_len;
	j->has_last = true;
	return node(j, okey, okey_len);
}

/* Every name of either store, then the whole chain. */
/* Whether the update is to give up (the server stops): a full pass of a
 * large zone held a stop for its whole length (25 s for 400,000
 * signatures: outside tester 37). */
static int stopped(const view_update_t *u)
{
	return u->stop != NULL && atomic_load(u->stop) ? -ECANCELED : ZC_EOK;
}

static int full_pass(job_t *j)
{
	view_update_t *u = j->u;
	j->track = false;
	view_keys_t keys = { 0 };
	/* Names only the view has (the edge has dropped them). */
	int ret = view_db_keys(u->db, j->zone_id, (const uint8_t *)"", 0, true,
	                       false, &keys);
	size_t pos = 0;
	const uint8_t *k;
	size_t klen;
	while (ret == ZC_EOK && view_keys_next(&keys, &pos, &k, &klen)) {
		const uint8_t *val;
		size_t vlen;
		if (edge_node_get(u->txn, (uint64_t)j->zone_id, k, klen, &val,
		                  &vlen) != ZC_EOK) {
			ret = node(j, k, klen);
		}
		ret = ret == ZC_EOK ? stopped(u) : ret;
	}
	view_keys_free(&keys);
	edge_iter_t it;
	if (ret == ZC_EOK) {
		ret = edge_iter_begin(u->txn, (uint64_t)j->zone_id, &it);
	}
	if (ret == ZC_EOK) {
		const uint8_t *rel, *val;
		size_t rel_len, val_len;
		while ((ret = edge_iter_next(&it, &rel, &rel_len, &val,
		                             &val_len)) == 1) {
			uint8_t key[DNS_LF_KEY_MAXLEN];
			memcpy(key, rel, rel_len); /* node() reads the store. */
			ret = node(j, key, rel_len);
			ret = ret == ZC_EOK ? stopped(u) : ret;
			if (ret != ZC_EOK) {
				break;
			}
		}
		edge_iter_end(&it);
		ret = ret < 0 ? ret : ZC_EOK;
	}
	if (ret == ZC_EOK) {
		ret = view_db_keys(u->db, j->zone_id, (const uint8_t *)"", 0, true,
		                   true, &keys);
	}
	pos = 0;
	while (ret == ZC_EOK && view_keys_next(&keys, &pos, &k, &klen)) {
		ret = nsec(j, k, klen);
		ret = ret == ZC_EOK ? stopped(u) : ret;
	}
	view_keys_free(&keys);
	return ret;
}

/* The signing keys' fingerprint: their DNSKEY rdata. */
static void keys_fingerprint(const signer_keyset_t *ks, uint8_t *out,
                             size_t *len)
{
	*len = 0;
	int idx[2] = { ks->ksk, ks->zsk };
	for (int i = 0; i < 2; i++) {
		uint8_t rdata[1024];
		int n = idx[i] >= 0 ? signer_key_dnskey(&ks->keys[idx[i]], rdata,
		                                        sizeof(rdata)) : 0;
		/* Algorithm, tag and the key's last bytes tell keys apart. */
		if (n > 4 && *len + 16 <= 64) {
			out[(*len)++] = rdata[3];
			out[(*len)++] = (uint8_t)(ks->keys[idx[i]].tag >> 8);
			out[(*len)++] = (uint8_t)ks->keys[idx[i]].tag;
			size_t tail = (size_t)n - 4 < 13 ? (size_t)n - 4 : 13;
			memcpy(out + *len, rdata + n - tail, tail);
			*len += tail;
		}
	}
}

/* Whether SOA fields other than the serial, or its TTL, changed. */
static bool soa_changed(const view_zone_t *old, const edge_zone_t *ez)
{
	if (old->soa_len != ez->soa_len || old->soa_ttl != ez->soa_ttl ||
	    ez->soa_len < 20) {
		return true;
	}
	size_t fixed = ez->soa_len - 20; /* Names, then the serial. */
	return memcmp(old->soa, ez->soa, fixed) != 0 ||
	       memcmp(old->soa + fixed + 4, ez->soa + fixed + 4, 16) != 0;
}

static int job_init(job_t *j, view_update_t *u)
{
	memset(j, 0, sizeof(*j));
	j->u = u;
	j->zone_id = (int64_t)u->ez.zone_id;
	j->apex_lf_len = dns_name_to_lf(u->ez.apex, j->apex_lf);
	j->buf = malloc(NODE_BUF);
	if (j->buf == NULL) {
		return KNOT_ENOMEM;
	}
	uint32_t min = edge_zone_soa_minimum(&u->ez);
	j->nsec_ttl = u->ez.soa_ttl < min ? u->ez.soa_ttl : min;
	keys_fingerprint(u->ks, j->keys_fp, &j->keys_fp_len);
	int ret = view_db_zone_get(u->db, j->zone_id, &j->old);
	j->had_zone = ret == ZC_EOK;
	if (ret != ZC_EOK && ret != KNOT_ENOENT) {
		return ret;
	}
	j->old_nsec_ttl = j->had_zone ? j->old.nsec_ttl : j->nsec_ttl;
	j->keys_changed = j->had_zone && (j->old.keys_len != j->keys_fp_len ||
	                  memcmp(j->old.keys, j->keys_fp, j->keys_fp_len) != 0);
	view_diff_init(&j->diff, VIEW_JOURNAL_MAX_CHANGES);
	return ZC_EOK;
}

/* The zone row of the new version, and its journal entry. */
static int finish(job_t *j)
{
	view_update_t *u = j->u;
	view_zone_t z = { .zone_id = j->zone_id, .serial = u->ez.serial,
	                  .soa_ttl = u->ez.soa_ttl, .soa_len = u->ez.soa_len,
	                  .nsec_ttl = j->nsec_ttl, .keys_len = j->keys_fp_len };
	memcpy(z.apex, u->ez.apex, knot_dname_size(u->ez.apex));
	memcpy(z.soa, u->ez.soa, u->ez.soa_len);
	memcpy(z.keys, j->keys_fp, j->keys_fp_len);
	uint8_t rd[4 + EDGE_SOA_MAXLEN];
	knot_rdata_init((knot_rdata_t *)rd, z.soa_len, z.soa);
	knot_soa_serial_set((knot_rdata_t *)rd, z.serial);
	memcpy(z.soa, ((knot_rdata_t *)rd)->data, z.soa_len);
	if (j->had_zone && soa_changed(&j->old, &u->ez)) {
		/* The SOA a secondary at the old serial holds, exactly (its
		 * fields and TTL), for IXFR's difference sequence (RFC 1995
		 * §4; transfer/ixfr.c takes the first deleted one). */
		view_diff_add(&j->diff, false, u->ez.apex, KNOT_RRTYPE_SOA,
		              j->old.soa_ttl, j->old.soa, j->old.soa_len);
		view_diff_add(&j->diff, true, u->ez.apex, KNOT_RRTYPE_SOA,
		              z.soa_ttl, z.soa, z.soa_len);
	}
	int ret = j->diff.error;
	bool journal = ret == ZC_EOK && j->had_zone && !j->diff.overflow &&
	               j->old.has_journal;
	z.has_journal = true;
	z.journal_from = journal ? j->old.journal_from : z.serial;
	if (ret == ZC_EOK && journal) {
		ret = view_db_journal_append(u->db, j->zone_id, j->old.serial,
		                             z.serial, j->diff.buf, j->diff.len);
	} else if (ret == ZC_EOK) {
		ret = view_db_journal_clear(u->db, j->zone_id);
	}
	if (ret == ZC_EOK) {
		ret = view_db_zone_put(u->db, &z);
	}
	u->changes = j->diff.count;
	return ret;
}

int view_zone_update(view_update_t *u)
{
	job_t j;
	int ret = job_init(&j, u);
	if (ret == ZC_EOK) {
		ret = view_db_begin(u->db, true);
	}
	u->from_serial = j.had_zone ? j.old.serial : 0;
	bool full = !j.had_zone || j.keys_changed ||
	            j.nsec_ttl != j.old_nsec_ttl || soa_changed(&j.old, &u->ez);
	if (ret == ZC_EOK && !full) {
		j.track = true;
		ret = records_journal_read(u->rs, u->ez.apex, j.old.serial,
		                           u->ez.serial, journal_name, &j);
		if (ret == ZC_ENOJOURNAL || ret == ZC_ENOZONE) {
			/* Undo what was done and take the whole zone. */
			view_db_rollback(u->db);
			view_diff_deinit(&j.diff);
			view_diff_init(&j.diff, VIEW_JOURNAL_MAX_CHANGES);
			view_keys_free(&j.touched);
			full = true;
			ret = view_db_begin(u->db, true);
		} else if (ret == ZC_EOK) {
			ret = fix_chain(&j);
		}
	}
	if (ret == ZC_EOK && full) {
		/* Said as it begins: a large zone's takes seconds, and the
		 * operator sees why (a stop gives it up). */
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, u->ez.apex, sizeof(name));
		zc_info("signed view: zone %s: full pass to serial %u begins",
		        name, u->ez.serial);
		ret = full_pass(&j);
	}
	u->full = full;
	if (ret == ZC_EOK) {
		ret = sign_soa(&j);
	}
	if (ret == ZC_EOK) {
		const sigview_timing_t *t = sigview_timing();
		ret = view_db_sigs_due(u->db, j.zone_id, u->now + t->refresh_before,
		                       t->batch, refresh_one, &j);
	}
	if (ret == ZC_EOK) {
		ret = finish(&j);
	}
	if (ret == ZC_EOK) {
		ret = view_db_commit(u->db);
	}
	if (ret != ZC_EOK) {
		view_db_rollback(u->db);
	}
	view_diff_deinit(&j.diff);
	view_keys_free(&j.touched);
	free(j.buf);
	return ret;
}
