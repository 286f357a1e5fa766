/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Authoritative answering from the edge store: the message level.
 *
 * Design
 *
 * answer_message() validates the message (FORMERR, NOTIMP, BADVERS, REFUSED
 * outside our zones), prepares the response OPT (edns.c), finds the zone
 * and renews the worker's read transaction, then query_solve() (solve.c)
 * fills the sections from the names lookup.c finds, signing them when the
 * query has DO=1 and the zone is signed (signing.c); additional addresses
 * come last, then RCODE, AA and the OPT. query.h describes the parts.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/pkt.h>
#include <libknot/rrtype/opt.h>

#include "common/error.h"
#include "dns/name.h"
#include "dns/reply.h"
#include "server/cookie.h"
#include "server/query.h"

void answer_ctx_init(answer_ctx_t *ctx, edge_store_t *edge, const char *nsid,
                     size_t sig_slots)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->edge = edge;
	ctx->nsid = nsid;
	ctx->nsid_len = nsid ? strlen(nsid) : 0;
	zc_arena_init(&ctx->arena, 64 * 1024);
	ctx->sigcache = signer_cache_new(sig_slots ? sig_slots :
	                                 ANSWER_SIGCACHE_SLOTS);
}

void answer_ctx_deinit(answer_ctx_t *ctx)
{
	edge_txn_abort(&ctx->txn);
	zc_arena_deinit(&ctx->arena);
	signer_cache_free(ctx->sigcache);
	if (ctx->ks_valid) {
		signer_keyset_free(&ctx->ks);
	}
	free(ctx->ks_raw);
}

/* A header-only error response (plus the question when it parsed). */
static size_t error_response(const knot_pkt_t *q, uint8_t *resp,
                             size_t resp_max, uint8_t rcode)
{
	return dns_error_reply(q->wire, q->size, q->qname_size, resp, resp_max,
	                       rcode);
}

/* Finds the zone to answer from; DS at a zone apex comes from the parent
 * zone when we serve it (RFC 4035 §3.1.4.1). */
static int find_zone(query_t *qr)
{
	uint8_t lf[DNS_LF_MAXLEN];
	size_t lf_len = dns_name_to_lf(qr->qname, lf);
	int ret = edge_zone_find(qr->txn, lf, lf_len, &qr->zone, &qr->apex_lf_len);
	if (ret != ZC_EOK || qr->qtype != KNOT_RRTYPE_DS ||
	    qr->apex_lf_len != lf_len || lf_len == 0) {
		return ret;
	}
	size_t parent = lf_len - 1;
	while (parent > 0 && lf[parent - 1] != 0) {
		parent--;
	}
	edge_zone_t zone;
	size_t apex_len;
	if (edge_zone_find(qr->txn, lf, parent, &zone, &apex_len) == ZC_EOK) {
		qr->zone = zone;
		qr->apex_lf_len = apex_len;
	}
	return ZC_EOK;
}

/* check_question(): a CHAOS-class question, for query_chaos(). */
#define ANSWER_CHAOS (-2)

/* Checks the question; returns an RCODE to send at once, -1 to answer
 * from the zones, or ANSWER_CHAOS. Where RFCs leave the choice, the codes
 * are those of Knot DNS, our reference in the differential tests. */
static int check_question(const knot_pkt_t *q, bool tcp)
{
	uint16_t qclass = knot_pkt_qclass(q);
	if (qclass == KNOT_CLASS_CH) {
		return ANSWER_CHAOS;
	}
	if (qclass != KNOT_CLASS_IN && qclass != KNOT_CLASS_ANY) {
		return KNOT_RCODE_REFUSED;
	}
	switch (knot_pkt_qtype(q)) {
	case 0:
		return KNOT_RCODE_NOTIMPL;
	case SIGNER_NXNAME:
		return KNOT_RCODE_FORMERR; /* RFC 9824 §2: a meta-type. */
	case KNOT_RRTYPE_AXFR:
		/* RFC 5936 §4.2: no AXFR over UDP (FORMERR, as BIND). Over
		 * TCP the transfer hook takes it; without one: NOTAUTH. */
		return tcp ? KNOT_RCODE_NOTAUTH : KNOT_RCODE_FORMERR;
	case KNOT_RRTYPE_IXFR:
		/* RFC 1995 §2: over UDP, the SOA alone tells the client to
		 * come back over TCP (answered as an SOA query below). */
		return tcp ? KNOT_RCODE_NOTAUTH : -1;
	default:
		return -1;
	}
}

