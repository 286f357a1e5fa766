/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Which worker path a message takes (server/worker.h): a query answered
 * from the edge store (answer.c), or one of the hooks: RFC 2136 UPDATE, a
 * TCP AXFR/IXFR, or another TSIG-signed message. Only enough of the message
 * is read to decide; the path chosen parses it in full.
 */
#include <libknot/descriptor.h>
#include <libknot/packet/wire.h>

#include "server/worker.h"

/* Skips a (possibly compressed) name; 0 when malformed. */
static size_t skip_name(const uint8_t *msg, size_t len, size_t pos)
{
	while (pos < len) {
		uint8_t l = msg[pos];
		if (l == 0) {
			return pos + 1;
		}
		if ((l & 0xc0) == 0xc0) {
			return pos + 2 <= len ? pos + 2 : 0;
		}
		if (l > 63) {
			return 0;
		}
		pos += 1u + l;
	}
	return 0;
}

/* True when the message's last RR is a TSIG (RFC 8945 §5.1: it must be
 * the last of the additional section). */
static bool has_tsig(const uint8_t *msg, size_t len)
{
	if (knot_wire_get_arcount(msg) == 0) {
		return false;
	}
	size_t pos = KNOT_WIRE_HEADER_SIZE;
	for (unsigned i = 0; i < knot_wire_get_qdcount(msg); i++) {
		pos = skip_name(msg, len, pos);
		if (pos == 0 || pos + 4 > len) {
			return false;
		}
		pos += 4;
	}
	unsigned rrs = knot_wire_get_ancount(msg) + knot_wire_get_nscount(msg) +
	               knot_wire_get_arcount(msg);
	uint16_t type = 0;
	for (unsigned i = 0; i < rrs; i++) {
		pos = skip_name(msg, len, pos);
		if (pos == 0 || pos + 10 > len) {
			return false;
		}
		type = (uint16_t)(msg[pos] << 8 | msg[pos + 1]);
		pos += 10u + (size_t)(msg[pos + 8] << 8 | msg[pos + 9]);
		if (pos > len) {
			return false;
		}
	}
	return type == KNOT_RRTYPE_TSIG;
}

message_kind_t server_message_kind(const uint8_t *msg, size_t len, bool tcp,
                                   const server_hooks_t *hooks)
{
	if (hooks == NULL || len < KNOT_WIRE_HEADER_SIZE || knot_wire_get_qr(msg)) {
		return MESSAGE_QUERY;
	}
	uint8_t opcode = knot_wire_get_opcode(msg);
	if (opcode == KNOT_OPCODE_UPDATE) {
		return hooks->update != NULL ? MESSAGE_UPDATE : MESSAGE_QUERY;
	}
	bool signed_msg = hooks->signed_query != NULL && has_tsig(msg, len);
	if (!tcp || opcode != KNOT_OPCODE_QUERY || hooks->transfer == NULL ||
	    knot_wire_get_qdcount(msg) != 1) {
		return signed_msg ? MESSAGE_SIGNED : MESSAGE_QUERY;
	}
	/* The question's type follows its (uncompressed) name. */
	size_t pos = KNOT_WIRE_HEADER_SIZE;
	while (pos < len && msg[pos] != 0) {
		if (msg[pos] > 63) {
			return MESSAGE_QUERY;
		}
		pos += 1u + msg[pos];
	}
	if (pos + 3 > len) {
		return MESSAGE_QUERY;
	}
	uint16_t qtype = (uint16_t)(msg[pos + 1] << 8 | msg[pos + 2]);
	if (qtype == KNOT_RRTYPE_AXFR || qtype == KNOT_RRTYPE_IXFR) {
		return MESSAGE_TRANSFER;
	}
	return signed_msg ? MESSAGE_SIGNED : MESSAGE_QUERY;
}
