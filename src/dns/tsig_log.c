/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Log lines of TSIG refusals (see tsig_log.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <libdnssec/tsig.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/tsig.h>

#include "common/acl.h"
#include "common/audit.h"
#include "common/log.h"
#include "dns/tsig_log.h"

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
	if (ret == KNOT_EMALF && rr != NULL && rr->rclass != KNOT_CLASS_ANY) {
		snprintf(out, size, "FORMERR: the TSIG record's class is %u, "
		         "not ANY (RFC 8945 §4.2)", rr->rclass);
		return;
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
		if (t->replay == DNS_TSIG_REPLAYED) {
			snprintf(out, size, "BADTIME: a replay (this very "
			         "message, the same MAC, within its window)");
			return;
		}
		if (t->replay == DNS_TSIG_UNPROVEN) {
			snprintf(out, size, "BADTIME: signed before what the "
			         "full replay cache remembers, possibly a replay "
			         "(tsig-replay-cache)");
			return;
		}
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

/* RFC 8945 §4.2's names (libknot's table lacks some). */
static const char *tsig_error_name(uint16_t error)
{
	switch (error) {
	case KNOT_RCODE_BADSIG: return "BADSIG";
	case KNOT_RCODE_BADKEY: return "BADKEY";
	case KNOT_RCODE_BADTIME: return "BADTIME";
	case KNOT_RCODE_BADTRUNC: return "BADTRUNC";
	default: return "-";
	}
}

void dns_tsig_log_refusal(const char *what, const knot_pkt_t *q,
                          const dns_tsig_t *t, int ret, bool key_found,
                          const char *key_algorithm,
                          const struct sockaddr_storage *from)
{
	if (q == NULL || q->tsig_rr == NULL) {
		return;
	}
	char key[KNOT_DNAME_TXT_MAXLEN + 1], zone[KNOT_DNAME_TXT_MAXLEN + 1];
	char client[ZC_ADDR_TEXT_MAX], why[160];
	knot_dname_to_str(key, q->tsig_rr->owner, sizeof(key));
	snprintf(zone, sizeof(zone), "-");
	if (knot_pkt_qname(q) != NULL) {
		knot_dname_to_str(zone, knot_pkt_qname(q), sizeof(zone));
	}
	if (from != NULL) {
		zc_addr_text(from, client, sizeof(client));
	} else {
		snprintf(client, sizeof(client), "?");
	}
	reason_text(q, t, ret, key_found, key_algorithm, why, sizeof(why));
	bool update = strcmp(what, "update") == 0;
	zc_audit_t a;
	zc_audit_begin(&a, update ? "update" : "transfer", "refused");
	zc_audit_str(&a, "zone", zone);
	if (!update) {
		zc_audit_fixed(&a, "kind", what);
	}
	zc_audit_str(&a, "key", key);
	zc_audit_fixed(&a, "client", client);
	zc_audit_fixed(&a, "rcode", ret == KNOT_EMALF ? "FORMERR" : "NOTAUTH");
	zc_audit_fixed(&a, "tsig_error", ret == KNOT_EMALF ? "-" :
	             tsig_error_name(t->error));
	zc_audit_str(&a, "reason", why);
	zc_audit_end(&a);
}
