/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/dns_records/import and .../export: a zone's
 * records from and to a BIND master file, as Cloudflare's endpoints take
 * and give them. An import is one unit of the group committer (one zone
 * version), its records written as a batch's posts are (record_write.c);
 * records already present are skipped, the zone keeps its own SOA and
 * its signer publishes its own keys (the file's DNSKEY, CDS and CDNSKEY
 * are skipped; its RRSIG, NSEC, NSEC3 are refused). A
 * file whose RRset has two TTLs is refused, as `zonecast zone import`
 * refuses it (records/rules.h): taking it would let the file's order
 * pick the TTL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "api/content.h"
#include "api/dns_records.h"
#include "api/import_export.h"
#include "api/reply.h"
#include "api/request.h"
#include "api/txt.h"
#include "common/error.h"
#include "records/rules.h"
#include "zonefile/zonefile.h"

/* The write path (record_write.c, through dns_records.c), under the name
 * the code below was written with in dns_records.c (moved from there
 * verbatim). */
static int run_unit(api_req_t *req, const records_zone_t *zone, op_t *ops,
                    size_t count, int64_t *last_id, int *skipped)
{
	return api_dns_records_run(req, zone, ops, count, last_id, skipped);
}

/* One record of the file, for the check of its RRset's TTL. */
typedef struct {
	knot_dname_t *owner;   /* Lowercased. */
	uint16_t type;
	uint32_t ttl;
	uint64_t line;
} seen_t;

typedef struct {
	api_req_t *req;
	const knot_dname_t *apex;
	json_t *posts;
	uint64_t *lines;        /* The line of each of posts. */
	size_t lines_size;
	int skipped;
	int ttl_errors;         /* TTLs over 2^31-1 reported. */
	seen_t *seen;
	size_t seen_count, seen_size;
	bool no_memory;
} import_t;

static void note_seen(import_t *imp, const knot_dname_t *owner,
                      uint16_t type, uint32_t ttl, uint64_t line)
{
	if (imp->seen_count == imp->seen_size) {
		size_t size = imp->seen_size ? 2 * imp->seen_size : 64;
		seen_t *grown = realloc(imp->seen, size * sizeof(*grown));
		if (grown == NULL) {
			imp->no_memory = true;
			return;
		}
		imp->seen = grown;
		imp->seen_size = size;
	}
	knot_dname_t *copy = knot_dname_copy(owner, NULL);
	if (copy == NULL) {
		imp->no_memory = true;
		return;
	}
	knot_dname_to_lower(copy);
	imp->seen[imp->seen_count++] = (seen_t){ .owner = copy, .type = type,
	                                         .ttl = ttl, .line = line };
}

/* By RRset, then by line. */
static int seen_cmp(const void *a, const void *b)
{
	const seen_t *x = a, *y = b;
	int c = knot_dname_cmp(x->owner, y->owner);
	if (c != 0) {
		return c;
	}
	if (x->type != y->type) {
		return x->type < y->type ? -1 : 1;
	}
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Refuses the file (a 400 naming the line) when an RRset of it has two
 * TTLs: the earliest line that disagrees with its RRset's first one. */
static void check_ttls(import_t *imp)
{
	if (imp->seen_count < 2) {
		return;
	}
	qsort(imp->seen, imp->seen_count, sizeof(*imp->seen), seen_cmp);
	const seen_t *bad = NULL, *bad_head = NULL, *head = imp->seen;
	for (size_t i = 1; i < imp->seen_count; i++) {
		const seen_t *e = &imp->seen[i];
		if (e->type != head->type ||
		    knot_dname_cmp(e->owner, head->owner) != 0) {
			head = e; /* The next RRset, its first line first. */
		} else if (e->ttl != head->ttl &&
		           (bad == NULL || e->line < bad->line)) {
			bad = e;
			bad_head = head;
		}
	}
	if (bad == NULL) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1], tname[32];
	knot_dname_to_str(name, bad->owner, sizeof(name));
	knot_rrtype_to_string(bad->type, tname, sizeof(tname));
	api_error(imp->req, 400, 1036, "file: line %llu: %s: %s %s has TTL "
	          "%u here and %u at line %llu", (unsigned long long)bad->line,
	          records_rules_reason(RECORDS_RULE_TTL_DIFFERS), name, tname,
	          bad->ttl, bad_head->ttl, (unsigned long long)bad_head->line);
}

