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

/* Whether key is the one m was verified with: same zone, algorithm and
 * secret (a key made again under its name). */
static bool same_key(const records_tsig_key_t *key, const update_msg_t *m)
{
	return key->zone_id == m->zone.id &&
	       dnssec_tsig_algorithm_from_name(key->algorithm) ==
	       m->tsig.key.algorithm &&
	       key->secret_len == m->tsig.key.secret.size &&
	       memcmp(key->secret, m->tsig.key.secret.data,
	              key->secret_len) == 0;
}

int update_key_check(records_store_t *rs, update_msg_t *m)
{
	bool alive = false;
	int ret = records_tsig_alive(rs, m->key_id, &alive);
	if (ret == ZC_EOK && alive && m->grants_refused) {
		zc_info("update %s: refused by the policy of its key",
		        m->zone.name);
		m->rcode = KNOT_RCODE_REFUSED;
		update_audit_refused(m, m->rcode, "outside the key's grants");
		return ZC_EUSAGE;
	}
	if (ret == ZC_EOK && alive) {
		return ZC_EOK;
	}
	if (ret != ZC_EOK) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	update_key_forget(m->service, m->tsig.name);
	records_tsig_key_t key;
	ret = records_tsig_find(rs, m->tsig.name, &key);
	if (ret == ZC_ENOKEY || (ret == ZC_EOK && !same_key(&key, m))) {
		/* As when the precheck finds no key: unsigned BADKEY. */
		m->rcode = KNOT_RCODE_NOTAUTH;
		m->tsig.error = KNOT_RCODE_BADKEY;
		update_audit_refused(m, m->rcode, "the key was deleted");
		return ZC_EUSAGE;
	}
	if (ret != ZC_EOK) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		return ret;
	}
	m->key_id = key.id;
	if (!update_policy_allows(key.grants, key.name, m)) {
		zc_info("update %s: refused by the policy of key %s",
		        m->zone.name, key.grants);
		m->rcode = KNOT_RCODE_REFUSED;
		update_audit_refused(m, m->rcode, "outside the key's grants");
		return ZC_EUSAGE;
	}
	return ZC_EOK;
}
