/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * RFC 1035 master files: reading with libzscanner, writing with libknot.
 *
 * Reading understands $ORIGIN, $TTL, $INCLUDE and every type libknot knows
 * (unknown types in RFC 3597 form). Records reach the caller one at a time,
 * so a file of any size is read in constant memory.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <libknot/dname.h>

#include "records/records.h"

typedef struct {
	/* A parsed record. Return non-zero to stop (reported as an error). */
	int (*record)(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
	              const uint8_t *rdata, uint16_t rdata_len,
	              const char *file, uint64_t line, void *ctx);
	/* A syntax error, with file and line. */
	void (*error)(const char *file, uint64_t line, const char *message,
	              void *ctx);
	void *ctx;
} zonefile_handler_t;

/*
 * Parses the master file at path with the given origin and default TTL.
 * Returns ZC_EOK, or ZC_EZONEFILE after reporting errors through the
 * handler (parsing goes on after errors, up to 100 of them).
 */
int zonefile_parse(const char *path, const knot_dname_t *origin,
                   uint32_t default_ttl, const zonefile_handler_t *handler);

/* As zonefile_parse(), on text in memory ("-" named as the file). */
int zonefile_parse_text(const char *text, size_t len,
                        const knot_dname_t *origin, uint32_t default_ttl,
                        const zonefile_handler_t *handler);

/*
 * As zonefile_parse_text() for one absolute record line with an explicit
 * TTL (the API's records): reuses the thread's scanner, initialised once
 * per origin, instead of initialising one per call.
 */
int zonefile_parse_record(const char *text, size_t len,
                          const knot_dname_t *origin,
                          const zonefile_handler_t *handler);

/*
 * Writes a zone from the records store as a master file: $ORIGIN, the SOA
 * first (carrying the zone's current serial), then every RRset in name
 * order. Re-importing the output gives the same zone.
 */
int zonefile_export(records_store_t *store, const knot_dname_t *apex,
                    FILE *out);
