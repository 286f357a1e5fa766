/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A record as the API shows it (Cloudflare's shape), for the record
 * endpoints (dns_records.c) and the listing (record_list.c). */
#include <string.h>
#include <libknot/descriptor.h>

#include "api/content.h"
#include "api/format.h"
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

json_t *api_record_json(const records_zone_t *zone,
                        const records_record_t *rec)
{
	char id[33], zid[33], name[KNOT_DNAME_TXT_MAXLEN + 1], zname[256];
	char type[32];
	static __thread char content[70000];
	int priority;
	api_id_format(rec->id, id);
	api_id_format(zone->id, zid);
	api_name_format(rec->owner, name, sizeof(name));
	api_name_format(zone->apex, zname, sizeof(zname));
	knot_rrtype_to_string(rec->type, type, sizeof(type));
	uint8_t soa[2 * KNOT_DNAME_MAXLEN + 20];
	const uint8_t *rdata = rec->rdata;
	if (rec->type == KNOT_RRTYPE_SOA && rec->rdata_len >= 22 &&
	    rec->rdata_len <= sizeof(soa)) {
		/* The zone row holds the live serial (RFC 1035 §3.3.13). */
		memcpy(soa, rec->rdata, rec->rdata_len);
		uint8_t *p = soa + rec->rdata_len - 20;
		p[0] = zone->serial >> 24, p[1] = zone->serial >> 16;
		p[2] = zone->serial >> 8, p[3] = zone->serial;
		rdata = soa;
	}
	if (api_content_format(rec->owner, rec->type, rdata, rec->rdata_len,
	                       rec->api_form, content, sizeof(content),
	                       &priority) != ZC_EOK) {
		content[0] = '\0';
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:b,"
	                      " s:o, s:o, s:o, s:o, s:{}}",
	                      "id", id, "zone_id", zid, "zone_name", zname,
	                      "name", name, "type", type, "content", content,
	                      "ttl", (json_int_t)rec->ttl, "proxied", 0,
	                      "proxiable", 0,
	                      "comment", rec->comment ? json_string(rec->comment) :
	                      json_null(), "tags", tags_json(rec->tags),
	                      "created_on", api_time(rec->created_on),
	                      "modified_on", api_time(rec->modified_on), "meta");
	if (priority >= 0) {
		json_object_set_new(j, "priority", json_integer(priority));
	}
	return j;
}
