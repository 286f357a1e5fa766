/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TSIG key material: secrets and their text forms (see tsig_key.h). */
#include <stdio.h>
#include <string.h>
#include <libdnssec/binary.h>
#include <libdnssec/random.h>
#include <libdnssec/tsig.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "dns/tsig_key.h"

int dns_tsig_secret_new(const char *algorithm, uint8_t *secret, size_t size,
                        size_t *len)
{
	int bits = dnssec_tsig_optimal_key_size(
		dnssec_tsig_algorithm_from_name(algorithm));
	*len = bits > 0 ? (size_t)bits / 8 : 32;
	if (*len > size) {
		*len = size;
	}
	if (dnssec_random_buffer(secret, *len) != 0) {
		return KNOT_ERROR;
	}
	return ZC_EOK;
}

int dns_tsig_secret_b64(const uint8_t *secret, size_t len, char *out,
                        size_t size)
{
	dnssec_binary_t bin = { .data = (uint8_t *)secret, .size = len };
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

int dns_tsig_key_format(const knot_dname_t *name, const char *algorithm,
                        const uint8_t *secret, size_t len, char *out,
                        size_t size)
{
	char text[KNOT_DNAME_TXT_MAXLEN + 1], b64[256];
	knot_dname_to_str(text, name, sizeof(text));
	size_t text_len = strlen(text);
	if (text_len > 1 && text[text_len - 1] == '.') {
		text[text_len - 1] = '\0';
	}
	int ret = dns_tsig_secret_b64(secret, len, b64, sizeof(b64));
	if (ret != ZC_EOK) {
		return ret;
	}
	int n = snprintf(out, size, "key \"%s\" {\n\talgorithm %s;\n"
	                 "\tsecret \"%s\";\n};\n", text, algorithm, b64);
	return n > 0 && (size_t)n < size ? ZC_EOK : ZC_ENOSPACE;
}
