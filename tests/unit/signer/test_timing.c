/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Rollover timing (signer/timing.c), table-driven: a zone's keys with
 * their times and its largest TTL in, the earliest time of a step out.
 */
#include "common/error.h"
#include "signer/zone.h"
#include "sigview/sigview.h"
#include "tests/unit/test.h"

#define T0 1700000000000LL           /* Unix ms */
#define S(s) ((int64_t)(s) * 1000)   /* seconds after T0 */
#define KSK SIGNER_FLAGS_KSK
#define ZSK SIGNER_FLAGS_ZSK
#define PROP SIGNER_PROPAGATION_S
#define DAY 86400

typedef struct {
	uint16_t flags;
	bool active;
	int64_t created, active_on, retired; /* s after T0; -1: never */
} key_t_;

typedef struct {
	const char *what;
	key_t_ keys[4];
	unsigned count;
	uint16_t flags;
	signer_roll_step_t step;
	uint32_t ds_ttl, max_ttl;
	int ret;
	int64_t earliest;                     /* s after T0; -1: at once */
} case_t;

#define NEVER (-1)

static const case_t cases[] = {
	/* The outside tester's sequence: a CSK signs everything (TTL one
	 * day); zsk prepublish and ksk prepublish at 0; zsk activate at
	 * 3960, ksk activate a second later. The old key signed the data
	 * until the ZSK took over: its DNSKEY stays a day after that. */
	{ "former CSK: the zone's largest TTL after the ZSK took over",
	  { { KSK, false, -7200, -7200, 3961 }, { ZSK, true, 0, 3960, NEVER },
	    { KSK, true, 0, 3961, NEVER } }, 3, KSK, SIGNER_ROLL_RETIRE,
	  3600, DAY, ZC_EOK, 3960 + DAY + PROP },
	{ "CSK rolled without a ZSK: the largest TTL after it stopped",
	  { { KSK, false, -7200, -7200, 3960 }, { KSK, true, 0, 3960, NEVER } },
	  2, KSK, SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, 3960 + DAY + PROP },
	{ "split from the start: the KSK signed the DNSKEY set only",
	  { { KSK, false, 0, 0, 10 * DAY }, { ZSK, true, 0, 0, NEVER },
	    { KSK, true, 9 * DAY, 10 * DAY, NEVER } }, 3, KSK,
	  SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, 10 * DAY + 3600 + PROP },
	{ "CSK split long before its rollover: the DNSKEY TTL",
	  { { KSK, false, 0, 0, 10 * DAY }, { ZSK, true, 0, 3960, NEVER },
	    { KSK, true, 9 * DAY, 10 * DAY, NEVER } }, 3, KSK,
	  SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, 10 * DAY + 3600 + PROP },
	{ "CSK split an hour before its rollover: the data wait is longer",
	  { { KSK, false, 0, 0, 7200 }, { ZSK, true, 0, 3600, NEVER },
	    { KSK, true, 0, 7200, NEVER } }, 3, KSK,
	  SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, 3600 + DAY + PROP },
	{ "a ZSK activated after the KSK stopped does not shorten it",
	  { { KSK, false, 0, 0, 3960 }, { KSK, true, 0, 3960, NEVER },
	    { ZSK, true, 0, 4000, NEVER } }, 3, KSK,
	  SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, 3960 + DAY + PROP },
	{ "ZSK: the largest TTL after it stopped",
	  { { KSK, true, 0, 0, NEVER }, { ZSK, false, 0, 0, 5000 },
	    { ZSK, true, 1000, 5000, NEVER } }, 3, ZSK, SIGNER_ROLL_RETIRE,
	  3600, 7200, ZC_EOK, 5000 + 7200 + PROP },
	{ "ZSK, small TTLs: the DNSKEY TTL at least",
	  { { KSK, true, 0, 0, NEVER }, { ZSK, false, 0, 0, 5000 },
	    { ZSK, true, 1000, 5000, NEVER } }, 3, ZSK, SIGNER_ROLL_RETIRE,
	  3600, 300, ZC_EOK, 5000 + 3600 + PROP },
	/* Secondaries serve the signed view's signatures, valid up to
	 * VIEW_VALIDITY + VIEW_JITTER: the cap is the longer lifetime. */
	{ "TTL of 30 days: capped by the longest signature lifetime",
	  { { KSK, true, 0, 0, NEVER }, { ZSK, false, 0, 0, 5000 },
	    { ZSK, true, 1000, 5000, NEVER } }, 3, ZSK, SIGNER_ROLL_RETIRE,
	  3600, 30 * DAY, ZC_EOK, 5000 + VIEW_VALIDITY + VIEW_JITTER + PROP },
	{ "never signed: at once",
	  { { KSK, true, 0, 0, NEVER }, { KSK, false, 100, NEVER, NEVER } },
	  2, KSK, SIGNER_ROLL_RETIRE, 3600, DAY, ZC_EOK, NEVER },
	{ "nothing retired: nothing to do",
	  { { KSK, true, 0, 0, NEVER } }, 1, KSK, SIGNER_ROLL_RETIRE, 3600,
	  DAY, ZC_ENOKEY, NEVER },
	{ "zsk activate: the DNSKEY TTL after publication",
	  { { KSK, true, 0, 0, NEVER }, { ZSK, false, 100, NEVER, NEVER } },
	  2, ZSK, SIGNER_ROLL_ACTIVATE, DAY, DAY, ZC_EOK, 100 + 3600 + PROP },
	{ "ksk activate: the DS TTL after publication",
	  { { KSK, true, 0, 0, NEVER }, { KSK, false, 100, NEVER, NEVER } },
	  2, KSK, SIGNER_ROLL_ACTIVATE, DAY, DAY, ZC_EOK, 100 + DAY + PROP },
};

int main(void)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const case_t *t = &cases[c];
		signer_key_info_t keys[4] = { 0 };
		for (unsigned i = 0; i < t->count; i++) {
			const key_t_ *k = &t->keys[i];
			keys[i] = (signer_key_info_t){ .tag = (uint16_t)(100 + i),
			        .flags = k->flags, .algorithm = 13,
			        .active = k->active, .created_on = T0 + S(k->created),
			        .active_on = k->active_on == NEVER ? 0 :
			                     T0 + S(k->active_on),
			        .retired_on = k->retired == NEVER ? 0 :
			                      T0 + S(k->retired) };
		}
		signer_step_time_t out;
		int ret = signer_step_time_of(keys, t->count, t->flags, t->step,
		                              t->ds_ttl, t->max_ttl, &out);
		int64_t want = t->earliest == NEVER ? 0 : T0 + S(t->earliest);
		if (ret != t->ret || (ret == ZC_EOK && out.earliest_ms != want)) {
			fprintf(stderr, "%s: ret %d (want %d), earliest %+lld s "
			        "(want %+lld s): %s\n", t->what, ret, t->ret,
			        (long long)(out.earliest_ms - T0) / 1000,
			        (long long)(want - T0) / 1000, out.why);
		}
		CHECK_EQ(ret, t->ret);
		if (ret == ZC_EOK) {
			CHECK_EQ(out.earliest_ms, want);
		}
	}
	return test_done();
}
