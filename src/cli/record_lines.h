/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The lines of `zonecast record batch` (and the NAME of add, replace and
 * rm): words as a master file reads them, a name's escaped blanks as the
 * API takes them (record_lines.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One line of a batch file: VERB NAME [TTL] TYPE [CONTENT]. */
typedef struct {
	char verb[16], name[1100], type[32];
	long ttl;
	const char *content;     /* Into the line; NULL: none. */
} record_line_t;

/* Parses "VERB NAME [TTL] TYPE [CONTENT]" (text is changed: the content
 * points into it); false when the line is not of that form. */
bool record_parse_line(char *text, record_line_t *l);

/* A name's escaped blank or control character ("b\\ c") written as the
 * API takes it, \DDD ("b\\032c"); false when it no longer fits. */
bool record_escape_blanks(char *name, size_t size);

/* Reads a whole file (or stdin for "-"); NULL after printing why. */
char *record_read_all(const char *path);
