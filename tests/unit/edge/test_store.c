/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Edge store: a full map is ZC_EMAPFULL and grows with edge_grow() while
 * other threads read (LMDB maps the file again: no reader may be inside a
 * transaction meanwhile), and a reader that outlives the wait makes the
 * growth wait for a later try instead of crashing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "common/error.h"
#include "edge/edge.h"
#include "tests/unit/test.h"

#define KEYS_PER_TXN 2000

static _Atomic bool stop;
static _Atomic long reads, bad_reads;

/* Reads back keys the writer committed ("k0" is written first). */
static void *reader(void *arg)
{
	edge_store_t *es = arg;
	edge_txn_t txn = { 0 };
	while (!atomic_load(&stop)) {
		uint64_t v = 0;
		if (edge_txn_begin_read(es, &txn) != ZC_EOK) {
			atomic_fetch_add(&bad_reads, 1);
			continue;
		}
		int ret = edge_meta_get(&txn, "k0", &v);
		if (ret == ZC_EOK && v != 7) {
			atomic_fetch_add(&bad_reads, 1);
		}
		edge_txn_reset(&txn);
		atomic_fetch_add(&reads, 1);
	}
	edge_txn_abort(&txn);
	return NULL;
}

/* One transaction of KEYS_PER_TXN keys from `first`; ZC_EMAPFULL when the
 * map is full (the transaction is aborted). */
static int write_keys(edge_store_t *es, int first)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(es, &txn);
	for (int i = first; i < first + KEYS_PER_TXN && ret == ZC_EOK; i++) {
		char key[32];
		snprintf(key, sizeof(key), "k%d", i);
		ret = edge_meta_put(&txn, key, i == 0 ? 7 : (uint64_t)i);
	}
	if (ret == ZC_EOK) {
		return edge_txn_commit(&txn);
	}
	edge_txn_abort(&txn);
	return ret;
}

static void grows_under_readers(const char *dir)
{
	edge_store_t *es;
	CHECK_EQ(edge_open(&es, dir, 1 << 20), ZC_EOK);
	CHECK_EQ(write_keys(es, 0), ZC_EOK);
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		pthread_create(&th[i], NULL, reader, es);
	}
	int grown = 0, full = 0;
	for (int first = KEYS_PER_TXN; grown < 4 && first < 2000000; ) {
		int ret = write_keys(es, first);
		if (ret == ZC_EMAPFULL) {
			full++;
			grown += edge_grow(es) == ZC_EOK;
			continue; /* The same keys again. */
		}
		CHECK_EQ(ret, ZC_EOK);
		first += KEYS_PER_TXN;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
	}
	CHECK(full >= 4);
	CHECK_EQ(grown, 4);
	CHECK(atomic_load(&reads) > 0);
	CHECK_EQ(atomic_load(&bad_reads), 0);
	edge_close(es);
}

/* A transaction held open past the wait: edge_grow() gives up (ZC_EBUSY),
 * the holder is unharmed, and a later try grows the map. */
static void reader_outlives_the_wait(const char *dir)
{
	edge_store_t *es;
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	edge_txn_t held = { 0 };
	CHECK_EQ(edge_txn_begin_read(es, &held), ZC_EOK);
	uint64_t v = 0;
	CHECK_EQ(edge_grow(es), ZC_EBUSY);
	CHECK_EQ(edge_meta_get(&held, "k0", &v), ZC_EOK);
	CHECK_EQ(v, 7);
	edge_txn_abort(&held);
	CHECK_EQ(edge_grow(es), ZC_EOK);
	edge_close(es);
}

int main(void)
{
	const char *dir = test_tmpdir();
	grows_under_readers(dir);
	reader_outlives_the_wait(dir);
	test_rmdir(dir);
	return test_done();
}
