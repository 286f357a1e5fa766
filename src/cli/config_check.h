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
