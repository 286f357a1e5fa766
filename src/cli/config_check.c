/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Semantic checks of a configuration (see config_check.h): the things a
 * file can say that parse but cannot work, checked against this machine
 * (users, files, directories) without changing anything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/config_check.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/net.h"

typedef struct {
	void (*report)(bool error, const char *msg, void *ctx);
	void *ctx;
	int errors;
	const config_t *running; /* A reload's: the configuration in force. */
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

/* Whether path is a log file the running server has open (a reload). */
static bool running_log_file(const checker_t *c, const char *path)
{
	for (size_t i = 0; c->running != NULL &&
	     i < c->running->log_target_count; i++) {
		if (strcmp(c->running->log_target[i], path) == 0) {
			return true;
		}
	}
	return false;
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
		/* A log file the server has open that logrotate moved, in a
		 * directory the service user may not create files in: the
		 * reload keeps the open one (log.h), and applies the rest. */
		bool kept = running_log_file(c, path);
		say(c, !kept, "%s: %s cannot be created in %s: %s%s", key, path,
		    parent, strerror(errno), kept ? " (still writing to the "
		    "file it has open)" : "");
	}
}

/* Whether pw may create files in dir, by its mode bits (as the kernel
 * judges it without ACLs): write and search for the class pw is in. */
static bool user_may_create(const struct passwd *pw, const char *dir)
{
	struct stat st;
	if (pw->pw_uid == 0 || stat(dir, &st) != 0) {
		return true; /* root; or a missing directory, said elsewhere. */
	}
	mode_t need;
	if (st.st_uid == pw->pw_uid) {
		need = S_IWUSR | S_IXUSR;
	} else {
		gid_t groups[256];
		int n = (int)(sizeof(groups) / sizeof(groups[0]));
		bool member = st.st_gid == pw->pw_gid;
		if (!member && getgrouplist(pw->pw_name, pw->pw_gid, groups,
		                            &n) >= 0) {
			for (int i = 0; i < n && !member; i++) {
				member = groups[i] == st.st_gid;
			}
		}
		need = member ? S_IWGRP | S_IXGRP : S_IWOTH | S_IXOTH;
	}
	return (st.st_mode & need) == need;
}

/* With `user`, root opens the log files at start (and gives a new one to
 * the user), but a reload runs as the user: once logrotate moves a file
 * out of a directory the user may not create files in, no reload can
 * create it again (the running one keeps the moved file). */
static void check_log_dir_user(checker_t *c, const config_t *cfg,
                               const char *path)
{
	if (cfg->user[0] == '\0') {
		return;
	}
	struct passwd *pw = getpwnam(cfg->user);
	char dir[CONFIG_STR_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	const char *parent = dirname(dir);
	if (pw != NULL && !user_may_create(pw, parent)) {
		say(c, false, "log-target: user %s cannot create files in %s: "
		    "once %s is moved (logrotate), a reload cannot create it "
		    "again and logs on to the moved file; let %s create files "
		    "there, or rotate with copytruncate", cfg->user, parent, path,
		    cfg->user);
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
			check_log_dir_user(c, cfg, cfg->log_target[i]);
		}
	}
}

/* One of the server's own listening addresses. */
typedef struct {
	const char *key;
	const char *text;
	struct sockaddr_storage ss;
	bool ok;
} listener_t;

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
	             ((const struct sockaddr_in6 *)ss)->sin6_port :
	             ((const struct sockaddr_in *)ss)->sin_port);
}

/* Whether the address is its family's wildcard (0.0.0.0, ::). */
static bool wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6) {
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	}
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == INADDR_ANY;
}

static bool same_address(const struct sockaddr_storage *a,
                         const struct sockaddr_storage *b)
{
	if (a->ss_family == AF_INET6) {
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr,
		              sizeof(struct in6_addr)) == 0;
	}
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/*
 * Whether two of the server's listeners would take the same port: the
 * same family and port (not 0: a port of the kernel's choosing), and the
 * same address or the family's wildcard on either side. Every listener
 * has TCP (DNS has UDP too), so any overlap is a clash. IPv6 sockets are
 * bound IPV6_V6ONLY (server/listen.c, common/net.c): [::] does not take
 * IPv4's port.
 */
