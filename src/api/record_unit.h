/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to the dns_records endpoints and their write path, private to
 * these files: the unit of work of a write request (its ops, its state,
 * the stored records it reads) and its failure (record_unit.c). op_t is
 * the one type taken beyond them: the import (import_export.c) builds
 * ops and runs them through dns_records.h, which includes this header.
 *
 * The files, each above the ones it calls:
 *
 *   dns_records.c    the endpoints: the routing of
 *                    /zones/{id}/dns_records[/{id}|/batch], GET of one
 *                    record, single writes and a batch, their answers
 *   record_write.c   the write unit: one request's ops run in one
 *                    records-store unit with the zone rules
 *   record_fields.c  a record's JSON fields parsed and checked, and the
 *                    members a record body may have
 *   record_unit.c    the unit's first failure, recorded
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "api/conditional.h"
#include "api/content.h"
#include "api/internal.h"
#include "api/node_cache.h"
#include "common/arena.h"

/* A record id that names no record of the zone: Cloudflare's 404, code
 * 81044 ("Record does not exist."), which clients test (cal.com takes it
 * on a DELETE as already deleted); the same for every method and a
 * batch's entries, the field first. */
#define RECORD_MISSING_CODE 81044
#define RECORD_MISSING "%s: Record does not exist (no record %s in this zone)"

/* One requested change, parsed before the unit runs. */
typedef struct {
	enum { OP_DELETE, OP_PUT, OP_PATCH, OP_POST } op;
	int64_t id;
	json_t *fields;          /* Borrowed from the request body. */
	const char *list;        /* A batch's ("deletes", ...); NULL: not. */
	size_t index;            /* Its place in that list. */
	uint64_t line;           /* An import's: its line in the file. */
	int64_t result_id;       /* The record written (0: none, skipped). */
	json_t *deleted;         /* A batch's deleted record, as it was. */
	/* A single write's record as the unit wrote it, and its ETag: the
	 * answer when reading it back after the commit fails (the write is
	 * committed all the same). */
	json_t *written;
	char etag[64];
} op_t;

/* The unit of work of a write request. */
typedef struct {
	api_req_t *req;
	records_zone_t zone;
	op_t *ops;
	size_t count;
	const api_if_match_t *if_match; /* Of the request (conditional.c). */
	const api_if_match_t *if_none_match;
	bool no_change;          /* Its ops write nothing: no new version. */
	zc_arena_t arena;
	api_wire_t *wire;
	int64_t last_id;         /* The record a single-record write touched. */
	const op_t *op;          /* The op running: failures name its place. */
	bool import;             /* Identical records are skipped, not errors. */
	bool keep_deleted;       /* A batch: deletes render what they delete. */
	bool keep_written;       /* A single write: renders what it wrote. */
	char *tags;              /* The op's tags, JSON text (arena); NULL. */
	json_t *deleted;         /* What the op's delete rendered (owned). */
	int skipped;
	unsigned status;         /* HTTP status of a failure. */
	unsigned code;           /* Its error code; 0: by the status. */
	char err[512];
	/* What the unit's run read and wrote: its own, or the caller's (a
	 * batch answers from it what its read-back misses). */
	api_node_cache_t *cache;
	api_node_cache_t own;
} unit_t;

/* A stored record; its pointers into the unit's node cache, valid for
 * the rest of the unit's run. */
typedef struct {
	records_record_t rec;
	bool found;
} copy_t;

/* Records the unit's first failure; ZC_EUSAGE (record_unit.c). */
int api_record_unit_fail(unit_t *u, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
