/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a TSIG key allows: an UPDATE message it signs is allowed only if
 * every RR of its update section falls within one of the key's grants
 * (their syntax and matching: dns/tsig_grants.h); and, in the committer's
 * transaction, only while the key still exists (the service keeps keys a
 * while, service.c).
 */
#include <string.h>
#include <libdnssec/tsig.h>
#include <libknot/consts.h>

#include "common/error.h"
#include "common/log.h"
#include "dns/tsig_grants.h"
#include "dns/tsig_log.h"
#include "update/internal.h"

bool update_policy_allows(const char *grants, const knot_dname_t *key_name,
                          const update_msg_t *m)
{
	dns_tsig_grants_t g;
	char err[128];
	if (!dns_tsig_grants_parse(grants, &g, err, sizeof(err))) {
		return false;
	}
	const knot_pktsection_t *sec = knot_pkt_section(m->pkt, KNOT_AUTHORITY);
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		if (!dns_tsig_grants_allow(&g, key_name, rr->owner, rr->type)) {
			return false;
		}
	}
	return true;
}

/* A refusal the committer decided, with what came with it (log, audit
 * line, count, replay cache): final for the message. */
static int refuse(update_msg_t *m)
{
	m->refused = true;
	return ZC_EUSAGE;
}

/* The message's key was deleted: judged again with the key under its
 * name now (none: BADKEY), as the precheck judges it; counted and logged
 * as its refusals are. */
static int key_again(records_store_t *rs, update_msg_t *m,
                     const records_zone_t *zone)
{
	records_tsig_key_t key;
	memset(&key, 0, sizeof(key));
	int ret = records_tsig_find(rs, m->tsig.name, &key);
	if (ret != ZC_EOK && ret != ZC_ENOKEY) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	bool found = ret == ZC_EOK;
	/* The replay check with it, unless done already (a key read from
	 * the store: the message is in the replay cache). */
	dns_tsig_policy_t policy = update_tsig_policy(m->service);
	if (!m->replay_pending) {
		policy.replay = NULL;
	}
	m->replay_pending = false;
	int tret = dns_tsig_count(dns_tsig_verify(m->pkt, found, key.algorithm,
	                                          key.secret, key.secret_len,
	                                          &policy, &m->tsig), &m->tsig);
	if (tret != ZC_EOK) {
		dns_tsig_log_refusal("update", m->pkt, &m->tsig, tret, found,
		                     key.algorithm, &m->from);
		m->audited = true;
		m->rcode = tret == KNOT_EMALF ? KNOT_RCODE_FORMERR :
		           KNOT_RCODE_NOTAUTH;
		return refuse(m);
	}
	if (zone == NULL) {
		m->rcode = KNOT_RCODE_NOTAUTH;
		update_audit_refused(m, m->rcode, "not a zone served here");
		return refuse(m);
	}
	if (key.zone_id != zone->id) {
		m->rcode = KNOT_RCODE_REFUSED;
		update_audit_refused(m, m->rcode,
		                     "the key belongs to another zone");
		return refuse(m);
	}
	m->key_id = key.id;
	if (!update_policy_allows(key.grants, key.name, m)) {
		char kname[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(kname, key.name, sizeof(kname));
		zc_info("update %s: refused by the grants of key %s (%s)",
		        m->zone.name, kname, key.grants[0] ? key.grants :
		        "zone");
		m->rcode = KNOT_RCODE_REFUSED;
		update_audit_refused(m, m->rcode, "outside the key's grants");
		return refuse(m);
	}
	return ZC_EOK;
}

int update_key_check(records_store_t *rs, update_msg_t *m)
{
	bool alive = false;
	int ret = records_tsig_alive(rs, m->key_id, &alive);
	if (ret != ZC_EOK) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	if (!alive) {
		update_key_forget(m->service, m->tsig.name);
		return key_again(rs, m, &m->zone);
	}
	if (m->replay_pending) {
		/* Once: the unit may run again (writer.h). */
		m->replay_pending = false;
		if (update_tsig_replay(m->service, m) != ZC_EOK) {
			if (!m->drop && !m->copy) {
				m->rcode = KNOT_RCODE_NOTAUTH; /* BADTIME */
			}
			return refuse(m);
		}
	}
	return ZC_EOK;
}

int update_key_judge_again(records_store_t *rs, update_msg_t *m,
                           records_zone_t *zone)
{
	update_key_forget(m->service, m->tsig.name);
	int ret = records_zone_find(rs, m->zone.apex, zone);
	if (ret != ZC_EOK && ret != ZC_ENOZONE) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	return key_again(rs, m, ret == ZC_EOK ? zone : NULL);
}
