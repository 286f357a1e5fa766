/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What both HTTP listeners (the API, the metrics) refuse in a request's
 * head before anything else is read: shapes that a proxy in front and
 * libmicrohttpd could read differently (a way to hide one request inside
 * another), and fields RFC 9112 says a server must refuse. http_check.c.
 */
#pragma once

#include <stdbool.h>
#include <microhttpd.h>

typedef struct {
	unsigned status;     /* 400, or 501 for a coding not understood. */
	char message[160];   /* For the answer: what is wrong, and where. */
} http_refusal_t;

/*
 * Checks the head of a request libmicrohttpd has parsed (version as it
 * gives it): every field name a token (RFC 9110 §5.1: no blank before the
 * colon, RFC 9112 §5.1), no NUL octet in a value that libmicrohttpd
 * shows (RFC 9110 §5.5), one
 * Host in an HTTP/1.1 request (RFC 9112 §3.2), Transfer-Encoding only
 * "chunked" and only in HTTP/1.1 (RFC 9112 §6.1, §6.3), never beside a
 * Content-Length, and Content-Length fields that agree (§6.3). True when
 * the request may go on; false with the refusal in *out, to be answered
 * before the body, closing the connection.
 */
bool http_head_check(struct MHD_Connection *conn, const char *version,
                     http_refusal_t *out);
