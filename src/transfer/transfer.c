/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Transfer requests: the pool of transfer threads, request checks (parse,
 * TSIG, zone, access) and the log line of each transfer. See transfer.h
 * for the design; axfr.c and ixfr.c write the answers through out.c.
 *
 * Locking: transfer_t.lock guards queue, active and stopping; threads
 * wait on cond for jobs. Each thread's xfr_worker_t (records connection,
 * arenas, buffer) is its own; xfr_worker_serve() is the whole of what a
 * thread does with a job, so the fuzz target calls it directly.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>

#include "common/audit.h"
#include "common/counters.h"
#include "common/error.h"
#include "common/log.h"
#include "dns/reply.h"
#include "dns/tsig_log.h"
#include "server/answer.h"
#include "transfer/activity.h"
#include "transfer/internal.h"
#include "transfer/transfer.h"

/* A request waiting for a thread; owns its copy of the message. */
typedef struct job {
	struct job *next;
	bool query;              /* A signed query, not a transfer. */
	bool tcp;
	server_reply_t *reply;
	struct sockaddr_storage from;
	size_t len;
	uint8_t msg[];
} job_t;

typedef struct {
	transfer_t *t;
	pthread_t thread;
	bool started;
	xfr_worker_t w;
} xfr_thread_t;

