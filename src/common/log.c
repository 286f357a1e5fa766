/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Log lines: the level filter and the two formats (text and JSON); the
 * targets they go to are log_target.c's (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/log.h"
#include "common/log_target.h"

#define LINE_MAX_BYTES 2048

static atomic_int max_level = ZC_LOG_INFO;

static const char *const level_names[] = {
	"error", "warning", "info", "debug",
};

void zc_log_set_level(zc_log_level_t level)
{
	atomic_store(&max_level, (int)level);
}

bool zc_log_enabled(zc_log_level_t level)
{
	return (int)level <= atomic_load_explicit(&max_level,
	                                          memory_order_relaxed);
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

const char *zc_log_level_name(zc_log_level_t level)
{
	return level_names[level];
}

/*
 * A line being written. Writers put whole characters (a UTF-8 sequence,
 * an escape) while they fit under limit; the first that does not sets
 * cut, and the line is then closed in the room kept past limit (a
 * quoted value's closing quote, the JSON object's brace) with its
 * truncation marker: a line cut short stays well-formed (one JSON
 * object; quotes closed) and says that it was cut.
 */
typedef struct {
	char *buf;
	size_t size;   /* What may be written at all. */
	size_t limit;  /* What characters may fill; the rest closes a cut. */
	size_t len;
	bool cut;
} out_t;

/* The octets a cut takes after limit: "…", a closing quote and the
 * marker (TEXT_CUT or JSON_CUT, the object's closing brace). */
#define ELLIPSIS "\xe2\x80\xa6"
#define TEXT_CUT " truncated=true"
#define JSON_CUT ",\"truncated\":true}"
#define CUT_ROOM (sizeof(ELLIPSIS) - 1 + 1 + sizeof(JSON_CUT) - 1)

/* Writes s (n octets) whole; nothing past size. */
static void put(out_t *o, const char *s, size_t n)
{
	size_t room = o->size - o->len;
	if (n > room) {
		n = room;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(out_t *o, const char *s)
{
	put(o, s, strlen(s));
}

/* Whether n more octets fit under the limit (else the line is cut). */
static bool fits(out_t *o, size_t n)
{
	if (!o->cut && o->len + n <= o->limit) {
		return true;
	}
	o->cut = true;
	return false;
}

/* Writes s whole if it fits under the limit; false (cut) if not. */
static bool put_whole(out_t *o, const char *s, size_t n)
{
	if (!fits(o, n)) {
		return false;
	}
	put(o, s, n);
	return true;
}

/* "2026-01-02T03:04:05.678Z" */
static void put_time(out_t *o)
{
	struct timespec ts;
	struct tm tm;
	char text[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(text + n, sizeof(text) - n, ".%03ldZ", ts.tv_nsec / 1000000);
	puts_(o, text);
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629 §4: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if none. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;
	if (p[0] < 0x80) {
		return 1;
	} else if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		lo = p[0] == 0xe0 ? 0xa0 : 0x80;
		hi = p[0] == 0xed ? 0x9f : 0xbf;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		lo = p[0] == 0xf0 ? 0x90 : 0x80;
		hi = p[0] == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (p[1] < lo || p[1] > hi) {
		return 0;
	}
	for (size_t i = 2; i < n; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf) {
			return 0;
		}
	}
	return n;
}

/*
 * One character of a JSON string's contents (RFC 8259 §7) at p, written
 * to esc (*esc_len octets; esc may be p itself): quotes, backslashes and
 * control characters escaped, UTF-8 as it is. A byte that is not part of
 * well-formed UTF-8 (a request path's %FF) has no JSON form: it is
 * written as the text format writes control characters, \xHH (JSON
 * "\\xHH"), so that the line stays one valid JSON object. Returns the
 * octets of p it takes.
 */
static size_t json_char(const unsigned char *p, char esc[8],
                        const char **out, size_t *out_len)
{
	size_t n = utf8_len(p);
	*out = esc;
	if (*p == '"' || *p == '\\') {
		esc[0] = '\\';
		esc[1] = (char)*p;
		*out_len = 2;
	} else if (*p < 0x20 || *p == 0x7f) {
		snprintf(esc, 8, "\\u%04x", *p);
		*out_len = 6;
	} else if (n == 0) {
		snprintf(esc, 8, "\\\\x%02x", *p);
		*out_len = 5;
	} else {
		*out = (const char *)p;
		*out_len = n;
		return n;
	}
	return 1;
}

size_t zc_log_char_width(const char *s, size_t *len)
{
	char esc[8];
	const char *out;
	size_t width;
	*len = json_char((const unsigned char *)s, esc, &out, &width);
	return width;
}

size_t zc_log_value_width(const char *s)
{
	size_t width = 2, n;
	for (; *s; s += n) {
		width += zc_log_char_width(s, &n);
	}
	return width;
}

/* A JSON string, cut (with "…" and its closing quote) where the limit
 * falls; false when cut. */
static bool put_json_string(out_t *o, const char *s)
{
	if (!put_whole(o, "\"", 1)) {
		return false;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char esc[8];
		const char *out;
		size_t n;
		p += json_char(p, esc, &out, &n);
		if (!put_whole(o, out, n)) {
			puts_(o, ELLIPSIS "\"");
			return false;
		}
	}
	put(o, "\"", 1);
	return true;
}

/* Whether a text value must be quoted to read back as one token. */
static bool needs_quotes(const char *s)
{
	if (*s == '\0') {
		return true;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == 0x7f) {
			return true;
		}
	}
	return false;
}

/* Text as it is, a character (UTF-8 sequence, or a byte) at a time,
 * newlines made spaces; false when cut ("…" written). */
static bool put_text_plain(out_t *o, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		n = n ? n : 1;
		if (!fits(o, n)) {
			puts_(o, ELLIPSIS);
			return false;
		}
		for (size_t i = 0; i < n; i++) {
			o->buf[o->len++] = p[i] == '\n' ? ' ' : (char)p[i];
		}
		p += n;
	}
	return true;
}

/* key=value, the value quoted ("a b") when it has spaces or quotes; a
 * value cut keeps its closing quote. False when cut. */
static bool put_text_field(out_t *o, const zc_log_field_t *f)
{
	size_t key_len = strlen(f->key);
	/* A number is written whole or not at all. */
	size_t need = key_len + 2 + (f->number ? strlen(f->value) : 1);
	if (!fits(o, need)) {
		return false;
	}
	puts_(o, " ");
	puts_(o, f->key);
	puts_(o, "=");
	if (f->number || !needs_quotes(f->value)) {
		return put_text_plain(o, f->value);
	}
	put(o, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)f->value; *p; p++) {
		char esc[8];
		size_t n = 1;
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			n = 2;
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			n = 4;
		} else {
			/* UTF-8 whole (a cut never splits a character). */
			size_t u = utf8_len(p);
			n = u ? u : 1;
			memcpy(esc, p, n);
			p += n - 1;
		}
		if (!put_whole(o, esc, n)) {
			puts_(o, ELLIPSIS "\"");
			return false;
		}
	}
	put(o, "\"", 1);
	return true;
}

