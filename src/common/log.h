/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Logging to stderr with a level filter.
 *
 * Messages are written with one write(2) each so lines from several
 * threads never interleave. Secrets must never be passed here.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
	ZC_LOG_ERROR = 0,
	ZC_LOG_WARNING,
	ZC_LOG_INFO,
	ZC_LOG_DEBUG,
} zc_log_level_t;

/* Sets the most verbose level that is printed (default: info). */
void zc_log_set_level(zc_log_level_t level);

/* Parses "error", "warning", "info", "debug"; returns -1 if unknown. */
int zc_log_level_parse(const char *text);

void zc_log(zc_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define zc_error(...) zc_log(ZC_LOG_ERROR, __VA_ARGS__)
#define zc_warn(...)  zc_log(ZC_LOG_WARNING, __VA_ARGS__)
#define zc_info(...)  zc_log(ZC_LOG_INFO, __VA_ARGS__)
#define zc_debug(...) zc_log(ZC_LOG_DEBUG, __VA_ARGS__)

/*
 * For a message that a condition may repeat many times a second (every
 * write while the disk is full): true at most once per interval_ms, kept
 * in *last (monotonic milliseconds, start at 0).
 */
bool zc_log_due(_Atomic int64_t *last, int64_t interval_ms);
