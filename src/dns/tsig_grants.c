/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The grant list of a TSIG key: syntax and matching (see tsig_grants.h). */
#include <stdio.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "dns/name.h"
#include "dns/name_text.h"
#include "dns/tsig_grants.h"

/* Longest grant list read (records/ stores at most 1023 characters). */
#define GRANTS_TEXT_MAX 1024

/* Parses one "kind[:name][:types]"; false when malformed. */
static bool parse_grant(const char *text, dns_tsig_grant_t *g, char *err,
                        size_t esz)
{
	char buf[600];
	if (strlen(text) >= sizeof(buf)) {
		snprintf(err, esz, "grant too long");
		return false;
	}
	strcpy(buf, text);
	char *save = NULL;
	char *kind = strtok_r(buf, ":", &save);
	char *rest = strtok_r(NULL, "", &save);
	memset(g, 0, sizeof(*g));
	char *types = rest;
	if (kind == NULL) {
		snprintf(err, esz, "empty grant");
		return false;
	}
	if (strcmp(kind, "subdomain") == 0 || strcmp(kind, "name") == 0) {
		g->kind = kind[0] == 's' ? DNS_GRANT_SUBDOMAIN : DNS_GRANT_NAME;
		char *name = rest ? strtok_r(rest, ":", &save) : NULL;
		types = name ? strtok_r(NULL, "", &save) : NULL;
		if (name == NULL ||
		    dns_name_from_text(g->name, name, sizeof(g->name)) == NULL) {
			snprintf(err, esz, "grant '%s': a valid name is required",
			         text);
			return false;
		}
		knot_dname_to_lower(g->name);
	} else if (strcmp(kind, "zone") == 0) {
		g->kind = DNS_GRANT_ZONE;
	} else if (strcmp(kind, "self") == 0) {
		g->kind = DNS_GRANT_SELF;
	} else {
		snprintf(err, esz, "grant '%s': kind must be zone, subdomain, "
		         "name or self", text);
		return false;
	}
	if (types != NULL && (types[0] == '\0' || types[0] == ',' ||
	                      types[strlen(types) - 1] == ',' ||
	                      strstr(types, ",,") != NULL)) {
		/* strtok_r() would skip the empty member. */
		snprintf(err, esz, "grant '%s': an empty type in the list",
		         text);
		return false;
	}
	for (char *t = types ? strtok_r(types, ",", &save) : NULL; t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		uint16_t type;
		if (knot_rrtype_from_string(t, &type) != 0 ||
		    g->type_count == DNS_TSIG_GRANT_TYPES_MAX) {
			snprintf(err, esz, "grant '%s': unknown type '%s'", text, t);
			return false;
		}
		g->types[g->type_count++] = type;
	}
	return true;
}

bool dns_tsig_grants_parse(const char *text, dns_tsig_grants_t *out,
                           char *err, size_t err_size)
{
	char buf[GRANTS_TEXT_MAX];
	out->count = 0;
	/* Whole or refused: a grant cut short may allow more (types cut
	 * off leave a name that takes every type), and a stored text can
	 * come from outside zonecast's checks. */
	if (strlen(text) >= sizeof(buf)) {
		snprintf(err, err_size, "grants: longer than %zu characters",
		         sizeof(buf) - 1);
		return false;
	}
	memcpy(buf, text, strlen(text) + 1);
	char *save = NULL;
	for (char *g = strtok_r(buf, " \t;", &save); g != NULL;
	     g = strtok_r(NULL, " \t;", &save)) {
		if (out->count == DNS_TSIG_GRANTS_MAX) {
			snprintf(err, err_size, "more than %d grants",
			         DNS_TSIG_GRANTS_MAX);
			return false;
		}
		if (!parse_grant(g, &out->grant[out->count], err, err_size)) {
			return false;
		}
		out->count++;
	}
	return true;
}

static bool type_ok(const dns_tsig_grant_t *g, uint16_t type)
{
	if (g->type_count == 0) {
		return type != KNOT_RRTYPE_SOA;
	}
	if (type == KNOT_RRTYPE_ANY) {
		return false;
	}
	for (unsigned i = 0; i < g->type_count; i++) {
		if (g->types[i] == type) {
			return true;
		}
	}
	return false;
}

static bool name_ok(const dns_tsig_grant_t *g, const knot_dname_t *key_name,
                    const knot_dname_t *owner)
{
	switch (g->kind) {
	case DNS_GRANT_ZONE:
		return true; /* The caller kept names inside the zone. */
	case DNS_GRANT_SUBDOMAIN:
		return dns_name_is_under(owner, g->name);
	case DNS_GRANT_NAME:
		return knot_dname_is_case_equal(owner, g->name);
	case DNS_GRANT_SELF:
		return knot_dname_is_case_equal(owner, key_name);
	}
	return false;
}

bool dns_tsig_grants_allow(const dns_tsig_grants_t *grants,
                           const knot_dname_t *key_name,
                           const knot_dname_t *owner, uint16_t type)
{
	if (grants->count == 0) {
		static const dns_tsig_grant_t zone = { .kind = DNS_GRANT_ZONE };
		return type_ok(&zone, type); /* An empty list reads as "zone". */
	}
	for (unsigned k = 0; k < grants->count; k++) {
		if (name_ok(&grants->grant[k], key_name, owner) &&
		    type_ok(&grants->grant[k], type)) {
			return true;
		}
	}
	return false;
}
