/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Turning signing on and off for a zone, inside a write transaction of the
 * records store (the CLI's or a committer unit): keys generated and stored,
 * DNSKEY, CDS and CDNSKEY published at the apex as records, and a settings
 * event so the builder rebuilds the zone and hands the keys to the edge.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "signer/zone.h"

#define APEX_TTL SIGNER_DNSKEY_TTL

static int delete_type(const records_record_t *rec, void *ctx)
{
	int64_t *ids = ctx;
	for (int i = 0; i < 64; i++) {
		if (ids[i] == 0) {
			ids[i] = rec->id;
			return 0;
		}
	}
	return 1;
}

/* Removes the apex DNSKEY, CDS and CDNSKEY records. */
static int unpublish(records_store_t *rs, records_zone_t *zone)
{
	static const uint16_t types[] = { KNOT_RRTYPE_DNSKEY, KNOT_RRTYPE_CDS,
	                                  KNOT_RRTYPE_CDNSKEY };
	for (unsigned t = 0; t < 3; t++) {
		int64_t ids[64] = { 0 };
		int ret = records_record_foreach(rs, zone->id, zone->apex, types[t],
		                                 delete_type, ids);
		for (int i = 0; i < 64 && ids[i] != 0 && ret == ZC_EOK; i++) {
			ret = records_record_delete(rs, zone, ids[i]);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ZC_EOK;
}

static int publish(records_store_t *rs, records_zone_t *zone, uint16_t type,
                   const uint8_t *rdata, int len)
{
	if (len < 0) {
		return len;
	}
	records_record_t rec = { .owner = zone->apex, .type = type,
	                         .ttl = APEX_TTL, .rdata = rdata,
	                         .rdata_len = (uint16_t)len };
	return records_record_insert(rs, zone, &rec);
}

/* Whether the DELETE CDS is published (a disable begun). */
static bool disabling(records_store_t *rs, const records_zone_t *zone)
{
	int64_t since;
	return signer_zone_disable_since(rs, zone, &since) == ZC_EOK;
}

/* Generates, stores and publishes one key (a KSK's CDS and CDNSKEY too:
 * ZC_EDISABLING while the DELETE ones are published, which an RRset
 * holds alone, RFC 8078 §4). */
static int add_key_as(records_store_t *rs, records_zone_t *zone, uint8_t alg,
                      uint16_t flags, bool active)
{
	if (flags == SIGNER_FLAGS_KSK && disabling(rs, zone)) {
		return ZC_EDISABLING;
	}
	uint8_t *pem = NULL;
	size_t pem_len = 0;
	int ret = signer_key_generate(alg, &pem, &pem_len);
	if (ret != ZC_EOK) {
		return ret;
	}
	signer_key_t key;
	ret = signer_key_load(zone->apex, flags, alg, pem, pem_len, &key);
	records_dnssec_key_t rk = { .zone_id = zone->id, .flags = flags,
	                            .algorithm = alg, .pem = pem,
	                            .pem_len = pem_len, .active = active };
	if (ret == ZC_EOK) {
		ret = records_dnssec_key_add(rs, &rk);
	}
	uint8_t rdata[1024];
	if (ret == ZC_EOK) {
		ret = publish(rs, zone, KNOT_RRTYPE_DNSKEY, rdata,
		              signer_key_dnskey(&key, rdata, sizeof(rdata)));
	}
	if (ret == ZC_EOK && flags == SIGNER_FLAGS_KSK) {
		/* RFC 7344: CDS (SHA-256) and CDNSKEY for the KSK. */
		ret = publish(rs, zone, KNOT_RRTYPE_CDS, rdata,
		              signer_key_ds(&key, rdata, sizeof(rdata)));
		if (ret == ZC_EOK) {
			ret = publish(rs, zone, KNOT_RRTYPE_CDNSKEY, rdata,
			              signer_key_dnskey(&key, rdata, sizeof(rdata)));
		}
	}
	if (key.key != NULL) {
		signer_key_free(&key);
	}
	free(pem);
	return ret;
}

static int add_key(records_store_t *rs, records_zone_t *zone, uint8_t alg,
                   uint16_t flags)
{
	return add_key_as(rs, zone, alg, flags, true);
}

static int count_key(const records_dnssec_key_t *key, void *ctx)
{
	(void)key;
	(*(int *)ctx)++;
	return 0;
}

int signer_zone_enable(records_store_t *rs, records_zone_t *zone,
                       uint8_t algorithm, bool split)
{
	int count = 0;
	int ret = records_dnssec_keys(rs, zone->id, count_key, &count);
	if (ret == ZC_EOK && count > 0) {
		return ZC_EEXISTS;
	}
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = unpublish(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = add_key(rs, zone, algorithm, SIGNER_FLAGS_KSK);
	}
	if (ret == ZC_EOK && split) {
		ret = add_key(rs, zone, algorithm, SIGNER_FLAGS_ZSK);
	}
	return ret == ZC_EOK ? records_log_zone_event(rs, zone,
	                       RECORDS_CHANGE_ZONE_SETTINGS) : ret;
}

int signer_zone_disable(records_store_t *rs, records_zone_t *zone)
{
	int count = 0;
	int ret = records_dnssec_keys(rs, zone->id, count_key, &count);
	if (ret == ZC_EOK && count == 0) {
		return ZC_ENOKEY;
	}
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = records_dnssec_keys_delete(rs, zone->id);
	}
	if (ret == ZC_EOK) {
		ret = unpublish(rs, zone);
	}
	return ret == ZC_EOK ? records_log_zone_event(rs, zone,
	                       RECORDS_CHANGE_ZONE_SETTINGS) : ret;
}

/* --- Disabling in two steps (RFC 8078 §4) --- */

/* CDS DELETE: key tag 0, algorithm 0, digest type 0, digest 0x00;
 * CDNSKEY DELETE: flags 0, protocol 3, algorithm 0, key 0x00. */
static const uint8_t cds_delete[] = { 0, 0, 0, 0, 0 };
static const uint8_t cdnskey_delete[] = { 0, 0, 3, 0, 0 };

typedef struct {
	const uint8_t *rdata;
	size_t len;
	int64_t since;
	bool found;
} delete_find_t;

static int find_delete(const records_record_t *rec, void *ctx)
{
	delete_find_t *f = ctx;
	if (rec->rdata_len == f->len && memcmp(rec->rdata, f->rdata, f->len) == 0) {
		f->since = rec->created_on;
		f->found = true;
		return 1;
	}
	return 0;
}

int signer_zone_disable_since(records_store_t *rs, const records_zone_t *zone,
                              int64_t *since_ms)
{
	delete_find_t f = { .rdata = cds_delete, .len = sizeof(cds_delete) };
	int ret = records_record_foreach(rs, zone->id, zone->apex,
	                                 KNOT_RRTYPE_CDS, find_delete, &f);
	if (ret == ZC_EOK && !f.found) {
		return KNOT_ENOENT;
	}
	*since_ms = f.since;
	return ret;
}

/* Removes every apex CDS and CDNSKEY (the KSKs', or the DELETE ones). */
static int unpublish_cds(records_store_t *rs, records_zone_t *zone)
{
	static const uint16_t types[] = { KNOT_RRTYPE_CDS, KNOT_RRTYPE_CDNSKEY };
	for (unsigned t = 0; t < 2; t++) {
		int64_t ids[64] = { 0 };
		int ret = records_record_foreach(rs, zone->id, zone->apex, types[t],
		                                 delete_type, ids);
		for (int i = 0; i < 64 && ids[i] != 0 && ret == ZC_EOK; i++) {
			ret = records_record_delete(rs, zone, ids[i]);
		}
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ZC_EOK;
}

int signer_zone_disable_begin(records_store_t *rs, records_zone_t *zone)
{
	int count = 0;
	int64_t since;
	int ret = records_dnssec_keys(rs, zone->id, count_key, &count);
	if (ret == ZC_EOK && count == 0) {
		return ZC_ENOKEY;
	}
	if (ret == ZC_EOK && signer_zone_disable_since(rs, zone, &since) ==
	    ZC_EOK) {
		return ZC_EEXISTS;
	}
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = unpublish_cds(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = publish(rs, zone, KNOT_RRTYPE_CDS, cds_delete,
		              (int)sizeof(cds_delete));
	}
	if (ret == ZC_EOK) {
		ret = publish(rs, zone, KNOT_RRTYPE_CDNSKEY, cdnskey_delete,
		              (int)sizeof(cdnskey_delete));
	}
	return ret;
}

typedef struct {
	records_store_t *rs;
	records_zone_t *zone;
	int ret;
} republish_t;

/* Publishes a KSK's CDS and CDNSKEY again. */
static int republish_ksk(const signer_key_info_t *info, void *ctx)
{
	republish_t *r = ctx;
	if (info->flags != SIGNER_FLAGS_KSK) {
		return 0;
	}
	r->ret = publish(r->rs, r->zone, KNOT_RRTYPE_CDS, info->ds,
	                 (int)info->ds_len);
	if (r->ret == ZC_EOK) {
		r->ret = publish(r->rs, r->zone, KNOT_RRTYPE_CDNSKEY, info->dnskey,
		                 (int)info->dnskey_len);
	}
	return r->ret != ZC_EOK;
}

int signer_zone_disable_cancel(records_store_t *rs, records_zone_t *zone)
{
	int64_t since;
	int ret = signer_zone_disable_since(rs, zone, &since);
	if (ret == ZC_EOK) {
		ret = records_zone_bump(rs, zone);
	}
	if (ret == ZC_EOK) {
		ret = unpublish_cds(rs, zone);
	}
	republish_t r = { .rs = rs, .zone = zone, .ret = ZC_EOK };
	if (ret == ZC_EOK) {
		ret = signer_zone_keys(rs, zone, republish_ksk, &r);
	}
	return ret == ZC_EOK ? r.ret : ret;
}

typedef struct {
	const records_zone_t *zone;
	int (*cb)(const signer_key_info_t *info, void *ctx);
	void *ctx;
	int ret;
} list_t;

static int list_key(const records_dnssec_key_t *rk, void *ctx)
{
	list_t *l = ctx;
	signer_key_t key;
	if (signer_key_load(l->zone->apex, rk->flags, rk->algorithm, rk->pem,
	                    rk->pem_len, &key) != ZC_EOK) {
		l->ret = ZC_EFORMAT;
		return 1;
	}
	signer_key_info_t info = { .id = rk->id, .tag = key.tag,
	                           .flags = rk->flags,
	                           .algorithm = rk->algorithm,
	                           .active = rk->active,
	                           .created_on = rk->created_on,
	                           .active_on = rk->active_on,
	                           .retired_on = rk->retired_on };
	int len = signer_key_ds(&key, info.ds, sizeof(info.ds));
	info.ds_len = len > 0 ? (size_t)len : 0;
	len = signer_key_dnskey(&key, info.dnskey, sizeof(info.dnskey));
	info.dnskey_len = len > 0 ? (size_t)len : 0;
	signer_key_free(&key);
	int stop = l->cb(&info, l->ctx);
	return stop;
}

int signer_zone_keys(records_store_t *rs, const records_zone_t *zone,
                     int (*cb)(const signer_key_info_t *info, void *ctx),
                     void *ctx)
{
	list_t l = { .zone = zone, .cb = cb, .ctx = ctx };
	int ret = records_dnssec_keys(rs, zone->id, list_key, &l);
	return ret == ZC_EOK ? l.ret : ret;
}

int signer_ds_format(const records_zone_t *zone, const signer_key_info_t *info,
                     char *out, size_t size)
{
	if (info->ds_len < 4) {
		return ZC_EFORMAT;
	}
	int n = snprintf(out, size, "%s %u IN DS %u %u %u ", zone->name,
	                 APEX_TTL, (unsigned)(info->ds[0] << 8 | info->ds[1]),
	                 info->ds[2], info->ds[3]);
	for (size_t i = 4; i < info->ds_len && n > 0 && (size_t)n + 3 < size; i++) {
		n += snprintf(out + n, size - (size_t)n, "%02X", info->ds[i]);
	}
	return n > 0 && (size_t)n < size ? ZC_EOK : ZC_ENOSPACE;
}

/* --- Rollover --- */

#define ROLL_MAX 16

typedef struct {
	records_dnssec_key_t keys[ROLL_MAX];  /* pem not kept */
	unsigned count;
	uint8_t algorithm;                    /* Of the zone's first key. */
} roll_keys_t;

static int collect_key(const records_dnssec_key_t *key, void *ctx)
{
	roll_keys_t *r = ctx;
	if (r->count == 0) {
		r->algorithm = key->algorithm;
	}
	if (r->count < ROLL_MAX) {
		r->keys[r->count] = *key;
		r->keys[r->count].pem = NULL;
		r->count++;
	}
	return 0;
}

typedef struct {
	int64_t id;
	signer_key_info_t info;
	bool found;
} find_info_t;

static int find_info(const signer_key_info_t *info, void *ctx)
{
	find_info_t *f = ctx;
	if (info->id == f->id) {
		f->info = *info;
		f->found = true;
		return 1;
	}
	return 0;
}

typedef struct {
	const uint8_t *rdata;
	size_t len;
	int64_t id;
} match_t;

static int match_rdata(const records_record_t *rec, void *ctx)
{
	match_t *m = ctx;
	if (rec->rdata_len == m->len && memcmp(rec->rdata, m->rdata, m->len) == 0) {
		m->id = rec->id;
		return 1;
	}
	return 0;
}

/* Deletes the apex record of that type and rdata, if any. */
static int unpublish_one(records_store_t *rs, records_zone_t *zone,
                         uint16_t type, const uint8_t *rdata, size_t len)
{
	match_t m = { .rdata = rdata, .len = len };
	int ret = records_record_foreach(rs, zone->id, zone->apex, type,
	                                 match_rdata, &m);
	return ret == ZC_EOK && m.id > 0 ? records_record_delete(rs, zone, m.id) :
	       ret;
}

int signer_zone_rollover(records_store_t *rs, records_zone_t *zone,
                         uint16_t flags, signer_roll_step_t step)
{
	roll_keys_t r = { 0 };
	int ret = records_dnssec_keys(rs, zone->id, collect_key, &r);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (r.count == 0) {
		return ZC_ENOKEY;
	}
	int newest = -1, acted = 0;
	for (unsigned i = 0; i < r.count; i++) {
		if (r.keys[i].flags == flags) {
			newest = (int)i;
		}
	}
	if (step == SIGNER_ROLL_PREPUBLISH && r.count >= EDGE_KEYSET_MAX_KEYS) {
		return ZC_EKEYCOUNT; /* The edge store's keyset holds no more. */
	}
	if (step == SIGNER_ROLL_PREPUBLISH && flags == SIGNER_FLAGS_KSK &&
	    disabling(rs, zone)) {
		return ZC_EDISABLING; /* It would publish CDS and CDNSKEY. */
	}
	ret = records_zone_bump(rs, zone);
	if (ret == ZC_EOK && step == SIGNER_ROLL_PREPUBLISH) {
		ret = add_key_as(rs, zone, r.algorithm, flags, false);
		acted = 1;
	} else if (ret == ZC_EOK && step == SIGNER_ROLL_ACTIVATE) {
		for (unsigned i = 0; i < r.count && ret == ZC_EOK; i++) {
			if (r.keys[i].flags != flags) {
				continue;
			}
			bool active = (int)i == newest;
			if (active != r.keys[i].active) {
				ret = records_dnssec_key_set_active(rs, r.keys[i].id,
				                                    active);
				acted++;
			}
		}
	} else if (ret == ZC_EOK) {
		for (unsigned i = 0; i < r.count && ret == ZC_EOK; i++) {
			if (r.keys[i].flags != flags || r.keys[i].active) {
				continue;
			}
			find_info_t f = { .id = r.keys[i].id };
			ret = signer_zone_keys(rs, zone, find_info, &f);
			if (ret == ZC_EOK && f.found) {
				ret = unpublish_one(rs, zone, KNOT_RRTYPE_DNSKEY,
				                    f.info.dnskey, f.info.dnskey_len);
			}
			if (ret == ZC_EOK && f.found && flags == SIGNER_FLAGS_KSK) {
				ret = unpublish_one(rs, zone, KNOT_RRTYPE_CDNSKEY,
				                    f.info.dnskey, f.info.dnskey_len);
				if (ret == ZC_EOK) {
					ret = unpublish_one(rs, zone, KNOT_RRTYPE_CDS,
					                    f.info.ds, f.info.ds_len);
				}
			}
			if (ret == ZC_EOK) {
				ret = records_dnssec_key_delete(rs, r.keys[i].id);
			}
			acted++;
		}
	}
	if (ret == ZC_EOK && acted == 0) {
		return ZC_ENOKEY; /* Nothing to do: the caller rolls back. */
	}
	return ret == ZC_EOK ? records_log_zone_event(rs, zone,
	                       RECORDS_CHANGE_ZONE_SETTINGS) : ret;
}
