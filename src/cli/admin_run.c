/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Running an administrative write (admin.h): the dispatch of a request to
 * its operation, making a committed change served (the server's builder,
 * or a build here), and the two places a request runs: the server
 * (admin_serve(), for the control socket) and the command's own process
 * (admin_run_local(), with a writer of its own).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "cli/admin.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/log.h"

/* How long a wait for the builder sleeps between two looks at most. */
#define SETTLE_POLL_MS 500

static int run_import(admin_t *a, const json_t *req, int fd)
{
	return admin_cmd_zone_import(a, req, fd);
}

static int run_delete(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_zone_delete(a, req);
}

static int run_tsig_create(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_tsig_create(a, req);
}

static int run_tsig_delete(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_tsig_delete(a, req);
}

static int run_token_create(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_token_create(a, req);
}

static int run_token_revoke(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_token_revoke(a, req);
}

static int run_secondaries(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_secondaries(a, req);
}

static int run_dnssec(admin_t *a, const json_t *req, int fd)
{
	(void)fd;
	return admin_cmd_dnssec(a, req);
}

static const struct {
	const char *command;
	int (*run)(admin_t *a, const json_t *req, int fd);
} operations[] = {
	{ "zone-import", run_import },
	{ "zone-delete", run_delete },
	{ "tsig-create", run_tsig_create },
	{ "tsig-delete", run_tsig_delete },
	{ "token-create", run_token_create },
	{ "token-revoke", run_token_revoke },
	{ "secondaries-set", run_secondaries },
	{ "dnssec", run_dnssec },
};

#define OPERATION_COUNT (sizeof(operations) / sizeof(operations[0]))

bool admin_is_write(const char *command)
{
	for (size_t i = 0; command != NULL && i < OPERATION_COUNT; i++) {
		if (strcmp(command, operations[i].command) == 0) {
			return true;
		}
	}
	return false;
}

int admin_run(admin_t *a, const json_t *req, int fd)
{
	const char *command = json_string_value(json_object_get(req, "command"));
	for (size_t i = 0; command != NULL && i < OPERATION_COUNT; i++) {
		if (strcmp(command, operations[i].command) == 0) {
			return operations[i].run(a, req, fd);
		}
	}
	fprintf(a->err, "zonecast: unknown administrative command '%s'\n",
	        command ? command : "");
	return ZC_EUSAGE;
}

int admin_find_zone(admin_t *a, const char *cmd, const char *name,
                    records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	int ret = name != NULL && knot_dname_from_str(apex, name, sizeof(apex)) !=
	          NULL ? ZC_EOK : ZC_EUSAGE;
	if (ret == ZC_EOK) {
		knot_dname_to_lower(apex);
		ret = records_zone_find(a->rs, apex, zone);
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast %s: no zone %s\n", cmd, name ? name : "");
	}
	return ret;
}

/* --- Making a change served --- */

/* RFC 1982: is serial at least version? */
static bool serial_reached(uint32_t serial, uint32_t version)
{
	return (int32_t)(serial - version) >= 0;
}

/* 0 when the edge store serves the change, 1 while not yet, or
 * ZC_EQUARANTINED when a build that read it failed (why: the reason). */
