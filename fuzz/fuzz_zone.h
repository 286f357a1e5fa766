/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A small zone with every answer path (CNAME, DNAME, wildcard, ENT, cut,
 * glue), imported into real stores in a temporary directory for the
 * targets that need a zone.
 */
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builder.h"
#include "zonefile/zonefile.h"

static const char fuzz_zone_text[] =
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 1 7200 900 1209600 60\n"
	"@ IN NS ns\n@ IN MX 10 mail\n"
	"ns IN A 192.0.2.1\nmail IN A 192.0.2.25\nmail IN AAAA 2001:db8::25\n"
	"www IN CNAME web\nweb IN A 192.0.2.80\nloop1 IN CNAME loop2\n"
	"loop2 IN CNAME loop1\n*.wild IN A 192.0.2.9\n*.wild IN MX 1 mail\n"
	"a.b.ent IN A 192.0.2.4\nsub IN NS ns.sub\nsub IN NS ns.other\n"
	"ns.sub IN A 192.0.2.53\nother IN NS ns.other\nns.other IN A 192.0.2.54\n"
	"dn IN DNAME target.example.\nx.target IN A 192.0.2.8\n"
	"big IN TXT \"0123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"1123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"2123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"3123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"4123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"5123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"6123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"big IN TXT \"7123456789012345678901234567890123456789012345678901234567890123456789\"\n"
	"srv IN SRV 1 1 1 mail\n";

static int fuzz_zone_record(const knot_dname_t *owner, uint16_t type,
                            uint32_t ttl, const uint8_t *rdata,
                            uint16_t rdata_len, const char *file,
                            uint64_t line, void *ctx)
{
	(void)file;
	return records_import_add(ctx, owner, type, ttl, rdata, rdata_len, line) != 0;
}

static void fuzz_zone_error(const char *file, uint64_t line, const char *msg,
                            void *ctx)
{
	(void)file, (void)line, (void)msg, (void)ctx;
}

/* The data directory fuzz_zone_open() made. */
static char fuzz_zone_dir[] = "/tmp/zonecast-fuzz-XXXXXX";

/* Imports text as the zone apex into the stores and builds it. */
static int fuzz_zone_import(records_store_t *rs, edge_store_t *es,
                            const knot_dname_t *apex, const char *text)
{
	records_import_t *imp = NULL;
	uint64_t seq;
	if (records_import_begin(rs, apex, &imp) != 0) {
		return -1;
	}
	zonefile_handler_t h = { .record = fuzz_zone_record,
	                         .error = fuzz_zone_error, .ctx = imp };
	if (zonefile_parse_text(text, strlen(text), apex, 3600, &h) != 0) {
		records_import_abort(imp);
		return -1;
	}
	if (records_import_commit(imp, &seq, NULL) != 0 ||
	    builder_full_build(rs, es, apex, NULL, NULL, NULL) != 0) {
		return -1;
	}
	return 0;
}

/* Makes the zone "example." in empty stores in dir; returns the opened
 * edge store. */
static edge_store_t *fuzz_zone_load(const char *dir)
{
	records_store_t *rs = NULL;
	edge_store_t *es = NULL;
	if (records_open(&rs, dir) != 0 ||
	    edge_open(&es, dir, (size_t)1 << 30) != 0 ||
	    fuzz_zone_import(rs, es, (const uint8_t *)"\x07" "example\x00",
	                     fuzz_zone_text) != 0) {
		return NULL;
	}
	records_close(rs);
	return es;
}

static int fuzz_zone_unlink(const char *path, const struct stat *st,
                            int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* Removes fuzz_zone_dir and what it holds (at exit). */
static void fuzz_zone_remove(void)
{
	nftw(fuzz_zone_dir, fuzz_zone_unlink, 16, FTW_DEPTH | FTW_PHYS);
}

/* Returns the opened edge store holding the zone "example." in a new
 * directory, fuzz_zone_dir, removed at exit. */
static edge_store_t *fuzz_zone_open(void)
{
	if (mkdtemp(fuzz_zone_dir) == NULL) {
		return NULL;
	}
	atexit(fuzz_zone_remove);
	return fuzz_zone_load(fuzz_zone_dir);
}
