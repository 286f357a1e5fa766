/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/dns_records: list, create, get, put, patch,
 * delete, batch (import and export: import_export.c).
 *
 * Here: the routing, the reading of one record, and the single and batch
 * writes as requests and answers. A write's body has its members checked
 * (record_fields.c), then its ops run in one unit with the zone rules
 * (record_write.c); record_unit.h tells which file does what.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "api/audit.h"
#include "api/dns_records.h"
#include "api/format.h"
#include "api/node_cache.h"
#include "api/record_fields.h"
#include "api/record_json.h"
#include "api/record_list.h"
#include "api/record_unit.h"
#include "api/record_write.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"

/* --- Reading --- */

typedef struct {
	const records_zone_t *zone;
	json_t *record;
	char etag[64];
} one_t;

static int one_record(const records_record_t *rec, void *ctx)
{
	one_t *o = ctx;
	o->record = api_record_json(o->zone, rec);
	api_record_write_etag(rec->id, rec->modified_on, o->etag,
	                      sizeof(o->etag));
	return 1;
}

static void get_record(api_req_t *req, const records_zone_t *zone,
                       int64_t id)
{
	one_t o = { .zone = zone };
	int ret = records_record_find(req->rs, zone->id, id, one_record, &o);
	if (ret == ZC_EOK && o.record == NULL) {
		ret = KNOT_ENOENT;
	}
	if (ret == KNOT_ENOENT) {
		char idtxt[33];
		api_id_format(id, idtxt);
		api_error(req, 404, RECORD_MISSING_CODE, RECORD_MISSING,
		          "dns_record_id", idtxt);
		return;
	}
	if (ret != ZC_EOK) {
		json_decref(o.record);
		api_error_code(req, ret, "dns_record_id");
		return;
	}
	req->result = o.record;
	snprintf(req->etag, sizeof(req->etag), "%s", o.etag);
}

/* A committed single write's answer: the record read back (as the store
 * has it now), or, when that read fails (the connection lost, the zone
 * deleted right after), the record as the unit wrote it: the write is
 * committed, and an error would tell the client that nothing was. */
static void answer_written(api_req_t *req, const records_zone_t *zone,
                           int64_t id, const op_t *op)
{
	one_t o = { .zone = zone };
	int ret = records_record_find(req->rs, zone->id, id, one_record, &o);
	if (ret == ZC_EOK && o.record != NULL) {
		req->result = o.record;
		snprintf(req->etag, sizeof(req->etag), "%s", o.etag);
		return;
	}
	json_decref(o.record);
	if (op->written != NULL) {
		req->result = json_incref(op->written);
		snprintf(req->etag, sizeof(req->etag), "%s", op->etag);
		return;
	}
	api_error_code(req, ret == ZC_EOK ? KNOT_ENOENT : ret, "dns_record_id");
}

/* --- Writing --- */

/* Single-record write: POST, PUT, PATCH, DELETE; answers with the record
 * as stored (read back, so the id and times are the store's). */
static void single(api_req_t *req, const records_zone_t *zone, int kind,
                   int64_t id)
{
	json_t *body = NULL;
	if (kind != OP_DELETE && (body = api_body_json(req)) == NULL) {
		return;
	}
	if (body != NULL &&
	    !api_record_fields_members(req, body, "", kind == OP_POST ? 0 : id,
	                               kind == OP_POST ? 0 : zone->id)) {
		json_decref(body);
		return;
	}
	op_t op = { .op = kind, .id = id, .fields = body };
	int64_t last = 0;
	if (api_record_write_run(req, zone, &op, 1, &last, NULL,
	                         NULL) == ZC_EOK) {
		if (kind == OP_DELETE) {
			char rid[33];
			api_id_format(id, rid);
			req->result = json_pack("{s:s}", "id", rid);
		} else {
			answer_written(req, zone, last, &op);
		}
	}
	json_decref(op.written);
	json_decref(body);
}

/* Appends the ops of one batch list ("deletes", "patches", ...). */
static bool batch_ops(api_req_t *req, int64_t zone_id, json_t *body,
                      const char *key, int kind, op_t *ops, size_t *count)
{
	json_t *list = json_object_get(body, key);
	if (list == NULL) {
		return true;
	}
	if (!json_is_array(list)) {
		api_error(req, 400, 1004, "%s: an array is required", key);
		return false;
	}
	size_t i;
	json_t *item;
	json_array_foreach(list, i, item) {
		if (*count == MAX_BATCH || !json_is_object(item)) {
			api_error(req, 400, 1004, "%s[%zu]: an object is required "
			          "(at most %d changes a batch)", key, i, MAX_BATCH);
			return false;
		}
		char where[32];
		snprintf(where, sizeof(where), "%s[%zu].", key, i);
		static const char *const id_only[] = { "id", NULL };
		if (kind == OP_DELETE ?
		    !api_members_only(req, item, where, id_only, "a delete takes "
		                      "the record's id") :
		    !api_record_fields_members(req, item, where, 0,
		                               kind == OP_POST ? 0 : zone_id)) {
			return false;
		}
		op_t *op = &ops[(*count)++];
		op->op = kind;
		op->fields = item;
		op->list = key;
		op->index = i;
		op->id = 0;
		if (kind != OP_POST) {
			op->id = api_id_parse(json_string_value(json_object_get(item,
			                                                        "id")));
			if (op->id <= 0) {
				api_error(req, 400, 1004, "%s[%zu].id: a record id is "
				          "required", key, i);
				return false;
			}
		}
	}
	return true;
}

