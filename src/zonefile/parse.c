/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Master-file reading over libzscanner (see zonefile.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
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
	bool stopped;    /* By the record callback. */
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
	p->errors++;
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
		p->stopped = true;
	}
}

/* Where an $INCLUDE may open files: the operator's own files (a
 * zonecast command's, opened here: open_regular()), or nowhere (text from
 * the API: a file of the server is not the caller's to read). */
typedef enum { INCLUDES_OPENED, INCLUDES_REFUSED } includes_t;

/* How deep $INCLUDE files may nest: a file that includes itself (or a
 * loop of them) ends here, not when the process runs out of descriptors
 * or memory (libzscanner's own includes went on some 10,000 deep). */
#define MAX_INCLUDE_DEPTH 32

static int parse_file(int fd, const char *name, const char *dir,
                      const char *origin, uint32_t ttl, parse_t *p,
                      unsigned depth);

static void report(parse_t *p, const char *file, uint64_t line,
                   const char *msg)
{
	if (p->handler->error != NULL) {
		p->handler->error(file, line, msg, p->handler->ctx);
	}
	p->errors++;
}

/* What kind of file st is, for a refusal. */
static const char *file_kind(const struct stat *st)
{
	return S_ISFIFO(st->st_mode) ? "a FIFO" :
	       S_ISCHR(st->st_mode) ? "a character device" :
	       S_ISBLK(st->st_mode) ? "a block device" :
	       S_ISSOCK(st->st_mode) ? "a socket" :
	       S_ISDIR(st->st_mode) ? "a directory" : "not a regular file";
}

