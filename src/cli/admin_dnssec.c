/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * dnssec enable|disable|rollover as administrative writes (admin.h), and
 * the keys and DS they print (docs/dnssec.md). Each change is admin/'s
 * (admin/dnssec.c: one writer unit, with the safety rails, which the
 * API's PATCH .../dnssec takes too); the zone's new version is then
 * served (admin_settle()), so the command ends once DNS answers with it,
 * and this file says what happened: a step forced before its time is
 * said loudly, one asked for too early is refused with the time it may
 * run from, the first step of a disable says what to do at the parent.
 *
 * Request fields: {"verb": "enable" | "disable" | "rollover", "zone",
 * "algorithm" (a number), "split", "keys_asked" (algorithm or split
 * given), "force", "ds_ttl", "role": "ksk" |
 * "zsk", "step": "prepublish" | "activate" | "retire"}.
 */
#include <string.h>
#include <time.h>

#include "cli/admin.h"
#include "common/error.h"
#include "signer/zone.h"

typedef enum { DO_ENABLE, DO_DISABLE, DO_ROLL } action_t;

typedef struct {
	uint8_t alg;
	bool split;
	bool keys_asked;
	bool force;
	uint32_t ds_ttl;
	uint16_t roll_flags;
	signer_roll_step_t roll_step;
	const char *role_text, *step_text;
} args_t;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One DS line per KSK (on a->out). */
typedef struct {
	admin_t *a;
	const records_zone_t *zone;
} ds_ctx_t;

static int print_ds(const signer_key_info_t *info, void *ctx)
{
	const ds_ctx_t *d = ctx;
	char line[512];
	if (info->flags == SIGNER_FLAGS_KSK &&
	    signer_ds_format(d->zone, info, line, sizeof(line)) == ZC_EOK) {
		fprintf(d->a->out, "%s\n", line);
	}
	return 0;
}

static int print_all_ds(admin_t *a, const records_zone_t *zone)
{
	ds_ctx_t d = { .a = a, .zone = zone };
	return signer_zone_keys(a->rs, zone, print_ds, &d);
}

/* --- The change --- */

/* Says why a change failed. */
static void change_failed(admin_t *a, const records_zone_t *zone,
                          action_t action, const args_t *args, int ret,
                          const char *why)
{
	if (ret == ZC_EEXISTS && action == DO_ENABLE) {
		fprintf(a->err, "zonecast dnssec: %s is signed already\n",
		        zone->name);
	} else if (ret == ZC_ENOKEY && action == DO_ROLL) {
		fprintf(a->err, "zonecast dnssec: nothing to do for %s %s in %s "
		        "(no %s in that state; `zonecast dnssec keys %s` shows "
		        "them)\n", args->role_text, args->step_text, zone->name,
		        args->roll_flags == SIGNER_FLAGS_KSK ? "KSK" : "ZSK",
		        zone->name);
	} else if (ret == ZC_EDISABLING && action == DO_ENABLE) {
		fprintf(a->err, "zonecast dnssec: %s is being disabled: enable "
		        "cancels the disable and keeps its keys, so --algorithm "
		        "and --split would not apply. Run `zonecast dnssec enable "
		        "%s` without them, or finish the disable first and enable "
		        "with them then\n", zone->name, zone->name);
	} else if (ret == ZC_EDISABLING && action == DO_ROLL) {
		fprintf(a->err, "zonecast dnssec: %s %s refused: %s is being "
		        "disabled, its CDS and CDNSKEY are the DELETE ones (RFC "
		        "8078 section 4), which nothing may join. Cancel the disable "
		        "(`zonecast dnssec enable %s`) or finish it (`zonecast "
		        "dnssec disable %s` again once the DS TTL has passed) "
		        "first\n", args->role_text, args->step_text, zone->name,
		        zone->name, zone->name);
	} else if (ret == ZC_ENOKEY) {
		fprintf(a->err, "zonecast dnssec: %s is not signed\n", zone->name);
	} else {
		fprintf(a->err, "zonecast dnssec: %s\n",
		        why[0] ? why : zc_strerror(ret));
	}
}

/* A step asked for before its time (d->time): forced, a warning; else
 * the refusal, saying from when it may run. */
static void say_early(admin_t *a, const char *what, const admin_dnssec_t *d)
{
	const signer_step_time_t *t = &d->time;
	const records_zone_t *zone = &d->zone;
	char at[32];
	signer_format_time(t->earliest_ms, at, sizeof(at));
	long long left = (long long)((t->earliest_ms - now_ms() + 999) / 1000);
	left = left > 0 ? left : 0;
	if (d->force) {
		fprintf(a->err, "zonecast dnssec: WARNING: %s of %s forced %lld s "
		        "before its time (%s): %s; until then validating "
		        "resolvers may find %s bogus (SERVFAIL)\n", what,
		        zone->name, left, at, t->why, zone->name);
		return;
	}
	fprintf(a->err, "zonecast dnssec: too early for %s of %s: %s. It may "
	        "run from %s (in %lld s: %u s of TTL and propagation). Run it "
	        "then, or now with --force (validating resolvers may find the "
	        "zone bogus meanwhile)\n", what, zone->name, t->why, at, left,
	        t->wait_s);
}

/* Makes a committed change served (admin_settle(): why says why not). */
static int serve(admin_t *a, const admin_dnssec_t *d, char *why,
                 size_t why_size)
{
	admin_change_t served = {
		.apex = d->zone.apex, .zone_id = (uint64_t)d->zone.id,
		.version = d->zone.serial, .seq = d->seq,
	};
	/* A large zone takes a while: progress on a terminal. */
	cli_progress_t p;
	cli_progress_begin(&p, a->progress, "building",
	                   (uint64_t)d->zone.record_count);
	int ret = admin_settle(a, &served, NULL, a->progress ? &p : NULL, why,
	                       why_size);
	cli_progress_end(&p);
	return ret;
}

/*
 * Runs one change through admin/ (what: the step's name in messages),
 * then makes it served; *zone gets the zone as the change left it and *d
 * what the change did.
 */
static int change(admin_t *a, records_zone_t *zone, action_t action,
                  const args_t *args, const char *what, admin_dnssec_t *d)
{
	*d = (admin_dnssec_t){
		.zone = *zone, .algorithm = args->alg, .split = args->split,
		.keys_asked = args->keys_asked,
		.roll_flags = args->roll_flags, .roll_step = args->roll_step,
		.ds_ttl = args->ds_ttl, .force = args->force,
	};
	int ret = action == DO_ENABLE ? admin_dnssec_enable(a->writer, d) :
	          action == DO_DISABLE ? admin_dnssec_disable(a->writer, d) :
	          admin_dnssec_rollover(a->writer, d);
	if (d->unbegun) {
		fprintf(a->err, "zonecast dnssec: WARNING: keys of %s removed at "
		        "once (--force): if a DS for it is still at the parent, "
		        "validating resolvers find the zone bogus (SERVFAIL) "
		        "until it is removed and its TTL has passed\n",
		        zone->name);
	}
	if (d->early) {
		say_early(a, what, d);
		if (!d->force) {
			return ret;
		}
	}
	char why[EDGE_QUARANTINE_REASON_MAX + 64] = "";
	if (ret == ZC_EOK) {
		*zone = d->zone;
		ret = serve(a, d, why, sizeof(why));
	}
	if (ret != ZC_EOK) {
		change_failed(a, zone, action, args, ret, why);
	}
	return ret;
}

/* --- keys --- */

typedef struct {
	admin_t *a;
	const records_zone_t *zone;
	uint32_t ds_ttl;
	unsigned keys;
	bool has_zsk;           /* An active ZSK: 257 keys are KSKs. */
	signer_step_time_t activate[2], retire[2]; /* [ksk], by role */
	int activate_ret[2], retire_ret[2];
} keys_view_t;

static int note_zsk(const signer_key_info_t *info, void *ctx)
{
	keys_view_t *v = ctx;
	v->keys++;
	/* A 257 key signs everything (a CSK) until a ZSK signs. */
	v->has_zsk |= info->flags == SIGNER_FLAGS_ZSK && info->active;
	return 0;
}

/* The key's next step, and from when (already, or a time). */
static void next_step(const keys_view_t *v, const signer_key_info_t *k,
                      char *out, size_t size)
{
	int r = k->flags == SIGNER_FLAGS_KSK;
	const char *role = r ? "ksk" : "zsk";
	const signer_step_time_t *t = NULL;
	const char *step = NULL;
	if (!k->active && k->active_on == 0 && v->activate_ret[r] == ZC_EOK &&
	    v->activate[r].tag == k->tag) {
		step = "activate", t = &v->activate[r];
	} else if (!k->active && v->retire_ret[r] == ZC_EOK) {
		step = "retire", t = &v->retire[r];
	}
	if (step == NULL) {
		snprintf(out, size, "-");
		return;
	}
	char at[32];
	signer_format_time(t->earliest_ms, at, sizeof(at));
	if (t->earliest_ms <= now_ms()) {
		snprintf(out, size, "%s %s: now", role, step);
	} else {
		snprintf(out, size, "%s %s: from %s", role, step, at);
	}
}

static int print_key(const signer_key_info_t *info, void *ctx)
{
	const keys_view_t *v = ctx;
	bool ksk = info->flags == SIGNER_FLAGS_KSK;
	const char *state = info->active ? "active" :
	                    info->active_on > 0 ? "retired" : "published";
	int64_t since = info->active ? info->active_on :
	                info->active_on > 0 ? info->retired_on : info->created_on;
	char at[32], next[96];
	signer_format_time(since, at, sizeof(at));
	next_step(v, info, next, sizeof(next));
	fprintf(v->a->out, "tag=%u\tflags=%u (%s)\talgorithm=%u (%s)\t%s\t"
	        "since %s\tnext: %s\n", info->tag, info->flags,
	        ksk ? (v->has_zsk ? "KSK" : "CSK") : "ZSK", info->algorithm,
	        signer_algorithm_name(info->algorithm), state, at, next);
	return 0;
}

int admin_cmd_dnssec_keys(admin_t *a, const records_zone_t *zone,
                      uint32_t ds_ttl)
{
	records_store_t *rs = a->rs;
	keys_view_t v = { .a = a, .zone = zone, .ds_ttl = ds_ttl };
	int ret = signer_zone_keys(rs, zone, note_zsk, &v);
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast dnssec: %s\n", zc_strerror(ret));
		return ret;
	}
	if (v.keys == 0) {
		fprintf(a->out, "%s is not signed (`zonecast dnssec enable %s` "
		        "signs it)\n", zone->name, zone->name);
		return ZC_EOK;
	}
	signer_step_time_t dis;
	int disabling = signer_disable_time(rs, zone, ds_ttl, &dis);
	for (int r = 0; r < 2; r++) {
		uint16_t flags = r ? SIGNER_FLAGS_KSK : SIGNER_FLAGS_ZSK;
		v.activate_ret[r] = signer_step_time(rs, zone, flags,
		                                     SIGNER_ROLL_ACTIVATE, ds_ttl,
		                                     &v.activate[r]);
		v.retire_ret[r] = signer_step_time(rs, zone, flags,
		                                   SIGNER_ROLL_RETIRE, ds_ttl,
		                                   &v.retire[r]);
	}
	if (disabling == ZC_EOK) {
		char at[32];
		signer_format_time(dis.earliest_ms, at, sizeof(at));
		fprintf(a->out, "%s: signed, being disabled: %s. Remove the DS at "
		        "the parent; `zonecast dnssec disable %s` removes the keys "
		        "from %s\n", zone->name, dis.why, zone->name, at);
	} else {
		fprintf(a->out, "%s: signed\n", zone->name);
	}
	return signer_zone_keys(rs, zone, print_key, &v);
}

