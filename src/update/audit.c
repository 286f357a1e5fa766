/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The UPDATE audit lines (common/audit.h): who changed which zone and
 * how, and every request refused, with the client, the key and why.
 */
#include <stdio.h>
#include <libknot/codes.h>
#include <libknot/descriptor.h>
#include <libknot/packet/pkt.h>

#include "common/acl.h"
#include "common/audit.h"
#include "update/internal.h"

/* The zone as the request names it, and the key that signed it. */
static void add_request(zc_audit_t *a, const update_msg_t *m)
{
	char text[KNOT_DNAME_TXT_MAXLEN + 1];
	if (m->zone.id != 0) {
		zc_audit_str(a, "zone", m->zone.name);
	} else if (m->pkt != NULL && m->pkt->qname_size > 0 &&
	           knot_dname_to_str(text, knot_pkt_qname(m->pkt),
	                             sizeof(text)) != NULL) {
		zc_audit_str(a, "zone", text);
	}
	if (m->pkt != NULL && m->pkt->tsig_rr != NULL &&
	    knot_dname_to_str(text, m->pkt->tsig_rr->owner,
	                      sizeof(text)) != NULL) {
		zc_audit_str(a, "key", text);
	} else {
		zc_audit_str(a, "key", "-");
	}
	char addr[ZC_ADDR_TEXT_MAX];
	zc_addr_text(&m->from, addr, sizeof(addr));
	zc_audit_fixed(a, "client", addr);
	zc_audit_fixed(a, "transport", m->tcp ? "tcp" : "udp");
}

void update_audit_accepted(const update_msg_t *m)
{
	zc_audit_t a;
	zc_audit_begin(&a, "update", "accepted");
	add_request(&a, m);
	zc_audit_num(&a, "added", (int64_t)m->net.added_count);
	zc_audit_num(&a, "deleted", (int64_t)m->net.removed_count);
	zc_audit_num(&a, "serial", m->zone.serial);
	zc_audit_fixed(&a, "changed", m->changed ? "yes" : "no");
	zc_audit_end(&a);
}

void update_audit_refused(update_msg_t *m, uint8_t rcode,
                          const char *why)
{
	m->audited = true;
	char rname[16];
	const knot_lookup_t *r = knot_lookup_by_id(knot_rcode_names, rcode);
	snprintf(rname, sizeof(rname), "%s", r != NULL ? r->name : "?");
	zc_audit_t a;
	zc_audit_begin(&a, "update", "refused");
	add_request(&a, m);
	zc_audit_fixed(&a, "rcode", rname);
	zc_audit_str(&a, "reason", why);
	zc_audit_end(&a);
}

void update_audit_dropped(update_msg_t *m, const char *what)
{
	m->audited = true;
	zc_audit_t a;
	zc_audit_begin(&a, "update", "dropped");
	add_request(&a, m);
	zc_audit_str(&a, "reason", what);
	zc_audit_end(&a);
}

void update_audit_copy(update_msg_t *m, const char *what)
{
	m->audited = true;
	zc_audit_t a;
	zc_audit_begin(&a, "update", "copy");
	add_request(&a, m);
	const knot_lookup_t *r = knot_lookup_by_id(knot_rcode_names, m->rcode);
	zc_audit_fixed(&a, "rcode", r != NULL ? r->name : "?");
	zc_audit_str(&a, "reason", what);
	zc_audit_end(&a);
}

/* Why an answer with this rcode was given (RFC 2136 §2.2, §3.2, §3.4). */
static const char *rcode_reason(uint8_t rcode)
{
	switch (rcode) {
	case KNOT_RCODE_FORMERR:
		return "malformed message";
	case KNOT_RCODE_NOTZONE:
		return "a name outside the zone";
	case KNOT_RCODE_NXDOMAIN:
		return "prerequisite: a name in use is not";
	case KNOT_RCODE_YXDOMAIN:
		return "prerequisite: a name not in use is";
	case KNOT_RCODE_NXRRSET:
		return "prerequisite: an RRset that exists (or has those "
		       "records) does not";
	case KNOT_RCODE_YXRRSET:
		return "prerequisite: an RRset that does not exist does";
	case KNOT_RCODE_NOTAUTH:
		return "not authoritative for the zone";
	case KNOT_RCODE_REFUSED:
		return "records this server does not take (a type the online "
		       "signer owns, a name no store can key, past a size rule)";
	default:
		return "refused";
	}
}

void update_audit_answer(update_msg_t *m)
{
	/* SERVFAIL is the server's failure, not a refusal: its warning
	 * says why (a quarantined zone's has its line). */
	if (m->audited || m->rcode == KNOT_RCODE_NOERROR ||
	    m->rcode == KNOT_RCODE_SERVFAIL) {
		return;
	}
	update_audit_refused(m, m->rcode, rcode_reason(m->rcode));
}
