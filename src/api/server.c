/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The API's HTTP server: the listening socket, libmicrohttpd's daemon and
 * its callbacks. The callbacks only move bytes: a request's headers and
 * body into api_req_t (api_req_body()), the complete request to
 * api_dispatch() (router.c), and api_response()'s body back out with its
 * headers.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <libknot/errcode.h>
#include <microhttpd.h>

#include "api/audit.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/router.h"
#include "common/acl.h"
#include "common/error.h"
#include "common/http_check.h"
#include "common/log.h"
#include "common/net.h"

/* Queues the response to a request. */
static enum MHD_Result respond(struct MHD_Connection *conn, api_req_t *req)
{
	size_t len;
	bool json;
	char *text = api_response(req, &len, &json);
	struct MHD_Response *resp = text == NULL ? NULL :
		MHD_create_response_from_buffer(len, text,
		                                MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
	                        json ? "application/json" : "text/plain");
	if (req->etag[0] != '\0' && req->status < 400) {
		MHD_add_response_header(resp, "ETag", req->etag);
	}
	if (req->versioned && req->status < 400) {
		char v[24];
		snprintf(v, sizeof(v), "%lld", (long long)req->version);
		MHD_add_response_header(resp, "X-Zone-Version", v);
		if (req->wait_live) {
			MHD_add_response_header(resp, "X-Zone-Live",
			                        req->live ? "true" : "false");
		}
	}
	/* A 405 names the methods the path does take (RFC 9110 section
	 * 15.5.6). */
	if (req->status == 405 && req->allow != NULL) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
	}
	if (req->close) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
		                        "close");
	}
	req->answered = true;
	enum MHD_Result r = MHD_queue_response(conn,
	                                       req->status ? req->status : 200,
	                                       resp);
	MHD_destroy_response(resp);
	return r;
}

/* A Content-Length over the limit: 413 before the body is read (MHD then
 * closes the connection instead of reading what the client sends). */
static bool announced_too_big(api_req_t *req)
{
	const char *cl = api_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl == NULL) {
		return false;
	}
	char *end;
	unsigned long long n = strtoull(cl, &end, 10);
	return end != cl && n > api_max_body(req->api);
}

/* The index-th value of a key, for mhd_lookup(). */
typedef struct {
	const char *key;
	unsigned index;
	const char *value;
} nth_value_t;

static enum MHD_Result find_nth(void *cls, enum MHD_ValueKind kind,
                                const char *key, const char *value)
{
	(void)kind;
	nth_value_t *nth = cls;
	if (key == NULL || strcasecmp(key, nth->key) != 0) {
		return MHD_YES;
	}
	if (nth->index-- == 0) {
		nth->value = value;
		return MHD_NO;
	}
	return MHD_YES;
}

/* The key of the index-th value, for mhd_lookup(). */
static enum MHD_Result find_nth_key(void *cls, enum MHD_ValueKind kind,
                                    const char *key, const char *value)
{
	(void)kind, (void)value;
	nth_value_t *nth = cls;
	if (nth->index-- == 0) {
		nth->value = key;
		return MHD_NO;
	}
	return MHD_YES;
}

/* libmicrohttpd's query arguments (already unescaped) and headers. */
static const char *mhd_lookup(void *ctx, bool header, const char *key,
                              unsigned index)
{
	enum MHD_ValueKind kind = header ? MHD_HEADER_KIND :
	                          MHD_GET_ARGUMENT_KIND;
	if (key == NULL) {
		nth_value_t nth = { .index = index };
		MHD_get_connection_values(ctx, kind, find_nth_key, &nth);
		return nth.value;
	}
	if (index == 0) {
		return MHD_lookup_connection_value(ctx, kind, key);
	}
	nth_value_t nth = { .key = key, .index = index };
	MHD_get_connection_values(ctx, kind, find_nth, &nth);
	return nth.value;
}

