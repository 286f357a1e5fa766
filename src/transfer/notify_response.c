/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Responses to the NOTIFY sender (RFC 1996 §3.6): matched to their NOTIFY
 * by source address, port and id, the response TSIG checked for a signed
 * one; a refusal (any rcode but NOERROR, or a response that does not
 * verify) is logged once per target and kind and audited each time, and
 * the outcome noted for `zonecast zone status`. A completed NOTIFY lets
 * the slot send the serial that moved meanwhile.
 */
#include <stdio.h>
#include <string.h>
#include <libknot/codes.h>
#include <libknot/errcode.h>
#include <libknot/lookup.h>
#include <libknot/packet/pkt.h>

#include "common/audit.h"
#include "common/counters.h"
#include "common/log.h"
#include "dns/tsig_client.h"
#include "transfer/activity.h"
#include "transfer/notify_state.h"

/* "NOTAUTH (TSIG BADKEY)". libknot's table of TSIG errors holds only
 * BADSIG (Knot 3.2), hence this one (RFC 8945 §7, RFC 2930). */
static void refusal_text(uint32_t refusal, char *out, size_t size)
{
	static const char *const tsig_errors[] = {
		"BADSIG", "BADKEY", "BADTIME", "BADMODE", "BADNAME", "BADALG",
		"BADTRUNC" };
	const knot_lookup_t *rc = knot_lookup_by_id(knot_rcode_names,
	                                            (int)(refusal >> 16));
	unsigned te = refusal & 0xffff;
	char tsig[32] = "";
	if (te >= 16 && te < 16 + sizeof(tsig_errors) / sizeof(tsig_errors[0])) {
		snprintf(tsig, sizeof(tsig), " (TSIG %s)", tsig_errors[te - 16]);
	} else if (te != 0) {
		snprintf(tsig, sizeof(tsig), " (TSIG error %u)", te);
	}
	if (rc != NULL) {
		snprintf(out, size, "%s%s", rc->name, tsig);
	} else {
		snprintf(out, size, "rcode %u%s", refusal >> 16, tsig);
	}
}

/* Logs a refusal once per target and kind, and the return to
 * acceptance. */
static void note_outcome(notify_t *n, notify_zone_t *zone, notify_slot_t *s,
                         uint32_t refusal, const char *why)
{
	notify_target_t *tg = &n->targets[s->target];
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	if (refusal == 0) {
		if (s->refused) {
			s->refused = false;
			if (--tg->refused == 0) {
				zc_info("notify: %s accepts NOTIFY again (zone "
				        "%s serial %u)", tg->name, name,
				        s->sent_serial);
				tg->refusal = 0;
			}
		}
		return;
	}
	if (!s->refused) {
		s->refused = true;
		tg->refused++;
	}
	if (tg->refusal != refusal) {
		char text[64];
		refusal_text(refusal, text, sizeof(text));
		zc_warn("notify: %s refused the NOTIFY of zone %s serial %u: "
		        "%s%s; it refreshes only on its SOA timer (logged once "
		        "until this changes)", tg->name, name, s->sent_serial,
		        text, why);
		tg->refusal = refusal;
	}
}

/* Checks a signed NOTIFY's response: its TSIG error folds into the
 * refusal, a bad or missing MAC on a NOERROR is a refusal of its own. */
static uint32_t check_response(notify_t *n, notify_slot_t *s,
                               const uint8_t *msg, size_t len,
                               const char **why)
{
	uint32_t rcode = knot_wire_get_rcode(msg);
	notify_target_t *tg = &n->targets[s->target];
	if (!tg->spec.has_key) {
		return rcode << 16;
	}
	uint8_t copy[NOTIFY_BUF];
	memcpy(copy, msg, len);
	knot_pkt_t *pkt = knot_pkt_new(copy, len, NULL);
	dns_tsig_client_t tsig;
	uint16_t error = 0;
	int ret = pkt == NULL ? KNOT_ENOMEM : knot_pkt_parse(pkt, 0);
	if (ret == KNOT_EOK) {
		ret = notify_load_key(n, tg, &tsig);
	}
	if (ret == KNOT_EOK) {
		tsig.mac_len = s->mac_len;
		memcpy(tsig.mac, s->mac, s->mac_len);
		ret = dns_tsig_client_check(&tsig, pkt, &error);
	}
	knot_pkt_free(pkt);
	if (ret != KNOT_EOK && rcode == KNOT_RCODE_NOERROR && error == 0) {
		*why = ret == KNOT_TSIG_EBADSIG ?
		       ", its response unsigned or with a wrong MAC" :
		       ", its response TSIG not verified";
		return (KNOT_RCODE_NOTAUTH << 16) | KNOT_RCODE_BADSIG;
	}
	return rcode << 16 | error;
}

