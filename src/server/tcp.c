/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TCP worker (RFC 7766): an epoll loop over the worker's listening socket,
 * its connections and its mailbox. Messages are length-framed (RFC 1035
 * §4.2.2); queries are answered at once, UPDATEs and transfers go to the
 * hooks and their replies come back through the mailbox (reply.c), in
 * the order the hooks complete. Output the socket does not take is
 * buffered; while a connection has too much output or too many deferred
 * replies, its input waits. A connection idle for longer than the timeout
 * is closed (RFC 7766 §6.2.3); only whole messages and replies count as
 * activity, so a client dripping a message byte by byte is closed too.
 * Past the connection limits (per worker, and per client across workers:
 * conn_limit.h), new connections are closed at once.
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
#define OUT_BACKLOG (64 * 1024)  /* Stop reading above this much output. */

typedef struct conn {
	int fd;
	int64_t last_ms;
	struct sockaddr_storage peer;
	size_t in_len;
	uint8_t *out;        /* Unsent response bytes. */
	size_t out_len, out_pos, out_cap;
	unsigned pending;    /* Replies owed by hooks. */
	bool closed;         /* Socket closed; freed when pending reaches 0. */
	bool transfer;       /* A transfer owns the socket's output. */
	bool in_epoll;
	bool eof;            /* The client shut its side: replies still go. */
	uint32_t events;     /* What epoll watches now. */
	struct conn *prev, *next;
	uint8_t in[IN_MAX];
} conn_t;

typedef struct {
	worker_t *w;
	int ep;
	conn_t *head;        /* Open connections, most recently active first. */
	conn_t *tail;        /* The least recently active: expired first. */
	unsigned count;
	uint8_t resp[MSG_MAX];
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
	} else if (t->head == c) {
		t->head = c->next;
	}
	if (c->next) {
		c->next->prev = c->prev;
	} else if (t->tail == c) {
		t->tail = c->prev;
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
	} else {
		t->tail = c;
	}
	t->head = c;
}

static void set_events(tcp_t *t, conn_t *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };
	if (c->in_epoll) {
		if (c->events != events &&
		    epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0) {
			c->events = events;
		}
	} else if (epoll_ctl(t->ep, EPOLL_CTL_ADD, c->fd, &ev) == 0) {
		c->in_epoll = true;
		c->events = events;
	}
}

static void free_conn(conn_t *c)
{
	free(c->out);
	free(c);
}

/* Closes the socket; the struct lives on while hooks owe it replies. */
static void close_conn(tcp_t *t, conn_t *c)
{
	if (c->closed) {
		return;
	}
	unlink_conn(t, c);
	if (c->in_epoll) {
		epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
	}
	close(c->fd);
	conn_limit_release(t->w->conn_limit, &c->peer);
	c->closed = true;
	t->count--;
	if (c->pending == 0) {
		free_conn(c);
	}
}

static void accept_all(tcp_t *t)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(t->w->fd, (struct sockaddr *)&peer, &plen,
		                 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			return;
		}
		if (t->count >= t->w->live.tcp_max_clients ||
		    !conn_limit_acquire(t->w->conn_limit, &peer)) {
			close(fd); /* Full: the client retries elsewhere/later. */
			continue;
		}
		conn_t *c = malloc(sizeof(*c));
		if (c == NULL) {
			conn_limit_release(t->w->conn_limit, &peer);
			close(fd);
			continue;
		}
		memset(c, 0, offsetof(conn_t, in));
		c->fd = fd;
		c->peer = peer;
		set_events(t, c, EPOLLIN);
		if (!c->in_epoll) {
			conn_limit_release(t->w->conn_limit, &peer);
			close(fd);
			free(c);
			continue;
		}
		t->count++;
		touch(t, c);
	}
}

static size_t backlog(const conn_t *c)
{
	return c->out_len - c->out_pos;
}

/* Sends what is buffered; 0 when all is out, 1 if blocked, -1 on error. */
static int flush(conn_t *c)
{
	while (backlog(c) > 0) {
		ssize_t n = send(c->fd, c->out + c->out_pos, backlog(c),
		                 MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return 1;
		}
		if (n <= 0) {
			return -1;
		}
		c->out_pos += (size_t)n;
	}
	c->out_len = c->out_pos = 0;
	return 0;
}

