/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared inside fleet/: the NATS connection, names, snapshots. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <nats/nats.h>

#include "edge/edge.h"
#include "edge/repl.h"
#include "fleet/fleet.h"

#define FLEET_STR_MAX 256

/* Zc-Flags of a message that only announces a new history (never
 * applied; beside EDGE_REPL_FINAL and EDGE_REPL_CONT). */
#define FLEET_MARKER 0x80

typedef struct {
	char txn_stream[FLEET_STR_MAX];   /* <prefix>-txn */
	char txn_subject[FLEET_STR_MAX];  /* <prefix>.txn */
	char snap_stream[FLEET_STR_MAX];  /* <prefix>-snap */
	char snap_head[FLEET_STR_MAX];    /* <prefix>.snap.head */
	char snap_data[FLEET_STR_MAX];    /* <prefix>.snap.data */
	char bucket[FLEET_STR_MAX];       /* <prefix>-edges */
} fleet_names_t;

int fleet_names(const char *prefix, fleet_names_t *names);

/* One attempt to connect (then reconnecting for ever once connected). */
int fleet_connect(const fleet_config_t *cfg, natsConnection **nc,
                  jsCtx **js);

/* Connects, trying again every 500 ms (logging) until it succeeds or *stop;
 * sets *nc and *js under lock (stop() closes the connection). */
int fleet_connect_retry(const fleet_config_t *cfg, _Atomic bool *stop,
                        pthread_mutex_t *lock, natsConnection **nc, jsCtx **js);

/* Whether the library closed this connection for good (the server
 * closed it on a protocol error, e.g. a message above its max_payload):
 * it never reconnects, it must be replaced (fleet_conn_renew()). A
 * connection that took a max_payload below FLEET_PAYLOAD_MIN at its
 * start is closed here and counts so too: the library holds the limit
 * it read then, and refuses every message over it itself, so a server
 * whose limit was raised since is seen only by a new connection (the
 * publisher stayed stuck on 300 bytes after the server went back to
 * 1 MiB). */
bool fleet_conn_closed(natsConnection *nc);

/* A thread's record of the connections it replaced (backoff). */
typedef struct {
	int64_t last_ms;
	unsigned wait_ms;
	unsigned count;
	int64_t logged_ms;  /* Renewals are logged at most every 30 s. */
} fleet_renew_t;

/* Replaces a closed connection (*nc, *js set to NULL under lock, then
 * destroyed): logged with the library's reason, waits (250 ms doubling
 * to 8 s when it happens again within 30 s), then fleet_connect_retry().
 * Whatever was made on the old one (KV handles, watchers, subscriptions)
 * must be made again by the caller. */
int fleet_conn_renew(const fleet_config_t *cfg, const char *who,
                     _Atomic bool *stop, pthread_mutex_t *lock,
                     natsConnection **nc, jsCtx **js, fleet_renew_t *r);

/* The primary creates the streams and the bucket, or makes the streams'
 * settings the fleet depends on (retention, subjects, storage, discard,
 * limits) what it needs: updated, or deleted and created again when the
 * server refuses the update. expected: they should exist (one missing is
 * logged: deleted). *changed (may be NULL) gets which were created or
 * changed (their content may be gone). */
#define FLEET_TXN_CHANGED 1u
#define FLEET_SNAP_CHANGED 2u
#define FLEET_BUCKET_CHANGED 4u
int fleet_ensure_streams(const fleet_config_t *cfg, const fleet_names_t *n,
                         jsCtx *js, bool expected, unsigned *changed);

/* nats.c's status as a zonecast code, logged once with what failed
 * (kept for fleet_nats_last_error()). */
int fleet_nats_error(natsStatus s, jsErrCode jerr, const char *what);

/* The replication headers of a txn stream message (Zc-Epoch in hex, the
 * others decimal; Zc-Term absent from a zonecast's before leadership:
 * term 0). */
