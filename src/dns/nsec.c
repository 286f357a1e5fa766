/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NSEC type lists and bitmaps (see nsec.h). */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>

#include "dns/nsec.h"

static int type_order(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

size_t dns_nsec_types_finish(uint16_t *list, size_t n)
{
	list[n++] = KNOT_RRTYPE_RRSIG;
	list[n++] = KNOT_RRTYPE_NSEC;
	qsort(list, n, sizeof(list[0]), type_order);
	size_t uniq = 0;
	for (size_t i = 0; i < n; i++) {
		if (uniq == 0 || list[uniq - 1] != list[i]) {
			list[uniq++] = list[i];
		}
	}
	return uniq;
}

size_t dns_nsec_bitmap(const uint16_t *types, size_t n, uint8_t *out)
{
	size_t len = 0;
	size_t i = 0;
	while (i < n) {
		uint8_t window = (uint8_t)(types[i] >> 8);
		uint8_t bits[32] = { 0 };
		size_t used = 0;
		for (; i < n && (types[i] >> 8) == window; i++) {
			uint8_t low = (uint8_t)types[i];
			bits[low / 8] |= (uint8_t)(0x80 >> (low % 8));
			used = low / 8 + 1;
		}
		out[len++] = window;
		out[len++] = (uint8_t)used;
		memcpy(out + len, bits, used);
		len += used;
	}
	return len;
}
