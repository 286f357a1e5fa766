/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to cli/: progress of long work (an import, a full build, a
 * verify) on a terminal: "\rWHAT: N records (P%), R records/s" redrawn at
 * most five times a second on stderr, and always a final line with the
 * total and the mean rate. Off when stderr is not a terminal or the caller is told
 * to be quiet, so scripts and logs get no carriage returns.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct {
	bool on;
	const char *what;    /* "reading", "building", "verifying" */
	const char *unit;    /* What is counted: "records" (the default). */
	uint64_t total;      /* Expected count (0: unknown, no percentage). */
	uint64_t count;
	double start, last;  /* Monotonic seconds. */
} cli_progress_t;

/* Starts a progress line for `what` (shown only when enabled and stderr
 * is a terminal). */
void cli_progress_begin(cli_progress_t *p, bool enabled, const char *what,
                        uint64_t total);

/* Count reached so far (redrawn when due). */
void cli_progress_set(cli_progress_t *p, uint64_t count);

/* Seconds since cli_progress_begin(). */
double cli_progress_elapsed(const cli_progress_t *p);

/* Ends the line with the final count and rate. Drawn on a terminal even
 * when the work was too short for a redraw, so an operator always sees
 * the total and the rate (and a test on a fast machine sees them too). */
void cli_progress_end(cli_progress_t *p);

/* Whether progress lines may be drawn at all (stderr is a terminal). */
bool cli_progress_tty(void);

/* builder_full_build() / builder_verify_progress() callback (ctx: the
 * cli_progress_t). */
void cli_progress_records(uint64_t records, void *ctx);
