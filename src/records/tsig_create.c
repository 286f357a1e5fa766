/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Making a TSIG key, for `zonecast tsig create` and the API's POST
 * .../tsig_keys alike: its name, algorithm and grants checked (the
 * offending field named), a fresh secret of the algorithm's size
 * (dns/tsig_key.h), then stored (records_tsig_add()).
 */
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/tsig.h"
#include "dns/tsig_grants.h"
#include "dns/tsig_key.h"
#include "records/records.h"
#include "records/rules.h"

/* A key updates its own zone only: a grant naming a name outside it
 * (subdomain:example.net., name:., self for a key named outside it) would
 * grant nothing, and was stored as if it did. */
static int grants_in_zone(records_store_t *rs, int64_t zone_id,
                          const knot_dname_t *key_name,
                          const dns_tsig_grants_t *g, char *err,
                          size_t err_size)
{
	records_zone_t zone;
	int ret = records_zone_get(rs, zone_id, &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	for (unsigned i = 0; i < g->count; i++) {
		const dns_tsig_grant_t *gr = &g->grant[i];
		const knot_dname_t *name = gr->kind == DNS_GRANT_SELF ? key_name :
		                           gr->kind == DNS_GRANT_ZONE ? NULL :
		                           gr->name;
		if (name != NULL && !records_rules_in_zone(zone.apex, name)) {
			char text[KNOT_DNAME_TXT_MAXLEN + 1], apex[sizeof(text)];
			knot_dname_to_str(text, name, sizeof(text));
			knot_dname_to_str(apex, zone.apex, sizeof(apex));
			snprintf(err, err_size, "grants: grant %u names %s, outside "
			         "the key's zone %s (%s)", i + 1, text, apex,
			         gr->kind == DNS_GRANT_SELF ? "self is the key's "
			         "own name" : "it would grant nothing");
			return ZC_EUSAGE;
		}
	}
	return ZC_EOK;
}

int records_tsig_create(records_store_t *rs, int64_t zone_id, const char *name,
                        const char *algorithm, const char *grants,
                        bool transfer, records_tsig_key_t *key,
                        char *err, size_t err_size)
{
	memset(key, 0, sizeof(*key));
	if (knot_dname_from_str(key->name, name, sizeof(key->name)) == NULL) {
		snprintf(err, err_size, "name: '%s' is not a valid key name", name);
		return ZC_EUSAGE;
	}
	algorithm = algorithm ? algorithm : "hmac-sha256";
	if (!dns_tsig_algorithm_ok(algorithm)) {
		snprintf(err, err_size, "algorithm: '%s' is not one of "
		         "hmac-sha256, hmac-sha512, hmac-sha384, hmac-sha224, "
		         "hmac-sha1, hmac-md5", algorithm);
		return ZC_EUSAGE;
	}
	grants = grants ? grants : "";
	if (strlen(grants) >= sizeof(key->grants)) {
		snprintf(err, err_size, "grants: longer than %zu characters",
		         sizeof(key->grants) - 1);
		return ZC_EUSAGE;
	}
	dns_tsig_grants_t parsed;
	if (!dns_tsig_grants_parse(grants, &parsed, err, err_size)) {
		return ZC_EUSAGE;
	}
	int ret = grants_in_zone(rs, zone_id, key->name, &parsed, err,
	                         err_size);
	if (ret != ZC_EOK) {
		return ret;
	}
	snprintf(key->algorithm, sizeof(key->algorithm), "%s", algorithm);
	snprintf(key->grants, sizeof(key->grants), "%s", grants);
	if (dns_tsig_secret_new(algorithm, key->secret, sizeof(key->secret),
	                        &key->secret_len) != ZC_EOK) {
		snprintf(err, err_size, "no random bytes for the secret");
		return KNOT_ERROR;
	}
	key->zone_id = zone_id;
	key->transfer = transfer;
	ret = records_tsig_add(rs, key);
	if (ret == ZC_EEXISTS) {
		snprintf(err, err_size, "name: a key named %s exists", name);
	}
	return ret;
}
