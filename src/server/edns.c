/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * EDNS in responses (RFC 6891): the UDP size a response may take, the
 * response OPT with DO and CO (RFC 9824 §4) echoed, NSID (RFC 5001), DNS
 * Cookies (RFC 7873, server/cookie.h), ZONEVERSION (RFC 9660) and EXPIRE
 * (RFC 7314). The OPT's room is reserved before the sections are filled,
 * so that it always fits; an NSID that leaves no room for the question
 * (a long one at a payload of 512) goes, as an option the answer can do
 * without (it was SERVFAIL: outside tester 35).
 */
#include <libknot/errcode.h>
#include <libknot/rrtype/opt.h>

#include "dns/edns_expire.h"
#include "dns/name.h"
#include "dns/pkt_put.h"
#include "server/cookie.h"
#include "server/query.h"

/* EDNS header flag Compact Answers OK (RFC 9824 §4). */
#define EDNS_FLAG_CO 0x4000

/* EDNS ZONEVERSION option (RFC 9660): code and bytes in the response. */
#define ZONEVERSION_CODE 19
#define ZONEVERSION_SIZE (4 + 6)

/* Room the response keeps for its OPT. */
static size_t opt_reserved(const query_t *qr, knot_rrset_t *opt)
{
	return knot_edns_wire_size(opt) +
	       (qr->want_version ? ZONEVERSION_SIZE : 0) +
	       (qr->want_expire ? DNS_EDNS_EXPIRE_SIZE : 0);
}

uint16_t query_udp_limit(const knot_pkt_t *q)
{
	if (q->opt_rr == NULL) {
		return KNOT_WIRE_MIN_PKTSIZE; /* RFC 1035 §4.2.1: 512. */
	}
	uint16_t asked = knot_edns_get_payload(q->opt_rr);
	if (asked < KNOT_EDNS_MIN_UDP_PAYLOAD) {
		asked = KNOT_EDNS_MIN_UDP_PAYLOAD;
	}
	return asked < ANSWER_EDNS_PAYLOAD ? asked : ANSWER_EDNS_PAYLOAD;
}

/* RFC 7873 §5.2: the client cookie back with a new server cookie. */
static int add_cookie(query_t *qr, knot_rrset_t *opt)
{
	uint8_t data[COOKIE_OPTION_MAX];
	uint16_t len = 0;
	cookie_result_t result = cookie_answer(qr->ctx->cookie_secret,
	                                       qr->ctx->client, qr->q, data,
	                                       &len);
	qr->ctx->cookie_result = (unsigned)result + 1;
	switch (result) {
	case COOKIE_NONE:
		return KNOT_EOK;
	case COOKIE_MALFORMED:
		qr->bad_cookie = true;
		return KNOT_EOK;
	case COOKIE_VALID:
		qr->ctx->cookie_valid = true;
		break;
	case COOKIE_NEW:
		break;
	}
	return knot_edns_add_option(opt, KNOT_EDNS_OPTION_COOKIE, len, data,
	                            qr->mm);
}

/* The response OPT with what the query asked for; NSID only when
 * with_nsid. */
static int make_opt(query_t *qr, knot_rrset_t *opt, bool with_nsid)
{
	int ret = knot_edns_init(opt, ANSWER_EDNS_PAYLOAD, 0, 0, qr->mm);
	if (ret != KNOT_EOK) {
		return ret;
	}
	if (knot_edns_do(qr->q->opt_rr)) {
		knot_edns_set_do(opt);
	}
	/* RFC 9824 §4: CO is echoed by a server that knows it. */
	qr->co = (qr->q->opt_rr->ttl & EDNS_FLAG_CO) != 0;
	if (qr->co) {
		opt->ttl |= EDNS_FLAG_CO;
	}
	/* RFC 5001 §2.1: NSID only when asked for and configured. */
	if (with_nsid && qr->ctx->nsid_len > 0 &&
	    knot_pkt_edns_option(qr->q, KNOT_EDNS_OPTION_NSID) != NULL) {
		ret = knot_edns_add_option(opt, KNOT_EDNS_OPTION_NSID,
		                           qr->ctx->nsid_len,
		                           (const uint8_t *)qr->ctx->nsid, qr->mm);
		if (ret != KNOT_EOK) {
			return ret;
		}
	}
	if (qr->ctx->cookie_secret != NULL && qr->ctx->client != NULL) {
		ret = add_cookie(qr, opt);
		if (ret != KNOT_EOK) {
			return ret;
		}
	}
	/* RFC 9660, RFC 7314: room for ZONEVERSION and EXPIRE, filled in
	 * once the zone is known. */
	qr->want_version = knot_edns_get_option(qr->q->opt_rr, ZONEVERSION_CODE,
	                                        NULL) != NULL;
	qr->want_expire = knot_edns_get_option(qr->q->opt_rr,
	                                       KNOT_EDNS_OPTION_EXPIRE,
	                                       NULL) != NULL;
	return KNOT_EOK;
}

int query_prepare_opt(query_t *qr, knot_rrset_t *opt)
{
	int ret = make_opt(qr, opt, true);
	if (ret == KNOT_EOK) {
		ret = knot_pkt_reserve(qr->r, opt_reserved(qr, opt));
	}
	if (ret == KNOT_ERANGE && qr->ctx->nsid_len > 0) {
		/* No room (knot_pkt_reserve()): the OPT again, without
		 * NSID (the cookie's outcome is the same). */
		knot_rrset_clear(opt, qr->mm);
		ret = make_opt(qr, opt, false);
		if (ret == KNOT_EOK) {
			ret = knot_pkt_reserve(qr->r, opt_reserved(qr, opt));
		}
	}
	return ret;
}

/* RFC 9660 §3: LABELCOUNT of the apex, TYPE 0 (SOA-SERIAL), the serial:
 * which version of the zone produced this answer. */
static void add_zone_version(query_t *qr, knot_rrset_t *opt)
{
	uint8_t data[6];
	uint32_t serial = qr->zone.serial;
	data[0] = (uint8_t)dns_name_labels(qr->zone.apex);
	data[1] = 0;
	data[2] = (uint8_t)(serial >> 24);
	data[3] = (uint8_t)(serial >> 16);
	data[4] = (uint8_t)(serial >> 8);
	data[5] = (uint8_t)serial;
	knot_edns_add_option(opt, ZONEVERSION_CODE, sizeof(data), data, qr->mm);
}

void query_put_opt(query_t *qr, knot_rrset_t *opt, uint8_t ext_rcode)
{
	knot_edns_set_ext_rcode(opt, ext_rcode);
	size_t reserved = opt_reserved(qr, opt);
	if (qr->want_version && qr->zone_found) {
		add_zone_version(qr, opt);
	}
	if (qr->want_expire && qr->zone_found) {
		/* RFC 7314 §2: a primary's EXPIRE is its SOA's. */
		uint8_t data[4];
		dns_soa_expire_wire(qr->zone.soa, qr->zone.soa_len, data);
		knot_edns_add_option(opt, KNOT_EDNS_OPTION_EXPIRE, sizeof(data),
		                     data, qr->mm);
	}
	knot_pkt_reclaim(qr->r, reserved);
	knot_pkt_begin(qr->r, KNOT_ADDITIONAL);
	dns_pkt_put(qr->r, KNOT_COMPR_HINT_NONE, opt, KNOT_PF_NOTRUNC);
}
