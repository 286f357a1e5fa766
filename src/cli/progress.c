/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Progress lines on a terminal (see progress.h). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define REDRAW_S 0.2

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

bool cli_progress_tty(void)
{
	return isatty(STDERR_FILENO) != 0;
}

void cli_progress_begin(cli_progress_t *p, bool enabled, const char *what,
                        uint64_t total)
{
	*p = (cli_progress_t){ .on = enabled && cli_progress_tty(), .what = what,
	                       .unit = "records", .total = total, .start = now_s() };
	p->last = p->start;
}

/* "12,345,678" */
static void group(uint64_t n, char *out, size_t size)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 2 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0) {
			out[o++] = ',';
		}
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

static void draw(cli_progress_t *p, double now, bool final)
{
	char count[40], rate[40], pct[16] = "";
	double elapsed = now - p->start;
	group(p->count, count, sizeof(count));
	group(elapsed > 0 ? (uint64_t)(p->count / elapsed) : 0, rate,
	      sizeof(rate));
	if (p->total > 0 && !final) {
		snprintf(pct, sizeof(pct), " (%.0f%%)", 100.0 * (double)p->count /
		         (double)p->total);
	}
	fprintf(stderr, "\r%s: %s %s%s, %s %s/s\033[K", p->what, count,
	        p->unit, pct, rate, p->unit);
	if (final) {
		fprintf(stderr, " in %.1f s\n", elapsed);
	}
	fflush(stderr);
}

void cli_progress_set(cli_progress_t *p, uint64_t count)
{
	p->count = count;
	if (!p->on) {
		return;
	}
	double now = now_s();
	if (now - p->last >= REDRAW_S) {
		p->last = now;
		draw(p, now, false);
	}
}

double cli_progress_elapsed(const cli_progress_t *p)
{
	return now_s() - p->start;
}

void cli_progress_end(cli_progress_t *p)
{
	if (p->on) {
		draw(p, now_s(), true);
	}
	p->on = false;
}

void cli_progress_records(uint64_t records, void *ctx)
{
	cli_progress_set(ctx, records);
}
