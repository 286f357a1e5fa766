/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Cloudflare's "data" object as content: the type's rdata fields in
 * master-file order, numbers as decimal integers, character-strings
 * quoted (CAA value, NAPTR flags, service and regexp, URI target), the
 * rest (names, base64, hex, SVCB parameters) as they are.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "api/content.h"
#include "api/record_data.h"
#include "common/error.h"

typedef enum {
	NONE = 0,
	NUM,       /* An integer, 0 to 2^32-1. */
	TEXT,      /* A string, as it is. */
	QUOTED,    /* A string, as a quoted character-string. */
	PRIO,      /* The priority: data's, else the record's. */
	OWNER,     /* A part of the owner, not of the content. */
	DEC,       /* A decimal number, up to 3 places (LOC's seconds). */
	METERS,    /* A decimal number of meters, up to 2 places ("12.5m"). */
} kind_t;

typedef struct {
	const char *name;
	kind_t kind;
} field_t;

#define MAX_FIELDS 12

static const struct {
	uint16_t type;
	field_t f[MAX_FIELDS];
} forms[] = {
	{ KNOT_RRTYPE_CAA, { { "flags", NUM }, { "tag", TEXT },
	                     { "value", QUOTED } } },
	{ KNOT_RRTYPE_CERT, { { "type", NUM }, { "key_tag", NUM },
	                      { "algorithm", NUM }, { "certificate", TEXT } } },
	{ KNOT_RRTYPE_DS, { { "key_tag", NUM }, { "algorithm", NUM },
	                    { "digest_type", NUM }, { "digest", TEXT } } },
	{ KNOT_RRTYPE_HTTPS, { { "priority", NUM }, { "target", TEXT },
	                       { "value", TEXT } } },
	{ KNOT_RRTYPE_SVCB, { { "priority", NUM }, { "target", TEXT },
	                      { "value", TEXT } } },
	{ KNOT_RRTYPE_NAPTR, { { "order", NUM }, { "preference", NUM },
	                       { "flags", QUOTED }, { "service", QUOTED },
	                       { "regex", QUOTED }, { "replacement", TEXT } } },
	{ KNOT_RRTYPE_SMIMEA, { { "usage", NUM }, { "selector", NUM },
	                        { "matching_type", NUM },
	                        { "certificate", TEXT } } },
	{ KNOT_RRTYPE_TLSA, { { "usage", NUM }, { "selector", NUM },
	                      { "matching_type", NUM },
	                      { "certificate", TEXT } } },
	{ KNOT_RRTYPE_SRV, { { "priority", PRIO }, { "weight", NUM },
	                     { "port", NUM }, { "target", TEXT },
	                     { "service", OWNER }, { "proto", OWNER },
	                     { "name", OWNER } } },
	{ KNOT_RRTYPE_SSHFP, { { "algorithm", NUM }, { "type", NUM },
	                       { "fingerprint", TEXT } } },
	{ KNOT_RRTYPE_URI, { { "priority", PRIO }, { "weight", NUM },
	                     { "target", QUOTED } } },
	{ KNOT_RRTYPE_LOC, { { "lat_degrees", NUM }, { "lat_minutes", NUM },
	                     { "lat_seconds", DEC }, { "lat_direction", TEXT },
	                     { "long_degrees", NUM }, { "long_minutes", NUM },
	                     { "long_seconds", DEC }, { "long_direction", TEXT },
	                     { "altitude", METERS }, { "size", METERS },
	                     { "precision_horz", METERS },
	                     { "precision_vert", METERS } } },
};

#define TYPES "CAA, CERT, DS, HTTPS, LOC, NAPTR, SMIMEA, SRV, SSHFP, " \
	"SVCB, TLSA and URI"

/* Appends text to out at *pos; false when out of room. */
static bool put(char *out, size_t size, size_t *pos, const char *text)
{
	size_t n = strlen(text);
	if (*pos + n + 1 > size) {
		return false;
	}
	memcpy(out + *pos, text, n + 1);
	*pos += n;
	return true;
}

/* Appends s as a quoted character-string ('"' and '\' escaped). */
static bool put_quoted(char *out, size_t size, size_t *pos, const char *s)
{
	char c[3] = { 0 };
	bool ok = put(out, size, pos, "\"");
	for (; ok && *s != '\0'; s++) {
		c[0] = *s == '"' || *s == '\\' ? '\\' : *s;
		c[1] = *s == '"' || *s == '\\' ? *s : '\0';
		ok = put(out, size, pos, c);
	}
	return ok && put(out, size, pos, "\"");
}

