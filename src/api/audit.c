/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The API's audit lines (common/audit.h): every write request's outcome
 * (accepted, with the record ids its result names, those of a batch's
 * lists, and the zone's new version; or refused,
 * with the status and the first error), and every request refused for
 * its credentials (401, 403), whatever its method. Reads are not logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "api/audit.h"
#include "common/audit.h"

#define IDS_MAX 20

typedef __typeof__(((api_req_t *)0)->audit_ids) ids_t;

/* Room kept at the end of the text for ",+N more". */
#define MORE_ROOM 24

static void add_id_text(ids_t *ids, const char *one)
{
	ids->count++;
	size_t n = strlen(one) + (ids->len ? 1 : 0);
	if (ids->shown < IDS_MAX &&
	    ids->len + n + MORE_ROOM < sizeof(ids->text)) {
		snprintf(ids->text + ids->len, sizeof(ids->text) - ids->len,
		         "%s%s", ids->len ? "," : "", one);
		ids->len += n;
		ids->shown++;
	}
}

static void add_id(ids_t *ids, const json_t *id)
{
	char one[48];
	if (json_is_integer(id)) {
		snprintf(one, sizeof(one), "%" JSON_INTEGER_FORMAT,
		         json_integer_value(id));
	} else if (json_is_string(id)) {
		snprintf(one, sizeof(one), "%s", json_string_value(id));
	} else {
		return;
	}
	add_id_text(ids, one);
}

void api_audit_id(api_req_t *req, const char *id)
{
	if (id == NULL) {
		return;
	}
	char one[48];
	snprintf(one, sizeof(one), "%s", id);
	add_id_text(&req->audit_ids, one);
}

/* The ids a write's result names: its own "id", or those of a batch's
 * lists. */
static void collect_ids(const json_t *result, ids_t *ids)
{
	static const char *const lists[] = { "deletes", "patches", "puts",
	                                     "posts" };
	if (!json_is_object(result)) {
		return;
	}
	const json_t *id = json_object_get(result, "id");
	if (id != NULL) {
		add_id(ids, id);
		return;
	}
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(result, lists[l]), i, item) {
			add_id(ids, json_object_get(item, "id"));
		}
	}
}

/* The first error's message ("" when none). */
static const char *first_error(const api_req_t *req)
{
	const json_t *e = json_array_get(req->errors, 0);
	const char *msg = json_string_value(json_object_get(e, "message"));
	return msg != NULL ? msg : "";
}

void api_audit(const api_req_t *req, const char *url)
{
	unsigned status = req->status ? req->status : 200;
	bool refused = status >= 400;
	bool credentials = status == 401 || status == 403;
	if (req->method == NULL || (api_method_reads(req->method) && !credentials)) {
		return;
	}
	zc_audit_t a;
	zc_audit_begin(&a, "api", refused ? "refused" : "accepted");
	/* A line must never name a shorter path than the one served (a
	 * record's DELETE read as its zone's): a long one is shortened
	 * where it says so, with its length (common/audit.h). */
	size_t op_size = strlen(req->method) + strlen(url) + 2;
	char *op = malloc(op_size);
	if (op != NULL) {
		snprintf(op, op_size, "%s %s", req->method, url);
	}
	zc_audit_str(&a, "operation", op != NULL ? op : req->method);
	free(op);
	zc_audit_num(&a, "token", req->token_id);
	zc_audit_fixed(&a, "client", req->client[0] ? req->client : "-");
	if (req->live_zone_id != 0) {
		char zone[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(zone, req->live_apex, sizeof(zone));
		zc_audit_str(&a, "zone", zone);
	}
	zc_audit_num(&a, "status", status);
	if (refused) {
		zc_audit_str(&a, "reason", first_error(req));
		zc_audit_end(&a);
		return;
	}
	ids_t ids = req->audit_ids;
	collect_ids(req->result, &ids);
	if (ids.count > ids.shown) {
		snprintf(ids.text + ids.len, sizeof(ids.text) - ids.len,
		         "%s+%u more", ids.len ? "," : "", ids.count - ids.shown);
	}
	zc_audit_fixed(&a, "ids", ids.count ? ids.text : "-");
	if (req->versioned) {
		zc_audit_num(&a, "version", req->version);
	}
	zc_audit_end(&a);
}
