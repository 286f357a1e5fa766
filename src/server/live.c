/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The settings a running server can change (a reload): the server's copy
 * under its lock, and each worker's own copy, taken between messages when
 * the generation moved (worker.h, server_live_t). So a reload never stops
 * or slows a worker: a query is answered under the settings it started
 * with, the next one under the new.
 *
 * The RRL table (its buckets) is made once, the first time RRL is on, and
 * lives until the server stops: a worker may hold it at any moment, and
 * its size is a start-time setting. Turned off, it is kept and unused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "server/worker.h"

void server_live_copy(server_live_t *dst, const server_live_t *src)
{
	*dst = *src;
	dst->rrl.exempt = src->rrl.exempt != NULL ? &dst->rrl_exempt : NULL;
}

static bool has_secret(const uint8_t *secret)
{
	uint8_t any = 0;
	for (size_t i = 0; i < 16; i++) {
		any |= secret[i];
	}
	return any != 0;
}

/* The live settings cfg asks for, over cur (the secret and the RRL table
 * carry over). KNOT_ENOMEM when RRL needs a table that cannot be made. */
static int make_live(const server_config_t *cfg, const server_live_t *cur,
                     server_live_t *out)
{
	memset(out, 0, sizeof(*out));
	out->tcp_idle_timeout_ms = cfg->tcp_idle_timeout_ms;
	out->tcp_max_clients = cfg->tcp_max_clients;
	out->tcp_max_pending = cfg->tcp_max_pending ? cfg->tcp_max_pending : 256;
	snprintf(out->nsid, sizeof(out->nsid), "%s", cfg->nsid ? cfg->nsid : "");
	out->cookies = cfg->cookies;
	if (has_secret(cfg->cookie_secret)) {
		memcpy(out->cookie_secret, cfg->cookie_secret, 16);
	} else if (has_secret(cur->cookie_secret)) {
		/* A random secret stays: cookies handed out remain valid. */
		memcpy(out->cookie_secret, cur->cookie_secret, 16);
	} else if (cfg->cookies &&
	           getrandom(out->cookie_secret, 16, 0) != 16) {
		out->cookies = false; /* No secret we could trust: no cookies. */
		zc_warn("DNS Cookies off: no random secret (%s)", strerror(errno));
	}
	out->rrl = cfg->rrl;
	if (cfg->rrl.exempt != NULL) {
		out->rrl_exempt = *cfg->rrl.exempt;
	}
	out->rrl.exempt = out->rrl_exempt.count > 0 ? &out->rrl_exempt : NULL;
	out->rrl_table = cur->rrl_table;
	if (out->rrl.rate > 0 && out->rrl_table == NULL) {
		out->rrl_table = rrl_new(&out->rrl);
		if (out->rrl_table == NULL) {
			return KNOT_ENOMEM;
		}
	}
	return ZC_EOK;
}

int server_live_init(server_t *s, const server_config_t *cfg)
{
	pthread_mutex_init(&s->live_lock, NULL);
	server_live_t none = { 0 };
	int ret = make_live(cfg, &none, &s->live);
	atomic_store(&s->live_gen, 1);
	return ret;
}

void server_live_deinit(server_t *s)
{
	rrl_free(s->live.rrl_table);
	explicit_bzero(s->live.cookie_secret, sizeof(s->live.cookie_secret));
	pthread_mutex_destroy(&s->live_lock);
}

int server_reconfigure(server_t *s, const server_config_t *cfg)
{
	if (s == NULL || cfg == NULL) {
		return ZC_EUSAGE;
	}
	server_live_t next;
	pthread_mutex_lock(&s->live_lock);
	int ret = make_live(cfg, &s->live, &next);
	if (ret == ZC_EOK) {
		server_live_copy(&s->live, &next);
		atomic_fetch_add_explicit(&s->live_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->live_lock);
	explicit_bzero(next.cookie_secret, sizeof(next.cookie_secret));
	if (ret == ZC_EOK) {
		conn_limit_set(s->conn_limit, cfg->tcp_max_clients_per_ip);
	}
	return ret;
}

void server_worker_refresh(worker_t *w)
{
	server_t *s = w->server;
	unsigned gen = atomic_load_explicit(&s->live_gen, memory_order_acquire);
	if (gen == w->live_gen) {
		return;
	}
	pthread_mutex_lock(&s->live_lock);
	server_live_copy(&w->live, &s->live);
	w->live_gen = atomic_load_explicit(&s->live_gen, memory_order_relaxed);
	pthread_mutex_unlock(&s->live_lock);
	w->answer.nsid = w->live.nsid[0] != '\0' ? w->live.nsid : NULL;
	w->answer.nsid_len = strlen(w->live.nsid);
	w->answer.cookie_secret = w->live.cookies ? w->live.cookie_secret :
	                          NULL;
}

void server_stats(server_t *s, server_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	if (s == NULL) {
		return;
	}
	pthread_mutex_lock(&s->live_lock);
	if (s->live.rrl_table != NULL) {
		rrl_counts(s->live.rrl_table, &out->rrl_dropped,
		           &out->rrl_slipped);
	}
	pthread_mutex_unlock(&s->live_lock);
	for (size_t i = 0; i < s->count; i++) {
		uint64_t hits = 0, misses = 0;
		if (s->workers[i].started) {
			signer_cache_counts(s->workers[i].answer.sigcache, &hits,
			                    &misses);
		}
		out->signature_hits += hits;
		out->signature_misses += misses;
	}
	out->workers = server_worker_count(&s->cfg);
}
