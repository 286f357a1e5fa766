/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The log line of a refused TSIG (RFC 8945 §5.2): which request (an
 * UPDATE, a transfer, a signed query), for which zone, from which client,
 * with which key, and why (no such key, another algorithm, a MAC that
 * does not verify, a time out of the window, a truncated or malformed
 * MAC). Logged at info level, so an operator sees why a client such as
 * certbot or a secondary fails without turning debug on.
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>
#include <libknot/packet/pkt.h>

#include "dns/tsig.h"

/*
 * Logs the refusal of q's TSIG, whose check by dns_tsig_check() returned
 * ret and filled t. what: "update", "transfer", "query". key_found and
 * key_algorithm (NULL when not found): the stored key of that name. At
 * most 20 lines a second across the process; the rest are counted and
 * the count is logged with the next line that goes out.
 */
void dns_tsig_log_refusal(const char *what, const knot_pkt_t *q,
                          const dns_tsig_t *t, int ret, bool key_found,
                          const char *key_algorithm,
                          const struct sockaddr_storage *from);
