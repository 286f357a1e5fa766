/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One transfer request, served by a worker (a pool thread, or the fuzz
 * target's own): the checks (parse, TSIG, zone, access), the transfer
 * proper through axfr.c or ixfr.c, the signed queries, and the log and
 * audit line of each. See transfer.h for the design.
 *
 * A worker owns a records-store connection (TSIG keys, the zone's
 * allow-transfer entries, the IXFR journal), arenas and a message buffer;
 * xfr_worker_serve() is the whole of what a thread does with a request.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>
#include <libknot/rrtype/tsig.h>

#include "common/audit.h"
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/reply.h"
#include "dns/tsig_log.h"
#include "server/answer.h"
#include "transfer/activity.h"
#include "transfer/internal.h"

/* What a request turned out to be, for the log line. */
typedef struct {
	char zone[KNOT_DNAME_TXT_MAXLEN + 1];
	char peer[ZC_ADDR_TEXT_MAX];
	const char *kind;        /* "AXFR", "IXFR" */
	const struct sockaddr_storage *from;
} xfr_log_t;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Answers with a header (and the question when the message has one
 * that parses) and an rcode; used when no thread takes the request. */
void xfr_send_header_error(server_reply_t *reply, const uint8_t *msg,
                           size_t len, uint8_t rcode)
{
	uint8_t resp[KNOT_WIRE_HEADER_SIZE + KNOT_DNAME_MAXLEN + 4];
	if (len < KNOT_WIRE_HEADER_SIZE) {
		server_reply_send(reply, NULL, 0);
		return;
	}
	size_t rlen = dns_error_reply(msg, len, dns_qname_size(msg, len), resp,
	                              sizeof(resp), rcode);
	server_reply_send(reply, resp, rlen);
}

/* The error answer in w->buf with opt's OPT, signed with tsig (the
 * caller's copy); its length, 0 when no packet could be made. */
static size_t error_message(xfr_worker_t *w, const knot_pkt_t *q,
                            const xfr_opt_t *opt, dns_tsig_t *tsig,
                            uint16_t rcode)
{
	knot_pkt_t *r = knot_pkt_new(w->buf, XFR_MSG_MAX - DNS_TSIG_ROOM,
	                             zc_arena_mm(&w->arena));
	if (r == NULL || knot_pkt_init_response(r, q) != KNOT_EOK) {
		return 0;
	}
	knot_wire_set_rcode(r->wire, KNOT_EDNS_RCODE_LO(rcode));
	/* Its OPT when the request had one (without, rather than no
	 * answer, should it not fit). */
	if (opt->present &&
	    knot_pkt_reserve(r, xfr_opt_size(opt)) == KNOT_EOK) {
		xfr_put_opt(r, opt, KNOT_EDNS_RCODE_HI(rcode));
	}
	size_t len = r->size;
	if (dns_tsig_sign(tsig, w->buf, &len, XFR_MSG_MAX) != ZC_EOK) {
		len = r->size; /* Unsigned rather than nothing. */
	}
	return len;
}

/* Answers the parsed request with an rcode (extended: BADVERS) and the
 * TSIG outcome (tsig NULL: unsigned), within udp_limit octets when not 0
 * (a UDP request's payload): the NSID and cookie go when it would not fit
 * with them (a BADTIME answer with a long NSID was 522 octets for 512:
 * outside tester 38). */
static void send_error(xfr_worker_t *w, const knot_pkt_t *q,
                       const xfr_opt_t *opt, dns_tsig_t *tsig,
                       server_reply_t *reply, uint16_t rcode,
                       size_t udp_limit)
{
	dns_tsig_t unsigned_tsig = { .present = false };
	dns_tsig_t t = tsig != NULL ? *tsig : unsigned_tsig;
	size_t len = error_message(w, q, opt, &t, rcode);
	if (len > udp_limit && udp_limit > 0 &&
	    (opt->nsid != NULL || opt->cookie_len > 0)) {
		xfr_opt_t bare = *opt;
		bare.nsid = NULL;
		bare.cookie_len = 0;
		t = tsig != NULL ? *tsig : unsigned_tsig; /* Signed afresh. */
		len = error_message(w, q, &bare, &t, rcode);
	}
	if (len == 0) {
		xfr_send_header_error(reply, q->wire, q->size,
		                      KNOT_EDNS_RCODE_LO(rcode));
		return;
	}
	server_reply_send(reply, w->buf, len);
}

/* The payload a UDP request allows (RFC 6891 §6.2.5; 512 without EDNS). */
static size_t udp_payload(const knot_pkt_t *q)
{
	if (q->opt_rr == NULL) {
		return KNOT_WIRE_MIN_PKTSIZE;
	}
	uint16_t asked = knot_edns_get_payload(q->opt_rr);
	return asked < KNOT_WIRE_MIN_PKTSIZE ? KNOT_WIRE_MIN_PKTSIZE : asked;
}

/* RFC 8945 §5.2: checks the TSIG with the key named by its owner. */
static int check_tsig(xfr_worker_t *w, const knot_pkt_t *q, dns_tsig_t *tsig,
                      records_tsig_key_t *key)
{
	/* Transfers and signed queries only read: a replay within the
	 * window gets what the captured response showed, and secondaries
	 * resend the same message when an answer is lost; so the time
	 * window applies, the replay cache does not (docs/security.md). */
	dns_tsig_policy_t policy = {
		.max_fudge = (uint16_t)xfr_live_max_fudge(w),
	};
	if (q->tsig_rr == NULL) {
		return dns_tsig_check(q, false, NULL, NULL, 0, &policy, tsig);
	}
	bool found = records_tsig_find(w->rs, q->tsig_rr->owner, key) == ZC_EOK;
	return dns_tsig_check(q, found, key->algorithm, key->secret,
	                      key->secret_len, &policy, tsig);
}

/* The rcode of a failed check_tsig(): FORMERR for a MAC of a bad size
 * (RFC 8945 §5.2.2.1), else NOTAUTH with the TSIG error (§5.2). */
static uint8_t tsig_rcode(int ret)
{
	return ret == KNOT_EMALF ? KNOT_RCODE_FORMERR : KNOT_RCODE_NOTAUTH;
}

/* The client's serial from the IXFR request's authority SOA (RFC 1995
 * §3): the zone's own SOA, of the query's class. False when there is
 * none (FORMERR, as BIND and Knot: another zone's SOA was taken, its
 * serial read as the client's). */
static bool ixfr_serial(const knot_pkt_t *q, uint32_t *serial)
{
	const knot_pktsection_t *ns = knot_pkt_section(q, KNOT_AUTHORITY);
	if (ns->count < 1) {
		return false;
	}
	const knot_rrset_t *soa = knot_pkt_rr(ns, 0);
	if (soa->type != KNOT_RRTYPE_SOA || soa->rrs.count != 1 ||
	    soa->rclass != knot_pkt_qclass(q) ||
	    !knot_dname_is_case_equal(soa->owner, knot_pkt_qname(q))) {
		return false;
	}
	*serial = knot_soa_serial(soa->rrs.rdata);
	return true;
}

typedef struct {
	zc_acl_t acl;
	secondary_keys_t keys;
} zone_acl_t;

static int add_zone_entry(int64_t zone_id, records_secondary_kind_t kind,
                          const char *spec, void *ctx)
{
	(void)zone_id;
	zone_acl_t *za = ctx;
	char err[256];
	if (kind == RECORDS_SECONDARY_TRANSFER) {
		/* Checked when stored; one that no longer parses is skipped. */
		(void)secondary_acl_parse(spec, &za->acl, &za->keys, err,
		                          sizeof(err));
	}
	return 0;
}

/*
 * Who may transfer the zone (transfer.h, "Access"): NULL when the request
 * may, else why not. Reads the zone's own allow-transfer entries from the
 * records store when the server-wide rules do not allow it already.
 */
static const char *transfer_denied(xfr_worker_t *w, const edge_zone_t *zone,
                                   const dns_tsig_t *tsig,
                                   const records_tsig_key_t *key,
                                   const struct sockaddr_storage *from)
{
	if (tsig->present) {
		if ((key->zone_id == (int64_t)zone->zone_id && key->transfer) ||
		    xfr_live_allows_key(w, key->name)) {
			return NULL;
		}
	} else if (xfr_live_allows(w, from)) {
		return NULL;
	}
	zone_acl_t *za = calloc(1, sizeof(*za));
	if (za == NULL) {
		return "out of memory";
	}
	int ret = records_secondaries_foreach(w->rs, (int64_t)zone->zone_id,
	                                      add_zone_entry, za);
	bool ok = ret == ZC_EOK && (tsig->present ?
	          secondary_keys_has(&za->keys, key->name) :
	          zc_acl_match(&za->acl, from));
	free(za);
	if (ok) {
		return NULL;
	}
	return tsig->present ? "key may not transfer the zone" :
	       "unsigned, not in allow-transfer";
}

/*
 * A signed zone is served from the signed view (sigview.h) at the view's
 * serial: req->zone becomes the view's zone, and the view's read
 * transaction stays open until view_end(). ZC_ENOZONE while the view has
 * not built the zone yet.
 */
static int view_begin(xfr_worker_t *w, xfr_req_t *req)
{
	int ret = w->view == NULL ?
	          sigview_reader_open(w->cfg->data_dir, &w->view) : ZC_EOK;
	sigview_zone_t vz;
	if (ret == ZC_EOK) {
		ret = sigview_read_begin(w->view, (int64_t)req->zone.zone_id, &vz);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	req->view = w->view;
	req->zone.serial = vz.serial;
	req->zone.soa_ttl = vz.soa_ttl;
	req->zone.soa_len = vz.soa_len;
	memcpy(req->zone.soa, vz.soa, vz.soa_len);
	return ZC_EOK;
}

static void view_end(xfr_req_t *req)
{
	if (req->view != NULL) {
		sigview_read_end(req->view);
		req->view = NULL;
	}
}

/* Whether the edge holds signing keys for the zone. */
static bool is_signed(xfr_worker_t *w, const edge_zone_t *zone)
{
	const uint8_t *raw;
	size_t len;
	return edge_keys_get(&w->txn, zone->zone_id, &raw, &len) == ZC_EOK;
}

/* Runs the transfer proper and logs it. */
static void serve(xfr_worker_t *w, const knot_pkt_t *q, const xfr_opt_t *opt,
                  dns_tsig_t *tsig, server_reply_t *reply, xfr_req_t *req,
                  xfr_log_t *lg)
{
	int64_t start = now_ms();
	xfr_out_t out;
	int ret = xfr_out_init(&out, q, opt, tsig, reply, w->buf, w->stop);
	if (ret != KNOT_EOK) {
		send_error(w, q, opt, tsig, reply, KNOT_RCODE_SERVFAIL, 0);
		zc_count(ZC_COUNT_XFR_FAILED);
		zc_error("transfer: zone %s, peer %s, %s: %s", lg->zone,
		         lg->peer, lg->kind, zc_strerror(ret));
		return;
	}
	req->out = &out;
	req->rs = w->rs;
	req->arena = &w->node_arena;
	bool ixfr = knot_pkt_qtype(q) == KNOT_RRTYPE_IXFR;
	ret = ixfr ? ixfr_run(req) : axfr_run(req);
	if (out.error == ZC_EOK && ret != ZC_EOK) {
		out.error = ret;
	}
	uint64_t rrs = out.rrs;
	ret = xfr_out_finish(&out);
	uint64_t messages = out.messages;
	long long ms = (long long)(now_ms() - start);
	zc_count(ret != ZC_EOK ? ZC_COUNT_XFR_FAILED : !ixfr ? ZC_COUNT_XFR_AXFR :
	         req->up_to_date ? ZC_COUNT_XFR_UP_TO_DATE :
	         req->axfr_form ? ZC_COUNT_XFR_IXFR_AXFR : ZC_COUNT_XFR_IXFR);
	char result[96] = "done";
	if (ret != ZC_EOK) {
		snprintf(result, sizeof(result), "failed: %s", zc_strerror(ret));
	}
	transfer_activity_transfer(req->zone.apex, lg->from, lg->kind,
	                           req->zone.serial, result);
	if (ret != ZC_EOK) {
		zc_warn("transfer: zone %s, peer %s, %s failed after %llu "
		        "messages: %s", lg->zone, lg->peer, lg->kind,
		        (unsigned long long)messages, zc_strerror(ret));
	} else if (ixfr) {
		zc_info("transfer: zone %s, peer %s, IXFR serial %u -> %u%s, "
		        "%llu RRs, %llu messages, %lld ms", lg->zone, lg->peer,
		        req->client_serial, req->zone.serial,
		        req->up_to_date ? " (up to date)" :
		        req->axfr_form ? " (AXFR form)" : "",
		        (unsigned long long)rrs, (unsigned long long)messages, ms);
	} else {
		zc_info("transfer: zone %s, peer %s, AXFR serial %u, %llu RRs, "
		        "%llu messages, %lld ms", lg->zone, lg->peer,
		        req->zone.serial, (unsigned long long)rrs,
		        (unsigned long long)messages, ms);
	}
}

/* The audit line of a transfer refused for its access (common/audit.h;
 * TSIG failures have theirs from dns_tsig_log_refusal()); served: the
 * zone is ours, so the refusal is noted in its activity too (anything
 * else would let anyone fill that table with names). */
static void audit_refused(const xfr_log_t *lg, const knot_pkt_t *q,
                          const char *why, bool served)
{
	char key[KNOT_DNAME_TXT_MAXLEN + 1] = "-";
	if (q->tsig_rr != NULL) {
		knot_dname_to_str(key, q->tsig_rr->owner, sizeof(key));
	}
	zc_audit_t a;
	zc_audit_begin(&a, "transfer", "refused");
	zc_audit_str(&a, "zone", lg->zone);
	zc_audit_fixed(&a, "kind", lg->kind);
	zc_audit_str(&a, "key", key);
	zc_audit_fixed(&a, "client", lg->peer);
	zc_audit_str(&a, "reason", why);
	zc_audit_end(&a);
	if (served) {
		char result[96];
		snprintf(result, sizeof(result), "refused: %s", why);
		transfer_activity_transfer(knot_pkt_qname(q), lg->from,
		                           lg->kind, 0, result);
	}
}

/*
 * Checks a request and answers it: FORMERR for a malformed one, NOTAUTH
 * for a TSIG failure (RFC 8945 §5.2) or a zone we do not serve, REFUSED
 * without access, else the transfer. Ends in one server_reply_send().
 */
static void handle_transfer(xfr_worker_t *w, uint8_t *msg, size_t len,
                            const struct sockaddr_storage *from,
                            server_reply_t *reply)
{
	zc_arena_reset(&w->arena);
	knot_mm_t *mm = zc_arena_mm(&w->arena);
	knot_pkt_t *q = knot_pkt_new(msg, (uint16_t)len, mm);
	if (q == NULL || knot_pkt_parse(q, 0) != KNOT_EOK ||
	    knot_wire_get_qdcount(msg) != 1) {
		xfr_send_header_error(reply, msg, len, KNOT_RCODE_FORMERR);
		return;
	}
	xfr_log_t lg = { .kind = knot_pkt_qtype(q) == KNOT_RRTYPE_IXFR ?
	                 "IXFR" : "AXFR", .from = from };
	zc_addr_text(from, lg.peer, sizeof(lg.peer));
	knot_dname_to_str(lg.zone, knot_pkt_qname(q), sizeof(lg.zone));
	xfr_opt_t opt;
	xfr_opt_prepare(&opt, q, server_reply_edns(reply), from);
	if (opt.bad_version || opt.bad_cookie) {
		/* Before anything else and unsigned, as BIND and knotd
		 * answer them (RFC 6891 §6.1.3, RFC 7873 §5.2.2). */
		zc_info("transfer: zone %s, peer %s, %s refused (%s)", lg.zone,
		        lg.peer, lg.kind, opt.bad_version ? "EDNS version not "
		        "0" : "malformed COOKIE option");
		zc_count(ZC_COUNT_XFR_FAILED);
		send_error(w, q, &opt, NULL, reply, opt.bad_version ?
		           KNOT_RCODE_BADVERS : KNOT_RCODE_FORMERR, 0);
		return;
	}
	dns_tsig_t tsig;
	records_tsig_key_t key;
	memset(&key, 0, sizeof(key));
	int bad = check_tsig(w, q, &tsig, &key);
	if (bad != ZC_EOK) {
		dns_tsig_log_refusal(lg.kind[0] == 'I' ? "IXFR" : "AXFR", q,
		                     &tsig, bad, key.algorithm[0] != '\0',
		                     key.algorithm, from);
		zc_count(ZC_COUNT_XFR_NOTAUTH);
		send_error(w, q, &opt, &tsig, reply, tsig_rcode(bad), 0);
		return;
	}
	xfr_req_t req = { .txn = &w->txn };
	uint8_t rcode = KNOT_RCODE_NOERROR;
	const char *why = NULL;
	int ret = edge_txn_begin_read(w->cfg->edge, &w->txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_get(&w->txn, knot_pkt_qname(q), &req.zone);
	}
	if (knot_pkt_qclass(q) != KNOT_CLASS_IN) {
		rcode = KNOT_RCODE_REFUSED, why = "class not IN";
	} else if (ret == ZC_ENOZONE) {
		rcode = KNOT_RCODE_NOTAUTH, why = "not a zone served here";
	} else if (ret != ZC_EOK) {
		rcode = KNOT_RCODE_SERVFAIL, why = zc_strerror(ret);
	} else if ((why = transfer_denied(w, &req.zone, &tsig, &key,
	                                  from)) != NULL) {
		rcode = KNOT_RCODE_REFUSED;
	} else if (knot_pkt_qtype(q) == KNOT_RRTYPE_IXFR &&
	           !ixfr_serial(q, &req.client_serial)) {
		rcode = KNOT_RCODE_FORMERR, why = "IXFR without the zone's SOA";
	}
	if (why == NULL && is_signed(w, &req.zone) &&
	    (ret = view_begin(w, &req)) != ZC_EOK) {
		rcode = KNOT_RCODE_SERVFAIL;
		why = ret == ZC_ENOZONE ? "signed zone, its signed view not "
		      "built yet" : zc_strerror(ret);
	}
	if (why != NULL && (rcode == KNOT_RCODE_REFUSED ||
	                    rcode == KNOT_RCODE_NOTAUTH)) {
		/* Noted in the zone's activity only when the zone is ours. */
		audit_refused(&lg, q, why, rcode == KNOT_RCODE_REFUSED);
	} else if (why != NULL) {
		zc_info("transfer: zone %s, peer %s, %s refused (%s)", lg.zone,
		        lg.peer, lg.kind, why);
	}
	if (why != NULL) {
		zc_count(rcode == KNOT_RCODE_REFUSED ? ZC_COUNT_XFR_REFUSED :
		         rcode == KNOT_RCODE_NOTAUTH ? ZC_COUNT_XFR_NOTAUTH :
		         ZC_COUNT_XFR_FAILED);
		send_error(w, q, &opt, &tsig, reply, rcode, 0);
	} else {
		xfr_opt_zone(&opt, req.zone.soa, req.zone.soa_len);
		serve(w, q, &opt, &tsig, reply, &req, &lg);
	}
	view_end(&req);
	edge_txn_reset(&w->txn);
}

/*
 * A signed query (not a transfer), e.g. a secondary's SOA check with its
 * transfer key: any key we hold may sign queries; the answer is the one
 * answer_message() gives, signed (RFC 8945 §5.3).
 */
static void handle_query(xfr_worker_t *w, const uint8_t *msg, size_t len,
                         const struct sockaddr_storage *from, bool tcp,
                         server_reply_t *reply)
{
	zc_arena_reset(&w->arena);
	uint8_t *copy = zc_arena_alloc(&w->arena, len);
	knot_pkt_t *q = copy ? knot_pkt_new(copy, (uint16_t)len,
	                                    zc_arena_mm(&w->arena)) : NULL;
	if (q == NULL) {
		xfr_send_header_error(reply, msg, len, KNOT_RCODE_SERVFAIL);
		return;
	}
	memcpy(copy, msg, len);
	dns_tsig_t tsig;
	records_tsig_key_t key;
	memset(&key, 0, sizeof(key));
	if (knot_pkt_parse(q, 0) != KNOT_EOK) {
		xfr_send_header_error(reply, msg, len, KNOT_RCODE_FORMERR);
		return;
	}
	const server_edns_t *edns = server_reply_edns(reply);
	int bad = check_tsig(w, q, &tsig, &key);
	if (bad != ZC_EOK) {
		dns_tsig_log_refusal("query", q, &tsig, bad,
		                     key.algorithm[0] != '\0', key.algorithm,
		                     from);
		xfr_opt_t opt;
		xfr_opt_prepare(&opt, q, edns, from);
		send_error(w, q, &opt, &tsig, reply, tsig_rcode(bad),
		           tcp ? 0 : udp_payload(q));
		return;
	}
	/* Answered as the server's workers answer: NSID and DNS Cookies
	 * under the settings of the one that took the message. */
	w->answer.nsid = edns->nsid[0] != '\0' ? edns->nsid : NULL;
	w->answer.nsid_len = strlen(edns->nsid);
	w->answer.cookie_secret = edns->cookie_secret;
	w->answer.client = from;
	/* Over UDP the requester's payload holds for the answer with its
	 * TSIG (RFC 8945 §5.3, RFC 6891 §6.2.5): the room for it is kept
	 * (it was not: answers went past 512, and near 1,232 unsigned). */
	w->answer.udp_reserve = tsig.present ?
	                        (uint16_t)knot_tsig_wire_maxsize(&tsig.key) : 0;
	size_t max = XFR_MSG_MAX;
	size_t rlen = answer_message(&w->answer, msg, len, w->buf,
	                             max - DNS_TSIG_ROOM, tcp);
	/* Borrowed from the reply, which the send below frees. */
	w->answer.nsid = NULL;
	w->answer.nsid_len = 0;
	w->answer.cookie_secret = NULL;
	w->answer.client = NULL;
	w->answer.udp_reserve = 0;
	if (rlen == 0) {
		server_reply_send(reply, NULL, 0);
		return;
	}
	if (dns_tsig_sign(&tsig, w->buf, &rlen, max) != ZC_EOK) {
		zc_warn("transfer: cannot sign a query response");
	}
	server_reply_send(reply, w->buf, rlen);
}

void xfr_worker_init(xfr_worker_t *w, const transfer_config_t *cfg,
                     const atomic_bool *stop)
{
	memset(w, 0, offsetof(xfr_worker_t, buf));
	w->cfg = cfg;
	w->stop = stop;
	zc_arena_init(&w->arena, 16 * 1024);
	zc_arena_init(&w->node_arena, 16 * 1024);
	answer_ctx_init(&w->answer, cfg->edge, NULL, 256);
}

void xfr_worker_deinit(xfr_worker_t *w)
{
	edge_txn_abort(&w->txn);
	records_close(w->rs);
	w->rs = NULL;
	sigview_reader_close(w->view);
	w->view = NULL;
	zc_arena_deinit(&w->arena);
	zc_arena_deinit(&w->node_arena);
	answer_ctx_deinit(&w->answer);
}

void xfr_worker_serve(xfr_worker_t *w, uint8_t *msg, size_t len,
                      const struct sockaddr_storage *from, bool query,
                      bool tcp, server_reply_t *reply)
{
	int ret = w->rs == NULL ? records_open(&w->rs, w->cfg->data_dir) :
	          ZC_EOK;
	if (ret != ZC_EOK) {
		zc_error("transfer: cannot open the records store: %s",
		         zc_strerror(ret));
		xfr_send_header_error(reply, msg, len, KNOT_RCODE_SERVFAIL);
	} else if (query) {
		handle_query(w, msg, len, from, tcp, reply);
	} else {
		handle_transfer(w, msg, len, from, reply);
	}
}

