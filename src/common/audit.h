/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Audit lines: one line at info level for every accepted write and every
 * refused request (docs/operations.md lists them), with the facts an
 * operator needs as key=value fields (as JSON members in JSON format,
 * ZONECAST_* fields in the journal):
 *
 *   audit: update accepted zone=example.com. key=k1. client=192.0.2.1#5353
 *          added=1 deleted=0 serial=42
 *
 * Every line has `audit` (what: api, update, transfer, notify) and
 * `outcome` (accepted, refused) fields. Refusals answer whatever the
 * network sends, so they are limited to ZC_AUDIT_REFUSALS_PER_S lines a
 * second; the lines left out are counted in the next one that is written
 * (`suppressed=N`), so the log says how many it does not show.
 *
 * Build one on the stack: zc_audit_begin(), zc_audit_str()/_num() per
 * field, zc_audit_end(). Values are copied. Secrets must never be added.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

#define ZC_AUDIT_FIELDS_MAX 20
#define ZC_AUDIT_VALUES_MAX 1536
#define ZC_AUDIT_REFUSALS_PER_S 50

typedef struct {
	char message[64];
	zc_log_field_t fields[ZC_AUDIT_FIELDS_MAX];
	size_t count;
	char values[ZC_AUDIT_VALUES_MAX];
	size_t used;
	bool refused;
} zc_audit_t;

/* Starts a line "audit: WHAT OUTCOME" (outcome "accepted" or "refused"). */
void zc_audit_begin(zc_audit_t *a, const char *what, const char *outcome);

/* Adds key=value (copied; a value that does not fit is cut). */
void zc_audit_str(zc_audit_t *a, const char *key, const char *value);

/* Adds key=number. */
void zc_audit_num(zc_audit_t *a, const char *key, int64_t value);

/* Writes the line (info level), or counts it when refusals are being
 * suppressed. */
void zc_audit_end(zc_audit_t *a);
