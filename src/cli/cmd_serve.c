/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast serve: runs every stage on one data directory — the builder's
 * change-log follower and the DNS server — until SIGINT or SIGTERM
 * (or `zonecast stop`); SIGHUP (or `zonecast reload`) reloads the
 * configuration (serve.h says how the pieces fit). A fresh data directory
 * gets the demo zone unless told otherwise. One serve per data directory
 * and per address: the data directory's lock and the listen sockets are
 * taken before anything else is done.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "api/api.h"
#include "builder/builder.h"
#include "cli/admin.h"
#include "cli/commands.h"
#include "cli/config_check.h"
#include "cli/serve.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "edge/repl.h"
#include "fleet/fleet.h"
#include "metrics/metrics.h"
#include "server/server.h"
#include "sigview/sigview.h"
#include "transfer/transfer.h"
#include "update/update.h"
#include "writer/writer.h"

#define DEFAULT_LISTEN CONFIG_DEFAULT_LISTEN
#define FOLLOW_POLL_MS 200

static void usage(FILE *out)
{
	fputs("Usage: zonecast serve [OPTIONS]\n"
	      "\n"
	      "Serves every zone of the data directory over DNS (UDP and TCP).\n"
	      "Flags override the config file; with no config file at all the\n"
	      "built-in defaults apply (see docs/configuration.md).\n"
	      "\n"
	      "Options:\n"
	      "  -c, --config FILE        read this config file\n"
	      "  -d, --data-dir DIR       data directory (default ./zonecast-data)\n"
	      "  -l, --listen ADDR:PORT   DNS address, repeatable (default "
	      DEFAULT_LISTEN ")\n"
	      "  -a, --api-listen ADDR:PORT  HTTP API address (default "
	      "127.0.0.1:8053; 'none': no API)\n"
	      "  -m, --metrics-listen ADDR:PORT  Prometheus metrics, /healthz and\n"
	      "                           /readyz (default: none)\n"
	      "  -w, --workers N          workers per address (default: one per "
	      "core)\n"
	      "  -L, --log-level LEVEL    error, warning, info, debug\n"
	      "      --nsid TEXT          NSID to answer with (RFC 5001)\n"
	      "      --no-demo            do not create the demo zone\n"
	      "      --nats URL[,URL...]  publish to edges through NATS JetStream\n"
	      "                           (docs/fleet.md)\n"
	      "      --records URI        records store in PostgreSQL\n"
	      "                           (postgresql://..., docs/postgresql.md)\n"
	      "  -o, --option KEY=VALUE   any config-file setting, repeatable\n"
	      "                           (e.g. -o allow-update=127.0.0.1)\n"
	      "  -h, --help               this help\n", out);
}

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "listen", required_argument, NULL, 'l' },
	{ "api-listen", required_argument, NULL, 'a' },
	{ "metrics-listen", required_argument, NULL, 'm' },
	{ "workers", required_argument, NULL, 'w' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "nsid", required_argument, NULL, 'N' },
	{ "no-demo", no_argument, NULL, 'D' },
	{ "nats", required_argument, NULL, 'n' },
	{ "records", required_argument, NULL, 'R' },
	{ "option", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const flag_keys[128] = {
	['d'] = "data-dir", ['a'] = "api-listen", ['w'] = "workers",
	['m'] = "metrics-listen",
	['L'] = "log-level", ['N'] = "nsid", ['n'] = "nats",
	['R'] = "records-store",
};

static void serve_flag(config_t *cfg, int c)
{
	if (c == 'D') {
		cfg->demo = false;
	}
}

/* Reads the config file first, then lets every flag override it: at
 * start, and again at each reload (serve.h), with the messages in err. */
int serve_parse_args(int argc, char **argv, config_t *cfg, char *err,
                     size_t err_size)
{
	config_defaults(cfg);
	err[0] = '\0';
	cli_args_t a = {
		.cmd = "serve", .shortopts = "c:d:l:a:m:w:L:o:h", .opts = opts,
		.flag_keys = flag_keys, .flag = serve_flag,
		.err = err, .err_size = err_size,
	};
	int ret = cli_parse_server_args(&a, argc, argv, cfg);
	if (ret == 0 && cfg->listen_count == 0) {
		strcpy(cfg->listen[0], DEFAULT_LISTEN);
		cfg->listen_count = 1;
	}
	if (ret == 0) {
		config_node_name_default(cfg);
	}
	return ret;
}

static int count_zone(const records_zone_t *zone, void *ctx)
{
	(void)zone;
	(*(int *)ctx)++;
	return 1;
}

/* Imports the demo zone as `zonecast zone import` would (the same writer
 * unit), from its text in a memory file. */
static int import_demo(records_store_t *rs, edge_store_t *es,
                       const config_t *cfg)
{
	int fd = memfd_create("demo.zone", MFD_CLOEXEC);
	size_t len = strlen(cli_demo_zone_text);
	if (fd < 0 || write(fd, cli_demo_zone_text, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		int err = errno;
		if (fd >= 0) {
			close(fd);
		}
		return -err;
	}
	json_t *req = json_pack("{s:s, s:s, s:s, s:b}", "command",
	                        "zone-import", "zone", cli_demo_zone_name,
	                        "path", "demo.zone", "quiet", 1);
	int ret = req != NULL ? admin_run_local(rs, es, cfg->data_dir,
	                                        cfg->zone_max_records, req, fd) :
	          -ENOMEM;
	json_decref(req);
	close(fd);
	return ret;
}

/* A fresh data directory gets the demo zone so `dig` has an answer. */
static int seed_demo(records_store_t *rs, edge_store_t *es,
                     const config_t *cfg)
{
	int zones = 0;
	int ret = records_zone_list(rs, false, count_zone, &zones);
	if (ret != ZC_EOK || zones > 0) {
		return ret;
	}
	zc_info("empty data directory: creating the demo zone %s",
	        cli_demo_zone_name);
	ret = import_demo(rs, es, cfg);
	const char *data_dir = cfg->data_dir;
	if (ret == ZC_EOK) {
		ret = cli_demo_token(data_dir);
	}
	return ret;
}

/*
 * Least privilege: once every socket is bound, and before a store is
 * opened, the data directory is handed to `user` and the process becomes
 * that user (as BIND's -u does). Threads started later are that user's.
 */
/*
 * Gives path to the run-as user (a missing file is no error). The
 * directories these files are in belong to that user, who could have put
 * a symbolic link or a hard link to any file of root's there ("demo-token
 * -> /etc/shadow") for root to hand over at the next start: a link is
 * followed only in a directory of root's (zc_fs_open(), O_NOFOLLOW
 * first: no moment between a check and the open), the file must be the
 * directory, a regular file of one link or a socket, checked on the
 * descriptor, and that very inode is given (fchownat() on O_PATH).
 */
static int give(const char *path, const struct passwd *pw, bool dir)
{
	int bad = 0;
	int fd = zc_fs_open(path, O_PATH | O_CLOEXEC, 0);
	if (fd < 0) {
		if (errno == ENOENT) {
			return ZC_EOK;
		}
		bad = -errno;
	}
	struct stat st;
	if (bad == 0 && fstat(fd, &st) != 0) {
		bad = -errno;
	} else if (bad == 0 && (dir ? !S_ISDIR(st.st_mode) :
	                        !S_ISREG(st.st_mode) && !S_ISSOCK(st.st_mode))) {
		bad = -EINVAL;
	} else if (bad == 0 && S_ISREG(st.st_mode) && st.st_nlink != 1) {
		bad = -EMLINK;
	} else if (bad == 0 && (st.st_uid != pw->pw_uid ||
	                        st.st_gid != pw->pw_gid) &&
	           fchownat(fd, "", pw->pw_uid, pw->pw_gid, AT_EMPTY_PATH) != 0) {
		bad = -errno;
	}
	if (fd >= 0) {
		close(fd);
	}
	if (bad != 0) {
		zc_error("user: cannot give %s to %s: %s", path, pw->pw_name,
		         bad == -EINVAL ? (dir ? "not a directory" :
		                           "not a regular file") :
		         zc_fs_link_refusal(bad));
		return ZC_EINVAL_CONFIG;
	}
	return ZC_EOK;
}

/* The files serve made outside the data directory's set: the control
 * socket, the pidfile and the log files (reopened by the user later). */
static int give_run_files(const config_t *cfg, const serve_ctx_t *ctx,
                          const struct passwd *pw)
{
	int ret = ctx->control_path[0] ? give(ctx->control_path, pw, false) :
	          ZC_EOK;
	if (ret == ZC_EOK && ctx->pidfile[0]) {
		ret = give(ctx->pidfile, pw, false);
	}
	for (size_t i = 0; ret == ZC_EOK && i < cfg->log_target_count; i++) {
		if (cfg->log_target[i][0] == '/') {
			ret = give(cfg->log_target[i], pw, false);
		}
	}
	return ret;
}

static int drop_privileges(const config_t *cfg, const serve_ctx_t *ctx)
{
	if (cfg->user[0] == '\0') {
		return ZC_EOK;
	}
	struct passwd *pw = getpwnam(cfg->user);
	if (pw == NULL) {
		zc_error("user: no user '%s'", cfg->user);
		return ZC_EINVAL_CONFIG;
	}
	if (geteuid() == pw->pw_uid) {
		return ZC_EOK;
	}
	if (geteuid() != 0) {
		zc_error("user: only root can become '%s'", cfg->user);
		return ZC_EINVAL_CONFIG;
	}
	static const char *const files[] = { "", "/records.db", "/records.db-wal",
	                                     "/records.db-shm", "/edge.mdb",
	                                     "/edge.mdb-lock", "/demo-token",
	                                     "/serve.lock", "/signed.db",
	                                     "/signed.db-wal", "/signed.db-shm",
	                                     "/records-store" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[CONFIG_STR_MAX + 32];
		snprintf(path, sizeof(path), "%s%s", cfg->data_dir, files[i]);
		if (give(path, pw, i == 0) != ZC_EOK) {
			return ZC_EINVAL_CONFIG;
		}
	}
	if (give_run_files(cfg, ctx, pw) != ZC_EOK) {
		return ZC_EINVAL_CONFIG;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 ||
	    setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0 ||
	    setuid(0) == 0) {
		zc_error("user: cannot become %s: %s", cfg->user, strerror(errno));
		return ZC_EINVAL_CONFIG;
	}
	zc_info("running as %s (uid %u)", cfg->user, (unsigned)pw->pw_uid);
	return ZC_EOK;
}

static int touch_unit(records_store_t *rs, void *ctx)
{
	records_zone_t zone;
	int ret = records_zone_get(rs, *(int64_t *)ctx, &zone);
	return ret == ZC_EOK ? records_zone_touch(rs, &zone) : ret;
}

/* The signed view's request for a version of the zone (sigview.h). */
static int touch_zone(void *ctx, int64_t zone_id)
{
	return writer_run(ctx, touch_unit, &zone_id);
}

/* Opens the stores, seeds a fresh directory and applies the change log;
 * returns the edge store (the records store is closed) or NULL. */
static edge_store_t *prepare_data(const config_t *cfg)
{
	records_store_t *rs = NULL;
	edge_store_t *es = NULL;
	if (cli_open_stores(cfg->data_dir, true, &rs, &es) != ZC_EOK) {
		return NULL;
	}
	int ret = cfg->demo ? seed_demo(rs, es, cfg) : ZC_EOK;
	if (ret == ZC_EOK) {
		/* Apply what the log holds before answering (restart). */
		ret = builder_catch_up(rs, es, NULL);
	}
	if (zc_storage_error(ret)) {
		/* A full disk must not take DNS down: serve what the edge
		 * store has; the follower retries and the writer refuses. */
		zc_error("builder: cannot apply the change log before serving: "
		         "%s; serving the edge store as it is, retrying",
		         zc_strerror(ret));
		ret = ZC_EOK;
	}
	records_close(rs);
	if (ret != ZC_EOK) {
		zc_error("cannot prepare the data directory: %s", zc_strerror(ret));
		edge_close(es);
		return NULL;
	}
	return es;
}

/* Starts the HTTP API on the socket api_bind() made (takes api_fd). The
 * API keeps ns, NULL-ended, until it stops. */
static int start_api(const config_t *cfg, int api_fd, edge_store_t *es,
                     builder_follower_t *follower, writer_t *writer,
                     fleet_primary_t *fleet, const char *const *ns,
                     api_t **api)
{
	api_config_t acfg = {
		.listen = cfg->api_listen, .listen_fd = api_fd,
		.data_dir = cfg->data_dir, .edge = es,
		.follower = follower, .writer = writer, .fleet = fleet,
		.default_ttl = cfg->default_ttl, .ns = ns,
		.hostmaster = cfg->zone_hostmaster[0] ? cfg->zone_hostmaster : NULL,
		.serial_policy = cfg->serial_policy,
		.max_body = cfg->api_max_body, .timeout_s = cfg->api_timeout,
		.max_clients = cfg->api_max_clients,
		.max_clients_per_ip = cfg->api_max_clients_per_ip,
		.live_wait_ms = cfg->live_wait,
	};
	return api_start(&acfg, api);
}

/* The fleet's leadership (fleet.h): this node's records_leader_t, and
 * its builder's progress read from its edge store (the builder starts
 * after the fleet). ctx is the serve_ctx_t. */
static int lead_take(void *ctx, const _Atomic bool *stop, uint64_t *term)
{
	return records_leader_take(((serve_ctx_t *)ctx)->leader, stop, term);
}

static bool lead_held(void *ctx)
{
	return records_leader_held(((serve_ctx_t *)ctx)->leader);
}

static int lead_confirm(void *ctx)
{
	return records_leader_confirm(((serve_ctx_t *)ctx)->leader);
}

static void lead_drop(void *ctx)
{
	records_leader_drop(((serve_ctx_t *)ctx)->leader);
}

static int lead_head(void *ctx, uint64_t *pos)
{
	return records_leader_head(((serve_ctx_t *)ctx)->leader, pos);
}

static int lead_built(void *ctx, uint64_t *pos)
{
	return builder_edge_applied(((serve_ctx_t *)ctx)->es, pos);
}

/* Publishes the edge store's replication log to NATS when `nats` is set,
 * else turns its recording off (docs/fleet.md). Nodes sharing a
 * PostgreSQL store each build their own edge store: one of them at a
 * time, the leader, publishes (docs/postgresql.md "The fleet's leader");
 * the others wait to take over. */
static int start_fleet(serve_ctx_t *ctx)
{
	const config_t *cfg = ctx->boot;
	if (cfg->nats[0] == '\0') {
		edge_repl_pos_t pos;
		return edge_repl_enable(ctx->es, false, &pos);
	}
	/* The leader row names it as the nodes table does (node-name). */
	int ret = records_leader_new(cfg->data_dir, cfg->node_name,
	                             &ctx->leader);
	if (ret != ZC_EOK) {
		return ret;
	}
	fleet_leadership_t lead = {
		.take = lead_take, .held = lead_held, .confirm = lead_confirm,
		.drop = lead_drop, .head = lead_head, .built = lead_built,
		.ctx = ctx,
	};
	fleet_config_t fcfg;
	config_fleet(cfg, &fcfg);
	return fleet_primary_start(&fcfg, ctx->leader != NULL ? &lead : NULL,
	                           ctx->es, &ctx->fleet);
}

/* Starts every stage into ctx (the NOTIFY sender under ctx->lock's
 * rules: serve_notify_replace()). Stops at the first failure. */
static int start_stages(serve_ctx_t *ctx, const server_config_t *scfg,
                        server_sockets_t *sockets, int api_fd)
{
	const config_t *cfg = ctx->boot;
	/* The fleet first: recording must be on before anything commits. */
	int ret = start_fleet(ctx);
	if (ret == ZC_EOK) {
		ret = builder_follower_start(cfg->data_dir, ctx->es,
		                             FOLLOW_POLL_MS, &ctx->follower);
	}
	writer_config_t wcfg = {
		.data_dir = cfg->data_dir, .follower = ctx->follower,
		.journal_retention_s = cfg->journal_retention,
		.max_records = cfg->zone_max_records,
	};
	if (ret == ZC_EOK) {
		ret = writer_start(&wcfg, &ctx->writer);
	}
	update_config_t ucfg;
	serve_update_config(cfg, ctx->writer, ctx->follower, &ucfg);
	if (ret == ZC_EOK) {
		ret = update_start(&ucfg, &ctx->updates);
	}
	transfer_config_t tcfg = {
		.data_dir = cfg->data_dir, .edge = ctx->es,
		.allow_transfer = &cfg->allow_transfer,
		.allow_transfer_keys = &cfg->allow_transfer_keys,
		.max_concurrent = cfg->transfer_max_concurrent,
		.tsig_max_fudge = cfg->tsig_max_fudge,
	};
	if (ret == ZC_EOK) {
		ret = transfer_start(&tcfg, &ctx->xfr);
	}
	server_hooks_t hooks = {
		.update = update_handle, .update_ctx = ctx->updates,
		.transfer = transfer_handle, .transfer_ctx = ctx->xfr,
		.signed_query = transfer_signed_query, .signed_ctx = ctx->xfr,
	};
	if (ret == ZC_EOK) {
		ret = server_start(scfg, sockets, ctx->es, &hooks, &ctx->server);
		sockets = NULL;
	}
	server_sockets_free(sockets);
	sigview_config_t vcfg = {
		.data_dir = cfg->data_dir, .edge = ctx->es,
		.touch = touch_zone, .touch_ctx = ctx->writer,
		.on_update = serve_on_view_update, .on_update_ctx = ctx,
		.journal_retention_s = cfg->journal_retention,
	};
	if (ret == ZC_EOK) {
		ret = sigview_start(&vcfg, &ctx->view);
	}
	if (ret == ZC_EOK) {
		ret = serve_notify_replace(ctx, ctx->current);
	}
	if (ret == ZC_EOK) {
		builder_follower_on_pass(ctx->follower, serve_on_pass, ctx);
	}
	static const char *ns[9]; /* The API's until api_stop(). */
	for (size_t i = 0; i < cfg->zone_ns_count; i++) {
		ns[i] = cfg->zone_ns[i];
	}
	if (ret == ZC_EOK && api_fd > 0) {
		ret = start_api(cfg, api_fd, ctx->es, ctx->follower, ctx->writer,
		                ctx->fleet, ns, &ctx->api);
	} else if (api_fd > 0) {
		close(api_fd);
	}
	return ret;
}

/* Stops what start_stages() started, in the order their users need:
 * writers first, which answer what they hold, transfers end; the DNS
 * workers deliver those answers and stop last. */
static void stop_stages(serve_ctx_t *ctx)
{
	api_stop(ctx->api);
	update_shutdown(ctx->updates);
	writer_halt(ctx->writer);
	builder_follower_stop(ctx->follower); /* No more serve_on_pass. */
	fleet_primary_stop(ctx->fleet);       /* Nothing commits any more. */
	records_leader_free(ctx->leader);
	ctx->leader = NULL;
	serve_notify_stop(ctx);  /* The view stops cueing it; it asks the
	                          * view for serials. */
	sigview_stop(ctx->view);
	transfer_stop(ctx->xfr); /* In-flight transfers still use workers. */
	server_stop(ctx->server);
	update_free(ctx->updates);
	transfer_free(ctx->xfr); /* The workers called the hooks until now. */
	/* The DNS workers submitted to the writer and read the follower
	 * until now (UPDATEs in their precheck). */
	writer_free(ctx->writer);
	ctx->writer = NULL;
	builder_follower_free(ctx->follower);
	ctx->follower = NULL;
}

/* Waits for signals: SIGHUP reloads, SIGINT and SIGTERM end the wait.
 * Every second meanwhile, the audit's count of refusal lines left out is
 * written when no later line carried it (zc_audit_flush()). */
static void wait_for_stop(serve_ctx_t *ctx)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	const struct timespec second = { .tv_sec = 1 };
	for (;;) {
		int sig = sigtimedwait(&set, NULL, &second);
		zc_audit_flush(false);
		if (sig < 0) {
			continue;
		}
		if (sig != SIGHUP) {
			zc_info("signal %d (%s): shutting down", sig,
			        sig == SIGTERM ? "SIGTERM" : "SIGINT");
			return;
		}
		char msg[512];
		zc_info("SIGHUP: reloading the configuration");
		serve_reload(ctx, msg, sizeof(msg));
	}
}

/* Starts the metrics endpoint on metrics_fd (taken) when it is bound. */
static int start_metrics(serve_ctx_t *ctx, int metrics_fd, metrics_t **out)
{
	if (metrics_fd < 0) {
		return ZC_EOK;
	}
	const config_t *cfg = ctx->boot;
	metrics_config_t mcfg = {
		.listen = cfg->metrics_listen, .listen_fd = metrics_fd,
		.data_dir = cfg->data_dir, .server = ctx->server, .edge = ctx->es,
		.follower = ctx->follower, .fleet = ctx->fleet,
		.zone_limit = cfg->metrics_zone_limit,
	};
	return metrics_start(&mcfg, out);
}

/* Runs every stage until a signal (takes sockets, api_fd, metrics_fd and
 * es). */
static int serve(serve_ctx_t *ctx, const server_config_t *scfg,
                 server_sockets_t *sockets, int api_fd, int metrics_fd)
{
	control_t *control = NULL;
	metrics_t *metrics = NULL;
	int ret = start_stages(ctx, scfg, sockets, api_fd);
	if (ret == ZC_EOK) {
		ret = start_metrics(ctx, metrics_fd, &metrics);
		metrics_fd = -1;
	}
	/* Neither the control socket nor the pidfile may keep DNS down (a
	 * full disk, a socket path in use): the server runs without. */
	if (ret == ZC_EOK && ctx->control_path[0] != '\0' &&
	    control_start(ctx, &control) != ZC_EOK) {
		zc_error("serving without a control socket (zonecast status, "
		         "reload and stop need it, and the zonecast command's "
		         "writes; SIGHUP and SIGTERM still work)");
	}
	if (ret == ZC_EOK) {
		/* The zonecast command's writes find it there (data_dir.c). */
		cli_note_control(ctx->lock_fd, ctx->boot->data_dir,
		                 control != NULL ? ctx->control_path : "");
	}
	if (ret == ZC_EOK && ctx->pidfile[0] != '\0' &&
	    serve_pidfile_write(ctx->pidfile) != ZC_EOK) {
		ctx->pidfile[0] = '\0'; /* Serving without one. */
	}
	if (ret == ZC_EOK) {
		/* Once everything runs: its connection does not delay them. */
		ret = serve_heartbeat_start(ctx, &ctx->heartbeat);
	}
	if (ret == ZC_EOK) {
		zc_info("zonecast %s serving %s (pid %d)", ZONECAST_VERSION,
		        ctx->boot->data_dir, (int)getpid());
		serve_log_zones(ctx->boot->data_dir, ctx->es);
		zc_sd_notify_ready("serving DNS");
		wait_for_stop(ctx);
	} else {
		zc_error("cannot start: %s", zc_strerror(ret));
	}
	zc_sd_notify_stopping();
	control_stop(control);
	metrics_stop(metrics); /* It reads every stage. */
	if (metrics_fd >= 0) {
		close(metrics_fd);
	}
	serve_heartbeat_stop(ctx->heartbeat); /* It reads the builder. */
	stop_stages(ctx);
	zc_audit_flush(true); /* Nothing refuses any more. */
	if (ctx->pidfile[0] != '\0') {
		serve_pidfile_remove(ctx->pidfile);
	}
	edge_close(ctx->es);
	return ret == ZC_EOK ? 0 : 1;
}

/*
 * Claims what this server must have alone before touching anything: the
 * data directory (its lock) and the DNS and API addresses (bound). A
 * refusal writes no store, no demo zone and no token (a directory that
 * did not exist is left with its serve.lock only).
 */
static int64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The control socket's and the pidfile's paths ("none": neither). */
static int run_paths(serve_ctx_t *ctx)
{
	const config_t *cfg = ctx->boot;
	char path[CONFIG_STR_MAX + 32];
	config_control_socket(cfg, path, sizeof(path));
	if (strcmp(cfg->control_socket, "none") != 0) {
		if (strlen(path) >= sizeof(ctx->control_path)) {
			zc_error("control-socket: %s is longer than a socket path "
			         "may be (%zu bytes): set a shorter control-socket",
			         path, sizeof(ctx->control_path) - 1);
			return ZC_EINVAL_CONFIG;
		}
		snprintf(ctx->control_path, sizeof(ctx->control_path), "%s", path);
	}
	config_pidfile(cfg, path, sizeof(path));
	if (strcmp(cfg->pidfile, "none") != 0) {
		snprintf(ctx->pidfile, sizeof(ctx->pidfile), "%s", path);
	}
	return ZC_EOK;
}

static int run(serve_ctx_t *ctx)
{
	const config_t *cfg = ctx->boot;
	int lock_fd = -1, api_fd = -1, metrics_fd = -1;
	server_sockets_t *sockets = NULL;
	server_config_t scfg;
	cli_server_config(cfg, &scfg);
	if (run_paths(ctx) != ZC_EOK ||
	    cli_writable_data_dir(cfg->data_dir) != ZC_EOK ||
	    cli_lock_data_dir(cfg->data_dir, &lock_fd) != ZC_EOK ||
	    (cfg->records_store[0] != '\0' &&
	     records_bind(cfg->data_dir, cfg->records_store) != ZC_EOK)) {
		if (lock_fd >= 0) {
			close(lock_fd);
		}
		return 1;
	}
	ctx->lock_fd = lock_fd;
	int ret = 1;
	if (server_bind(&scfg, &sockets) != ZC_EOK ||
	    (cfg->api_listen[0] != '\0' &&
	     api_bind(cfg->api_listen, &api_fd) != ZC_EOK) ||
	    (cfg->metrics_listen[0] != '\0' &&
	     metrics_bind(cfg->metrics_listen, &metrics_fd) != ZC_EOK)) {
		zc_error("cannot start: a listen address is not available");
		goto out;
	}
	/* As `user` from here on: the stores are opened, and the files the
	 * server makes are made, by that user (as BIND's -u, Knot's user):
	 * root never opens a file by its name in that user's directory. */
	if (drop_privileges(cfg, ctx) != ZC_EOK) {
		zc_error("cannot start: %s", zc_strerror(ZC_EINVAL_CONFIG));
		goto out;
	}
	ctx->es = prepare_data(cfg);
	if (ctx->es != NULL) {
		ret = serve(ctx, &scfg, sockets, api_fd, metrics_fd);
		sockets = NULL;
		api_fd = -1;
		metrics_fd = -1;
	}
out:
	server_sockets_free(sockets);
	if (api_fd > 0) {
		close(api_fd);
	}
	if (metrics_fd >= 0) {
		close(metrics_fd);
	}
	close(lock_fd);
	return ret;
}

static void on_start_problem(bool error, const char *msg, void *ctx)
{
	(void)ctx;
	zc_log(error ? ZC_LOG_ERROR : ZC_LOG_WARNING, "%s", msg);
}

int cmd_serve(int argc, char **argv)
{
	cli_hold_signals(); /* First of all: they wait for the loop. */
	config_t *cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		return 1;
	}
	char err[1400];
	int ret = serve_parse_args(argc, argv, cfg, err, sizeof(err));
	if (ret != 0) {
		if (err[0] != '\0') {
			fprintf(stderr, "%s%s\n", ret == 1 ? "" : "zonecast serve: ",
			        err);
		}
		if (ret < 0 || (ret == 2 && err[0] == '\0')) {
			usage(ret < 0 ? stdout : stderr); /* --help, or getopt's. */
		}
		free(cfg);
		return ret < 0 ? 0 : ret;
	}
	if (config_log_apply(cfg, false, err, sizeof(err)) != ZC_EOK) {
		fprintf(stderr, "zonecast serve: %s\n", err);
		free(cfg);
		return 1;
	}
	/* Its own listeners clashing would fail a bind with "address
	 * already in use", blaming another server for its configuration. */
	if (config_check_serve(cfg, on_start_problem, NULL) > 0) {
		zc_error("nothing was started (zonecast check-config lists "
		         "every problem)");
		zc_log_close();
		free(cfg);
		return 1;
	}
	serve_ctx_t ctx = {
		.argc = argc, .argv = argv, .boot = cfg, .current = cfg,
		.started_ms = unix_ms(),
	};
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_mutex_init(&ctx.notify_lock, NULL);
	ret = run(&ctx);
	if (ctx.current != cfg) {
		free(ctx.current);
	}
	pthread_mutex_destroy(&ctx.notify_lock);
	pthread_mutex_destroy(&ctx.lock);
	free(cfg);
	zc_log_close();
	return ret;
}
