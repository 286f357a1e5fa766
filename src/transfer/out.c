/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Transfer output: packs RRs into messages of up to 64 KiB with name
 * compression, TSIG-signs each message when the request was signed
 * (RFC 8945 §5.3.1: every message, MACs chained by dns_tsig_sign()), and
 * writes them on the connection. A message is written only when the next
 * RR does not fit, so the one in the buffer at the end is the last and
 * goes out with server_reply_send(), handing the connection back.
 *
 * RFC 5936 §2.2 lets an RRset's RRs spread over messages: an RRset that
 * does not fit in an empty message is put one RR at a time.
 */
#include <errno.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/pkt_put.h"
#include "transfer/internal.h"

/* Room left for the TSIG RR when signing. */
static uint16_t body_max(const xfr_out_t *out)
{
	return out->tsig->present ? XFR_MSG_MAX - DNS_TSIG_ROOM : XFR_MSG_MAX;
}

/* Starts a new, empty response message in the buffer. A new packet
 * each time: knot_pkt_init_response() keeps the name compression state
 * of the previous message, whose pointers would then lead into the new
 * message's bytes (and could loop). */
static int begin_message(xfr_out_t *out)
{
	knot_pkt_free(out->pkt);
	out->pkt = knot_pkt_new(out->buf, body_max(out), NULL);
	if (out->pkt == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = knot_pkt_init_response(out->pkt, out->q);
	if (ret != KNOT_EOK) {
		return ret;
	}
	/* The header is the request's: its RCODE bits are not ours. */
	knot_wire_set_rcode(out->pkt->wire, KNOT_RCODE_NOERROR);
	knot_wire_set_aa(out->pkt->wire);
	if (out->opt->present) {
		ret = knot_pkt_reserve(out->pkt, xfr_opt_size(out->opt));
		if (ret != KNOT_EOK) {
			return ret;
		}
	}
	return knot_pkt_begin(out->pkt, KNOT_ANSWER);
}

/* Signs the message in the buffer (its OPT put first, when the request
 * had one); returns its length or 0 on failure. */
static size_t sign_message(xfr_out_t *out)
{
	int ret = xfr_put_opt(out->pkt, out->opt, 0);
	if (ret != KNOT_EOK) {
		out->error = ret;
		return 0;
	}
	size_t len = out->pkt->size;
	ret = dns_tsig_sign(out->tsig, out->buf, &len, XFR_MSG_MAX);
	if (ret != ZC_EOK) {
		out->error = ret;
		return 0;
	}
	return len;
}

/* Writes the message in the buffer (not the last) and starts the next. */
static void flush(xfr_out_t *out)
{
	if (out->stop != NULL && atomic_load(out->stop)) {
		out->error = -ECANCELED; /* Shutting down: abort. */
		return;
	}
	size_t len = sign_message(out);
	if (len == 0) {
		return;
	}
	out->started = true;
	int ret = server_reply_write(out->reply, out->buf, len);
	if (ret != ZC_EOK) {
		out->error = ret;
		return;
	}
	out->messages++;
	ret = begin_message(out);
	if (ret != KNOT_EOK) {
		out->error = ret;
	}
}

/* Puts an RRset into the current message (dns/pkt_put.h: a put that
 * fails leaves no stale compression suffix). */
static int try_put(knot_pkt_t *pkt, const knot_rrset_t *rr)
{
	return dns_pkt_put(pkt, KNOT_COMPR_HINT_NONE, rr, KNOT_PF_NOTRUNC);
}

/* Puts an RRset into the current message, flushing once when full.
 * Returns KNOT_ESPACE when it does not fit even in an empty message. */
static int put_flushing(xfr_out_t *out, const knot_rrset_t *rr)
{
	int ret = try_put(out->pkt, rr);
	if (ret == KNOT_ESPACE && out->pkt->rrset_count > 0) {
		flush(out);
		if (out->error != ZC_EOK) {
			return out->error;
		}
		ret = try_put(out->pkt, rr);
	}
	return ret;
}

int xfr_out_init(xfr_out_t *out, const knot_pkt_t *q, const xfr_opt_t *opt,
                 dns_tsig_t *tsig, server_reply_t *reply, uint8_t *buf,
                 const atomic_bool *stop)
{
	memset(out, 0, sizeof(*out));
	out->q = q;
	out->opt = opt;
	out->tsig = tsig;
	out->reply = reply;
	out->stop = stop;
	server_reply_set_stop(reply, stop);
	out->buf = buf;
	int ret = begin_message(out);
	if (ret != KNOT_EOK) {
		xfr_out_deinit(out);
	}
	return ret;
}

void xfr_out_put(xfr_out_t *out, const knot_rrset_t *rr)
{
	if (out->error != ZC_EOK || rr->rrs.count == 0) {
		return;
	}
	int ret = put_flushing(out, rr);
	if (ret == KNOT_ESPACE && rr->rrs.count > 1 && out->error == ZC_EOK) {
		/* Too big for one message: one RR at a time. */
		knot_rrset_t one = *rr;
		one.rrs.count = 1;
		one.rrs.rdata = rr->rrs.rdata;
		ret = KNOT_EOK;
		for (uint16_t i = 0; i < rr->rrs.count && ret == KNOT_EOK; i++) {
			one.rrs.size = (uint32_t)knot_rdata_size(one.rrs.rdata->len);
			ret = put_flushing(out, &one);
			one.rrs.rdata = knot_rdataset_next(one.rrs.rdata);
		}
		if (ret == KNOT_EOK) {
			out->rrs += rr->rrs.count;
			return;
		}
	}
	if (ret != KNOT_EOK) {
		out->error = out->error != ZC_EOK ? out->error : ret;
		return;
	}
	out->rrs += rr->rrs.count;
}

int xfr_out_finish(xfr_out_t *out)
{
	size_t len = 0;
	if (out->error == ZC_EOK) {
		len = sign_message(out);
	} else if (!out->started && begin_message(out) == KNOT_EOK) {
		/* Nothing went out yet: the client gets an answer. A write
		 * that failed may have sent part of a message: the stream can
		 * then only be closed. */
		knot_wire_clear_aa(out->pkt->wire);
		knot_wire_set_rcode(out->pkt->wire, KNOT_RCODE_SERVFAIL);
		len = sign_message(out);
	}
	/* len 0: a stream broken in the middle can only be closed. */
	server_reply_send(out->reply, out->buf, len);
	out->reply = NULL;
	if (len > 0 && out->error == ZC_EOK) {
		out->messages++;
	}
	int ret = out->error;
	xfr_out_deinit(out);
	return ret;
}

void xfr_out_deinit(xfr_out_t *out)
{
	knot_pkt_free(out->pkt);
	out->pkt = NULL;
}
