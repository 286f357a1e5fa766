/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Reading the lines of `zonecast record batch` (record_lines.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/record_lines.h"


/* Takes the next blank-separated word of *p into out, as a master file
 * reads one: a backslash keeps the character after it in the word ("b\ c"
 * is one name, as written), and is kept; a word ending in a lone
 * backslash is no word. */
static bool next_word(char **p, char *out, size_t size)
{
	*p += strspn(*p, " \t");
	size_t n = 0;
	const char *s = *p;
	while (s[n] != '\0' && s[n] != ' ' && s[n] != '\t') {
		if (s[n] == '\\' && s[++n] == '\0') {
			return false;
		}
		n++;
	}
	if (n == 0 || n >= size) {
		return false;
	}
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n;
	return true;
}

bool record_escape_blanks(char *name, size_t size)
{
	char out[sizeof(((record_line_t *)0)->name)];
	size_t o = 0;
	for (size_t i = 0; name[i] != '\0'; i++) {
		unsigned char c = (unsigned char)name[i + 1];
		if (name[i] == '\\' && c != '\0' && (c <= 0x20 || c == 0x7f)) {
			if (o + 4 >= sizeof(out)) {
				return false;
			}
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\%03u", c);
			i++;
			continue;
		}
		if (name[i] == '\\' && c != '\0') {
			if (o + 2 >= sizeof(out)) {
				return false;
			}
			out[o++] = name[i++];
		}
		if (o + 1 >= sizeof(out)) {
			return false;
		}
		out[o++] = name[i];
	}
	out[o] = '\0';
	if (o >= size) {
		return false;
	}
	memcpy(name, out, o + 1);
	return true;
}

bool record_parse_line(char *text, record_line_t *l)
{
	char ttl[32];
	char *p = text;
	l->ttl = 0;
	if (!next_word(&p, l->verb, sizeof(l->verb)) ||
	    !next_word(&p, l->name, sizeof(l->name)) ||
	    !record_escape_blanks(l->name, sizeof(l->name)) ||
	    !next_word(&p, l->type, sizeof(l->type))) {
		return false;
	}
	if (strspn(l->type, "0123456789") == strlen(l->type)) {
		snprintf(ttl, sizeof(ttl), "%s", l->type);
		if (strcmp(l->verb, "delete") == 0 ||
		    !next_word(&p, l->type, sizeof(l->type))) {
			return false;
		}
		l->ttl = strtol(ttl, NULL, 10);
	}
	p += strspn(p, " \t");
	size_t n = strlen(p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
		p[--n] = '\0';
	}
	l->content = n > 0 ? p : NULL;
	return strcmp(l->verb, "delete") == 0 || l->content != NULL;
}

char *record_read_all(const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "zonecast record: cannot read %s: %s\n", path,
		        strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char chunk[65536];
	size_t n;
	while (mem != NULL && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		fwrite(chunk, 1, n, mem);
	}
	if (mem != NULL) {
		fclose(mem);
	}
	if (f != stdin) {
		fclose(f);
	}
	return buf;
}
