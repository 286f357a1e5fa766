/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast dnssec enable|disable|ds|keys|rollover: online signing of a zone
 * (docs/dnssec.md). Each change runs in one write transaction of the
 * records store and rebuilds the zone into the edge store, as `zone
 * import` does: a running server answers with it at once.
 *
 * Safety rails: a rollover step, and the second step of a disable, run
 * only once the waits the TTLs require have passed (signer/timing.c),
 * unless forced, which is said loudly; disable first publishes CDS and
 * CDNSKEY DELETE (RFC 8078 §4) and removes the keys only when run again
 * after the DS TTL, so a DS still at the parent never points at a zone
 * that went unsigned under it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "builder/builder.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "common/error.h"
#include "signer/zone.h"

static void usage(FILE *out)
{
	fputs("Usage: zonecast dnssec enable   [--data-dir DIR] ZONE "
	      "[--algorithm ALG] [--split]\n"
	      "       zonecast dnssec disable  [--data-dir DIR] ZONE "
	      "[--ds-ttl S] [--force]\n"
	      "       zonecast dnssec ds       [--data-dir DIR] ZONE\n"
	      "       zonecast dnssec keys     [--data-dir DIR] ZONE "
	      "[--ds-ttl S]\n"
	      "       zonecast dnssec rollover [--data-dir DIR] ZONE ksk|zsk "
	      "prepublish|activate|retire [--ds-ttl S] [--force]\n"
	      "\n"
	      "enable signs ZONE online (ALG: ecdsap256sha256, the default, or\n"
	      "ed25519; one combined key, or a KSK and a ZSK with --split) and\n"
	      "prints the DS records for the parent zone; ds prints them again.\n"
	      "keys lists each key's state and when its next step may run.\n"
	      "rollover runs one step of a key rollover, once the TTLs allow.\n"
	      "disable first publishes CDS/CDNSKEY DELETE (remove the DS at the\n"
	      "parent), then, run again after the DS TTL, removes the keys.\n"
	      "\n"
	      "  --ds-ttl S   the parent's DS TTL (default 86400)\n"
	      "  -f, --force  run a step before its wait has passed (validation\n"
	      "               may fail meanwhile)\n"
	      "See docs/dnssec.md.\n", out);
}

typedef enum { DO_ENABLE, DO_DISABLE, DO_DISABLE_BEGIN, DO_CANCEL,
               DO_ROLL } action_t;

typedef struct {
	const char *verb;
	const char *name;
	uint8_t alg;
	bool split;
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

static int print_ds(const signer_key_info_t *info, void *ctx)
{
	const records_zone_t *zone = ctx;
	char line[512];
	if (info->flags == SIGNER_FLAGS_KSK &&
	    signer_ds_format(zone, info, line, sizeof(line)) == ZC_EOK) {
		printf("%s\n", line);
	}
	return 0;
}

/* Runs one change in one write transaction, then the build. */
static int change(records_store_t *rs, edge_store_t *es, records_zone_t *zone,
                  action_t action, const args_t *a)
{
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		switch (action) {
		case DO_ENABLE:
			ret = signer_zone_enable(rs, zone, a->alg, a->split);
			break;
		case DO_DISABLE:
			ret = signer_zone_disable(rs, zone);
			break;
		case DO_DISABLE_BEGIN:
			ret = signer_zone_disable_begin(rs, zone);
			break;
		case DO_CANCEL:
			ret = signer_zone_disable_cancel(rs, zone);
			break;
		case DO_ROLL:
			ret = signer_zone_rollover(rs, zone, a->roll_flags,
			                           a->roll_step);
			break;
		}
		ret = ret == ZC_EOK ? records_write_commit(rs) :
		      (records_write_rollback(rs), ret);
	}
	if (ret == ZC_EOK) {
		/* A large zone takes a while: progress on a terminal. */
		cli_progress_t p;
		cli_progress_begin(&p, true, "building", (uint64_t)zone->record_count);
		ret = builder_full_build(rs, es, zone->apex, NULL,
		                         cli_progress_records, &p);
		cli_progress_end(&p);
	}
	if (ret == ZC_EEXISTS && action == DO_ENABLE) {
		fprintf(stderr, "zonecast dnssec: %s is signed already\n",
		        zone->name);
	} else if (ret == ZC_ENOKEY && action == DO_ROLL) {
		fprintf(stderr, "zonecast dnssec: nothing to do for %s %s in %s "
		        "(no %s in that state; `zonecast dnssec keys %s` shows "
		        "them)\n", a->role_text, a->step_text, zone->name,
		        a->roll_flags == SIGNER_FLAGS_KSK ? "KSK" : "ZSK",
		        zone->name);
	} else if (ret == ZC_ENOKEY) {
		fprintf(stderr, "zonecast dnssec: %s is not signed\n", zone->name);
	} else if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast dnssec: %s\n", zc_strerror(ret));
	}
	return ret;
}

