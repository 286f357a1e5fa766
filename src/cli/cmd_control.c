/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast status | reload | stop and zonecast zone status [ZONE]: the
 * client of a running server's control socket (control.c has the
 * protocol). Human output by default, the server's JSON with --json.
 * The socket is --socket, else the config's control-socket, else
 * DATA_DIR/control.sock.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/json_args.h"
#include "common/error.h"

typedef struct {
	const char *cmd;        /* "status", "reload", "stop", "zone status" */
	char socket[108];
	bool json;
	unsigned wait_s;        /* stop: how long to wait for the exit. */
	const char *zone;
} control_opts_t;

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      "  zonecast status      [OPTIONS]   the running server's state\n"
	      "  zonecast reload      [OPTIONS]   re-read the configuration\n"
	      "  zonecast stop        [OPTIONS]   stop the server and wait\n"
	      "  zonecast zone status [OPTIONS] [ZONE]\n"
	      "                                   per zone: serials, signing,\n"
	      "                                   build state, secondaries\n"
	      "\n"
	      "They talk to `zonecast serve` over its control socket.\n"
	      "\n"
	      "Options:\n"
	      "  -s, --socket PATH   the control socket (default: the config's\n"
	      "                      control-socket, else DATA_DIR/control.sock)\n"
	      "  -c, --config FILE   read control-socket and data-dir from it\n"
	      "  -d, --data-dir DIR  data directory (default ./zonecast-data)\n"
	      "  -j, --json          print the server's JSON answer\n"
	      "  -w, --wait S        stop: seconds to wait for the exit (30)\n"
	      "  -h, --help          this help\n", out);
}

/* Reads the control socket's path from a config file. A file the server
 * would refuse still names it: the server is asked anyway (a reload then
 * says what is wrong, in its log too). */
static void read_config(const control_opts_t *o, config_t *cfg,
                        const char *path)
{
	char err[1400];
	if (config_read(cfg, path, err, sizeof(err)) != ZC_EOK) {
		fprintf(stderr, "zonecast %s: warning: %s\n", o->cmd, err);
	}
}

/* Parses the options; returns 0, or the exit code (help: -1). */
static int parse(int argc, char **argv, control_opts_t *o)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "wait", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	config_t *cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		return 1;
	}
	config_defaults(cfg);
	const char *sock = NULL, *dir = NULL;
	int c, ret = 0;
	while (ret == 0 &&
	       (c = getopt_long(argc, argv, "s:c:d:jw:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'c': read_config(o, cfg, optarg); break;
		case 'd': dir = optarg; break;
		case 'j': o->json = true; break;
		case 'w': o->wait_s = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); ret = -1; break;
		default: usage(stderr); ret = 2; break;
		}
	}
	if (ret == 0 && dir != NULL) {
		snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", dir);
	}
	char path[CONFIG_STR_MAX + 32];
	config_control_socket(cfg, path, sizeof(path));
	const char *chosen = sock ? sock : path;
	size_t len = strlen(chosen);
	if (ret == 0 && len >= sizeof(o->socket)) {
		fprintf(stderr, "zonecast %s: socket path too long: %s\n", o->cmd,
		        chosen);
		ret = 2;
	} else if (ret == 0) {
		memcpy(o->socket, chosen, len + 1);
	}
	free(cfg);
	return ret;
}

/* Sends the request, reads the one-line answer. NULL (said) when no
 * server answers. */
