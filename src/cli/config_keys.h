/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The table of config keys (config_keys.c): what config_set() parses,
 * config_defaults() fills, a reload compares and `check-config --keys`
 * lists. config.c reads the file; config.h declares the setters.
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

/* Gives every key that needs a restart its value in running (a reload's
 * new configuration: what the stages are given is what runs). */
void config_keep_restart(config_t *cfg, const config_t *running);

/* 1 when a key applies live, 0 when it needs a restart, -1 if unknown. */
int config_key_is_live(const char *key);

/* The table's keys, for checks that every key is classified. */
size_t config_key_count(void);
const char *config_key_name(size_t i);

/* The table index of key, or -1 when there is no such key. */
int config_key_find(const char *key);

/* Whether key i may be repeated (a list: listen, log-target, notify...). */
bool config_key_repeatable(size_t i);

/* Empties the list of repeatable key i: a file's or the command line's
 * first value replaces the defaults instead of adding to them. */
void config_key_clear(config_t *cfg, size_t i);

/* The default of key i as it would be written in the file ("": none). */
void config_key_default(size_t i, char *out, size_t size);

/* The default as `check-config --keys` shows it: config_key_default(), or
 * for a key that starts empty and is filled in by its user, what it gets
 * ("127.0.0.1:5300" for listen, "stderr", "DATA_DIR/control.sock"). */
void config_key_default_shown(size_t i, char *out, size_t size);
