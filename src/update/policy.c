/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Update policy of a TSIG key, in the spirit of BIND's update-policy:
 * a space-separated list of grants, each one of
 *
 *   zone[:TYPES]            any name in the key's zone
 *   subdomain:NAME[:TYPES]  NAME and the names below it
 *   name:NAME[:TYPES]       exactly NAME
 *   self[:TYPES]            exactly the key's own name
 *
 * TYPES is a comma-separated list of type mnemonics; without it every
 * type but SOA. An empty list means "zone". A message is allowed only if
 * every RR of its update section falls within some grant; deleting every
 * RRset at a name (type ANY) needs a grant without a type list.
 */
#include <stdio.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/dname.h>

#include "dns/name.h"
#include "update/internal.h"

#define GRANT_MAX 32

typedef struct {
	enum { G_ZONE, G_SUBDOMAIN, G_NAME, G_SELF } kind;
	uint8_t name[KNOT_DNAME_MAXLEN];
	uint16_t types[32];
	unsigned type_count;     /* 0: all but SOA */
} grant_t;

/* Parses one "kind[:name][:types]"; false when malformed. */
static bool parse_grant(const char *text, grant_t *g, char *err, size_t esz)
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
		g->kind = kind[0] == 's' ? G_SUBDOMAIN : G_NAME;
		char *name = rest ? strtok_r(rest, ":", &save) : NULL;
		types = name ? strtok_r(NULL, "", &save) : NULL;
		if (name == NULL ||
		    knot_dname_from_str(g->name, name, sizeof(g->name)) == NULL) {
			snprintf(err, esz, "grant '%s': a valid name is required",
			         text);
			return false;
		}
		knot_dname_to_lower(g->name);
	} else if (strcmp(kind, "zone") == 0) {
		g->kind = G_ZONE;
	} else if (strcmp(kind, "self") == 0) {
		g->kind = G_SELF;
	} else {
		snprintf(err, esz, "grant '%s': kind must be zone, subdomain, "
		         "name or self", text);
		return false;
	}
	for (char *t = types ? strtok_r(types, ",", &save) : NULL; t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		uint16_t type;
		if (knot_rrtype_from_string(t, &type) != 0 || g->type_count == 32) {
			snprintf(err, esz, "grant '%s': unknown type '%s'", text, t);
			return false;
		}
		g->types[g->type_count++] = type;
	}
	return true;
}

static int parse_grants(const char *grants, grant_t *out, char *err,
                        size_t esz)
{
	char buf[RECORDS_TSIG_GRANTS_MAX];
	snprintf(buf, sizeof(buf), "%s", grants);
	int count = 0;
	char *save = NULL;
	for (char *g = strtok_r(buf, " \t;", &save); g != NULL;
	     g = strtok_r(NULL, " \t;", &save)) {
		if (count == GRANT_MAX) {
			snprintf(err, esz, "more than %d grants", GRANT_MAX);
			return -1;
		}
		if (!parse_grant(g, &out[count], err, esz)) {
			return -1;
		}
		count++;
	}
	return count;
}

bool update_policy_valid(const char *grants, char *err, size_t err_size)
{
	grant_t g[GRANT_MAX];
	return parse_grants(grants, g, err, err_size) >= 0;
}

static bool type_ok(const grant_t *g, uint16_t type)
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

static bool name_ok(const grant_t *g, const knot_dname_t *key_name,
                    const knot_dname_t *owner)
{
	switch (g->kind) {
	case G_ZONE:
		return true; /* The prescan kept names inside the zone. */
	case G_SUBDOMAIN:
		return dns_name_is_under(owner, g->name);
	case G_NAME:
		return knot_dname_is_case_equal(owner, g->name);
	case G_SELF:
		return knot_dname_is_case_equal(owner, key_name);
	}
	return false;
}

bool update_policy_allows(const char *grants, const knot_dname_t *key_name,
                          const update_msg_t *m)
{
	grant_t g[GRANT_MAX];
	char err[128];
	int count = parse_grants(grants, g, err, sizeof(err));
	if (count < 0) {
		return false;
	}
	if (count == 0) {
		g[0] = (grant_t){ .kind = G_ZONE };
		count = 1;
	}
	const knot_pktsection_t *sec = knot_pkt_section(m->pkt, KNOT_AUTHORITY);
	for (uint16_t i = 0; i < sec->count; i++) {
		const knot_rrset_t *rr = knot_pkt_rr(sec, i);
		bool ok = false;
		for (int k = 0; k < count && !ok; k++) {
			ok = name_ok(&g[k], key_name, rr->owner) &&
			     type_ok(&g[k], rr->type);
		}
		if (!ok) {
			return false;
		}
	}
	return true;
}
