/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * AXFR (RFC 5936): the whole zone from the request's edge read
 * transaction, so every message comes from one version of the zone. The
 * SOA (kept in the zone metadata, not in the apex node) opens and closes
 * the transfer (§2.2); in between come every node's RRsets in key order,
 * delegations and glue included as stored (§3.1 wants the zone's
 * authoritative data and its glue).
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>

#include "common/error.h"
#include "dns/name.h"
#include "transfer/internal.h"

void xfr_soa(const edge_zone_t *zone, uint32_t serial, uint8_t *buf,
             knot_rrset_t *soa)
{
	knot_rdata_t *rd = (knot_rdata_t *)buf;
	knot_rdata_init(rd, zone->soa_len, zone->soa);
	knot_soa_serial_set(rd, serial);
	knot_rrset_init(soa, (knot_dname_t *)zone->apex, KNOT_RRTYPE_SOA,
	                KNOT_CLASS_IN, zone->soa_ttl);
	soa->rrs.count = 1;
	soa->rrs.size = (uint32_t)knot_rdata_size(zone->soa_len);
	soa->rrs.rdata = rd;
}

/* Puts every RRset of one node. The packet does not keep pointers into
 * the decoded node once an RRset is written, so the arena can be reset
 * for the next node. */
static int put_node(xfr_req_t *req, const uint8_t *apex_lf, size_t apex_len,
                    const uint8_t *rel, size_t rel_len, const uint8_t *val,
                    size_t val_len)
{
	uint8_t lf[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	if (apex_len + rel_len > sizeof(lf)) {
		return ZC_EFORMAT;
	}
	memcpy(lf, apex_lf, apex_len);
	memcpy(lf + apex_len, rel, rel_len);
	if (dns_name_from_lf(lf, apex_len + rel_len, owner) < 0) {
		return ZC_EFORMAT;
	}
	zc_arena_reset(req->arena);
	edge_node_t node;
	int ret = edge_node_decode(val, val_len, owner, zc_arena_mm(req->arena),
	                           &node);
	if (ret != ZC_EOK) {
		return ret;
	}
	for (uint16_t i = 0; i < node.count; i++) {
		if (node.rrsets[i].type != KNOT_RRTYPE_SOA) {
			xfr_out_put(req->out, &node.rrsets[i]);
		}
	}
	return req->out->error;
}

static int put_view_rrset(const knot_rrset_t *rr, void *ctx)
{
	xfr_out_t *out = ctx;
	xfr_out_put(out, rr);
	return out->error != ZC_EOK;
}

/* A signed zone: every node of the signed view (sigview.h), its RRSIGs
 * and NSEC included, from the view's read transaction. */
static int view_body(xfr_req_t *req)
{
	int ret = sigview_read_zone(req->view, (int64_t)req->zone.zone_id,
	                            req->arena, put_view_rrset, req->out);
	return ret != ZC_EOK ? ret : req->out->error;
}

int axfr_run(xfr_req_t *req)
{
	uint8_t soa_buf[XFR_SOA_BUF];
	knot_rrset_t soa;
	xfr_soa(&req->zone, req->zone.serial, soa_buf, &soa);
	xfr_out_put(req->out, &soa);
	if (req->view != NULL) {
		int ret = view_body(req);
		if (ret != ZC_EOK) {
			return ret;
		}
		xfr_out_put(req->out, &soa);
		return req->out->error;
	}
	uint8_t apex_lf[DNS_LF_MAXLEN];
	size_t apex_len = dns_name_to_lf(req->zone.apex, apex_lf);
	edge_iter_t it;
	int ret = edge_iter_begin(req->txn, req->zone.zone_id, &it);
	if (ret != ZC_EOK) {
		return ret;
	}
	const uint8_t *rel, *val;
	size_t rel_len, val_len;
	while (req->out->error == ZC_EOK &&
	       (ret = edge_iter_next(&it, &rel, &rel_len, &val, &val_len)) == 1) {
		ret = put_node(req, apex_lf, apex_len, rel, rel_len, val, val_len);
		if (ret != ZC_EOK) {
			break;
		}
	}
	edge_iter_end(&it);
	if (ret < 0) {
		return ret;
	}
	xfr_out_put(req->out, &soa);
	return req->out->error;
}
