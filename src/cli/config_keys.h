/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The config keys a reload can apply to a running server (live) and
 * those that need a restart (config_keys.c has the table).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cli/config.h"

/*
 * Calls changed(key, live, ctx) for every key whose value differs
 * between old_cfg and new_cfg, in the table's order; returns how many.
 */
size_t config_diff(const config_t *old_cfg, const config_t *new_cfg,
                   void (*changed)(const char *key, bool live, void *ctx),
                   void *ctx);

/* 1 when a key applies live, 0 when it needs a restart, -1 if unknown. */
int config_key_is_live(const char *key);

/* The table's keys, for checks that every key is classified. */
size_t config_key_count(void);
const char *config_key_name(size_t i);
