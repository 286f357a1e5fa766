/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The metrics listener: /metrics, /healthz, /readyz over HTTP/1.1
 * (libmicrohttpd, one internal thread, so scrapes never run at once).
 * GET and HEAD only; no authentication (see metrics.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>
#include <microhttpd.h>

#include "common/error.h"
#include "common/http_check.h"
#include "common/log.h"
#include "common/net.h"
#include "metrics/internal.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Scrapers, health checkers and a curl or two. */
#define MAX_CLIENTS 32
#define MAX_CLIENTS_PER_IP 8
#define TIMEOUT_S 10

int metrics_bind(const char *listen_addr, int *fd)
{
	return zc_tcp_listen("metrics", listen_addr, 64, fd);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
                             const char *type, char *body, size_t len,
                             bool owned, bool close)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
	        owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (r == NULL) {
		if (owned) {
			free(body);
		}
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (close) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	}
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn,
                                  unsigned status, const char *text)
{
	return reply(conn, status, "text/plain; charset=utf-8", (char *)text,
	             strlen(text), false, false);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_size, void **state)
{
	(void)data;
	metrics_t *m = cls;
	http_refusal_t refusal;
	if (*state == NULL && !http_head_check(conn, version, &refusal)) {
		/* As the API's listener refuses it (common/http_check.h),
		 * before any body, closing the connection. */
		char body[sizeof(refusal.message) + 1];
		snprintf(body, sizeof(body), "%s\n", refusal.message);
		*state = m;
		return reply(conn, refusal.status, "text/plain; charset=utf-8",
		             body, strlen(body), false, true);
	}
	if (*state == NULL) {
		*state = m; /* Headers only so far; answer at the next call. */
		return MHD_YES;
	}
	if (*data_size != 0) {
		*data_size = 0; /* A body is ignored; the method decides. */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		                  "only GET and HEAD\n");
	}
	if (strcmp(url, "/metrics") == 0) {
		char *text;
		size_t len;
		if (metrics_collect(m, &text, &len) != ZC_EOK) {
			return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
			                  "out of memory\n");
		}
		return reply(conn, MHD_HTTP_OK, CONTENT_TYPE, text, len, true,
		             false);
	}
	if (strcmp(url, "/healthz") == 0) {
		return reply_text(conn, MHD_HTTP_OK, "ok\n");
	}
	if (strcmp(url, "/readyz") == 0) {
		char why[512], body[600];
		bool ready = metrics_ready(m, why, sizeof(why));
		snprintf(body, sizeof(body), ready ? "ready\n" :
		         "not ready: %s\n", why);
		return reply(conn, ready ? MHD_HTTP_OK :
		             MHD_HTTP_SERVICE_UNAVAILABLE,
		             "text/plain; charset=utf-8", body, strlen(body),
		             false, false);
	}
	if (strcmp(url, "/") == 0) {
		return reply_text(conn, MHD_HTTP_OK, "zonecast: /metrics "
		                  "(Prometheus), /healthz, /readyz\n");
	}
	return reply_text(conn, MHD_HTTP_NOT_FOUND,
	                  "not found: /metrics, /healthz, /readyz\n");
}

int metrics_start(const metrics_config_t *cfg, metrics_t **out)
{
	metrics_t *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		close(cfg->listen_fd);
		return KNOT_ENOMEM;
	}
	m->cfg = *cfg;
	if (m->cfg.ready_lag_ms == 0) {
		m->cfg.ready_lag_ms = METRICS_DEFAULT_READY_LAG_MS;
	}
	m->started_s = (int64_t)time(NULL);
	/* Zone changes count from here: the server applied the change log
	 * before it started serving (an edge has none). */
	if (cfg->follower != NULL) {
		m->changes_seq = builder_follower_applied(cfg->follower);
	}
	char where[4200];
	if (cfg->data_dir != NULL &&
	    records_describe(cfg->data_dir, &m->backend, where,
	                     sizeof(where)) != ZC_EOK) {
		m->backend = NULL;
	}
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	                             MHD_USE_POLL, 0, NULL, NULL, on_request, m,
	                             MHD_OPTION_LISTEN_SOCKET, cfg->listen_fd,
	                             MHD_OPTION_CONNECTION_TIMEOUT,
	                             (unsigned)TIMEOUT_S,
	                             MHD_OPTION_CONNECTION_LIMIT,
	                             (unsigned)MAX_CLIENTS,
	                             MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	                             (unsigned)MAX_CLIENTS_PER_IP,
	                             MHD_OPTION_END);
	if (m->daemon == NULL) {
		zc_error("metrics: cannot start the listener on %s", cfg->listen);
		close(cfg->listen_fd);
		free(m);
		return ZC_EUSAGE;
	}
	zc_info("metrics listening on http://%s/metrics (and /healthz, "
	        "/readyz)", cfg->listen);
	*out = m;
	return ZC_EOK;
}

void metrics_stop(metrics_t *m)
{
	if (m == NULL) {
		return;
	}
	MHD_stop_daemon(m->daemon); /* Closes the listening socket. */
	records_close(m->rs);
	free(m->zones);
	free(m);
}
