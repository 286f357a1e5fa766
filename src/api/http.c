/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The HTTP side of the API: libmicrohttpd glue, request bodies, routing,
 * the response envelope, and the one table mapping codes to statuses.
 * The glue only moves bytes: api_req_body(), api_dispatch() and
 * api_response() are the request path, which the fuzz target runs too.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "api/internal.h"
#include "common/acl.h"
#include "common/error.h"
#include "common/log.h"
#include "server/server.h"

#define PREFIX "/client/v4/"
#define API_MAX_PAGE 100000000
#define API_MAX_PER_PAGE 50000
#define MAX_PARTS 8

/* Length of the valid UTF-8 sequence (RFC 3629) at s, or 0. */
static size_t utf8_char(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 :
	           s[0] >= 0xe0 && s[0] <= 0xef ? 3 :
	           s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
	}
	/* Overlong forms, surrogates, past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f)) {
		return 0;
	}
	return n;
}

void api_error(api_req_t *req, unsigned status, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Messages quote what the client sent (a URL, a header), and a cut
	 * may split a character: JSON strings must be UTF-8, or jansson
	 * drops the message. */
	for (size_t i = 0, n; msg[i] != '\0'; i += n) {
		n = utf8_char((const unsigned char *)msg + i);
		if (n == 0) {
			msg[i] = '?';
			n = 1;
		}
	}
	if (req->errors == NULL) {
		req->errors = json_array();
	}
	json_array_append_new(req->errors, json_pack("{s:i, s:s}", "code", code,
	                                             "message", msg));
	if (req->status < 400) {
		req->status = status;
	}
}

/* The data directory cannot take writes: the condition is the server's,
 * not the request's, so the message names it rather than a field. */
static bool storage_error(api_req_t *req, int ret)
{
	static const struct {
		int code;
		unsigned status;
		const char *text;
	} table[] = {
		{ -ENOSPC, 507, "data directory: disk full, nothing was written" },
		{ -EROFS, 503, "data directory: read-only file system, nothing "
		               "was written" },
		{ -EACCES, 503, "data directory: permission denied, nothing was "
		                "written" },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].code == ret) {
			api_error(req, table[i].status, 1000 + table[i].status,
			          "%s", table[i].text);
			return true;
		}
	}
	return false;
}

void api_error_code(api_req_t *req, int ret, const char *what)
{
	static const struct {
		int code;
		unsigned status;
		const char *text;
	} table[] = {
		{ ZC_ENOZONE, 404, "zone not found" },
		{ KNOT_ENOENT, 404, "not found" },
		{ ZC_EEXISTS, 409, "already exists" },
		{ ZC_EUSAGE, 400, "invalid request" },
		{ ZC_EBUSY, 503, "busy, retry" },
		{ ZC_ETOOBIG, 413, "too large" },
		/* Cloudflare answers its record quota with 400 too. */
		{ ZC_ETOOMANY, 400, "the zone would hold more records than "
		  "zone-max-records allows" },
		{ KNOT_EOUTOFZONE, 400, "name: outside the zone" },
		{ ZC_ENAMEKEY, 400, "name: too long to be stored (a name of "
		  "the root zone with over 240 octets 0x00 or 0x01)" },
	};
	if (storage_error(req, ret)) {
		return;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].code == ret) {
			api_error(req, table[i].status, 1000 + table[i].status,
			          "%s: %s", what, table[i].text);
			return;
		}
	}
	zc_error("api: %s: %s", what, zc_strerror(ret));
	api_error(req, 500, 1500, "%s: internal error", what);
}

const char *api_query_arg(api_req_t *req, const char *key)
{
	return req->lookup(req->lookup_ctx, false, key, 0);
}

const char *api_query_arg_nth(api_req_t *req, const char *key,
                              unsigned index)
{
	return req->lookup(req->lookup_ctx, false, key, index);
}

