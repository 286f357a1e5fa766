/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * /client/v4/zones/{zone_id}/secondaries (zonecast's own resource): the
 * zone's secondaries, on top of the server-wide `notify` and
 * `allow-transfer` keys:
 *
 *   GET   -> {"notify": ["192.0.2.2:53 key xfr-key", ...],
 *             "allow_transfer": ["192.0.2.0/24", "key xfr-key", ...]}
 *   PUT   the same object: replaces both lists (a missing one: empty)
 *   PATCH the same object: replaces the lists it names
 *
 * Entries have the syntax of the config keys (transfer/secondary.h); a
 * key an entry names must exist. The change takes effect without a
 * restart: the next transfer request reads it, the notifier within a
 * second (notifying a new target at once). No zone version is made: the
 * zone's data does not change.
 */
#include <string.h>
#include <libknot/dname.h>

#include "api/reply.h"
#include "api/request.h"
#include "api/secondaries.h"
#include "common/error.h"
#include "transfer/secondary.h"

#define LIST_MAX 64

typedef struct {
	json_t *notify, *transfer;
} show_t;

static int show_entry(int64_t zone_id, records_secondary_kind_t kind,
                      const char *spec, void *ctx)
{
	(void)zone_id;
	show_t *s = ctx;
	json_array_append_new(kind == RECORDS_SECONDARY_NOTIFY ? s->notify :
	                      s->transfer, json_string(spec));
	return 0;
}

static json_t *secondaries_json(records_store_t *rs, int64_t zone_id,
                                int *ret)
{
	show_t s = { json_array(), json_array() };
	*ret = records_secondaries_foreach(rs, zone_id, show_entry, &s);
	return json_pack("{s:o, s:o}", "notify", s.notify, "allow_transfer",
	                 s.transfer);
}

/* One list of the request, checked. */
typedef struct {
	bool present;
	const char *spec[LIST_MAX];
	size_t count;
	uint8_t keys[LIST_MAX][KNOT_DNAME_MAXLEN]; /* Named keys, to check. */
	size_t key_count;
} list_t;

typedef struct {
	int64_t zone_id;
	int64_t key_zone;       /* Keys must be this zone's (0: any zone's). */
	list_t notify, transfer;
	char err[1200];
} set_t;

/* Reads body[field] into l; false after a 400. */
static bool read_list(api_req_t *req, json_t *body, const char *field,
                      bool notify, list_t *l)
{
	json_t *arr = json_object_get(body, field);
	if (arr == NULL || json_is_null(arr)) {
		l->present = arr != NULL;
		return true;
	}
	l->present = true;
	if (!json_is_array(arr) || json_array_size(arr) > LIST_MAX) {
		api_error(req, 400, 1004, "%s: an array of at most %d strings is "
		          "required", field, LIST_MAX);
		return false;
	}
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) {
		const char *text = json_string_value(v);
		char err[512] = "not a string";
		zc_acl_t acl = { .count = 0 };
		secondary_keys_t keys = { .count = 0 };
		secondary_notify_t target;
		bool ok = text != NULL && strlen(text) < SECONDARY_TEXT_MAX &&
		          (notify ? secondary_notify_parse(text, &target, err,
		                                           sizeof(err)) :
		           secondary_acl_parse(text, &acl, &keys, err,
		                               sizeof(err))) == ZC_EOK;
		if (!ok) {
			api_error(req, 400, 1004, "%s[%zu]: %s", field, i, err);
			return false;
		}
		l->spec[l->count++] = text;
		const uint8_t *key = notify ? (target.has_key ? target.key : NULL) :
		                     (keys.count > 0 ? keys.name[0] : NULL);
		if (key != NULL) {
			memcpy(l->keys[l->key_count++], key, knot_dname_size(key));
		}
	}
	return true;
}

/* Every key the lists name exists; with a token limited to one zone, it
 * must be a key of that zone. */