int api_data_content(uint16_t type, json_t *data, int priority, char *out,
                     size_t size, int *own_priority, char *err,
                     size_t err_size)
{
	*own_priority = -1;
	size_t form = 0;
	while (form < sizeof(forms) / sizeof(forms[0]) &&
	       forms[form].type != type) {
		form++;
	}
	if (form == sizeof(forms) / sizeof(forms[0])) {
		snprintf(err, err_size, "data: zonecast reads data only for "
		         TYPES " records; give this type's record in content");
		return ZC_EUSAGE;
	}
	if (!json_is_object(data)) {
		snprintf(err, err_size, "data: an object is required");
		return ZC_EUSAGE;
	}
	const field_t *f = forms[form].f;
	const char *key;
	json_t *v;
	json_object_foreach(data, key, v) {
		bool known = false;
		for (size_t i = 0; i < MAX_FIELDS && f[i].name && !known; i++) {
			known = strcmp(key, f[i].name) == 0;
		}
		if (!known) {
			snprintf(err, err_size, "data.%.100s: not a member of this "
			         "type's data (zonecast refuses what it does not "
			         "know rather than ignore it)", key);
			return ZC_EUSAGE;
		}
	}
	size_t pos = 0;
	out[0] = '\0';
	for (size_t i = 0; i < MAX_FIELDS && f[i].name != NULL; i++) {
		if (f[i].kind == OWNER) {
			continue; /* api_data_srv_owner(). */
		}
		v = json_object_get(data, f[i].name);
		char num[24];
		bool ok = pos == 0 || put(out, size, &pos, " ");
		if (f[i].kind == PRIO && json_is_integer(v)) {
			*own_priority = json_integer_value(v) >= 0 &&
			                json_integer_value(v) <= 65535 ?
			                (int)json_integer_value(v) : 65536;
		}
		if (f[i].kind == PRIO && v == NULL && priority >= 0) {
			snprintf(num, sizeof(num), "%d", priority);
			ok = ok && put(out, size, &pos, num);
		} else if (v == NULL) {
			snprintf(err, err_size, "data.%s: required", f[i].name);
			return ZC_EUSAGE;
		} else if (f[i].kind == DEC || f[i].kind == METERS) {
			if (!json_is_number(v)) {
				snprintf(err, err_size, "data.%s: a number is "
				         "required", f[i].name);
				return ZC_EUSAGE;
			}
			snprintf(num, sizeof(num), f[i].kind == DEC ? "%.3f" :
			         "%.2fm", json_number_value(v));
			ok = ok && put(out, size, &pos, num);
		} else if (f[i].kind == NUM || f[i].kind == PRIO) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > UINT32_MAX) {
				snprintf(err, err_size, "data.%s: a number is "
				         "required", f[i].name);
				return ZC_EUSAGE;
			}
			snprintf(num, sizeof(num), "%lld",
			         (long long)json_integer_value(v));
			ok = ok && put(out, size, &pos, num);
		} else if (!json_is_string(v)) {
			snprintf(err, err_size, "data.%s: a string is required",
			         f[i].name);
			return ZC_EUSAGE;
		} else if (f[i].kind == QUOTED) {
			ok = ok && put_quoted(out, size, &pos, json_string_value(v));
		} else {
			ok = ok && put(out, size, &pos, json_string_value(v));
		}
		if (!ok) {
			snprintf(err, err_size, "data: too long");
			return ZC_EUSAGE;
		}
	}
	return ZC_EOK;
}

/* Whether s is one label of a service name or protocol ("_sip",
 * "_tcp"): letters, digits, '-' and '_', 1 to 63 of them. */
static bool service_label(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
	                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
	return n > 0 && n <= 63 && s[n] == '\0';
}

