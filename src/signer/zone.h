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

/* Generates a CSK (or a KSK and a ZSK when split), publishes DNSKEY, CDS
 * and CDNSKEY. ZC_EEXISTS when the zone is signed already. */
int signer_zone_enable(records_store_t *rs, records_zone_t *zone,
                       uint8_t algorithm, bool split);

/* Removes the keys and their apex records. ZC_ENOKEY when unsigned. */
int signer_zone_disable(records_store_t *rs, records_zone_t *zone);

/*
 * Key rollover, one step per call (docs/dnssec.md has the timing):
 *   prepublish: a new key for the role (ksk: flags 257, zsk: 256), not
 *               signing yet, its DNSKEY published (a KSK's CDS and
 *               CDNSKEY too);
 *   activate:   the newest key of the role signs; older ones of the role
 *               stay published but stop signing;
 *   retire:     the role's keys that do not sign are removed with their
 *               DNSKEY, CDS and CDNSKEY.
 * ZC_ENOKEY when the zone is unsigned or the step has nothing to act on.
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
	int64_t created_on;
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
