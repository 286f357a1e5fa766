/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Binding the listen addresses, for this process alone.
 *
 * Design
 *
 * Each worker owns a UDP socket and a TCP listening socket per address,
 * bound with SO_REUSEPORT so that the kernel spreads clients over the
 * workers. The kernel lets any process of the same user join such a
 * group: a second zonecast (or a knotd, which binds the same way) started
 * on the address would bind without an error and silently answer a share
 * of the queries from its own data. So, before its workers' sockets, an
 * address is probed with sockets that do not ask for SO_REUSEPORT: the
 * probe fails with EADDRINUSE while any socket holds the address or one
 * that overlaps it (0.0.0.0 and 127.0.0.1 on one port), whatever options
 * that socket has. The TCP probe sets SO_REUSEADDR, which still conflicts
 * with a listening socket but not with connections in TIME_WAIT that a
 * server killed a moment ago leaves behind; the UDP probe sets nothing,
 * as SO_REUSEADDR would let it share the port (zonecast's UDP sockets have
 * it).
 *
 * Two zonecasts starting together could both probe before either binds.
 * A per-port lock closes that gap: an abstract UNIX socket named after the
 * port, which exists once per network namespace (as ports do), is bound
 * from before the probe until every socket of the address is bound, then
 * closed. A process that finds it taken waits for it, then probes and
 * finds the address in use. The kernel releases it when a process dies.
 * Port 0 (a port per socket, chosen by the kernel) shares nothing and is
 * neither locked nor probed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/log.h"
#include "common/net.h"
#include "server/worker.h"

/* How long a start waits for another zonecast to finish binding a port. */
#define PORT_LOCK_WAIT_MS 5000

struct server_sockets {
	size_t count;
	int fds[];     /* Per address, per worker: UDP then TCP; -1: taken. */
};

static const char *type_name(int type)
{
	return type == SOCK_STREAM ? "TCP" : "UDP";
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
	             ((const struct sockaddr_in6 *)ss)->sin6_port :
	             ((const struct sockaddr_in *)ss)->sin_port);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Takes the lock of a port (see the top of the file); -errno or the fd. */
static int lock_port(uint16_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* sun_path[0] == '\0': the abstract namespace, no file. */
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
	                 "zonecast/listen-port/%u", port);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	                            1 + n);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	for (long waited = 0; bind(fd, (struct sockaddr *)&sa, len) != 0;
	     waited += 10) {
		if (errno != EADDRINUSE || waited >= PORT_LOCK_WAIT_MS) {
			int err = errno;
			zc_error("cannot lock port %u for binding: %s", port,
			         strerror(err));
			close(fd);
			return -err;
		}
		sleep_ms(10);
	}
	return fd;
}

/* Whether nothing holds addr for this type (see the top of the file). */
static int probe(const char *addr, const struct sockaddr_storage *ss,
                 socklen_t len, int type)
{
	int fd = socket(ss->ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	int on = 1;
	if (type == SOCK_STREAM) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	}
	if (ss->ss_family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	int ret = ZC_EOK;
	if (bind(fd, (const struct sockaddr *)ss, len) != 0) {
		ret = -errno;
		if (ret == -EADDRINUSE) {
			zc_error("cannot bind %s %s: address already in use (by "
			         "another zonecast or another server; nothing was "
			         "started)", type_name(type), addr);
		} else {
			zc_error("cannot bind %s %s: %s", type_name(type), addr,
			         strerror(-ret));
		}
	}
	close(fd);
	return ret;
}

/* One worker's socket, joining the address's SO_REUSEPORT group. */
static int bind_worker_socket(const char *addr,
                              const struct sockaddr_storage *ss,
                              socklen_t len, int type)
{
	/* Non-blocking: workers accept and read until EAGAIN. */
	int fd = socket(ss->ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		return -errno;
	}
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
	if (ss->ss_family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	if (type == SOCK_STREAM) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	} else {
		int size = 4 << 20;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	}
	int ret = ZC_EOK;
	if (bind(fd, (const struct sockaddr *)ss, len) != 0 ||
	    (type == SOCK_STREAM && listen(fd, 1024) != 0)) {
		ret = -errno;
		zc_error("cannot bind %s %s: %s", type_name(type), addr,
		         strerror(-ret));
		close(fd);
		return ret;
	}
	return fd;
}

/* Probes addr, then binds its `workers` UDP and TCP sockets into fds. */
static int bind_address(const char *addr, unsigned workers, int *fds)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ret = zc_addr_parse(addr, &ss, &len);
	if (ret != ZC_EOK) {
		zc_error("invalid listen address '%s' (want ADDR:PORT or "
		         "[ADDR6]:PORT)", addr);
		return ret;
	}
	bool shared = port_of(&ss) != 0;
	int lock = -1;
	if (shared) {
		lock = lock_port(port_of(&ss));
		if (lock < 0) {
			return lock;
		}
		ret = probe(addr, &ss, len, SOCK_DGRAM);
		if (ret == ZC_EOK) {
			ret = probe(addr, &ss, len, SOCK_STREAM);
		}
	}
	for (unsigned k = 0; k < 2 * workers && ret == ZC_EOK; k++) {
		int fd = bind_worker_socket(addr, &ss, len, k % 2 == 1 ?
		                            SOCK_STREAM : SOCK_DGRAM);
		if (fd < 0) {
			ret = fd;
		} else {
			fds[k] = fd;
		}
	}
	if (lock >= 0) {
		close(lock);
	}
	return ret;
}

int server_bind(const server_config_t *cfg, server_sockets_t **out)
{
	unsigned n = server_worker_count(cfg);
	size_t count = cfg->listen_count * n * 2;
	server_sockets_t *s = malloc(sizeof(*s) + count * sizeof(int));
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	s->count = count;
	for (size_t i = 0; i < count; i++) {
		s->fds[i] = -1;
	}
	int ret = ZC_EOK;
	for (size_t a = 0; a < cfg->listen_count && ret == ZC_EOK; a++) {
		ret = bind_address(cfg->listen[a], n, s->fds + a * n * 2);
	}
	if (ret != ZC_EOK) {
		server_sockets_free(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

int server_sockets_take(server_sockets_t *s, size_t i)
{
	if (s == NULL || i >= s->count) {
		return -1;
	}
	int fd = s->fds[i];
	s->fds[i] = -1;
	return fd;
}

size_t server_sockets_count(const server_sockets_t *s)
{
	return s != NULL ? s->count : 0;
}

void server_sockets_free(server_sockets_t *s)
{
	if (s == NULL) {
		return;
	}
	for (size_t i = 0; i < s->count; i++) {
		if (s->fds[i] >= 0) {
			close(s->fds[i]);
		}
	}
	free(s);
}
