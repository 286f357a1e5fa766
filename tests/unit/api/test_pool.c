/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The API's records store connections (api/pool.c): reads take at most
 * API_POOL_SIZE - API_POOL_WRITE_RESERVE of them, so that writes find one
 * while reads hold all theirs (outside tester 40: two dozen slow list
 * reads kept API writes waiting 5-10 s, some into 503s); a connection
 * given back wakes every waiter, so a write waiting is not left asleep
 * when a read was the one woken; writes take their own connections
 * first, so that writes waiting leave reads theirs.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "api/pool.h"
#include "api/router.h"
#include "common/error.h"
#include "test.h"

typedef struct {
	api_t *api;
	bool read;
	int slot;
	int ret;
	atomic_bool done;
} waiter_t;

static void *wait_for_slot(void *arg)
{
	waiter_t *w = arg;
	records_store_t *rs;
	bool full;
	w->ret = api_pool_get(w->api, w->read, &w->slot, &rs, &full);
	atomic_store(&w->done, true);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether w is done within seconds. */
static bool done_within(waiter_t *w, double seconds)
{
	double until = now_s() + seconds;
	while (!atomic_load(&w->done) && now_s() < until) {
		usleep(1000);
	}
	return atomic_load(&w->done);
}

int main(void)
{
	const char *dir = test_tmpdir();
	api_config_t cfg = { .data_dir = dir };
	api_t *api;
	CHECK_EQ(api_new(&cfg, &api), ZC_EOK);
	records_store_t *rs;
	bool full;
	int slot, reads = API_POOL_SIZE - API_POOL_WRITE_RESERVE;
	for (int i = 0; i < reads; i++) {
		CHECK_EQ(api_pool_get(api, true, &slot, &rs, &full), ZC_EOK);
		CHECK_EQ(slot, i);
	}
	/* Every read connection held: a read waits, a write does not. */
	waiter_t read = { .api = api, .read = true };
	pthread_t t_read;
	CHECK_EQ(pthread_create(&t_read, NULL, wait_for_slot, &read), 0);
	CHECK(!done_within(&read, 0.1));
	for (int i = API_POOL_SIZE - 1; i >= reads; i--) {
		CHECK_EQ(api_pool_get(api, false, &slot, &rs, &full), ZC_EOK);
		CHECK_EQ(slot, i);
	}
	/* All 16 held: a write waits too. A write's connection given back
	 * wakes both; the read cannot take it, the write does at once. */
	waiter_t write = { .api = api, .read = false };
	pthread_t t_write;
	CHECK_EQ(pthread_create(&t_write, NULL, wait_for_slot, &write), 0);
	CHECK(!done_within(&write, 0.1));
	api_pool_put(api, API_POOL_SIZE - 1);
	CHECK(done_within(&write, 2.0));
	CHECK_EQ(write.ret, ZC_EOK);
	CHECK_EQ(write.slot, API_POOL_SIZE - 1);
	CHECK(!atomic_load(&read.done));
	/* A read's connection given back goes to the read waiting. */
	api_pool_put(api, 3);
	CHECK(done_within(&read, 2.0));
	CHECK_EQ(read.ret, ZC_EOK);
	CHECK_EQ(read.slot, 3);
	pthread_join(t_read, NULL);
	pthread_join(t_write, NULL);
	for (int i = 0; i < API_POOL_SIZE; i++) {
		api_pool_put(api, i);
	}
	/* Writes take their own 4 first, from the top, and 12 at most:
	 * writes waiting leave reads 4 connections (outside testers 41 and
	 * 42: 12, then 16, writes waiting on a long import kept every read
	 * out). A 13th write waits. */
	int writes = API_POOL_SIZE - API_POOL_READ_RESERVE;
	for (int i = 0; i < writes; i++) {
		CHECK_EQ(api_pool_get(api, false, &slot, &rs, &full), ZC_EOK);
		CHECK_EQ(slot, API_POOL_SIZE - 1 - i);
	}
	waiter_t write13 = { .api = api, .read = false };
	pthread_t t_write13;
	CHECK_EQ(pthread_create(&t_write13, NULL, wait_for_slot, &write13), 0);
	CHECK(!done_within(&write13, 0.1));
	for (int i = 0; i < API_POOL_READ_RESERVE; i++) {
		CHECK_EQ(api_pool_get(api, true, &slot, &rs, &full), ZC_EOK);
		CHECK_EQ(slot, i);
	}
	api_pool_put(api, API_POOL_SIZE - 1);
	CHECK(done_within(&write13, 2.0));
	CHECK_EQ(write13.slot, API_POOL_SIZE - 1);
	pthread_join(t_write13, NULL);
	for (int i = 0; i < API_POOL_SIZE; i++) {
		api_pool_put(api, i);
	}
	api_free(api);
	test_rmdir(dir);
	return test_done();
}
