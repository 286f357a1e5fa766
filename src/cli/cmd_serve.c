/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast serve: runs every stage on one data directory — the builder's
 * change-log follower and the DNS server — until SIGINT or SIGTERM.
 * A fresh data directory gets the demo zone unless told otherwise. One
 * serve per data directory and per address: the data directory's lock
 * and the listen sockets are taken before anything else is done.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "builder/builder.h"
#include "cli/commands.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "edge/repl.h"
#include "fleet/fleet.h"
#include "metrics/metrics.h"
#include "server/server.h"
#include "transfer/transfer.h"
#include "update/update.h"
#include "writer/writer.h"

#define DEFAULT_LISTEN "127.0.0.1:5300"
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
	{ "option", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const flag_keys[128] = {
	['d'] = "data-dir", ['a'] = "api-listen", ['w'] = "workers",
	['m'] = "metrics-listen",
	['L'] = "log-level", ['N'] = "nsid", ['n'] = "nats",
};

/* Reads the config file first, then lets every flag override it. */
static int parse_args(int argc, char **argv, config_t *cfg)
{
	config_defaults(cfg);
	int c;
	while ((c = getopt_long(argc, argv, "c:d:l:a:m:w:L:o:h", opts, NULL)) != -1) {
		if (c == 'c' && config_load(cfg, optarg) != ZC_EOK) {
			return 1;
		}
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == '?') {
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zonecast serve: unexpected argument '%s'\n",
		        argv[optind]);
		return 2;
	}
	bool listen_flag = false;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:d:l:a:m:w:L:o:h", opts, NULL)) != -1) {
		char err[256] = "";
		if (c == 'l') {
			if (!listen_flag) {
				cfg->listen_count = 0; /* Flags replace the file's. */
				listen_flag = true;
			}
			config_set(cfg, "listen", optarg, err, sizeof(err));
		} else if (c == 'D') {
			cfg->demo = false;
		} else if (c == 'o') {
			char key[64];
			const char *eq = strchr(optarg, '=');
			if (eq == NULL || (size_t)(eq - optarg) >= sizeof(key)) {
				snprintf(err, sizeof(err), "-o wants KEY=VALUE, not "
				         "'%s'", optarg);
			} else {
				memcpy(key, optarg, eq - optarg);
				key[eq - optarg] = '\0';
				config_set(cfg, key, eq + 1, err, sizeof(err));
			}
		} else if (c < 128 && flag_keys[c] != NULL) {
			config_set(cfg, flag_keys[c], optarg, err, sizeof(err));
		}
		if (err[0] != '\0') {
			fprintf(stderr, "zonecast serve: %s\n", err);
			return 2;
		}
	}
	if (cfg->listen_count == 0) {
		strcpy(cfg->listen[0], DEFAULT_LISTEN);
		cfg->listen_count = 1;
	}
	return 0;
}

static int count_zone(const records_zone_t *zone, void *ctx)
{
	(void)zone;
	(*(int *)ctx)++;
	return 1;
}

/* A fresh data directory gets the demo zone so `dig` has an answer. */
static int seed_demo(records_store_t *rs, edge_store_t *es,
                     const char *data_dir)
{
	int zones = 0;
	int ret = records_zone_list(rs, false, count_zone, &zones);
	if (ret != ZC_EOK || zones > 0) {
		return ret;
	}
	zc_info("empty data directory: creating the demo zone %s",
	        cli_demo_zone_name);
	ret = cli_import_zone(rs, es, cli_demo_zone_name, NULL,
	                      cli_demo_zone_text, true);
	if (ret == ZC_EOK) {
		ret = cli_demo_token(data_dir);
	}
	return ret;
}

/*
 * Least privilege: once every socket is bound, the data directory is handed
 * to `user` and the process becomes that user (as BIND's -u does). Threads
 * follow: glibc applies setuid() to all of them.
 */
static int drop_privileges(const config_t *cfg)
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
	                                     "/serve.lock" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[CONFIG_STR_MAX + 32];
		snprintf(path, sizeof(path), "%s%s", cfg->data_dir, files[i]);
		if (chown(path, pw->pw_uid, pw->pw_gid) != 0 && errno != ENOENT) {
			zc_error("user: cannot give %s to %s: %s", path, cfg->user,
			         strerror(errno));
			return ZC_EINVAL_CONFIG;
		}
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

