/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reading and checking a master file for an import (see zone_load.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "cli/progress.h"
#include "cli/zone_load.h"
#include "common/error.h"
#include "zonefile/zonefile.h"

/* At most this many check problems are printed. */
#define MAX_REPORTED 20

/* Files an import reads ($INCLUDE adds some): a record's tag is its file's
 * index here (high 16 bits) and its line (low 48 bits). */
#define MAX_FILES 256

/* Records read between two looks at zone_source_t.abandoned. */
#define ABANDON_EVERY 1024

struct zone_load {
	const zone_source_t *src;
	bool abandoned;
	records_import_t *imp;
	const char *name;
	FILE *err;
	uint64_t records;
	unsigned errors;
	unsigned problems;
	bool progress;
	cli_progress_t reading;
	char *files[MAX_FILES];
	unsigned file_count;
};

static uint64_t make_tag(zone_load_t *l, const char *file, uint64_t line)
{
	unsigned i = 0;
	while (i < l->file_count && strcmp(l->files[i], file) != 0) {
		i++;
	}
	if (i == l->file_count && i < MAX_FILES) {
		l->files[i] = strdup(file);
		l->file_count += (l->files[i] != NULL);
	}
	return (uint64_t)(i < l->file_count ? i : MAX_FILES) << 48 |
	       (line & 0xffffffffffffULL);
}

static void on_parse_error(const char *file, uint64_t line, const char *msg,
                           void *ctx)
{
	zone_load_t *l = ctx;
	l->errors++;
	fprintf(l->err, "%s:%llu: error: %s\n", file, (unsigned long long)line,
	        msg);
}

/* Says why a record cannot be stored; returns non-zero to stop reading. */
static int refuse(zone_load_t *l, int ret, const knot_dname_t *owner,
                  uint16_t type, const char *why, const char *file,
                  uint64_t line)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1], tname[32];
	knot_dname_to_str(name, owner, sizeof(name));
	unsigned long long at = (unsigned long long)line;
	if (ret == ZC_ERDATA || ret == ZC_EUNSTORABLE) {
		knot_rrtype_to_string(type, tname, sizeof(tname));
		fprintf(l->err, "%s:%llu: error: %s %s: %s\n", file, at, name,
		        tname, why);
		return ++l->errors >= 100;
	}
	if (ret == KNOT_EOUTOFZONE) {
		fprintf(l->err, "%s:%llu: error: %s is outside the zone\n", file,
		        at, name);
		return ++l->errors >= 100;
	}
	if (ret == ZC_ETOOMANY) {
		fprintf(l->err, "%s:%llu: error: more records than the zone may "
		        "hold (zone-max-records)\n", file, at);
		l->errors++;
		return 1;
	}
	fprintf(l->err, "%s:%llu: error: %s\n", file, at, zc_strerror(ret));
	return 1;
}

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	zone_load_t *l = ctx;
	if (l->src->abandoned != NULL && l->records % ABANDON_EVERY == 0 &&
	    l->src->abandoned(l->src->abandoned_ctx)) {
		l->abandoned = true;
		return 1;
	}
	const char *why = NULL;
	int ret = zonefile_record_check(owner, type, ttl, rdata, rdata_len,
	                                &why);
	if (ret == ZC_EOK) {
		ret = records_import_add(l->imp, owner, type, ttl, rdata,
		                         rdata_len, make_tag(l, file, line));
	}
	if (ret != ZC_EOK) {
		return refuse(l, ret, owner, type, why, file, line);
	}
	cli_progress_set(&l->reading, ++l->records);
	return 0;
}

/* Prints a check problem with the file and line it comes from. */
static void on_problem(const knot_dname_t *owner, uint16_t type, uint64_t tag,
                       const char *what, void *ctx)
{
	zone_load_t *l = ctx;
	if (l->problems++ >= MAX_REPORTED) {
		return;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	char tname[32];
	knot_dname_to_str(name, owner, sizeof(name));
	knot_rrtype_to_string(type, tname, sizeof(tname));
	unsigned file = (unsigned)(tag >> 48);
	unsigned long long line = tag & 0xffffffffffffULL;
	if (tag != 0 && file < l->file_count) {
		fprintf(l->err, "%s:%llu: error: %s %s: %s\n", l->files[file],
		        line, name, tname, what);
	} else {
		fprintf(l->err, "%s: error: %s %s: %s\n", l->name, name, tname,
		        what);
	}
}

void zone_load_phase(bool progress, uint64_t records, const char *what)
{
	if (!progress || records < 10000) {
		return;
	}
	if (what != NULL) {
		fprintf(stderr, "%s %llu records...", what,
		        (unsigned long long)records);
	} else {
		fprintf(stderr, "\r\033[K");
	}
	fflush(stderr);
}

/* Parses and checks into the open import; returns problems found or <0. */
static int load(zone_load_t *l, const knot_dname_t *apex,
                const zone_source_t *src)
{
	zonefile_handler_t h = { .record = on_record, .error = on_parse_error,
	                         .ctx = l };
	cli_progress_begin(&l->reading, l->progress, "reading", 0);
	int ret = zonefile_parse_fd(src->fd, src->name, src->include_dir, apex,
	                            3600, &h);
	cli_progress_end(&l->reading);
	if (l->abandoned) {
		return -ECANCELED;
	}
	if (ret != ZC_EOK || l->errors > 0) {
		return (int)(l->errors > 0 ? l->errors : 1);
	}
	zone_load_phase(l->progress, l->records, "checking");
	int problems = records_import_check(l->imp, on_problem, l);
	zone_load_phase(l->progress, l->records, NULL);
	if (problems > MAX_REPORTED) {
		fprintf(l->err, "... and %d more problems\n",
		        problems - MAX_REPORTED);
	}
	return problems;
}

int zone_load(records_import_t *imp, const knot_dname_t *apex,
              const zone_source_t *src, FILE *err, bool progress,
              uint64_t *records)
{
	zone_load_t *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return KNOT_ENOMEM;
	}
	l->src = src;
	l->imp = imp;
	l->name = src->name;
	l->err = err;
	l->progress = progress;
	int ret = load(l, apex, src);
	*records = l->records;
	for (unsigned i = 0; i < l->file_count; i++) {
		free(l->files[i]);
	}
	free(l);
	return ret;
}
