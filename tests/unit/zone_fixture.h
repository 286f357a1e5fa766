/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Shared by unit tests: imports master-file text into real records and
 * edge stores in a temporary directory, as `zonecast zone import` does.
 */
#pragma once

#include <libknot/dname.h>

#include "builder/builder.h"
#include "common/error.h"
#include "zonefile/zonefile.h"
#include "tests/unit/test.h"

static int fixture_record(const knot_dname_t *owner, uint16_t type,
                          uint32_t ttl, const uint8_t *rdata,
                          uint16_t rdata_len, const char *file,
                          uint64_t line, void *ctx)
{
	(void)file;
	return records_import_add(ctx, owner, type, ttl, rdata, rdata_len, line) != 0;
}

static void fixture_error(const char *file, uint64_t line, const char *msg,
                          void *ctx)
{
	(void)ctx;
	fprintf(stderr, "%s:%llu: %s\n", file, (unsigned long long)line, msg);
}

static void fixture_problem(const knot_dname_t *owner, uint16_t type,
                            uint64_t tag, const char *what, void *ctx)
{
	(void)owner, (void)type, (void)ctx, (void)tag;
	fprintf(stderr, "zone problem: %s\n", what);
}

/* Imports text as zone `name` and builds it; returns the import's code,
 * or the number of problems the check found. */
static int fixture_import(records_store_t *rs, edge_store_t *es,
                          const char *name, const char *text)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(apex, name, sizeof(apex));
	records_import_t *imp;
	int ret = records_import_begin(rs, apex, &imp);
	if (ret != ZC_EOK) {
		return ret;
	}
	zonefile_handler_t h = { .record = fixture_record,
	                         .error = fixture_error, .ctx = imp };
	ret = zonefile_parse_text(text, strlen(text), apex, 3600, &h);
	if (ret == ZC_EOK) {
		ret = records_import_check(imp, fixture_problem, NULL);
	}
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	uint64_t seq;
	ret = records_import_commit(imp, &seq, NULL);
	if (ret == ZC_EOK) {
		ret = builder_full_build(rs, es, apex, NULL, NULL, NULL);
	}
	return ret;
}