/* The size a UDP answer may take: the requester's payload, less what
 * the caller adds after (its TSIG), never below a header, the question
 * and an OPT with a cookie (the answer is then cut to those, TC set, by
 * the sections' puts; an OPT with no room was SERVFAIL: tester 38). */
static uint16_t udp_max(const query_t *qr)
{
	size_t limit = query_udp_limit(qr->q);
	size_t floor = KNOT_WIRE_HEADER_SIZE + qr->q->qname_size + 4 +
	               (qr->q->opt_rr != NULL ? KNOT_EDNS_MIN_SIZE +
	                KNOT_EDNS_OPTION_HDRLEN + COOKIE_OPTION_MAX : 0);
	size_t reserve = qr->ctx->udp_reserve;
	limit = limit > floor + reserve ? limit - reserve :
	        floor < limit ? floor : limit;
	return (uint16_t)(limit < qr->r->max_size ? limit : qr->r->max_size);
}

/* Finishes the response: RCODE, AA, OPT. */
static void finish(query_t *qr, knot_rrset_t *opt, uint8_t ext_rcode)
{
	knot_wire_set_rcode(qr->r->wire, KNOT_EDNS_RCODE_LO(qr->rcode));
	qr->ctx->rcode = qr->rcode;
	if (qr->aa) {
		knot_wire_set_aa(qr->r->wire);
	}
	if (opt != NULL) {
		query_put_opt(qr, opt, ext_rcode);
	}
}

static void answer_in_zone(query_t *qr)
{
	int ret = edge_txn_begin_read(qr->ctx->edge, &qr->ctx->txn);
	qr->txn = &qr->ctx->txn;
	if (ret == ZC_EOK) {
		ret = find_zone(qr);
	}
	bool ixfr = knot_pkt_qtype(qr->q) == KNOT_RRTYPE_IXFR;
	if (ixfr && (ret == ZC_ENOZONE || (ret == ZC_EOK &&
	             !knot_dname_is_case_equal(qr->qname, qr->zone.apex)))) {
		/* An IXFR over UDP of a name that is no zone here: NOTAUTH,
		 * as over TCP; it was answered as an SOA query at that name
		 * (a CNAME chain, a NODATA). */
		qr->rcode = KNOT_RCODE_NOTAUTH;
	} else if (ret == ZC_ENOZONE) {
		qr->rcode = KNOT_RCODE_REFUSED; /* Not ours (RFC 1034 §4.3.2). */
	} else if (ret != ZC_EOK) {
		qr->rcode = KNOT_RCODE_SERVFAIL;
	} else {
		qr->aa = true;
		qr->zone_found = true;
		bool do_bit = qr->q->opt_rr != NULL &&
		              knot_edns_do(qr->q->opt_rr);
		bool asks_dnssec = qr->qtype == KNOT_RRTYPE_NSEC ||
		                   qr->qtype == KNOT_RRTYPE_RRSIG;
		qr->signed_zone = (do_bit || asks_dnssec) && query_load_keys(qr);
		qr->dnssec = do_bit && qr->signed_zone;
		knot_pkt_begin(qr->r, KNOT_ANSWER);
		query_solve(qr);
		query_put_additional(qr);
		if (qr->error != ZC_EOK && qr->error != KNOT_ESPACE) {
			/* Nothing of a failed answer goes out (what was put
			 * before the failure: a CNAME, an RRset whose
			 * signature failed), and AA is clear, as Knot
			 * answers a failure. */
			qr->rcode = KNOT_RCODE_SERVFAIL;
			qr->aa = false;
			knot_pkt_init_response(qr->r, qr->q);
		}
	}
	edge_txn_reset(&qr->ctx->txn);
}