static bool overlap(const listener_t *a, const listener_t *b)
{
	return a->ok && b->ok && a->ss.ss_family == b->ss.ss_family &&
	       port_of(&a->ss) != 0 && port_of(&a->ss) == port_of(&b->ss) &&
	       (same_address(&a->ss, &b->ss) || wildcard(&a->ss) ||
	        wildcard(&b->ss));
}

static void clash(checker_t *c, const listener_t *a, const listener_t *b)
{
	bool a_dns = strcmp(a->key, "listen") == 0;
	bool dns = a_dns && strcmp(b->key, "listen") == 0;
	if (same_address(&a->ss, &b->ss)) {
		if (dns) {
			say(c, true, "listen: %s is listed twice", a->text);
		} else {
			say(c, true, "%s: %s is also %s%s (both use TCP there)",
			    b->key, b->text, a_dns ? "a DNS listen address" :
			    "the address of ", a_dns ? "" : a->key);
		}
		return;
	}
	const listener_t *wide = wildcard(&a->ss) ? a : b;
	say(c, true, "%s %s and %s %s overlap: %s takes port %u on every "
	    "address of its family (both use %s there)", a->key, a->text,
	    b->key, b->text, wide->text, (unsigned)port_of(&wide->ss),
	    dns ? "UDP and TCP" : "TCP");
}

int config_check_listeners(const config_t *cfg,
                           void (*report)(bool error, const char *msg,
                                          void *ctx),
                           void *ctx)
{
	checker_t c = { .report = report, .ctx = ctx };
	listener_t l[SERVER_MAX_LISTEN + 2];
	size_t n = 0;
	for (size_t i = 0; i < cfg->listen_count; i++) {
		l[n++] = (listener_t){ .key = "listen", .text = cfg->listen[i] };
	}
	if (cfg->api_listen[0] != '\0') {
		l[n++] = (listener_t){ .key = "api-listen", .text = cfg->api_listen };
	}
	if (cfg->metrics_listen[0] != '\0') {
		l[n++] = (listener_t){ .key = "metrics-listen",
		                       .text = cfg->metrics_listen };
	}
	for (size_t i = 0; i < n; i++) {
		socklen_t len;
		l[i].ok = zc_addr_parse(l[i].text, &l[i].ss, &len) == ZC_EOK;
		for (size_t j = 0; j < i; j++) {
			if (overlap(&l[j], &l[i])) {
				clash(&c, &l[j], &l[i]);
			}
		}
	}
	return c.errors;
}

static void check_addresses(checker_t *c, const config_t *cfg)
{
	c->errors += config_check_listeners(cfg, c->report, c->ctx);
	for (size_t i = 0; i < cfg->listen_count; i++) {
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

int config_check_serve(const config_t *cfg,
                       void (*report)(bool error, const char *msg, void *ctx),
                       void *ctx)
{
	checker_t c = { .report = report, .ctx = ctx };
	for (size_t i = 0; i < cfg->log_target_count; i++) {
		if (cfg->log_target[i][0] == '/') {
			check_log_dir_user(&c, cfg, cfg->log_target[i]);
		}
	}
	return c.errors + config_check_listeners(cfg, report, ctx);
}

int config_check(const config_t *cfg,
                 void (*report)(bool error, const char *msg, void *ctx),
                 void *ctx)
{
	return config_check_reload(cfg, NULL, report, ctx);
}

int config_check_reload(const config_t *cfg, const config_t *running,
                        void (*report)(bool error, const char *msg,
                                       void *ctx),
                        void *ctx)
{
	checker_t c = { .report = report, .ctx = ctx, .running = running };
	check_logging(&c, cfg);
	check_addresses(&c, cfg);
	check_access(&c, cfg);
	check_run_files(&c, cfg);
	check_fleet(&c, cfg);
	return c.errors;
}
