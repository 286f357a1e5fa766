/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to the NOTIFY sender (notify*.c): its state and the functions
 * its files share. The design is told atop notify.c.
 *
 * The files, each above the ones it calls:
 *
 *   notify_targets.c   the per-secondary state: the table of targets,
 *                      each zone's slot per target, the flights per target
 *   notify_message.c   one NOTIFY: the serial to announce, the SOA, the
 *                      TSIG key, the signed message sent
 *   notify_schedule.c  when NOTIFYs go out: coalescing, resends with
 *                      back-off, giving up
 *   notify_response.c  responses: matched to their NOTIFY, checked,
 *                      refusals logged and noted
 *   notify_zones.c     which zones and targets there are: the edge
 *                      store's zones merged in, the zones' own targets
 *   notify.c           the thread, start and stop
 *
 * Only the notifier thread touches this state, except the cue and stop
 * flags (atomics).
 */
#pragma once

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <libknot/consts.h>

#include "dns/tsig_client.h"
#include "edge/edge.h"
#include "records/records.h"
#include "transfer/secondary.h"
#include "transfer/transfer.h"

/* NOTIFYs outstanding per target at most; slots past that wait for a
 * scan. */
#define NOTIFY_MAX_IN_FLIGHT 256
/* Room for a NOTIFY or its response. */
#define NOTIFY_BUF 2048

typedef struct {
	int64_t deadline;       /* Monotonic ms of the next resend. */
	uint32_t target;        /* Index in notify_t.targets. */
	uint32_t done_serial;   /* Last serial answered or given up. */
	uint32_t sent_serial;   /* In flight: the serial sent. */
	uint16_t id;
	uint16_t tries;         /* Sends of the NOTIFY in flight. */
	bool has_done;
	bool in_flight;
	bool refused;           /* The last response refused it. */
	uint8_t mac_len;        /* Signed: the request MAC, for the */
	uint8_t mac[64];        /* response check. */
} notify_slot_t;

typedef struct {
	uint32_t serial;        /* As last listed or read. */
	bool hold;              /* Signed, its view not built: no NOTIFY. */
	int64_t zone_id;
	uint8_t *apex;          /* Allocated with the zone. */
	size_t slot_count;
	notify_slot_t *slots;
} notify_zone_t;

typedef struct {
	notify_zone_t *zone;
	uint32_t slot;
	uint16_t id;
} notify_flight_t;

/* A zone's own notify target (records store, zone_secondaries). */
typedef struct {
	int64_t zone_id;
	secondary_notify_t spec;
} notify_zone_target_t;

typedef struct {
	secondary_notify_t spec;
	char name[INET6_ADDRSTRLEN + 8 + KNOT_DNAME_TXT_MAXLEN]; /* For logs. */
	unsigned users;         /* Slots naming it (+1 when server-wide). */
	notify_flight_t *flights;
	size_t flight_count, flight_cap;
	bool answers;           /* Its last NOTIFY got a response. */
	unsigned refused;       /* Slots whose last response refused. */
	uint32_t refusal;       /* rcode << 16 | TSIG error, as last logged. */
	bool key_warned;        /* The key could not be used (logged). */
} notify_target_t;

struct notify {
	pthread_t thread;
	bool started;
	edge_store_t *edge;
	const char *data_dir;
	records_store_t *rs;    /* TSIG keys; opened at first use. */
	unsigned retries;
	unsigned timeout_ms;
	int (*zone_serial)(void *ctx, int64_t zone_id, uint32_t *serial);
	void *zone_serial_ctx;
	int efd;                /* The cue. */
	int fd4, fd6;
	atomic_bool cue;
	atomic_bool stop;
	notify_target_t *targets;
	size_t target_count, target_cap;
	size_t global_count;    /* Targets 0.. are the server-wide ones. */
	notify_zone_target_t *zone_targets; /* Per-zone ones, by zone id. */
	size_t zone_target_count;
	uint64_t secondaries_version; /* records_secondaries_version() */
	bool secondaries_loaded;
	int64_t secondaries_checked;  /* Monotonic ms of the last check. */
	notify_zone_t **zones;        /* Sorted by apex LF. */
	size_t zone_count;
	bool backlog;           /* A slot waits for a free flight. */
	edge_txn_t txn;
	uint32_t rng;
};

static inline int64_t notify_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- Targets, slots and flights (notify_targets.c) --- */

/* Same address family, address and port. */
bool notify_same_addr(const struct sockaddr_storage *a,
                      const struct sockaddr_storage *b);

/* True when a target with this address and key is in the table. */
bool notify_target_listed(const notify_t *n, const secondary_notify_t *spec);

/* The index of the target, added to the table when new, with one more
 * user (the caller's); -1 without memory. */
long notify_target_acquire(notify_t *n, const secondary_notify_t *spec);

/* Adds the slot's NOTIFY (its current id) to its target's flights; false
 * without memory. */
bool notify_flight_add(notify_t *n, notify_zone_t *zone, uint32_t slot);

/* Forgets the flight of a slot, if any (a flight is free: backlog). */
void notify_flight_drop(notify_t *n, notify_zone_t *zone, uint32_t slot);

/* Gives the zone one slot per target it has now (the server-wide ones
 * and its own), keeping the state of the targets it keeps. */
int notify_zone_retarget(notify_t *n, notify_zone_t *zone);

/* A zone as listed (z), with its slots; NULL without memory. */
notify_zone_t *notify_zone_new(notify_t *n, const edge_zone_t *z);

/* Forgets the zone's NOTIFYs in flight, then frees it. */
void notify_zone_free(notify_t *n, notify_zone_t *zone);

/* --- One NOTIFY (notify_message.c) --- */

/* Opens the records store (TSIG keys, zones' secondaries) at first use. */
int notify_records_open(notify_t *n);

/* Loads the target's TSIG key into c; a failure is logged once per target
 * until the key works again. */
int notify_load_key(notify_t *n, notify_target_t *tg, dns_tsig_client_t *c);

/* The serial to announce for z, read in txn: the edge's, or for a signed
 * zone the signed view's. False while a signed zone has no view yet. */
bool notify_announced_serial(notify_t *n, edge_txn_t *txn,
                             const edge_zone_t *z, uint32_t *serial);

/* Builds, signs when the target has a key, and sends the slot's NOTIFY
 * with the zone's current SOA; counts a try and sets the next deadline.
 * An error when not sendable (zone gone, key unusable, no view yet). */
int notify_send(notify_t *n, notify_zone_t *zone, uint32_t slot);

/* --- When NOTIFYs go out (notify_schedule.c) --- */

/* Starts a NOTIFY for the slot if its serial moved (or lets it wait for
 * the one in flight: coalescing). */
void notify_start_slot(notify_t *n, notify_zone_t *zone, uint32_t slot);

/* Starts every NOTIFY due. */
void notify_scan(notify_t *n);

/* Resends or gives up NOTIFYs past their deadline; returns the time to
 * the next deadline in ms (-1: none). */
int notify_expire(notify_t *n);

/* --- Responses (notify_response.c) --- */

/* Reads every response waiting on fd and completes their NOTIFYs. */
void notify_receive(notify_t *n, int fd);

/* --- Zones and their own targets (notify_zones.c) --- */

/* Reloads the zones' own targets if they changed, lists the edge store's
 * zones (new ones added, gone ones dropped, serials refreshed), then
 * starts what is due. */
void notify_refresh(notify_t *n);