static int check_keys(records_store_t *rs, const list_t *l, int64_t key_zone,
                      const char *field, char *err, size_t size)
{
	for (size_t i = 0; i < l->key_count; i++) {
		records_tsig_key_t key;
		int ret = records_tsig_find(rs, l->keys[i], &key);
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, l->keys[i], sizeof(name));
		if (ret == ZC_ENOKEY) {
			snprintf(err, size, "%s: no TSIG key %s (create it first: "
			         "POST /zones/{id}/tsig_keys)", field, name);
			return ZC_EUSAGE;
		}
		if (ret == ZC_EOK && key_zone != 0 && key.zone_id != key_zone) {
			snprintf(err, size, "%s: key %s belongs to another zone "
			         "(this token may name only this zone's keys)",
			         field, name);
			return ZC_EUSAGE;
		}
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ZC_EOK;
}

static int set_unit(records_store_t *rs, void *ctx)
{
	set_t *s = ctx;
	/* The zone's row first (records_secondaries_set()). */
	records_zone_t zone;
	int ret = records_zone_get(rs, s->zone_id, &zone);
	if (ret == ZC_EOK) {
		ret = check_keys(rs, &s->notify, s->key_zone, "notify", s->err,
		                 sizeof(s->err));
	}
	if (ret == ZC_EOK) {
		ret = check_keys(rs, &s->transfer, s->key_zone, "allow_transfer",
		                 s->err, sizeof(s->err));
	}
	if (ret == ZC_EOK && s->notify.present) {
		ret = records_secondaries_set(rs, s->zone_id,
		                              RECORDS_SECONDARY_NOTIFY,
		                              s->notify.spec, s->notify.count);
	}
	if (ret == ZC_EOK && s->transfer.present) {
		ret = records_secondaries_set(rs, s->zone_id,
		                              RECORDS_SECONDARY_TRANSFER,
		                              s->transfer.spec, s->transfer.count);
	}
	return ret;
}

static void set_secondaries(api_req_t *req, const records_zone_t *zone,
                            bool replace)
{
	json_t *body = api_body_json(req);
	if (body == NULL) {
		return;
	}
	static const char *const members[] = { "notify", "allow_transfer",
	                                       NULL };
	set_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		api_error_code(req, KNOT_ENOMEM, "secondaries");
		json_decref(body);
		return;
	}
	s->zone_id = zone->id;
	s->key_zone = req->token_zone != 0 ? zone->id : 0;
	if (!json_is_object(body)) {
		api_error(req, 400, 1004, "body: an object with \"notify\" and "
		          "\"allow_transfer\" is required");
	} else if (api_members_only(req, body, "", members, "secondaries are "
	                            "notify and allow_transfer") &&
	           read_list(req, body, "notify", true, &s->notify) &&
	           read_list(req, body, "allow_transfer", false,
	                     &s->transfer)) {
		s->notify.present |= replace;
		s->transfer.present |= replace;
		writer_unit_t u = { .fn = set_unit, .ctx = s };
		int ret = writer_run_unit(req->api->writer, &u);
		if (ret == ZC_EUSAGE && !u.lost) {
			api_error(req, 400, 1004, "%s", s->err);
		} else if (ret != ZC_EOK) {
			api_error_code(req, ret, "secondaries");
		} else {
			req->result = secondaries_json(req->rs, zone->id, &ret);
		}
	}
	free(s);
	json_decref(body);
}

void api_secondaries(api_req_t *req, const records_zone_t *zone)
{
	const char *m = req->method;
	if (strcmp(m, "GET") == 0) {
		int ret;
		json_t *j = secondaries_json(req->rs, zone->id, &ret);
		if (ret != ZC_EOK) {
			json_decref(j);
			api_error_code(req, ret, "secondaries");
		} else {
			req->result = j;
		}
	} else if (strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0) {
		set_secondaries(req, zone, strcmp(m, "PUT") == 0);
	} else {
		api_method_not_allowed(req);
	}
}
