/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The API's records store connections (pool.h): API_POOL_SIZE, opened at
 * their first use, each held by one request at a time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "api/pool.h"
#include "common/error.h"

void api_pool_put(api_t *api, int slot)
{
	pthread_mutex_lock(&api->pool_lock);
	api->pool_used[slot] = false;
	/* All of them: a read woken by a write's slot coming free could
	 * not take it, and the write waiting would sleep on. */
	pthread_cond_broadcast(&api->pool_free);
	pthread_mutex_unlock(&api->pool_lock);
}

int api_pool_get(api_t *api, bool read, int *slot, records_store_t **out,
                 bool *full)
{
	/* Reads take the lowest free slot of the first 12, writes the
	 * highest of the last 12: each fills its own 4 before the 8 both
	 * take (12 writes waiting on a long import held every read slot
	 * while the 4 stayed free: outside tester 41). */
	int slots = read ? API_POOL_SIZE - API_POOL_WRITE_RESERVE :
	            API_POOL_SIZE;
	int lowest = read ? 0 : API_POOL_READ_RESERVE;
	*full = false;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += API_POOL_WAIT_S;
	pthread_mutex_lock(&api->pool_lock);
	int i;
	bool timed_out = false;
	for (;;) {
		if (read) {
			for (i = 0; i < slots && api->pool_used[i]; i++) {
			}
		} else {
			for (i = slots - 1; i >= lowest && api->pool_used[i];
			     i--) {
			}
		}
		if (i >= lowest && i < slots) {
			break;
		}
		/* Stopping: the slots in use may stay so until the stop
		 * (a writer stuck on a lock); api_stop() wakes this. */
		if (timed_out || atomic_load(&api->stopping)) {
			pthread_mutex_unlock(&api->pool_lock);
			*full = true;
			return ZC_EBUSY;
		}
		/* Timed out, the slots get one more look (one freed at
		 * the deadline) before the 503. */
		timed_out = pthread_cond_timedwait(&api->pool_free,
		                                   &api->pool_lock,
		                                   &until) == ETIMEDOUT;
	}
	api->pool_used[i] = true;
	pthread_mutex_unlock(&api->pool_lock);
	/* The slot is this request's alone now. */
	int ret = ZC_EOK;
	if (api->pool[i] == NULL) {
		records_store_t *rs = NULL;
		ret = records_open(&rs, api->cfg.data_dir);
		if (ret == ZC_EOK && (ret = records_tune_for_reads(rs)) != ZC_EOK) {
			records_close(rs);
			rs = NULL;
		}
		api->pool[i] = ret == ZC_EOK ? rs : NULL;
	}
	if (ret != ZC_EOK) {
		api_pool_put(api, i);
		return ret;
	}
	*slot = i;
	*out = api->pool[i];
	return ZC_EOK;
}

void api_store_release(api_req_t *req)
{
	if (req->rs != NULL) {
		api_pool_put(req->api, req->pool_slot);
		req->rs = NULL;
	}
}