static void free_seen(import_t *imp)
{
	for (size_t i = 0; i < imp->seen_count; i++) {
		free(imp->seen[i].owner);
	}
	free(imp->seen);
}

static int import_record(const knot_dname_t *owner, uint16_t type,
                         uint32_t ttl, const uint8_t *rdata,
                         uint16_t rdata_len, const char *file, uint64_t line,
                         void *ctx)
{
	(void)file;
	import_t *imp = ctx;
	if ((type == KNOT_RRTYPE_SOA ||
	     records_rules_is_published_key(type)) &&
	    records_rules_in_zone(imp->apex, owner)) {
		/* The zone keeps its own SOA, and its signer publishes its
		 * own keys: an export of a signed zone (its DNSKEY, CDS and
		 * CDNSKEY in it) read back failed on the first DNSKEY. One
		 * outside the zone is refused, as any record there; so are
		 * signatures and denial records (RRSIG, NSEC, NSEC3,
		 * NSEC3PARAM), as `zonecast zone import` refuses them: served
		 * as they were, they were another signer's, stale. */
		imp->skipped++;
		return 0;
	}
	if (ttl > INT32_MAX) {
		api_error(imp->req, 400, 1036, "file: line %llu: a TTL over "
		          "2^31-1 (RFC 2181 section 8)", (unsigned long long)line);
		/* Parsing goes on, as after a syntax error, up to 100. */
		return ++imp->ttl_errors >= 100;
	}
	/* Records the write refuses for their own reason (a DNSSEC type,
	 * whose RRSIGs differ in TTL by type covered; a name outside the
	 * zone) are left to that refusal. */
	if (!records_rules_is_signer_type(type) &&
	    records_rules_in_zone(imp->apex, owner)) {
		note_seen(imp, owner, type, ttl, line);
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1], tname[32];
	static __thread char content[API_CONTENT_MAX];
	int priority;
	knot_dname_to_str(name, owner, sizeof(name));
	knot_rrtype_to_string(type, tname, sizeof(tname));
	if (api_content_format(owner, type, rdata, rdata_len, API_FORM_TEXT,
	                       content, sizeof(content), &priority) != ZC_EOK) {
		return 1;
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:I}", "name", name, "type",
	                      tname, "content", content, "ttl", (json_int_t)ttl);
	if (priority >= 0) {
		json_object_set_new(j, "priority", json_integer(priority));
	}
	size_t n = json_array_size(imp->posts);
	if (n == imp->lines_size) {
		size_t size = n ? 2 * n : 64;
		uint64_t *grown = realloc(imp->lines, size * sizeof(*grown));
		if (grown == NULL) {
			json_decref(j);
			imp->no_memory = true;
			return 0;
		}
		imp->lines = grown;
		imp->lines_size = size;
	}
	imp->lines[n] = line;
	json_array_append_new(imp->posts, j);
	return 0;
}

static void import_error(const char *file, uint64_t line, const char *msg,
                         void *ctx)
{
	import_t *imp = ctx;
	api_error(imp->req, 400, 1036, "file: line %llu: %s",
	          (unsigned long long)line, msg);
	(void)file;
}

/* The master file of an import: the "file" part of a multipart form (as
 * Cloudflare's clients send it), or the raw body. */
