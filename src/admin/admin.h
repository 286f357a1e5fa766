/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The administrative writes, written once: zone delete and a zone
 * import's commit, TSIG key create and delete, DNSSEC enable, disable
 * and rollover, each as a unit of the group committer (writer/writer.h).
 * The API's handlers (api/zones.c, tsig_keys.c, dnssec.c) and the
 * `zonecast` command (cli/admin_*.c, run by the server over its control
 * socket or by the command under serve.lock) both call these, and only
 * shape the outcome: JSON and status codes there, text and an exit status
 * here.
 *
 * Design
 *
 * Each operation runs one writer unit and waits for it (writer_run()):
 * when it returns ZC_EOK the change is durably committed, with its zone's
 * new version and the change-log position of its commit (writer_run_seq(),
 * comparable with the builder's applied position) in the caller's struct. Whatever
 * an operation decides (a DNSSEC step's wait, whether a disable is at its
 * first or second step) it decides inside the unit, on the writer's
 * connection, so the decision and the change see the same data. Making
 * the change served is the caller's business: the API answers with a
 * receipt (or waits, ?wait=live), the command waits for the builder.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "records/records.h"
#include "signer/zone.h"
#include "writer/writer.h"

/* --- Zones (admin/zone.c) --- */

/*
 * Deletes *zone (its id is read; the rest is refreshed from the store
 * inside the unit). *seq gets the change-log position of the deletion's
 * commit.
 * ZC_ENOZONE when it is gone already.
 */
int admin_zone_delete(writer_t *w, records_zone_t *zone, uint64_t *seq);

/*
 * Commits a zone import collected in imp (records_import_begin() and its
 * adds), alone between two batches of the writer (writer_run_alone()).
 * Takes ownership of imp: it is committed or freed. *seq and *zone get
 * the change-log position of the import's commit and the zone as it left
 * it.
 */
int admin_zone_import_commit(writer_t *w, records_import_t *imp,
                             uint64_t *seq, records_zone_t *zone);

/* --- TSIG keys (admin/tsig.c) --- */

/*
 * Creates a TSIG key of zone zone_id (records_tsig_create(): name,
 * algorithm or NULL for the default, grants space-separated, transfer).
 * *key gets the key with its secret. On a refusal that names a field,
 * err gets the reason (ZC_EEXISTS: the name is taken).
 */
int admin_tsig_create(writer_t *w, int64_t zone_id, const char *name,
                      const char *algorithm, const char *grants,
                      bool transfer, records_tsig_key_t *key, char *err,
                      size_t err_size);

/* Deletes key id of zone zone_id (0: of whichever zone). ZC_ENOKEY when
 * there is no such key. */
int admin_tsig_delete(writer_t *w, int64_t zone_id, int64_t id);

/* --- DNSSEC (admin/dnssec.c, docs/dnssec.md) --- */

/* What a DNSSEC change did. */
typedef enum {
	ADMIN_DNSSEC_ENABLED,        /* Keys made: the zone is signed. */
	ADMIN_DNSSEC_CANCELLED,      /* A disable begun was undone. */
	ADMIN_DNSSEC_DISABLE_BEGUN,  /* CDS and CDNSKEY DELETE published. */
	ADMIN_DNSSEC_DISABLED,       /* Keys removed: served unsigned. */
	ADMIN_DNSSEC_ROLLED,         /* A rollover step ran. */
} admin_dnssec_done_t;

/* One DNSSEC change: what the caller asks, then what happened. */
typedef struct {
	/* In. zone: the zone (its id is read; refreshed in the unit). */
	records_zone_t zone;
	uint8_t algorithm;           /* enable: SIGNER_ALG_* */
	bool split;                  /* enable: a KSK and a ZSK */
	bool keys_asked;             /* enable: algorithm or split given */
	uint16_t roll_flags;         /* rollover: SIGNER_FLAGS_KSK or _ZSK */
	signer_roll_step_t roll_step;
	uint32_t ds_ttl;             /* The parent's DS TTL. */
	bool force;                  /* Run a step before its time. */
	/* Out. */
	admin_dnssec_done_t done;
	uint64_t seq;                /* Its commit's change-log position. */
	/* early: the step's time (time) had not come; it was refused
	 * (-EAGAIN) or, forced, run before it. */
	bool early;
	signer_step_time_t time;
	/* A forced disable with no first step: keys removed at once. */
	bool unbegun;
	/* DISABLE_BEGUN: from when the second step may run (ms, Unix). */
	int64_t second_step_ms;
} admin_dnssec_t;

/*
 * Signs the zone (d->algorithm, d->split), or, when a disable of it was
 * begun, cancels that (the KSK's CDS and CDNSKEY back in place of
 * DELETE). ZC_EEXISTS when the zone is signed already.
 */
int admin_dnssec_enable(writer_t *w, admin_dnssec_t *d);

/*
 * Turns signing off in two steps (RFC 8078 §4): the first call publishes
 * CDS and CDNSKEY DELETE; one after the DS TTL (d->ds_ttl, plus
 * propagation) removes the keys. Earlier: -EAGAIN, d->early and d->time
 * say from when. d->force removes the keys at once (no first step:
 * d->unbegun; too early: d->early). ZC_ENOKEY when the zone is unsigned.
 */
int admin_dnssec_disable(writer_t *w, admin_dnssec_t *d);

/*
 * Runs one rollover step (d->roll_flags, d->roll_step) once its wait has
 * passed (else -EAGAIN with d->early and d->time; d->force runs it
 * anyway). ZC_ENOKEY when no key of that role is in the step's state.
 */
int admin_dnssec_rollover(writer_t *w, admin_dnssec_t *d);

/* A rollover's role ("ksk", "zsk") and step ("prepublish", "activate",
 * "retire"): *flags (SIGNER_FLAGS_*) and *step. false when either is no
 * such word. */
bool admin_dnssec_parse_roll(const char *role, const char *step,
                             uint16_t *flags, signer_roll_step_t *step_out);
