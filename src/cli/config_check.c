/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Semantic checks of a configuration (see config_check.h): the things a
 * file can say that parse but cannot work, checked against this machine
 * (users, files, directories) without changing anything.
 */
#include <errno.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/config_check.h"
#include "common/fs.h"

typedef struct {
	void (*report)(bool error, const char *msg, void *ctx);
	void *ctx;
	int errors;
} checker_t;

__attribute__((format(printf, 3, 4)))
static void say(checker_t *c, bool error, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->errors += error;
	c->report(error, msg, c->ctx);
}

/* A file the server appends to: writable, or creatable in its
 * directory. */
static void check_writable_file(checker_t *c, const char *key,
                                const char *path)
{
	struct stat st;
	bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
	if (link && !zc_fs_link_trusted(path)) {
		say(c, true, "%s: %s is a symbolic link where another user could "
		    "have put it (not followed)", key, path);
		return;
	}
	if ((link ? stat(path, &st) : lstat(path, &st)) == 0) {
		if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
			say(c, true, "%s: %s is not a regular file", key, path);
		} else if (access(path, W_OK) != 0) {
			say(c, true, "%s: %s is not writable: %s", key, path,
			    strerror(errno));
		}
		return;
	}
	char dir[CONFIG_STR_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	const char *parent = dirname(dir);
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
		say(c, true, "%s: %s: no directory %s", key, path, parent);
	} else if (access(parent, W_OK | X_OK) != 0) {
		say(c, true, "%s: %s cannot be created in %s: %s", key, path,
		    parent, strerror(errno));
	}
}

static void check_readable_file(checker_t *c, const char *key,
                                const char *path)
{
	if (path[0] != '\0' && access(path, R_OK) != 0) {
		say(c, true, "%s: cannot read %s: %s", key, path, strerror(errno));
	}
}

static void check_logging(checker_t *c, const config_t *cfg)
{
	for (size_t i = 0; i < cfg->log_target_count; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cfg->log_target[i], cfg->log_target[j]) == 0) {
				say(c, true, "log-target: %s is listed twice",
				    cfg->log_target[i]);
			}
		}
		if (cfg->log_target[i][0] == '/') {
			check_writable_file(c, "log-target", cfg->log_target[i]);
		}
	}
}

static void check_addresses(checker_t *c, const config_t *cfg)
{
	for (size_t i = 0; i < cfg->listen_count; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cfg->listen[i], cfg->listen[j]) == 0) {
				say(c, true, "listen: %s is listed twice",
				    cfg->listen[i]);
			}
		}
		if (strcmp(cfg->listen[i], cfg->api_listen) == 0) {
			say(c, true, "api-listen: %s is also a DNS listen address "
			    "(both use TCP there)", cfg->api_listen);
		}
		for (size_t n = 0; n < cfg->notify_count; n++) {
			if (strcmp(cfg->notify[n], cfg->listen[i]) == 0) {
				say(c, false, "notify: %s is this server's own "
				    "address", cfg->notify[n]);
			}
		}
	}
}

/* An address list that lets anyone in. */
static bool allows_anyone(const zc_acl_t *acl)
{
	for (size_t i = 0; i < acl->count; i++) {
		if (acl->entry[i].prefix == 0) {
			return true;
		}
	}
	return false;
}

static void check_access(checker_t *c, const config_t *cfg)
{
	if (allows_anyone(&cfg->allow_update)) {
		say(c, false, "allow-update: a /0 entry lets anyone change the "
		    "zones without a key");
	}
	if (allows_anyone(&cfg->allow_transfer)) {
		say(c, false, "allow-transfer: a /0 entry lets anyone transfer "
		    "the zones");
	}
	if (cfg->tsig_max_fudge > 300) {
		say(c, false, "tsig-max-fudge: %u s is more than the 300 s RFC "
		    "8945 recommends (a captured request stays valid that long)",
		    cfg->tsig_max_fudge);
	}
}

static void check_run_files(checker_t *c, const config_t *cfg)
{
	char path[CONFIG_STR_MAX + 32];
	struct stat st;
	if (stat(cfg->data_dir, &st) != 0) {
		say(c, false, "data-dir: %s does not exist (zonecast serve "
		    "creates it)", cfg->data_dir);
	} else if (!S_ISDIR(st.st_mode)) {
		say(c, true, "data-dir: %s is not a directory", cfg->data_dir);
	}
	config_control_socket(cfg, path, sizeof(path));
	if (strcmp(cfg->control_socket, "none") != 0 &&
	    strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		say(c, true, "control-socket: %s is longer than a socket path may "
		    "be (%zu bytes)", path,
		    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	}
	if (cfg->user[0] != '\0' && getpwnam(cfg->user) == NULL) {
		say(c, true, "user: no user '%s' on this system", cfg->user);
	}
}

static void check_fleet(checker_t *c, const config_t *cfg)
{
	if (cfg->nats[0] == '\0') {
		return;
	}
	check_readable_file(c, "nats-creds", cfg->nats_creds);
	check_readable_file(c, "nats-tls-ca", cfg->nats_tls_ca);
	check_readable_file(c, "nats-tls-cert", cfg->nats_tls_cert);
	check_readable_file(c, "nats-tls-key", cfg->nats_tls_key);
	if ((cfg->nats_tls_cert[0] != '\0') != (cfg->nats_tls_key[0] != '\0')) {
		say(c, true, "nats-tls-cert and nats-tls-key go together");
	}
}

int config_check(const config_t *cfg,
                 void (*report)(bool error, const char *msg, void *ctx),
                 void *ctx)
{
	checker_t c = { .report = report, .ctx = ctx };
	check_logging(&c, cfg);
	check_addresses(&c, cfg);
	check_access(&c, cfg);
	check_run_files(&c, cfg);
	check_fleet(&c, cfg);
	return c.errors;
}
