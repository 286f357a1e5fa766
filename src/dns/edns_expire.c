/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The EDNS EXPIRE option's value (edns_expire.h). */
#include <string.h>

#include "dns/edns_expire.h"

void dns_soa_expire_wire(const uint8_t *soa, size_t soa_len, uint8_t out[4])
{
	/* RFC 1035 §3.3.13: ... SERIAL REFRESH RETRY EXPIRE MINIMUM, the
	 * last five 32-bit fields. */
	if (soa_len < 22) {
		memset(out, 0, 4);
		return;
	}
	memcpy(out, soa + soa_len - 8, 4);
}
