/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Signing a zone or not (signer/zone.c): key management over the records
 * store, shared by `zonecast dnssec` and the API. Each call runs inside the
 * caller's write transaction and gives the zone a new version.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "records/records.h"
#include "signer/signer.h"

/* TTL of the apex DNSKEY, CDS and CDNSKEY records signing publishes. */
#define SIGNER_DNSKEY_TTL 3600

/* Generates a CSK (or a KSK and a ZSK when split), publishes DNSKEY, CDS
 * and CDNSKEY. ZC_EEXISTS when the zone is signed already. */
int signer_zone_enable(records_store_t *rs, records_zone_t *zone,
                       uint8_t algorithm, bool split);

/* Removes the keys and their apex records. ZC_ENOKEY when unsigned. */
int signer_zone_disable(records_store_t *rs, records_zone_t *zone);

/*
 * The first step of turning signing off safely (RFC 8078 §4): the apex
 * CDS and CDNSKEY become the DELETE ones ("0 0 0 00", "0 3 0 AA=="), which
 * tell the parent (or its operator) to remove the DS; the zone stays
 * signed. ZC_ENOKEY when unsigned, ZC_EEXISTS when already published.
 */
int signer_zone_disable_begin(records_store_t *rs, records_zone_t *zone);

/* When the DELETE records were published (Unix ms), or KNOT_ENOENT. */
int signer_zone_disable_since(records_store_t *rs, const records_zone_t *zone,
                              int64_t *since_ms);

/* Cancels a disable begun: the KSKs' CDS and CDNSKEY again in place of
 * the DELETE ones. KNOT_ENOENT when none was begun. */
int signer_zone_disable_cancel(records_store_t *rs, records_zone_t *zone);

/*
 * Key rollover, one step per call (docs/dnssec.md has the timing):
 *   prepublish: a new key for the role (ksk: flags 257, zsk: 256), not
 *               signing yet, its DNSKEY published (a KSK's CDS and
 *               CDNSKEY too);
 *   activate:   the newest key of the role signs; older ones of the role
 *               stay published but stop signing;
 *   retire:     the role's keys that do not sign are removed with their
 *               DNSKEY, CDS and CDNSKEY.
 * ZC_ENOKEY when the zone is unsigned or the step has nothing to act on;
 * ZC_EDISABLING for a step that would publish CDS and CDNSKEY (ksk
 * prepublish) while a disable begun has the DELETE ones published (RFC
 * 8078 §4: that RRset holds only them).
 */
typedef enum { SIGNER_ROLL_PREPUBLISH, SIGNER_ROLL_ACTIVATE,
               SIGNER_ROLL_RETIRE } signer_roll_step_t;

int signer_zone_rollover(records_store_t *rs, records_zone_t *zone,
                         uint16_t flags, signer_roll_step_t step);

/* What can be shown of a key (never the private part). */
typedef struct {
	int64_t id;
	uint16_t tag;
	uint16_t flags;
	uint8_t algorithm;
	bool active;
	int64_t created_on;      /* Published (Unix ms). */
	int64_t active_on;       /* Began signing (0: never). */
	int64_t retired_on;      /* Stopped signing (0: signs or never did). */
	uint8_t ds[64];          /* DS rdata, SHA-256 */
	size_t ds_len;
	uint8_t dnskey[512];     /* DNSKEY rdata */
	size_t dnskey_len;
} signer_key_info_t;

int signer_zone_keys(records_store_t *rs, const records_zone_t *zone,
                     int (*cb)(const signer_key_info_t *info, void *ctx),
                     void *ctx);

/* "ZONE 3600 IN DS TAG ALG 2 HEX" */
int signer_ds_format(const records_zone_t *zone, const signer_key_info_t *info,
                     char *out, size_t size);

/* --- Timing of the steps (signer/timing.c) --- */

/* Added to every wait: time for secondaries to load a change (NOTIFY and
 * IXFR are quicker; BIND's zone-propagation-delay is the same 5 min). */
#define SIGNER_PROPAGATION_S 300
/* The parent's DS TTL when the operator does not say (.com, .net, .org
 * and most TLDs publish DS with a TTL of one day). */
#define SIGNER_DEFAULT_DS_TTL 86400

/* When a step may run, and what it waits for. */
typedef struct {
	int64_t earliest_ms;     /* Unix ms; 0: at once. */
	uint16_t tag;            /* The key the wait is about (0: none). */
	uint32_t wait_s;         /* The wait, propagation included. */
	char why[256];           /* "the new ZSK (tag 123) is in the DNSKEY
	                          * set since ...": what the wait covers. */
} signer_step_time_t;

/*
 * When a rollover step may run (docs/dnssec.md, "Key rollover"):
 *   activate: the role's newest key published for the DNSKEY TTL (a KSK:
 *             and for the parent's DS TTL, the new DS being at the parent),
 *   retire:   the role's keys that stopped signing retired for as long as
 *             their signatures may be cached: the zone's largest TTL
 *             (capped by the signatures' lifetime) after they last signed
 *             the zone's data (a ZSK: when it stopped; a KSK: when it
 *             stopped being the CSK, i.e. when a ZSK took over, if one
 *             did), and for a KSK the DNSKEY TTL after it stopped; keys
 *             that never signed go at once,
 *   prepublish: at once;
 * plus SIGNER_PROPAGATION_S. ZC_ENOKEY when the step has nothing to act on
 * (unsigned zone, no key in that state).
 */
int signer_step_time(records_store_t *rs, const records_zone_t *zone,
                     uint16_t flags, signer_roll_step_t step, uint32_t ds_ttl,
                     signer_step_time_t *out);

/* The same from the zone's keys (count of them) and its largest TTL:
 * the rules without the store (tests/unit/signer/test_timing.c). */
int signer_step_time_of(const signer_key_info_t *keys, unsigned count,
                        uint16_t flags, signer_roll_step_t step,
                        uint32_t ds_ttl, uint32_t max_ttl,
                        signer_step_time_t *out);

/* When the keys of a zone whose disable began may be removed: the DELETE
 * records published for the DS TTL. KNOT_ENOENT when none began. */
int signer_disable_time(records_store_t *rs, const records_zone_t *zone,
                        uint32_t ds_ttl, signer_step_time_t *out);

/* "2026-12-03T08:00:00Z" */
void signer_format_time(int64_t ms, char *out, size_t size);
