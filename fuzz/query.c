/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: a DNS message in, a response out, with the full answer
 * logic over a small real edge store (built once from fuzz_zone.h), over
 * UDP and TCP size limits, with DNS Cookies on; the UDP response then goes
 * through the response rate limiter's classification and slip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "fuzz/fuzz_zone.h"
#include <netinet/in.h>

#include "server/answer.h"
#include "server/rrl.h"

static answer_ctx_t ctx;
static uint8_t resp[65535];
static const uint8_t secret[16] = "fuzz-cookie-key";
static struct sockaddr_storage client;
static rrl_t *rrl;
static const rrl_config_t rrl_cfg = { .rate = 1, .slip = 1,
                                      .ipv4_prefix = 24, .ipv6_prefix = 56,
                                      .table_size = 1024 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	edge_store_t *es = fuzz_zone_open();
	if (es == NULL) {
		abort();
	}
	answer_ctx_init(&ctx, es, "fuzz", 64);
	struct sockaddr_in *in = (struct sockaddr_in *)&client;
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(0xc0000201);
	ctx.cookie_secret = secret;
	ctx.client = &client;
	rrl = rrl_new(&rrl_cfg);
	if (rrl == NULL) {
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size + 1); /* The parser may touch the wire. */
	if (copy == NULL) {
		return 0;
	}
	memcpy(copy, data, size);
	answer_message(&ctx, copy, size, resp, sizeof(resp), true);
	memcpy(copy, data, size);
	size_t len = answer_message(&ctx, copy, size, resp, 1232, false);
	if (len > 0 && rrl_check(rrl, &rrl_cfg, &client, resp, len, 0) == RRL_SLIP) {
		rrl_slip(resp, len);
	}
	free(copy);
	return 0;
}