/* Opens the stores, seeds a fresh directory and applies the change log;
 * returns the edge store (the records store is closed) or NULL. */
static edge_store_t *prepare_data(const config_t *cfg)
{
	records_store_t *rs = NULL;
	edge_store_t *es = NULL;
	if (cli_open_stores(cfg->data_dir, true, &rs, &es) != ZC_EOK) {
		return NULL;
	}
	int ret = cfg->demo ? seed_demo(rs, es, cfg->data_dir) : ZC_EOK;
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

/* Publishes the edge store's replication log to NATS when `nats` is set,
 * else turns its recording off (docs/fleet.md). */
static int start_fleet(const config_t *cfg, edge_store_t *es,
                       fleet_primary_t **fleet)
{
	if (cfg->nats[0] != '\0') {
		fleet_config_t fcfg;
		config_fleet(cfg, &fcfg);
		return fleet_primary_start(&fcfg, es, fleet);
	}
	edge_repl_pos_t pos;
	return edge_repl_enable(es, false, &pos);
}

/* Starts the metrics endpoint on metrics_fd (taken) when it is bound. */
static int start_metrics(const config_t *cfg, int metrics_fd, server_t *server,
                         edge_store_t *es, builder_follower_t *follower,
                         fleet_primary_t *fleet, metrics_t **out)
{
	if (metrics_fd < 0) {
		return ZC_EOK;
	}
	metrics_config_t mcfg = {
		.listen = cfg->metrics_listen, .listen_fd = metrics_fd,
		.data_dir = cfg->data_dir, .server = server, .edge = es,
		.follower = follower, .fleet = fleet,
		.zone_limit = cfg->metrics_zone_limit,
	};
	return metrics_start(&mcfg, out);
}

/* Runs every stage until a signal (takes sockets, api_fd, metrics_fd and
 * es). */
static int serve(const config_t *cfg, const server_config_t *scfg,
                 server_sockets_t *sockets, int api_fd, int metrics_fd,
                 edge_store_t *es)
{
	metrics_t *metrics = NULL;
	builder_follower_t *follower = NULL;
	writer_t *writer = NULL;
	server_t *server = NULL;
	api_t *api = NULL;
	transfer_t *xfr = NULL;
	notify_t *notifier = NULL;
	transfer_config_t tcfg = {
		.data_dir = cfg->data_dir, .edge = es,
		.allow_transfer = &cfg->allow_transfer,
		.max_concurrent = cfg->transfer_max_concurrent,
		.tsig_max_fudge = cfg->tsig_max_fudge,
	};
	const char *targets[CONFIG_NOTIFY_MAX];
	for (size_t i = 0; i < cfg->notify_count; i++) {
		targets[i] = cfg->notify[i];
	}
	notify_config_t ncfg = {
		.targets = targets, .target_count = cfg->notify_count,
		.retries = cfg->notify_retries, .timeout_ms = cfg->notify_timeout,
		.edge = es,
	};
	/* The fleet first: recording must be on before anything commits. */
	fleet_primary_t *fleet = NULL;
	int ret = start_fleet(cfg, es, &fleet);
	if (ret == ZC_EOK) {
		ret = builder_follower_start(cfg->data_dir, es, FOLLOW_POLL_MS,
		                             &follower);
	}
	writer_config_t wcfg = {
		.data_dir = cfg->data_dir, .follower = follower,
		.journal_retention_s = cfg->journal_retention,
		.max_records = cfg->zone_max_records,
	};
	if (ret == ZC_EOK) {
		ret = writer_start(&wcfg, &writer);
	}
	update_service_t *updates = NULL;
	update_config_t ucfg = {
		.data_dir = cfg->data_dir, .writer = writer,
		.follower = follower, .live_wait_ms = cfg->live_wait,
		.allow_update = &cfg->allow_update,
		.max_size = cfg->update_max_size,
		.tsig_max_fudge = cfg->tsig_max_fudge,
		.tsig_replay_cache = cfg->tsig_replay_cache,
	};
	if (ret == ZC_EOK) {
		ret = update_start(&ucfg, &updates);
	}
	if (ret == ZC_EOK) {
		ret = transfer_start(&tcfg, &xfr);
	}
	server_hooks_t hooks = {
		.update = update_handle, .update_ctx = updates,
		.transfer = transfer_handle, .transfer_ctx = xfr,
		.signed_query = transfer_signed_query, .signed_ctx = xfr,
	};
	if (ret == ZC_EOK) {
		ret = server_start(scfg, sockets, es, &hooks, &server);
		sockets = NULL;
	}
	if (ret == ZC_EOK) {
		ret = notify_start(&ncfg, &notifier);
	}
	if (ret == ZC_EOK && notifier != NULL) {
		builder_follower_on_pass(follower, notify_on_pass, notifier);
	}
	const char *ns[9] = { NULL }; /* The API's until api_stop(). */
	for (size_t i = 0; i < cfg->zone_ns_count; i++) {
		ns[i] = cfg->zone_ns[i];
	}
	if (ret == ZC_EOK && api_fd > 0) {
		ret = start_api(cfg, api_fd, es, follower, writer, fleet, ns,
		                &api);
		api_fd = -1;
	}
	if (ret == ZC_EOK) {
		ret = start_metrics(cfg, metrics_fd, server, es, follower, fleet,
		                    &metrics);
		metrics_fd = -1;
	}
	if (ret == ZC_EOK) {
		ret = drop_privileges(cfg);
	}
	if (ret == ZC_EOK) {
		zc_info("zonecast %s serving %s", ZONECAST_VERSION, cfg->data_dir);
		zc_sd_notify_ready("serving DNS");
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		int sig;
		sigwait(&set, &sig);
		zc_info("signal %d: shutting down", sig);
	} else {
		zc_error("cannot start: %s", zc_strerror(ret));
	}
	zc_sd_notify_stopping();
	/* Metrics first (they read every stage). Writers stop next and
	 * answer what they hold, transfers end; the DNS workers deliver
	 * those answers and stop last. */
	metrics_stop(metrics);
	if (metrics_fd >= 0) {
		close(metrics_fd);
	}
	api_stop(api);
	update_shutdown(updates);
	writer_stop(writer);
	builder_follower_stop(follower); /* No more notify_on_pass calls. */
	fleet_primary_stop(fleet);       /* Nothing commits any more. */
	notify_stop(notifier);
	transfer_stop(xfr);   /* In-flight transfers still use the workers. */
	server_stop(server);
	server_sockets_free(sockets);
	if (api_fd > 0) {
		close(api_fd);
	}
	update_free(updates);
	transfer_free(xfr);   /* The workers called the hooks until now. */
	edge_close(es);
	return ret == ZC_EOK ? 0 : 1;
}

/*
 * Claims what this server must have alone before touching anything: the
 * data directory (its lock) and the DNS and API addresses (bound). A
 * refusal writes no store, no demo zone and no token (a directory that
 * did not exist is left with its serve.lock only).
 */
static int run(const config_t *cfg)
{
	int lock_fd = -1, api_fd = -1, metrics_fd = -1;
	server_sockets_t *sockets = NULL;
	edge_store_t *es = NULL;
	server_config_t scfg;
	cli_server_config(cfg, &scfg);
	if (cli_writable_data_dir(cfg->data_dir) != ZC_EOK ||
	    cli_lock_data_dir(cfg->data_dir, &lock_fd) != ZC_EOK) {
		return 1;
	}
	int ret = 1;
	if (server_bind(&scfg, &sockets) != ZC_EOK ||
	    (cfg->api_listen[0] != '\0' &&
	     api_bind(cfg->api_listen, &api_fd) != ZC_EOK) ||
	    (cfg->metrics_listen[0] != '\0' &&
	     metrics_bind(cfg->metrics_listen, &metrics_fd) != ZC_EOK)) {
		zc_error("cannot start: a listen address is not available");
		goto out;
	}
	es = prepare_data(cfg);
	if (es != NULL) {
		ret = serve(cfg, &scfg, sockets, api_fd, metrics_fd, es);
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

int cmd_serve(int argc, char **argv)
{
	config_t cfg;
	int ret = parse_args(argc, argv, &cfg);
	if (ret != 0) {
		return ret < 0 ? 0 : ret;
	}
	zc_log_set_level(cfg.log_level);
	/* Threads inherit this mask; the main thread takes the signals. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return run(&cfg);
}
