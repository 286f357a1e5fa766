/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to server/: one worker thread's state. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "server/answer.h"
#include "server/conn_limit.h"
#include "server/rrl.h"
#include "server/server.h"
#include "server/stats.h"

typedef struct tcp_mailbox tcp_mailbox_t;

/* Workers per listen address: cfg->workers, else one per core. */
unsigned server_worker_count(const server_config_t *cfg);

/* The socket of worker i (server_start()'s order), taken over by the
 * caller: -1 when there is none. */
int server_sockets_take(server_sockets_t *s, size_t i);
size_t server_sockets_count(const server_sockets_t *s);

typedef struct {
	pthread_t thread;
	int fd;                 /* UDP socket or TCP listening socket. */
	int stop_fd;            /* eventfd: readable when stopping. */
	answer_ctx_t answer;
	const server_config_t *cfg;
	const server_hooks_t *hooks; /* NULL: none. */
	tcp_mailbox_t *mailbox;      /* TCP workers: replies from other threads. */
	rrl_t *rrl;                  /* UDP workers: shared limiter (NULL: off). */
	conn_limit_t *conn_limit;    /* TCP workers: shared per-client counts. */
	server_worker_stats_t *stats; /* Written by this worker only (stats.h). */
	bool tcp;
	bool started;
} worker_t;

/* Adds a worker's counters to out (stats.c). */
void server_stats_sum(const server_worker_stats_t *st, bool tcp,
                      server_counts_t *out);

/* A reply queued to a TCP worker by another thread (reply.c). */
typedef struct mail {
	struct mail *next;
	void *conn;         /* The worker's connection (tcp.c). */
	bool resume;        /* Ends a transfer: the worker takes the fd back. */
	struct dns_tsig *tsig; /* Owned: sign msg with it first (NULL: no). */
	size_t len;         /* Framed length; 0: close the connection. */
	size_t cap;         /* Room in msg for the signature. */
	uint8_t msg[];
} mail_t;

/* Signs a mail's message when it asks for it (reply.c). */
void tcp_mail_sign(mail_t *m);

struct tcp_mailbox {
	pthread_mutex_t lock;
	int efd;            /* eventfd in the worker's epoll set. */
	mail_t *head, *tail;
};

int tcp_mailbox_init(tcp_mailbox_t *mb);
void tcp_mailbox_deinit(tcp_mailbox_t *mb);
/* Takes every queued mail, oldest first. */
mail_t *tcp_mailbox_take(tcp_mailbox_t *mb);

/* Replies the workers create for the hooks (reply.c). */
server_reply_t *server_reply_udp(int fd, const struct sockaddr_storage *addr,
                                 socklen_t addr_len);
server_reply_t *server_reply_tcp(tcp_mailbox_t *mb, void *conn, int fd,
                                 bool transfer, unsigned timeout_ms);

/* Classifies a message for the workers (classify.c). */
typedef enum {
	MESSAGE_QUERY,      /* answer_message() */
	MESSAGE_UPDATE,     /* hooks->update */
	MESSAGE_TRANSFER,   /* hooks->transfer (TCP AXFR/IXFR) */
	MESSAGE_SIGNED,     /* hooks->signed_query (other TSIG-signed) */
} message_kind_t;
message_kind_t server_message_kind(const uint8_t *msg, size_t len, bool tcp,
                                   const server_hooks_t *hooks);

/* Thread bodies (udp.c, tcp.c). */
void *server_udp_worker(void *arg);
void *server_tcp_worker(void *arg);
