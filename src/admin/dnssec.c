/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * DNSSEC enable, disable and rollover as writer units (admin.h), for the
 * API's PATCH /zones/{id}/dnssec and the command's `dnssec enable |
 * disable | rollover` (docs/dnssec.md).
 *
 * The safety rails are here, so both take them: a rollover step, and the
 * second step of a disable, run only once the waits the TTLs require have
 * passed (signer/timing.c), unless forced; disable first publishes CDS
 * and CDNSKEY DELETE (RFC 8078 §4) and removes the keys only when asked
 * again after the DS TTL, so a DS still at the parent never points at a
 * zone that went unsigned under it; enable of a zone being disabled
 * cancels the disable. Each decision is taken inside the unit, on the
 * writer's connection, with the data the change then writes.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "admin/admin.h"
#include "common/error.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool admin_dnssec_parse_roll(const char *role, const char *step,
                             uint16_t *flags, signer_roll_step_t *step_out)
{
	*flags = role == NULL ? 0 : strcmp(role, "ksk") == 0 ? SIGNER_FLAGS_KSK :
	         strcmp(role, "zsk") == 0 ? SIGNER_FLAGS_ZSK : 0;
	static const char *const steps[] = { "prepublish", "activate", "retire" };
	static const signer_roll_step_t values[] = { SIGNER_ROLL_PREPUBLISH,
	                                             SIGNER_ROLL_ACTIVATE,
	                                             SIGNER_ROLL_RETIRE };
	for (size_t i = 0; step != NULL && i < 3; i++) {
		if (strcmp(step, steps[i]) == 0) {
			*step_out = values[i];
			return *flags != 0;
		}
	}
	return false;
}

/* Whether a step whose earliest time is d->time may run now: when its
 * time has come, or forced (d->early says it was early). */
static bool may_run(admin_dnssec_t *d)
{
	d->early = d->time.earliest_ms > now_ms();
	return !d->early || d->force;
}

/* What the unit did (the change's position comes after its commit:
 * writer_run_seq()). */
static int done(records_store_t *rs, admin_dnssec_t *d, admin_dnssec_done_t what)
{
	(void)rs;
	d->done = what;
	return ZC_EOK;
}

/* The outputs of a run, cleared: the writer may run a unit twice, its
 * first run rolled back (writer.h). */
static admin_dnssec_t *afresh(void *ctx)
{
	admin_dnssec_t *d = ctx;
	d->done = ADMIN_DNSSEC_ENABLED;
	d->early = false;
	d->unbegun = false;
	d->second_step_ms = 0;
	return d;
}

static int enable_unit(records_store_t *rs, void *ctx)
{
	admin_dnssec_t *d = afresh(ctx);
	int ret = records_zone_get(rs, d->zone.id, &d->zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	int64_t since;
	if (signer_zone_disable_since(rs, &d->zone, &since) == ZC_EOK) {
		if (d->keys_asked) {
			/* The cancel keeps the keys: an algorithm or split
			 * asked for would not be applied. */
			return ZC_EDISABLING;
		}
		ret = signer_zone_disable_cancel(rs, &d->zone);
		return ret == ZC_EOK ? done(rs, d, ADMIN_DNSSEC_CANCELLED) : ret;
	}
	ret = signer_zone_enable(rs, &d->zone, d->algorithm, d->split);
	return ret == ZC_EOK ? done(rs, d, ADMIN_DNSSEC_ENABLED) : ret;
}

int admin_dnssec_enable(writer_t *w, admin_dnssec_t *d)
{
	return w != NULL && d != NULL ? writer_run_seq(w, enable_unit, d, &d->seq) :
	       KNOT_EINVAL;
}

static int count_keys(const signer_key_info_t *info, void *ctx)
{
	(void)info;
	(*(int *)ctx)++;
	return 0;
}

static int disable_unit(records_store_t *rs, void *ctx)
{
	admin_dnssec_t *d = afresh(ctx);
	int keys = 0;
	int ret = records_zone_get(rs, d->zone.id, &d->zone);
	if (ret == ZC_EOK) {
		ret = signer_zone_keys(rs, &d->zone, count_keys, &keys);
	}
	if (ret == ZC_EOK && keys == 0) {
		return ZC_ENOKEY;
	}
	if (ret == ZC_EOK) {
		ret = signer_disable_time(rs, &d->zone, d->ds_ttl, &d->time);
	}
	if (ret == KNOT_ENOENT && !d->force) {
		/* The first step: CDS and CDNSKEY DELETE. */
		ret = signer_zone_disable_begin(rs, &d->zone);
		d->second_step_ms = now_ms() +
		                    (int64_t)(d->ds_ttl + SIGNER_PROPAGATION_S) * 1000;
		return ret == ZC_EOK ? done(rs, d, ADMIN_DNSSEC_DISABLE_BEGUN) : ret;
	}
	if (ret == KNOT_ENOENT) {
		d->unbegun = true;
	} else if (ret != ZC_EOK) {
		return ret;
	} else if (!may_run(d)) {
		return -EAGAIN;
	}
	ret = signer_zone_disable(rs, &d->zone);
	return ret == ZC_EOK ? done(rs, d, ADMIN_DNSSEC_DISABLED) : ret;
}

int admin_dnssec_disable(writer_t *w, admin_dnssec_t *d)
{
	return w != NULL && d != NULL ? writer_run_seq(w, disable_unit, d, &d->seq) :
	       KNOT_EINVAL;
}

static int rollover_unit(records_store_t *rs, void *ctx)
{
	admin_dnssec_t *d = afresh(ctx);
	int ret = records_zone_get(rs, d->zone.id, &d->zone);
	if (ret == ZC_EOK) {
		ret = signer_step_time(rs, &d->zone, d->roll_flags, d->roll_step,
		                       d->ds_ttl, &d->time);
	}
	if (ret == ZC_EOK && !may_run(d)) {
		return -EAGAIN;
	}
	if (ret != ZC_EOK && ret != ZC_ENOKEY) {
		return ret;
	}
	/* ZC_ENOKEY: the rollover says there is nothing to do. */
	ret = signer_zone_rollover(rs, &d->zone, d->roll_flags, d->roll_step);
	return ret == ZC_EOK ? done(rs, d, ADMIN_DNSSEC_ROLLED) : ret;
}

int admin_dnssec_rollover(writer_t *w, admin_dnssec_t *d)
{
	return w != NULL && d != NULL ?
	       writer_run_seq(w, rollover_unit, d, &d->seq) : KNOT_EINVAL;
}
