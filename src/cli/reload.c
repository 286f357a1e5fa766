/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Reload (SIGHUP, `zonecast reload`): the configuration is read again from
 * the same file and flags, checked (syntax and config_check()), and only
 * then applied, stage by stage, each of which takes the new values
 * between two requests: no listener is closed and no query waits.
 *
 *   log-*                        the log (files reopened on every reload,
 *                                applied or refused; one that cannot be
 *                                opened again keeps its descriptor)
 *   nsid, cookies, tcp-*, rrl-*  the DNS workers (server_reconfigure())
 *   allow-update, update-max-size, live-wait, tsig-max-fudge
 *                                UPDATE (update_reconfigure())
 *   allow-transfer, tsig-max-fudge  transfers (transfer_reconfigure())
 *   journal-retention, zone-max-records  the writer (and the signed
 *                                zones' journal: sigview_reconfigure())
 *   api-max-body, live-wait      the API
 *   notify, notify-*             a new NOTIFY sender replaces the old one
 *                                (which notifies every zone once, as at
 *                                start)
 *
 * Keys that need a restart (config_keys.c) keep their running value; a
 * reload that changes one names it in the log and in its answer. The
 * stages are given the running value (config_keep_restart()): a new
 * rrl-table-size was allocated at reload, and then not used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/config_check.h"
#include "cli/config_keys.h"
#include "cli/serve.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "sigview/sigview.h"

void serve_update_config(const config_t *cfg, writer_t *writer,
                         builder_follower_t *follower, update_config_t *out)
{
	*out = (update_config_t){
		.data_dir = cfg->data_dir, .writer = writer,
		.follower = follower, .live_wait_ms = cfg->live_wait,
		.allow_update = &cfg->allow_update,
		.max_size = cfg->update_max_size,
		.tsig_max_fudge = cfg->tsig_max_fudge,
		.tsig_replay_cache = cfg->tsig_replay_cache,
	};
}

/* Frees a configuration nothing refers to any more. */
static void release(serve_ctx_t *ctx, config_t *cfg)
{
	if (cfg != NULL && cfg != ctx->boot && cfg != ctx->current &&
	    cfg != ctx->notify_cfg) {
		free(cfg);
	}
}

void serve_on_view_update(void *arg)
{
	serve_ctx_t *ctx = arg;
	pthread_mutex_lock(&ctx->notify_lock);
	if (ctx->notifier != NULL) {
		notify_on_pass(ctx->notifier);
	}
	pthread_mutex_unlock(&ctx->notify_lock);
}

void serve_on_pass(void *arg)
{
	serve_ctx_t *ctx = arg;
	serve_on_view_update(ctx);
	sigview_on_pass(ctx->view);
}

int serve_notify_replace(serve_ctx_t *ctx, config_t *cfg)
{
	const char *targets[CONFIG_NOTIFY_MAX];
	for (size_t i = 0; i < cfg->notify_count; i++) {
		targets[i] = cfg->notify[i];
	}
	notify_config_t ncfg = {
		.targets = targets, .target_count = cfg->notify_count,
		.retries = cfg->notify_retries, .timeout_ms = cfg->notify_timeout,
		.edge = ctx->es, .data_dir = cfg->data_dir,
		.zone_serial = sigview_zone_serial, .zone_serial_ctx = ctx->view,
	};
	notify_t *next = NULL;
	int ret = notify_start(&ncfg, &next);
	if (ret != ZC_EOK) {
		return ret;
	}
	pthread_mutex_lock(&ctx->notify_lock);
	notify_t *old = ctx->notifier;
	ctx->notifier = next;
	pthread_mutex_unlock(&ctx->notify_lock);
	notify_stop(old); /* No pass reaches it any more. */
	config_t *old_cfg = ctx->notify_cfg;
	ctx->notify_cfg = cfg;
	release(ctx, old_cfg);
	return ZC_EOK;
}

void serve_notify_stop(serve_ctx_t *ctx)
{
	pthread_mutex_lock(&ctx->notify_lock);
	notify_t *old = ctx->notifier;
	ctx->notifier = NULL;
	pthread_mutex_unlock(&ctx->notify_lock);
	notify_stop(old);
	config_t *old_cfg = ctx->notify_cfg;
	ctx->notify_cfg = NULL;
	release(ctx, old_cfg);
}

/* What a reload found: the keys it applies, those it cannot, and the
 * first problem of the new configuration. */
typedef struct {
	char live[512];
	char restart[512];
	char problem[1400];
	int errors;
} findings_t;

static void append(char *list, size_t size, const char *key)
{
	size_t len = strlen(list);
	snprintf(list + len, size - len, "%s%s", len ? ", " : "", key);
}

static void on_live_change(const char *key, bool live, void *arg)
{
	findings_t *f = arg;
	if (live) {
		append(f->live, sizeof(f->live), key);
	}
}

static void on_restart_change(const char *key, bool live, void *arg)
{
	findings_t *f = arg;
	if (!live) {
		append(f->restart, sizeof(f->restart), key);
	}
}

static void on_problem(bool error, const char *msg, void *arg)
{
	findings_t *f = arg;
	if (!error) {
		zc_warn("reload: %s", msg);
		return;
	}
	if (f->errors++ == 0) {
		snprintf(f->problem, sizeof(f->problem), "%s", msg);
	}
	zc_error("reload: %s", msg);
}

static bool notify_changed(const config_t *a, const config_t *b)
{
	if (a->notify_count != b->notify_count ||
	    a->notify_retries != b->notify_retries ||
	    a->notify_timeout != b->notify_timeout) {
		return true;
	}
	for (size_t i = 0; i < a->notify_count; i++) {
		if (strcmp(a->notify[i], b->notify[i]) != 0) {
			return true;
		}
	}
	return false;
}

/* Applies the live keys of cfg to every stage; the log first, as it is
 * the one that can still fail on a file (then nothing else changed). A
 * file that is a running target and cannot be opened again (its
 * directory not the service user's to create files in) keeps the one it
 * has, with a warning: the rest is applied. */
static int apply(serve_ctx_t *ctx, config_t *cfg, char *err, size_t size)
{
	int ret = config_log_apply(cfg, true, err, size);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (err[0] != '\0') {
		zc_warn("reload: %s", err);
		err[0] = '\0';
	}
	server_config_t scfg;
	cli_server_config(cfg, &scfg);
	ret = server_reconfigure(ctx->server, &scfg);
	if (ret != ZC_EOK) {
		snprintf(err, size, "DNS server: %s", zc_strerror(ret));
		return ret;
	}
	update_config_t ucfg;
	serve_update_config(cfg, ctx->writer, ctx->follower, &ucfg);
	update_reconfigure(ctx->updates, &ucfg);
	transfer_reconfigure(ctx->xfr, &cfg->allow_transfer,
	                     &cfg->allow_transfer_keys, cfg->tsig_max_fudge);
	writer_reconfigure(ctx->writer, cfg->journal_retention,
	                   cfg->zone_max_records);
	sigview_reconfigure(ctx->view, cfg->journal_retention);
	api_reconfigure(ctx->api, cfg->api_max_body, cfg->live_wait);
	if (notify_changed(ctx->current, cfg)) {
		ret = serve_notify_replace(ctx, cfg);
		if (ret != ZC_EOK) {
			snprintf(err, size, "notify: %s (the previous list stays)",
			         zc_strerror(ret));
			zc_error("reload: %s", err);
			ret = ZC_EOK; /* The rest is applied. */
		}
	}
	return ZC_EOK;
}

static int64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads and checks the configuration again; NULL (f->problem says why)
 * when it is not fit to be applied. */
static config_t *read_again(serve_ctx_t *ctx, findings_t *f)
{
	config_t *cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		snprintf(f->problem, sizeof(f->problem), "out of memory");
		return NULL;
	}
	if (serve_parse_args(ctx->argc, ctx->argv, cfg, f->problem,
	                     sizeof(f->problem)) != 0) {
		zc_error("reload: %s", f->problem);
		free(cfg);
		return NULL;
	}
	if (config_check_reload(cfg, ctx->current, on_problem, f) > 0) {
		free(cfg);
		return NULL;
	}
	return cfg;
}

