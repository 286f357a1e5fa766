/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * IXFR (RFC 1995): the difference between the client's serial S and the
 * served serial E, from the change log (the journal), condensed into one
 * difference sequence (§4):
 *
 *   SOA(E)  SOA(S) deleted RRs  SOA(E) added RRs  SOA(E)
 *
 * SOA(S) is the SOA the client holds, exactly (RFC 1995 §4): when its
 * fields or TTL changed between S and E, the journal has the SOA they
 * replaced (the records journal its SOA record's events, the signed
 * view's the SOA it journals with such a version), given serial S;
 * otherwise the served SOA with serial S. A client at or past E (RFC 1982) gets SOA(E) alone (§4,
 * "up to date"). When the journal does not reach back to S, the answer is
 * the whole zone in AXFR form (§4).
 */
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "transfer/internal.h"

/* Puts one RR of the condensed difference. */
static int put_diff_rr(const xfr_diff_rr_t *rr, void *ctx)
{
	xfr_out_t *out = ctx;
	uint8_t buf[4 + UINT16_MAX];
	knot_rdata_t *rd = (knot_rdata_t *)buf;
	knot_rdata_init(rd, rr->rdata_len, rr->rdata);
	knot_rrset_t set;
	knot_rrset_init(&set, (knot_dname_t *)rr->owner, rr->type, KNOT_CLASS_IN,
	                rr->ttl);
	set.rrs.count = 1;
	set.rrs.size = (uint32_t)knot_rdata_size(rr->rdata_len);
	set.rrs.rdata = rd;
	xfr_out_put(out, &set);
	return out->error != ZC_EOK;
}

/* The client's SOA: serial S with the fields and TTL it had then. */
static void old_soa(const xfr_req_t *req, const xfr_diff_t *diff,
                    uint8_t *buf, knot_rrset_t *soa)
{
	edge_zone_t then = req->zone;
	const uint8_t *rdata;
	uint16_t len;
	uint32_t ttl;
	if (xfr_diff_old_soa(diff, &ttl, &rdata, &len) && len >= 22 &&
	    len <= sizeof(then.soa)) {
		memcpy(then.soa, rdata, len);
		then.soa_len = len;
		then.soa_ttl = ttl;
	}
	xfr_soa(&then, req->client_serial, buf, soa);
}

/* Writes the condensed sequence. */
static int put_sequence(xfr_req_t *req, const xfr_diff_t *diff)
{
	uint8_t new_buf[XFR_SOA_BUF], old_buf[XFR_SOA_BUF];
	knot_rrset_t soa_new, soa_old;
	xfr_soa(&req->zone, req->zone.serial, new_buf, &soa_new);
	old_soa(req, diff, old_buf, &soa_old);
	xfr_out_put(req->out, &soa_new);
	xfr_out_put(req->out, &soa_old);
	xfr_diff_foreach(diff, false, put_diff_rr, req->out);
	xfr_out_put(req->out, &soa_new);
	xfr_diff_foreach(diff, true, put_diff_rr, req->out);
	xfr_out_put(req->out, &soa_new);
	return req->out->error;
}

int ixfr_run(xfr_req_t *req)
{
	/* Up to date: the client has this serial, or one after it (RFC
	 * 1982). A serial exactly 2^31 away is neither before nor after
	 * (undefined): the whole zone, as for any serial never issued (it
	 * was answered "up to date", and the client waited for more). */
	uint32_t ahead = req->client_serial - req->zone.serial;
	if (ahead < 0x80000000u) {
		req->up_to_date = true;
		uint8_t buf[XFR_SOA_BUF];
		knot_rrset_t soa;
		xfr_soa(&req->zone, req->zone.serial, buf, &soa);
		xfr_out_put(req->out, &soa);
		return req->out->error;
	}
	xfr_diff_t *diff;
	int ret = xfr_diff_new(&diff);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (req->view != NULL) {
		/* A signed zone: the view's journal has every change, its
		 * RRSIGs and NSECs included (sigview.h). */
		ret = sigview_read_journal(req->view, (int64_t)req->zone.zone_id,
		                           req->client_serial, req->zone.serial,
		                           xfr_diff_add, diff);
	} else {
		ret = records_journal_read(req->rs, req->zone.apex,
		                           req->client_serial, req->zone.serial,
		                           xfr_diff_add, diff);
	}
	if (ret == ZC_EOK) {
		ret = put_sequence(req, diff);
	}
	xfr_diff_free(diff);
	if (ret == ZC_ENOJOURNAL) {
		req->axfr_form = true;
		return axfr_run(req);
	}
	return ret;
}
