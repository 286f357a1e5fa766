/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG key material (RFC 8945), whatever stores it: a fresh secret of the
 * size its algorithm wants, the secret in base64, and the key written the
 * way `nsupdate -k` and `knsupdate -k` read it (BIND's key clause). The
 * records store keeps keys (records_tsig_create()); `zonecast tsig` and
 * the API's tsig_keys endpoints show them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <libknot/dname.h>

/*
 * Draws a secret for the algorithm ("hmac-sha256", ...) into secret (size
 * bytes at most): as many bytes as libdnssec's optimal key size for it (32
 * when it has none), capped at size. *len gets its length. KNOT_ERROR when
 * no random bytes could be had.
 */
int dns_tsig_secret_new(const char *algorithm, uint8_t *secret, size_t size,
                        size_t *len);

/* The secret in base64, NUL-terminated, into out. ZC_ENOSPACE when out
 * is too small. */
int dns_tsig_secret_b64(const uint8_t *secret, size_t len, char *out,
                        size_t size);

/* The key as BIND's `key "NAME" { algorithm ALG; secret "..."; };` (the
 * name without its final dot). ZC_ENOSPACE when out is too small. */
int dns_tsig_key_format(const knot_dname_t *name, const char *algorithm,
                        const uint8_t *secret, size_t len, char *out,
                        size_t size);