/* The client's "ADDR#PORT" for the audit lines. */
static void client_address(struct MHD_Connection *conn, char *out,
                           size_t size)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct sockaddr_storage ss = { .ss_family = AF_UNSPEC };
	if (ci != NULL && ci->client_addr != NULL) {
		size_t len = ci->client_addr->sa_family == AF_INET6 ?
		             sizeof(struct sockaddr_in6) :
		             sizeof(struct sockaddr_in);
		memcpy(&ss, ci->client_addr, len);
	}
	zc_addr_text(&ss, out, size);
}

/* How long api_stop() waits for the requests in flight to be answered. */
#define DRAIN_MS 3000

/* Set by unescape() when a URL or an argument holds %00, read and reset
 * by the request's first on_request() call (and reset by on_completed()):
 * with a thread per connection, libmicrohttpd parses a request's line
 * and arguments in the thread that then calls on_request() for it. */
static _Thread_local bool url_nul;

static int hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Where the request line's URI ended as a C string (its first NUL), set
 * by uri_seen() before libmicrohttpd touches it, checked and reset by the
 * request's first on_request() call: NULL when not seen. */
static _Thread_local const char *uri_end;

/* At most this many query arguments (the API takes about 15 at most). */
#define API_MAX_ARGS 256

/* Set by uri_seen() when the query held more, read and reset as uri_end. */
static _Thread_local bool uri_args_over;

/* Set by uri_seen() when the path holds "%2F", read and reset so too. */
static _Thread_local bool uri_slash;

/* libmicrohttpd's URI log callback, called with the request line's URI
 * as it came, before it is split at '?' or unescaped: the URI ends at the
 * NUL libmicrohttpd wrote over the space before the HTTP version, just
 * before the version string (libmicrohttpd 0.9.75, connection.c
 * parse_initial_message_line()). A raw NUL octet in it ends it sooner
 * as a C string, and libmicrohttpd serves the shorter path: DELETE
 * /zones/Z<NUL>/dns_records/R deleted zone Z. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls, (void)conn;
	uri_end = uri != NULL ? uri + strlen(uri) : NULL;
	/* libmicrohttpd keeps each query argument in the connection's
	 * memory (about 50 octets, for an "a&" of 2): some 500 of them
	 * filled it and it closed the connection without an answer. Over
	 * API_MAX_ARGS, the query is emptied before it parses it (it has
	 * not yet: its "?" is still there, and the arguments begin after
	 * it), and the request is refused (414). */
	char *query = uri != NULL ? strchr(uri, '?') : NULL;
	/* An escaped '/' in the path was decoded before the path was split:
	 * "/zones%2F{id}" named the zone (a proxy allowing /zones but not
	 * /zones/... let it through). No name or id holds a '/'. */
	size_t path_len = uri == NULL ? 0 : query != NULL ?
	                  (size_t)(query - uri) : strlen(uri);
	uri_slash = false;
	for (size_t i = 0; i + 2 < path_len && !uri_slash; i++) {
		uri_slash = uri[i] == '%' && uri[i + 1] == '2' &&
		            (uri[i + 2] == 'f' || uri[i + 2] == 'F');
	}
	unsigned args = 0;
	for (const char *p = query; p != NULL && args <= API_MAX_ARGS;
	     p = strchr(p + 1, '&')) {
		args++;
	}
	uri_args_over = args > API_MAX_ARGS;
	if (uri_args_over) {
		query[1] = '\0';
	}
	return NULL;
}

/* Whether the URI on_request() gets is the whole of the request line's:
 * its first NUL is the one just before the version. Without a version (or
 * a URI log call) there is nothing to compare: libmicrohttpd refuses such
 * requests itself. */
static bool uri_whole(const char *version)
{
	const char *end = uri_end;
	uri_end = NULL;
	return end == NULL || version == NULL || version[0] == '\0' ||
	       end + 1 == version;
}

