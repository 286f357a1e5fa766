/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to metrics/: the endpoint's state and the text format writer. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"
#include "metrics/metrics.h"
#include "records/records.h"

/* Changes counted for one zone since the endpoint started. */
typedef struct {
	int64_t zone_id;
	uint64_t events;
	bool served;     /* In the edge store at the scrape (put_zones()). */
} zone_changes_t;

struct metrics {
	metrics_config_t cfg;
	struct MHD_Daemon *daemon;
	int64_t started_s;           /* Unix time the endpoint started */
	const char *backend;         /* The records store's: "sqlite" or
	                              * "postgresql" (static); NULL: none */
	/* Only the listener's one thread touches what follows. */
	records_store_t *rs;         /* Opened at the first scrape */
	uint64_t changes_seq;        /* Log read up to here for zone changes */
	zone_changes_t *zones;       /* Sorted by zone_id */
	size_t zone_count, zone_cap;
};

/* --- text.c: Prometheus text format (exposition format 0.0.4) --- */

typedef struct {
	char *buf;
	size_t len, cap;
	bool failed;                 /* Out of memory: the scrape fails. */
} text_t;

/* Appends printf-style (sticky failure). */
void text_printf(text_t *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "# HELP name help\n# TYPE name type\n" */
void text_family(text_t *t, const char *name, const char *type,
                 const char *help);

/*
 * One sample: name{labels} value. labels is "" or a list already
 * formatted as k="v",k="v" (values escaped with text_label_value()).
 */
void text_sample(text_t *t, const char *name, const char *labels,
                 uint64_t value);
void text_sample_double(text_t *t, const char *name, const char *labels,
                        double value);

/* Writes v into out as a label value: \ " and newline escaped. */
void text_label_value(const char *v, char *out, size_t size);

/*
 * A histogram's samples (_bucket with cumulative counts and le, _sum,
 * _count) under one family. scale divides bounds and sum (1e9 for
 * nanoseconds shown as seconds, 1 for plain counts).
 */
void text_histogram(text_t *t, const char *name, const char *labels,
                    const zc_hist_read_t *h, double scale);
