/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG key creation, shared by `zonecast tsig create` and the API: checks
 * the name, algorithm and grants, draws the secret, stores the key, and
 * formats it the way `nsupdate -k` and `knsupdate -k` read it.
 */
#include <stdio.h>
#include <string.h>
#include <libdnssec/binary.h>
#include <libdnssec/random.h>
#include <libdnssec/tsig.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/tsig.h"
#include "update/internal.h"
#include "update/update.h"

int update_key_create(records_store_t *rs, int64_t zone_id, const char *name,
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
	if (!update_policy_valid(grants, err, err_size)) {
		return ZC_EUSAGE;
	}
	snprintf(key->algorithm, sizeof(key->algorithm), "%s", algorithm);
	snprintf(key->grants, sizeof(key->grants), "%s", grants);
	int bits = dnssec_tsig_optimal_key_size(
		dnssec_tsig_algorithm_from_name(algorithm));
	key->secret_len = bits > 0 ? (size_t)bits / 8 : 32;
	if (key->secret_len > sizeof(key->secret)) {
		key->secret_len = sizeof(key->secret);
	}
	if (dnssec_random_buffer(key->secret, key->secret_len) != 0) {
		snprintf(err, err_size, "no random bytes for the secret");
		return KNOT_ERROR;
	}
	key->zone_id = zone_id;
	key->transfer = transfer;
	int ret = records_tsig_add(rs, key);
	if (ret == ZC_EEXISTS) {
		snprintf(err, err_size, "name: a key named %s exists", name);
	}
	return ret;
}

int update_key_secret_b64(const records_tsig_key_t *key, char *out,
                          size_t size)
{
	dnssec_binary_t bin = { .data = (uint8_t *)key->secret,
	                        .size = key->secret_len };
	dnssec_binary_t b64 = { 0 };
	if (dnssec_binary_to_base64(&bin, &b64) != 0 || b64.size >= size) {
		dnssec_binary_free(&b64);
		return ZC_ENOSPACE;
	}
	memcpy(out, b64.data, b64.size);
	out[b64.size] = '\0';
	dnssec_binary_free(&b64);
	return ZC_EOK;
}

int update_key_format(const records_tsig_key_t *key, char *out, size_t size)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1], secret[256];
	knot_dname_to_str(name, key->name, sizeof(name));
	size_t len = strlen(name);
	if (len > 1 && name[len - 1] == '.') {
		name[len - 1] = '\0';
	}
	int ret = update_key_secret_b64(key, secret, sizeof(secret));
	if (ret != ZC_EOK) {
		return ret;
	}
	int n = snprintf(out, size, "key \"%s\" {\n\talgorithm %s;\n"
	                 "\tsecret \"%s\";\n};\n", name, key->algorithm, secret);
	return n > 0 && (size_t)n < size ? ZC_EOK : ZC_ENOSPACE;
}
