/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast edge: a DNS server of the fleet — its own edge store, fed from
 * NATS JetStream by a primary (fleet/fleet.h); no records store, no API,
 * no UPDATE, no transfers.
 */
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "fleet/fleet.h"
#include "metrics/metrics.h"
#include "server/server.h"

#define DEFAULT_LISTEN "127.0.0.1:5300"
#define DEFAULT_DATA_DIR "zonecast-edge"

static void usage(FILE *out)
{
	fputs("Usage: zonecast edge --nats URL[,URL...] [OPTIONS]\n"
	      "\n"
	      "Serves the zones a primary (zonecast serve --nats) publishes to\n"
	      "NATS JetStream, from an edge store of its own (docs/fleet.md).\n"
	      "\n"
	      "Options:\n"
	      "  -n, --nats URL[,URL...]  NATS servers (required)\n"
	      "  -N, --name NAME          name in the fleet and NSID (default: "
	      "host name)\n"
	      "  -d, --data-dir DIR       edge store directory (default "
	      DEFAULT_DATA_DIR ")\n"
	      "  -l, --listen ADDR:PORT   DNS address, repeatable (default "
	      DEFAULT_LISTEN ")\n"
	      "  -m, --metrics-listen ADDR:PORT  Prometheus metrics, /healthz and\n"
	      "                           /readyz (default: none)\n"
	      "  -c, --config FILE        read this config file (server: section)\n"
	      "  -w, --workers N          workers per address\n"
	      "  -L, --log-level LEVEL    error, warning, info, debug\n"
	      "  -o, --option KEY=VALUE   any config-file setting, repeatable\n"
	      "                           (e.g. -o nats-creds=/etc/edge.creds)\n"
	      "  -h, --help               this help\n", out);
}

static const struct option opts[] = {
	{ "nats", required_argument, NULL, 'n' },
	{ "name", required_argument, NULL, 'N' },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "listen", required_argument, NULL, 'l' },
	{ "metrics-listen", required_argument, NULL, 'm' },
	{ "config", required_argument, NULL, 'c' },
	{ "workers", required_argument, NULL, 'w' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "option", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const flag_keys[128] = {
	['n'] = "nats", ['N'] = "fleet-name", ['d'] = "data-dir",
	['w'] = "workers", ['L'] = "log-level", ['m'] = "metrics-listen",
};

static int parse_args(int argc, char **argv, config_t *cfg)
{
	config_defaults(cfg);
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), DEFAULT_DATA_DIR);
	cli_args_t a = {
		.cmd = "edge", .shortopts = "n:N:d:l:m:c:w:L:o:h", .opts = opts,
		.flag_keys = flag_keys, .usage = usage,
	};
	int ret = cli_parse_server_args(&a, argc, argv, cfg);
	if (ret != 0) {
		return ret;
	}
	if (cfg->nats[0] == '\0') {
		fprintf(stderr, "zonecast edge: --nats is required\n");
		return 2;
	}
	if (cfg->listen_count == 0) {
		strcpy(cfg->listen[0], DEFAULT_LISTEN);
		cfg->listen_count = 1;
	}
	if (cfg->fleet_name[0] == '\0' &&
	    gethostname(cfg->fleet_name, sizeof(cfg->fleet_name) - 1) != 0) {
		strcpy(cfg->fleet_name, "edge");
	}
	for (char *p = cfg->fleet_name; *p; p++) {
		/* A host name becomes a valid edge name. */
		*p = (isalnum((unsigned char)*p) || *p == '_') ? *p : '-';
	}
	if (cfg->nsid[0] == '\0') {
		snprintf(cfg->nsid, sizeof(cfg->nsid), "%s", cfg->fleet_name);
	}
	return 0;
}

static int run(const config_t *cfg)
{
	/* As serve: the data directory and the addresses are this process's
	 * alone, claimed before anything is opened (cli/data_dir.c,
	 * server/listen.c). */
	edge_store_t *es = NULL;
	server_sockets_t *sockets = NULL;
	server_config_t scfg;
	cli_server_config(cfg, &scfg);
	int lock_fd = -1, metrics_fd = -1;
	int ret = cli_lock_data_dir(cfg->data_dir, &lock_fd);
	if (ret != ZC_EOK) {
		return 1;
	}
	ret = server_bind(&scfg, &sockets);
	if (ret == ZC_EOK && cfg->metrics_listen[0] != '\0') {
		ret = metrics_bind(cfg->metrics_listen, &metrics_fd);
	}
	if (ret == ZC_EOK) {
		ret = edge_open(&es, cfg->data_dir, 0);
		if (ret != ZC_EOK) {
			zc_error("cannot open the edge store in %s: %s",
			         cfg->data_dir, zc_strerror(ret));
		}
	}
	if (ret != ZC_EOK) {
		server_sockets_free(sockets);
		if (metrics_fd >= 0) {
			close(metrics_fd);
		}
		close(lock_fd);
		return 1;
	}
	server_hooks_t hooks = { 0 };
	server_t *server = NULL;
	fleet_edge_t *follower = NULL;
	fleet_config_t fcfg;
	config_fleet(cfg, &fcfg);
	ret = server_start(&scfg, sockets, es, &hooks, &server);
	if (ret == ZC_EOK) {
		ret = fleet_edge_start(&fcfg, es, &follower);
	}
	metrics_t *metrics = NULL;
	if (ret == ZC_EOK && metrics_fd >= 0) {
		metrics_config_t mcfg = {
			.listen = cfg->metrics_listen, .listen_fd = metrics_fd,
			.server = server, .edge = es, .fleet_edge = follower,
			.zone_limit = cfg->metrics_zone_limit,
		};
		ret = metrics_start(&mcfg, &metrics);
		metrics_fd = -1;
	}
	if (ret == ZC_EOK) {
		zc_info("zonecast %s edge %s serving %s", ZONECAST_VERSION,
		        cfg->fleet_name, cfg->data_dir);
		zc_sd_notify_ready("serving DNS (fleet edge)");
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGINT);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGHUP);
		/* Every second meanwhile: the audit's count of refusal lines
		 * left out that no later line carried (zc_audit_flush()).
		 * SIGHUP reopens the log files (logrotate's; it killed the
		 * edge); the edge reads no configuration again. */
		const struct timespec second = { .tv_sec = 1 };
		int sig;
		while ((sig = sigtimedwait(&set, NULL, &second)) < 0 ||
		       sig == SIGHUP) {
			if (sig == SIGHUP) {
				zc_log_reopen();
				zc_info("SIGHUP: log files reopened (an edge "
				        "reads its configuration at start only)");
			}
			zc_audit_flush(false);
		}
		zc_info("signal %d: shutting down", sig);
	} else {
		zc_error("cannot start: %s", zc_strerror(ret));
	}
	zc_sd_notify_stopping();
	metrics_stop(metrics);
	if (metrics_fd >= 0) {
		close(metrics_fd);
	}
	fleet_edge_stop(follower);
	server_stop(server);
	zc_audit_flush(true);
	edge_close(es);
	close(lock_fd);
	return ret == ZC_EOK ? 0 : 1;
}

int cmd_edge(int argc, char **argv)
{
	cli_hold_signals(); /* First of all: they wait for the loop. */
	config_t cfg;
	int ret = parse_args(argc, argv, &cfg);
	if (ret != 0) {
		return ret < 0 ? 0 : ret;
	}
	char err[1200];
	if (config_log_apply(&cfg, false, err, sizeof(err)) != ZC_EOK) {
		fprintf(stderr, "zonecast edge: %s\n", err);
		return 1;
	}
	return run(&cfg);
}
