/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to signer/: signing with OpenSSL's libcrypto when built with
 * it (fast.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The private key from PKCS#8 PEM; NULL without libcrypto or when it
 * does not load (libdnssec then signs). */
void *signer_fast_load(const uint8_t *pem, size_t pem_len);
void signer_fast_free(void *key);

/* The DNSSEC signature of data (length) into out, or a negative code
 * (KNOT_ENOTSUP without libcrypto). */
int signer_fast_sign(void *key, uint8_t algorithm, const uint8_t *data,
                     size_t len, uint8_t *out, size_t out_size);
