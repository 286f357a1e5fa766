/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * UDP worker: reads a batch of queries with recvmmsg, answers each into a
 * preallocated buffer, sends the batch with sendmmsg. No allocation per
 * query: buffers live as long as the worker. Responses pass the response
 * rate limiter (rrl.h) unless the query proved its address with a cookie.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/wait.h"
#include "server/worker.h"

#define BATCH 32
#define QUERY_MAX 4096   /* Larger UDP queries are not DNS queries we serve. */
#define RESP_MAX 1500    /* Above ANSWER_EDNS_PAYLOAD. */

typedef struct {
	struct mmsghdr in[BATCH];
	struct mmsghdr out[BATCH];
	struct iovec in_iov[BATCH];
	struct iovec out_iov[BATCH];
	struct sockaddr_storage addr[BATCH];
	uint8_t query[BATCH][QUERY_MAX];
	uint8_t resp[BATCH][RESP_MAX];
} udp_buffers_t;

static void prepare_receive(udp_buffers_t *b)
{
	for (int i = 0; i < BATCH; i++) {
		b->in_iov[i].iov_base = b->query[i];
		b->in_iov[i].iov_len = QUERY_MAX;
		memset(&b->in[i].msg_hdr, 0, sizeof(b->in[i].msg_hdr));
		b->in[i].msg_hdr.msg_iov = &b->in_iov[i];
		b->in[i].msg_hdr.msg_iovlen = 1;
		b->in[i].msg_hdr.msg_name = &b->addr[i];
		b->in[i].msg_hdr.msg_namelen = sizeof(b->addr[i]);
	}
}

/* Answers the received batch; returns how many responses to send. */
static int answer_batch(worker_t *w, udp_buffers_t *b, int received)
{
	int out = 0;
	rrl_t *rrl = w->live.rrl.rate > 0 ? w->live.rrl_table : NULL;
	uint64_t now_us = rrl != NULL ? rrl_now_us() : 0;
	uint64_t since = zc_clock_ns(); /* Answer time (stats.h). */
	for (int i = 0; i < received; i++) {
		if (b->in[i].msg_hdr.msg_flags & MSG_TRUNC) {
			continue; /* Oversized datagram: not a query. */
		}
		message_kind_t kind = server_message_kind(b->query[i],
		                                          b->in[i].msg_len, false,
		                                          w->hooks);
		if (kind != MESSAGE_QUERY) {
			server_reply_t *r = server_reply_udp(w->fd, &b->addr[i],
			                                     b->in[i].msg_hdr.msg_namelen);
			const server_hooks_t *h = w->hooks;
			if (r != NULL) {
				server_reply_set_edns(r, w->answer.nsid,
				                      w->answer.cookie_secret);
			}
			since = server_stats_deferral(w->stats, kind == MESSAGE_UPDATE ?
			                              SERVER_STATS_UPDATE :
			                              SERVER_STATS_SIGNED);
			if (r != NULL && kind == MESSAGE_UPDATE) {
				h->update(h->update_ctx, b->query[i], b->in[i].msg_len,
				          &b->addr[i], false, r);
			} else if (r != NULL) {
				h->signed_query(h->signed_ctx, b->query[i],
				                b->in[i].msg_len, &b->addr[i], false, r);
			}
			continue;
		}
		w->answer.client = &b->addr[i];
		size_t len = answer_message(&w->answer, b->query[i], b->in[i].msg_len,
		                            b->resp[out], RESP_MAX, false);
		rrl_verdict_t v = RRL_SEND;
		if (len > 0 && rrl != NULL && !w->answer.cookie_valid) {
			v = rrl_check(rrl, &w->live.rrl, &b->addr[i], b->resp[out],
			              len, now_us);
			if (v != RRL_SEND) {
				server_stats_rrl(w->stats, v == RRL_DROP);
			}
			if (v == RRL_SLIP) {
				len = rrl_slip(b->resp[out], len); /* Question kept. */
			}
		}
		/* Counted with its type and RCODE, timed RRL included. */
		since = server_stats_answer(w->stats, b->resp[out], len,
		                            w->answer.rcode,
		                            w->answer.cookie_result, since);
		if (len == 0 || v == RRL_DROP) {
			continue;
		}
		b->out_iov[out].iov_base = b->resp[out];
		b->out_iov[out].iov_len = len;
		memset(&b->out[out].msg_hdr, 0, sizeof(b->out[out].msg_hdr));
		b->out[out].msg_hdr.msg_iov = &b->out_iov[out];
		b->out[out].msg_hdr.msg_iovlen = 1;
		b->out[out].msg_hdr.msg_name = &b->addr[i];
		b->out[out].msg_hdr.msg_namelen = b->in[i].msg_hdr.msg_namelen;
		out++;
	}
	return out;
}

void *server_udp_worker(void *arg)
{
	worker_t *w = arg;
	pthread_setname_np(pthread_self(), "zc-udp");
	udp_buffers_t *b = malloc(sizeof(*b));
	if (b == NULL) {
		zc_error("udp worker: out of memory");
		return NULL;
	}
	while (zc_wait_readable(w->fd, w->stop_fd)) {
		prepare_receive(b);
		int n = recvmmsg(w->fd, b->in, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			continue;
		}
		server_worker_refresh(w); /* A reload's settings, if any. */
		int out = answer_batch(w, b, n);
		int sent = 0;
		while (sent < out) {
			int r = sendmmsg(w->fd, b->out + sent, out - sent, 0);
			if (r <= 0) {
				if (r < 0 && errno == EINTR) {
					continue;
				}
				break; /* Drop what the kernel will not take. */
			}
			sent += r;
		}
	}
	free(b);
	return NULL;
}
