/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the secondaries did last, per zone: the last NOTIFY sent to each
 * notify target and how it was answered, the last transfer each client
 * asked for and how it ended. The notifier and the transfer threads note
 * it here; `zonecast zone status` (the control socket) reads it.
 *
 * One table for the process (a mutex around a hash of the zone), written
 * once per NOTIFY and per transfer: never on the query path. It holds at
 * most TRANSFER_ACTIVITY_PER_ZONE peers a zone and TRANSFER_ACTIVITY_MAX
 * in all; past either, a new peer takes the place of the least recently
 * noted one whose last word was a refused transfer, or, when it is no
 * refusal itself, of the least recently noted one. So clients refused
 * from many addresses (an IPv6 /64) neither grow it nor push the
 * secondaries out, and the peers of deleted zones give way to new ones
 * (it kept every pair and, once full, noted nothing more: outside tester
 * 33).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/acl.h"

#define TRANSFER_ACTIVITY_MAX 65536
#define TRANSFER_ACTIVITY_PER_ZONE 64

typedef struct {
	char peer[320];                  /* Notify target, or client address. */
	bool notified;
	uint32_t notify_serial;
	int64_t notify_ms;               /* Unix ms of the last change. */
	char notify_result[48];          /* "sent", "answered", "refused
	                                  * (REFUSED)", "no response" */
	unsigned notify_tries;
	bool transferred;
	char transfer_kind[8];           /* "AXFR", "IXFR" */
	uint32_t transfer_serial;
	int64_t transfer_ms;
	char transfer_result[96];        /* "done", "failed: ...",
	                                  * "refused: ..." */
} transfer_activity_t;

/* Notes a NOTIFY of serial to peer ("ADDR:PORT") for apex (wire). */
void transfer_activity_notify(const uint8_t *apex, const char *peer,
                              uint32_t serial, unsigned tries,
                              const char *result);

/* Notes a transfer of apex (wire) asked by client. */
void transfer_activity_transfer(const uint8_t *apex,
                                const struct sockaddr_storage *client,
                                const char *kind, uint32_t serial,
                                const char *result);

/* Calls cb for every peer noted for apex, in no particular order (cb
 * returns non-zero to stop). Copies are passed: cb may take its time. */
void transfer_activity_list(const uint8_t *apex,
                            int (*cb)(const transfer_activity_t *a,
                                      void *ctx),
                            void *ctx);
