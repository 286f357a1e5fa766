/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TCP connections per client across workers (see conn_limit.h). */
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "server/conn_limit.h"

#define SLOTS 65536u

struct conn_limit {
	unsigned per_client;
	uint64_t seed;
	atomic_uint count[SLOTS];
};

conn_limit_t *conn_limit_new(unsigned per_client)
{
	if (per_client == 0) {
		return NULL;
	}
	conn_limit_t *cl = calloc(1, sizeof(*cl));
	if (cl == NULL) {
		return NULL;
	}
	cl->per_client = per_client;
	if (getrandom(&cl->seed, sizeof(cl->seed), 0) != sizeof(cl->seed)) {
		cl->seed = (uint64_t)time(NULL) * UINT64_C(0x9e3779b97f4a7c15);
	}
	return cl;
}

void conn_limit_free(conn_limit_t *cl)
{
	free(cl);
}

static atomic_uint *slot(conn_limit_t *cl, const struct sockaddr_storage *ss)
{
	const uint8_t *a;
	size_t n;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		bool mapped = IN6_IS_ADDR_V4MAPPED(a6);
		a = mapped ? a6->s6_addr + 12 : a6->s6_addr;
		n = mapped ? 4 : 8;
	} else {
		a = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
		n = 4;
	}
	uint64_t h = cl->seed;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ a[i]) * UINT64_C(0x100000001b3);
	}
	h ^= h >> 29;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	h ^= h >> 32;
	return &cl->count[h % SLOTS];
}

bool conn_limit_acquire(conn_limit_t *cl, const struct sockaddr_storage *addr)
{
	if (cl == NULL) {
		return true;
	}
	atomic_uint *c = slot(cl, addr);
	if (atomic_fetch_add(c, 1) >= cl->per_client) {
		atomic_fetch_sub(c, 1);
		return false;
	}
	return true;
}

void conn_limit_release(conn_limit_t *cl, const struct sockaddr_storage *addr)
{
	if (cl != NULL) {
		atomic_fetch_sub(slot(cl, addr), 1);
	}
}