bool api_query_has(api_req_t *req, const char *key)
{
	const char *k;
	for (unsigned i = 0; (k = req->lookup(req->lookup_ctx, false, NULL, i));
	     i++) {
		if (strcmp(k, key) == 0) {
			return true;
		}
	}
	return false;
}

bool api_args_only(api_req_t *req, const char *const *allowed)
{
	req->args_checked = true;
	const char *k;
	for (unsigned i = 0; (k = req->lookup(req->lookup_ctx, false, NULL, i));
	     i++) {
		bool known = strcmp(req->method, "GET") != 0 &&
		             strcmp(k, "wait") == 0;
		for (size_t j = 0; allowed != NULL && allowed[j] != NULL && !known;
		     j++) {
			known = strcmp(k, allowed[j]) == 0;
		}
		if (!known) {
			api_error(req, 400, 1004, "%.200s: not a parameter of this "
			          "request (zonecast answers what it does not "
			          "implement with 400 rather than ignore it)", k);
			return false;
		}
	}
	return true;
}

const char *api_header(api_req_t *req, const char *key)
{
	return req->lookup(req->lookup_ctx, true, key, 0);
}

const char *api_header_nth(api_req_t *req, const char *key, unsigned index)
{
	return req->lookup(req->lookup_ctx, true, key, index);
}

unsigned api_header_count(api_req_t *req, const char *key)
{
	unsigned n = 0;
	while (req->lookup(req->lookup_ctx, true, key, n) != NULL) {
		n++;
	}
	return n;
}

/* A JSON media type: application/json, parameters (charset) allowed. */
static bool is_json_type(const char *type)
{
	while (*type == ' ' || *type == '\t') {
		type++;
	}
	size_t n = strlen("application/json");
	return strncasecmp(type, "application/json", n) == 0 &&
	       strchr("; \t", type[n]) != NULL; /* Also matches the '\0'. */
}

json_t *api_body_json(api_req_t *req)
{
	json_error_t err;
	const char *type = api_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (type != NULL && !is_json_type(type)) {
		/* Cloudflare's code for it; no Content-Type at all is taken
		 * as JSON. */
		api_error(req, 415, 6105, "Content-Type: %.64s is not "
		          "application/json", type);
		return NULL;
	}
	if (req->body_len == 0) {
		api_error(req, 400, 9207, "body: a JSON object is required");
		return NULL;
	}
	json_t *j = json_loadb(req->body, req->body_len, 0, &err);
	if (j == NULL) {
		api_error(req, 400, 9207, "body: invalid JSON at line %d column "
		          "%d: %s", err.line, err.column, err.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		api_error(req, 400, 9207, "body: a JSON object is required");
		return NULL;
	}
	return j;
}

void api_id_format(int64_t id, char out[33])
{
	snprintf(out, 33, "%032llx", (unsigned long long)id);
}

int64_t api_id_parse(const char *text)
{
	char *end;
	if (text == NULL || strlen(text) == 0 || strlen(text) > 32) {
		return 0;
	}
	unsigned long long v = strtoull(text, &end, 16);
	return (*end == '\0' && v <= INT64_MAX) ? (int64_t)v : 0;
}

/* A decimal integer in [min, max], all of text. */
static bool parse_long(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
		return false;
	}
	*out = v;
	return true;
}

bool api_paging(api_req_t *req, long *page, long *per_page)
{
	const char *p = api_query_arg(req, "page");
	const char *pp = api_query_arg(req, "per_page");
	*page = 1;
	*per_page = 100;
	/* Bounded so that (page - 1) * per_page stays far from overflow. */
	if (p != NULL && !parse_long(p, 1, API_MAX_PAGE, page)) {
		api_error(req, 400, 1004, "page: an integer from 1 to %d",
		          API_MAX_PAGE);
		return false;
	}
	if (pp != NULL && !parse_long(pp, 1, API_MAX_PER_PAGE, per_page)) {
		api_error(req, 400, 1004, "per_page: an integer from 1 to %d",
		          API_MAX_PER_PAGE);
		return false;
	}
	return true;
}