static json_t *ask(const control_opts_t *o, json_t *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->socket);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;
		fprintf(stderr, "zonecast %s: no zonecast answers on %s: %s%s\n",
		        o->cmd, o->socket, strerror(err),
		        err == ENOENT || err == ECONNREFUSED ? " (is `zonecast "
		        "serve` running on this data directory?)" :
		        err == EACCES ? " (run as the server's user)" : "");
		if (fd >= 0) {
			close(fd);
		}
		return NULL;
	}
	char *text = json_dumps(req, JSON_COMPACT);
	if (text != NULL && send(fd, text, strlen(text), MSG_NOSIGNAL) >= 0) {
		send(fd, "\n", 1, MSG_NOSIGNAL);
	}
	free(text);
	/* Read even when the send failed: a server that refuses the client
	 * may have answered and closed before the request went out. */
	json_error_t jerr;
	json_t *reply = NULL;
	FILE *f = fdopen(fd, "r");
	if (f != NULL) {
		reply = json_loadf(f, JSON_DISABLE_EOF_CHECK, &jerr);
		fclose(f);
	} else {
		close(fd);
	}
	if (reply == NULL) {
		fprintf(stderr, "zonecast %s: the server at %s gave no answer\n",
		        o->cmd, o->socket);
	}
	return reply;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s != NULL ? s : "-";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static void print_uptime(long long s)
{
	if (s >= 86400) {
		printf("%lldd%02lldh", s / 86400, s % 86400 / 3600);
	} else if (s >= 3600) {
		printf("%lldh%02lldm", s / 3600, s % 3600 / 60);
	} else {
		printf("%lldm%02llds", s / 60, s % 60);
	}
}

/* A PostgreSQL store's leader and nodes (status.c's add_nodes()). */
static void print_nodes(const json_t *store)
{
	if (json_object_get(store, "error") != NULL) {
		printf("nodes            cannot be read: %s\n", str(store, "error"));
		return;
	}
	const json_t *leader = json_object_get(store, "leader");
	if (json_is_object(leader)) {
		printf("leader           %s (epoch %lld, since %s%s)\n",
		       str(leader, "node"), num(leader, "epoch"),
		       str(leader, "since"),
		       json_is_true(json_object_get(leader, "up")) ? "" :
		       ", DOWN");
	} else {
		printf("leader           none\n");
	}
	const json_t *nodes = json_object_get(store, "nodes");
	size_t i, up = 0;
	json_t *n;
	json_array_foreach(nodes, i, n) {
		up += json_is_true(json_object_get(n, "up"));
	}
	printf("nodes            %zu, %zu up\n", json_array_size(nodes), up);
	json_array_foreach(nodes, i, n) {
		printf("  %s%s: %s, %s, pid %lld, zonecast %s, ", str(n, "name"),
		       json_is_true(json_object_get(n, "self")) ? " (this node)" : "",
		       json_is_true(json_object_get(n, "up")) ? "up" : "DOWN",
		       str(n, "role"), num(n, "pid"), str(n, "version"));
		if (num(n, "seen_ago_ms") >= 0) {
			printf("seen %.1f s ago", num(n, "seen_ago_ms") / 1000.0);
		} else {
			printf("never seen");
		}
		printf(", applied position %s", str(n, "applied_position"));
		if (json_is_integer(json_object_get(n, "lag_events"))) {
			printf(", lag %lld events / %lld ms", num(n, "lag_events"),
			       num(n, "lag_ms"));
		}
		if (!json_is_null(json_object_get(n, "stalled"))) {
			printf(", STALLED: %s", str(n, "stalled"));
		}
		printf("\n");
	}
}

