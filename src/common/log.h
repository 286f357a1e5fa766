/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Logging with a level filter, to one or more targets: stderr, a file
 * (reopened on request, for logrotate), syslog and the systemd journal;
 * each line as text or as one JSON object (log-format).
 *
 * Design
 *
 * A message is formatted once per format it is needed in and handed to
 * every target with one write(2) or send(2), so lines from several threads
 * never interleave. The targets are swapped (zc_log_configure(),
 * zc_log_reopen()) under a mutex that each line takes while it writes:
 * logging is never on the query path (what a flood could repeat is
 * limited with zc_log_due()), so the lock costs nothing that matters.
 * Syslog and journald are spoken directly over their datagram sockets
 * (RFC 3164 framing as glibc's syslog(3) sends it; the journal's native
 * protocol with structured fields), so a message carries its fields and
 * no other library state is involved. Secrets must never be passed here.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
	ZC_LOG_ERROR = 0,
	ZC_LOG_WARNING,
	ZC_LOG_INFO,
	ZC_LOG_DEBUG,
} zc_log_level_t;

typedef enum {
	ZC_LOG_TEXT = 0,  /* "2026-01-02T03:04:05.678Z info: message" */
	ZC_LOG_JSON,      /* {"time":...,"level":"info","message":...} */
} zc_log_format_t;

#define ZC_LOG_TARGETS_MAX 4
#define ZC_LOG_TARGET_LEN 1024

/* Where and how lines go. A target is "stderr", "syslog", "journald" or
 * the absolute path of a file (appended to, created mode 0640). */
typedef struct {
	int level;                  /* zc_log_level_t */
	zc_log_format_t format;
	size_t target_count;        /* 0: stderr */
	char target[ZC_LOG_TARGETS_MAX][ZC_LOG_TARGET_LEN];
	/* A reload's: a file that is a running target and cannot be opened
	 * again (logrotate moved it, and the service user may not create
	 * files in its directory) keeps the descriptor it has, instead of
	 * refusing the whole configuration. */
	bool keep_running_files;
} zc_log_config_t;

/* Sets the most verbose level that is printed (default: info). */
void zc_log_set_level(zc_log_level_t level);

/* Parses "error", "warning", "info", "debug"; returns -1 if unknown. */
int zc_log_level_parse(const char *text);

/* The level's name ("info"). */
const char *zc_log_level_name(zc_log_level_t level);

/* True when a target text is one zc_log_configure() takes. */
bool zc_log_target_valid(const char *target);

/*
 * Applies cfg: opens every file target and connects the sockets, then
 * swaps them in at once. When a file cannot be opened nothing changes and
 * err says why (ZC_EINVAL_CONFIG); with keep_running_files, a file that
 * is already a target keeps its descriptor instead, and ZC_EOK comes with
 * err saying so (a warning; "" when there is none). A socket that is not
 * there (no syslog daemon yet) is not an error: it is tried again at each
 * line.
 */
int zc_log_configure(const zc_log_config_t *cfg, char *err, size_t err_size);

/* Reopens the file targets (after logrotate moved them away); a file that
 * cannot be reopened keeps its old descriptor (the error is logged). */
void zc_log_reopen(void);

/* Closes every target; later lines go to stderr. */
void zc_log_close(void);

void zc_log(zc_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define zc_error(...) zc_log(ZC_LOG_ERROR, __VA_ARGS__)
#define zc_warn(...)  zc_log(ZC_LOG_WARNING, __VA_ARGS__)
#define zc_info(...)  zc_log(ZC_LOG_INFO, __VA_ARGS__)
#define zc_debug(...) zc_log(ZC_LOG_DEBUG, __VA_ARGS__)

/* True when a message at level would be written. */
bool zc_log_enabled(zc_log_level_t level);

/*
 * For a message that a condition may repeat many times a second (every
 * write while the disk is full): true at most once per interval_ms, kept
 * in *last (monotonic milliseconds, start at 0).
 */
bool zc_log_due(_Atomic int64_t *last, int64_t interval_ms);

/* --- Structured lines (audit.h builds them) --- */

typedef struct {
	const char *key;    /* [a-z_]+ */
	const char *value;
	bool number;        /* value is a JSON number (written unquoted) */
	bool not_in_text;   /* JSON and journal only (the message says it) */
} zc_log_field_t;

/*
 * Writes message with fields: as text "message key=value ...", as JSON
 * the message and each field as a member, to journald as fields
 * ZONECAST_KEY=value. A line is at most 2048 octets as text (message and
 * fields) and 4096 as JSON: one that would be longer is cut between two
 * characters (never inside an escape or a UTF-8 sequence), the value cut
 * ending in "…" with its quotes closed, and marked: " truncated=true" in
 * text, "truncated":true in JSON (still one valid object). Audit lines
 * (audit.h) shorten their values so that they are never cut here.
 */
void zc_log_fields(zc_log_level_t level, const char *message,
                   const zc_log_field_t *fields, size_t count);

/* The octets the character at s (a UTF-8 sequence, or one byte) takes
 * in a line's value at most (as JSON escapes it; text takes no more);
 * *len receives the octets it has in s. */
size_t zc_log_char_width(const char *s, size_t *len);

/* The octets value s takes at most in a line, quotes included. */
size_t zc_log_value_width(const char *s);
