/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Audit lines (see audit.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/audit.h"

/* Refusal lines written in the current second, and those left out. */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t window_s;
static unsigned window_lines;
static uint64_t suppressed;

static void add(zc_audit_t *a, const char *key, const char *value,
                bool number)
{
	if (a->count == ZC_AUDIT_FIELDS_MAX) {
		return;
	}
	size_t room = sizeof(a->values) - a->used;
	if (room == 0) {
		return;
	}
	char *dst = a->values + a->used;
	snprintf(dst, room, "%s", value);
	a->used += strlen(dst) + 1;
	a->fields[a->count++] = (zc_log_field_t){ .key = key, .value = dst,
	                                          .number = number };
}

void zc_audit_begin(zc_audit_t *a, const char *what, const char *outcome)
{
	a->count = 0;
	a->used = 0;
	a->refused = strcmp(outcome, "accepted") != 0;
	snprintf(a->message, sizeof(a->message), "audit: %s %s", what, outcome);
	add(a, "audit", what, false);
	add(a, "outcome", outcome, false);
	a->fields[0].not_in_text = true; /* The message says them. */
	a->fields[1].not_in_text = true;
}

void zc_audit_str(zc_audit_t *a, const char *key, const char *value)
{
	add(a, key, value != NULL ? value : "", false);
}

void zc_audit_num(zc_audit_t *a, const char *key, int64_t value)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRId64, value);
	add(a, key, text, true);
}

/* Whether a refusal line may be written now; *left_out receives the
 * lines suppressed since the last one written. */
static bool refusal_due(uint64_t *left_out)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	bool due;
	pthread_mutex_lock(&limit_lock);
	if (ts.tv_sec != window_s) {
		window_s = ts.tv_sec;
		window_lines = 0;
	}
	due = window_lines < ZC_AUDIT_REFUSALS_PER_S;
	if (due) {
		window_lines++;
		*left_out = suppressed;
		suppressed = 0;
	} else {
		suppressed++;
	}
	pthread_mutex_unlock(&limit_lock);
	return due;
}

void zc_audit_end(zc_audit_t *a)
{
	if (!zc_log_enabled(ZC_LOG_INFO)) {
		return;
	}
	uint64_t left_out = 0;
	if (a->refused && !refusal_due(&left_out)) {
		return;
	}
	if (left_out > 0) {
		zc_audit_num(a, "suppressed", (int64_t)left_out);
	}
	zc_log_fields(ZC_LOG_INFO, a->message, a->fields, a->count);
}