int zonefile_open(const char *path, char *why, size_t why_size)
{
	/* O_NONBLOCK: an open of a FIFO waits for a writer (it wedged the
	 * server's import for good), one of a device may wait too. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		snprintf(why, why_size, "cannot open %s: %s", path,
		         strerror(err));
		errno = err;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int err = errno;
		snprintf(why, why_size, "cannot open %s: %s", path,
		         strerror(err));
		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "cannot open %s: not a regular file "
		         "(%s): zone files are read from regular files only",
		         path, file_kind(&st));
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* An $INCLUDE the scanner handed over: its file (s->include_filename,
 * absolute) parsed with its origin (s->buffer, text) and the current
 * default TTL, as libzscanner parses it itself, but opened without
 * waiting (zonefile_open()) and within MAX_INCLUDE_DEPTH. */
static void include(zs_scanner_t *s, parse_t *p, unsigned depth)
{
	char *path = strdup(s->include_filename);
	char *origin = strdup((const char *)s->buffer);
	char why[PATH_MAX + 160];
	const char *parent = file_name(s);
	uint64_t line = s->line_counter;
	if (path == NULL || origin == NULL) {
		report(p, parent, line, "out of memory");
	} else if (depth >= MAX_INCLUDE_DEPTH) {
		snprintf(why, sizeof(why), "$INCLUDE %s: more than %u files "
		         "nested (does a file include itself?)", path,
		         MAX_INCLUDE_DEPTH);
		report(p, parent, line, why);
	} else {
		int fd = zonefile_open(path, why, sizeof(why));
		if (fd < 0) {
			report(p, parent, line, why);
		} else {
			char *real = realpath(path, NULL);
			char *copy = strdup(real != NULL ? real : path);
			unsigned before = p->errors;
			int ret = copy != NULL ?
			          parse_file(fd, path, dirname(copy), origin,
			                     s->default_ttl, p, depth + 1) :
			          KNOT_ENOMEM;
			/* As libzscanner: the include's line says it too. */
			if (ret == KNOT_ENOMEM) {
				report(p, parent, line, "out of memory");
			} else if (p->errors > before) {
				report(p, parent, line,
				       zs_strerror(ZS_UNPROCESSED_INCLUDE));
			}
			free(copy);
			free(real);
			close(fd);
		}
	}
	free(path);
	free(origin);
}

/* Record by record: libzscanner hands each $INCLUDE to this loop instead
 * of opening its file itself (its open() waits on a FIFO). */
static int run(zs_scanner_t *s, parse_t *p, includes_t includes,
               unsigned depth)
{
	int ret = ZC_EOK;
	s->process.automatic = false;
	s->process.record = NULL;
	s->process.error = NULL;
	s->process.data = p;
	while (p->errors < MAX_ERRORS && !p->stopped) {
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
		} else if (s->state == ZS_STATE_INCLUDE &&
		           includes == INCLUDES_OPENED) {
			/* libzscanner leaves a frame of its call stack with
			 * each include it hands over, back in its main
			 * machine: cleared as its own error lines clear it
			 * (a few dozen smashed the stack). */
			s->top = 0;
			include(s, p, depth);
		} else if (s->state == ZS_STATE_INCLUDE) {
			/* The end (see above: no frame left to pile up). */
			report(p, file_name(s), s->line_counter,
			       "$INCLUDE is not accepted here (it would read a "
			       "file of the server)");
			break;
		} else {
			break; /* The end. */
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

/* The content of the regular file open at fd, mapped (""
 * when empty): *len its length, for unmap(). NULL with errno set, or
 * with *why (a refusal of a file that is not a regular one: a pipe was
 * read whole into memory, unbounded). */
static char *map_file(int fd, size_t *len, char *why, size_t why_size)
{
	struct stat st;
	*len = 0;
	why[0] = '\0';
	if (fstat(fd, &st) != 0) {
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "not a regular file (%s): zone files "
		         "are read from regular files only (the zonecast "
		         "command copies its standard input to one)",
		         file_kind(&st));
		errno = EINVAL;
		return NULL;
	}
	if (st.st_size == 0) {
		return (char *)"";
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		return NULL;
	}
	/* Read once, in order: the kernel may drop pages behind. */
	(void)madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
	*len = (size_t)st.st_size;
	return p;
}

/*
 * A mapped zone file is the client's: truncated while it is read (by the
 * client, or anyone who can write it), the pages past its new end fault
 * with SIGBUS, which killed the server in the middle of a server-side
 * import. While parse_file() reads a mapping it registers it here (this
 * thread's, innermost $INCLUDE first); the SIGBUS handler jumps out of a
 * fault inside a registered mapping back to parse_file(), which refuses
 * the file ("changed while it was read"). Any other SIGBUS goes to the
 * handler there was before (a sanitizer's), or kills the process as it
 * would have (the default action, the fault taken again).
 */
typedef struct mapping_guard {
	const char *start;
	size_t len;
	sigjmp_buf jump;
	struct mapping_guard *outer;
} mapping_guard_t;

static __thread mapping_guard_t *guards;
static struct sigaction bus_before;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
	/* The kernel's, for a memory access (si_code > 0); a SIGBUS sent
	 * by kill(2) (SI_USER, SI_TKILL, ...) has no address to look at. */
	bool fault = info->si_code > 0;
	const char *addr = info->si_addr;
	long page = sysconf(_SC_PAGESIZE);
	for (mapping_guard_t *g = guards; fault && g != NULL; g = g->outer) {
		if (addr >= g->start &&
		    (size_t)(addr - g->start) < g->len + (size_t)page) {
			siglongjmp(g->jump, 1);
		}
	}
	if ((bus_before.sa_flags & SA_SIGINFO) &&
	    bus_before.sa_sigaction != NULL) {
		bus_before.sa_sigaction(sig, info, ctx);
	} else if (!(bus_before.sa_flags & SA_SIGINFO) &&
	           bus_before.sa_handler != SIG_DFL &&
	           bus_before.sa_handler != SIG_IGN) {
		bus_before.sa_handler(sig);
	} else if (!(bus_before.sa_flags & SA_SIGINFO) &&
	           bus_before.sa_handler == SIG_IGN && !fault) {
		return; /* Sent, and ignored before: ignored. */
	} else {
		/* The default action, as before the handler: a fault's
		 * access is retried on return and faults again; a signal
		 * sent (kill -BUS) is raised again (it was swallowed, and
		 * the handler gone with it, the next truncated import
		 * killed the server). */
		signal(SIGBUS, SIG_DFL);
		if (!fault) {
			raise(SIGBUS);
		}
	}
}

static void install_sigbus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, &bus_before);
}