/*
 * Whether a step whose earliest time is t may run now: yes when its time
 * has come; forced, yes with a warning; else no, saying when it may.
 */
static bool may_run(const char *what, const records_zone_t *zone,
                    const signer_step_time_t *t, bool force)
{
	int64_t now = now_ms();
	if (t->earliest_ms <= now) {
		return true;
	}
	char at[32];
	signer_format_time(t->earliest_ms, at, sizeof(at));
	long long left = (long long)((t->earliest_ms - now + 999) / 1000);
	if (force) {
		fprintf(stderr, "zonecast dnssec: WARNING: %s of %s forced %lld s "
		        "before its time (%s): %s; until then validating "
		        "resolvers may find %s bogus (SERVFAIL)\n", what,
		        zone->name, left, at, t->why, zone->name);
		return true;
	}
	fprintf(stderr, "zonecast dnssec: too early for %s of %s: %s. It may "
	        "run from %s (in %lld s: %u s of TTL and propagation). Run it "
	        "then, or now with --force (validating resolvers may find the "
	        "zone bogus meanwhile)\n", what, zone->name, t->why, at, left,
	        t->wait_s);
	return false;
}

/* --- keys --- */

typedef struct {
	records_store_t *rs;
	const records_zone_t *zone;
	uint32_t ds_ttl;
	unsigned keys;
	bool has_zsk;
	signer_step_time_t activate[2], retire[2]; /* [ksk], by role */
	int activate_ret[2], retire_ret[2];
} keys_view_t;

static int note_zsk(const signer_key_info_t *info, void *ctx)
{
	keys_view_t *v = ctx;
	v->keys++;
	v->has_zsk |= info->flags == SIGNER_FLAGS_ZSK;
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
	printf("tag=%u\tflags=%u (%s)\talgorithm=%u (%s)\t%s\tsince %s\t"
	       "next: %s\n", info->tag, info->flags,
	       ksk ? (v->has_zsk ? "KSK" : "CSK") : "ZSK", info->algorithm,
	       signer_algorithm_name(info->algorithm), state, at, next);
	return 0;
}

/* The zone's signing state, then one line per key. */
static int show_keys(records_store_t *rs, const records_zone_t *zone,
                     uint32_t ds_ttl)
{
	keys_view_t v = { .rs = rs, .zone = zone, .ds_ttl = ds_ttl };
	int ret = signer_zone_keys(rs, zone, note_zsk, &v);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast dnssec: %s\n", zc_strerror(ret));
		return ret;
	}
	if (v.keys == 0) {
		printf("%s is not signed (`zonecast dnssec enable %s` signs it)\n",
		       zone->name, zone->name);
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
		printf("%s: signed, being disabled: %s. Remove the DS at the "
		       "parent; `zonecast dnssec disable %s` removes the keys "
		       "from %s\n", zone->name, dis.why, zone->name, at);
	} else {
		printf("%s: signed\n", zone->name);
	}
	return signer_zone_keys(rs, zone, print_key, &v);
}

/* --- rollover, disable --- */

static int do_rollover(records_store_t *rs, edge_store_t *es,
                       records_zone_t *zone, const args_t *a)
{
	signer_step_time_t t;
	int ret = signer_step_time(rs, zone, a->roll_flags, a->roll_step,
	                           a->ds_ttl, &t);
	char what[64];
	snprintf(what, sizeof(what), "%s %s", a->role_text, a->step_text);
	if (ret == ZC_EOK && !may_run(what, zone, &t, a->force)) {
		return -EAGAIN;
	}
	if (ret == ZC_EOK || ret == ZC_ENOKEY) {
		/* ZC_ENOKEY: change() says there is nothing to do. */
		ret = change(rs, es, zone, DO_ROLL, a);
	} else {
		fprintf(stderr, "zonecast dnssec: %s\n", zc_strerror(ret));
	}
	return ret == ZC_EOK ? show_keys(rs, zone, a->ds_ttl) : ret;
}

