/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to common/: the log targets (log_target.c) as log.c feeds them. */
#pragma once

#include <stddef.h>

#include "common/log.h"

/* One formatted line, in the forms the targets take. */
typedef struct {
	zc_log_level_t level;
	const char *line;        /* Timestamped, in the configured format,
	                          * ending in '\n' (stderr, files). */
	size_t line_len;
	const char *body;        /* Without timestamp or level: syslog's
	                          * message (in JSON format, the JSON object,
	                          * the line without '\n'). */
	size_t body_len;
	const char *text;        /* The text body in either format: the
	                          * journal's MESSAGE (its fields carry the
	                          * rest). */
	size_t text_len;
	const char *message;     /* The message alone and its fields
	                          * (journal fields). */
	const zc_log_field_t *fields;
	size_t field_count;
} log_line_t;

/* The configured line format. */
zc_log_format_t log_target_format(void);

/* Writes the line to every target. */
void log_target_write(const log_line_t *line);
