/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The change log (records/changelog.h): the events each kind of write
 * appends, the IXFR restart rule (zone-wide changes restart a zone's
 * journal; record events and touched versions do not), reading one
 * zone's journal among others', trimming (drops what is old and built,
 * keeps what IXFR from the new journal start needs, never the newest
 * event, and refuses an IXFR it could only answer in part), and the
 * figures of status and metrics.
 */
#include <time.h>

#include "tests/unit/records/records_fixture.h"
#include "tests/unit/records_target.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };
	nanosleep(&ts, NULL);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Units that are not record adds: a touched version, new settings. */
typedef struct {
	int64_t zone_id;
	bool settings;          /* false: touch */
} zone_unit_t;

static int zone_unit(records_store_t *rs, void *ctx)
{
	zone_unit_t *u = ctx;
	records_zone_t zone;
	int ret = records_zone_get(rs, u->zone_id, &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (!u->settings) {
		return records_zone_touch(rs, &zone);
	}
	ret = records_zone_bump(rs, &zone);
	if (ret == ZC_EOK) {
		ret = records_zone_set_default_ttl(rs, &zone, 900);
	}
	return ret == ZC_EOK ? records_log_zone_event(rs, &zone,
	                       RECORDS_CHANGE_ZONE_SETTINGS) : ret;
}

static int run_zone_unit(records_store_t *rs, int64_t zone_id, bool settings)
{
	zone_unit_t u = { .zone_id = zone_id, .settings = settings };
	int ret = records_write_begin(rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	int result = fx_run_unit(rs, zone_unit, &u);
	ret = records_write_commit(rs);
	return ret == ZC_EOK ? result : ret;
}

static int remove_unit(records_store_t *rs, void *ctx)
{
	records_zone_t zone;
	int ret = records_zone_get(rs, *(int64_t *)ctx, &zone);
	return ret == ZC_EOK ? records_zone_remove(rs, &zone) : ret;
}

/* Every kind of event, with its node and version. */
static void test_kinds(records_store_t *rs)
{
	uint64_t before = fx_last_seq(rs);
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "k.test.", 10, &z), ZC_EOK);
	fx_add_t add = { .zone_id = z.id, .names = { "a.k.test." } };
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	fx_add_t del = { .zone_id = z.id,
	                 .deletes = { fx_id(rs, z.id, "a.k.test.") } };
	CHECK_EQ(fx_single(rs, &del), ZC_EOK);
	CHECK_EQ(run_zone_unit(rs, z.id, false), ZC_EOK);
	CHECK_EQ(run_zone_unit(rs, z.id, true), ZC_EOK);
	CHECK_EQ(fx_import(rs, "k.test.", "@ SOA ns h 1 2 3 4 5\n@ NS ns\n", &z),
	         ZC_EOK);
	CHECK_EQ(z.serial, 15); /* The file's serial is older: old + 1. */
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, remove_unit, &z.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	fx_events_t e;
	CHECK_EQ(fx_events(rs, before, &e), ZC_EOK);
	CHECK_STR(e.text, "rc:k.test.@10 rc:k.test.@10 zc@10 rc:a.k.test.@11 "
	          "rd:a.k.test.@12 zt@13 zs@14 zi@15 zd@15");
	/* A bounded read stops at its limit, here inside the zone's
	 * creation (three events in one commit), and a read from there
	 * goes on with the third. */
	fx_events_t first, rest;
	memset(&first, 0, sizeof(first));
	CHECK_EQ(records_changes_since(rs, before, 2, fx_events_cb, &first),
	         ZC_EOK);
	CHECK_EQ(first.count, 2);
	CHECK_STR(first.text, "rc:k.test.@10 rc:k.test.@10");
	CHECK_EQ(fx_events(rs, first.last, &rest), ZC_EOK);
	CHECK_EQ(rest.count, e.count - 2);
	CHECK_STR(rest.text, "zc@10 rc:a.k.test.@11 rd:a.k.test.@12 zt@13 zs@14 "
	          "zi@15 zd@15");
	CHECK_EQ(e.last, fx_last_seq(rs));
}

