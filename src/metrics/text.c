/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The Prometheus text exposition format (version 0.0.4): HELP and TYPE
 * lines, samples with labels, histograms as cumulative _bucket series
 * with le, then _sum and _count. Values are unsigned integers or doubles
 * printed with %.17g (exact for counters up to 2^53, as Prometheus reads
 * them as float64 anyway).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/internal.h"

void text_printf(text_t *t, const char *fmt, ...)
{
	if (t->failed) {
		return;
	}
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = t->cap - t->len;
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 16384;
		while (cap - t->len <= (size_t)n) {
			cap *= 2;
		}
		char *grown = realloc(t->buf, cap);
		if (grown == NULL) {
			t->failed = true;
			return;
		}
		t->buf = grown;
		t->cap = cap;
	}
}

void text_family(text_t *t, const char *name, const char *type,
                 const char *help)
{
	text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void text_sample(text_t *t, const char *name, const char *labels,
                 uint64_t value)
{
	if (labels[0] == '\0') {
		text_printf(t, "%s %llu\n", name, (unsigned long long)value);
	} else {
		text_printf(t, "%s{%s} %llu\n", name, labels,
		            (unsigned long long)value);
	}
}

void text_sample_double(text_t *t, const char *name, const char *labels,
                        double value)
{
	if (labels[0] == '\0') {
		text_printf(t, "%s %.17g\n", name, value);
	} else {
		text_printf(t, "%s{%s} %.17g\n", name, labels, value);
	}
}

void text_label_value(const char *v, char *out, size_t size)
{
	size_t n = 0;
	for (; *v != '\0' && n + 3 < size; v++) {
		if (*v == '\\' || *v == '"') {
			out[n++] = '\\';
			out[n++] = *v;
		} else if (*v == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *v;
		}
	}
	out[n] = '\0';
}

void text_histogram(text_t *t, const char *name, const char *labels,
                    const zc_hist_read_t *h, double scale)
{
	const char *sep = labels[0] != '\0' ? "," : "";
	uint64_t cumulative = 0;
	for (unsigned i = 0; i < h->buckets; i++) {
		cumulative += h->counts[i];
		text_printf(t, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, labels,
		            sep, (double)h->bounds[i] / scale,
		            (unsigned long long)cumulative);
	}
	cumulative += h->counts[h->buckets];
	text_printf(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	            (unsigned long long)cumulative);
	char sum[256];
	snprintf(sum, sizeof(sum), "%s_sum", name);
	text_sample_double(t, sum, labels, (double)h->sum / scale);
	snprintf(sum, sizeof(sum), "%s_count", name);
	text_sample(t, sum, labels, cumulative);
}