typedef struct {
	uint64_t epoch, commit, part, flags, term;
} fleet_headers_t;

typedef enum {
	FLEET_HEADERS_OK = 0,
	FLEET_HEADERS_NONE,     /* not zonecast's: a header missing or bad */
	FLEET_HEADERS_BAD_TERM, /* a Zc-Term that does not read */
} fleet_headers_read_t;

/* Reads msg's replication headers into *h (the edges' take() and the
 * primary's look at foreign messages read them alike). */
fleet_headers_read_t fleet_headers_read(natsMsg *msg, fleet_headers_t *h);

/* What the last fleet_nats_error() of this thread said failed, and why. */
const char *fleet_nats_last_error(void);

/* The least max_payload the fleet works with (fleet_connect() says so
 * when the server's is lower). */
#define FLEET_PAYLOAD_MIN 512

/* Room left for headers in a message (ids, positions, fence). */
#define FLEET_HEADER_ROOM 1024

/* The largest payload of one message the server connected to accepts,
 * less header room, at most EDGE_REPL_PART_MAX (its max_payload may be
 * lower than a part: parts are cut again to fit). */
size_t fleet_payload_max(natsConnection *nc);

/* Sets header (Nats-Expected-Last-Sequence or -Subject-Sequence) to seq,
 * 0 included: JetStream stores msg only if the stream (or its subject)
 * ends at seq, 0 meaning empty (nats.c's options leave 0 out). */
natsStatus fleet_expect_last(natsMsg *msg, const char *header, uint64_t seq);

int64_t fleet_now_ms(void);
/* This host's monotonic clock (ms): for ages measured here only. */
int64_t fleet_mono_ms(void);
void fleet_sleep_ms(unsigned ms);

/* A snapshot's manifest (JSON on the head subject). */
typedef struct {
	uint64_t epoch;
	uint64_t term;     /* the publishing leader's (0: no leadership) */
	uint64_t commit;
	uint32_t parts;
	uint64_t txn_seq;  /* first txn stream sequence to read after it */
	char id[96];       /* epoch-commit-term-nonce */
	uint64_t head_seq; /* its snapshot stream sequence (not in the JSON) */
} fleet_manifest_t;

/* Publishes a snapshot of es (messages of at most piece_max bytes:
 * fleet_payload_max()) and its manifest, the manifest only if the
 * newest one is still the one at stream sequence head_seq (0: none):
 * ZC_ESTALE when another was published meanwhile. *m gets the manifest. */
int fleet_snapshot_publish(jsCtx *js, const fleet_names_t *n,
                           edge_store_t *es, size_t piece_max, uint64_t term,
                           uint64_t txn_seq, uint64_t head_seq,
                           fleet_manifest_t *m, uint64_t *bytes);

/* Publishes manifest m, only over the one at stream sequence m->head_seq
 * (then m->head_seq is the new one's): ZC_ESTALE when another came
 * meanwhile. */
int fleet_manifest_publish(jsCtx *js, const fleet_names_t *n,
                           fleet_manifest_t *m);

/* Reads the newest manifest: ZC_EOK, ZC_ENOZONE when there is none, or
 * ZC_EFORMAT when it cannot be read (forged); then m->head_seq alone is
 * set (a leader replaces it). */
int fleet_manifest_get(jsCtx *js, const fleet_names_t *n,
                       fleet_manifest_t *m);

/* The leader term a snapshot id names (0: an id from before terms). */
uint64_t fleet_snapshot_id_term(const char *id);

/* Loads the snapshot of manifest m into es in one transaction, with its
 * term (meta "fleet_term": the caller loads none older than the term kept
 * there). */
int fleet_snapshot_load(jsCtx *js, const fleet_names_t *n, edge_store_t *es,
                        const fleet_manifest_t *m);

/* Purges what the snapshot with this id left in the snapshot stream. */
int fleet_snapshot_purge(jsCtx *js, const fleet_names_t *n, const char *id);
