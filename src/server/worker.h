/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to server/: one worker thread's state. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "server/answer.h"
#include "server/server.h"

typedef struct {
	pthread_t thread;
	int fd;                 /* UDP socket or TCP listening socket. */
	int stop_fd;            /* eventfd: readable when stopping. */
	answer_ctx_t answer;
	const server_config_t *cfg;
	bool started;
} worker_t;

/* Thread bodies (udp.c, tcp.c). */
void *server_udp_worker(void *arg);
void *server_tcp_worker(void *arg);
