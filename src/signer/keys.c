/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DNSSEC keys: generation, loading, DNSKEY and DS, keysets from the edge
 * store (whose form edge/codec.h owns). */
#include <stdlib.h>
#include <string.h>
#include <gnutls/abstract.h>
#include <gnutls/x509.h>
#include <libdnssec/binary.h>
#include <libdnssec/error.h>
#include <libdnssec/pem.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "signer/fast.h"
#include "signer/signer.h"

uint8_t signer_algorithm_parse(const char *name)
{
	if (name == NULL || strcasecmp(name, "ecdsap256sha256") == 0 ||
	    strcmp(name, "13") == 0) {
		return DNSSEC_KEY_ALGORITHM_ECDSA_P256_SHA256;
	}
	if (strcasecmp(name, "ed25519") == 0 || strcmp(name, "15") == 0) {
		return DNSSEC_KEY_ALGORITHM_ED25519;
	}
	return 0;
}

const char *signer_algorithm_name(uint8_t algorithm)
{
	switch (algorithm) {
	case DNSSEC_KEY_ALGORITHM_ECDSA_P256_SHA256: return "ECDSAP256SHA256";
	case DNSSEC_KEY_ALGORITHM_ED25519: return "ED25519";
	default: return "?";
	}
}

int signer_key_generate(uint8_t algorithm, uint8_t **pem, size_t *pem_len)
{
	gnutls_pk_algorithm_t pk;
	unsigned bits;
	if (algorithm == DNSSEC_KEY_ALGORITHM_ECDSA_P256_SHA256) {
		pk = GNUTLS_PK_ECDSA;
		bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);
	} else if (algorithm == DNSSEC_KEY_ALGORITHM_ED25519) {
		pk = GNUTLS_PK_EDDSA_ED25519;
		bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_ED25519);
	} else {
		return ZC_EUSAGE;
	}
	gnutls_x509_privkey_t key;
	if (gnutls_x509_privkey_init(&key) != GNUTLS_E_SUCCESS) {
		return KNOT_ENOMEM;
	}
	dnssec_binary_t out = { 0 };
	int ret = gnutls_x509_privkey_generate(key, pk, bits, 0);
	if (ret == GNUTLS_E_SUCCESS) {
		ret = dnssec_pem_from_x509(key, &out);
	}
	gnutls_x509_privkey_deinit(key);
	if (ret != GNUTLS_E_SUCCESS && ret != DNSSEC_EOK) {
		return KNOT_ERROR;
	}
	*pem = out.data;
	*pem_len = out.size;
	return ZC_EOK;
}

int signer_key_load(const uint8_t *apex, uint16_t flags, uint8_t algorithm,
                    const uint8_t *pem, size_t pem_len, signer_key_t *out)
{
	memset(out, 0, sizeof(*out));
	dnssec_key_t *key = NULL;
	dnssec_binary_t bin = { .data = (uint8_t *)pem, .size = pem_len };
	int ret = dnssec_key_new(&key);
	if (ret == DNSSEC_EOK) {
		ret = dnssec_key_set_algorithm(key, algorithm);
	}
	if (ret == DNSSEC_EOK) {
		ret = dnssec_key_load_pkcs8(key, &bin);
	}
	if (ret == DNSSEC_EOK) {
		ret = dnssec_key_set_flags(key, flags);
	}
	if (ret == DNSSEC_EOK) {
		ret = dnssec_key_set_dname(key, apex);
	}
	if (ret != DNSSEC_EOK) {
		dnssec_key_free(key);
		return KNOT_EINVAL;
	}
	out->key = key;
	out->fast = signer_fast_load(pem, pem_len);
	out->tag = dnssec_key_get_keytag(key);
	out->flags = flags;
	out->algorithm = algorithm;
	out->active = true;
	return ZC_EOK;
}

void signer_key_free(signer_key_t *key)
{
	dnssec_key_free(key->key);
	key->key = NULL;
	signer_fast_free(key->fast);
	key->fast = NULL;
}

int signer_key_dnskey(const signer_key_t *key, uint8_t *out, size_t size)
{
	dnssec_binary_t rdata = { 0 };
	if (dnssec_key_get_rdata(key->key, &rdata) != DNSSEC_EOK ||
	    rdata.size > size) {
		return ZC_ENOSPACE;
	}
	memcpy(out, rdata.data, rdata.size);
	return (int)rdata.size; /* Owned by the key: not freed. */
}

int signer_key_ds(const signer_key_t *key, uint8_t *out, size_t size)
{
	dnssec_binary_t ds = { 0 };
	if (dnssec_key_create_ds(key->key, DNSSEC_KEY_DIGEST_SHA256,
	                         &ds) != DNSSEC_EOK) {
		return KNOT_ERROR;
	}
	int ret = ds.size <= size ? (int)ds.size : ZC_ENOSPACE;
	if (ret > 0) {
		memcpy(out, ds.data, ds.size);
	}
	dnssec_binary_free(&ds);
	return ret;
}

int signer_keyset_load(const uint8_t *apex, const edge_keyset_t *set,
                       signer_keyset_t *out)
{
	memset(out, 0, sizeof(*out));
	out->zsk = out->ksk = -1;
	for (unsigned i = 0; i < set->count && i < SIGNER_MAX_KEYS; i++) {
		const edge_key_t *key = &set->keys[i];
		signer_key_t *k = &out->keys[out->count];
		if (signer_key_load(apex, key->flags, key->algorithm, key->pem,
		                    key->pem_len, k) != ZC_EOK) {
			signer_keyset_free(out);
			return ZC_EFORMAT;
		}
		k->active = key->active;
		if (key->active && key->flags == SIGNER_FLAGS_KSK && out->ksk < 0) {
			out->ksk = (int)out->count;
		}
		if (key->active && key->flags == SIGNER_FLAGS_ZSK && out->zsk < 0) {
			out->zsk = (int)out->count;
		}
		out->count++;
	}
	if (out->ksk < 0) {
		signer_keyset_free(out);
		return ZC_ENOKEY;
	}
	/* A CSK (flags 257 with no ZSK) signs everything. */
	if (out->zsk < 0) {
		out->zsk = out->ksk;
	}
	return ZC_EOK;
}

int signer_keyset_decode(const uint8_t *apex, const uint8_t *data,
                         size_t len, signer_keyset_t *out)
{
	edge_keyset_t set;
	int ret = edge_keyset_decode(data, len, &set);
	if (ret != ZC_EOK) {
		memset(out, 0, sizeof(*out));
		return ret;
	}
	return signer_keyset_load(apex, &set, out);
}

void signer_keyset_free(signer_keyset_t *ks)
{
	for (unsigned i = 0; i < ks->count; i++) {
		signer_key_free(&ks->keys[i]);
	}
	ks->count = 0;
}