int api_data_srv_owner(const knot_dname_t *apex, const json_t *data,
                       uint8_t owner[KNOT_DNAME_MAXLEN], char *err,
                       size_t err_size)
{
	static const char *const keys[] = { "service", "proto", "name" };
	const char *part[3];
	int given = 0;
	for (int i = 0; i < 3; i++) {
		const json_t *v = json_object_get(data, keys[i]);
		given += v != NULL;
		part[i] = json_string_value(v);
		if (v != NULL && part[i] == NULL) {
			snprintf(err, err_size, "data.%s: a string is required",
			         keys[i]);
			return ZC_EUSAGE;
		}
	}
	if (given == 0) {
		return -ENOENT;
	}
	if (given != 3) {
		snprintf(err, err_size, "data: service, proto and name name "
		         "the owner together; give all three or none");
		return ZC_EUSAGE;
	}
	for (int i = 0; i < 2; i++) {
		if (!service_label(part[i])) {
			snprintf(err, err_size, "data.%s: one label of letters, "
			         "digits, '-' and '_' (\"_sip\", \"_tcp\")",
			         keys[i]);
			return ZC_EUSAGE;
		}
	}
	uint8_t base[KNOT_DNAME_MAXLEN];
	char why[120];
	if (part[2][0] == '\0') {
		/* As a record's name: "@" is the apex, "" nothing. */
		snprintf(err, err_size, "data.name: required (@ for the zone "
		         "apex)");
		return ZC_EUSAGE;
	}
	if (api_name_parse(apex, part[2], base, why, sizeof(why)) != ZC_EOK) {
		snprintf(err, err_size, "data.%s", why);
		return ZC_EUSAGE;
	}
	/* The two labels, then the name. */
	size_t s = strlen(part[0]), p = strlen(part[1]);
	size_t len = knot_dname_size(base);
	if (2 + s + p + len > KNOT_DNAME_MAXLEN) {
		snprintf(err, err_size, "data: the owner is longer than 255 "
		         "octets");
		return ZC_EUSAGE;
	}
	owner[0] = (uint8_t)s;
	memcpy(owner + 1, part[0], s);
	owner[1 + s] = (uint8_t)p;
	memcpy(owner + 2 + s, part[1], p);
	memcpy(owner + 2 + s + p, base, len);
	knot_dname_to_lower(owner);
	return ZC_EOK;
}

/* The next field of content at *p: a quoted character-string (unquoted;
 * only \" and \\ taken: another escape makes it none), the rest of the
 * text (rest), or one blank-separated word. False when there is none. */
static bool next_field(const char **p, bool quoted, bool rest, char *out,
                       size_t size)
{
	const char *s = *p + strspn(*p, " \t");
	size_t o = 0;
	if (*s == '\0' && !rest) {
		return false;
	}
	if (quoted) {
		if (*s++ != '"') {
			return false;
		}
		for (; *s != '"'; s++) {
			if (*s == '\0' || o + 1 >= size) {
				return false;
			}
			if (*s == '\\') {
				if (s[1] != '"' && s[1] != '\\') {
					return false;
				}
				s++;
			}
			out[o++] = *s;
		}
		s++;
	} else {
		size_t n = rest ? strlen(s) : strcspn(s, " \t");
		while (rest && n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
			n--;
		}
		if (n >= size) {
			return false;
		}
		memcpy(out, s, n);
		o = n;
		s += n;
	}
	out[o] = '\0';
	*p = s;
	return true;
}

/* A decimal number of content ("12.748", "10000.00m") as JSON: an
 * integer when it is whole; NULL when it is no number. */
static json_t *decimal_json(char *text, bool meters)
{
	size_t n = strlen(text);
	if (meters && n > 0 && text[n - 1] == 'm') {
		text[--n] = '\0';
	}
	char *end;
	double d = strtod(text, &end);
	if (n == 0 || *end != '\0') {
		return NULL;
	}
	return d == (double)(json_int_t)d ? json_integer((json_int_t)d) :
	       json_real(d);
}

json_t *api_content_data(uint16_t type, const char *content, int priority)
{
	size_t form = 0;
	while (form < sizeof(forms) / sizeof(forms[0]) &&
	       forms[form].type != type) {
		form++;
	}
	if (form == sizeof(forms) / sizeof(forms[0])) {
		return NULL;
	}
	const field_t *f = forms[form].f;
	size_t last = 0;
	while (last + 1 < MAX_FIELDS && f[last + 1].name != NULL &&
	       f[last + 1].kind != OWNER) {
		last++;
	}
	json_t *data = json_object();
	const char *p = content;
	static __thread char field[API_CONTENT_MAX];
	for (size_t i = 0; data != NULL && i <= last; i++) {
		json_t *v = NULL;
		if (f[i].kind == PRIO) {
			/* In the record's priority, not in its content. */
			v = priority >= 0 ? json_integer(priority) : NULL;
		} else if (!next_field(&p, f[i].kind == QUOTED,
		                       f[i].kind == TEXT && i == last, field,
		                       sizeof(field))) {
			v = NULL;
		} else if (f[i].kind == DEC || f[i].kind == METERS) {
			v = decimal_json(field, f[i].kind == METERS);
		} else if (f[i].kind == NUM) {
			char *end;
			unsigned long long n = strtoull(field, &end, 10);
			v = end != field && *end == '\0' && field[0] != '-' &&
			    n <= UINT32_MAX ? json_integer((json_int_t)n) : NULL;
		} else {
			v = json_string(field);
		}
		if (v == NULL || json_object_set_new(data, f[i].name, v) != 0) {
			/* A field not to be read so (a mnemonic, text that is
			 * not UTF-8): no data, content says it all. */
			json_decref(data);
			return NULL;
		}
	}
	if (data != NULL && p[strspn(p, " \t")] != '\0') {
		json_decref(data);
		return NULL;
	}
	return data;
}
