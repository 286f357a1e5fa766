/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The signed view: every DNSSEC-signed zone as standard secondaries
 * receive it by AXFR and IXFR, signed ahead of time (RFC 4035): an RRSIG
 * for every authoritative RRset and a standard NSEC chain, which BIND,
 * Knot and NSD serve as they are. zonecast's own answers keep signing
 * online with compact denial (docs/dnssec.md); the view is only what
 * transfers of signed zones carry.
 *
 * Design
 *
 * A thread follows the edge store (cued by every builder pass, like the
 * notifier): for each signed zone whose edge serial moved past the view's,
 * it reads, in one edge read transaction, the zone's new serial E and the
 * nodes the records journal says changed since the view's serial S
 * (records_journal_read(S, E)), and in one SQLite transaction of
 * DATA_DIR/signed.db (db.h) brings the view to E:
 *
 *   - each changed node: its unsigned RRsets copied from the edge, the
 *     RRSIG of every changed RRset made (ZSK; KSK for DNSKEY, CDS and
 *     CDNSKEY), those of removed RRsets dropped; below a zone cut or a
 *     DNAME nothing is signed (glue), at a cut only DS is;
 *   - the NSEC of each changed node and of its predecessor in the chain
 *     (the names in canonical order, which is the key order of both
 *     stores) made again and re-signed where it changed;
 *   - the SOA of serial E signed;
 *   - up to VIEW_REFRESH_BATCH signatures that expire within
 *     VIEW_REFRESH_BEFORE made again;
 *   - the exact RR changes recorded as the journal entry S -> E, so IXFR
 *     from S is those changes (a one-record change: the RRset, its
 *     RRSIG, the neighbouring NSECs and their RRSIGs, the SOA's RRSIG).
 *
 * When the records journal cannot say what changed (a zone-wide change:
 * an import, settings, a key rollover step), or the signing keys changed,
 * the zone is brought up by a full pass: every edge node compared with
 * the view, every chain NSEC checked, everything re-signed when the keys
 * changed. Its changes are journaled when they are few, else IXFR from an
 * older serial is answered in AXFR form. A version whose SOA fields or
 * TTL changed journals the SOA it replaced (deleted) and the new one
 * (added): IXFR's difference starts with the client's SOA exactly.
 *
 * Signatures are valid VIEW_VALIDITY plus a jitter of up to
 * VIEW_JITTER (spread by owner and type, so a zone signed at once does not
 * expire at once) from an inception an hour back. A zone that does not
 * change gets a version of its own when signatures are due: the view asks
 * for it (config.touch, records_zone_touch() through the writer) at most
 * once a minute, and refreshes a batch in it: one IXFR per batch.
 *
 * The view serves transfers only at versions it built, which are edge
 * versions: NOTIFY for a signed zone waits for the view
 * (sigview_zone_serial()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/mm_ctx.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "edge/edge.h"
#include "records/records.h"

/* Signature validity (seconds) and when a signature is made again. */
#define VIEW_VALIDITY (14 * 86400)
#define VIEW_JITTER (3 * 86400 + 43200)
#define VIEW_REFRESH_BEFORE (7 * 86400)
#define VIEW_INCEPTION_BACK 3600
/* Signatures refreshed at most per version. */
#define VIEW_REFRESH_BATCH 2000
/* Changes of a version past which it is not journaled (AXFR form). */
#define VIEW_JOURNAL_MAX_CHANGES 100000

/*
 * The timing above, in seconds (and the batch size). The defaults are
 * the constants; ZONECAST_SIGVIEW_VALIDITY=S in the environment scales
 * them all down to a validity of S seconds (jitter S/4, refresh S/2
 * before expiry, checks every S/20 seconds, at least 1), so that tests
 * can watch signatures being refreshed.
 */
typedef struct {
	uint32_t validity;
	uint32_t jitter;
	uint32_t refresh_before;
	uint32_t check_every;      /* How often zones are checked for it. */
	size_t batch;
} sigview_timing_t;

/* The timing in force (environment read once). */
const sigview_timing_t *sigview_timing(void);

typedef struct sigview sigview_t;

typedef struct {
	const char *data_dir;
	edge_store_t *edge;
	/* Gives the zone a version without record changes (signature
	 * refresh); runs on the view's thread. NULL: signatures are only
	 * refreshed with the zone's own changes. */
	int (*touch)(void *ctx, int64_t zone_id);
	void *touch_ctx;
	/* Called after the view moved a zone (the notifier's cue). */
	void (*on_update)(void *ctx);
	void *on_update_ctx;
	unsigned journal_retention_s;   /* 0: kept forever. */
} sigview_config_t;

/* Opens DATA_DIR/signed.db and starts the thread; every signed zone is
 * brought up to date at once. Stop with sigview_stop(). */
int sigview_start(const sigview_config_t *cfg, sigview_t **out);

/* A reload's journal-retention (the change log's: writer_reconfigure());
 * the next trim keeps to it (NULL: no-op). */
void sigview_reconfigure(sigview_t *v, unsigned journal_retention_s);

/* The cue (a builder pass happened); never blocks. ctx: the sigview_t. */
void sigview_on_pass(void *ctx);

/* Stops and joins the thread and frees v (NULL: no-op). */
void sigview_stop(sigview_t *v);

/*
 * For the notifier: the serial of a signed zone's view (1, *serial set),
 * -1 while the view has not built the zone (send nothing yet). Thread-safe.
 * ctx: the sigview_t.
 */
int sigview_zone_serial(void *ctx, int64_t zone_id, uint32_t *serial);

/*
 * Brings every signed zone of the edge store up to date in the caller's
 * thread (tests, `zonecast verify`-like tools). ZC_EOK when done.
 */
int sigview_sync(const char *data_dir, edge_store_t *edge);

/* --- Reading the view (transfers; read.c) --- */

typedef struct sigview_reader sigview_reader_t;

int sigview_reader_open(const char *data_dir, sigview_reader_t **out);
void sigview_reader_close(sigview_reader_t *r);

/* One zone of the view, as read in a reader's transaction. */
typedef struct {
	int64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint32_t serial;
	uint32_t soa_ttl;
	uint16_t soa_len;
	uint8_t soa[EDGE_SOA_MAXLEN];
} sigview_zone_t;

/* Begins a read transaction and reads the zone; ZC_ENOZONE when the view
 * does not hold it (not built yet). End with sigview_read_end(). */
int sigview_read_begin(sigview_reader_t *r, int64_t zone_id,
                       sigview_zone_t *zone);
void sigview_read_end(sigview_reader_t *r);

/*
 * Calls cb for each RRset of the zone in canonical order of owners: each
 * node's data, its RRSIGs (an RRset per type covered), its NSEC. RRsets
 * are valid during the call only; they live in arena, reset per node. cb
 * returns non-zero to stop.
 */
int sigview_read_zone(sigview_reader_t *r, int64_t zone_id,
                      zc_arena_t *arena,
                      int (*cb)(const knot_rrset_t *rr, void *ctx),
                      void *ctx);

/*
 * Calls cb for every RR change of the versions in (from, to], in order.
 * ZC_ENOJOURNAL when the journal does not reach back to `from`.
 */
int sigview_read_journal(sigview_reader_t *r, int64_t zone_id,
                         uint32_t from, uint32_t to,
                         int (*cb)(const records_journal_rr_t *rr,
                                   void *ctx), void *ctx);
