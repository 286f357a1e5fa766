/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The checks of a request's head shared by the HTTP listeners
 * (http_check.h). libmicrohttpd 0.9.75 takes "Transfer-Encoding : chunked"
 * as a field named "Transfer-Encoding " that frames nothing, so a body
 * read as chunked by a proxy was read here as the next request; a
 * Transfer-Encoding it does not know left the connection waiting for a
 * body without end; a folded "Content-Length:\r\n 187" made a field named
 * "Content-Length187" (it appends a continuation line to the name). A
 * NUL octet in a value ends it early ("Bearer T\0X" read as "Bearer T"):
 * libmicrohttpd gives the value's length as the C string's, so that is
 * not seen here (docs/differences.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/http_check.h"

typedef struct {
	http_refusal_t *out;
	bool refused;
	unsigned hosts, te, cl;
	const char *te_value, *cl_value;
} scan_t;

/* RFC 9110 §5.6.2: tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool refuse(scan_t *s, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool refuse(scan_t *s, unsigned status, const char *fmt, ...)
{
	s->refused = true;
	s->out->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->out->message, sizeof(s->out->message), fmt, ap);
	va_end(ap);
	return false;
}

/* A field name for a message: printable ASCII, at most 40 octets. */
static void printable(const char *key, size_t len, char *out, size_t size)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 5 < size && i < 40; i++) {
		unsigned char c = (unsigned char)key[i];
		o += (size_t)snprintf(out + o, size - o, c > 0x20 && c < 0x7f ?
		                      "%c" : "\\x%02x", c);
	}
	out[o] = '\0';
}

/* Whether a field name is a framing field's with more after it. */
static bool folded_framing(const char *key, size_t key_size)
{
	static const char *const framing[] = {
		MHD_HTTP_HEADER_CONTENT_LENGTH, MHD_HTTP_HEADER_TRANSFER_ENCODING,
	};
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(framing[i]);
		if (key_size > n && strncasecmp(key, framing[i], n) == 0) {
			return true;
		}
	}
	return false;
}

static enum MHD_Result scan_field(void *cls, enum MHD_ValueKind kind,
                                  const char *key, size_t key_size,
                                  const char *value, size_t value_size)
{
	(void)kind;
	scan_t *s = cls;
	char name[200];    /* For a refusal's message only. */
	bool token = key_size > 0;
	for (size_t i = 0; i < key_size && token; i++) {
		token = is_tchar((unsigned char)key[i]);
	}
	if (!token) {
		printable(key, key_size, name, sizeof(name));
		refuse(s, 400, "header \"%s\": not a field name (RFC 9112 "
		       "section 5.1: no blank before the colon)", name);
		return MHD_NO;
	}
	if (folded_framing(key, key_size)) {
		printable(key, key_size, name, sizeof(name));
		/* libmicrohttpd 0.9.75 appends a folded line (obs-fold) to
		 * the field's NAME: "Content-Length:\r\n 187" became a field
		 * "Content-Length187" with an empty value, while a proxy
		 * reads a length of 187, and the body ran as the next
		 * request. */
		refuse(s, 400, "header \"%s\": a framing field folded over "
		       "lines, or a name that is one run on (RFC 9112 section "
		       "5.2)", name);
		return MHD_NO;
	}
	if (value != NULL && memchr(value, '\0', value_size) != NULL) {
		/* Later libmicrohttpd versions give the whole length. */
		printable(key, key_size, name, sizeof(name));
		refuse(s, 400, "header %s: a NUL octet in its value (RFC 9110 "
		       "section 5.5)", name);
		return MHD_NO;
	}
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
		s->hosts++;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		s->te++;
		s->te_value = value;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		if (s->cl++ > 0 && value != NULL && s->cl_value != NULL &&
		    strcmp(value, s->cl_value) != 0) {
			refuse(s, 400, "Content-Length: given more than once "
			       "with different values (RFC 9112 section 6.3)");
			return MHD_NO;
		}
		s->cl_value = value;
	}
	return MHD_YES;
}

/* Whether text is "chunked" exactly, as libmicrohttpd takes it: it
 * drops the blanks before a value, not those after ("chunked " framed
 * nothing there, where a proxy reads chunked: RFC 9110 §5.5 strips them),
 * so a value with a blank after it is refused. */
static bool only_chunked(const char *text)
{
	return strcasecmp(text, "chunked") == 0;
}

/* Whether text is "chunked" with blanks around it (a list's member). */
static bool chunked_member(const char *text)
{
	text += strspn(text, " \t");
	size_t n = strlen(text);
	while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t')) {
		n--;
	}
	return n == 7 && strncasecmp(text, "chunked", 7) == 0;
}

/* Whether the list's last coding is chunked ("gzip, chunked"). */
static bool ends_chunked(const char *text)
{
	const char *last = strrchr(text, ',');
	return last != NULL && chunked_member(last + 1);
}

bool http_head_check(struct MHD_Connection *conn, const char *version,
                     http_refusal_t *out)
{
	scan_t s = { .out = out };
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_field, &s);
	if (s.refused) {
		return false;
	}
	bool http11 = version != NULL &&
	              strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
	if (http11 && s.hosts != 1) {
		return refuse(&s, 400, "Host: an HTTP/1.1 request has exactly "
		              "one (RFC 9112 section 3.2)");
	}
	if (!http11 && s.hosts > 1) {
		return refuse(&s, 400, "Host: given more than once (RFC 9112 "
		              "section 3.2)");
	}
	if (s.te == 0) {
		return true;
	}
	if (s.cl > 0) {
		return refuse(&s, 400, "Content-Length: not allowed beside "
		              "Transfer-Encoding (RFC 9112 section 6.1)");
	}
	if (!http11) {
		return refuse(&s, 400, "Transfer-Encoding: not in an HTTP/1.0 "
		              "request (RFC 9112 section 6.1)");
	}
	if (s.te == 1 && s.te_value != NULL && only_chunked(s.te_value)) {
		return true;
	}
	if (s.te == 1 && s.te_value != NULL && ends_chunked(s.te_value)) {
		return refuse(&s, 501, "Transfer-Encoding: only chunked is "
		              "understood here (RFC 9112 section 6.1)");
	}
	return refuse(&s, 400, "Transfer-Encoding: the body's length cannot "
	              "be told: chunked, given once, is the only coding "
	              "taken (RFC 9112 section 6.3)");
}
