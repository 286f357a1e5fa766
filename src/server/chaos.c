/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * CHAOS-class identification queries (RFC 4892), answered as NSD and Knot
 * DNS answer them: TXT for id.server. and hostname.bind. gives the
 * server's identity, TXT for version.server. and version.bind. its
 * version; TTL 0, class CH, AA clear (both leave it clear: no zone is
 * authoritative for these names). Anything else in class CH (ANY too:
 * Knot refuses it, NSD answers it), and a name whose answer is hidden
 * (hide-identity, hide-version), gets REFUSED (as Knot).
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "dns/pkt_put.h"
#include "server/query.h"

/* Which text a name asks for: the identity or the version, or NULL. */
static const char *chaos_text(const answer_ctx_t *ctx,
                              const knot_dname_t *qname)
{
	static const struct {
		const char *wire;
		bool identity;
	} names[] = {
		{ "\x02" "id" "\x06" "server", true },
		{ "\x08" "hostname" "\x04" "bind", true },
		{ "\x07" "version" "\x06" "server", false },
		{ "\x07" "version" "\x04" "bind", false },
	};
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, qname);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (knot_dname_is_equal(lower, (const uint8_t *)names[i].wire)) {
			return names[i].identity ? ctx->identity : ctx->version;
		}
	}
	return NULL;
}

void query_chaos(query_t *qr)
{
	const char *text = chaos_text(qr->ctx, qr->qname);
	if (text == NULL || qr->qtype != KNOT_RRTYPE_TXT) {
		qr->rcode = KNOT_RCODE_REFUSED;
		return;
	}
	/* One character-string of at most 255 octets (RFC 1035 §3.3). */
	size_t len = strlen(text);
	len = len > 255 ? 255 : len;
	uint8_t rdata[256];
	rdata[0] = (uint8_t)len;
	memcpy(rdata + 1, text, len);
	knot_rrset_t txt;
	knot_rrset_init(&txt, (knot_dname_t *)qr->qname, KNOT_RRTYPE_TXT,
	                KNOT_CLASS_CH, 0);
	int ret = knot_rrset_add_rdata(&txt, rdata, (uint16_t)(len + 1), qr->mm);
	if (ret == KNOT_EOK) {
		ret = knot_pkt_begin(qr->r, KNOT_ANSWER);
	}
	if (ret == KNOT_EOK) {
		ret = dns_pkt_put(qr->r, KNOT_COMPR_HINT_QNAME, &txt, 0);
	}
	qr->rcode = ret == KNOT_EOK ? KNOT_RCODE_NOERROR : KNOT_RCODE_SERVFAIL;
}