/*
 * The response to a parsed query with an OPT that gets no answer from
 * the zones: the question (if any), rcode, and the OPT (RFC 6891 §7: a
 * responder includes one when the query had one) with the server cookie;
 * BADVERS for an EDNS version other than 0 and FORMERR for a malformed
 * cookie, as with a question. NOTIMP and FORMERR went out with no OPT.
 */
static size_t reply_with_opt(query_t *qr, uint8_t rcode, bool tcp)
{
	if (knot_pkt_init_response(qr->r, qr->q) != KNOT_EOK) {
		return 0;
	}
	if (!tcp) {
		/* The requester's payload holds for these too (a long NSID
		 * made a 561-octet answer to a payload of 512). */
		qr->r->max_size = udp_max(qr);
	}
	knot_wire_set_qdcount(qr->r->wire, knot_wire_get_qdcount(qr->q->wire));
	knot_rrset_t opt;
	if (query_prepare_opt(qr, &opt) != KNOT_EOK) {
		return error_response(qr->q, qr->r->wire, qr->r->max_size,
		                      KNOT_RCODE_SERVFAIL);
	}
	uint8_t ext = 0;
	qr->rcode = rcode;
	if (knot_edns_get_version(qr->q->opt_rr) != 0) {
		qr->rcode = KNOT_RCODE_BADVERS;
		ext = KNOT_EDNS_RCODE_HI(qr->rcode);
	} else if (qr->bad_cookie) {
		qr->rcode = KNOT_RCODE_FORMERR;
	}
	finish(qr, &opt, ext);
	return qr->r->size;
}

/* Whether the additional section holds the OPT and at most a TSIG: the
 * parse (without KNOT_PF_KEEPWIRE) takes a TSIG out of the wire and its
 * ARCOUNT, so the OPT alone is left (a signed query was held to 1 + 1,
 * and got FORMERR: outside tester 38). */
static bool only_opt_and_tsig(const knot_pkt_t *q)
{
	return knot_wire_get_arcount(q->wire) == 1;
}

/*
 * A query with no question (parsed, with an OPT): RFC 7873 §5.4,
 * "Querying for a Server Cookie": one with a COOKIE option and nothing
 * else (no other record) gets NOERROR with the server cookie, as BIND answers it (RFC 9619
 * §4 allows no more than one question); anything else FORMERR, with the
 * OPT. With cookies off, FORMERR, as from a server without them.
 */
static size_t no_question(query_t *qr, bool tcp)
{
	bool cookie = qr->ctx->cookie_secret != NULL &&
	              knot_pkt_edns_option(qr->q, KNOT_EDNS_OPTION_COOKIE) !=
	              NULL &&
	              knot_wire_get_ancount(qr->q->wire) == 0 &&
	              knot_wire_get_nscount(qr->q->wire) == 0 &&
	              only_opt_and_tsig(qr->q);
	return reply_with_opt(qr, cookie ? KNOT_RCODE_NOERROR :
	                      KNOT_RCODE_FORMERR, tcp);
}

/* RFC 6891 §6.1.2: the OPT's owner is the root (a query with no
 * question and another owner is FORMERR, as BIND and knotd answer it). */
static bool opt_owner_ok(const knot_pkt_t *q)
{
	return q->opt_rr == NULL || q->opt_rr->owner[0] == 0;
}

