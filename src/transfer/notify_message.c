/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One NOTIFY (RFC 1996 §3.7): the serial to announce (the edge store's,
 * or a signed zone's view's), the question and the SOA in the answer
 * section, the TSIG signature when the target names a key (RFC 8945),
 * read from the records store at each send so a changed key is used at
 * once; then the datagram sent and the try counted.
 */
#include <errno.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/pkt.h>

#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/pkt_put.h"
#include "dns/tsig.h"
#include "dns/tsig_client.h"
#include "transfer/activity.h"
#include "transfer/internal.h"
#include "transfer/notify_state.h"

int notify_records_open(notify_t *n)
{
	if (n->rs != NULL) {
		return ZC_EOK;
	}
	int ret = records_open(&n->rs, n->data_dir);
	if (ret != ZC_EOK) {
		zc_error("notify: cannot open the records store: %s",
		         zc_strerror(ret));
	}
	return ret;
}

/* Loads the target's TSIG key into c. Logged once per target until the
 * key works again. */
int notify_load_key(notify_t *n, notify_target_t *tg, dns_tsig_client_t *c)
{
	records_tsig_key_t key;
	int ret = notify_records_open(n);
	if (ret == ZC_EOK) {
		ret = records_tsig_find(n->rs, tg->spec.key, &key);
	}
	if (ret == ZC_EOK) {
		ret = dns_tsig_client_key(c, key.name, key.algorithm,
		                          key.secret, key.secret_len);
	}
	if (ret != ZC_EOK && !tg->key_warned) {
		zc_warn("notify: cannot sign NOTIFYs to %s: %s; none is sent "
		        "until the key can be used", tg->name,
		        ret == ZC_ENOKEY ?
		        "no such key (zonecast tsig create)" :
		        zc_strerror(ret));
		tg->key_warned = true;
	} else if (ret == ZC_EOK && tg->key_warned) {
		zc_info("notify: key for %s usable again", tg->name);
		tg->key_warned = false;
	}
	return ret;
}

/*
 * The serial to announce for the zone, read in txn: the edge's, or for a
 * signed zone the signed view's (what its transfers serve). False while a
 * signed zone has no view yet.
 */
bool notify_announced_serial(notify_t *n, edge_txn_t *txn,
                             const edge_zone_t *z, uint32_t *serial)
{
	const uint8_t *raw;
	size_t len;
	*serial = z->serial;
	if (n->zone_serial == NULL ||
	    edge_keys_get(txn, z->zone_id, &raw, &len) != ZC_EOK) {
		return true;
	}
	return n->zone_serial(n->zone_serial_ctx, (int64_t)z->zone_id,
	                      serial) == 1;
}

/* Builds, signs when the target has a key, and sends a NOTIFY: question
 * the apex SOA, the SOA in the answer section (RFC 1996 §3.7, optional
 * and useful). Not sendable (a zone deleted meanwhile, an unusable key):
 * an error, and the slot is not in flight. */
int notify_send(notify_t *n, notify_zone_t *zone, uint32_t slot)
{
	edge_zone_t z;
	uint32_t serial = 0;
	int ret = edge_txn_begin_read(n->edge, &n->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&n->txn, zone->apex, &z);
	}
	if (ret == ZC_EOK &&
	    !notify_announced_serial(n, &n->txn, &z, &serial)) {
		ret = ZC_EBUSY; /* Signed, no view yet: the view cues us. */
	}
	edge_txn_reset(&n->txn);
	if (ret != ZC_EOK) {
		return ret; /* Deleted meanwhile: the next listing drops it. */
	}
	zone->serial = serial;
	notify_slot_t *s = &zone->slots[slot];
	notify_target_t *tg = &n->targets[s->target];
	dns_tsig_client_t tsig;
	if (tg->spec.has_key && notify_load_key(n, tg, &tsig) != ZC_EOK) {
		return ZC_ENOKEY;
	}
	uint8_t buf[NOTIFY_BUF];
	knot_pkt_t *pkt = knot_pkt_new(buf, NOTIFY_BUF - DNS_TSIG_ROOM, NULL);
	if (pkt == NULL) {
		return KNOT_ENOMEM;
	}
	knot_pkt_clear(pkt); /* A new message, not one to parse. */
	knot_wire_set_id(pkt->wire, s->id);
	knot_wire_set_opcode(pkt->wire, KNOT_OPCODE_NOTIFY);
	knot_wire_set_aa(pkt->wire);
	uint8_t soa_buf[XFR_SOA_BUF];
	knot_rrset_t soa;
	xfr_soa(&z, serial, soa_buf, &soa);
	ret = knot_pkt_put_question(pkt, z.apex, KNOT_CLASS_IN,
	                            KNOT_RRTYPE_SOA);
	if (ret == KNOT_EOK) {
		ret = knot_pkt_begin(pkt, KNOT_ANSWER);
	}
	if (ret == KNOT_EOK) {
		ret = dns_pkt_put(pkt, KNOT_COMPR_HINT_QNAME, &soa, 0);
	}
	size_t len = pkt->size;
	knot_pkt_free(pkt);
	s->mac_len = 0;
	if (ret == KNOT_EOK && tg->spec.has_key) {
		ret = dns_tsig_client_sign(&tsig, buf, &len, sizeof(buf));
		s->mac_len = (uint8_t)tsig.mac_len;
		memcpy(s->mac, tsig.mac, tsig.mac_len);
	}
	if (ret != KNOT_EOK) {
		return ret;
	}
	int fd = tg->spec.addr.ss_family == AF_INET6 ? n->fd6 : n->fd4;
	if (sendto(fd, buf, len, 0, (const struct sockaddr *)&tg->spec.addr,
	           tg->spec.addr_len) < 0) {
		ret = -errno; /* Counted as a try: resent at the deadline. */
	}
	zc_count(ZC_COUNT_NOTIFY_SENT);
	s->sent_serial = serial;
	s->tries++;
	unsigned shift = s->tries - 1u < 20 ? s->tries - 1u : 20;
	s->deadline = notify_now_ms() + ((int64_t)n->timeout_ms << shift);
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, zone->apex, sizeof(name));
	zc_debug("notify: zone %s serial %u to %s (id %u, try %u)%s%s", name,
	         serial, tg->name, s->id, s->tries,
	         ret == KNOT_EOK ? "" : ": ",
	         ret == KNOT_EOK ? "" : zc_strerror(ret));
	transfer_activity_notify(zone->apex, tg->name, serial, s->tries,
	                         ret == KNOT_EOK ? "sent" : "not sent");
	return ZC_EOK;
}
