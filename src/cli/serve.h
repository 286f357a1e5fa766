/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A running `zonecast serve` as its operator's tools see it: the stages it
 * runs, the configuration in force, and what reload (reload.c), the
 * control socket (control.c) and status (status.c) need from it.
 *
 * Design
 *
 * The main thread starts every stage, then waits for signals: SIGINT and
 * SIGTERM stop the server, SIGHUP reloads (and reopens the log files).
 * The control socket's thread answers `zonecast status | reload | stop |
 * zone status` one connection at a time; its reload is the same call as
 * SIGHUP's and its stop raises SIGTERM. Reloads run one at a time under
 * ctx->lock, which also guards the configuration in force and the NOTIFY
 * sender (a changed notify list starts a new sender).
 *
 * Lifetimes: `boot` is the configuration the server started with; the
 * stages that were given pointers into it (the API's zone-ns, the fleet)
 * keep it until they stop, and it holds the keys that need a restart.
 * `current` is the configuration in force (boot until the first reload).
 * The NOTIFY sender keeps pointers into the configuration it was started
 * from (notify_cfg), freed when a newer sender replaces it.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "builder/builder.h"
#include "cli/config.h"
#include "edge/edge.h"
#include "fleet/fleet.h"
#include "server/server.h"
#include "transfer/transfer.h"
#include "update/update.h"
#include "writer/writer.h"

typedef struct serve_ctx {
	/* Set before the control socket opens; read-only after. */
	int argc;                   /* serve's arguments: a reload reads */
	char **argv;                /* the config file and flags again. */
	const config_t *boot;
	int64_t started_ms;         /* Unix ms. */
	edge_store_t *es;
	builder_follower_t *follower;
	writer_t *writer;
	server_t *server;
	update_service_t *updates;
	transfer_t *xfr;
	api_t *api;
	fleet_primary_t *fleet;
	/* The publisher's role among nodes sharing a PostgreSQL store. */
	records_leader_t *leader;  /* the fleet's leadership (PostgreSQL) */
	struct sigview *view;       /* Signed zones' view for secondaries. */
	struct serve_heartbeat *heartbeat; /* This node's row in the store. */
	char control_path[108];     /* "" : no control socket. */
	int lock_fd;                /* DATA_DIR/serve.lock, held. */
	char pidfile[CONFIG_STR_MAX]; /* "" : none written. */

	/* lock guards everything below. */
	pthread_mutex_t lock;
	config_t *current;          /* In force; owned unless == boot. */
	unsigned reloads;           /* Accepted so far. */
	int64_t last_reload_ms;     /* Unix ms of the last attempt (0: none). */
	bool last_reload_ok;
	char last_reload_msg[512];

	/* notify_lock guards notifier (taken by the follower's and the
	 * view's threads at each pass, so never held for long); notify_cfg
	 * is lock's. */
	pthread_mutex_t notify_lock;
	notify_t *notifier;
	config_t *notify_cfg;
} serve_ctx_t;

/*
 * Parses serve's arguments into cfg: the config file (-c) first, then the
 * flags over it (serve.c's usage lists them). Returns 0, -1 when help was
 * asked for, 1 for a config file error, 2 for a usage error; err holds
 * the message ("" when getopt printed one).
 */
int serve_parse_args(int argc, char **argv, config_t *cfg, char *err,
                     size_t err_size);

/* --- reload.c --- */

/* The server's settings as server_start() and server_reconfigure() take
 * them, and the other stages' (pointers into cfg). */
void serve_update_config(const config_t *cfg, writer_t *writer,
                         builder_follower_t *follower, update_config_t *out);

/*
 * Starts a NOTIFY sender for cfg's notify list (pointers into cfg, which
 * must live as long as it) and puts it in place of the old one, which is
 * stopped. The follower calls serve_on_pass() (registered once).
 */
int serve_notify_replace(serve_ctx_t *ctx, config_t *cfg);

/* The follower's pass callback: cues the NOTIFY sender in place and the
 * signed view. */
void serve_on_pass(void *ctx);

/* The signed view's update callback: cues the NOTIFY sender in place
 * (the view announces new serials of signed zones). */
void serve_on_view_update(void *ctx);

/* Stops the NOTIFY sender and frees its configuration (at shutdown). */
void serve_notify_stop(serve_ctx_t *ctx);

/*
 * Reads the configuration again (the same config file and flags) and
 * applies every key that can change live; keys that need a restart are
 * named in the log and kept. An invalid configuration changes nothing.
 * Writes a summary to msg. ZC_EOK, or ZC_EINVAL_CONFIG when refused.
 */
int serve_reload(serve_ctx_t *ctx, char *msg, size_t msg_size);

/* --- control.c: the control socket --- */

typedef struct control control_t;

/*
 * Listens on ctx->control_path (mode 0600; a stale socket of a server
 * that is gone is replaced, a live one refused) and answers there from a
 * thread of its own until control_stop().
 */
int control_start(serve_ctx_t *ctx, control_t **out);

/* Stops the thread and removes the socket (NULL: no-op). */
void control_stop(control_t *c);

/* --- status.c --- */

struct json_t;

/* The server's status (`zonecast status --json` prints it). */
struct json_t *serve_status(serve_ctx_t *ctx);

/* Per zone: serials, signing, last change, build state, secondaries.
 * zone NULL: every zone. NULL with err set when the zone is unknown. */
struct json_t *serve_zone_status(serve_ctx_t *ctx, const char *zone,
                                 char *err, size_t err_size);

/* Logs every zone with its stored and served serial (at start). */
void serve_log_zones(const char *data_dir, edge_store_t *es);

/* --- heartbeat.c: this node among those sharing the records store --- */

typedef struct serve_heartbeat serve_heartbeat_t;

/*
 * On a PostgreSQL records store, starts the thread that writes this
 * node's row of `nodes` (node-name, pid, version, ctx->started_ms, the
 * builder's applied position and stall: ctx->follower, which must outlive
 * it) at once and every second, and sets the metrics' records-store-up
 * gauge from each beat. On SQLite, *out is NULL (no thread; the gauge
 * stays up). KNOT_ENOMEM when the thread cannot start.
 */
int serve_heartbeat_start(serve_ctx_t *ctx, serve_heartbeat_t **out);

/* Stops the thread and deletes the node's row (a clean stop) when the
 * store answered its last beat; NULL is a no-op. */
void serve_heartbeat_stop(serve_heartbeat_t *hb);

/* --- run_files.c --- */

/* Writes the pidfile (ZC_EOK; an existing one of a live process is
 * refused) and removes it. */
int serve_pidfile_write(const char *path);
void serve_pidfile_remove(const char *path);