void api_list_result(api_req_t *req, int ret, json_t *list, long page,
                     long per_page, long total, const char *what)
{
	if (ret != ZC_EOK) {
		json_decref(list);
		api_error_code(req, ret, what);
		return;
	}
	long count = (long)json_array_size(list);
	req->result_info = json_pack("{s:i, s:i, s:i, s:i, s:i}", "page",
	                             (int)page, "per_page", (int)per_page,
	                             "count", (int)count, "total_count",
	                             (int)total, "total_pages",
	                             (int)((total + per_page - 1) / per_page));
	req->result = list;
}

bool api_allowed(api_req_t *req, int64_t zone_id, bool write)
{
	if (write && req->read_only) {
		api_error(req, 403, 9109, "token: read-only token");
		return false;
	}
	if (req->token_zone != 0 && req->token_zone != zone_id) {
		api_error(req, 403, 9109, "token: not valid for this zone");
		return false;
	}
	return true;
}

json_t *api_time(int64_t ms)
{
	char buf[40];
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ms % 1000));
	return json_string(buf);
}

int api_time_parse(const char *text, int64_t *ms)
{
	struct tm tm = { 0 };
	const char *rest = strptime(text, "%Y-%m-%d", &tm);
	if (rest == NULL) {
		return ZC_EUSAGE;
	}
	int millis = 0;
	if (*rest == 'T' || *rest == 't') {
		rest = strptime(rest + 1, "%H:%M:%S", &tm);
		if (rest != NULL && *rest == '.') {
			int digits = 0;
			for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++) {
				if (digits < 3) {
					millis = millis * 10 + (*rest - '0');
				}
			}
			for (; digits > 0 && digits < 3; digits++) {
				millis *= 10;
			}
		}
		if (rest == NULL || (strcmp(rest, "Z") != 0 && strcmp(rest, "z") != 0 &&
		                     strcmp(rest, "+00:00") != 0)) {
			return ZC_EUSAGE;
		}
	} else if (*rest != '\0') {
		return ZC_EUSAGE;
	}
	time_t t = timegm(&tm);
	if (t == (time_t)-1) {
		return ZC_EUSAGE;
	}
	*ms = (int64_t)t * 1000 + millis;
	return ZC_EOK;
}

void api_id_text(int64_t id, char out[33])
{
	api_id_format(id, out);
}

int64_t api_id_value(const char *text)
{
	return api_id_parse(text);
}

static records_store_t *pool_get(api_t *api, int *slot)
{
	pthread_mutex_lock(&api->pool_lock);
	for (int i = 0; i < API_POOL_SIZE; i++) {
		if (!api->pool_used[i]) {
			api->pool_used[i] = true;
			if (api->pool[i] == NULL &&
			    records_open(&api->pool[i], api->cfg.data_dir) != ZC_EOK) {
				api->pool_used[i] = false;
				break;
			}
			*slot = i;
			pthread_mutex_unlock(&api->pool_lock);
			return api->pool[i];
		}
	}
	pthread_mutex_unlock(&api->pool_lock);
	return NULL;
}

static void pool_put(api_t *api, int slot)
{
	pthread_mutex_lock(&api->pool_lock);
	api->pool_used[slot] = false;
	pthread_mutex_unlock(&api->pool_lock);
}

/* Splits the path after the prefix into segments (modifies path). */
static int split(char *path, char **parts)
{
	int n = 0;
	char *save = NULL;
	for (char *p = strtok_r(path, "/", &save); p != NULL && n < MAX_PARTS;
	     p = strtok_r(NULL, "/", &save)) {
		parts[n++] = p;
	}
	return n;
}