/* Notes how a secondary answered (`zonecast zone status`); a refusal
 * (any rcode but NOERROR, or a response TSIG that does not verify) gets
 * an audit line each time: the secondary does not take the zone from us. */
static void note_activity(const notify_zone_t *zone, const notify_target_t *tg,
                          const notify_slot_t *s, uint32_t refusal)
{
	char text[64], result[80];
	refusal_text(refusal, text, sizeof(text));
	snprintf(result, sizeof(result), refusal == 0 ? "answered" :
	         "refused (%s)", text);
	transfer_activity_notify(zone->apex, tg->name, s->sent_serial,
	                         s->tries, result);
	if (refusal == 0) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_audit_t a;
	zc_audit_begin(&a, "notify", "refused");
	zc_audit_str(&a, "zone", name);
	zc_audit_str(&a, "secondary", tg->name);
	zc_audit_num(&a, "serial", s->sent_serial);
	zc_audit_fixed(&a, "rcode", text);
	zc_audit_end(&a);
}

/* A response from address `from`: completes the matching NOTIFY. */
static void on_response(notify_t *n, const struct sockaddr_storage *from,
                        const uint8_t *msg, size_t len)
{
	if (len < KNOT_WIRE_HEADER_SIZE || !knot_wire_get_qr(msg) ||
	    knot_wire_get_opcode(msg) != KNOT_OPCODE_NOTIFY) {
		return;
	}
	uint16_t id = knot_wire_get_id(msg);
	for (size_t t = 0; t < n->target_count; t++) {
		notify_target_t *tg = &n->targets[t];
		if (tg->users == 0 || !notify_same_addr(&tg->spec.addr, from)) {
			continue;
		}
		for (size_t i = 0; i < tg->flight_count; i++) {
			if (tg->flights[i].id != id) {
				continue;
			}
			notify_zone_t *zone = tg->flights[i].zone;
			uint32_t slot = tg->flights[i].slot;
			notify_slot_t *s = &zone->slots[slot];
			const char *why = "";
			uint32_t refusal = check_response(n, s, msg, len, &why);
			tg->flights[i] = tg->flights[--tg->flight_count];
			tg->answers = true;
			s->in_flight = false;
			s->has_done = true;
			s->done_serial = s->sent_serial;
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, zone->apex, sizeof(name));
			zc_debug("notify: zone %s serial %u answered by %s "
			         "(rcode %u)", name, s->sent_serial, tg->name,
			         knot_wire_get_rcode(msg));
			zc_count(refusal == 0 && knot_wire_get_rcode(msg) ==
			         KNOT_RCODE_NOERROR ? ZC_COUNT_NOTIFY_ACKED :
			         ZC_COUNT_NOTIFY_ERROR);
			note_outcome(n, zone, s, refusal, why);
			note_activity(zone, tg, s, refusal);
			/* The serial may have moved. */
			notify_start_slot(n, zone, slot);
			return;
		}
	}
}

void notify_receive(notify_t *n, int fd)
{
	uint8_t buf[NOTIFY_BUF];
	for (;;) {
		struct sockaddr_storage from;
		socklen_t from_len = sizeof(from);
		ssize_t len = recvfrom(fd, buf, sizeof(buf), 0,
		                       (struct sockaddr *)&from, &from_len);
		if (len < 0) {
			return; /* EAGAIN */
		}
		on_response(n, &from, buf, (size_t)len);
	}
}
