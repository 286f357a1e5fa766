/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to cli/: the subcommands of the zonecast command. */
#pragma once

#include <stdbool.h>

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

/* Creates the demo token of a fresh data dir (logged, and in DIR/demo-token). */
int cli_demo_token(const char *data_dir);

/* Creates the data directory (mode 0700) if needed. */
int cli_prepare_data_dir(const char *dir);

/* Finds the zone named `name` (text); prints "zonecast CMD: no zone NAME"
 * when it is not there (or is no name). */
int cli_find_zone(records_store_t *rs, const char *cmd, const char *name,
                  records_zone_t *zone);

/* Checks that an existing data directory can be written (read-only file
 * system, permissions); prints why not and returns -errno. */
int cli_writable_data_dir(const char *dir);

/* Opens both stores of a data directory; prints why on failure. */
int cli_open_stores(const char *dir, records_store_t **rs, edge_store_t **es);

/*
 * Imports a master file (path, or text when path is NULL) as zone `name`,
 * then builds it into the edge store. Errors go to stderr with file and
 * line. Shows progress when stderr is a terminal and `quiet` is false.
 */
int cli_import_zone(records_store_t *rs, edge_store_t *es, const char *name,
                    const char *path, const char *text, bool quiet);

/* The demo zone served by a fresh `zonecast serve`. */
extern const char cli_demo_zone_name[];
extern const char cli_demo_zone_text[];