static void route(api_req_t *req, const char *url)
{
	if (strncmp(url, PREFIX, strlen(PREFIX)) != 0) {
		api_error(req, 404, 7003, "url: no route for %s", url);
		return;
	}
	char path[1024];
	snprintf(path, sizeof(path), "%s", url + strlen(PREFIX));
	char *parts[MAX_PARTS];
	int n = split(path, parts);
	if (n >= 1 && strcmp(parts[0], "zones") == 0) {
		api_zones(req, parts, n);
		return;
	}
	if (n >= 1 && strcmp(parts[0], "user") == 0) {
		api_user(req, parts, n);
		return;
	}
	if (n >= 1 && strcmp(parts[0], "fleet") == 0) {
		api_fleet(req, parts, n);
		return;
	}
	api_error(req, 404, 7003, "url: no route for %s", url);
}

char *api_response(api_req_t *req, size_t *len, bool *json)
{
	if (req->raw != NULL && req->errors == NULL) {
		char *text = req->raw;
		req->raw = NULL;
		*len = req->raw_len;
		*json = false;
		return text;
	}
	bool ok = req->errors == NULL;
	json_t *messages = json_array();
	if (ok && req->note[0] != '\0') {
		json_array_append_new(messages, json_pack("{s:i, s:s}", "code",
		                      req->note_code ? req->note_code : 1202,
		                      "message", req->note));
	}
	json_t *env = json_pack("{s:b, s:o, s:o, s:o}", "success", ok,
	                        "errors", ok ? json_array() : req->errors,
	                        "messages", messages,
	                        "result", (ok && req->result) ? req->result :
	                        json_null());
	if (!ok && req->result != NULL) {
		json_decref(req->result);
	}
	req->errors = NULL;
	req->result = NULL;
	if (ok && req->result_info != NULL) {
		json_object_set(env, "result_info", req->result_info);
	}
	if (ok && req->version != 0) {
		json_object_set_new(env, "zone_version",
		                    json_integer(req->version));
	}
	if (ok && req->version != 0 && req->wait_live) {
		json_object_set_new(env, "zone_live", json_boolean(req->live));
	}
	char *text = json_dumps(env, JSON_COMPACT);
	json_decref(env);
	*len = text != NULL ? strlen(text) : 0;
	*json = true;
	return text;
}

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
	if (req->version != 0 && req->status < 400) {
		char v[24];
		snprintf(v, sizeof(v), "%lld", (long long)req->version);
		MHD_add_response_header(resp, "X-Zone-Version", v);
		if (req->wait_live) {
			MHD_add_response_header(resp, "X-Zone-Live",
			                        req->live ? "true" : "false");
		}
	}
	req->answered = true;
	enum MHD_Result r = MHD_queue_response(conn,
	                                       req->status ? req->status : 200,
	                                       resp);
	MHD_destroy_response(resp);
	return r;
}

/* The body limit: api-max-body. */
static size_t max_body(const api_t *api)
{
	size_t max = __atomic_load_n(&api->cfg.max_body, __ATOMIC_RELAXED);
	return max ? max : API_DEFAULT_MAX_BODY;
}

void api_dispatch(api_req_t *req, const char *url)
{
	if (req->too_big) {
		api_error(req, 413, 1413, "body: larger than the limit of %zu "
		          "bytes (api-max-body)", max_body(req->api));
		return;
	}
	int slot = -1;
	req->rs = pool_get(req->api, &slot);
	if (req->rs == NULL) {
		api_error(req, 503, 1503, "server: no database connection free");
		return;
	}
	bool get = strcmp(req->method, "GET") == 0;
	if (api_authenticate(req) == ZC_EOK && api_wait_arg(req) &&
	    (get || api_args_only(req, NULL))) {
		route(req, url);
		/* A GET whose handler takes no arguments: any given is one
		 * zonecast does not implement (a GET has changed nothing). */
		if (get && !req->args_checked && req->errors == NULL) {
			api_args_only(req, NULL);
		}
	}
	pool_put(req->api, slot);
	/* After the connection went back: waiting holds none. */
	api_wait_live(req);
	api_audit(req, url);
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
	return end != cl && n > max_body(req->api);
}

