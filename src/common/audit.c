/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Audit lines (see audit.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/audit.h"

/* Refusal lines allowed a second (0: all), written in the current
 * second, and those left out. */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned rate = ZC_AUDIT_REFUSALS_PER_S;
static int64_t window_s;
static unsigned window_lines;
static uint64_t suppressed;

static void add(zc_audit_t *a, const char *key, const char *value,
                bool number, bool fixed)
{
	/* The last field is kept for `suppressed` (zc_audit_end()). */
	size_t max = ZC_AUDIT_FIELDS_MAX - (strcmp(key, "suppressed") != 0);
	if (a->count >= max) {
		return; /* More fields than any line has: a bug, not input. */
	}
	size_t len = strlen(value), keep = len;
	if (keep > ZC_AUDIT_VALUE_MAX) {
		keep = ZC_AUDIT_VALUE_MAX;
		/* Not inside a UTF-8 sequence. */
		while (keep > 0 && ((unsigned char)value[keep] & 0xc0) == 0x80) {
			keep--;
		}
	}
	char *dst = a->values + a->used;
	memcpy(dst, value, keep);
	dst[keep] = '\0';
	a->used += keep + 1 + ZC_AUDIT_MARK_ROOM; /* Room for the marker. */
	a->full_len[a->count] = len;
	a->fixed[a->count] = fixed || number;
	a->fields[a->count++] = (zc_log_field_t){ .key = key, .value = dst,
	                                          .number = number };
}

void zc_audit_begin(zc_audit_t *a, const char *what, const char *outcome)
{
	a->count = 0;
	a->used = 0;
	a->refused = strcmp(outcome, "accepted") != 0;
	snprintf(a->message, sizeof(a->message), "audit: %s %s", what, outcome);
	add(a, "audit", what, false, true);
	add(a, "outcome", outcome, false, true);
	a->fields[0].not_in_text = true; /* The message says them. */
	a->fields[1].not_in_text = true;
}

void zc_audit_str(zc_audit_t *a, const char *key, const char *value)
{
	add(a, key, value != NULL ? value : "", false, false);
}

void zc_audit_fixed(zc_audit_t *a, const char *key, const char *value)
{
	add(a, key, value != NULL ? value : "", false, true);
}

void zc_audit_num(zc_audit_t *a, const char *key, int64_t value)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRId64, value);
	add(a, key, text, true, true);
}

/* The octets of the character, or of the name's escape (\DDD, \X), at
 * s; *width receives what they take written. */
static size_t unit(const char *s, size_t *width)
{
	size_t n;
	if (s[0] == '\\' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' &&
	    s[2] <= '9' && s[3] >= '0' && s[3] <= '9') {
		n = 4;
	} else if (s[0] == '\\' && s[1] != '\0') {
		n = 2;
	} else {
		*width = zc_log_char_width(s, &n);
		return n;
	}
	*width = 0;
	for (size_t i = 0, one; i < n; i += one) {
		*width += zc_log_char_width(s + i, &one);
	}
	return n;
}

/* The value's width without its quotes. */
static size_t content_width(const zc_log_field_t *f)
{
	return f->number ? strlen(f->value) : zc_log_value_width(f->value) - 2;
}

static size_t mark(const zc_audit_t *a, size_t i, char *out, size_t size)
{
	int n = snprintf(out, size, "\xe2\x80\xa6(%zu octets)", a->full_len[i]);
	return n > 0 ? (size_t)n : 0;
}

/* Shortens value i to at most cap octets written, its marker included. */
static void shorten(zc_audit_t *a, size_t i, size_t cap)
{
	char m[ZC_AUDIT_MARK_ROOM];
	size_t m_len = mark(a, i, m, sizeof(m));
	size_t room = cap > m_len ? cap - m_len : 0, used = 0, at = 0;
	char *v = (char *)a->fields[i].value;
	while (v[at] != '\0') {
		size_t width, n = unit(v + at, &width);
		if (used + width > room) {
			break;
		}
		used += width;
		at += n;
	}
	memcpy(v + at, m, m_len + 1); /* add() kept the room. */
}

/* Fits the fields in ZC_AUDIT_WIDTH_MAX: the values a client chose that
 * are longer than a cap are shortened to it, the cap the largest that
 * fits (the longest values pay first; none below ZC_AUDIT_SHOWN_MIN). */
static void fit(zc_audit_t *a)
{
	size_t need[ZC_AUDIT_FIELDS_MAX], fixed = 0, total = 0, longest = 0;
	bool cut[ZC_AUDIT_FIELDS_MAX];
	char m[ZC_AUDIT_MARK_ROOM];
	for (size_t i = 0; i < a->count; i++) {
		const zc_log_field_t *f = &a->fields[i];
		fixed += strlen(f->key) + 4 + (f->number ? 0 : 2); /* ,"k": "" */
		cut[i] = a->full_len[i] > strlen(f->value); /* Kept in part. */
		need[i] = content_width(f) + (cut[i] ? mark(a, i, m, sizeof(m)) : 0);
		if (a->fixed[i]) {
			fixed += need[i];
			need[i] = 0;
		}
		total += need[i];
		longest = need[i] > longest ? need[i] : longest;
	}
	size_t avail = fixed < ZC_AUDIT_WIDTH_MAX ? ZC_AUDIT_WIDTH_MAX - fixed : 0;
	size_t cap = longest;
	if (total > avail) {
		size_t lo = 0, hi = longest; /* The largest cap that fits. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo + 1) / 2, sum = 0;
			for (size_t i = 0; i < a->count; i++) {
				sum += need[i] < mid ? need[i] : mid;
			}
			if (sum <= avail) {
				lo = mid;
			} else {
				hi = mid - 1;
			}
		}
		cap = lo > ZC_AUDIT_SHOWN_MIN ? lo : ZC_AUDIT_SHOWN_MIN;
	}
	for (size_t i = 0; i < a->count; i++) {
		if (a->fixed[i] && cut[i]) { /* Longer than any the server makes. */
			shorten(a, i, ZC_AUDIT_VALUE_MAX);
		} else if (!a->fixed[i] && (need[i] > cap || cut[i])) {
			shorten(a, i, need[i] < cap ? need[i] : cap);
		}
	}
}

void zc_audit_refusal_rate(unsigned per_s)
{
	pthread_mutex_lock(&limit_lock);
	rate = per_s;
	pthread_mutex_unlock(&limit_lock);
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
	due = rate == 0 || window_lines < rate;
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
	fit(a);
	zc_log_fields(ZC_LOG_INFO, a->message, a->fields, a->count);
}

void zc_audit_flush(bool all)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t left_out = 0;
	pthread_mutex_lock(&limit_lock);
	if (suppressed > 0 && (all || ts.tv_sec != window_s)) {
		left_out = suppressed;
		suppressed = 0;
	}
	pthread_mutex_unlock(&limit_lock);
	if (left_out == 0 || !zc_log_enabled(ZC_LOG_INFO)) {
		return;
	}
	zc_audit_t a;
	zc_audit_begin(&a, "refusals", "suppressed");
	zc_audit_num(&a, "suppressed", (int64_t)left_out);
	zc_log_fields(ZC_LOG_INFO, a.message, a.fields, a.count);
}