size_t answer_message(answer_ctx_t *ctx, const uint8_t *query, size_t qlen,
                      uint8_t *resp, size_t resp_max, bool tcp)
{
	/* Too short for a header, or a response: drop (RFC 1035 §4.1.1). */
	if (qlen < KNOT_WIRE_HEADER_SIZE || knot_wire_get_qr(query) ||
	    resp_max < KNOT_WIRE_MIN_PKTSIZE) {
		return 0;
	}
	zc_arena_reset(&ctx->arena);
	ctx->cookie_valid = false;
	ctx->rcode = -1;
	ctx->cookie_result = 0;
	query_t qr = { .ctx = ctx, .mm = zc_arena_mm(&ctx->arena) };
	qr.q = knot_pkt_new((uint8_t *)query, qlen, qr.mm);
	qr.r = knot_pkt_new(resp, resp_max, qr.mm);
	if (qr.q == NULL || qr.r == NULL) {
		return 0;
	}
	uint8_t opcode = knot_wire_get_opcode(query);
	uint16_t qdcount = knot_wire_get_qdcount(query);
	if (opcode != KNOT_OPCODE_QUERY) {
		/* RFC 1996: we are no secondary, so NOTIFY is not for us
		 * (one without its question is malformed: FORMERR, as BIND
		 * and knotd answer it). */
		uint8_t rcode = opcode != KNOT_OPCODE_NOTIFY ?
		                KNOT_RCODE_NOTIMPL : qdcount == 1 ?
		                KNOT_RCODE_NOTAUTH : KNOT_RCODE_FORMERR;
		if (qdcount <= 1 && knot_pkt_parse(qr.q, 0) == KNOT_EOK &&
		    qr.q->opt_rr != NULL && opt_owner_ok(qr.q)) {
			return reply_with_opt(&qr, rcode, tcp);
		}
		knot_pkt_parse_question(qr.q);
		return error_response(qr.q, resp, resp_max, rcode);
	}
	if (qdcount == 0 && knot_pkt_parse(qr.q, 0) == KNOT_EOK &&
	    qr.q->opt_rr != NULL && opt_owner_ok(qr.q)) {
		return no_question(&qr, tcp);
	}
	/* Malformed: bad names, counts, trailing data, bad or repeated OPT
	 * (RFC 6891 §6.1.1) all fail the parse. (An OPT owner other than
	 * the root is read as the root with a question, as knotd reads it:
	 * test_malformed.py.) */
	if (qdcount != 1 || knot_pkt_parse(qr.q, 0) != KNOT_EOK) {
		/* RFC 9619: FORMERR for QDCOUNT != 1 too. A message whose
		 * question cannot even be read gets no answer (as Knot). */
		if (knot_wire_get_qdcount(query) == 1 &&
		    knot_pkt_parse_question(qr.q) != KNOT_EOK) {
			return 0;
		}
		return error_response(qr.q, resp, resp_max, KNOT_RCODE_FORMERR);
	}
	int rcode = check_question(qr.q, tcp);
	if (rcode >= 0 && qr.q->opt_rr == NULL) {
		return error_response(qr.q, resp, resp_max, rcode);
	}
	if (knot_pkt_init_response(qr.r, qr.q) != KNOT_EOK) {
		return 0;
	}
	if (!tcp) {
		qr.r->max_size = udp_max(&qr);
	}
	qr.qname = knot_pkt_qname(qr.r);
	qr.qtype = knot_pkt_qtype(qr.q);
	if (qr.qtype == KNOT_RRTYPE_IXFR) {
		qr.qtype = KNOT_RRTYPE_SOA;
	}
	knot_rrset_t opt;
	knot_rrset_t *optp = NULL;
	if (qr.q->opt_rr != NULL) {
		if (query_prepare_opt(&qr, &opt) != KNOT_EOK) {
			return error_response(qr.q, resp, resp_max,
			                      KNOT_RCODE_SERVFAIL);
		}
		optp = &opt;
		if (knot_edns_get_version(qr.q->opt_rr) != 0) {
			/* RFC 6891 §6.1.3: BADVERS, version 0. */
			qr.rcode = KNOT_RCODE_BADVERS;
			finish(&qr, optp, KNOT_EDNS_RCODE_HI(qr.rcode));
			return qr.r->size;
		}
		if (qr.bad_cookie) {
			qr.rcode = KNOT_RCODE_FORMERR;
			finish(&qr, optp, 0);
			return qr.r->size;
		}
	}
	if (rcode >= 0) {
		qr.rcode = (uint8_t)rcode;
	} else if (rcode == ANSWER_CHAOS) {
		query_chaos(&qr);
	} else {
		answer_in_zone(&qr);
	}
	finish(&qr, optp, 0);
	return qr.r->size;
}
