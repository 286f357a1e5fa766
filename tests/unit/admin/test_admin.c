/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * admin/: the administrative writes that the API and the command share,
 * through a real writer on a real records store. DNSSEC's safety rails in
 * the order an operator meets them: a disable in two steps (the second
 * refused before the DS TTL, or forced), an enable that cancels a begun
 * disable, a forced disable with no first step; TSIG keys (a taken name,
 * another zone's key); a zone's deletion.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "admin/admin.h"
#include "tests/unit/records/records_fixture.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static admin_dnssec_t change(const records_zone_t *zone, bool force)
{
	return (admin_dnssec_t){ .zone = *zone, .algorithm =
	                         signer_algorithm_parse(NULL),
	                         .ds_ttl = SIGNER_DEFAULT_DS_TTL,
	                         .force = force };
}

static void test_dnssec(writer_t *w, const records_zone_t *zone)
{
	admin_dnssec_t d = change(zone, false);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_ENOKEY); /* Unsigned. */

	d = change(zone, false);
	CHECK_EQ(admin_dnssec_enable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_ENABLED);
	CHECK(d.seq > 0);
	CHECK(d.zone.serial != zone->serial); /* A new version. */
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_enable(w, &d), ZC_EEXISTS);

	/* First step: DELETE published; the second from the DS TTL on. */
	int64_t before = now_ms();
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_DISABLE_BEGUN);
	int64_t wait = (int64_t)(SIGNER_DEFAULT_DS_TTL + SIGNER_PROPAGATION_S) *
	               1000;
	CHECK(d.second_step_ms >= before + wait);
	CHECK(d.second_step_ms <= now_ms() + wait);
	/* Too early: refused, saying when. */
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_disable(w, &d), -EAGAIN);
	CHECK(d.early && !d.unbegun);
	CHECK(d.time.earliest_ms > now_ms());
	/* enable cancels it; a new disable begins again. */
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_enable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_CANCELLED);
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_DISABLE_BEGUN);
	/* Forced before its time: the keys go, and it says it was early. */
	d = change(zone, true);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_DISABLED);
	CHECK(d.early && !d.unbegun);
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_ENOKEY);

	/* Forced with no first step: at once, and said so. */
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_enable(w, &d), ZC_EOK);
	d = change(zone, true);
	CHECK_EQ(admin_dnssec_disable(w, &d), ZC_EOK);
	CHECK_EQ(d.done, ADMIN_DNSSEC_DISABLED);
	CHECK(d.unbegun && !d.early);

	/* A rollover step with no key in its state: nothing to do. */
	d = change(zone, false);
	CHECK_EQ(admin_dnssec_enable(w, &d), ZC_EOK);
	d = change(zone, false);
	d.roll_flags = SIGNER_FLAGS_ZSK;
	d.roll_step = SIGNER_ROLL_RETIRE;
	CHECK_EQ(admin_dnssec_rollover(w, &d), ZC_ENOKEY);
	uint16_t flags;
	signer_roll_step_t step;
	CHECK(admin_dnssec_parse_roll("ksk", "activate", &flags, &step));
	CHECK(flags == SIGNER_FLAGS_KSK && step == SIGNER_ROLL_ACTIVATE);
	CHECK(!admin_dnssec_parse_roll("ksk", "later", &flags, &step));
	CHECK(!admin_dnssec_parse_roll("key", "retire", &flags, &step));
}

static void test_tsig(writer_t *w, const records_zone_t *zone,
                      const records_zone_t *other)
{
	records_tsig_key_t key, again;
	char err[300];
	CHECK_EQ(admin_tsig_create(w, zone->id, "upd-key", NULL, "zone", true,
	                           &key, err, sizeof(err)), ZC_EOK);
	CHECK(key.id > 0 && key.secret_len > 0 && err[0] == '\0');
	CHECK_EQ(admin_tsig_create(w, zone->id, "upd-key", NULL, "", true,
	                           &again, err, sizeof(err)), ZC_EEXISTS);
	CHECK(err[0] != '\0');
	/* Another zone's key, an id that is none: no such key. */
	CHECK_EQ(admin_tsig_delete(w, other->id, key.id), ZC_ENOKEY);
	CHECK_EQ(admin_tsig_delete(w, zone->id, 0), ZC_ENOKEY);
	CHECK_EQ(admin_tsig_delete(w, zone->id, key.id), ZC_EOK);
	CHECK_EQ(admin_tsig_delete(w, 0, key.id), ZC_ENOKEY);
}

static void test_zone_delete(writer_t *w, records_store_t *rs,
                             records_zone_t *zone)
{
	records_zone_t gone = *zone;
	uint64_t seq = 0;
	CHECK_EQ(admin_zone_delete(w, &gone, &seq), ZC_EOK);
	CHECK(seq > 0);
	records_zone_t found;
	CHECK_EQ(records_zone_get(rs, zone->id, &found), ZC_ENOZONE);
	gone = *zone;
	CHECK_EQ(admin_zone_delete(w, &gone, &seq), ZC_ENOZONE);
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	records_zone_t zone, other;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "example.test.", 1, &zone), ZC_EOK);
	CHECK_EQ(fx_zone_create(rs, "other.test.", 1, &other), ZC_EOK);
	writer_config_t cfg = { .data_dir = dir };
	writer_t *w;
	CHECK_EQ(writer_start(&cfg, &w), ZC_EOK);
	test_dnssec(w, &zone);
	test_tsig(w, &zone, &other);
	test_zone_delete(w, rs, &zone);
	writer_stop(w);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
