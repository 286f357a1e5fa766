/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The audit line of a refused TSIG (RFC 8945 §5.2; common/audit.h):
 * which request (an UPDATE, a transfer, a signed query), for which zone,
 * from which client, with which key, and why (no such key, another
 * algorithm, a MAC that does not verify, a time out of the window, a
 * replay, a truncated or malformed MAC). At info level, so an operator
 * sees why a client such as certbot or a secondary fails without turning
 * debug on:
 *
 *   audit: update refused zone=example.com. key=k1. client=192.0.2.1#5353
 *          rcode=NOTAUTH tsig_error=BADSIG reason="BADSIG: the MAC ..."
 *   audit: transfer refused zone=example.com. kind=AXFR key=... ...
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>
#include <libknot/packet/pkt.h>

#include "dns/tsig.h"

/*
 * Logs the refusal of q's TSIG, whose check by dns_tsig_check() returned
 * ret and filled t. what: "update", or the transfer's kind ("AXFR",
 * "IXFR", "query" for another signed query). key_found and key_algorithm
 * (NULL when not found): the stored key of that name. Refusal lines are
 * limited as every audit refusal is (ZC_AUDIT_REFUSALS_PER_S, the rest
 * counted in the next line).
 */
void dns_tsig_log_refusal(const char *what, const knot_pkt_t *q,
                          const dns_tsig_t *t, int ret, bool key_found,
                          const char *key_algorithm,
                          const struct sockaddr_storage *from);
