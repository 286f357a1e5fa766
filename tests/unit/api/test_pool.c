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

/* Takes count connections, a read or a write each, and checks each is
 * the slot from first on by step (reads go up, writes down). */
static void take(api_t *api, bool read, int count, int first, int step)
{
	records_store_t *rs;
	bool full;
	int slot;
	for (int i = 0; i < count; i++) {
		CHECK_EQ(api_pool_get(api, read, &slot, &rs, &full), ZC_EOK);
		CHECK_EQ(slot, first + i * step);
	}
}

/* Starts w waiting for a connection, and checks that it does wait. */
static void start_waiting(waiter_t *w, pthread_t *t, api_t *api, bool read)
{
	*w = (waiter_t){ .api = api, .read = read };
	CHECK_EQ(pthread_create(t, NULL, wait_for_slot, w), 0);
	CHECK(!done_within(w, 0.1));
}

int main(void)
{
	const char *dir = test_tmpdir();
	api_config_t cfg = { .data_dir = dir };
	api_t *api;
	CHECK_EQ(api_new(&cfg, &api), ZC_EOK);
	int reads = API_POOL_SIZE - API_POOL_WRITE_RESERVE;
	take(api, true, reads, 0, 1);
	/* Every read connection held: a read waits, a write does not. */
	waiter_t read, write, write13;
	pthread_t t_read, t_write, t_write13;
	start_waiting(&read, &t_read, api, true);
	take(api, false, API_POOL_WRITE_RESERVE, API_POOL_SIZE - 1, -1);
	/* All 16 held: a write waits too. A write's connection given back
	 * wakes both; the read cannot take it, the write does at once. */
	start_waiting(&write, &t_write, api, false);
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
	take(api, false, API_POOL_SIZE - API_POOL_READ_RESERVE,
	     API_POOL_SIZE - 1, -1);
	start_waiting(&write13, &t_write13, api, false);
	take(api, true, API_POOL_READ_RESERVE, 0, 1);
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
