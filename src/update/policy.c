/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Update policy of a TSIG key: an UPDATE message it signs is allowed only
 * if every RR of its update section falls within one of the key's grants
 * (their syntax and matching: dns/tsig_grants.h).
 */
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
