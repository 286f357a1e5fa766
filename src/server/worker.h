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

/*
 * The settings a reload may change (server_reconfigure(), live.c). The
 * server keeps the current ones under its lock with a generation number;
 * each worker works on a copy of its own, taken again between messages
 * when the generation moved: the query path reads them without a lock.
 */
typedef struct {
	unsigned tcp_idle_timeout_ms;
	unsigned tcp_max_clients;
	unsigned tcp_max_pending;
	bool cookies;
	uint8_t cookie_secret[16];
	char nsid[SERVER_NSID_MAX];  /* "": none */
	rrl_config_t rrl;            /* rrl.exempt: NULL or &rrl_exempt. */
	zc_acl_t rrl_exempt;
	rrl_t *rrl_table;            /* Shared buckets (NULL: RRL off). */
} server_live_t;

/* Copies live settings, pointing the copy's rrl.exempt at its own list. */
void server_live_copy(server_live_t *dst, const server_live_t *src);

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
	conn_limit_t *conn_limit;    /* TCP workers: shared per-client counts. */
	server_worker_stats_t *stats; /* Written by this worker only (stats.h). */
	bool tcp;
	bool started;
	server_t *server;
	server_live_t live;          /* This worker's copy (owner thread only). */
	unsigned live_gen;           /* The generation of that copy. */
} worker_t;

struct server {
	server_config_t cfg;
	server_hooks_t hooks;
	bool has_hooks;
	int stop_fd;
	size_t count;
	worker_t *workers; /* 2 per (address, worker): UDP then TCP. */
	conn_limit_t *conn_limit; /* Shared by the TCP workers. */
	/* Live settings (live.c): live_lock guards live; live_gen moves
	 * (under the lock) each time they change. */
	pthread_mutex_t live_lock;
	server_live_t live;
	atomic_uint live_gen;
};

/* Sets the server's first live settings from cfg (server_start()). */
int server_live_init(server_t *s, const server_config_t *cfg);

/* Frees what the live settings hold (the RRL table). */
void server_live_deinit(server_t *s);

/*
 * Takes the server's live settings into the worker's copy when they
 * changed since it last looked: one relaxed load otherwise. Call on the
 * worker's thread between messages.
 */
void server_worker_refresh(worker_t *w);

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