static const char *import_text(api_req_t *req, size_t *len)
{
	const char *type = api_header(req, "Content-Type");
	*len = req->body_len;
	if (type == NULL || strncmp(type, "multipart/form-data", 19) != 0) {
		return req->body;
	}
	const char *b = strstr(type, "boundary=");
	if (b == NULL || req->body == NULL) {
		return NULL;
	}
	/* boundary=VALUE or boundary="VALUE" (RFC 2046 section 5.1.1; .NET
	 * quotes it), up to the next parameter. */
	char boundary[256];
	b += 9;
	bool quoted = *b == '"';
	snprintf(boundary, sizeof(boundary), "--%s", b + quoted);
	char *q = strchr(boundary, quoted ? '"' : ';');
	if (q != NULL) {
		*q = '\0';
	} else if (quoted) {
		return NULL;
	}
	if (boundary[2] == '\0') {
		return NULL; /* 1 to 70 characters (RFC 2046 section 5.1.1). */
	}
	for (char *part = strstr(req->body, boundary); part != NULL;
	     part = strstr(part + 1, boundary)) {
		char *head_end = strstr(part, "\r\n\r\n");
		if (head_end == NULL) {
			return NULL;
		}
		if (memmem(part, head_end - part, "name=\"file\"", 11) == NULL) {
			continue;
		}
		char *start = head_end + 4;
		char *end = memmem(start, req->body + req->body_len - start,
		                   boundary, strlen(boundary));
		if (end == NULL) {
			return NULL;
		}
		*len = (size_t)(end - start);
		if (*len >= 2 && start[*len - 2] == '\r') {
			*len -= 2;
		}
		return start;
	}
	return NULL;
}

void api_dns_records_import(api_req_t *req, const records_zone_t *zone)
{
	size_t len;
	const char *text = import_text(req, &len);
	if (text == NULL || len == 0) {
		api_error(req, 400, 1036, "file: a master file is required");
		return;
	}
	/* len bytes, NUL bytes included (strndup() stopped at the first one
	 * and the parser read len bytes past it). */
	char *copy = malloc(len + 1);
	if (copy == NULL) {
		api_error(req, 500, 1500, "server: out of memory");
		return;
	}
	/* Lines may end in CRLF: form encoders write them so (Cloudflare's
	 * TypeScript SDK sends a file given as a string as a form field,
	 * every LF made CRLF), as do files saved on Windows. A CR before
	 * an LF goes; any other CR is left for the parser to refuse. */
	size_t n_out = 0;
	for (size_t i = 0; i < len; i++) {
		if (!(text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')) {
			copy[n_out++] = text[i];
		}
	}
	len = n_out;
	copy[len] = '\0';
	import_t imp = { .req = req, .apex = zone->apex, .posts = json_array() };
	zonefile_handler_t h = { .record = import_record, .error = import_error,
	                         .ctx = &imp };
	int ret = zonefile_parse_text(copy, len, zone->apex, zone->default_ttl, &h);
	free(copy);
	size_t n = json_array_size(imp.posts);
	if (ret == ZC_EOK && req->errors == NULL && imp.no_memory) {
		api_error(req, 500, 1500, "server: out of memory");
	}
	if (ret == ZC_EOK && req->errors == NULL && n > MAX_BATCH) {
		api_error(req, 413, 1413, "file: more than %d records", MAX_BATCH);
	}
	if (ret == ZC_EOK && req->errors == NULL) {
		check_ttls(&imp);
	}
	if (ret == ZC_EOK && req->errors == NULL) {
		op_t *ops = calloc(n ? n : 1, sizeof(*ops));
		for (size_t i = 0; i < n; i++) {
			ops[i] = (op_t){ .op = OP_POST,
			                 .fields = json_array_get(imp.posts, i),
			                 .line = imp.lines[i] };
		}
		int present = 0;
		if (run_unit(req, zone, ops, n, NULL, &present) == ZC_EOK) {
			req->result = json_pack("{s:i, s:i}", "recs_added",
			                        (int)n - present, "total_records_parsed",
			                        (int)n + imp.skipped);
		}
		free(ops);
	} else if (req->errors == NULL) {
		api_error(req, 400, 1036, "file: not a valid master file");
	}
	free_seen(&imp);
	free(imp.lines);
	json_decref(imp.posts);
}

void api_dns_records_export(api_req_t *req, const records_zone_t *zone)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret = f ? zonefile_export(req->rs, zone->apex, f) : KNOT_ENOMEM;
	if (f != NULL) {
		fclose(f);
	}
	if (ret != ZC_EOK) {
		free(buf);
		api_error_code(req, ret, "export");
		return;
	}
	req->raw = buf;
	req->raw_len = len;
}