/* The message and its fields as text, without newlines. */
static void put_text_body(out_t *o, const char *message,
                          const zc_log_field_t *fields, size_t count)
{
	bool whole = put_text_plain(o, message);
	for (size_t i = 0; whole && i < count; i++) {
		if (!fields[i].not_in_text) {
			whole = put_text_field(o, &fields[i]);
		}
	}
	if (!whole) {
		puts_(o, TEXT_CUT);
	}
}

static void put_json_object(out_t *o, zc_log_level_t level,
                            const char *message,
                            const zc_log_field_t *fields, size_t count)
{
	puts_(o, "{\"time\":\"");
	put_time(o);
	puts_(o, "\",\"level\":\"");
	puts_(o, level_names[level]);
	puts_(o, "\",\"message\":");
	bool whole = put_json_string(o, message);
	for (size_t i = 0; whole && i < count; i++) {
		size_t key_len = strlen(fields[i].key);
		/* A number is written whole or not at all; a string at least
		 * as "". */
		size_t need = key_len + 4 + (fields[i].number ?
		                             strlen(fields[i].value) : 2);
		if (!fits(o, need)) {
			whole = false;
			break;
		}
		puts_(o, ",");
		put_json_string(o, fields[i].key);
		puts_(o, ":");
		if (fields[i].number) {
			puts_(o, fields[i].value);
		} else {
			whole = put_json_string(o, fields[i].value);
		}
	}
	puts_(o, whole ? "}" : JSON_CUT);
}

void zc_log_fields(zc_log_level_t level, const char *message,
                   const zc_log_field_t *fields, size_t count)
{
	if (!zc_log_enabled(level)) {
		return;
	}
	char body_buf[LINE_MAX_BYTES], line_buf[LINE_MAX_BYTES * 2];
	/* size - 1: room for the NUL (body) or the newline (line). */
	out_t body = { body_buf, sizeof(body_buf) - 1,
	               sizeof(body_buf) - 1 - CUT_ROOM, 0, false };
	put_text_body(&body, message, fields, count);
	body_buf[body.len] = '\0';
	out_t line = { line_buf, sizeof(line_buf) - 1,
	               sizeof(line_buf) - 1 - CUT_ROOM, 0, false };
	log_line_t l = { .level = level, .message = message,
	                 .fields = fields, .field_count = count,
	                 .text = body_buf, .text_len = body.len };
	if (log_target_format() == ZC_LOG_JSON) {
		put_json_object(&line, level, message, fields, count);
		l.body = line_buf;
		l.body_len = line.len;
	} else {
		put_time(&line);
		puts_(&line, " ");
		puts_(&line, level_names[level]);
		puts_(&line, ": ");
		put(&line, body_buf, body.len);
		l.body = body_buf;
		l.body_len = body.len;
	}
	line_buf[line.len++] = '\n'; /* size - 1 kept room for it. */
	l.line = line_buf;
	l.line_len = line.len;
	log_target_write(&l);
}

void zc_log(zc_log_level_t level, const char *fmt, ...)
{
	if (!zc_log_enabled(level)) {
		return;
	}
	char message[LINE_MAX_BYTES];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	zc_log_fields(level, message, NULL, 0);
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