static void print_status(const json_t *r)
{
	const json_t *l = json_object_get(r, "listeners");
	const json_t *rl = json_object_get(r, "reload");
	const json_t *b = json_object_get(r, "builder");
	const json_t *w = json_object_get(r, "writer");
	const json_t *sig = json_object_get(json_object_get(r, "caches"),
	                                    "signatures");
	const json_t *rrl = json_object_get(r, "rrl");
	printf("zonecast %s, pid %lld, up ", str(r, "version"), num(r, "pid"));
	print_uptime(num(r, "uptime_s"));
	printf(" (since %s)\n", str(r, "started"));
	printf("data directory   %s\n", str(r, "data_dir"));
	const json_t *store = json_object_get(r, "records_store");
	bool pg = strcmp(str(store, "backend"), "postgresql") == 0;
	printf("records store    %s, %s\n", pg ? "PostgreSQL" : "SQLite",
	       str(store, "where"));
	if (pg) {
		printf("this node        %s\n", str(store, "node"));
		print_nodes(store);
	}
	printf("listening        DNS");
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(l, "dns"), i, a) {
		printf("%s %s", i ? "," : "", json_string_value(a));
	}
	printf(" (%lld workers per address), API %s, control %s\n",
	       num(l, "workers_per_address"), str(l, "api"), str(l, "control"));
	if (json_is_null(json_object_get(rl, "last"))) {
		printf("reloads          none\n");
	} else {
		printf("reloads          %lld, last %s: %s\n", num(rl, "count"),
		       str(rl, "last"), str(rl, "message"));
	}
	printf("zones            %lld (%lld quarantined)\n", num(r, "zones"),
	       num(b, "quarantined_zones"));
	if (json_is_string(json_object_get(b, "applied_position"))) {
		printf("builder          applied position %s of %s",
		       str(b, "applied_position"), str(b, "last_position"));
	} else {
		printf("builder          applied seq %lld of %lld",
		       num(b, "applied_seq"), num(b, "last_seq"));
	}
	printf(", lag %lld events / "
	       "%lld ms, %lld passes%s%s\n",
	       num(b, "lag_events"), num(b, "lag_ms"),
	       num(b, "passes"), json_is_null(json_object_get(b, "stalled")) ?
	       "" : ", STALLED: ", json_is_null(json_object_get(b, "stalled")) ?
	       "" : str(b, "stalled"));
	printf("writer           %lld queued, %lld batches of %lld writes "
	       "(last %lld), %lld cut at a zone another node held, %lld run "
	       "again\n", num(w, "queued"), num(w, "batches"),
	       num(w, "units"), num(w, "last_batch"), num(w, "cut_batches"),
	       num(w, "replayed_batches"));
	const json_t *rate = json_object_get(sig, "hit_rate");
	if (json_is_number(rate)) {
		printf("signature cache  %.1f%% hits (%lld hits, %lld misses)\n",
		       100.0 * json_number_value(rate), num(sig, "hits"),
		       num(sig, "misses"));
	} else {
		printf("signature cache  no lookups yet\n");
	}
	printf("rate limiting    %lld dropped, %lld slipped\n",
	       num(rrl, "dropped"), num(rrl, "slipped"));
}

static void print_peer(const json_t *p)
{
	const json_t *n = json_object_get(p, "notify");
	const json_t *t = json_object_get(p, "transfer");
	printf("  secondary %s:", str(p, "peer"));
	if (json_is_object(n)) {
		printf(" NOTIFY serial %lld %s (%s)", num(n, "serial"),
		       str(n, "result"), str(n, "time"));
	}
	if (json_is_object(t)) {
		printf("%s %s serial %lld %s (%s)", json_is_object(n) ? ";" : "",
		       str(t, "kind"), num(t, "serial"), str(t, "result"),
		       str(t, "time"));
	}
	printf("\n");
}

static void print_zones(const json_t *r)
{
	size_t i;
	json_t *z;
	json_array_foreach(json_object_get(r, "zones"), i, z) {
		const json_t *served = json_object_get(z, "served_serial");
		char served_text[24] = "-";
		if (json_is_integer(served)) {
			snprintf(served_text, sizeof(served_text), "%lld",
			         (long long)json_integer_value(served));
		}
		printf("%-32s serial %-10lld served %-10s %-8s %-11s "
		       "%lld records, last change %s\n", str(z, "name"),
		       num(z, "serial"), served_text,
		       json_is_true(json_object_get(z, "signed")) ? "signed" :
		       "unsigned", str(z, "state"), num(z, "records"),
		       str(z, "last_change"));
		const json_t *q = json_object_get(z, "quarantine");
		if (json_is_object(q)) {
			printf("  QUARANTINED since %s (serving serial %lld, %lld "
			       "failed attempts): %s\n", str(q, "since"),
			       num(q, "serving_serial"), num(q, "attempts"),
			       str(q, "reason"));
		}
		size_t k;
		json_t *p;
		json_array_foreach(json_object_get(z, "secondaries"), k, p) {
			print_peer(p);
		}
	}
	if (json_array_size(json_object_get(r, "zones")) == 0) {
		printf("(no zones)\n");
	}
}

