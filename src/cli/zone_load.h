/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to cli/: reading a master file into a bulk import of the
 * records store with every check an import runs (zonefile_record_check(),
 * records_import_check()), each problem said with its file and line:
 * what `zonecast zone import` stores (admin_zone.c) and what `zonecast
 * zone check` only checks (common.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "records/records.h"

typedef struct zone_load zone_load_t;

/* Where the master file comes from. */
typedef struct zone_source {
	int fd;                   /* The opened file (not closed here). */
	const char *name;         /* Its name in messages (as typed). */
	const char *include_dir;  /* For relative $INCLUDE (NULL: cwd). */
	/* Asked now and then while reading (may be NULL): true gives the
	 * load up (the server's client went away, or it stops). */
	bool (*abandoned)(void *ctx);
	void *abandoned_ctx;
} zone_source_t;

/*
 * Reads src into imp (records_import_begin()'d by the caller), then checks
 * it. Problems go to err ("FILE:LINE: error: ..."); `progress` draws the
 * "reading" line on a terminal. Returns the number of problems (0: imp
 * may be committed) or a negative code. *records gets the count read.
 */
int zone_load(records_import_t *imp, const knot_dname_t *apex,
              const zone_source_t *src, FILE *err, bool progress,
              uint64_t *records);

/* On a terminal (progress), names a step that shows no count ("storing
 * 400,002 records..."), and clears it (what NULL) when it is over. */
void zone_load_phase(bool progress, uint64_t records, const char *what);
