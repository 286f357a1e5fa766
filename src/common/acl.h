/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Address lists (allow-update, allow-transfer): IPv4 and IPv6 addresses
 * or prefixes ("192.0.2.1", "10.0.0.0/8", "::1", "2001:db8::/32"); and a
 * client's address as log lines show it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define ZC_ACL_MAX 64

typedef struct {
	struct {
		int family;          /* AF_INET or AF_INET6 */
		uint8_t addr[16];
		unsigned prefix;     /* Bits that must match. */
	} entry[ZC_ACL_MAX];
	size_t count;
} zc_acl_t;

/* Adds "ADDR[/PREFIX]". ZC_EUSAGE when malformed or the list is full. */
int zc_acl_add(zc_acl_t *acl, const char *text);

/* True when addr (AF_INET, AF_INET6, or IPv4-mapped IPv6) is listed. */
bool zc_acl_match(const zc_acl_t *acl, const struct sockaddr_storage *addr);

/* Room for zc_addr_text(): an IPv6 address, '#' and a port. */
#define ZC_ADDR_TEXT_MAX 56

/* Writes "ADDR#PORT" (as BIND and Knot log a client), "?" if unknown. */
void zc_addr_text(const struct sockaddr_storage *ss, char *out, size_t size);
