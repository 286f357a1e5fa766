/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Putting an RRset into a message with libknot, without the trap it leaves
 * on failure: a put that runs out of room half-way has already moved the
 * packet's compression suffix to the owner it wrote past the message's
 * end. The next put writes at that same offset and compresses its owner
 * against those bytes: a pointer to itself, and libknot's next name
 * compression walks it for ever (a UDP worker spun at 100 % and answered
 * nothing again, from one referral whose glue did not fit).
 */
#pragma once

#include <stdint.h>
#include <libknot/packet/pkt.h>

/* knot_pkt_put(); on any error the compression state is as before. */
int dns_pkt_put(knot_pkt_t *pkt, uint16_t compr_hint, const knot_rrset_t *rr,
                uint16_t flags);
