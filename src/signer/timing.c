/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * When a key rollover step, or the end of a disable, may run: the waits
 * the TTLs require (RFC 6781 §4.1, RFC 7583 §3), so that no validator
 * holds an RRset whose signing key it cannot find, or a DS for a key
 * that is gone.
 *
 * Design
 *
 * Every key keeps when it was published (made), when it began signing
 * and when it stopped (records migration 11). A step's earliest time is
 * computed from those and from three TTLs: the DNSKEY set's
 * (SIGNER_DNSKEY_TTL, fixed), the zone's largest (how long a signature
 * over any RRset may be cached), and the parent's DS TTL (which zonecast
 * cannot see: the operator says it, SIGNER_DEFAULT_DS_TTL otherwise).
 * SIGNER_PROPAGATION_S is added for secondaries. The CLI refuses a step
 * before its time unless forced (cli/cmd_dnssec.c); nothing here writes.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "signer/zone.h"
#include "sigview/sigview.h"

#define TIMING_MAX_KEYS 16

typedef struct {
	signer_key_info_t keys[TIMING_MAX_KEYS];
	unsigned count;
} key_list_t;

static int collect(const signer_key_info_t *info, void *ctx)
{
	key_list_t *l = ctx;
	if (l->count < TIMING_MAX_KEYS) {
		l->keys[l->count++] = *info;
	}
	return 0;
}

void signer_format_time(int64_t ms, char *out, size_t size)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *role_name(uint16_t flags)
{
	return flags == SIGNER_FLAGS_KSK ? "KSK" : "ZSK";
}

/* Sets out to "from + wait seconds", keeping the later of two. */
static void wait_until(signer_step_time_t *out, int64_t from_ms,
                       uint32_t wait_s, uint16_t tag, const char *why)
{
	int64_t at = from_ms + (int64_t)wait_s * 1000;
	if (at > out->earliest_ms) {
		out->earliest_ms = at;
		out->wait_s = wait_s;
		out->tag = tag;
		snprintf(out->why, sizeof(out->why), "%s", why);
	}
}

/* activate: the role's newest key, published long enough. */
static int activate_time(const key_list_t *l, uint16_t flags, uint32_t ds_ttl,
                         signer_step_time_t *out)
{
	const signer_key_info_t *newest = NULL;
	for (unsigned i = 0; i < l->count; i++) {
		if (l->keys[i].flags == flags) {
			newest = &l->keys[i];
		}
	}
	if (newest == NULL || newest->active) {
		return ZC_ENOKEY; /* Nothing new to activate. */
	}
	char since[32], why[256];
	signer_format_time(newest->created_on, since, sizeof(since));
	uint32_t ttl = SIGNER_DNSKEY_TTL;
	if (flags == SIGNER_FLAGS_KSK && ds_ttl > ttl) {
		ttl = ds_ttl;
	}
	snprintf(why, sizeof(why), "the new %s (tag %u) is in the DNSKEY set "
	         "since %s; resolvers may hold %s for %u s (%s TTL)%s",
	         role_name(flags), newest->tag, since,
	         flags == SIGNER_FLAGS_KSK ? "the old DS set" : "the old DNSKEY set",
	         ttl, flags == SIGNER_FLAGS_KSK && ds_ttl > SIGNER_DNSKEY_TTL ?
	         "the parent's DS" : "DNSKEY",
	         flags == SIGNER_FLAGS_KSK ? ", counted from when its DS is at "
	         "the parent" : "");
	wait_until(out, newest->created_on, ttl + SIGNER_PROPAGATION_S,
	           newest->tag, why);
	return ZC_EOK;
}

/*
 * When a KSK last signed data other than the DNSKEY set (Unix ms), or 0 if
 * it never did. A 257 key signs everything while no ZSK is active (it is
 * the CSK); the first ZSK to become active takes the data over, and from
 * then on a ZSK is always active (activate makes the role's newest key
 * sign, retire removes only keys that do not). So the key signed data
 * from its activation until it stopped, or until the earliest activation
 * of a ZSK, if that came first. A ZSK retired and removed since is no
 * longer listed: the earliest listed activation is then later than the
 * real one, which only makes the wait longer.
 */
static int64_t ksk_data_until(const key_list_t *l, const signer_key_info_t *k,
                              int64_t stopped)
{
	int64_t zsk_from = 0;
	for (unsigned i = 0; i < l->count; i++) {
		const signer_key_info_t *z = &l->keys[i];
		if (z->flags == SIGNER_FLAGS_ZSK && z->active_on > 0 &&
		    (zsk_from == 0 || z->active_on < zsk_from)) {
			zsk_from = z->active_on;
		}
	}
	if (zsk_from == 0 || zsk_from >= stopped) {
		return stopped; /* It was the CSK until it stopped. */
	}
	if (zsk_from <= k->active_on) {
		return 0; /* A ZSK signed the data all along. */
	}
	return zsk_from;
}

/* The longest a signature made at answer time or by the signed view for
 * secondaries may be kept (RFC 4035 §5.3.3: no validator keeps an RRset
 * past its signature's expiration). */
