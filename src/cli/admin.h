/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to cli/: the administrative writes of the zonecast command —
 * zone import and delete, tsig create and delete, dnssec enable, disable
 * and rollover — whoever runs them. The writes themselves are admin/'s
 * units of the group committer (admin/admin.h), which the API's handlers
 * call too; this side reads the command's request, runs the unit, makes
 * the change served and says what it did.
 *
 * Design
 *
 * A command turns its arguments into a request: a JSON object
 * {"command": "zone-import" | "zone-delete" | "tsig-create" |
 * "tsig-delete" | "token-create" | "token-revoke" | "secondaries-set" |
 * "dnssec", ...} and, for an import, the zone file it
 * opened itself. admin_run() carries the request out against an admin_t:
 * it reads through a connection of its own, commits through the writer
 * (the same units, savepoints, change log and builder wake-up as the
 * API's writes), then makes the change served, and says what it did on
 * the command's stdout and stderr (a->out, a->err) with the messages and
 * codes the command always had.
 *
 * Who runs it (admin_client.c decides, by the data directory's lock,
 * data_dir.c):
 *   - the server, when `zonecast serve` holds DATA_DIR/serve.lock: the
 *     command sends the request over the control socket (control.c), the
 *     zone file as a descriptor (SCM_RIGHTS: the server reads what the
 *     operator could read); the server runs it with its own writer, waits
 *     for its builder to serve the change (admin_settle(), a->follower)
 *     and sends back the outcome and the text;
 *   - the command itself, when no server runs: it takes serve.lock for
 *     the duration (no server starts half-way), opens the stores and a
 *     writer of its own (no follower) and builds the change into the edge
 *     store in its own thread, drawing progress lines on a terminal.
 * Either way no write of the command goes beside a server's writer, so
 * the builder is the only one to build a served zone.
 */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <libknot/dname.h>

#include "admin/admin.h"
#include "builder/builder.h"
#include "cli/progress.h"
#include "edge/edge.h"
#include "records/records.h"
#include "writer/writer.h"

typedef struct {
	records_store_t *rs;     /* Reads, and an import's commit. */
	edge_store_t *es;
	writer_t *writer;        /* Where the writes go. */
	/* The server's builder, whose passes serve the change; NULL: the
	 * change is built here (builder_full_build()). */
	builder_follower_t *follower;
	uint64_t max_records;    /* zone-max-records in force. */
	FILE *out, *err;         /* The command's stdout and stderr. */
	bool progress;           /* Progress lines on stderr (a terminal). */
	const atomic_bool *stopping; /* Set when the server shuts down. */
	/* The control socket's client the server runs the request for (-1:
	 * the command's own process): an import it went away from is
	 * abandoned (admin_abandoned()). */
	int client_fd;
	/* Set once the request's change is committed (admin_settle()):
	 * whatever the outcome, the store holds it; `unserved` then says
	 * why it is not served yet when the request fails after. */
	bool stored;
	char unserved[256];
} admin_t;

/*
 * Whether a request still running should be given up, before its
 * commit: the server is stopping, or the client it runs for has gone
 * (killed, or given up waiting: the control protocol has it send nothing
 * after its request line, so EOF or a hang-up on its socket is that).
 * Says why on a->err when so.
 */
bool admin_abandoned(admin_t *a);

/*
 * Carries out one request (fd: the zone file of an import, else -1; not
 * closed here). Returns ZC_EOK, ZC_EUSAGE (the command exits 2), or the
 * error the command exits 1 with; either way it was said on a->err.
 */
int admin_run(admin_t *a, const json_t *req, int fd);

/* A committed change of one zone, to be served. */
typedef struct {
	const knot_dname_t *apex;
	uint64_t zone_id;
	uint32_t version;        /* The zone's serial after the change. */
	uint64_t seq;            /* Its commit's change-log position. */
	bool deleted;            /* The zone was deleted. */
} admin_change_t;

/*
 * Makes a committed change served: with a follower, waits until the edge
 * store serves the version (or no longer has a deleted zone); without,
 * builds the zone (progress: a "building" line, may be NULL; stats may
 * be NULL). ZC_EQUARANTINED when the zone's build failed (why, when not
 * NULL, gets the reason), ZC_EBUSY when the server stops meanwhile, or
 * the build's error.
 */
int admin_settle(admin_t *a, const admin_change_t *c, builder_stats_t *stats,
                 cli_progress_t *progress, char *why, size_t why_size);

/* Finds the zone named `name`; says "zonecast CMD: no zone NAME" on
 * a->err when there is none (or it is no name). */
int admin_find_zone(admin_t *a, const char *cmd, const char *name,
                    records_zone_t *zone);

/*
 * The operations (admin_zone.c, admin_tsig.c, admin_dnssec.c): the
 * request's fields in, the change made by admin/ (admin/admin.h, the
 * same code the API's handlers call), then served and said on a->out
 * and a->err.
 */
int admin_cmd_zone_import(admin_t *a, const json_t *req, int fd);
int admin_cmd_zone_delete(admin_t *a, const json_t *req);
int admin_cmd_tsig_create(admin_t *a, const json_t *req);
int admin_cmd_tsig_delete(admin_t *a, const json_t *req);

/* token create and revoke (admin_token.c). */
int admin_cmd_token_create(admin_t *a, const json_t *req);
int admin_cmd_token_revoke(admin_t *a, const json_t *req);

/* A zone's own secondaries replaced (admin_secondaries.c), and printed
 * ("notify\tSPEC" / "allow-transfer\tSPEC" lines). */
int admin_cmd_secondaries(admin_t *a, const json_t *req);
int admin_secondaries_print(records_store_t *rs, int64_t zone_id, FILE *out);
int admin_cmd_dnssec(admin_t *a, const json_t *req);

/* dnssec keys and ds: reads only, the same output (admin_dnssec.c). */
int admin_cmd_dnssec_keys(admin_t *a, const records_zone_t *zone,
                          uint32_t ds_ttl);
int admin_cmd_dnssec_ds(admin_t *a, const records_zone_t *zone);

/* --- Running a request (admin_client.c, admin_serve.c) --- */

/*
 * The command's side: sends req (and fd) to the server that holds dir's
 * lock, or, when none does, takes the lock and runs it here (create: an
 * import may make the data directory; max_records: the command's
 * zone-max-records). Prints what it did on stdout and stderr; returns the
 * command's exit status (0, 1, or 2).
 */
int admin_request(const char *dir, bool create, uint64_t max_records,
                  json_t *req, int fd);

/*
 * Runs req here on stores already open and locked (a fresh `zonecast
 * serve` seeding its demo zone), with a writer of its own. Messages go to
 * stdout and stderr.
 */
int admin_run_local(records_store_t *rs, edge_store_t *es, const char *dir,
                    uint64_t max_records, const json_t *req, int fd);

/*
 * The server's side (control.c): runs req with the server's stages (a
 * records connection of its own for the reads) and returns the reply for
 * the control socket: {"ok": bool, "code": N, "stdout": "...", "stderr":
 * "...", and "error" when not ok}. stopping is set when the server shuts
 * down: a wait for the builder ends then, and an import not yet
 * committed is given up (so is one whose client, client_fd, went away).
 * Writes the audit line, client naming who asked ("uid=U pid=P"):
 * "accepted" whenever the store took the change, "served=no" with the
 * reason when it is not served yet.
 */
json_t *admin_serve(const char *data_dir, edge_store_t *es, writer_t *writer,
                    builder_follower_t *follower, const atomic_bool *stopping,
                    const char *client, int client_fd, const json_t *req,
                    int fd);

/* Whether the control socket's command is one of the writes above. */
bool admin_is_write(const char *command);

/* Whether a control request names a known command and holds only that
 * command's members, each of its type (control_request.c); false with
 * the reason in err otherwise. */
bool control_request_check(const json_t *req, char *err, size_t size);