static void unmap(char *text, size_t len)
{
	if (len > 0) {
		munmap(text, len);
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

/* Parses the regular file open at fd (named name in messages; relative
 * $INCLUDE paths from dir, NULL: the working directory) with the origin
 * (text) and default TTL, into p. */
static int parse_file(int fd, const char *name, const char *dir,
                      const char *origin, uint32_t ttl, parse_t *p,
                      unsigned depth)
{
	size_t len;
	char why[256];
	pthread_once(&bus_once, install_sigbus);
	char *text = map_file(fd, &len, why, sizeof(why));
	if (text == NULL) {
		report(p, name, 0, why[0] != '\0' ? why : strerror(errno));
		return ZC_EZONEFILE;
	}
	zs_scanner_t *s = get_scanner();
	if (s == NULL) {
		unmap(text, len);
		return KNOT_ENOMEM;
	}
	volatile bool scanning = false;
	mapping_guard_t guard = { .start = text, .len = len, .outer = guards };
	if (sigsetjmp(guard.jump, 1) != 0) {
		/* A fault in the mapping: the file shrank under the parse. */
		guards = guard.outer;
		if (scanning) {
			zs_deinit(s);
		}
		put_scanner(s);
		unmap(text, len);
		report(p, name, 0, "the file changed while it was read (truncated"
		       " by another process?): nothing of it is taken; import it"
		       " again once it is complete");
		return ZC_EZONEFILE;
	}
	guards = &guard;
	if (check_last_cr(text, len, name, p->handler) != ZC_EOK) {
		guards = guard.outer;
		p->errors++;
		put_scanner(s);
		unmap(text, len);
		return ZC_EZONEFILE;
	}
	scanning = true;
	int ret = zs_init(s, origin, KNOT_CLASS_IN, ttl) == 0 ? ZC_EOK :
	          KNOT_ENOMEM;
	if (ret == ZC_EOK) {
		if (zs_set_input_string(s, text, len) != 0) {
			ret = ZC_EZONEFILE;
		} else {
			ret = name_input(s, name, dir);
			ret = ret == ZC_EOK ? run(s, p, INCLUDES_OPENED, depth) :
			      ret;
		}
		zs_deinit(s); /* Frees the names, not the input. */
	}
	guards = guard.outer;
	put_scanner(s);
	unmap(text, len);
	return ret;
}

int zonefile_parse_fd(int fd, const char *name, const char *include_dir,
                      const knot_dname_t *origin, uint32_t default_ttl,
                      const zonefile_handler_t *handler)
{
	char text[KNOT_DNAME_TXT_MAXLEN + 1];
	if (knot_dname_to_str(text, origin, sizeof(text)) == NULL) {
		return KNOT_EINVAL;
	}
	parse_t p = { .handler = handler };
	int ret = parse_file(fd, name, include_dir, text, default_ttl, &p, 0);
	return ret == ZC_EOK && p.errors > 0 ? ZC_EZONEFILE : ret;
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
			ret = run(s, &p, INCLUDES_REFUSED, 0);
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
		      run(s, &p, INCLUDES_REFUSED, 0) : ZC_EZONEFILE;
	}
	c->busy = false;
	if (ret != ZC_EOK) {
		/* Start clean after an error: a fresh scanner next time. */
		zs_deinit(s);
		c->ready = false;
	}
	return ret;
}
