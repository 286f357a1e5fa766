/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Deferred replies: how UPDATE and transfer hooks answer from their own
 * threads. A UDP reply is one sendto() on the worker's socket (safe from
 * any thread). A TCP reply is queued to the connection's worker through
 * its mailbox (a locked list plus an eventfd in the worker's epoll set):
 * only the worker touches its connections, so replies stay in order and
 * a connection closed meanwhile is freed only when its last reply lands.
 * A transfer writes its messages straight to the socket while the worker
 * leaves the connection alone, and hands it back with its last message.
 * A sink reply gives every message to a function on the calling thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/tsig.h"
#include "server/worker.h"

struct server_reply {
	bool tcp;
	bool transfer;
	int fd;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	tcp_mailbox_t *mb;
	void *conn;
	unsigned timeout_ms;
	mail_t *spare;   /* TCP: a mail allocated up front, so that a reply can
	                  * always at least close its connection. */
	server_reply_fn sink;  /* Not NULL: messages go to it instead. */
	void *sink_ctx;
	server_edns_t edns;
	const atomic_bool *stop; /* Set: a write waiting for the client ends. */
};

int tcp_mailbox_init(tcp_mailbox_t *mb)
{
	memset(mb, 0, sizeof(*mb));
	mb->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (mb->efd < 0) {
		return -errno;
	}
	pthread_mutex_init(&mb->lock, NULL);
	return ZC_EOK;
}

void tcp_mailbox_deinit(tcp_mailbox_t *mb)
{
	mail_t *m = tcp_mailbox_take(mb);
	while (m != NULL) {
		mail_t *next = m->next;
		free(m->tsig);
		free(m);
		m = next;
	}
	close(mb->efd);
	pthread_mutex_destroy(&mb->lock);
}

mail_t *tcp_mailbox_take(tcp_mailbox_t *mb)
{
	uint64_t n;
	if (read(mb->efd, &n, sizeof(n)) < 0) {
		/* Nothing signalled: the list may still hold mail. */
	}
	pthread_mutex_lock(&mb->lock);
	mail_t *head = mb->head;
	mb->head = mb->tail = NULL;
	pthread_mutex_unlock(&mb->lock);
	return head;
}

server_reply_t *server_reply_udp(int fd, const struct sockaddr_storage *addr,
                                 socklen_t addr_len)
{
	server_reply_t *r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->fd = fd;
		memcpy(&r->addr, addr, addr_len);
		r->addr_len = addr_len;
	}
	return r;
}

server_reply_t *server_reply_tcp(tcp_mailbox_t *mb, void *conn, int fd,
                                 bool transfer, unsigned timeout_ms)
{
	server_reply_t *r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->tcp = true;
		r->transfer = transfer;
		r->mb = mb;
		r->conn = conn;
		r->fd = fd;
		r->timeout_ms = timeout_ms;
		r->spare = malloc(sizeof(mail_t));
		if (r->spare == NULL) {
			free(r);
			r = NULL;
		}
	}
	return r;
}

void server_reply_set_edns(server_reply_t *reply, const char *nsid,
                           const uint8_t *cookie_secret)
{
	snprintf(reply->edns.nsid, sizeof(reply->edns.nsid), "%s",
	         nsid != NULL ? nsid : "");
	reply->edns.cookie_secret = NULL;
	if (cookie_secret != NULL) {
		memcpy(reply->edns.secret, cookie_secret,
		       sizeof(reply->edns.secret));
		reply->edns.cookie_secret = reply->edns.secret;
	}
}

const server_edns_t *server_reply_edns(const server_reply_t *reply)
{
	return &reply->edns;
}

server_reply_t *server_reply_sink(server_reply_fn fn, void *ctx)
{
	server_reply_t *r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->sink = fn;
		r->sink_ctx = ctx;
	}
	return r;
}

/* Queues a mail to the connection's worker; frees r. */
static void post(server_reply_t *r, const uint8_t *msg, size_t len,
                 size_t room, const dns_tsig_t *tsig)
{
	mail_t *m = len > 0 ? malloc(sizeof(*m) + 2 + len + room) : NULL;
	dns_tsig_t *t = m != NULL && tsig != NULL ? malloc(sizeof(*t)) : NULL;
	if (m == NULL || (tsig != NULL && t == NULL)) {
		free(m);
		m = r->spare; /* No memory (or nothing to send): close. */
		r->spare = NULL;
		len = 0;
		room = 0;
		tsig = NULL;
	}
	free(r->spare);
	m->next = NULL;
	m->conn = r->conn;
	m->resume = r->transfer;
	m->tsig = NULL;
	m->len = len > 0 ? 2 + len : 0;
	m->cap = len > 0 ? 2 + len + room : 0;
	if (len > 0) {
		m->msg[0] = (uint8_t)(len >> 8);
		m->msg[1] = (uint8_t)len;
		memcpy(m->msg + 2, msg, len);
	}
	if (tsig != NULL) {
		dns_tsig_copy(t, tsig);
		m->tsig = t;
	}
	tcp_mailbox_t *mb = r->mb;
	pthread_mutex_lock(&mb->lock);
	if (mb->tail != NULL) {
		mb->tail->next = m;
	} else {
		mb->head = m;
	}
	mb->tail = m;
	pthread_mutex_unlock(&mb->lock);
	uint64_t one = 1;
	if (write(mb->efd, &one, sizeof(one)) < 0) {
		/* The counter is saturated: the worker is woken anyway. */
	}
	free(r);
}

