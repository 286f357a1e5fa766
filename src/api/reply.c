/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The answer to an API request: errors (with the one table mapping
 * zonecast codes to HTTP statuses), a listing's result_info, and the
 * Cloudflare envelope the response body carries.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <libknot/errcode.h>

#include "api/json_text.h"
#include "api/reply.h"
#include "common/error.h"
#include "common/log.h"
#include "records/changelog.h"

void api_error(api_req_t *req, unsigned status, int code, const char *fmt, ...)
{
	char msg[2048]; /* A name quoted with escapes is up to 1,004 characters. */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Messages quote what the client sent (a URL, a header), and a cut
	 * may split a character: JSON strings must be UTF-8, or jansson
	 * drops the message. */
	for (size_t i = 0, n; msg[i] != '\0'; i += n) {
		n = json_text_utf8_len((const unsigned char *)msg + i);
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

/* One answer for every method a path does not take, wherever it is
 * found (router.c's table or a handler), so the status, the code and the
 * Allow field (req->allow, set when the path matched) always agree. */
void api_method_not_allowed(api_req_t *req)
{
	api_error(req, 405, 1000, "method: not allowed here; this path takes "
	          "%s", req->allow != NULL ? req->allow : "no method");
}

/* The records store cannot take the request: the condition is the
 * server's, not the request's, so the message names it rather than a
 * field. A read (GET, HEAD) is not told "nothing was written"; a
 * read-only PostgreSQL (a standby, default_transaction_read_only) is not
 * blamed on the data directory. */
static bool storage_error(api_req_t *req, int ret)
{
	static const struct {
		int code;
		unsigned status;
		const char *text;
		bool says_written; /* The text says what became of a write. */
	} table[] = {
		{ -ENOSPC, 507, "data directory: disk full", false },
		{ -EROFS, 503, "data directory: read-only file system", false },
		{ -EACCES, 503, "data directory: permission denied", false },
		{ ZC_EUNAVAILABLE, 503, "records store (PostgreSQL) unavailable",
		  false },
		{ ZC_ESESSIONEND, 503, "records store (PostgreSQL) session ended:"
		  " idle past its timeout", false },
		{ ZC_EINDOUBT, 503, "records store (PostgreSQL) connection lost"
		  " at commit: the write may or may not have been made; read"
		  " before retrying", true },
	};
	bool reading = api_method_reads(req->method);
	bool pg = req->rs != NULL &&
	          records_changelog_numbering(req->rs) == RECORDS_LOG_COMMITS;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].code != ret) {
			continue;
		}
		const char *text = pg && ret == -EROFS ?
		                   "records store (PostgreSQL): read-only (a "
		                   "standby, or default_transaction_read_only set)" :
		                   table[i].text;
		api_error(req, table[i].status, 1000 + table[i].status, "%s%s%s",
		          text, table[i].says_written ? "" : reading ? "" :
		          ", nothing was written",
		          ret == ZC_EUNAVAILABLE || ret == ZC_ESESSIONEND ||
		          reading ? ": retry" : "");
		return true;
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

/* Cloudflare's result_info of a page of count results. */
static void list_info(api_req_t *req, long count, long page, long per_page,
                      long total)
{
	req->result_info = json_pack("{s:i, s:i, s:i, s:i, s:i}", "page",
	                             (int)page, "per_page", (int)per_page,
	                             "count", (int)count, "total_count",
	                             (int)total, "total_pages",
	                             (int)((total + per_page - 1) / per_page));
}

void api_list_result(api_req_t *req, int ret, json_t *list, long page,
                     long per_page, long total, const char *what)
{
	if (ret != ZC_EOK) {
		json_decref(list);
		api_error_code(req, ret, what);
		return;
	}
	list_info(req, (long)json_array_size(list), page, per_page, total);
	req->result = list;
}

void api_list_result_text(api_req_t *req, int ret, json_text_t *items,
                          long count, long page, long per_page, long total,
                          const char *what)
{
	if (ret == ZC_EOK) {
		json_text_lit(items, "]");
		req->result_text = json_text_take(items, &req->result_text_len);
		ret = req->result_text != NULL ? ZC_EOK : KNOT_ENOMEM;
	}
	json_text_free(items);
	if (ret != ZC_EOK) {
		api_error_code(req, ret, what);
		return;
	}
	list_info(req, count, page, per_page, total);
}

/* The envelope of a successful answer whose result was written as text
 * (req->result_text), in the order and form the jansson envelope below
 * has: success, errors, messages, result, result_info, zone_version,
 * zone_live. Takes messages. */
static char *envelope_text(api_req_t *req, json_t *messages, size_t *len,
                           bool *json)
{
	json_text_t t = { 0 };
	json_text_lit(&t, "{\"success\":true,\"errors\":[],\"messages\":");
	json_text_value(&t, messages);
	json_decref(messages);
	json_text_lit(&t, ",\"result\":");
	json_text_raw(&t, req->result_text, req->result_text_len);
	free(req->result_text);
	req->result_text = NULL;
	if (req->result_info != NULL) {
		json_text_lit(&t, ",\"result_info\":");
		json_text_value(&t, req->result_info);
	}
	if (req->versioned) {
		json_text_lit(&t, ",\"zone_version\":");
		json_text_int(&t, req->version);
	}
	if (req->versioned && req->wait_live) {
		if (req->live) {
			json_text_lit(&t, ",\"zone_live\":true");
		} else {
			json_text_lit(&t, ",\"zone_live\":false");
		}
	}
	json_text_lit(&t, "}");
	*json = true;
	return json_text_take(&t, len);
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
	if (ok && req->result_text != NULL) {
		return envelope_text(req, messages, len, json);
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
	if (ok && req->versioned) {
		json_object_set_new(env, "zone_version",
		                    json_integer(req->version));
	}
	if (ok && req->versioned && req->wait_live) {
		json_object_set_new(env, "zone_live", json_boolean(req->live));
	}
	char *text = json_dumps(env, JSON_COMPACT);
	json_decref(env);
	*len = text != NULL ? strlen(text) : 0;
	*json = true;
	return text;
}