/* Keeps the outcome for `zonecast status`. Under ctx->lock. */
static void remember(serve_ctx_t *ctx, bool ok, const char *msg)
{
	ctx->last_reload_ms = unix_ms();
	ctx->last_reload_ok = ok;
	snprintf(ctx->last_reload_msg, sizeof(ctx->last_reload_msg), "%s", msg);
	ctx->reloads += ok;
}

int serve_reload(serve_ctx_t *ctx, char *msg, size_t msg_size)
{
	findings_t f = { .live = "", .restart = "", .problem = "" };
	zc_sd_notify_reloading(); /* READY=1 again below, either way. */
	pthread_mutex_lock(&ctx->lock);
	config_t *cfg = read_again(ctx, &f);
	int ret = cfg != NULL ? ZC_EOK : ZC_EINVAL_CONFIG;
	if (ret == ZC_EOK) {
		config_diff(ctx->current, cfg, on_live_change, &f);
		config_diff(ctx->boot, cfg, on_restart_change, &f);
		config_keep_restart(cfg, ctx->boot); /* Named, not applied. */
		ret = apply(ctx, cfg, f.problem, sizeof(f.problem));
	}
	if (ret != ZC_EOK) {
		/* The files are reopened all the same (logrotate moved them
		 * and sent SIGHUP: the lines must not go on to the moved
		 * file), with the targets in force. */
		zc_log_reopen();
		snprintf(msg, msg_size, "reload refused, the configuration in "
		         "force is kept: %s", f.problem);
		zc_error("%s", msg);
		remember(ctx, false, msg);
		pthread_mutex_unlock(&ctx->lock);
		free(cfg);
		zc_sd_notify_ready("serving DNS (the last reload was refused)");
		return ZC_EINVAL_CONFIG;
	}
	config_t *old = ctx->current;
	ctx->current = cfg;
	release(ctx, old);
	snprintf(msg, msg_size, "reloaded: %s%s%s%s%s",
	         f.live[0] ? "applied " : "no live setting changed",
	         f.live, f.restart[0] ? "; needs a restart (running value "
	         "kept): " : "", f.restart, "");
	zc_info("%s", msg);
	if (f.restart[0] != '\0') {
		zc_warn("reload: changed, but applied only at the next start: %s",
		        f.restart);
	}
	remember(ctx, true, msg);
	pthread_mutex_unlock(&ctx->lock);
	zc_sd_notify_ready("serving DNS (reloaded)");
	return ZC_EOK;
}
