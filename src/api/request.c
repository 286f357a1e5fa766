/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a handler reads of its request: query arguments (and the check
 * that no other is given), header fields, the body (kept under the
 * api-max-body limit) and the body as a JSON object, paging arguments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libknot/errcode.h>
#include <microhttpd.h>

#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"

#define API_MAX_PAGE 100000000
#define API_MAX_PER_PAGE 50000

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
		/* Given twice, the first won unsaid (GET /zones?name=a&name=b);
		 * the tag filters of a records list repeat by design. */
		unsigned given = 0;
		const char *other;
		for (unsigned j = 0; (other = req->lookup(req->lookup_ctx, false,
		                                          NULL, j)); j++) {
			given += strcmp(other, k) == 0;
		}
		if (given > 1 && strncmp(k, "tag.", 4) != 0) {
			api_error(req, 400, 1004, "%.200s: given more than once", k);
			return false;
		}
		/* Without a value ("?name", "?wait") it was taken as not
		 * given: a filter so listed the whole zone. (Cloudflare's
		 * comment.present and comment.absent are flags.) */
		bool valueless = false;
		for (unsigned n = 0; n < given && !valueless; n++) {
			valueless = req->lookup(req->lookup_ctx, false, k, n) ==
			            NULL;
		}
		if (valueless && strcmp(k, "comment.present") != 0 &&
		    strcmp(k, "comment.absent") != 0) {
			api_error(req, 400, 1004, "%.200s: a value is required "
			          "(NAME=VALUE)", k);
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

/* The key jansson found twice in an object: the string token that ends
 * just before err->position (jansson stops right after it). Inside a
 * JSON string a '"' is always escaped, so the opening quote is the first
 * one before it preceded by an even number of backslashes. */
static void duplicate_key(api_req_t *req, const json_error_t *err)
{
	size_t end = err->position > 0 ? (size_t)err->position : 0;
	json_t *key = NULL;
	if (end >= 2 && end <= req->body_len && req->body[end - 1] == '"') {
		size_t open = end - 1;
		while (open > 0) {
			open--;
			size_t slashes = 0;
			while (open >= slashes + 1 &&
			       req->body[open - slashes - 1] == '\\') {
				slashes++;
			}
			if (req->body[open] == '"' && slashes % 2 == 0) {
				break;
			}
		}
		char *text = malloc(end - open + 3);
		if (text != NULL && req->body[open] == '"') {
			text[0] = '[';
			memcpy(text + 1, req->body + open, end - open);
			memcpy(text + 1 + end - open, "]", 2);
			key = json_loads(text, 0, NULL);
		}
		free(text);
	}
	const char *name = json_string_value(json_array_get(key, 0));
	if (name != NULL) {
		api_error(req, 400, 9207, "%.200s: given twice in one object "
		          "(line %d column %d); zonecast refuses a duplicate "
		          "member rather than pick one", name, err->line,
		          err->column);
	} else {
		api_error(req, 400, 9207, "body: a member is given twice in one "
		          "object (line %d column %d)", err->line, err->column);
	}
	json_decref(key);
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
	json_t *j = json_loadb(req->body, req->body_len,
	                       JSON_REJECT_DUPLICATES, &err);
	if (j == NULL && json_error_code(&err) == json_error_duplicate_key) {
		duplicate_key(req, &err);
		return NULL;
	}
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

bool api_members_only(api_req_t *req, json_t *obj, const char *where,
                      const char *const *allowed, const char *takes)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool known = false;
		for (size_t i = 0; allowed[i] != NULL && !known; i++) {
			known = strcmp(key, allowed[i]) == 0;
		}
		if (!known) {
			api_error(req, 400, 1004, "%s%.200s: not a member of this "
			          "object (%s; zonecast refuses what it does not know "
			          "rather than ignore it)", where, key, takes);
			return false;
		}
	}
	return true;
}

/* A decimal integer in [min, max], all of text, digits only (strtol
 * alone also takes leading blanks and a sign: " 5", "+5"). */
static bool parse_long(const char *text, long min, long max, long *out)
{
	if (*text < '0' || *text > '9') {
		return false;
	}
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

size_t api_max_body(const api_t *api)
{
	size_t max = __atomic_load_n(&api->cfg.max_body, __ATOMIC_RELAXED);
	return max ? max : API_DEFAULT_MAX_BODY;
}

int api_req_body(api_req_t *req, const char *data, size_t size)
{
	size_t max = api_max_body(req->api);
	if (req->too_big || req->body_len + size > max) {
		/* A body without Content-Length: read on to answer 413,
		 * but a client that sends twice the limit is cut off. Counted
		 * in all octets received, kept and discarded: a piece that
		 * crosses the limit is discarded whole, and counting only the
		 * discarded cut off a single chunk of 1.5 times the limit
		 * with no answer at all. */
		req->discarded += size;
		req->too_big = true;
		return req->body_len + req->discarded > 2 * max ? ZC_ETOOBIG :
		       ZC_EOK;
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
	free(req->result_text);
	req->result = req->result_info = req->errors = NULL;
	req->body = req->raw = req->result_text = NULL;
}