struct transfer {
	transfer_config_t cfg;
	xfr_live_t live;         /* allow-transfer, fudge (reloads). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	job_t *head, *tail;      /* Queued jobs (lock). */
	unsigned active;         /* Queued plus running (lock). */
	bool stopping;           /* (lock) */
	atomic_bool stop;        /* Read by running transfers. */
	xfr_thread_t *threads;
	unsigned thread_count;
};

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
static void send_header_error(server_reply_t *reply, const uint8_t *msg,
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

/* Answers the parsed request with an rcode (and the TSIG outcome). */
static void send_error(xfr_worker_t *w, const knot_pkt_t *q,
                       dns_tsig_t *tsig, server_reply_t *reply,
                       uint8_t rcode)
{
	knot_pkt_t *r = knot_pkt_new(w->buf, XFR_MSG_MAX - DNS_TSIG_ROOM,
	                             zc_arena_mm(&w->arena));
	if (r == NULL || knot_pkt_init_response(r, q) != KNOT_EOK) {
		send_header_error(reply, q->wire, q->size, rcode);
		return;
	}
	knot_wire_set_rcode(r->wire, rcode);
	size_t len = r->size;
	if (dns_tsig_sign(tsig, w->buf, &len, XFR_MSG_MAX) != ZC_EOK) {
		len = r->size; /* Unsigned rather than nothing. */
	}
	server_reply_send(reply, w->buf, len);
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
 * §3). False when there is none. */
static bool ixfr_serial(const knot_pkt_t *q, uint32_t *serial)
{
	const knot_pktsection_t *ns = knot_pkt_section(q, KNOT_AUTHORITY);
	if (ns->count < 1) {
		return false;
	}
	const knot_rrset_t *soa = knot_pkt_rr(ns, 0);
	if (soa->type != KNOT_RRTYPE_SOA || soa->rrs.count != 1) {
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
static void serve(xfr_worker_t *w, const knot_pkt_t *q, dns_tsig_t *tsig,
                  server_reply_t *reply, xfr_req_t *req, xfr_log_t *lg)
{
	int64_t start = now_ms();
	xfr_out_t out;
	int ret = xfr_out_init(&out, q, tsig, reply, w->buf, w->stop);
	if (ret != KNOT_EOK) {
		send_error(w, q, tsig, reply, KNOT_RCODE_SERVFAIL);
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
	zc_audit_str(&a, "kind", lg->kind);
	zc_audit_str(&a, "key", key);
	zc_audit_str(&a, "client", lg->peer);
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
		send_header_error(reply, msg, len, KNOT_RCODE_FORMERR);
		return;
	}
	xfr_log_t lg = { .kind = knot_pkt_qtype(q) == KNOT_RRTYPE_IXFR ?
	                 "IXFR" : "AXFR", .from = from };
	zc_addr_text(from, lg.peer, sizeof(lg.peer));
	knot_dname_to_str(lg.zone, knot_pkt_qname(q), sizeof(lg.zone));
	dns_tsig_t tsig;
	records_tsig_key_t key;
	memset(&key, 0, sizeof(key));
	int bad = check_tsig(w, q, &tsig, &key);
	if (bad != ZC_EOK) {
		dns_tsig_log_refusal(lg.kind[0] == 'I' ? "IXFR" : "AXFR", q,
		                     &tsig, bad, key.algorithm[0] != '\0',
		                     key.algorithm, from);
		zc_count(ZC_COUNT_XFR_NOTAUTH);
		send_error(w, q, &tsig, reply, tsig_rcode(bad));
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
		rcode = KNOT_RCODE_FORMERR, why = "IXFR without an SOA";
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
		send_error(w, q, &tsig, reply, rcode);
	} else {
		serve(w, q, &tsig, reply, &req, &lg);
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
		send_header_error(reply, msg, len, KNOT_RCODE_SERVFAIL);
		return;
	}
	memcpy(copy, msg, len);
	dns_tsig_t tsig;
	records_tsig_key_t key;
	memset(&key, 0, sizeof(key));
	if (knot_pkt_parse(q, 0) != KNOT_EOK) {
		send_header_error(reply, msg, len, KNOT_RCODE_FORMERR);
		return;
	}
	int bad = check_tsig(w, q, &tsig, &key);
	if (bad != ZC_EOK) {
		dns_tsig_log_refusal("query", q, &tsig, bad,
		                     key.algorithm[0] != '\0', key.algorithm,
		                     from);
		send_error(w, q, &tsig, reply, tsig_rcode(bad));
		return;
	}
	size_t max = tcp ? XFR_MSG_MAX : 1232;
	size_t rlen = answer_message(&w->answer, msg, len, w->buf,
	                             max - DNS_TSIG_ROOM, tcp);
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
		send_header_error(reply, msg, len, KNOT_RCODE_SERVFAIL);
	} else if (query) {
		handle_query(w, msg, len, from, tcp, reply);
	} else {
		handle_transfer(w, msg, len, from, reply);
	}
}

/* Takes the next job, or NULL when stopping. */
static job_t *next_job(transfer_t *t)
{
	pthread_mutex_lock(&t->lock);
	while (t->head == NULL && !t->stopping) {
		pthread_cond_wait(&t->cond, &t->lock);
	}
	job_t *job = t->head;
	if (job != NULL && !t->stopping) {
		t->head = job->next;
		if (t->head == NULL) {
			t->tail = NULL;
		}
	} else {
		job = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return job;
}

static void *thread_main(void *arg)
{
	xfr_thread_t *th = arg;
	transfer_t *t = th->t;
	pthread_setname_np(pthread_self(), "zc-xfr");
	job_t *job;
	while ((job = next_job(t)) != NULL) {
		xfr_worker_serve(&th->w, job->msg, job->len, &job->from,
		                 job->query, job->tcp, job->reply);
		free(job);
		pthread_mutex_lock(&t->lock);
		t->active--;
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

int transfer_start(const transfer_config_t *cfg, transfer_t **out)
{
	if (cfg == NULL || cfg->data_dir == NULL || cfg->edge == NULL ||
	    out == NULL) {
		return ZC_EUSAGE;
	}
	transfer_t *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		return KNOT_ENOMEM;
	}
	t->cfg = *cfg;
	if (t->cfg.max_concurrent == 0) {
		t->cfg.max_concurrent = TRANSFER_DEFAULT_CONCURRENT;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	xfr_live_init(&t->live, cfg);
	t->threads = calloc(t->cfg.max_concurrent, sizeof(*t->threads));
	if (t->threads == NULL) {
		transfer_free(t);
		return KNOT_ENOMEM;
	}
	t->thread_count = t->cfg.max_concurrent;
	for (unsigned i = 0; i < t->thread_count; i++) {
		xfr_thread_t *th = &t->threads[i];
		th->t = t;
		xfr_worker_init(&th->w, &t->cfg, &t->stop);
		th->w.live = &t->live;
		int ret = pthread_create(&th->thread, NULL, thread_main, th);
		if (ret != 0) {
			transfer_free(t);
			return -ret;
		}
		th->started = true;
	}
	*out = t;
	return ZC_EOK;
}

static void enqueue(transfer_t *t, const uint8_t *msg, size_t len,
                    const struct sockaddr_storage *from, bool query,
                    bool tcp, server_reply_t *reply)
{
	job_t *job = malloc(sizeof(*job) + len);
	pthread_mutex_lock(&t->lock);
	bool take = job != NULL && !t->stopping &&
	            t->active < t->cfg.max_concurrent;
	if (take) {
		job->next = NULL;
		job->query = query;
		job->tcp = tcp;
		job->reply = reply;
		job->from = *from;
		job->len = len;
		memcpy(job->msg, msg, len);
		if (t->tail != NULL) {
			t->tail->next = job;
		} else {
			t->head = job;
		}
		t->tail = job;
		t->active++;
		pthread_cond_signal(&t->cond);
	}
	pthread_mutex_unlock(&t->lock);
	if (!take) {
		/* Busy or stopping: the client retries later. */
		free(job);
		zc_debug("transfer: busy, request refused");
		if (!query) {
			zc_count(ZC_COUNT_XFR_REFUSED);
		}
		send_header_error(reply, msg, len, KNOT_RCODE_REFUSED);
	}
}

void transfer_handle(void *ctx, const uint8_t *msg, size_t len,
                     const struct sockaddr_storage *from,
                     server_reply_t *reply)
{
	enqueue(ctx, msg, len, from, false, true, reply);
}

void transfer_signed_query(void *ctx, const uint8_t *msg, size_t len,
                           const struct sockaddr_storage *from, bool tcp,
                           server_reply_t *reply)
{
	enqueue(ctx, msg, len, from, true, tcp, reply);
}

void transfer_stop(transfer_t *t)
{
	if (t == NULL) {
		return;
	}
	pthread_mutex_lock(&t->lock);
	bool was = t->stopping;
	t->stopping = true;
	atomic_store(&t->stop, true);
	pthread_cond_broadcast(&t->cond);
	job_t *job = t->head;
	t->head = t->tail = NULL;
	pthread_mutex_unlock(&t->lock);
	while (job != NULL) {
		job_t *next = job->next;
		send_header_error(job->reply, job->msg, job->len,
		                  KNOT_RCODE_REFUSED);
		free(job);
		job = next;
	}
	if (was) {
		return;
	}
	for (unsigned i = 0; i < t->thread_count; i++) {
		xfr_thread_t *th = &t->threads[i];
		if (th->started) {
			pthread_join(th->thread, NULL);
			th->started = false;
		}
	}
}

void transfer_free(transfer_t *t)
{
	if (t == NULL) {
		return;
	}
	transfer_stop(t);
	for (unsigned i = 0; t->threads != NULL && i < t->thread_count; i++) {
		xfr_worker_deinit(&t->threads[i].w);
	}
	free(t->threads);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	xfr_live_deinit(&t->live);
	free(t);
}

int transfer_reconfigure(transfer_t *t, const zc_acl_t *allow_transfer,
                         const secondary_keys_t *allow_transfer_keys,
                         unsigned tsig_max_fudge)
{
	if (t == NULL) {
		return ZC_EUSAGE;
	}
	xfr_live_set(&t->live, allow_transfer, allow_transfer_keys,
	             tsig_max_fudge);
	return ZC_EOK;
}
