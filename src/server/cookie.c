/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DNS Cookies: checking and making server cookies (see cookie.h). */
#include <string.h>
#include <time.h>

#include <libknot/cookies.h>
#include <libknot/errcode.h>

#include "server/cookie.h"

/* RFC 9018 §4.3: valid for an hour; accepted up to 5 minutes ahead. */
#define LIFETIME_BEFORE 3600
#define LIFETIME_AFTER 300

cookie_result_t cookie_answer(const uint8_t secret[COOKIE_SECRET_SIZE],
                              const struct sockaddr_storage *client,
                              const knot_pkt_t *query,
                              uint8_t *out, uint16_t *out_len)
{
	uint8_t *opt = knot_pkt_edns_option(query, KNOT_EDNS_OPTION_COOKIE);
	if (opt == NULL) {
		return COOKIE_NONE;
	}
	knot_edns_cookie_t cc, sc;
	if (knot_edns_cookie_parse(&cc, &sc, knot_edns_opt_get_data(opt),
	                           knot_edns_opt_get_length(opt)) != KNOT_EOK) {
		return COOKIE_MALFORMED;
	}
	knot_edns_cookie_params_t params = {
		.version = KNOT_EDNS_COOKIE_VERSION,
		.timestamp = (uint32_t)time(NULL),
		.lifetime_before = LIFETIME_BEFORE,
		.lifetime_after = LIFETIME_AFTER,
		.client_addr = client,
	};
	memcpy(params.secret, secret, COOKIE_SECRET_SIZE);
	bool valid = sc.len > 0 &&
	             knot_edns_cookie_server_check(&sc, &cc, &params) == KNOT_EOK;
	knot_edns_cookie_t fresh;
	if (knot_edns_cookie_server_generate(&fresh, &cc, &params) != KNOT_EOK) {
		return COOKIE_NONE; /* Cannot happen with a parsed client cookie. */
	}
	*out_len = knot_edns_cookie_size(&cc, &fresh);
	if (*out_len == 0 || *out_len > COOKIE_OPTION_MAX ||
	    knot_edns_cookie_write(out, *out_len, &cc, &fresh) != KNOT_EOK) {
		return COOKIE_NONE;
	}
	return valid ? COOKIE_VALID : COOKIE_NEW;
}
