/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The grants of a TSIG key: what the UPDATE messages it signs may change,
 * in the spirit of BIND's update-policy. A grant list is text stored with
 * the key (records/): grants separated by spaces, tabs or ';', each one of
 *
 *   zone[:TYPES]            any name in the key's zone
 *   subdomain:NAME[:TYPES]  NAME and the names below it
 *   name:NAME[:TYPES]       exactly NAME
 *   self[:TYPES]            exactly the key's own name
 *
 * TYPES is a comma-separated list of type mnemonics; without it every
 * type but SOA. An empty list means "zone". Deleting every RRset at a
 * name (type ANY) needs a grant without a type list.
 *
 * The syntax is checked where a key is made (records_tsig_create()); the
 * UPDATE service (update/policy.c) asks, per RR of a message, whether a
 * grant covers it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/dname.h>

#define DNS_TSIG_GRANTS_MAX 32
#define DNS_TSIG_GRANT_TYPES_MAX 32

typedef struct {
	enum { DNS_GRANT_ZONE, DNS_GRANT_SUBDOMAIN, DNS_GRANT_NAME,
	       DNS_GRANT_SELF } kind;
	uint8_t name[KNOT_DNAME_MAXLEN];  /* Lowercase; SUBDOMAIN and NAME. */
	uint16_t types[DNS_TSIG_GRANT_TYPES_MAX];
	unsigned type_count;              /* 0: every type but SOA. */
} dns_tsig_grant_t;

typedef struct {
	dns_tsig_grant_t grant[DNS_TSIG_GRANTS_MAX];
	unsigned count;                   /* An empty list reads as "zone". */
} dns_tsig_grants_t;

/* Parses a grant list. false, with a message naming the grant at fault in
 * err, when it is malformed. */
bool dns_tsig_grants_parse(const char *text, dns_tsig_grants_t *out,
                           char *err, size_t err_size);

/* Whether some grant lets the key key_name change (owner, type). The
 * owner must already be known to be inside the key's zone. */
bool dns_tsig_grants_allow(const dns_tsig_grants_t *grants,
                           const knot_dname_t *key_name,
                           const knot_dname_t *owner, uint16_t type);
