/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: master-file parsing (the text of `zone import`), and for
 * every record read the check an import runs (zonefile_record_check())
 * and the exporter's text of it. RFC 3597's generic form ("TXT \# 2
 * 0561") lets the input give any rdata to any type.
 */
#include <stdlib.h>

#include "common/error.h"
#include "fuzz/fuzz.h"
#include "zonefile/zonefile.h"

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	(void)file, (void)line;
	static char text[4 * 65536 + 64];
	bool generic;
	int ret = zonefile_record_check(owner, type, ttl, rdata, rdata_len,
	                                NULL);
	if (zonefile_rdata_text(type, rdata, rdata_len, text, sizeof(text),
	                        &generic) < 0 ||
	    (ret == ZC_ERDATA && !generic)) {
		abort(); /* Any rdata has a text; malformed is generic. */
	}
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
