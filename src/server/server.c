/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Server lifecycle: worker threads on the sockets server_bind() bound
 * (listen.c). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "server/worker.h"

unsigned server_worker_count(const server_config_t *cfg)
{
	if (cfg->workers > 0) {
		return cfg->workers;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* Starts a worker on its bound socket (fd, which it takes over). */
static int start_worker(server_t *s, worker_t *w, int fd, bool tcp,
                        edge_store_t *edge)
{
	w->fd = fd;
	if (w->fd < 0) {
		return ZC_EUSAGE; /* server_bind() made no socket for it. */
	}
	w->stop_fd = s->stop_fd;
	w->cfg = &s->cfg;
	w->hooks = s->has_hooks ? &s->hooks : NULL;
	if (tcp) {
		w->mailbox = malloc(sizeof(*w->mailbox));
		if (w->mailbox == NULL || tcp_mailbox_init(w->mailbox) != ZC_EOK) {
			free(w->mailbox);
			w->mailbox = NULL;
			close(w->fd);
			return KNOT_ENOMEM;
		}
	}
	/* TCP carries few signed answers: a sixteenth of the UDP cache. */
	size_t sigs = s->cfg.signature_cache ? s->cfg.signature_cache :
	              ANSWER_SIGCACHE_SLOTS;
	answer_ctx_init(&w->answer, edge, NULL, tcp ? sigs / 16 + 4 : sigs);
	w->answer.identity = s->cfg.identity;
	w->answer.version = s->cfg.version;
	w->server = s;
	w->conn_limit = tcp ? s->conn_limit : NULL;
	w->tcp = tcp;
	server_worker_refresh(w); /* Takes NSID, cookies and RRL. */
	if (pthread_create(&w->thread, NULL, tcp ? server_tcp_worker :
	                   server_udp_worker, w) != 0) {
		answer_ctx_deinit(&w->answer);
		if (w->mailbox != NULL) {
			tcp_mailbox_deinit(w->mailbox);
			free(w->mailbox);
			w->mailbox = NULL;
		}
		close(w->fd);
		return KNOT_ENOMEM;
	}
	w->started = true;
	return ZC_EOK;
}

int server_start(const server_config_t *cfg, server_sockets_t *sockets,
                 edge_store_t *edge, const server_hooks_t *hooks,
                 server_t **out)
{
	if (server_sockets_count(sockets) !=
	    cfg->listen_count * server_worker_count(cfg) * 2) {
		server_sockets_free(sockets);
		return ZC_EUSAGE; /* Bound for another configuration. */
	}
	server_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		server_sockets_free(sockets);
		return KNOT_ENOMEM;
	}
	s->cfg = *cfg;
	if (hooks != NULL) {
		s->hooks = *hooks;
		s->has_hooks = true;
	}
	int live = server_live_init(s, cfg);
	s->conn_limit = conn_limit_new(s->cfg.tcp_max_clients_per_ip);
	unsigned n = server_worker_count(cfg);
	s->count = cfg->listen_count * n * 2;
	s->workers = calloc(s->count ? s->count : 1, sizeof(worker_t));
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->workers == NULL || s->stop_fd < 0 || live != ZC_EOK ||
	    s->conn_limit == NULL) {
		server_sockets_free(sockets);
		server_stop(s);
		return KNOT_ENOMEM;
	}
	int ret = ZC_EOK;
	for (size_t i = 0; i < s->count && ret == ZC_EOK; i++) {
		/* A cache line (or more) of its own per worker (stats.h). */
		size_t size = (sizeof(server_worker_stats_t) + 63) / 64 * 64;
		s->workers[i].stats = aligned_alloc(64, size);
		if (s->workers[i].stats == NULL) {
			ret = KNOT_ENOMEM;
		} else {
			memset(s->workers[i].stats, 0, size);
		}
	}
	size_t i = 0;
	for (size_t a = 0; a < cfg->listen_count && ret == ZC_EOK; a++) {
		for (unsigned k = 0; k < 2 * n && ret == ZC_EOK; k++, i++) {
			ret = start_worker(s, &s->workers[i],
			                   server_sockets_take(sockets, i),
			                   k % 2 == 1, edge);
		}
		if (ret == ZC_EOK) {
			zc_info("listening on %s (UDP and TCP, %u workers)",
			        cfg->listen[a], n);
		}
	}
	server_sockets_free(sockets); /* What no worker took (on failure). */
	if (ret != ZC_EOK) {
		server_stop(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

void server_counts_get(server_t *s, server_counts_t *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < s->count; i++) {
		const worker_t *w = &s->workers[i];
		if (!w->started) {
			continue;
		}
		server_stats_sum(w->stats, w->tcp, out);
		uint64_t hits, misses;
		signer_cache_counts(w->answer.sigcache, &hits, &misses);
		out->sigcache_hits += hits;
		out->sigcache_misses += misses;
	}
}

void server_stop(server_t *s)
{
	if (s == NULL) {
		return;
	}
	if (s->stop_fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(s->stop_fd, &one, sizeof(one));
		(void)w;
	}
	for (size_t i = 0; i < s->count && s->workers != NULL; i++) {
		worker_t *w = &s->workers[i];
		if (w->started) {
			pthread_join(w->thread, NULL);
			answer_ctx_deinit(&w->answer);
			close(w->fd);
		}
		if (w->mailbox != NULL) {
			tcp_mailbox_deinit(w->mailbox);
			free(w->mailbox);
		}
		free(w->stats);
	}
	if (s->stop_fd >= 0) {
		close(s->stop_fd);
	}
	free(s->workers);
	server_live_deinit(s);
	conn_limit_free(s->conn_limit);
	explicit_bzero(s->cfg.cookie_secret, sizeof(s->cfg.cookie_secret));
	free(s);
}
