/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TCP connections per client across workers (see conn_limit.h). */
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/hash.h"
#include "server/conn_limit.h"

#define SLOTS 65536u

struct conn_limit {
	atomic_uint per_client;  /* 0: no limit (still counted). */
	uint64_t seed;
	atomic_uint count[SLOTS];
};

conn_limit_t *conn_limit_new(unsigned per_client)
{
	conn_limit_t *cl = calloc(1, sizeof(*cl));
	if (cl == NULL) {
		return NULL;
	}
	atomic_init(&cl->per_client, per_client);
	cl->seed = zc_hash_seed();
	return cl;
}

void conn_limit_set(conn_limit_t *cl, unsigned per_client)
{
	if (cl != NULL) {
		atomic_store(&cl->per_client, per_client);
	}
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
	return &cl->count[zc_hash_finish(zc_hash_bytes(cl->seed, a, n)) % SLOTS];
}

bool conn_limit_acquire(conn_limit_t *cl, const struct sockaddr_storage *addr)
{
	if (cl == NULL) {
		return true;
	}
	atomic_uint *c = slot(cl, addr);
	unsigned limit = atomic_load_explicit(&cl->per_client,
	                                      memory_order_relaxed);
	if (atomic_fetch_add(c, 1) >= limit && limit != 0) {
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