static uint32_t sig_lifetime_max(void)
{
	uint32_t answer = SIGNER_VALIDITY + SIGNER_JITTER;
	uint32_t view = VIEW_VALIDITY + VIEW_JITTER;
	return answer > view ? answer : view;
}

/* retire: the role's keys that stopped signing, retired long enough: the
 * DNSKEY TTL after they last signed the DNSKEY set, the zone's largest
 * TTL after they last signed its data (a ZSK: when it stopped; a KSK:
 * when it stopped being the CSK, ksk_data_until()). */
static int retire_time(const key_list_t *l, uint16_t flags, uint32_t max_ttl,
                       signer_step_time_t *out)
{
	unsigned found = 0;
	uint32_t cap = sig_lifetime_max();
	if (max_ttl > cap) {
		max_ttl = cap;
	}
	for (unsigned i = 0; i < l->count; i++) {
		const signer_key_info_t *k = &l->keys[i];
		if (k->flags != flags || k->active) {
			continue;
		}
		found++;
		if (k->active_on == 0) {
			continue; /* Never signed: nothing of it is cached. */
		}
		int64_t stopped = k->retired_on > 0 ? k->retired_on :
		                  k->created_on;
		char since[32], why[256];
		if (flags == SIGNER_FLAGS_KSK) {
			/* The DNSKEY set (CDS, CDNSKEY) it signed until it
			 * stopped. */
			signer_format_time(stopped, since, sizeof(since));
			snprintf(why, sizeof(why), "the old KSK (tag %u) stopped "
			         "signing the DNSKEY set at %s; its signatures may "
			         "stay in caches for %u s (DNSKEY TTL)", k->tag,
			         since, SIGNER_DNSKEY_TTL);
			wait_until(out, stopped, SIGNER_DNSKEY_TTL +
			           SIGNER_PROPAGATION_S, k->tag, why);
		}
		int64_t data_until = flags == SIGNER_FLAGS_KSK ?
		                     ksk_data_until(l, k, stopped) : stopped;
		if (data_until == 0) {
			continue;
		}
		uint32_t ttl = max_ttl;
		if (ttl < SIGNER_DNSKEY_TTL) {
			ttl = SIGNER_DNSKEY_TTL; /* As the DNSKEY set's, at least. */
		}
		signer_format_time(data_until, since, sizeof(since));
		snprintf(why, sizeof(why), "the old %s (tag %u) last signed the "
		         "zone's data at %s; its signatures may stay in caches "
		         "for %u s (%s)", flags == SIGNER_FLAGS_KSK ? "CSK" : "ZSK",
		         k->tag, since, ttl, ttl == cap ?
		         "the signatures' validity, below the zone's largest TTL" :
		         "the zone's largest TTL");
		wait_until(out, data_until, ttl + SIGNER_PROPAGATION_S, k->tag,
		           why);
	}
	return found > 0 ? ZC_EOK : ZC_ENOKEY;
}

int signer_step_time_of(const signer_key_info_t *keys, unsigned count,
                        uint16_t flags, signer_roll_step_t step,
                        uint32_t ds_ttl, uint32_t max_ttl,
                        signer_step_time_t *out)
{
	memset(out, 0, sizeof(*out));
	key_list_t l = { .count = 0 };
	for (unsigned i = 0; i < count; i++) {
		collect(&keys[i], &l);
	}
	if (l.count == 0) {
		return ZC_ENOKEY;
	}
	if (step == SIGNER_ROLL_PREPUBLISH) {
		return ZC_EOK;
	}
	if (step == SIGNER_ROLL_ACTIVATE) {
		return activate_time(&l, flags, ds_ttl, out);
	}
	return retire_time(&l, flags, max_ttl, out);
}

int signer_step_time(records_store_t *rs, const records_zone_t *zone,
                     uint16_t flags, signer_roll_step_t step, uint32_t ds_ttl,
                     signer_step_time_t *out)
{
	memset(out, 0, sizeof(*out));
	key_list_t l = { .count = 0 };
	int ret = signer_zone_keys(rs, zone, collect, &l);
	uint32_t max_ttl = 0;
	if (ret == ZC_EOK && step == SIGNER_ROLL_RETIRE) {
		ret = records_zone_max_ttl(rs, zone->id, &max_ttl);
	}
	return ret == ZC_EOK ? signer_step_time_of(l.keys, l.count, flags, step,
	                                           ds_ttl, max_ttl, out) : ret;
}

int signer_disable_time(records_store_t *rs, const records_zone_t *zone,
                        uint32_t ds_ttl, signer_step_time_t *out)
{
	memset(out, 0, sizeof(*out));
	int64_t since = 0;
	int ret = signer_zone_disable_since(rs, zone, &since);
	if (ret != ZC_EOK) {
		return ret;
	}
	char at[32], why[256];
	signer_format_time(since, at, sizeof(at));
	snprintf(why, sizeof(why), "CDS/CDNSKEY DELETE published at %s; the "
	         "parent's DS, once removed, may stay in caches for %u s (DS "
	         "TTL)", at, ds_ttl);
	wait_until(out, since, ds_ttl + SIGNER_PROPAGATION_S, 0, why);
	return ZC_EOK;
}
