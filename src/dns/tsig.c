/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TSIG request checks and response signing (see tsig.h). */
#include <string.h>
#include <time.h>
#include <libdnssec/tsig.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/tsig.h>
#include <libknot/tsig-op.h>

#include "common/counters.h"
#include "common/error.h"
#include "dns/tsig.h"

bool dns_tsig_algorithm_ok(const char *name)
{
	/* hmac-md5: RFC 8945 §6 makes it mandatory to implement, and
	 * certbot's dns-rfc2136 uses it when told no algorithm. */
	static const char *const ok[] = { "hmac-sha256", "hmac-sha512",
	                                  "hmac-sha384", "hmac-sha224",
	                                  "hmac-sha1", "hmac-md5" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (strcmp(name, ok[i]) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * RFC 8945 §5.2.3 with the server's cap on the fudge, then the replay
 * check; for a request whose MAC is verified (libknot checked the time
 * against the request's own fudge only).
 */
static int check_time(const dns_tsig_policy_t *policy, dns_tsig_t *t)
{
	uint64_t now = (uint64_t)time(NULL);
	t->came = now;
	uint64_t skew = now > t->time_signed ? now - t->time_signed :
	                t->time_signed - now;
	if (skew > t->window) {
		t->error = KNOT_RCODE_BADTIME;
		return KNOT_TSIG_EBADTIME;
	}
	return dns_tsig_replay(policy, t);
}

int dns_tsig_replay(const dns_tsig_policy_t *policy, dns_tsig_t *t)
{
	if (policy == NULL || policy->replay == NULL) {
		return ZC_EOK;
	}
	t->replay = dns_tsig_replay_check(policy->replay, t, t->window,
	                                  (uint64_t)time(NULL));
	if (t->replay == DNS_TSIG_REPLAYED || t->replay == DNS_TSIG_UNPROVEN) {
		t->error = KNOT_RCODE_BADTIME;
		return KNOT_TSIG_EBADTIME;
	}
	return ZC_EOK;
}

/* dns_tsig_check() before its refusals are counted. */
static int check_request(const knot_pkt_t *q, bool key_found,
                         const char *algorithm, const uint8_t *secret,
                         size_t secret_len, const dns_tsig_policy_t *policy,
                         dns_tsig_t *t)
{
	memset(t, 0, sizeof(*t));
	const knot_rrset_t *rr = q->tsig_rr;
	if (rr == NULL) {
		return ZC_EOK;
	}
	if (rr->rclass != KNOT_CLASS_ANY) {
		/* RFC 8945 §4.2: its CLASS MUST be ANY; another is a
		 * malformed record, not a bad signature (FORMERR, unsigned,
		 * as BIND answers). */
		return KNOT_EMALF;
	}
	t->present = true;
	/* Keep the request's TSIG (its rdata lives in the request). */
	size_t rdlen = rr->rrs.rdata->len;
	if (rdlen > sizeof(t->rr_data) - sizeof(knot_rdata_t)) {
		t->error = KNOT_RCODE_BADSIG;
		return KNOT_TSIG_EBADSIG;
	}
	knot_rdata_t *rd = (knot_rdata_t *)t->rr_data;
	memcpy(rd, rr->rrs.rdata, knot_rdata_size(rdlen));
	t->rr = *rr;
	memcpy(t->name, rr->owner, knot_dname_size(rr->owner));
	t->rr.owner = t->name;
	t->rr.rrs.rdata = rd;
	t->rr.rrs.count = 1;
	t->rr.rrs.size = knot_rdata_size(rdlen);
	t->time_signed = knot_tsig_rdata_time_signed(&t->rr);
	t->fudge = knot_tsig_rdata_fudge(&t->rr);
	uint16_t max = policy != NULL && policy->max_fudge != 0 ?
	               policy->max_fudge : DNS_TSIG_MAX_FUDGE_DEFAULT;
	t->window = t->fudge < max ? t->fudge : max;
	size_t mac_len = knot_tsig_rdata_mac_length(&t->rr);
	if (mac_len <= sizeof(t->digest)) {
		memcpy(t->digest, knot_tsig_rdata_mac(&t->rr), mac_len);
		t->digest_len = mac_len;
	}
	dnssec_tsig_algorithm_t alg = key_found ?
		dnssec_tsig_algorithm_from_name(algorithm) : DNSSEC_TSIG_UNKNOWN;
	if (!key_found || alg == DNSSEC_TSIG_UNKNOWN ||
	    alg != knot_tsig_rdata_alg(&t->rr) ||
	    secret_len > sizeof(t->secret)) {
		t->error = KNOT_RCODE_BADKEY;
		return KNOT_TSIG_EBADKEY;
	}
	/* RFC 8945 §5.2.2.1: a MAC longer than the hash or shorter than
	 * max(10, half of it) is malformed (FORMERR, the caller answers
	 * unsigned); a truncated one is not accepted here (BADTRUNC). */
	size_t full = dnssec_tsig_algorithm_size(alg);
	size_t min = full / 2 > 10 ? full / 2 : 10;
	if (mac_len > full || mac_len < min) {
		t->present = false;
		return KNOT_EMALF;
	}
	if (mac_len < full) {
		t->error = KNOT_RCODE_BADTRUNC;
		return KNOT_TSIG_EBADTRUNC;
	}
	memcpy(t->secret, secret, secret_len);
	t->key.algorithm = alg;
	t->key.name = t->name;
	t->key.secret.data = t->secret;
	t->key.secret.size = secret_len;
	/* libknot compares the request's MAC with the one it computes in
	 * constant time (check_digest() in libknot/tsig-op.c calls
	 * const_time_memcmp(), Knot DNS 3.2.6 as in Debian 12 included). */
	int ret = knot_tsig_server_check(&t->rr, q->wire, q->size, &t->key);
	switch (ret) {
	case KNOT_EOK:
		return check_time(policy, t);
	case KNOT_TSIG_EBADTIME:
		t->error = KNOT_RCODE_BADTIME;
		return ret;
	case KNOT_TSIG_EBADKEY:
		t->error = KNOT_RCODE_BADKEY;
		return ret;
	default:
		t->error = KNOT_RCODE_BADSIG;
		return ret;
	}
}

int dns_tsig_verify(const knot_pkt_t *q, bool key_found,
                    const char *algorithm, const uint8_t *secret,
                    size_t secret_len, const dns_tsig_policy_t *policy,
                    dns_tsig_t *t)
{
	return check_request(q, key_found, algorithm, secret, secret_len,
	                     policy, t);
}

int dns_tsig_check(const knot_pkt_t *q, bool key_found, const char *algorithm,
                   const uint8_t *secret, size_t secret_len,
                   const dns_tsig_policy_t *policy, dns_tsig_t *t)
{
	return dns_tsig_count(check_request(q, key_found, algorithm, secret,
	                                    secret_len, policy, t), t);
}

int dns_tsig_count(int ret, const dns_tsig_t *t)
{
	if (ret == ZC_EOK) {
		return ret;
	}
	/* A refusal, counted by what the answer says (metrics). */
	zc_count(ret == KNOT_EMALF ? ZC_COUNT_TSIG_FORMERR :
	         t->error == KNOT_RCODE_BADKEY ? ZC_COUNT_TSIG_BADKEY :
	         t->error == KNOT_RCODE_BADTIME ? ZC_COUNT_TSIG_BADTIME :
	         t->error == KNOT_RCODE_BADTRUNC ? ZC_COUNT_TSIG_BADTRUNC :
	         ZC_COUNT_TSIG_BADSIG);
	return ret;
}

int dns_tsig_sign(dns_tsig_t *t, uint8_t *msg, size_t *len, size_t max)
{
	if (!t->present) {
		return ZC_EOK;
	}
	if (t->error == KNOT_RCODE_BADKEY || t->error == KNOT_RCODE_BADSIG ||
	    t->error == KNOT_RCODE_BADTRUNC) {
		/* RFC 8945 §5.3.2: unsigned, MAC empty, error set. */
		return knot_tsig_add(msg, len, max, t->error, &t->rr);
	}
	uint8_t digest[64];
	size_t digest_len = sizeof(digest);
	int ret;
	if (t->messages == 0) {
		ret = knot_tsig_sign(msg, len, max, t->digest, t->digest_len,
		                     digest, &digest_len, &t->key, t->error,
		                     t->error == KNOT_RCODE_BADTIME ?
		                     t->time_signed : 0);
	} else {
		size_t to_sign = *len;
		ret = knot_tsig_sign_next(msg, len, max, t->digest, t->digest_len,
		                          digest, &digest_len, &t->key, msg,
		                          to_sign);
	}
	if (ret == KNOT_EOK) {
		memcpy(t->digest, digest, digest_len);
		t->digest_len = digest_len;
		t->messages++;
	}
	return ret;
}

void dns_tsig_copy(dns_tsig_t *dst, const dns_tsig_t *src)
{
	*dst = *src;
	dst->key.name = dst->name;
	dst->key.secret.data = dst->secret;
	dst->rr.owner = dst->name;
	dst->rr.rrs.rdata = (knot_rdata_t *)dst->rr_data;
}