/* --- rollover, disable, enable --- */

static int do_rollover(admin_t *a, records_zone_t *zone, const args_t *args)
{
	char what[64];
	snprintf(what, sizeof(what), "%s %s", args->role_text, args->step_text);
	admin_dnssec_t d;
	int ret = change(a, zone, DO_ROLL, args, what, &d);
	return ret == ZC_EOK ? admin_cmd_dnssec_keys(a, zone, args->ds_ttl) : ret;
}

static int do_disable(admin_t *a, records_zone_t *zone, const args_t *args)
{
	admin_dnssec_t d;
	int ret = change(a, zone, DO_DISABLE, args, "disable", &d);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (d.done == ADMIN_DNSSEC_DISABLE_BEGUN) {
		char at[32];
		signer_format_time(d.second_step_ms, at, sizeof(at));
		fprintf(a->out, "%s: CDS and CDNSKEY DELETE published (RFC 8078); "
		        "the zone stays signed.\nNow remove the DS records of %s "
		        "at the parent (a parent that reads CDS does it itself). "
		        "Once the DS TTL has passed, from %s, run `zonecast dnssec "
		        "disable %s` again to remove the keys.\n", zone->name,
		        zone->name, at, zone->name);
	} else {
		fprintf(a->out, "%s: keys removed; the zone is served unsigned\n",
		        zone->name);
	}
	return ZC_EOK;
}

