/* SPDX-License-Identifier: GPL-3.0-or-later */
/* stderr logger: timestamp, level, message; one write per line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static volatile int max_level = ZC_LOG_INFO;

static const char *const level_names[] = {
	"error", "warning", "info", "debug",
};

void zc_log_set_level(zc_log_level_t level)
{
	max_level = level;
}

int zc_log_level_parse(const char *text)
{
	for (int i = 0; i <= ZC_LOG_DEBUG; i++) {
		if (strcasecmp(text, level_names[i]) == 0) {
			return i;
		}
	}
	return -1;
}

void zc_log(zc_log_level_t level, const char *fmt, ...)
{
	if ((int)level > max_level) {
		return;
	}
	char line[1024];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int len = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	len += snprintf(line + len, sizeof(line) - len, ".%03ldZ %s: ",
	                ts.tv_nsec / 1000000, level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	len = (n < 0) ? len : len + n;
	if (len > (int)sizeof(line) - 2) {
		len = sizeof(line) - 2;
	}
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}

bool zc_log_due(_Atomic int64_t *last, int64_t interval_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;
	int64_t seen = atomic_load(last);
	if (seen != 0 && now - seen < interval_ms) {
		return false;
	}
	return atomic_compare_exchange_strong(last, &seen, now);
}
