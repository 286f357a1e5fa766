/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to cli/: the subcommands of the zonecast command. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/config.h"
#include "edge/edge.h"
#include "records/records.h"

int cmd_serve(int argc, char **argv);
int cmd_zone(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_tsig(int argc, char **argv);
int cmd_dnssec(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_secondaries(int argc, char **argv);
int cmd_edge(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_migrate(int argc, char **argv);

/* The command line of a server command (serve, edge): the config file
 * first (-c), then every flag over it: -l (repeatable, replacing the
 * file's), -o KEY=VALUE (-o log-target= replacing the file's targets), a
 * flag naming a config key (flag_keys[c]), and other flags through `flag`.
 * 0, -1 after --help, or an exit status (1: the config file, 2: usage).
 * It may run again later in the process (a reload reads the same
 * arguments). */
typedef struct {
	const char *cmd;
	const char *shortopts;
	const struct option *opts;
	const char *const *flag_keys;   /* [128] */
	void (*usage)(FILE *out);       /* NULL: none printed. */
	void (*flag)(config_t *cfg, int c);
	char *err;                      /* Non-NULL: the first message goes */
	size_t err_size;                /* here, not to stderr (a reload). */
} cli_args_t;

int cli_parse_server_args(const cli_args_t *a, int argc, char **argv,
                          config_t *cfg);

/* The DNS server's settings from the config (listen addresses point into
 * cfg). */
void cli_server_config(const config_t *cfg, server_config_t *scfg);

/* Creates the demo token of a fresh data dir, written to DIR/demo-token
 * (mode 0600) and never to the log. */
int cli_demo_token(const char *data_dir);

/* Creates the data directory (mode 0700) if needed (serve, zone import
 * only); prints why not. */
int cli_prepare_data_dir(const char *dir);

/* Checks that dir is a zonecast data directory (it holds records.db);
 * prints "no zonecast data directory at DIR" and returns -ENOENT if not. */
int cli_require_data_dir(const char *dir);

/*
 * Makes dir the data directory of this process's `zonecast serve`: creates
 * it if needed and takes the exclusive lock on DIR/serve.lock, kept in
 * *lock_fd until the process exits. Prints why not (another serve holds
 * it: its pid; a command writing without a server: its name and pid) and
 * returns -errno (-EWOULDBLOCK when held).
 */
int cli_lock_data_dir(const char *dir, int *lock_fd);

/* Who holds a data directory's lock, as its lock file says (data_dir.c). */
#define CLI_HOLDER_SERVE "zonecast serve"
typedef struct {
	long pid;              /* 0: not written yet. */
	char who[64];          /* CLI_HOLDER_SERVE, "zonecast zone import"... */
	char control[4096];    /* A serve's control socket ("": not open yet,
	                        * "none": it has none; relative: to the data
	                        * directory). */
} cli_holder_t;

/* Whether the holder is a serve (or of a version that did not say). */
bool cli_holder_is_serve(const cli_holder_t *h);

/*
 * Takes DIR/serve.lock (dir must exist) for `who`, without waiting: 0 and
 * *lock_fd when taken (who and the pid written in it); when another
 * process holds it, 1 and *holder (holder NULL: said on stderr, and
 * -EWOULDBLOCK); or -errno, said on stderr.
 */
int cli_claim_data_dir(const char *dir, const char *who, int *lock_fd,
                       cli_holder_t *holder);

/* A serve names its control socket (control, "" for none) in its lock
 * file, once it listens there. */
void cli_note_control(int lock_fd, const char *dir, const char *control);

/* Finds the zone named `name` (text); prints "zonecast CMD: no zone NAME"
 * when it is not there (or is no name). */
int cli_find_zone(records_store_t *rs, const char *cmd, const char *name,
                  records_zone_t *zone);

/* Checks that an existing data directory can be written (read-only file
 * system, permissions); prints why not and returns -errno. */
int cli_writable_data_dir(const char *dir);

/* How messages name DIR's records store: "the records store URI (bound
 * to DIR)", its URI's password hidden, or "DIR/records.db". */
void cli_records_store_text(const char *dir, char *out, size_t size);

/* Opens both stores of a data directory; prints why on failure. With
 * create false the directory must be one already (cli_require_data_dir):
 * only serve and zone import create one. */
int cli_open_stores(const char *dir, bool create, records_store_t **rs,
                    edge_store_t **es);

/*
 * Opens a zone file for an import or a check: src gets the descriptor, the
 * name as given, and the file's directory (absolute, for relative
 * $INCLUDE; valid until the next call). Says why not on stderr.
 */
struct zone_source;
int cli_open_zone_file(const char *path, struct zone_source *src);

/*
 * Parses and checks a master file as zone `name` as an import would (the
 * same checks, the same messages), writing nothing. Prints the problems
 * to stderr with file and line and a summary; ZC_EOK when there are none,
 * ZC_EZONEFILE when there are.
 */
int cli_check_zone(const char *name, const char *path);

/* zonecast status | reload | stop | zone status (cmd_control.c); cmd is
 * one of those four. */
int cmd_control(const char *cmd, int argc, char **argv);

/* zonecast check-config, zonecast zone check (cmd_check.c). */
int cmd_check_config(int argc, char **argv);
int cmd_zone_check(int argc, char **argv);

/* A server command's (serve, edge) first instruction: SIGINT, SIGTERM and
 * SIGHUP blocked, for its main thread's loop to take (threads inherit
 * the mask), SIGPIPE ignored. A SIGHUP in serve's first milliseconds
 * killed it, with not a line logged (outside tester 37). */
void cli_hold_signals(void);

/* The demo zone served by a fresh `zonecast serve`. */
extern const char cli_demo_zone_name[];
extern const char cli_demo_zone_text[];
