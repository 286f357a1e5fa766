/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Checks of a configuration beyond its syntax (config_check.c): what
 * `zonecast check-config` reports and what makes a reload refuse a file.
 */
#pragma once

#include <stdbool.h>

#include "cli/config.h"

/*
 * Calls report(error, message, ctx) for every problem found: errors (the
 * server would not start, or would not do what the file says) and
 * warnings (legal, and likely a mistake). Returns the number of errors.
 */
int config_check(const config_t *cfg,
                 void (*report)(bool error, const char *msg, void *ctx),
                 void *ctx);

/* config_check() for a reload, running the configuration in force: a log
 * file it has open that cannot be created again (logrotate moved it, and
 * the service user may not create files in its directory) is a warning,
 * not an error (the reload keeps the file open, log.h). */
int config_check_reload(const config_t *cfg, const config_t *running,
                        void (*report)(bool error, const char *msg,
                                       void *ctx),
                        void *ctx);

/* What serve checks before it binds: config_check_listeners(), and the
 * warning on a log directory the service user cannot create files in.
 * Returns the errors. */
int config_check_serve(const config_t *cfg,
                       void (*report)(bool error, const char *msg, void *ctx),
                       void *ctx);

/* The clashes between the server's own listeners (listen, api-listen,
 * metrics-listen): the same address and port, or a wildcard address over
 * another of its family on the same port, each naming both keys. Part of
 * config_check(); serve runs it before it binds. Returns the errors. */
int config_check_listeners(const config_t *cfg,
                           void (*report)(bool error, const char *msg,
                                          void *ctx),
                           void *ctx);