int api_req_body(api_req_t *req, const char *data, size_t size)
{
	size_t max = max_body(req->api);
	if (req->too_big || req->body_len + size > max) {
		/* A body without Content-Length: read on to answer 413,
		 * but a client that sends twice the limit is cut off. */
		req->discarded += size;
		req->too_big = true;
		return req->discarded > max ? ZC_ETOOBIG : ZC_EOK;
	}
	char *grown = realloc(req->body, req->body_len + size + 1);
	if (grown == NULL) {
		return KNOT_ENOMEM;
	}
	req->body = grown;
	memcpy(req->body + req->body_len, data, size);
	req->body_len += size;
	req->body[req->body_len] = '\0';
	return ZC_EOK;
}

void api_req_clear(api_req_t *req)
{
	json_decref(req->result);
	json_decref(req->result_info);
	json_decref(req->errors);
	free(req->body);
	free(req->raw);
	req->result = req->result_info = req->errors = NULL;
	req->body = req->raw = NULL;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
	(void)version;
	api_t *api = cls;
	api_req_t *req = *con_cls;
	if (req == NULL) {
		req = calloc(1, sizeof(*req));
		if (req == NULL) {
			return MHD_NO;
		}
		req->api = api;
		req->lookup = mhd_lookup;
		req->lookup_ctx = conn;
		req->method = method;
		client_address(conn, req->client, sizeof(req->client));
		*con_cls = req;
		if (announced_too_big(req)) {
			req->too_big = true;
			api_error(req, 413, 1413, "body: larger than the limit of "
			          "%zu bytes (api-max-body)", max_body(api));
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
	if (req->too_big && req->answered) {
		return MHD_YES; /* Answered at the first call. */
	}
	api_dispatch(req, url);
	return respond(conn, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode code)
{
	(void)cls, (void)conn, (void)code;
	api_req_t *req = *con_cls;
	if (req == NULL) {
		return;
	}
	api_req_clear(req);
	free(req);
	*con_cls = NULL;
}

int api_new(const api_config_t *cfg, api_t **out)
{
	api_t *api = calloc(1, sizeof(*api));
	if (api == NULL) {
		return KNOT_ENOMEM;
	}
	api->cfg = *cfg;
	pthread_mutex_init(&api->pool_lock, NULL);
	api->writer = cfg->writer;
	*out = api;
	return ZC_EOK;
}

void api_free(api_t *api)
{
	if (api == NULL) {
		return;
	}
	for (int i = 0; i < API_POOL_SIZE; i++) {
		records_close(api->pool[i]);
	}
	pthread_mutex_destroy(&api->pool_lock);
	free(api);
}

int api_bind(const char *listen_addr, int *fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ret = server_parse_addr(listen_addr, &ss, &len);
	if (ret != ZC_EOK) {
		zc_error("api: invalid address '%s'", listen_addr);
		return ret;
	}
	int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		return -errno;
	}
	/* SO_REUSEADDR: a restart is not kept out by connections of the
	 * last run in TIME_WAIT; another listener still is. */
	int on = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss.ss_family == AF_INET6) {
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	if (bind(s, (struct sockaddr *)&ss, len) != 0 ||
	    listen(s, SOMAXCONN) != 0) {
		ret = -errno;
		zc_error("api: cannot listen on %s: %s", listen_addr,
		         ret == -EADDRINUSE ? "address already in use (by "
		         "another zonecast or another server; nothing was "
		         "started)" : strerror(-ret));
		close(s);
		return ret;
	}
	*fd = s;
	return ZC_EOK;
}

int api_start(const api_config_t *cfg, api_t **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	api_t *api;
	int ret = server_parse_addr(cfg->listen, &ss, &len);
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
	                               per_ip, MHD_OPTION_END);
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
	MHD_stop_daemon(api->daemon);
	api_free(api);
}
