/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: a DNS message in, a response out, with the full answer
 * logic over a small real edge store (built once from fuzz_zone.h), over
 * UDP and TCP size limits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "fuzz/fuzz_zone.h"
#include "server/answer.h"

static answer_ctx_t ctx;
static uint8_t resp[65535];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	edge_store_t *es = fuzz_zone_open();
	if (es == NULL) {
		abort();
	}
	answer_ctx_init(&ctx, es, "fuzz", 64);
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
	answer_message(&ctx, copy, size, resp, 1232, false);
	free(copy);
	return 0;
}