/* The IXFR restart rule, version by version. */
static void test_restart(records_store_t *rs)
{
	fx_journal_t j;
	records_zone_t z, other;
	CHECK_EQ(fx_zone_create(rs, "r.test.", 10, &z), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "other.test.", 10, &other), ZC_EOK);
	/* Creation starts the journal: nothing before it. */
	CHECK_EQ(fx_journal(rs, "r.test.", 9, 10, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "r.test.", 10, 10, &j), ZC_EOK);
	CHECK_EQ(j.count, 0);

	/* Record events of two zones interleaved: each journal its own. */
	fx_add_t units[4] = {
		{ .zone_id = z.id, .names = { "a.r.test." } },
		{ .zone_id = other.id, .names = { "a.other.test." } },
		{ .zone_id = z.id, .names = { "b.r.test.", "c.r.test." } },
		{ .zone_id = other.id, .names = { "b.other.test." } },
	};
	int results[4];
	CHECK_EQ(fx_batch(rs, units, 4, results), ZC_EOK);
	fx_add_t del = { .zone_id = z.id,
	                 .deletes = { fx_id(rs, z.id, "b.r.test.") } };
	CHECK_EQ(fx_single(rs, &del), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "r.test.", 10, 13, &j), ZC_EOK);
	CHECK_STR(j.text, "+a.r.test.@11 +b.r.test.@12 +c.r.test.@12 "
	          "-b.r.test.@13");
	CHECK_EQ(fx_journal(rs, "r.test.", 11, 12, &j), ZC_EOK);
	CHECK_STR(j.text, "+b.r.test.@12 +c.r.test.@12");
	CHECK_EQ(fx_journal(rs, "other.test.", 10, 12, &j), ZC_EOK);
	CHECK_STR(j.text, "+a.other.test.@11 +b.other.test.@12");
	/* Not past the zone's current serial. */
	CHECK_EQ(fx_journal(rs, "r.test.", 10, 14, &j), ZC_ENOJOURNAL);

	/* A touched version does not restart: IXFR spans it. */
	CHECK_EQ(run_zone_unit(rs, z.id, false), ZC_EOK);
	fx_add_t d = { .zone_id = z.id, .names = { "d.r.test." } };
	CHECK_EQ(fx_single(rs, &d), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "r.test.", 12, 15, &j), ZC_EOK);
	CHECK_STR(j.text, "-b.r.test.@13 +d.r.test.@15");

	/* New settings restart it at their version. */
	CHECK_EQ(run_zone_unit(rs, z.id, true), ZC_EOK);
	fx_add_t e = { .zone_id = z.id, .names = { "e.r.test." } };
	CHECK_EQ(fx_single(rs, &e), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "r.test.", 10, 17, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "r.test.", 15, 17, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "r.test.", 16, 17, &j), ZC_EOK);
	CHECK_STR(j.text, "+e.r.test.@17");

	/* An import restarts it at the import's version. */
	CHECK_EQ(fx_import(rs, "r.test.", "@ SOA ns h 100 2 3 4 5\n@ NS ns\n"
	                   "f A 192.0.2.9\n", &z), ZC_EOK);
	CHECK_EQ(z.serial, 100);
	fx_add_t g = { .zone_id = z.id, .names = { "g.r.test." } };
	CHECK_EQ(fx_single(rs, &g), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "r.test.", 17, 101, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "r.test.", 99, 101, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "r.test.", 100, 101, &j), ZC_EOK);
	CHECK_STR(j.text, "+g.r.test.@101");
	/* The other zone's journal is untouched by all of it. */
	CHECK_EQ(fx_journal(rs, "other.test.", 10, 12, &j), ZC_EOK);
	CHECK_EQ(j.count, 2);

	/* A zone created by an import starts at the file's serial. */
	CHECK_EQ(fx_import(rs, "new.test.", "@ SOA ns h 50 2 3 4 5\n@ NS ns\n",
	                   &z), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "new.test.", 49, 50, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "new.test.", 50, 50, &j), ZC_EOK);

	/* A deleted zone has no journal. */
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(fx_run_unit(rs, remove_unit, &other.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "other.test.", 10, 12, &j), ZC_ENOZONE);
}

/* Trimming, bounded by what the builder applied, by age, and by the
 * newest event. */
