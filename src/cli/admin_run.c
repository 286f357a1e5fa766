/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Running an administrative write (admin.h): the dispatch of a request to
 * its operation, and the two places a request runs: the server
 * (admin_serve(), for the control socket) and the command's own process
 * (admin_run_local(), with a writer of its own). What the operations
 * share, finding a zone and waiting for a change to be served, is in
 * admin_settle.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "cli/admin.h"
#include "cli/commands.h"
#include "common/audit.h"
#include "common/error.h"
#include "common/log.h"

/* Each operation takes the request, and the zone import the file sent
 * with it (run_fd). */
static const struct {
	const char *command;
	int (*run)(admin_t *a, const json_t *req);
	int (*run_fd)(admin_t *a, const json_t *req, int fd);
} operations[] = {
	{ "zone-import", NULL, admin_cmd_zone_import },
	{ "zone-delete", admin_cmd_zone_delete, NULL },
	{ "tsig-create", admin_cmd_tsig_create, NULL },
	{ "tsig-delete", admin_cmd_tsig_delete, NULL },
	{ "token-create", admin_cmd_token_create, NULL },
	{ "token-revoke", admin_cmd_token_revoke, NULL },
	{ "secondaries-set", admin_cmd_secondaries, NULL },
	{ "dnssec", admin_cmd_dnssec, NULL },
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
			return operations[i].run_fd != NULL ?
			       operations[i].run_fd(a, req, fd) :
			       operations[i].run(a, req);
		}
	}
	fprintf(a->err, "zonecast: unknown administrative command '%s'\n",
	        command ? command : "");
	return ZC_EUSAGE;
}

/* --- Where a request runs --- */

int admin_run_local(records_store_t *rs, edge_store_t *es, const char *dir,
                    uint64_t max_records, const json_t *req, int fd)
{
	writer_config_t wcfg = { .data_dir = dir, .max_records = max_records };
	writer_t *writer;
	int ret = writer_start(&wcfg, &writer);
	if (ret != ZC_EOK) {
		char store[600];
		cli_records_store_text(dir, store, sizeof(store));
		fprintf(stderr, "zonecast: cannot open %s for writing: %s\n",
		        store, zc_strerror(ret));
		return ret;
	}
	admin_t a = {
		.rs = rs, .es = es, .writer = writer, .max_records = max_records,
		.out = stdout, .err = stderr, .progress = cli_progress_tty(),
		.client_fd = -1,
	};
	ret = admin_run(&a, req, fd);
	fflush(stdout);
	writer_stop(writer);
	return ret;
}

/* What the request does to what, for the server's log: "[VERB ]NAME"
 * (a token revoked, a key's or token's name, else the zone's). */
/* The request's subject, whole (the audit line shortens it and says its
 * full length): allocated, NULL when out of memory. */
static char *subject(const json_t *req)
{
	const char *verb = json_string_value(json_object_get(req, "verb"));
	const char *s = json_string_value(json_object_get(req, "which"));
	if (s == NULL || s[0] == '\0') {
		s = json_string_value(json_object_get(req, "name"));
	}
	if (s == NULL || s[0] == '\0') {
		s = json_string_value(json_object_get(req, "zone"));
	}
	char *out = NULL;
	if (asprintf(&out, "%s%s%s", verb ? verb : "", verb ? " " : "",
	             s ? s : "-") < 0) {
		out = NULL;
	}
	return out;
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
                    const char *client, int client_fd, const json_t *req,
                    int fd)
{
	char *out_buf = NULL, *err_buf = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *out = open_memstream(&out_buf, &out_len);
	FILE *err = open_memstream(&err_buf, &err_len);
	records_store_t *rs = NULL;
	int ret = out != NULL && err != NULL ? records_open(&rs, data_dir) :
	          KNOT_ENOMEM;
	bool stored = false;
	char unserved[256] = "";
	if (ret == ZC_EOK) {
		admin_t a = {
			.rs = rs, .es = es, .writer = writer, .follower = follower,
			.max_records = writer_max_records(writer), .out = out,
			.err = err, .stopping = stopping, .client_fd = client_fd,
		};
		ret = admin_run(&a, req, fd);
		stored = a.stored;
		snprintf(unserved, sizeof(unserved), "%s", a.unserved);
		records_close(rs);
	} else if (err != NULL) {
		fprintf(err, "zonecast: the server cannot open its records "
		        "store: %s\n", zc_strerror(ret));
	}
	/* One audit line per write, as for the API's and UPDATE's: the
	 * command's writes through the server were in the log only as an
	 * info line without the audit field. */
	const char *command = json_string_value(json_object_get(req, "command"));
	char *what = subject(req);
	zc_audit_t audit;
	/* What happened to the store: a change committed is accepted even
	 * when serving it failed or was cut short (the server stopping
	 * while its builder had not served it said "refused ... database
	 * busy" of a committed import). */
	zc_audit_begin(&audit, "control", ret == ZC_EOK || stored ?
	               "accepted" : "refused");
	zc_audit_str(&audit, "command", command != NULL ? command : "-");
	zc_audit_str(&audit, "subject", what != NULL ? what : "-");
	free(what);
	zc_audit_fixed(&audit, "client", client);
	if (ret != ZC_EOK && stored) {
		zc_audit_fixed(&audit, "served", "no");
		/* A quarantine's reason may name a record's owner. */
		zc_audit_str(&audit, "reason", unserved[0] != '\0' ? unserved :
		             zc_strerror(ret));
	} else if (ret != ZC_EOK) {
		zc_audit_fixed(&audit, "reason", zc_strerror(ret));
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
