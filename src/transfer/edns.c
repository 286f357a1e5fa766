/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The OPT of a transfer's messages and of its errors (internal.h): the
 * checks and options of the query path's OPT (server/edns.c) for requests
 * answered by the transfer pool. A transfer of EDNS version 1 was sent
 * whole, one with a malformed COOKIE too, and NSID was never given
 * (outside tester 35); BIND and knotd answer BADVERS, named FORMERR for
 * the cookie, and both give NSID and EXPIRE.
 */
#include <string.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/opt.h>

#include "dns/edns_expire.h"
#include "dns/pkt_put.h"
#include "server/cookie.h"
#include "transfer/internal.h"

void xfr_opt_prepare(xfr_opt_t *o, const knot_pkt_t *q,
                     const server_edns_t *edns,
                     const struct sockaddr_storage *from)
{
	memset(o, 0, sizeof(*o));
	if (q->opt_rr == NULL) {
		return;
	}
	o->present = true;
	o->bad_version = knot_edns_get_version(q->opt_rr) != 0;
	o->dnssec_ok = knot_edns_do(q->opt_rr);
	if (edns == NULL) {
		return;
	}
	if (edns->nsid[0] != '\0' &&
	    knot_pkt_edns_option(q, KNOT_EDNS_OPTION_NSID) != NULL) {
		o->nsid = edns->nsid;
		o->nsid_len = (uint16_t)strlen(edns->nsid);
	}
	if (edns->cookie_secret != NULL && from != NULL) {
		cookie_result_t r = cookie_answer(edns->cookie_secret, from, q,
		                                  o->cookie, &o->cookie_len);
		o->bad_cookie = r == COOKIE_MALFORMED;
		if (r == COOKIE_NONE || r == COOKIE_MALFORMED) {
			o->cookie_len = 0;
		}
	}
	o->want_expire = knot_pkt_edns_option(q, KNOT_EDNS_OPTION_EXPIRE) !=
	                 NULL;
}

void xfr_opt_zone(xfr_opt_t *o, const uint8_t *soa, size_t soa_len)
{
	if (o->want_expire) {
		dns_soa_expire_wire(soa, soa_len, o->expire);
		o->expire_known = true;
	}
}

size_t xfr_opt_size(const xfr_opt_t *o)
{
	if (!o->present) {
		return 0;
	}
	return KNOT_EDNS_MIN_SIZE +
	       (o->nsid != NULL ? KNOT_EDNS_OPTION_HDRLEN + o->nsid_len : 0) +
	       (o->cookie_len > 0 ? KNOT_EDNS_OPTION_HDRLEN + o->cookie_len : 0) +
	       (o->expire_known ? DNS_EDNS_EXPIRE_SIZE : 0);
}

int xfr_put_opt(knot_pkt_t *pkt, const xfr_opt_t *o, uint8_t ext_rcode)
{
	if (!o->present) {
		return KNOT_EOK;
	}
	knot_rrset_t opt;
	/* Over TCP the payload means nothing: the query path's, as knotd. */
	int ret = knot_edns_init(&opt, ANSWER_EDNS_PAYLOAD, ext_rcode, 0, NULL);
	if (ret == KNOT_EOK && o->dnssec_ok) {
		knot_edns_set_do(&opt);
	}
	if (ret == KNOT_EOK && o->nsid != NULL) {
		ret = knot_edns_add_option(&opt, KNOT_EDNS_OPTION_NSID,
		                           o->nsid_len,
		                           (const uint8_t *)o->nsid, NULL);
	}
	if (ret == KNOT_EOK && o->cookie_len > 0) {
		ret = knot_edns_add_option(&opt, KNOT_EDNS_OPTION_COOKIE,
		                           o->cookie_len, o->cookie, NULL);
	}
	if (ret == KNOT_EOK && o->expire_known) {
		ret = knot_edns_add_option(&opt, KNOT_EDNS_OPTION_EXPIRE,
		                           sizeof(o->expire), o->expire, NULL);
	}
	if (ret == KNOT_EOK) {
		knot_pkt_reclaim(pkt, xfr_opt_size(o));
		ret = knot_pkt_begin(pkt, KNOT_ADDITIONAL);
	}
	if (ret == KNOT_EOK) {
		ret = dns_pkt_put(pkt, KNOT_COMPR_HINT_NONE, &opt,
		                  KNOT_PF_NOTRUNC);
	}
	/* Written into the wire: nothing reads the packet's copy after. */
	knot_rrset_clear(&opt, NULL);
	return ret;
}