/* Whether the input holds a whole message not handled yet. */
static bool message_waits(const conn_t *c)
{
	return c->in_len >= 2 &&
	       c->in_len >= 2 + ((size_t)c->in[0] << 8 | c->in[1]);
}

/*
 * What epoll watches, from the connection's state: input while there is
 * room for it and the client has not shut its side (epoll is level-
 * triggered: a full input buffer or an end of stream left watched would
 * wake the loop at once, for ever: a client that pipelined and stopped
 * reading held a worker at 100 % CPU), output while some is buffered.
 * A client that shut its side is closed once nothing is owed to it: its
 * whole messages answered, every deferred reply sent (an UPDATE then
 * half-close was applied but never answered).
 */
static void rearm(tcp_t *t, conn_t *c)
{
	if (c->closed || c->transfer) {
		return; /* A transfer owns the socket until it resumes. */
	}
	if (c->eof && c->pending == 0 && backlog(c) == 0 &&
	    !message_waits(c)) {
		close_conn(t, c);
		return;
	}
	uint32_t events = 0;
	if (!c->eof && c->in_len < IN_MAX) {
		events |= EPOLLIN;
	}
	if (backlog(c) > 0) {
		events |= EPOLLOUT;
	}
	set_events(t, c, events);
}

/* Appends bytes to the connection's output buffer. */
static int append(conn_t *c, const uint8_t *data, size_t len)
{
	if (c->out_pos > 0 && c->out_pos == c->out_len) {
		c->out_len = c->out_pos = 0;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + len) {
			cap *= 2;
		}
		uint8_t *out = realloc(c->out, cap);
		if (out == NULL) {
			return -1;
		}
		c->out = out;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

/* Sends one framed response (t->resp), buffering what the socket does
 * not take. */
static int send_response(tcp_t *t, conn_t *c, size_t len)
{
	uint8_t frame[2] = { (uint8_t)(len >> 8), (uint8_t)len };
	if (append(c, frame, 2) != 0 || append(c, t->resp, len) != 0) {
		return -1;
	}
	return flush(c) < 0 ? -1 : 0;
}

/* Hands a message to a hook; its reply comes through the mailbox. */
static int defer(tcp_t *t, conn_t *c, const uint8_t *msg, size_t len,
                 message_kind_t kind)
{
	bool transfer = kind == MESSAGE_TRANSFER;
	server_reply_t *r = server_reply_tcp(t->w->mailbox, c, c->fd, transfer,
	                                     t->w->live.tcp_idle_timeout_ms);
	if (r == NULL) {
		return -1;
	}
	server_reply_set_edns(r, t->w->answer.nsid, t->w->answer.cookie_secret);
	c->pending++;
	const server_hooks_t *h = t->w->hooks;
	if (transfer) {
		/* The transfer writes to the socket itself: hands off. */
		c->transfer = true;
		epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
		c->in_epoll = false;
		h->transfer(h->transfer_ctx, msg, len, &c->peer, r);
	} else if (kind == MESSAGE_SIGNED) {
		h->signed_query(h->signed_ctx, msg, len, &c->peer, true, r);
	} else {
		h->update(h->update_ctx, msg, len, &c->peer, true, r);
	}
	return 0;
}

/* Handles every complete message in the input buffer, in order. Stops
 * while output backs up, while too many replies are owed, and at a
 * transfer (which needs the socket to itself). */
static int process(tcp_t *t, conn_t *c)
{
	size_t pos = 0;
	int ret = 0;
	uint64_t since = zc_clock_ns(); /* Answer time (stats.h). */
	while (ret == 0 && !c->transfer && c->in_len - pos >= 2 &&
	       backlog(c) < OUT_BACKLOG &&
	       c->pending < t->w->live.tcp_max_pending) {
		size_t mlen = (size_t)c->in[pos] << 8 | c->in[pos + 1];
		if (c->in_len - pos < 2 + mlen) {
			break;
		}
		const uint8_t *msg = c->in + pos + 2;
		message_kind_t kind = server_message_kind(msg, mlen, true,
		                                          t->w->hooks);
		if (kind == MESSAGE_TRANSFER && (backlog(c) > 0 || c->pending)) {
			break; /* Earlier replies go out first. */
		}
		pos += 2 + mlen;
		if (kind != MESSAGE_QUERY) {
			since = server_stats_deferral(t->w->stats,
			        kind == MESSAGE_UPDATE ? SERVER_STATS_UPDATE :
			        kind == MESSAGE_TRANSFER ? SERVER_STATS_TRANSFER :
			        SERVER_STATS_SIGNED);
			ret = defer(t, c, msg, mlen, kind);
			continue;
		}
		t->w->answer.client = &c->peer;
		size_t len = answer_message(&t->w->answer, msg, mlen, t->resp,
		                            MSG_MAX, true);
		since = server_stats_answer(t->w->stats, t->resp, len,
		                            t->w->answer.rcode,
		                            t->w->answer.cookie_result, since);
		if (len == 0) {
			ret = -1; /* Garbage on a stream: close it. */
			break;
		}
		ret = send_response(t, c, len);
	}
	memmove(c->in, c->in + pos, c->in_len - pos);
	c->in_len -= pos;
	if (pos > 0) {
		touch(t, c); /* Only whole messages are activity. */
	}
	return ret < 0 ? -1 : 0;
}

static void on_event(tcp_t *t, conn_t *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP)) {
		close_conn(t, c); /* Reset, or shut both ways: nobody reads. */
		return;
	}
	if (events & EPOLLOUT) {
		int r = flush(c);
		if (r < 0 || (r == 0 && process(t, c) < 0)) {
			close_conn(t, c);
			return;
		}
	}
	if ((events & EPOLLIN) && !c->eof && c->in_len < IN_MAX) {
		ssize_t n = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, 0);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			close_conn(t, c);
			return;
		}
		if (n == 0) {
			c->eof = true;
		} else if (n > 0) {
			c->in_len += (size_t)n;
		}
		if (process(t, c) < 0) {
			close_conn(t, c);
			return;
		}
	}
	rearm(t, c);
}

