/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Signatures with OpenSSL's libcrypto when zonecast is built with it
 * (meson finds libcrypto): its ECDSA P-256 signs about five times faster
 * than GnuTLS/Nettle behind libdnssec (25 against 120 µs here), which
 * decides how fast a large zone is signed for secondaries (sigview/).
 * Keys are the same PKCS#8 PEM; the signature is the same bytes DNSSEC
 * wants (RFC 6605 §4: r and s, 32 octets each; RFC 8080 §3: Ed25519's 64
 * octets). Without libcrypto, signer_fast_*() say so and sign.c uses
 * libdnssec.
 */
#include <string.h>
#include <libdnssec/key.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "signer/fast.h"
#include "signer/signer.h"

#ifdef ZC_HAVE_LIBCRYPTO
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

void *signer_fast_load(const uint8_t *pem, size_t pem_len)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)pem_len);
	if (bio == NULL) {
		return NULL;
	}
	EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	return key;
}

void signer_fast_free(void *key)
{
	EVP_PKEY_free(key);
}

/* DER ECDSA-Sig-Value to r || s, each padded to 32 octets. */
static int ecdsa_raw(const uint8_t *der, size_t der_len, uint8_t *out,
                     size_t out_size)
{
	if (out_size < 64) {
		return ZC_ENOSPACE;
	}
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
	if (sig == NULL) {
		return KNOT_ERROR;
	}
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(sig, &r, &s);
	int ok = BN_bn2binpad(r, out, 32) == 32 &&
	         BN_bn2binpad(s, out + 32, 32) == 32;
	ECDSA_SIG_free(sig);
	return ok ? 64 : KNOT_ERROR;
}

int signer_fast_sign(void *key, uint8_t algorithm, const uint8_t *data,
                     size_t len, uint8_t *out, size_t out_size)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL) {
		return KNOT_ENOMEM;
	}
	bool ecdsa = algorithm == DNSSEC_KEY_ALGORITHM_ECDSA_P256_SHA256;
	uint8_t der[80];
	size_t sig_len = ecdsa ? sizeof(der) : out_size;
	int ok = EVP_DigestSignInit(ctx, NULL, ecdsa ? EVP_sha256() : NULL,
	                            NULL, key) == 1 &&
	         EVP_DigestSign(ctx, ecdsa ? der : out, &sig_len, data,
	                        len) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok) {
		return KNOT_ERROR;
	}
	return ecdsa ? ecdsa_raw(der, sig_len, out, out_size) : (int)sig_len;
}

#else

void *signer_fast_load(const uint8_t *pem, size_t pem_len)
{
	(void)pem;
	(void)pem_len;
	return NULL;
}

void signer_fast_free(void *key)
{
	(void)key;
}

int signer_fast_sign(void *key, uint8_t algorithm, const uint8_t *data,
                     size_t len, uint8_t *out, size_t out_size)
{
	(void)key, (void)algorithm, (void)data, (void)len, (void)out;
	(void)out_size;
	return KNOT_ENOTSUP;
}

#endif
