/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * How a secondary is named in the configuration, the API and the CLI:
 *
 *   notify target   "ADDR[:PORT] [key NAME]"  (IPv6: "[ADDR6]:PORT" or a
 *                    bare ADDR6; PORT defaults to 53): NOTIFY sent there,
 *                    signed with the TSIG key NAME when one is given;
 *   allow-transfer  "ADDR[/PREFIX]" (unsigned AXFR/IXFR from there) or
 *                    "key NAME" (transfers signed with that key).
 *
 * Parsing only: the notifier (notify.c) and the transfer checks
 * (transfer.c) use the results.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <libknot/consts.h>

#include "common/acl.h"

#define SECONDARY_TEXT_MAX 384

typedef struct {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	bool has_key;
	uint8_t key[KNOT_DNAME_MAXLEN];   /* Key name, wire, lowercase. */
} secondary_notify_t;

/* Parses a notify target. ZC_EUSAGE with a message in err when it does
 * not parse. */
int secondary_notify_parse(const char *text, secondary_notify_t *out,
                           char *err, size_t err_size);

/* Formats a notify target back as "ADDR:PORT" or "[ADDR6]:PORT", plus
 * " key NAME" when with_key and it has one. */
void secondary_notify_format(const secondary_notify_t *t, bool with_key,
                             char *out, size_t size);

/* Key names allowed to transfer (allow-transfer "key NAME" entries). */
#define SECONDARY_KEYS_MAX 64

typedef struct {
	uint8_t name[SECONDARY_KEYS_MAX][KNOT_DNAME_MAXLEN]; /* Lowercase. */
	size_t count;
} secondary_keys_t;

/*
 * Parses an allow-transfer entry into acl (an address or prefix) or keys
 * ("key NAME"). ZC_EUSAGE with a message in err when it does not parse or
 * the list is full.
 */
int secondary_acl_parse(const char *text, zc_acl_t *acl,
                        secondary_keys_t *keys, char *err, size_t err_size);

/* True when name (wire, any case) is in keys. */
bool secondary_keys_has(const secondary_keys_t *keys, const uint8_t *name);