const void *server_reply_stream(const server_reply_t *r)
{
	return r->tcp ? r->conn : NULL;
}

void server_reply_send(server_reply_t *r, const uint8_t *msg, size_t len)
{
	if (r->sink != NULL) {
		r->sink(r->sink_ctx, msg, len, true);
		free(r);
		return;
	}
	if (!r->tcp) {
		if (len > 0) {
			sendto(r->fd, msg, len, 0, (struct sockaddr *)&r->addr,
			       r->addr_len);
		}
		free(r);
		return;
	}
	post(r, msg, len, 0, NULL);
}

void server_reply_send_signed(server_reply_t *r, const uint8_t *msg,
                              size_t len, const dns_tsig_t *tsig)
{
	if (r->tcp && len > 0 && len + DNS_TSIG_ROOM <= UINT16_MAX) {
		post(r, msg, len, DNS_TSIG_ROOM, tsig);
		return;
	}
	uint8_t buf[UINT16_MAX];
	size_t n = len <= sizeof(buf) ? len : 0;
	memcpy(buf, msg, n);
	dns_tsig_t copy;
	dns_tsig_copy(&copy, tsig);
	if (n > 0 && dns_tsig_sign(&copy, buf, &n, sizeof(buf)) != ZC_EOK) {
		n = len; /* Unsigned rather than nothing. */
	}
	server_reply_send(r, buf, n);
}

void tcp_mail_sign(mail_t *m)
{
	if (m->tsig == NULL || m->len < 2) {
		return;
	}
	size_t len = m->len - 2;
	if (dns_tsig_sign(m->tsig, m->msg + 2, &len, m->cap - 2) == ZC_EOK) {
		m->len = 2 + len;
		m->msg[0] = (uint8_t)(len >> 8);
		m->msg[1] = (uint8_t)len;
	}
	free(m->tsig);
	m->tsig = NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How often a write waiting for a client looks at the stop flag. */
#define STOP_CHECK_MS 100

/* Writes all of buf on the non-blocking socket within the timeout. */
static int write_all(server_reply_t *r, const uint8_t *buf, size_t len)
{
	/* A client that takes nothing for the idle timeout is given up
	 * (-ETIMEDOUT, "Connection timed out" in the log; it said "database
	 * busy"); one that reads, however slowly, is not: the deadline
	 * moves with every byte taken (a secondary draining a 64 KiB message
	 * in more than 10 s lost its transfer). */
	int64_t deadline = now_ms() + r->timeout_ms;
	size_t done = 0;
	while (done < len) {
		if (r->stop != NULL && atomic_load(r->stop)) {
			/* Stopping: a client that reads nothing held the stop
			 * for the idle timeout (outside tester 37). */
			return -ECANCELED;
		}
		ssize_t n = send(r->fd, buf + done, len - done, MSG_NOSIGNAL);
		if (n > 0) {
			done += (size_t)n;
			deadline = now_ms() + r->timeout_ms;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			return -errno;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			return -ETIMEDOUT;
		}
		struct pollfd p = { .fd = r->fd, .events = POLLOUT };
		poll(&p, 1, r->stop != NULL && left > STOP_CHECK_MS ?
		     STOP_CHECK_MS : (int)left);
	}
	return ZC_EOK;
}

void server_reply_set_stop(server_reply_t *reply, const atomic_bool *stop)
{
	reply->stop = stop;
}

int server_reply_write(server_reply_t *r, const uint8_t *msg, size_t len)
{
	if (r->sink != NULL && len <= UINT16_MAX) {
		return r->sink(r->sink_ctx, msg, len, false);
	}
	if (!r->tcp || !r->transfer || len > UINT16_MAX) {
		return ZC_EUSAGE;
	}
	uint8_t frame[2] = { (uint8_t)(len >> 8), (uint8_t)len };
	int ret = write_all(r, frame, 2);
	return ret == ZC_EOK ? write_all(r, msg, len) : ret;
}