static int count_keys(const signer_key_info_t *info, void *ctx)
{
	(void)info;
	(*(int *)ctx)++;
	return 0;
}

static int do_disable(records_store_t *rs, edge_store_t *es,
                      records_zone_t *zone, const args_t *a)
{
	int keys = 0;
	int ret = signer_zone_keys(rs, zone, count_keys, &keys);
	if (ret == ZC_EOK && keys == 0) {
		fprintf(stderr, "zonecast dnssec: %s is not signed\n", zone->name);
		return ZC_ENOKEY;
	}
	signer_step_time_t t;
	if (ret == ZC_EOK) {
		ret = signer_disable_time(rs, zone, a->ds_ttl, &t);
	}
	if (ret == KNOT_ENOENT && !a->force) {
		ret = change(rs, es, zone, DO_DISABLE_BEGIN, a);
		if (ret == ZC_EOK) {
			char at[32];
			signer_format_time(now_ms() + (int64_t)(a->ds_ttl +
			                   SIGNER_PROPAGATION_S) * 1000, at,
			                   sizeof(at));
			printf("%s: CDS and CDNSKEY DELETE published (RFC 8078); the "
			       "zone stays signed.\nNow remove the DS records of %s "
			       "at the parent (a parent that reads CDS does it "
			       "itself). Once the DS TTL has passed, from %s, run "
			       "`zonecast dnssec disable %s` again to remove the "
			       "keys.\n", zone->name, zone->name, at, zone->name);
		}
		return ret;
	}
	if (ret == KNOT_ENOENT) {
		fprintf(stderr, "zonecast dnssec: WARNING: keys of %s removed at "
		        "once (--force): if a DS for it is still at the parent, "
		        "validating resolvers find the zone bogus (SERVFAIL) "
		        "until it is removed and its TTL has passed\n",
		        zone->name);
	} else if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast dnssec: %s\n", zc_strerror(ret));
		return ret;
	} else if (!may_run("disable", zone, &t, a->force)) {
		return -EAGAIN;
	}
	ret = change(rs, es, zone, DO_DISABLE, a);
	if (ret == ZC_EOK) {
		printf("%s: keys removed; the zone is served unsigned\n",
		       zone->name);
	}
	return ret;
}

static int do_enable(records_store_t *rs, edge_store_t *es,
                     records_zone_t *zone, const args_t *a)
{
	int64_t since;
	if (signer_zone_disable_since(rs, zone, &since) == ZC_EOK) {
		/* A disable begun and not finished: undone. */
		int ret = change(rs, es, zone, DO_CANCEL, a);
		if (ret == ZC_EOK) {
			printf("%s: disable cancelled: the KSK's CDS and CDNSKEY are "
			       "published again in place of DELETE; put the DS back "
			       "at the parent if it was removed\n", zone->name);
			ret = signer_zone_keys(rs, zone, print_ds, zone);
		}
		return ret;
	}
	int ret = change(rs, es, zone, DO_ENABLE, a);
	return ret == ZC_EOK ? signer_zone_keys(rs, zone, print_ds, zone) : ret;
}

static int count_ksk(const signer_key_info_t *info, void *ctx)
{
	(*(int *)ctx) += info->flags == SIGNER_FLAGS_KSK;
	return 0;
}

static int do_ds(records_store_t *rs, const records_zone_t *zone)
{
	int ksks = 0;
	int ret = signer_zone_keys(rs, zone, count_ksk, &ksks);
	if (ret == ZC_EOK && ksks == 0) {
		fprintf(stderr, "zonecast dnssec: %s is not signed: no DS to "
		        "give the parent\n", zone->name);
		return ZC_ENOKEY;
	}
	return ret == ZC_EOK ? signer_zone_keys(rs, zone, print_ds,
	                                        (void *)zone) : ret;
}

