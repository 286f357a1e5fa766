/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Listen addresses ("ADDR:PORT", "[ADDR6]:PORT") as the configuration and
 * the command line write them, and the TCP listening socket of an HTTP
 * listener (the API, the metrics), shared by server/, api/, metrics/ and
 * cli/.
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

/* Parses "1.2.3.4:53" or "[::1]:53" (a numeric address and a port from 0
 * to 65535) into a socket address. ZC_EUSAGE when text is neither, and
 * for an IPv4-mapped IPv6 address ([::ffff:127.0.0.1]:53), which no
 * listener can bind: IPv6 sockets are IPv6-only (zc_addr_mapped()). */
int zc_addr_parse(const char *text, struct sockaddr_storage *ss,
                  socklen_t *len);

/*
 * Binds and listens on addr ("ADDR:PORT"), TCP, with backlog, so that a
 * busy address stops a start before anything else is done; *fd receives
 * the socket (close-on-exec). SO_REUSEADDR: connections of the last run
 * in TIME_WAIT do not keep a restart out, another listener still does.
 * An IPv6 address listens on IPv6 only. Logs why not, naming the
 * listener by who ("api", "metrics"): ZC_EUSAGE for an address that does
 * not parse, else -errno (-EADDRINUSE: another process listens there).
 */
int zc_tcp_listen(const char *who, const char *addr, int backlog, int *fd);

/* Whether text is "[ADDR]:PORT" with ADDR an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d): to say why zc_addr_parse() refuses it. */
bool zc_addr_mapped(const char *text);