/* libmicrohttpd's own unescaping ("%HH" decoded, anything else kept) but
 * for "%00": a decoded NUL ended the path and argument strings early, so
 * that DELETE /zones/Z%00/dns_records/R deleted zone Z. It stays "%00"
 * and marks the request, which is refused (400). */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls, (void)conn;
	char *w = s;
	const char *r = s;
	while (*r != '\0') {
		int hi = r[0] == '%' ? hex_value(r[1]) : -1;
		int lo = hi >= 0 ? hex_value(r[2]) : -1;
		if (lo < 0) {
			*w++ = *r++;
		} else if (hi == 0 && lo == 0) {
			url_nul = true;
			*w++ = *r++;
		} else {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

/* libmicrohttpd's request callback: first with the headers only (a
 * request announcing a body over the limit is answered 413 there), then
 * with each piece of the body, then once with none (the request is
 * complete: dispatch and answer). */
/* The path of an absolute-form target ("http://host/client/v4/zones"),
 * which a server must take (RFC 9112 section 3.2.2); url otherwise. */
static const char *origin_form(const char *url)
{
	size_t scheme = strncasecmp(url, "http://", 7) == 0 ? 7 :
	                strncasecmp(url, "https://", 8) == 0 ? 8 : 0;
	if (scheme == 0) {
		return url;
	}
	const char *path = strchr(url + scheme, '/');
	return path != NULL ? path : "/";
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
	api_t *api = cls;
	url = origin_form(url);
	api_req_t *req = *con_cls;
	if (req == NULL) {
		req = calloc(1, sizeof(*req));
		if (req == NULL) {
			return MHD_NO;
		}
		req->api = api;
		atomic_fetch_add(&api->in_flight, 1);
		req->in_flight = true;
		req->lookup = mhd_lookup;
		req->lookup_ctx = conn;
		req->method = method;
		client_address(conn, req->client, sizeof(req->client));
		*con_cls = req;
		if (!uri_whole(version) || url_nul) {
			url_nul = false;
			req->close = true;
			api_error(req, 400, 1004, "url: a NUL octet (raw or "
			          "%%00) in the path or an argument");
			api_audit(req, url);
			return respond(conn, req);
		}
		if (uri_slash) {
			uri_slash = false;
			req->close = true;
			api_error(req, 400, 1004, "url: an escaped '/' (%%2F) in "
			          "the path");
			api_audit(req, url);
			return respond(conn, req);
		}
		if (uri_args_over) {
			uri_args_over = false;
	uri_slash = false;
			req->close = true;
			api_error(req, 414, 1004, "url: more than %d query "
			          "arguments", API_MAX_ARGS);
			api_audit(req, url);
			return respond(conn, req);
		}
		http_refusal_t refusal;
		if (!http_head_check(conn, version, &refusal)) {
			/* Framing a proxy could read otherwise, and heads RFC
			 * 9112 refuses: answered before the body; the
			 * connection closes. */
			req->close = true;
			api_error(req, refusal.status, 1004, "%s",
			          refusal.message);
			api_audit(req, url);
			return respond(conn, req);
		}
		if (atomic_load(&api->stopping)) {
			/* A request begun after the stop began: answered now,
			 * before its body, so that the drain waits for the
			 * requests in flight at the stop only (a steady load
			 * kept it busy for its whole DRAIN_MS); not counted
			 * as in flight from here (counted first: the drain
			 * cannot miss a request begun as it looked). */
			atomic_fetch_sub(&api->in_flight, 1);
			req->in_flight = false;
			req->close = true;
			api_error(req, 503, 1503, "server: stopping; nothing "
			          "was written: retry");
			api_audit(req, url);
			return respond(conn, req);
		}
		if (announced_too_big(req)) {
			req->too_big = true;
			api_error(req, 413, 1413, "body: larger than the limit of "
			          "%zu bytes (api-max-body)", api_max_body(api));
			api_audit(req, url);
			return respond(conn, req);
		}
		return MHD_YES;
	}
	if (*data_size > 0) {
		if (api_req_body(req, data, *data_size) != ZC_EOK) {
			return MHD_NO;
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (req->answered) {
		return MHD_YES; /* Answered at the first call. */
	}
	api_dispatch(req, url);
	return respond(conn, req);
}

/* libmicrohttpd's end of a request, answered or not: frees it. */
static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode code)
{
	(void)cls, (void)conn, (void)code;
	url_nul = false;
	uri_end = NULL;
	uri_args_over = false;
	api_req_t *req = *con_cls;
	if (req == NULL) {
		return;
	}
	if (req->in_flight) {
		atomic_fetch_sub(&req->api->in_flight, 1);
	}
	api_req_clear(req);
	free(req);
	*con_cls = NULL;
}

int api_bind(const char *listen_addr, int *fd)
{
	return zc_tcp_listen("api", listen_addr, SOMAXCONN, fd);
}

int api_start(const api_config_t *cfg, api_t **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	api_t *api;
	int ret = zc_addr_parse(cfg->listen, &ss, &len);
	if (ret != ZC_EOK || (ret = api_new(cfg, &api)) != ZC_EOK) {
		return ret;
	}
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
	                 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
	if (ss.ss_family == AF_INET6) {
		flags |= MHD_USE_IPv6;
	}
	unsigned timeout = cfg->timeout_s ? cfg->timeout_s : API_DEFAULT_TIMEOUT_S;
	unsigned clients = cfg->max_clients ? cfg->max_clients :
	                   API_DEFAULT_MAX_CLIENTS;
	unsigned per_ip = cfg->max_clients_per_ip ? cfg->max_clients_per_ip :
	                  API_DEFAULT_MAX_CLIENTS_PER_IP;
	/* The socket of api_bind() (MHD closes it when it stops), or one
	 * MHD binds. */
	struct MHD_OptionItem where[] = {
		{ MHD_OPTION_SOCK_ADDR, 0, &ss },
		{ MHD_OPTION_END, 0, NULL },
	};
	if (cfg->listen_fd > 0) {
		where[0] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET,
		                                    cfg->listen_fd, NULL };
	}
	api->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, api,
	                               MHD_OPTION_ARRAY, where,
	                               MHD_OPTION_NOTIFY_COMPLETED, on_completed,
	                               api, MHD_OPTION_CONNECTION_TIMEOUT,
	                               timeout, MHD_OPTION_CONNECTION_LIMIT,
	                               clients, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	                               per_ip, MHD_OPTION_UNESCAPE_CALLBACK,
	                               unescape, NULL,
	                               MHD_OPTION_URI_LOG_CALLBACK, uri_seen,
	                               NULL, MHD_OPTION_END);
	if (api->daemon == NULL) {
		zc_error("api: cannot listen on %s", cfg->listen);
		api_free(api);
		return -98; /* -EADDRINUSE, the usual cause. */
	}
	zc_info("API listening on http://%s/client/v4/", cfg->listen);
	*out = api;
	return ZC_EOK;
}

void api_stop(api_t *api)
{
	if (api == NULL) {
		return;
	}
	/* Long polls and other waits end within STOP_CHECK_MS (live.c),
	 * and the requests in flight are answered (a write with ?wait=live
	 * its 202) before libmicrohttpd's stop, which shuts every
	 * connection's socket down before it joins their threads: their
	 * clients saw a reset, and a committed write might be sent again.
	 * At most DRAIN_MS: a client slow to send its body is not waited
	 * for longer. */
	atomic_store(&api->stopping, true);
	/* Requests waiting for a records store connection get their 503
	 * now (api_pool_get()), not at the end of API_POOL_WAIT_S. */
	pthread_mutex_lock(&api->pool_lock);
	pthread_cond_broadcast(&api->pool_free);
	pthread_mutex_unlock(&api->pool_lock);
	for (int waited = 0; atomic_load(&api->in_flight) > 0 &&
	     waited < DRAIN_MS; waited += 10) {
		struct timespec ten_ms = { .tv_nsec = 10 * 1000 * 1000 };
		nanosleep(&ten_ms, NULL);
	}
	MHD_stop_daemon(api->daemon);
	api_free(api);
}
