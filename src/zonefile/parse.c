/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Master-file reading over libzscanner (see zonefile.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libzscanner/scanner.h>

#include "common/error.h"
#include "zonefile/zonefile.h"

#define MAX_ERRORS 100

typedef struct {
	const zonefile_handler_t *handler;
	unsigned errors;
} parse_t;

static const char *file_name(const zs_scanner_t *s)
{
	return s->file.name != NULL ? s->file.name : "-";
}

static void on_error(zs_scanner_t *s)
{
	parse_t *p = s->process.data;
	if (p->handler != NULL && p->handler->error != NULL) {
		p->handler->error(file_name(s), s->line_counter,
		                  zs_strerror(s->error.code), p->handler->ctx);
	}
	if (++p->errors >= MAX_ERRORS) {
		s->state = ZS_STATE_STOP;
	}
}

static void on_record(zs_scanner_t *s)
{
	parse_t *p = s->process.data;
	if (s->r_class != KNOT_CLASS_IN) {
		if (p->handler->error != NULL) {
			p->handler->error(file_name(s), s->line_counter,
			                  "only class IN is served",
			                  p->handler->ctx);
		}
		p->errors++;
		return;
	}
	if (p->handler->record(s->r_owner, s->r_type, s->r_ttl, s->r_data,
	                       (uint16_t)s->r_data_length, file_name(s),
	                       s->line_counter, p->handler->ctx) != 0) {
		p->errors++;
		s->state = ZS_STATE_STOP;
	}
}

/* Where an $INCLUDE may open files: the operator's own files (a
 * zonecast command's, read by libzscanner itself), or nowhere (text from
 * the API: a file of the server is not the caller's to read). */
typedef enum { INCLUDES_OPENED, INCLUDES_REFUSED } includes_t;

static int run(zs_scanner_t *s, parse_t *p, includes_t includes)
{
	int ret = ZC_EOK;
	if (includes == INCLUDES_OPENED) {
		if (zs_set_processing(s, on_record, on_error, p) != 0 ||
		    zs_parse_all(s) != 0) {
			if (p->errors == 0) {
				on_error(s); /* E.g. the file cannot be opened. */
			}
			ret = ZC_EZONEFILE;
		}
		return p->errors > 0 ? ZC_EZONEFILE : ret;
	}
	/* Record by record: libzscanner hands an $INCLUDE to the caller
	 * instead of opening its file. */
	s->process.automatic = false;
	s->process.record = NULL;
	s->process.error = NULL;
	s->process.data = p;
	for (;;) {
		if (zs_parse_record(s) != 0) {
			on_error(s); /* A fatal error. */
			ret = ZC_EZONEFILE;
			break;
		}
		if (s->state == ZS_STATE_DATA) {
			on_record(s);
		} else if (s->state == ZS_STATE_ERROR) {
			on_error(s);
			if (s->error.fatal) {
				break;
			}
		} else if (s->state == ZS_STATE_INCLUDE) {
			/* The end: libzscanner's parse stack keeps a frame
			 * of each include it handed over (the fuzzer smashed
			 * it with a few dozen). */
			if (p->handler->error != NULL) {
				p->handler->error(file_name(s), s->line_counter,
				                  "$INCLUDE is not accepted here (it "
				                  "would read a file of the server)",
				                  p->handler->ctx);
			}
			p->errors++;
			break;
		} else {
			break; /* The end, or stopped by a callback. */
		}
	}
	return p->errors > 0 ? ZC_EZONEFILE : ret;
}

/* libzscanner drops the last line of an input ending in a CR without
 * its error about CRs (it reports every other CR): reported here. */
static int check_last_cr(const char *text, size_t len, const char *name,
                         const zonefile_handler_t *handler)
{
	if (len == 0 || text[len - 1] != '\r') {
		return ZC_EOK;
	}
	uint64_t line = 1;
	for (const char *c = text; (c = memchr(c, '\n', text + len - c)) != NULL;
	     c++) {
		line++;
	}
	if (handler->error != NULL) {
		handler->error(name, line, "unsupported CRLF newline, remove CR "
		               "bytes", handler->ctx);
	}
	return ZC_EZONEFILE;
}

/* A scanner is 200 KiB: allocating one per parse (an mmap, page faults
 * and an munmap) cost more than parsing an API record. Each thread keeps
 * one for reuse; a nested parse gets a fresh one. */
typedef struct {
	zs_scanner_t scanner;
	bool busy;
	bool ready;                       /* Initialised for `origin`. */
	uint8_t origin[KNOT_DNAME_MAXLEN];
} cached_t;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void free_cached(void *ptr)
{
	cached_t *c = ptr;
	if (c->ready) {
		zs_deinit(&c->scanner);
	}
	free(c);
}

static void make_key(void)
{
	pthread_key_create(&cache_key, free_cached);
}

static zs_scanner_t *get_scanner(void)
{
	pthread_once(&cache_once, make_key);
	cached_t *c = pthread_getspecific(cache_key);
	if (c == NULL) {
		c = calloc(1, sizeof(*c));
		if (c == NULL || pthread_setspecific(cache_key, c) != 0) {
			free(c);
			return malloc(sizeof(zs_scanner_t));
		}
	}
	if (c->busy) {
		return malloc(sizeof(zs_scanner_t));
	}
	if (c->ready) {
		zs_deinit(&c->scanner); /* A whole-file parse initialises anew. */
		c->ready = false;
	}
	c->busy = true;
	return &c->scanner;
}

static void put_scanner(zs_scanner_t *s)
{
	cached_t *c = pthread_getspecific(cache_key);
	if (c != NULL && s == &c->scanner) {
		c->busy = false;
	} else {
		free(s);
	}
}

static int init(zs_scanner_t *s, const knot_dname_t *origin, uint32_t ttl)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	if (knot_dname_to_str(name, origin, sizeof(name)) == NULL) {
		return KNOT_EINVAL;
	}
	return zs_init(s, name, KNOT_CLASS_IN, ttl) == 0 ? ZC_EOK : KNOT_ENOMEM;
}

