/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A record as the API shows it (Cloudflare's shape, with its "data" for
 * the types that have one: record_data.c), for the record
 * endpoints (dns_records.c), their write unit (record_write.c: what it
 * deleted and wrote) and the listing (record_list.c): as a jansson
 * object, or written as text into an answer (json_text.h). */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "api/content.h"
#include "api/format.h"
#include "api/record_data.h"
#include "api/record_json.h"
#include "common/error.h"

/* A record's tags as stored (a JSON array of strings), or []. */
static json_t *tags_json(const char *text)
{
	json_t *tags = text != NULL ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_array(tags)) {
		json_decref(tags);
		tags = json_array();
	}
	return tags;
}

/* The record's fields as the API writes them. */
typedef struct {
	char id[33], zid[33], name[KNOT_DNAME_TXT_MAXLEN + 1], zname[256];
	char type[32];
	char *content;  /* A per-thread buffer. */
	int priority;   /* -1: none. */
	char created[API_TIME_LEN], modified[API_TIME_LEN];
} fields_t;

static void fields(const records_zone_t *zone, const records_record_t *rec,
                   fields_t *f)
{
	static __thread char content[API_CONTENT_MAX];
	api_id_format(rec->id, f->id);
	api_id_format(zone->id, f->zid);
	api_name_format(rec->owner, f->name, sizeof(f->name));
	api_name_format(zone->apex, f->zname, sizeof(f->zname));
	knot_rrtype_to_string(rec->type, f->type, sizeof(f->type));
	uint8_t soa[2 * KNOT_DNAME_MAXLEN + 20];
	const uint8_t *rdata = rec->rdata;
	if (rec->type == KNOT_RRTYPE_SOA && rec->rdata_len >= 22 &&
	    rec->rdata_len <= sizeof(soa)) {
		memcpy(soa, rec->rdata, rec->rdata_len);
		records_soa_set_serial(soa, rec->rdata_len, zone->serial);
		rdata = soa;
	}
	f->content = content;
	if (api_content_format(rec->owner, rec->type, rdata, rec->rdata_len,
	                       rec->api_form, content, sizeof(content),
	                       &f->priority) != ZC_EOK) {
		content[0] = '\0';
	}
	api_time_text(rec->created_on, f->created);
	api_time_text(rec->modified_on, f->modified);
}

/* The TTL as the API shows it: 1 for Cloudflare's "automatic". */
static uint32_t shown_ttl(const records_record_t *rec)
{
	return (rec->api_form & RECORDS_API_TTL_AUTO) ? 1 : rec->ttl;
}

/* A JSON string of s, read as json_text_str() writes it: a byte that is
 * not UTF-8 as Latin-1, where json_string() would refuse the string and
 * the record would go missing from every answer. */
static json_t *string_of(const char *s)
{
	char *valid = json_text_utf8_valid(s);
	json_t *j = json_string(valid != NULL ? valid : s);
	free(valid);
	return j;
}

json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec)
{
	fields_t f;
	fields(zone, rec, &f);
	json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:s, s:o, s:I, s:b, s:b,"
	                      " s:o, s:o, s:s, s:s, s:{}}",
	                      "id", f.id, "zone_id", f.zid,
	                      "zone_name", string_of(f.zname),
	                      "name", string_of(f.name), "type", f.type,
	                      "content", string_of(f.content),
	                      "ttl", (json_int_t)shown_ttl(rec), "proxied", 0,
	                      "proxiable", 0,
	                      "comment", rec->comment ? string_of(rec->comment) :
	                      json_null(), "tags", tags_json(rec->tags),
	                      "created_on", f.created,
	                      "modified_on", f.modified, "meta");
	if (j != NULL && f.priority >= 0) {
		json_object_set_new(j, "priority", json_integer(f.priority));
	}
	json_t *data = api_content_data(rec->type, f.content, f.priority);
	if (j != NULL && data != NULL) {
		json_object_set_new(j, "data", data);
	} else {
		json_decref(data);
	}
	return j;
}

/* Appends "key": (its comma before, unless first). */
static void key(json_text_t *t, const char *k, bool first)
{
	if (!first) {
		json_text_lit(t, ",");
	}
	json_text_str(t, k);
	json_text_lit(t, ":");
}

void api_record_json_text(json_text_t *t, const records_zone_t *zone,
                          const records_record_t *rec)
{
	fields_t f;
	fields(zone, rec, &f);
	static const char *const names[] = { "id", "zone_id", "zone_name",
	                                     "name", "type", "content" };
	const char *values[] = { f.id, f.zid, f.zname, f.name, f.type,
	                         f.content };
	json_text_lit(t, "{");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		key(t, names[i], i == 0);
		json_text_str(t, values[i]);
	}
	key(t, "ttl", false);
	json_text_int(t, (int64_t)shown_ttl(rec));
	json_text_lit(t, ",\"proxied\":false,\"proxiable\":false");
	key(t, "comment", false);
	if (rec->comment != NULL) {
		json_text_str(t, rec->comment);
	} else {
		json_text_lit(t, "null");
	}
	key(t, "tags", false);
	if (rec->tags != NULL) {
		json_t *tags = tags_json(rec->tags);
		json_text_value(t, tags);
		json_decref(tags);
	} else {
		json_text_lit(t, "[]");
	}
	key(t, "created_on", false);
	json_text_str(t, f.created);
	key(t, "modified_on", false);
	json_text_str(t, f.modified);
	json_text_lit(t, ",\"meta\":{}");
	if (f.priority >= 0) {
		key(t, "priority", false);
		json_text_int(t, f.priority);
	}
	json_t *data = api_content_data(rec->type, f.content, f.priority);
	if (data != NULL) {
		key(t, "data", false);
		json_text_value(t, data);
		json_decref(data);
	}
	json_text_lit(t, "}");
}
