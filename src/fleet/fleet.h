/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fleet: edge servers fed through NATS JetStream.
 *
 * Design
 *
 * The primary's edge store records every write transaction in its outbox
 * (edge/repl.h). The primary's publisher sends the outbox, in commit order,
 * to the JetStream stream "<prefix>-txn" (subject "<prefix>.txn"), one
 * message per part (or several, when the server's max_payload is below a
 * part), and deletes whole commits JetStream acknowledged; message ids
 * "<epoch>.<commit>.<message>.<size>" make a resend after a crash a
 * no-op. Snapshots
 * of the whole edge store go to the stream "<prefix>-snap" (one message per
 * part on "<prefix>.snap.data.<id>.<n>", a manifest on "<prefix>.snap.head",
 * one message per subject kept): a new edge, or one that fell behind what
 * the txn stream keeps, loads the newest snapshot in one LMDB transaction
 * and follows the stream from the manifest's position. After each snapshot
 * the txn stream is purged up to the previous snapshot's position, so its
 * size stays bounded.
 *
 * An edge (zonecast edge) follows the txn stream with an ephemeral
 * consumer whose sequence it checks (a skip: it subscribes again),
 * applies the parts of each commit in one LMDB transaction (whole commits,
 * so whole zone versions), skips what it applied and bootstraps again on a
 * gap or a new epoch. It reports its position (epoch, commit) to the
 * key-value bucket "<prefix>-edges" after each commit and every second.
 * The primary watches that bucket: an edge serves zone version N when its
 * commit is at least the commit that made N (kept per zone in a ring as
 * the publisher sends); an edge silent for `edge_timeout_ms` (on the
 * primary's own monotonic clock) is down.
 *
 * JetStream carries durability and replication; nothing here
 * acknowledges a client: the primary's own acknowledgement rules hold.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edge/edge.h"

#define FLEET_NAME_MAX 64

typedef struct {
	const char *urls;        /* "nats://h:p[,nats://h:p...]" */
	const char *user;        /* user/password, or token, or creds file */
	const char *password;
	const char *token;
	const char *creds_file;  /* NKey/JWT credentials (.creds) */
	bool tls;                /* require TLS (also implied by tls:// urls) */
	const char *tls_ca;      /* CA file to trust */
	const char *tls_cert;    /* client certificate and key */
	const char *tls_key;
	const char *prefix;      /* subjects, streams, bucket (default zonecast) */
	const char *name;        /* this process's name (edges: required) */
	uint64_t snapshot_bytes; /* a snapshot after this many bytes sent */
	int64_t stream_max_bytes;/* txn stream limit (oldest dropped) */
	int replicas;            /* JetStream replicas of streams and bucket */
	unsigned edge_timeout_ms;/* an edge silent this long is down */
} fleet_config_t;

/* Fills defaults for unset fields (prefix, sizes, timeouts). */
void fleet_config_defaults(fleet_config_t *cfg);

/* --- The primary: publisher and receipts --- */

typedef struct fleet_primary fleet_primary_t;

/*
 * Leadership, when several primaries could publish to one fleet (nodes
 * sharing a PostgreSQL records store, records_leader_*): the primary
 * publishes only while it leads. take() blocks until this process leads
 * (ZC_EOK and its term: a number that only grows across the fleet) or
 * *stop; held() says whether it still leads (called often: cheap);
 * confirm() asks the source of truth whether it leads with the newest
 * term at this moment (ZC_EOK; anything else: it does not, or cannot
 * tell); drop() gives leadership up.
 *
 * Fencing. Every message and snapshot manifest carries the publisher's
 * term (header Zc-Term, manifest "term"). Every publish to the txn stream
 * names the stream sequence it expects last (Nats-Expected-Last-Sequence)
 * and every manifest the sequence of the manifest it replaces
 * (Nats-Expected-Last-Subject-Sequence), as read before confirm() said
 * this process leads: once a newer leader has published, an older one's
 * publish is refused by JetStream itself, and the older one steps down
 * (ZC_EFENCED) when confirm() says so (a term read from NATS could be
 * forged). A leader never purges the snapshot of a newer term (the id
 * names its term). Edges remember the highest term they saw (in their
 * store, with the snapshot that raised it) and drop messages and
 * snapshots of an older one, so an old leader that wakes from a pause
 * changes no edge, even through a manifest.
 *
 * Catching up (catchup.c). A leader publishes its own edge store, which
 * its own builder makes from the records store and which may lag behind
 * the store (a backlog, a long full build, a stalled build). So, with
 * head() (the records store's newest change-log position now, read while
 * leading) and built() (the position this node's build has applied): a
 * new leader begins its history only once built() reached the head() read
 * right after take(), waiting at most 3 s, else it gives the lead back;
 * a leader whose build has not moved for 3 s while head() is ahead of it
 * steps down. Either way it tries to lead again only once built() reached
 * the head it saw. So no leader's snapshot is older than what the leader
 * before it published, and a node whose build is stuck leaves the lead to
 * one whose build goes on. head and built NULL: no such checks.
 */
typedef struct {
	int (*take)(void *ctx, const _Atomic bool *stop, uint64_t *term);
	bool (*held)(void *ctx);
	int (*confirm)(void *ctx);
	void (*drop)(void *ctx);
	int (*head)(void *ctx, uint64_t *pos);
	int (*built)(void *ctx, uint64_t *pos);
	void *ctx;
} fleet_leadership_t;

/* Starts publishing (connecting in the background: a NATS server that is
 * down is retried for ever). Without leadership (NULL) it turns recording
 * on in es now and publishes for ever; with it, recording is off until
 * this process leads, and each term begins a new history (edges load its
 * snapshot). */
int fleet_primary_start(const fleet_config_t *cfg,
                        const fleet_leadership_t *leadership,
                        edge_store_t *es, fleet_primary_t **out);
void fleet_primary_stop(fleet_primary_t *fp);

/* Whether this primary publishes now (always, without leadership) and
 * its term (0 without leadership). */
void fleet_leading(fleet_primary_t *fp, bool *leading, uint64_t *term);

typedef struct {
	char name[FLEET_NAME_MAX];
	bool up;            /* reported within edge_timeout_ms */
	bool live;          /* up and serves the version asked */
	bool duplicate;     /* two processes report under this name */
	bool version_known;
	uint32_t version;   /* zone version it serves (when known) */
	uint64_t commit;    /* its position in the primary's log */
	uint64_t term;      /* the leader term it follows (its report) */
	bool same_history;  /* it follows this primary's history */
	uint64_t lag_commits;
	int64_t lag_ms;     /* age of the oldest commit it lacks */
	int64_t last_seen_ms; /* wall clock (ms since the epoch), when this
	                       * process saw its last report */
} fleet_edge_status_t;

/*
 * Every edge known (reported at least once since this process started),
 * with whether it serves `version` of the zone (zone_id 0: no zone, live
 * means "has every commit"). Returns the count (at most max).
 */
size_t fleet_edges(fleet_primary_t *fp, uint64_t zone_id, uint32_t version,
                   fleet_edge_status_t *out, size_t max);

/*
 * Whether the primary reads its edges' reports now (its NATS connection
 * for them is up and its watch of the bucket runs); when not, why (for
 * receipts: while it cannot see its edges, it calls nothing live at
 * them, which differs from edges that are all down: seen silent).
 */
bool fleet_edges_seen(fleet_primary_t *fp, char *why, size_t size);

/* The primary's position: last commit given out and last one sent. */
void fleet_position(fleet_primary_t *fp, uint64_t *epoch, uint64_t *committed,
                    uint64_t *published, bool *connected);

/* Waits up to ms for an edge report or a publish. */
void fleet_wait(fleet_primary_t *fp, unsigned ms);

/* --- An edge --- */

typedef struct fleet_edge fleet_edge_t;

/* Follows the stream into es (connecting in the background). */
int fleet_edge_start(const fleet_config_t *cfg, edge_store_t *es,
                     fleet_edge_t **out);

/* The edge's applied position (epoch 0: nothing loaded yet) and whether
 * its NATS connection is up (the metrics endpoint's view). */
void fleet_edge_position(fleet_edge_t *fe, uint64_t *epoch, uint64_t *commit,
                         bool *connected);

/* The highest leader term this edge has seen, and how many messages and
 * snapshots of older terms it dropped (fenced). */
void fleet_edge_fencing(fleet_edge_t *fe, uint64_t *term, uint64_t *fenced);
void fleet_edge_stop(fleet_edge_t *fe);
