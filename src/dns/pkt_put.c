/* SPDX-License-Identifier: GPL-3.0-or-later */
/* knot_pkt_put() that leaves no stale compression suffix (pkt_put.h). */
#include <libknot/errcode.h>

#include "dns/pkt_put.h"

int dns_pkt_put(knot_pkt_t *pkt, uint16_t compr_hint, const knot_rrset_t *rr,
                uint16_t flags)
{
	/* The suffix only: the put points compr.rrinfo at its own entry
	 * (which a failed put may have moved) before it writes. */
	uint16_t pos = pkt->compr.suffix.pos;
	uint8_t labels = pkt->compr.suffix.labels;
	int ret = knot_pkt_put(pkt, compr_hint, rr, flags);
	if (ret != KNOT_EOK) {
		pkt->compr.suffix.pos = pos;
		pkt->compr.suffix.labels = labels;
	}
	return ret;
}