/* The whole content of fd: mapped when it is a regular file, else read
 * (a pipe). *mapped says which, for unmap_fd(). NULL with errno set. */
static char *map_fd(int fd, size_t *len, bool *mapped)
{
	struct stat st;
	*len = 0;
	*mapped = false;
	if (fstat(fd, &st) != 0) {
		return NULL;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
		               fd, 0);
		if (p == MAP_FAILED) {
			return NULL;
		}
		*len = (size_t)st.st_size;
		*mapped = true;
		return p;
	}
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return NULL;
	}
	size_t cap = 65536;
	char *buf = malloc(cap);
	for (ssize_t n = 1; buf != NULL && n > 0; ) {
		if (*len == cap) {
			char *grown = realloc(buf, cap * 2);
			if (grown == NULL) {
				break;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR) {
			n = 1;
		} else if (n < 0) {
			free(buf);
			return NULL;
		} else {
			*len += (size_t)n;
		}
	}
	if (buf != NULL && *len == cap) {
		free(buf); /* realloc failed */
		errno = ENOMEM;
		return NULL;
	}
	return buf;
}

static void unmap_fd(char *text, size_t len, bool mapped)
{
	if (mapped) {
		munmap(text, len);
	} else {
		free(text);
	}
}

/* Names the scanner's input as the file `name` in directory dir. */
static int name_input(zs_scanner_t *s, const char *name, const char *dir)
{
	free(s->file.name);
	s->file.name = strdup(name);
	if (dir != NULL) {
		free(s->path);
		s->path = strdup(dir);
	}
	return s->file.name != NULL && s->path != NULL ? ZC_EOK : KNOT_ENOMEM;
}

int zonefile_parse_fd(int fd, const char *name, const char *include_dir,
                      const knot_dname_t *origin, uint32_t default_ttl,
                      const zonefile_handler_t *handler)
{
	size_t len;
	bool mapped;
	char *text = map_fd(fd, &len, &mapped);
	if (text == NULL) {
		handler->error(name, 0, strerror(errno), handler->ctx);
		return ZC_EZONEFILE;
	}
	if (check_last_cr(text, len, name, handler) != ZC_EOK) {
		unmap_fd(text, len, mapped);
		return ZC_EZONEFILE;
	}
	zs_scanner_t *s = get_scanner();
	if (s == NULL) {
		unmap_fd(text, len, mapped);
		return KNOT_ENOMEM;
	}
	parse_t p = { .handler = handler };
	int ret = init(s, origin, default_ttl);
	if (ret == ZC_EOK) {
		if (zs_set_input_string(s, text, len) != 0) {
			ret = ZC_EZONEFILE;
		} else {
			ret = name_input(s, name, include_dir);
			ret = ret == ZC_EOK ? run(s, &p, INCLUDES_OPENED) : ret;
		}
		zs_deinit(s); /* Frees the names, not the input. */
	}
	put_scanner(s);
	unmap_fd(text, len, mapped);
	return ret;
}

int zonefile_parse_text(const char *text, size_t len,
                        const knot_dname_t *origin, uint32_t default_ttl,
                        const zonefile_handler_t *handler)
{
	if (check_last_cr(text, len, "-", handler) != ZC_EOK) {
		return ZC_EZONEFILE;
	}
	zs_scanner_t *s = get_scanner();
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	parse_t p = { .handler = handler };
	int ret = init(s, origin, default_ttl);
	if (ret == ZC_EOK) {
		if (zs_set_input_string(s, text, len) != 0) {
			ret = ZC_EZONEFILE;
		} else {
			ret = run(s, &p, INCLUDES_REFUSED);
		}
		zs_deinit(s);
	}
	put_scanner(s);
	return ret;
}

int zonefile_parse_record(const char *text, size_t len,
                          const knot_dname_t *origin,
                          const zonefile_handler_t *handler)
{
	pthread_once(&cache_once, make_key);
	cached_t *c = pthread_getspecific(cache_key);
	if (c == NULL || c->busy) {
		return zonefile_parse_text(text, len, origin, 3600, handler);
	}
	zs_scanner_t *s = &c->scanner;
	/* zs_init() clears 200 KiB: done once per thread and origin, not once
	 * per record. Lines carry their TTL, so the default never matters. */
	if (!c->ready || !knot_dname_is_equal(c->origin, origin)) {
		if (c->ready) {
			zs_deinit(s);
			c->ready = false;
		}
		if (init(s, origin, 3600) != ZC_EOK) {
			return KNOT_ENOMEM;
		}
		memcpy(c->origin, origin, knot_dname_size(origin));
		c->ready = true;
	}
	c->busy = true;
	parse_t p = { .handler = handler };
	int ret = check_last_cr(text, len, "-", handler);
	if (ret == ZC_EOK) {
		ret = zs_set_input_string(s, text, len) == 0 ?
		      run(s, &p, INCLUDES_REFUSED) : ZC_EZONEFILE;
	}
	c->busy = false;
	if (ret != ZC_EOK) {
		/* Start clean after an error: a fresh scanner next time. */
		zs_deinit(s);
		c->ready = false;
	}
	return ret;
}