static void test_trim(records_store_t *rs)
{
	fx_journal_t j;
	fx_events_t e;
	uint64_t removed = 99;
	records_zone_t z, old, fresh;
	CHECK_EQ(fx_zone_create(rs, "trim.test.", 1, &z), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "old.trim2.test.", 1, &old), ZC_EOK);
	fx_add_t v2 = { .zone_id = z.id, .names = { "a.trim.test." } };
	CHECK_EQ(fx_single(rs, &v2), ZC_EOK);
	uint64_t v2_last = fx_last_seq(rs);
	fx_add_t v3 = { .zone_id = z.id, .names = { "b.trim.test." } };
	fx_add_t o2 = { .zone_id = old.id, .names = { "a.old.trim2.test." } };
	CHECK_EQ(fx_single(rs, &v3), ZC_EOK);
	CHECK_EQ(fx_single(rs, &o2), ZC_EOK);
	sleep_ms(5);
	int64_t mid = now_ms();
	sleep_ms(20);
	CHECK_EQ(fx_zone_create(rs, "fresh.test.", 1, &fresh), ZC_EOK);
	fx_add_t v4 = { .zone_id = z.id, .names = { "c.trim.test." } };
	fx_add_t v5 = { .zone_id = z.id,
	                .names = { "d.trim.test.", "e.trim.test." } };
	CHECK_EQ(fx_single(rs, &v4), ZC_EOK);
	CHECK_EQ(fx_single(rs, &v5), ZC_EOK);
	uint64_t last = fx_last_seq(rs);
	CHECK_EQ(fx_events(rs, 0, &e), ZC_EOK);
	int total = e.count;
	CHECK_EQ(fx_events(rs, v2_last, &e), ZC_EOK);
	int upto_v2 = total - e.count;

	/* Nothing old enough: nothing goes. */
	CHECK_EQ(records_journal_trim(rs, 0, INT64_MAX, &removed), ZC_EOK);
	CHECK_EQ(removed, 0);
	CHECK_EQ(fx_journal(rs, "trim.test.", 1, 5, &j), ZC_EOK);
	CHECK_EQ(j.count, 5);

	/* Old, but only what the builder applied goes (up to version 2):
	 * IXFR starts there now, and from there it is whole. */
	CHECK_EQ(records_journal_trim(rs, mid, v2_last, &removed), ZC_EOK);
	CHECK_EQ(removed, (uint64_t)upto_v2);
	CHECK_EQ(fx_journal(rs, "trim.test.", 1, 5, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "trim.test.", 2, 5, &j), ZC_EOK);
	CHECK_STR(j.text, "+b.trim.test.@3 +c.trim.test.@4 +d.trim.test.@5 "
	          "+e.trim.test.@5");
	CHECK_EQ(fx_events(rs, 0, &e), ZC_EOK);
	CHECK_EQ(e.count, total - upto_v2);

	/* Applied, but only what is older than the retention goes. */
	CHECK_EQ(records_journal_trim(rs, mid, INT64_MAX, &removed), ZC_EOK);
	CHECK_EQ(removed, 2); /* b@3 and old's a@2 */
	CHECK_EQ(fx_journal(rs, "trim.test.", 2, 5, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "trim.test.", 3, 5, &j), ZC_EOK);
	CHECK_EQ(j.count, 3);
	CHECK_EQ(fx_journal(rs, "old.trim2.test.", 1, 2, &j), ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "old.trim2.test.", 2, 2, &j), ZC_EOK);
	/* The newer zone's journal is whole. */
	CHECK_EQ(fx_journal(rs, "fresh.test.", 1, 1, &j), ZC_EOK);

	/* Everything old and applied: all but the newest event goes on
	 * SQLite, which is the second of version 5, so IXFR cannot start
	 * before 5 (it would be half of a version); PostgreSQL trims whole
	 * commits, and keeps the newest (version 5, whole). */
	CHECK_EQ(records_journal_trim(rs, now_ms() + 1000, INT64_MAX,
	                              &removed), ZC_EOK);
	CHECK_EQ(fx_events(rs, 0, &e), ZC_EOK);
	bool pg = test_backend_is_pg();
	CHECK_EQ(e.count, pg ? 2 : 1);
	CHECK_STR(e.text, pg ? "rc:d.trim.test.@5 rc:e.trim.test.@5" :
	          "rc:e.trim.test.@5");
	CHECK_EQ(e.last, last);
	CHECK_EQ(fx_journal(rs, "trim.test.", 4, 5, &j),
	         pg ? ZC_EOK : ZC_ENOJOURNAL);
	CHECK_EQ(fx_journal(rs, "trim.test.", 5, 5, &j), ZC_EOK);
	CHECK_EQ(fx_journal(rs, "fresh.test.", 0, 1, &j), ZC_ENOJOURNAL);

	/* Positions go on after the newest event: none is handed out
	 * twice, and the next follows it. */
	fx_add_t v6 = { .zone_id = z.id, .names = { "f.trim.test." } };
	CHECK_EQ(fx_single(rs, &v6), ZC_EOK);
	CHECK_EQ(fx_events(rs, last, &e), ZC_EOK);
	CHECK_EQ(e.count, 1);
	CHECK(e.last > last);
	CHECK(records_changelog_follows(rs, last, e.last));
	CHECK_EQ(fx_journal(rs, "trim.test.", 5, 6, &j), ZC_EOK);
	CHECK_STR(j.text, "+f.trim.test.@6");
}

/* What `zonecast status` and the metrics read. */
typedef struct {
	int64_t zone_id;
	uint64_t events;
	int zones;
} activity_t;

