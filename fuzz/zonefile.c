/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: master-file parsing (the text of `zone import`). */
#include "fuzz/fuzz.h"
#include "zonefile/zonefile.h"

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	(void)owner, (void)type, (void)ttl, (void)rdata, (void)rdata_len;
	(void)file, (void)line;
	(*(unsigned *)ctx)++;
	return 0;
}

static void on_error(const char *file, uint64_t line, const char *msg,
                     void *ctx)
{
	(void)file, (void)line, (void)msg, (void)ctx;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned count = 0;
	zonefile_handler_t h = { .record = on_record, .error = on_error,
	                         .ctx = &count };
	zonefile_parse_text((const char *)data, size,
	                    (const uint8_t *)"\x07" "example\x00", 3600, &h);
	return 0;
}