/* The result of a batch in Cloudflare's shape: per list, the records as
 * they were deleted and as the unit wrote them, from the node cache it
 * kept in step with its writes (after all its ops: an id written twice
 * is answered twice as it ends). Not read back after the commit: that
 * cost a statement and a decoding per record, and would answer with
 * another request's change to a record made between the commit and the
 * read instead of what this batch did. Written as text (json_text.h):
 * the jansson objects of 1,000 records cost more than the rest of the
 * answer. */
static void batch_result(api_req_t *req, const records_zone_t *zone,
                         op_t *ops, size_t count,
                         const api_node_cache_t *cache)
{
	static const char *const keys[] = { [OP_DELETE] = "deletes",
	                                    [OP_PATCH] = "patches",
	                                    [OP_PUT] = "puts",
	                                    [OP_POST] = "posts" };
	static const int order[] = { OP_DELETE, OP_PATCH, OP_PUT, OP_POST };
	json_text_t t = { 0 };
	json_text_lit(&t, "{");
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		if (k > 0) {
			json_text_lit(&t, ",");
		}
		json_text_str(&t, keys[order[k]]);
		json_text_lit(&t, ":[");
		bool first = true;
		for (size_t i = 0; i < count; i++) {
			if ((int)ops[i].op != order[k]) {
				continue;
			}
			records_record_t rec;
			bool deleted = ops[i].op == OP_DELETE &&
			               ops[i].deleted != NULL;
			bool written = ops[i].op != OP_DELETE &&
			               ops[i].result_id > 0 &&
			               api_node_cache_known(cache,
			                                    ops[i].result_id,
			                                    &rec);
			if (!deleted && !written) {
				continue;
			}
			if (!first) {
				json_text_lit(&t, ",");
			}
			first = false;
			if (deleted) {
				json_text_value(&t, ops[i].deleted);
				api_audit_id(req, json_string_value(
					json_object_get(ops[i].deleted, "id")));
			} else {
				char id[33];
				api_id_format(rec.id, id);
				api_record_json_text(&t, zone, &rec);
				api_audit_id(req, id);
			}
		}
		json_text_lit(&t, "]");
	}
	json_text_lit(&t, "}");
	req->result_text = json_text_take(&t, &req->result_text_len);
	if (req->result_text == NULL) {
		api_error(req, 500, 1500, "server: out of memory");
	}
}

/* POST .../batch: deletes, patches, puts, posts in that order, all or
 * nothing, one zone version. */
static void batch(api_req_t *req, const records_zone_t *zone)
{
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	static const char *const lists[] = { "deletes", "patches", "puts",
	                                     "posts", NULL };
	op_t *ops = calloc(MAX_BATCH, sizeof(*ops));
	size_t count = 0;
	bool ok = ops != NULL &&
	          api_members_only(req, body, "", lists, "a batch takes deletes, "
	                           "patches, puts and posts") &&
	          batch_ops(req, zone->id, body, "deletes", OP_DELETE, ops, &count) &&
	          batch_ops(req, zone->id, body, "patches", OP_PATCH, ops, &count) &&
	          batch_ops(req, zone->id, body, "puts", OP_PUT, ops, &count) &&
	          batch_ops(req, zone->id, body, "posts", OP_POST, ops, &count);
	api_node_cache_t *cache = ok ? malloc(sizeof(*cache)) : NULL;
	if (cache != NULL) {
		api_node_cache_init(cache);
	}
	if (ops == NULL || (ok && cache == NULL)) {
		api_error(req, 500, 1500, "server: out of memory");
	} else if (ok && api_record_write_run(req, zone, ops, count, NULL, NULL,
	                                      cache) == ZC_EOK) {
		batch_result(req, zone, ops, count, cache);
	}
	if (cache != NULL) {
		api_node_cache_deinit(cache);
		free(cache);
	}
	for (size_t i = 0; i < count; i++) {
		json_decref(ops[i].deleted);
	}
	free(ops);
	json_decref(body);
}

/* For import_export.c: ops in one unit, as api_record_write_run() runs
 * them. */
int api_dns_records_run(api_req_t *req, const records_zone_t *zone,
                        op_t *ops, size_t count, int64_t *last_id,
                        int *skipped)
{
	return api_record_write_run(req, zone, ops, count, last_id, skipped,
	                            NULL);
}

void api_dns_records(api_req_t *req, int64_t zone_id, char **parts,
                     int count)
{
	records_zone_t zone;
	int ret = records_zone_get(req->rs, zone_id, &zone);
	if (ret != ZC_EOK) {
		api_error_code(req, ret, "zone_id");
		return;
	}
	const char *m = req->method;
	bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
	if (count == 0 && get) {
		api_record_list(req, &zone);
	} else if (count == 0 && post) {
		single(req, &zone, OP_POST, 0);
	} else if (count == 1 && strcmp(parts[0], "batch") == 0 && post) {
		batch(req, &zone);
	} else if (count == 1) {
		int64_t id = api_id_parse(parts[0]);
		if (id <= 0) {
			/* Not an id's form: no record has it. */
			api_error(req, 404, RECORD_MISSING_CODE, RECORD_MISSING,
			          "dns_record_id", "of that id");
		} else if (get) {
			get_record(req, &zone, id);
		} else if (strcmp(m, "PUT") == 0) {
			single(req, &zone, OP_PUT, id);
		} else if (strcmp(m, "PATCH") == 0) {
			single(req, &zone, OP_PATCH, id);
		} else if (strcmp(m, "DELETE") == 0) {
			single(req, &zone, OP_DELETE, id);
		} else {
			api_method_not_allowed(req);
		}
	} else {
		api_error(req, 404, 7003, "url: no such resource");
	}
}