/* --- arguments --- */

static bool parse_roll(int argc, char **argv, int at, args_t *a)
{
	a->role_text = argv[at];
	a->step_text = argv[at + 1];
	a->roll_flags = strcmp(a->role_text, "ksk") == 0 ? SIGNER_FLAGS_KSK :
	                strcmp(a->role_text, "zsk") == 0 ? SIGNER_FLAGS_ZSK : 0;
	if (strcmp(a->step_text, "prepublish") == 0) {
		a->roll_step = SIGNER_ROLL_PREPUBLISH;
	} else if (strcmp(a->step_text, "activate") == 0) {
		a->roll_step = SIGNER_ROLL_ACTIVATE;
	} else if (strcmp(a->step_text, "retire") == 0) {
		a->roll_step = SIGNER_ROLL_RETIRE;
	} else {
		return false;
	}
	(void)argc;
	return a->roll_flags != 0;
}

/* Parses options and operands into a; returns 0, or an exit status. */
static int parse_args(int argc, char **argv, config_t *cfg, const char **dir,
                      args_t *a)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "algorithm", required_argument, NULL, 'a' },
		{ "split", no_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "ds-ttl", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *alg_name = NULL;
	char *end;
	unsigned long ttl;
	int c;
	while ((c = getopt_long(argc, argv, "d:c:a:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': *dir = optarg; break;
		case 'c':
			if (config_load(cfg, optarg) != ZC_EOK) {
				return 1;
			}
			break;
		case 'a': alg_name = optarg; break;
		case 's': a->split = true; break;
		case 'f': a->force = true; break;
		case 't':
			ttl = strtoul(optarg, &end, 10);
			if (*end != '\0' || optarg[0] == '\0' || ttl > 604800) {
				fprintf(stderr, "zonecast dnssec: --ds-ttl takes 0 to "
				        "604800 seconds\n");
				return 2;
			}
			a->ds_ttl = (uint32_t)ttl;
			break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return 2;
		}
	}
	bool roll = optind < argc && strcmp(argv[optind], "rollover") == 0;
	if (optind + (roll ? 4 : 2) != argc ||
	    (roll && !parse_roll(argc, argv, optind + 2, a))) {
		usage(stderr);
		return 2;
	}
	a->verb = argv[optind];
	a->name = argv[optind + 1];
	a->alg = signer_algorithm_parse(alg_name);
	if (a->alg == 0) {
		fprintf(stderr, "zonecast dnssec: unknown algorithm '%s' "
		        "(ecdsap256sha256 or ed25519)\n", alg_name);
		return 2;
	}
	static const char *const verbs[] = { "enable", "disable", "ds", "keys",
	                                     "rollover" };
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(a->verb, verbs[i]) == 0) {
			return 0;
		}
	}
	usage(stderr);
	return 2;
}

int cmd_dnssec(int argc, char **argv)
{
	config_t cfg;
	config_defaults(&cfg);
	const char *dir = NULL;
	args_t a = { .ds_ttl = SIGNER_DEFAULT_DS_TTL };
	int ret = parse_args(argc, argv, &cfg, &dir, &a);
	if (ret != 0) {
		return ret < 0 ? 0 : ret;
	}
	records_store_t *rs;
	edge_store_t *es;
	if (cli_open_stores(dir ? dir : cfg.data_dir, false, &rs, &es) != ZC_EOK) {
		return 1;
	}
	records_zone_t zone;
	ret = cli_find_zone(rs, "dnssec", a.name, &zone);
	if (ret != ZC_EOK) {
		/* Reported. */
	} else if (strcmp(a.verb, "enable") == 0) {
		ret = do_enable(rs, es, &zone, &a);
	} else if (strcmp(a.verb, "disable") == 0) {
		ret = do_disable(rs, es, &zone, &a);
	} else if (strcmp(a.verb, "rollover") == 0) {
		ret = do_rollover(rs, es, &zone, &a);
	} else if (strcmp(a.verb, "ds") == 0) {
		ret = do_ds(rs, &zone);
	} else {
		ret = show_keys(rs, &zone, a.ds_ttl);
	}
	edge_close(es);
	records_close(rs);
	return ret == ZC_EOK ? 0 : 1;
}
