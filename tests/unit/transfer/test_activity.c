/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The secondaries' activity table (transfer/activity.h): a zone notes at
 * most TRANSFER_ACTIVITY_PER_ZONE peers; refused clients from many
 * addresses neither grow it nor push out the peers it noted otherwise,
 * and a secondary's transfer takes the place of a refusal (outside tester
 * 33 filled it with 66,000 refused AXFRs: 131 MB, and nothing noted
 * after).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <libknot/dname.h>

#include "transfer/activity.h"
#include "tests/unit/test.h"

typedef struct {
	size_t count, refused, done;
	bool seen_last;
	const char *last;
} tally_t;

static int tally(const transfer_activity_t *a, void *ctx)
{
	tally_t *t = ctx;
	t->count++;
	t->refused += strncmp(a->transfer_result, "refused", 7) == 0;
	t->done += strcmp(a->transfer_result, "done") == 0 || a->notified;
	t->seen_last |= t->last != NULL && strcmp(a->peer, t->last) == 0;
	return 0;
}

static void transfer_from(const uint8_t *apex, unsigned n, const char *result)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(0x0a000000u + n);
	transfer_activity_transfer(apex, &ss, "AXFR", 7, result);
}

static tally_t list(const uint8_t *apex, const char *last)
{
	tally_t t = { .last = last };
	transfer_activity_list(apex, tally, &t);
	return t;
}

int main(void)
{
	uint8_t a[KNOT_DNAME_MAXLEN], b[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(a, "a.test.", sizeof(a));
	knot_dname_from_str(b, "b.test.", sizeof(b));
	/* Zone a: its secondaries transferred; then 5,000 refused clients. */
	for (unsigned i = 0; i < 40; i++) {
		transfer_from(a, i, "done");
	}
	transfer_activity_notify(a, "192.0.2.53:53", 7, 1, "answered");
	for (unsigned i = 1000; i < 6000; i++) {
		transfer_from(a, i, "refused: not allowed");
	}
	tally_t t = list(a, NULL);
	CHECK_EQ(t.count, (size_t)TRANSFER_ACTIVITY_PER_ZONE);
	CHECK_EQ(t.done, (size_t)41);  /* None of the secondaries pushed out. */
	CHECK_EQ(t.refused, (size_t)TRANSFER_ACTIVITY_PER_ZONE - 41);
	/* A new secondary's transfer takes a refusal's place. */
	transfer_from(a, 500, "done");
	t = list(a, "10.0.1.244");
	CHECK_EQ(t.count, (size_t)TRANSFER_ACTIVITY_PER_ZONE);
	CHECK_EQ(t.done, (size_t)42);
	CHECK(t.seen_last);
	/* A zone full of secondaries: a refused newcomer is not noted, a
	 * secondary's transfer is (in the least recently noted's place). */
	for (unsigned i = 0; i < TRANSFER_ACTIVITY_PER_ZONE; i++) {
		transfer_from(b, 20000 + i, "done");
	}
	transfer_from(b, 30000, "refused: not allowed");
	t = list(b, "10.0.117.48");
	CHECK_EQ(t.count, (size_t)TRANSFER_ACTIVITY_PER_ZONE);
	CHECK(!t.seen_last);
	CHECK_EQ(t.refused, (size_t)0);
	transfer_from(b, 30001, "done");
	t = list(b, "10.0.117.49");
	CHECK_EQ(t.count, (size_t)TRANSFER_ACTIVITY_PER_ZONE);
	CHECK(t.seen_last);
	/* The other zone is untouched by either. */
	CHECK_EQ(list(a, NULL).done, (size_t)42);
	return test_done();
}
