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
 * network sends, so they are limited to a number of lines a second
 * (zc_audit_refusal_rate(), ZC_AUDIT_REFUSALS_PER_S unless set); the
 * lines left out are counted in the next one that is written
 * (`suppressed=N`) or, when none comes, in a line of their own
 * (zc_audit_flush()), so the log says how many it does not show.
 *
 * Build one on the stack: zc_audit_begin(), one call per field,
 * zc_audit_end(). Values are copied. Secrets must never be added.
 *
 * Every field added is in the line, whatever its length: the fields
 * take at most ZC_AUDIT_WIDTH_MAX octets as written (keys, quotes and
 * escapes counted), so a line is never cut by the log (log.h). When the
 * values would take more, those a client may choose (zc_audit_str(): a
 * zone or key name, a path, a reason that quotes a request) are
 * shortened, the longest first, each to no less than
 * ZC_AUDIT_SHOWN_MIN octets, between two characters (never inside a
 * name's \DDD escape or a UTF-8 sequence) and marked with "…" and their
 * full length: "\000\000…(1004 octets)". The values the server makes
 * (zc_audit_fixed(), zc_audit_num(): the client's address, an rcode, a
 * status, a version, record ids) are never shortened.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

#define ZC_AUDIT_FIELDS_MAX 16     /* With `suppressed`, which is kept room. */
#define ZC_AUDIT_VALUE_MAX 1024    /* Octets of one value kept (a name's
                                    * text, 1004, fits whole). */
#define ZC_AUDIT_WIDTH_MAX 1792    /* The fields' octets as written. */
#define ZC_AUDIT_SHOWN_MIN 64      /* A value shortened keeps this much. */
#define ZC_AUDIT_MARK_ROOM 32      /* "…(N octets)" */
#define ZC_AUDIT_REFUSALS_PER_S 50 /* The default of audit-refusal-rate. */

typedef struct {
	char message[64];
	zc_log_field_t fields[ZC_AUDIT_FIELDS_MAX];
	size_t full_len[ZC_AUDIT_FIELDS_MAX]; /* Of the value given. */
	bool fixed[ZC_AUDIT_FIELDS_MAX];      /* Never shortened. */
	size_t count;
	char values[ZC_AUDIT_FIELDS_MAX *
	            (ZC_AUDIT_VALUE_MAX + 1 + ZC_AUDIT_MARK_ROOM)];
	size_t used;
	bool refused;
} zc_audit_t;

/* Sets the refusal lines written a second (audit-refusal-rate); 0: every
 * one. Takes effect at once, from any thread. */
void zc_audit_refusal_rate(unsigned per_s);

/* Starts a line "audit: WHAT OUTCOME" (outcome "accepted" or "refused"). */
void zc_audit_begin(zc_audit_t *a, const char *what, const char *outcome);

/* Adds key=value, a value a client may choose (copied; shortened, with
 * its marker, when the line would be too long). NULL is "". */
void zc_audit_str(zc_audit_t *a, const char *key, const char *value);

/* Adds key=value, a short value the server makes: never shortened. */
void zc_audit_fixed(zc_audit_t *a, const char *key, const char *value);

/* Adds key=number. */
void zc_audit_num(zc_audit_t *a, const char *key, int64_t value);

/* Writes the line (info level), or counts it when refusals are being
 * suppressed. */
void zc_audit_end(zc_audit_t *a);

/*
 * The count of refusal lines left out that no later line carried yet,
 * written as a line of its own, "audit: refusals suppressed
 * suppressed=N", once their second is over (all: at once, at a stop).
 * Called about every second by the process's main thread: an attacker
 * who stops after a burst leaves no refusal uncounted.
 */
void zc_audit_flush(bool all);
