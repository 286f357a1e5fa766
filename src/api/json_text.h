/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to api/: JSON written as text into a growing buffer, for the
 * answers that hold many records (a batch's result): building a jansson
 * object per record and dumping it cost a third of a node's CPU in a
 * batch of 1,000 (docs/benchmarks.md, "Batch answers written as text").
 * The text is byte for byte what json_dumps(..., JSON_COMPACT) gives for
 * the same values (tests/unit/api/test_json_text.c compares them).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef struct {
	char *p;        /* NUL-terminated while !failed; owned. */
	size_t len, cap;
	bool failed;    /* Out of memory: every later call does nothing. */
} json_text_t;

/* Appends n bytes as they are (JSON the caller wrote); _lit a string
 * literal. */
void json_text_raw(json_text_t *t, const char *s, size_t n);
#define json_text_lit(t, s) json_text_raw((t), "" s, sizeof(s) - 1)
/* Appends a JSON string: s in quotes, escaped as jansson escapes it
 * (", \, and control characters; UTF-8 as it is). A byte that is not
 * part of valid UTF-8 (only a store written behind zonecast's back holds
 * such text) is read as Latin-1, as json_text_utf8_valid() reads it,
 * where jansson would refuse the whole string. */
void json_text_str(json_text_t *t, const char *s);
void json_text_int(json_text_t *t, int64_t v);
/* Appends a jansson value as json_dumps(v, JSON_COMPACT) writes it;
 * null for NULL. */
void json_text_value(json_text_t *t, const json_t *v);
/* The text, given up by t (NULL when out of memory); *len its length. */
char *json_text_take(json_text_t *t, size_t *len);
void json_text_free(json_text_t *t);
/* s with each byte that is not part of valid UTF-8 read as Latin-1
 * (U+0080..U+00FF), for jansson (malloc'd); NULL when s is valid UTF-8
 * already (or out of memory). */
char *json_text_utf8_valid(const char *s);
/* Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF) at the NUL-terminated s, or 0. */
size_t json_text_utf8_len(const unsigned char *s);
