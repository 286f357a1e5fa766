/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A pool of records-store read connections for threads that come and go
 * (DNS workers handling UPDATEs, transfer threads): a connection is
 * opened the first time it is needed and kept for the next borrower.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/records.h"

#define POOL_MAX 16

struct records_pool {
	pthread_mutex_t lock;
	char *dir;
	records_store_t *conn[POOL_MAX];
	bool used[POOL_MAX];
};

records_pool_t *records_pool_new(const char *dir)
{
	records_pool_t *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->dir = strdup(dir)) == NULL) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void records_pool_free(records_pool_t *p)
{
	if (p == NULL) {
		return;
	}
	for (int i = 0; i < POOL_MAX; i++) {
		records_close(p->conn[i]);
	}
	pthread_mutex_destroy(&p->lock);
	free(p->dir);
	free(p);
}

int records_pool_get(records_pool_t *p, records_store_t **out)
{
	pthread_mutex_lock(&p->lock);
	int slot = -1;
	for (int i = 0; i < POOL_MAX && slot < 0; i++) {
		if (!p->used[i] && p->conn[i] != NULL) {
			slot = i;
		}
	}
	for (int i = 0; i < POOL_MAX && slot < 0; i++) {
		if (!p->used[i]) {
			slot = i;
		}
	}
	if (slot >= 0) {
		p->used[slot] = true;
	}
	pthread_mutex_unlock(&p->lock);
	if (slot < 0) {
		/* All busy: a connection of its own, closed on return. */
		return records_open(out, p->dir);
	}
	if (p->conn[slot] == NULL) {
		int ret = records_open(&p->conn[slot], p->dir);
		if (ret != ZC_EOK) {
			pthread_mutex_lock(&p->lock);
			p->used[slot] = false;
			pthread_mutex_unlock(&p->lock);
			return ret;
		}
	}
	*out = p->conn[slot];
	return ZC_EOK;
}

void records_pool_put(records_pool_t *p, records_store_t *rs)
{
	pthread_mutex_lock(&p->lock);
	for (int i = 0; i < POOL_MAX; i++) {
		if (p->conn[i] == rs) {
			p->used[i] = false;
			pthread_mutex_unlock(&p->lock);
			return;
		}
	}
	pthread_mutex_unlock(&p->lock);
	records_close(rs);
}
