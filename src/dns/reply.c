/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Header-only responses (see reply.h). */
#include <string.h>
#include <libknot/dname.h>
#include <libknot/packet/wire.h>

#include "dns/reply.h"

size_t dns_error_reply(const uint8_t *query, size_t qlen, size_t qname_size,
                       uint8_t *resp, size_t resp_max, uint8_t rcode)
{
	size_t len = KNOT_WIRE_HEADER_SIZE;
	memcpy(resp, query, KNOT_WIRE_HEADER_SIZE);
	knot_wire_set_qdcount(resp, 0);
	if (qname_size > 0 && knot_wire_get_qdcount(query) == 1 &&
	    qlen >= len + qname_size + 4 && resp_max >= len + qname_size + 4) {
		memcpy(resp + len, query + len, qname_size + 4);
		len += qname_size + 4;
		knot_wire_set_qdcount(resp, 1);
	}
	knot_wire_set_ancount(resp, 0);
	knot_wire_set_nscount(resp, 0);
	knot_wire_set_arcount(resp, 0);
	knot_wire_set_qr(resp);
	knot_wire_clear_aa(resp);
	knot_wire_clear_tc(resp);
	knot_wire_clear_ra(resp);
	knot_wire_clear_ad(resp);
	knot_wire_clear_z(resp);
	knot_wire_set_rcode(resp, rcode);
	return len;
}

size_t dns_reply_add_opt(uint8_t *resp, size_t len, size_t resp_max,
                         uint16_t payload, uint8_t ext_rcode, bool dok)
{
	const size_t opt = 11;
	if (len + opt > resp_max) {
		return len;
	}
	uint8_t *p = resp + len;
	p[0] = 0;                                /* owner: the root */
	p[1] = 0, p[2] = 41;                     /* OPT */
	p[3] = (uint8_t)(payload >> 8), p[4] = (uint8_t)payload;
	p[5] = ext_rcode, p[6] = 0;              /* version 0 */
	p[7] = dok ? 0x80 : 0, p[8] = 0;         /* flags: DO */
	p[9] = 0, p[10] = 0;                     /* no options */
	knot_wire_set_arcount(resp, knot_wire_get_arcount(resp) + 1);
	return len + opt;
}

size_t dns_qname_size(const uint8_t *query, size_t qlen)
{
	if (qlen <= KNOT_WIRE_HEADER_SIZE) {
		return 0;
	}
	int n = knot_dname_wire_check(query + KNOT_WIRE_HEADER_SIZE,
	                              query + qlen, NULL);
	return n > 0 ? (size_t)n : 0;
}