static int activity_cb(int64_t zone_id, uint64_t events, void *ctx)
{
	activity_t *a = ctx;
	a->zones++;
	if (zone_id == a->zone_id) {
		a->events = events;
	}
	return 0;
}

static void test_figures(records_store_t *rs)
{
	uint64_t before = fx_last_seq(rs);
	int64_t start = now_ms();
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "fig.test.", 1, &z), ZC_EOK);
	fx_add_t add = { .zone_id = z.id, .names = { "a.fig.test." } };
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	records_backlog_t b;
	CHECK_EQ(records_backlog(rs, before, &b), ZC_EOK);
	CHECK_EQ(b.last_seq, fx_last_seq(rs));
	CHECK_EQ(b.events, 4);
	CHECK(b.oldest_ms >= start && b.oldest_ms <= now_ms());
	CHECK_EQ(records_backlog(rs, b.last_seq, &b), ZC_EOK);
	CHECK_EQ(b.events, 0);
	CHECK_EQ(b.oldest_ms, 0);
	/* From inside the creation's commit (SOA, NS, zone created): two
	 * of its events are left, and the record's. */
	fx_events_t one;
	memset(&one, 0, sizeof(one));
	CHECK_EQ(records_changes_since(rs, before, 1, fx_events_cb, &one),
	         ZC_EOK);
	CHECK_EQ(records_backlog(rs, one.last, &b), ZC_EOK);
	CHECK_EQ(b.events, 3);
	/* The same positions as zonecast status writes them: on PostgreSQL
	 * the commit position, with the rank inside a commit. */
	char text[48], want[48];
	bool commits = records_changelog_numbering(rs) == RECORDS_LOG_COMMITS;
	records_position_text(rs, one.last, text, sizeof(text));
	if (commits) {
		snprintf(want, sizeof(want), "%llu.1",
		         (unsigned long long)(one.last >> 24));
	} else {
		snprintf(want, sizeof(want), "%llu", (unsigned long long)one.last);
	}
	CHECK(strcmp(text, want) == 0);
	records_position_text(rs, b.last_seq, text, sizeof(text));
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(commits ?
	         b.last_seq >> 24 : b.last_seq));
	CHECK(strcmp(text, want) == 0);
	records_position_text(rs, 0, text, sizeof(text));
	CHECK(strcmp(text, "0") == 0);
	activity_t a = { .zone_id = z.id };
	uint64_t last = 0;
	CHECK_EQ(records_zone_activity(rs, before, activity_cb, &a, &last),
	         ZC_EOK);
	CHECK_EQ(last, fx_last_seq(rs));
	CHECK_EQ(a.events, 4);
	CHECK_EQ(a.zones, 1);
}

/* The first event a read gives, with its identities. */
static int first_event(const records_change_t *chg, void *ctx)
{
	*(records_change_t *)ctx = *chg;
	return 1;
}

/* The identities read with the events (log_id, from_id) are those
 * records_changelog_mark() gives for the same positions, at every
 * position, inside a commit too: the builder's check compares them. */
static void test_identities(records_store_t *rs)
{
	records_zone_t z;
	CHECK_EQ(fx_zone_create(rs, "id.test.", 10, &z), ZC_EOK);
	fx_add_t add = { .zone_id = z.id, .names = { "a.id.test.", "b.id.test." } };
	CHECK_EQ(fx_single(rs, &add), ZC_EOK);
	uint64_t after = 0, last = fx_last_seq(rs);
	unsigned events = 0, commits = 0;
	uint64_t prev_id = 0;
	for (;;) {
		records_change_t chg = { .seq = 0 };
		CHECK_EQ(records_changes_since(rs, after, 1, first_event, &chg),
		         ZC_EOK);
		if (chg.seq == 0) {
			break;
		}
		uint64_t head, id_after, id_seq, trimmed;
		CHECK_EQ(records_changelog_mark(rs, after, chg.seq, &head,
		                                &id_after, &id_seq, &trimmed),
		         ZC_EOK);
		CHECK(chg.log_id != 0);
		CHECK_EQ(chg.log_id, id_seq);
		CHECK_EQ(chg.from_id, id_after);
		commits += chg.log_id != prev_id;
		prev_id = chg.log_id;
		after = chg.seq;
		events++;
	}
	CHECK_EQ(after, last);
	CHECK(events >= 4 && commits >= 2);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	if (records_open(&rs, test_records_target(dir)) != ZC_EOK) {
		fprintf(stderr, "cannot open a records store in %s\n", dir);
		return 1;
	}
	test_kinds(rs);
	test_restart(rs);
	test_trim(rs);
	test_figures(rs);
	test_identities(rs);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