static int do_enable(admin_t *a, records_zone_t *zone, const args_t *args)
{
	admin_dnssec_t d;
	int ret = change(a, zone, DO_ENABLE, args, "enable", &d);
	if (ret == ZC_EOK && d.done == ADMIN_DNSSEC_CANCELLED) {
		fprintf(a->out, "%s: disable cancelled: the KSK's CDS and CDNSKEY "
		        "are published again in place of DELETE; put the DS back "
		        "at the parent if it was removed\n", zone->name);
	}
	return ret == ZC_EOK ? print_all_ds(a, zone) : ret;
}

static int count_ksk(const signer_key_info_t *info, void *ctx)
{
	(*(int *)ctx) += info->flags == SIGNER_FLAGS_KSK;
	return 0;
}

int admin_cmd_dnssec_ds(admin_t *a, const records_zone_t *zone)
{
	int ksks = 0;
	int ret = signer_zone_keys(a->rs, zone, count_ksk, &ksks);
	if (ret == ZC_EOK && ksks == 0) {
		fprintf(a->err, "zonecast dnssec: %s is not signed: no DS to "
		        "give the parent\n", zone->name);
		return ZC_ENOKEY;
	}
	return ret == ZC_EOK ? print_all_ds(a, zone) : ret;
}

/* The request's arguments; false (said) when they make no sense. */
static bool read_args(admin_t *a, const json_t *req, args_t *args)
{
	json_t *ttl = json_object_get(req, "ds_ttl");
	json_t *alg = json_object_get(req, "algorithm");
	*args = (args_t){
		.alg = alg != NULL ? (uint8_t)json_integer_value(alg) :
		       signer_algorithm_parse(NULL),
		.split = json_is_true(json_object_get(req, "split")),
		.keys_asked = json_is_true(json_object_get(req, "keys_asked")),
		.force = json_is_true(json_object_get(req, "force")),
		.ds_ttl = ttl != NULL ? (uint32_t)json_integer_value(ttl) :
		          SIGNER_DEFAULT_DS_TTL,
		.role_text = json_string_value(json_object_get(req, "role")),
		.step_text = json_string_value(json_object_get(req, "step")),
	};
	const char *verb = json_string_value(json_object_get(req, "verb"));
	if (verb != NULL && strcmp(verb, "rollover") == 0 &&
	    !admin_dnssec_parse_roll(args->role_text, args->step_text,
	                             &args->roll_flags, &args->roll_step)) {
		fprintf(a->err, "zonecast dnssec: rollover: ksk or zsk, then "
		        "prepublish, activate or retire\n");
		return false;
	}
	return true;
}

int admin_cmd_dnssec(admin_t *a, const json_t *req)
{
	const char *verb = json_string_value(json_object_get(req, "verb"));
	args_t args;
	if (!read_args(a, req, &args)) {
		return ZC_EUSAGE;
	}
	records_zone_t zone;
	int ret = admin_find_zone(a, "dnssec", json_string_value(
	                          json_object_get(req, "zone")), &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (verb != NULL && strcmp(verb, "enable") == 0) {
		return do_enable(a, &zone, &args);
	}
	if (verb != NULL && strcmp(verb, "disable") == 0) {
		return do_disable(a, &zone, &args);
	}
	if (verb != NULL && strcmp(verb, "rollover") == 0) {
		return do_rollover(a, &zone, &args);
	}
	fprintf(a->err, "zonecast dnssec: no such change '%s'\n",
	        verb ? verb : "");
	return ZC_EUSAGE;
}