/* Whether pid has exited: gone, or a zombie its parent has not reaped
 * yet (a shell or a test harness that started it). */
static bool has_exited(int pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		return true;
	}
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return false;
	}
	bool zombie = false;
	if (fgets(buf, sizeof(buf), f) != NULL) {
		const char *end = strrchr(buf, ')'); /* After "pid (comm)". */
		zombie = end != NULL && end[1] == ' ' && end[2] == 'Z';
	}
	fclose(f);
	return zombie;
}

/* Waits until the process is gone (stop). */
static int wait_exit(const control_opts_t *o, int pid)
{
	for (unsigned waited = 0; waited < o->wait_s * 10; waited++) {
		if (has_exited(pid)) {
			return 0;
		}
		struct timespec ts = { .tv_nsec = 100000000 };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "zonecast stop: pid %d still runs after %u s\n", pid,
	        o->wait_s);
	return 1;
}

/* Prints an answer; returns the exit code. */
static int show(const control_opts_t *o, json_t *reply)
{
	const json_t *result = json_object_get(reply, "result");
	if (!json_is_true(json_object_get(reply, "ok"))) {
		fprintf(stderr, "zonecast %s: %s\n", o->cmd, str(reply, "error"));
		if (o->json) {
			json_dumpf(reply, stdout, JSON_INDENT(2));
			printf("\n");
		}
		return 1;
	}
	if (o->json) {
		json_dumpf(result, stdout, JSON_INDENT(2));
		printf("\n");
	} else if (strcmp(o->cmd, "status") == 0) {
		print_status(result);
	} else if (strcmp(o->cmd, "zone status") == 0) {
		print_zones(result);
	} else if (strcmp(o->cmd, "reload") == 0) {
		printf("%s\n", str(result, "message"));
	}
	if (strcmp(o->cmd, "stop") == 0) {
		if (!o->json) {
			printf("stopping zonecast (pid %lld)\n", num(result, "pid"));
		}
		return wait_exit(o, (int)num(result, "pid"));
	}
	return 0;
}

static int run(const char *cmd, const char *request, int argc, char **argv)
{
	control_opts_t o = { .cmd = cmd, .wait_s = 30 };
	int ret = parse(argc, argv, &o);
	if (ret != 0) {
		return ret < 0 ? 0 : ret;
	}
	bool zone_arg = strcmp(request, "zone-status") == 0;
	if (optind + (zone_arg ? 1 : 0) < argc) {
		fprintf(stderr, "zonecast %s: unexpected argument '%s'\n", cmd,
		        argv[optind + (zone_arg ? 1 : 0)]);
		return 2;
	}
	json_t *req = json_pack("{s:s}", "command", request);
	if (zone_arg && optind < argc &&
	    !cli_json_set(req, "zone", cli_json_name(argv[optind]))) {
		json_decref(req);
		return 2;
	}
	json_t *reply = ask(&o, req);
	json_decref(req);
	if (reply == NULL) {
		return 1;
	}
	ret = show(&o, reply);
	json_decref(reply);
	return ret;
}

int cmd_control(const char *cmd, int argc, char **argv)
{
	if (strcmp(cmd, "zone status") == 0) {
		return run(cmd, "zone-status", argc, argv);
	}
	return run(cmd, cmd, argc, argv);
}
