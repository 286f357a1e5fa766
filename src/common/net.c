/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Listen addresses and the TCP listening socket of an HTTP listener. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/net.h"

int zc_addr_parse(const char *text, struct sockaddr_storage *ss,
                  socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(text, ':');
	if (colon == NULL || colon == text || (size_t)(colon - text) >= sizeof(host)) {
		return ZC_EUSAGE;
	}
	memcpy(host, text, colon - text);
	host[colon - text] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || colon[1] == '\0' || port < 0 || port > 65535) {
		return ZC_EUSAGE;
	}
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &sa6->sin6_addr) != 1 ||
		    IN6_IS_ADDR_V4MAPPED(&sa6->sin6_addr)) {
			/* A mapped IPv4 address cannot be bound: IPv6
			 * sockets are IPv6-only here (zc_addr_mapped()). */
			return ZC_EUSAGE;
		}
		sa6->sin6_family = AF_INET6;
		sa6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*sa6);
		return ZC_EOK;
	}
	struct sockaddr_in *sa = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		return ZC_EUSAGE;
	}
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	*len = sizeof(*sa);
	return ZC_EOK;
}

int zc_tcp_listen(const char *who, const char *addr, int backlog, int *fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int ret = zc_addr_parse(addr, &ss, &len);
	if (ret != ZC_EOK) {
		zc_error("%s: invalid address '%s'", who, addr);
		return ret;
	}
	int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int on = 1;
	if (s >= 0) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	}
	if (s >= 0 && ss.ss_family == AF_INET6) {
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	if (s < 0 || bind(s, (struct sockaddr *)&ss, len) != 0 ||
	    listen(s, backlog) != 0) {
		ret = -errno;
		zc_error("%s: cannot listen on %s: %s", who, addr,
		         ret == -EADDRINUSE ? "address already in use (by "
		         "another zonecast or another server; nothing was "
		         "started)" : strerror(-ret));
		if (s >= 0) {
			close(s);
		}
		return ret;
	}
	*fd = s;
	return ZC_EOK;
}

bool zc_addr_mapped(const char *text)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(text, ':');
	if (text[0] != '[' || colon == NULL || colon - text < 2 ||
	    colon[-1] != ']' || (size_t)(colon - text - 2) >= sizeof(host)) {
		return false;
	}
	memcpy(host, text + 1, (size_t)(colon - text - 2));
	host[colon - text - 2] = '\0';
	struct in6_addr a;
	return inet_pton(AF_INET6, host, &a) == 1 && IN6_IS_ADDR_V4MAPPED(&a);
}