static int settled(admin_t *a, const admin_change_t *c, char *why,
                   size_t why_size)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(a->es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_zone_t zone;
	edge_quarantine_t q;
	bool same = edge_zone_get(&txn, c->apex, &zone) == ZC_EOK &&
	            zone.zone_id == c->zone_id;
	int state = 1;
	if (c->deleted ? !same : same && serial_reached(zone.serial,
	                                                c->version)) {
		state = 0;
	} else if (!c->deleted &&
	           edge_quarantine_get(&txn, c->zone_id, &q) == ZC_EOK &&
	           q.seq >= c->seq) {
		snprintf(why, why_size, "%s (the zone is quarantined, serving "
		         "serial %u)", q.reason, q.serial);
		state = ZC_EQUARANTINED;
	}
	edge_txn_abort(&txn);
	return state;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The server's side: waits for its builder, pass after pass. */
static int await_builder(admin_t *a, const admin_change_t *c, char *why,
                         size_t why_size)
{
	builder_follower_t *f = a->follower;
	for (;;) {
		uint64_t seen = builder_follower_passes(f);
		int ret = settled(a, c, why, why_size);
		if (ret != 1) {
			return ret;
		}
		if (builder_follower_applied(f) >= c->seq) {
			return ZC_EOK; /* Built, and a newer change went over it. */
		}
		if (a->stopping != NULL && atomic_load(a->stopping)) {
			snprintf(why, why_size, "zonecast serve is stopping: the "
			         "change is stored, and served once it runs again");
			return ZC_EBUSY;
		}
		ret = builder_follower_stalled(f);
		if (ret != ZC_EOK) {
			return ret;
		}
		int64_t start = mono_ms();
		if (!builder_follower_wait_pass(f, &seen, SETTLE_POLL_MS) &&
		    mono_ms() - start < SETTLE_POLL_MS / 10) {
			/* The follower is gone: no busy loop until the stop. */
			struct timespec nap = { .tv_nsec = 50 * 1000000L };
			nanosleep(&nap, NULL);
		}
	}
}

int admin_settle(admin_t *a, const admin_change_t *c, builder_stats_t *stats,
                 cli_progress_t *progress, char *why, size_t why_size)
{
	why[0] = '\0';
	if (a->follower != NULL) {
		return await_builder(a, c, why, why_size);
	}
	int ret = builder_full_build(a->rs, a->es, c->apex, stats,
	                             progress != NULL ? cli_progress_records :
	                             NULL, progress);
	if (ret != ZC_EOK) {
		snprintf(why, why_size, "%s", zc_strerror(ret));
	}
	return ret;
}

/* --- Where a request runs --- */

int admin_run_local(records_store_t *rs, edge_store_t *es, const char *dir,
                    uint64_t max_records, const json_t *req, int fd)
{
	writer_config_t wcfg = { .data_dir = dir, .max_records = max_records };
	writer_t *writer;
	int ret = writer_start(&wcfg, &writer);
	if (ret != ZC_EOK) {
		fprintf(stderr, "zonecast: cannot open %s/records.db for "
		        "writing: %s\n", dir, zc_strerror(ret));
		return ret;
	}
	admin_t a = {
		.rs = rs, .es = es, .writer = writer, .max_records = max_records,
		.out = stdout, .err = stderr, .progress = cli_progress_tty(),
	};
	ret = admin_run(&a, req, fd);
	fflush(stdout);
	writer_stop(writer);
	return ret;
}

/* What the request does to what, for the server's log: "[VERB ]NAME"
 * (a token revoked, a key's or token's name, else the zone's). */
static void subject(const json_t *req, char *out, size_t size)
{
	const char *verb = json_string_value(json_object_get(req, "verb"));
	const char *s = json_string_value(json_object_get(req, "which"));
	if (s == NULL || s[0] == '\0') {
		s = json_string_value(json_object_get(req, "name"));
	}
	if (s == NULL || s[0] == '\0') {
		s = json_string_value(json_object_get(req, "zone"));
	}
	snprintf(out, size, "%s%s%s", verb ? verb : "", verb ? " " : "",
	         s ? s : "-");
}

/* A memory stream's text, "" when it could not be made. */
static json_t *text_of(FILE *f, char **buf)
{
	if (f != NULL) {
		fclose(f);
	}
	json_t *text = json_string(*buf != NULL ? *buf : "");
	free(*buf);
	return text != NULL ? text : json_string("");
}

json_t *admin_serve(const char *data_dir, edge_store_t *es, writer_t *writer,
                    builder_follower_t *follower, const atomic_bool *stopping,
                    const char *client, const json_t *req, int fd)
{
	char *out_buf = NULL, *err_buf = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *out = open_memstream(&out_buf, &out_len);
	FILE *err = open_memstream(&err_buf, &err_len);
	records_store_t *rs = NULL;
	int ret = out != NULL && err != NULL ? records_open(&rs, data_dir) :
	          KNOT_ENOMEM;
	if (ret == ZC_EOK) {
		admin_t a = {
			.rs = rs, .es = es, .writer = writer, .follower = follower,
			.max_records = writer_max_records(writer), .out = out,
			.err = err, .stopping = stopping,
		};
		ret = admin_run(&a, req, fd);
		records_close(rs);
	} else if (err != NULL) {
		fprintf(err, "zonecast: the server cannot open its records "
		        "store: %s\n", zc_strerror(ret));
	}
	/* One audit line per write, as for the API's and UPDATE's: the
	 * command's writes through the server were in the log only as an
	 * info line without the audit field. */
	const char *command = json_string_value(json_object_get(req, "command"));
	char what[KNOT_DNAME_TXT_MAXLEN + 32];
	subject(req, what, sizeof(what));
	zc_audit_t audit;
	zc_audit_begin(&audit, "control", ret == ZC_EOK ? "accepted" :
	               "refused");
	zc_audit_str(&audit, "command", command != NULL ? command : "-");
	zc_audit_str(&audit, "subject", what);
	zc_audit_str(&audit, "client", client);
	if (ret != ZC_EOK) {
		zc_audit_str(&audit, "reason", zc_strerror(ret));
	}
	zc_audit_end(&audit);
	json_t *reply = json_pack("{s:b, s:i}", "ok", ret == ZC_EOK, "code",
	                          ret);
	json_object_set_new(reply, "stdout", text_of(out, &out_buf));
	json_object_set_new(reply, "stderr", text_of(err, &err_buf));
	if (ret != ZC_EOK) {
		json_object_set_new(reply, "error", json_string(zc_strerror(ret)));
	}
	return reply;
}