/* Delivers the replies other threads queued. */
static void deliver_mail(tcp_t *t)
{
	mail_t *m = tcp_mailbox_take(t->w->mailbox);
	while (m != NULL) {
		mail_t *next = m->next;
		conn_t *c = m->conn;
		tcp_mail_sign(m); /* The HMAC here, not on the committer. */
		c->pending--;
		if (m->resume) {
			c->transfer = false;
		}
		if (c->closed) {
			if (c->pending == 0) {
				free_conn(c);
			}
		} else if (m->len == 0 || append(c, m->msg, m->len) != 0) {
			close_conn(t, c);
		} else {
			touch(t, c);
			if (flush(c) < 0 || process(t, c) < 0) {
				close_conn(t, c);
			} else {
				rearm(t, c);
			}
		}
		free(m);
		m = next;
	}
}

static void expire_idle(tcp_t *t)
{
	int64_t limit = now_ms() - (int64_t)t->w->live.tcp_idle_timeout_ms;
	/* The list is ordered by activity: expire from the tail. A
	 * connection owed replies or transferring is not idle. */
	conn_t *c = t->tail;
	while (c != NULL && c->last_ms < limit) {
		conn_t *prev = c->prev;
		if (c->pending == 0 && !c->transfer) {
			close_conn(t, c);
		}
		c = prev;
	}
}

void *server_tcp_worker(void *arg)
{
	worker_t *w = arg;
	pthread_setname_np(pthread_self(), "zc-tcp");
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
	struct epoll_event mail = { .events = EPOLLIN, .data.ptr = &t->count };
	epoll_ctl(t->ep, EPOLL_CTL_ADD, w->mailbox->efd, &mail);
	bool running = true;
	while (running) {
		struct epoll_event evs[64];
		int n = epoll_wait(t->ep, evs, 64, 500);
		server_worker_refresh(w); /* A reload's settings, if any. */
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL) {
				accept_all(t);
			} else if (evs[i].data.ptr == &t->ep) {
				running = false;
			} else if (evs[i].data.ptr == &t->count) {
				deliver_mail(t);
			} else {
				on_event(t, evs[i].data.ptr, evs[i].events);
			}
		}
		expire_idle(t);
	}
	while (t->head != NULL) {
		close_conn(t, t->head);
	}
	deliver_mail(t); /* Frees connections whose last reply came. */
	close(t->ep);
	free(t);
	return NULL;
}
