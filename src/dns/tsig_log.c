/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Log lines of TSIG refusals (see tsig_log.h). */
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <libdnssec/tsig.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/tsig.h>

#include "common/log.h"
#include "dns/tsig_log.h"

#define LINES_PER_SECOND 20

static _Atomic int64_t window_start;   /* Monotonic seconds. */
static _Atomic unsigned window_lines;
static _Atomic unsigned suppressed;

/* True when this line may go out; *skipped receives the lines suppressed
 * since the last one that did. */
static bool may_log(unsigned *skipped)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = ts.tv_sec;
	int64_t start = atomic_load(&window_start);
	if (now != start && atomic_compare_exchange_strong(&window_start,
	                                                   &start, now)) {
		atomic_store(&window_lines, 0);
	}
	if (atomic_fetch_add(&window_lines, 1) >= LINES_PER_SECOND) {
		atomic_fetch_add(&suppressed, 1);
		return false;
	}
	*skipped = atomic_exchange(&suppressed, 0);
	return true;
}

static void client_text(const struct sockaddr_storage *ss, char *out,
                        size_t size)
{
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss != NULL && ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		port = ntohs(in->sin_port);
	} else if (ss != NULL && ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, size, "%s#%u", addr, port);
}

/* Why: the TSIG error and what led to it. */
static void reason_text(const knot_pkt_t *q, const dns_tsig_t *t, int ret,
                        bool key_found, const char *key_algorithm,
                        char *out, size_t size)
{
	const knot_rrset_t *rr = q->tsig_rr;
	const knot_dname_t *alg_name = rr ? knot_tsig_rdata_alg_name(rr) : NULL;
	char alg[KNOT_DNAME_TXT_MAXLEN + 1] = "?";
	if (alg_name != NULL) {
		knot_dname_to_str(alg, alg_name, sizeof(alg));
	}
	if (ret == KNOT_EMALF) {
		snprintf(out, size, "FORMERR: a MAC of %zu octets, not a size "
		         "%s allows (RFC 8945 §5.2.2.1)",
		         rr ? (size_t)knot_tsig_rdata_mac_length(rr) : 0, alg);
		return;
	}
	switch (t->error) {
	case KNOT_RCODE_BADKEY:
		if (!key_found) {
			snprintf(out, size, "BADKEY: no key of that name");
		} else if (rr != NULL && dnssec_tsig_algorithm_from_name(
		                key_algorithm) != knot_tsig_rdata_alg(rr)) {
			snprintf(out, size, "BADKEY: signed with %s, the key is "
			         "%s", alg, key_algorithm);
		} else {
			snprintf(out, size, "BADKEY: the key cannot be used");
		}
		return;
	case KNOT_RCODE_BADSIG:
		snprintf(out, size, "BADSIG: the MAC does not verify (another "
		         "secret, or the message was changed)");
		return;
	case KNOT_RCODE_BADTIME: {
		long long skew = (long long)time(NULL) - (long long)t->time_signed;
		snprintf(out, size, "BADTIME: signed %lld s %s the server's "
		         "time", skew < 0 ? -skew : skew,
		         skew < 0 ? "after" : "before");
		return;
	}
	case KNOT_RCODE_BADTRUNC:
		snprintf(out, size, "BADTRUNC: a truncated MAC (not accepted)");
		return;
	default:
		snprintf(out, size, "TSIG error %u", t->error);
	}
}

void dns_tsig_log_refusal(const char *what, const knot_pkt_t *q,
                          const dns_tsig_t *t, int ret, bool key_found,
                          const char *key_algorithm,
                          const struct sockaddr_storage *from)
{
	unsigned skipped = 0;
	if (q == NULL || q->tsig_rr == NULL || !may_log(&skipped)) {
		return;
	}
	char key[KNOT_DNAME_TXT_MAXLEN + 1], zone[KNOT_DNAME_TXT_MAXLEN + 1];
	char client[INET6_ADDRSTRLEN + 8], why[160];
	knot_dname_to_str(key, q->tsig_rr->owner, sizeof(key));
	zone[0] = '\0';
	if (knot_pkt_qname(q) != NULL) {
		knot_dname_to_str(zone, knot_pkt_qname(q), sizeof(zone));
	}
	client_text(from, client, sizeof(client));
	reason_text(q, t, ret, key_found, key_algorithm, why, sizeof(why));
	char more[64] = "";
	if (skipped > 0) {
		snprintf(more, sizeof(more), " (and %u refusals not logged "
		         "before)", skipped);
	}
	zc_info("tsig: %s %s from %s refused, key %s: %s%s", what,
	        zone[0] ? zone : "?", client, key, why, more);
}
