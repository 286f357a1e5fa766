/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG for requests zonecast sends (NOTIFY to secondaries): signing the
 * request and checking the response (RFC 8945 §5.1, §5.4), on top of
 * libknot's TSIG primitives. The server side is in tsig.c.
 */
#include <string.h>
#include <libdnssec/tsig.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/tsig.h>
#include <libknot/tsig-op.h>

#include "common/error.h"
#include "dns/tsig_client.h"

int dns_tsig_client_key(dns_tsig_client_t *c, const uint8_t *name,
                        const char *algorithm, const uint8_t *secret,
                        size_t secret_len)
{
	memset(c, 0, sizeof(*c));
	dnssec_tsig_algorithm_t alg = dnssec_tsig_algorithm_from_name(algorithm);
	if (alg == DNSSEC_TSIG_UNKNOWN || secret_len > sizeof(c->secret) ||
	    knot_dname_size(name) > sizeof(c->name)) {
		return KNOT_TSIG_EBADKEY;
	}
	memcpy(c->name, name, knot_dname_size(name));
	memcpy(c->secret, secret, secret_len);
	c->key.algorithm = alg;
	c->key.name = c->name;
	c->key.secret.data = c->secret;
	c->key.secret.size = secret_len;
	return ZC_EOK;
}

int dns_tsig_client_sign(dns_tsig_client_t *c, uint8_t *msg, size_t *len,
                         size_t max)
{
	c->mac_len = sizeof(c->mac);
	int ret = knot_tsig_sign(msg, len, max, NULL, 0, c->mac, &c->mac_len,
	                         &c->key, 0, 0);
	if (ret != KNOT_EOK) {
		c->mac_len = 0;
	}
	return ret;
}

int dns_tsig_client_check(const dns_tsig_client_t *c, const knot_pkt_t *resp,
                          uint16_t *error)
{
	*error = 0;
	const knot_rrset_t *rr = resp->tsig_rr;
	if (rr == NULL) {
		return KNOT_TSIG_EBADSIG; /* RFC 8945 §5.4: must be signed. */
	}
	*error = knot_tsig_rdata_error(rr);
	if (!knot_dname_is_equal(rr->owner, c->name)) {
		return KNOT_TSIG_EBADKEY;
	}
	if (*error == KNOT_RCODE_BADKEY || *error == KNOT_RCODE_BADSIG) {
		/* RFC 8945 §5.3.2: such errors come unsigned. */
		return *error == KNOT_RCODE_BADKEY ? KNOT_TSIG_EBADKEY :
		       KNOT_TSIG_EBADSIG;
	}
	return knot_tsig_client_check(rr, resp->wire, resp->size, c->mac,
	                              c->mac_len, &c->key, 0);
}
