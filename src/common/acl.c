/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Address lists (see acl.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/acl.h"
#include "common/error.h"

int zc_acl_add(zc_acl_t *acl, const char *text)
{
	if (acl->count == ZC_ACL_MAX) {
		return ZC_EUSAGE;
	}
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(text, '/');
	size_t hlen = slash ? (size_t)(slash - text) : strlen(text);
	if (hlen == 0 || hlen >= sizeof(host)) {
		return ZC_EUSAGE;
	}
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	typeof(acl->entry[0]) *e = &acl->entry[acl->count];
	memset(e, 0, sizeof(*e));
	unsigned max;
	if (inet_pton(AF_INET, host, e->addr) == 1) {
		e->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, host, e->addr) == 1) {
		e->family = AF_INET6;
		max = 128;
	} else {
		return ZC_EUSAGE;
	}
	e->prefix = max;
	if (slash != NULL) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || p < 0 || p > (long)max) {
			return ZC_EUSAGE;
		}
		e->prefix = (unsigned)p;
	}
	acl->count++;
	return ZC_EOK;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;
	if (memcmp(a, b, bytes) != 0) {
		return false;
	}
	if (rest == 0) {
		return true;
	}
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

bool zc_acl_match(const zc_acl_t *acl, const struct sockaddr_storage *addr)
{
	int family = addr->ss_family;
	const uint8_t *a;
	if (family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)addr)->sin_addr;
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 =
			&((const struct sockaddr_in6 *)addr)->sin6_addr;
		a = a6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			family = AF_INET;
			a += 12;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < acl->count; i++) {
		if (acl->entry[i].family == family &&
		    prefix_match(acl->entry[i].addr, a, acl->entry[i].prefix)) {
			return true;
		}
	}
	return false;
}

void zc_addr_text(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, size, "%s#%u", addr, port);
}
