/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TCP worker (RFC 7766): an epoll loop over the worker's listening socket
 * and its connections. Messages are length-framed (RFC 1035 §4.2.2);
 * pipelined queries are answered in order; a connection idle for longer
 * than the timeout is closed (RFC 7766 §6.2.3); past the connection limit,
 * new connections are closed at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "server/worker.h"

#define MSG_MAX 65535
#define IN_MAX (2 + MSG_MAX)

typedef struct conn {
	int fd;
	int64_t last_ms;
	size_t in_len;
	uint8_t *out;        /* Unsent response bytes (NULL when none). */
	size_t out_len;
	size_t out_pos;
	struct conn *prev, *next;
	uint8_t in[IN_MAX];
} conn_t;

typedef struct {
	worker_t *w;
	int ep;
	conn_t *head;        /* Most recently active first. */
	unsigned count;
	uint8_t resp[2 + MSG_MAX];
} tcp_t;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void unlink_conn(tcp_t *t, conn_t *c)
{
	if (c->prev) {
		c->prev->next = c->next;
	} else {
		t->head = c->next;
	}
	if (c->next) {
		c->next->prev = c->prev;
	}
	c->prev = c->next = NULL;
}

static void touch(tcp_t *t, conn_t *c)
{
	c->last_ms = now_ms();
	unlink_conn(t, c);
	c->next = t->head;
	if (t->head) {
		t->head->prev = c;
	}
	t->head = c;
}

static void close_conn(tcp_t *t, conn_t *c)
{
	unlink_conn(t, c);
	epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	free(c);
	t->count--;
}

static void accept_all(tcp_t *t)
{
	for (;;) {
		int fd = accept4(t->w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			return;
		}
		if (t->count >= t->w->cfg->tcp_max_clients) {
			close(fd); /* Full: the client retries elsewhere/later. */
			continue;
		}
		conn_t *c = malloc(sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		memset(c, 0, offsetof(conn_t, in));
		c->fd = fd;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			free(c);
			continue;
		}
		t->count++;
		touch(t, c);
	}
}

/* Sends what is queued; returns 0 when all is out, 1 if blocked, -1. */
static int flush(tcp_t *t, conn_t *c)
{
	while (c->out != NULL && c->out_pos < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_pos, c->out_len - c->out_pos,
		                 MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
			epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
			return 1;
		}
		if (n <= 0) {
			return -1;
		}
		c->out_pos += n;
	}
	free(c->out);
	c->out = NULL;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
	return 0;
}

/* Sends one framed response, queueing what the socket does not take. */
static int send_response(tcp_t *t, conn_t *c, size_t len)
{
	t->resp[0] = (uint8_t)(len >> 8);
	t->resp[1] = (uint8_t)len;
	size_t total = 2 + len;
	ssize_t n = send(c->fd, t->resp, total, MSG_NOSIGNAL);
	if (n == (ssize_t)total) {
		return 0;
	}
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
		return -1;
	}
	size_t done = n > 0 ? (size_t)n : 0;
	c->out = malloc(total - done);
	if (c->out == NULL) {
		return -1;
	}
	memcpy(c->out, t->resp + done, total - done);
	c->out_len = total - done;
	c->out_pos = 0;
	return flush(t, c);
}

/* Answers every complete message in the input buffer, in order. Stops
 * early while a response is still being sent. */
static int process(tcp_t *t, conn_t *c)
{
	size_t pos = 0;
	int ret = 0;
	while (ret == 0 && c->in_len - pos >= 2) {
		size_t mlen = (size_t)c->in[pos] << 8 | c->in[pos + 1];
		if (c->in_len - pos < 2 + mlen) {
			break;
		}
		size_t len = answer_message(&t->w->answer, c->in + pos + 2, mlen,
		                            t->resp + 2, MSG_MAX, true);
		pos += 2 + mlen;
		if (len == 0) {
			ret = -1; /* Garbage on a stream: close it. */
			break;
		}
		ret = send_response(t, c, len);
	}
	memmove(c->in, c->in + pos, c->in_len - pos);
	c->in_len -= pos;
	return ret < 0 ? -1 : 0;
}

static void on_event(tcp_t *t, conn_t *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		int r = flush(t, c);
		if (r < 0 || (r == 0 && process(t, c) < 0)) {
			close_conn(t, c);
		}
		return;
	}
	ssize_t n = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		close_conn(t, c);
		return;
	}
	if (n < 0) {
		return;
	}
	c->in_len += n;
	touch(t, c);
	if (c->out == NULL && process(t, c) < 0) {
		close_conn(t, c);
	}
}

static void expire_idle(tcp_t *t)
{
	int64_t limit = now_ms() - t->w->cfg->tcp_idle_timeout_ms;
	conn_t *c = t->head;
	while (c != NULL && c->next != NULL) {
		c = c->next;
	}
	/* The list is ordered by activity: expire from the tail. */
	while (c != NULL && c->last_ms < limit) {
		conn_t *prev = c->prev;
		close_conn(t, c);
		c = prev;
	}
}

void *server_tcp_worker(void *arg)
{
	worker_t *w = arg;
	tcp_t *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		return NULL;
	}
	t->w = w;
	t->ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(t->ep, EPOLL_CTL_ADD, w->fd, &ev);
	struct epoll_event stop = { .events = EPOLLIN, .data.ptr = &t->ep };
	epoll_ctl(t->ep, EPOLL_CTL_ADD, w->stop_fd, &stop);
	bool running = true;
	while (running) {
		struct epoll_event evs[64];
		int n = epoll_wait(t->ep, evs, 64, 500);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL) {
				accept_all(t);
			} else if (evs[i].data.ptr == &t->ep) {
				running = false;
			} else {
				on_event(t, evs[i].data.ptr, evs[i].events);
			}
		}
		expire_idle(t);
	}
	while (t->head != NULL) {
		close_conn(t, t->head);
	}
	close(t->ep);
	free(t);
	return NULL;
}
