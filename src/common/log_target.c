/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Log targets (log.h): stderr, files, syslog and the systemd journal.
 *
 * Syslog is spoken as glibc's syslog(3) does, over a datagram socket at
 * /dev/log: "<PRI>Mmm dd hh:mm:ss zonecast[PID]: message", facility
 * daemon. The journal takes its native protocol at
 * /run/systemd/journal/socket: newline-separated FIELD=value pairs
 * (MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, and ZONECAST_* for a line's
 * fields). ZONECAST_SYSLOG_SOCKET and ZONECAST_JOURNAL_SOCKET name other
 * sockets (tests, containers).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/log_target.h"

#define SYSLOG_FACILITY_DAEMON (3 << 3)
#define DEFAULT_SYSLOG_SOCKET "/dev/log"
#define DEFAULT_JOURNAL_SOCKET "/run/systemd/journal/socket"

typedef enum { TARGET_STDERR, TARGET_FILE, TARGET_SYSLOG, TARGET_JOURNAL }
	target_kind_t;

typedef struct {
	target_kind_t kind;
	int fd;               /* File, or socket (-1: not connected yet). */
	char path[ZC_LOG_TARGET_LEN];
} target_t;

/* The configured targets; lock guards targets and count (never held
 * while anything but a write or send runs). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static target_t targets[ZC_LOG_TARGETS_MAX] = { { .kind = TARGET_STDERR,
                                                  .fd = -1 } };
static size_t count = 1;
static atomic_int format = ZC_LOG_TEXT;

zc_log_format_t log_target_format(void)
{
	return (zc_log_format_t)atomic_load_explicit(&format,
	                                             memory_order_relaxed);
}

static bool parse_kind(const char *text, target_kind_t *kind)
{
	if (strcmp(text, "stderr") == 0) {
		*kind = TARGET_STDERR;
	} else if (strcmp(text, "syslog") == 0) {
		*kind = TARGET_SYSLOG;
	} else if (strcmp(text, "journald") == 0) {
		*kind = TARGET_JOURNAL;
	} else if (text[0] == '/' && strlen(text) < ZC_LOG_TARGET_LEN) {
		*kind = TARGET_FILE;
	} else {
		return false;
	}
	return true;
}

bool zc_log_target_valid(const char *target)
{
	target_kind_t kind;
	return parse_kind(target, &kind);
}

/*
 * Opens a log file to append to; -1 with *why set when it cannot be. Root
 * opens it before `user` applies, in a directory that user may own, who
 * could have put there a link to a file of root's for log lines to be
 * appended to: a link is followed only in a directory of root's
 * (zc_fs_open(), O_NOFOLLOW first, so nothing can swap it in between).
 * Nor is a
 * FIFO opened (the open would wait for a reader, and start or reload with
 * it), nor anything but a regular file or a device (/dev/null).
 */
static int open_file(const char *path, const char **why)
{
	int fd = zc_fs_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	                    O_NONBLOCK | O_NOCTTY, 0640);
	struct stat st;
	if (fd < 0) {
		*why = errno == ELOOP ? zc_fs_link_refusal(-ELOOP) :
		       errno == ENXIO ? "not a regular file" : strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))) {
		*why = "not a regular file";
		close(fd);
		return -1;
	}
	return fd;
}

static const char *socket_path(target_kind_t kind)
{
	const char *env = getenv(kind == TARGET_SYSLOG ?
	                         "ZONECAST_SYSLOG_SOCKET" :
	                         "ZONECAST_JOURNAL_SOCKET");
	if (env != NULL && env[0] != '\0') {
		return env;
	}
	return kind == TARGET_SYSLOG ? DEFAULT_SYSLOG_SOCKET :
	       DEFAULT_JOURNAL_SOCKET;
}

/* A datagram socket connected to the daemon's, or -1 (not there yet). */
static int connect_socket(target_kind_t kind)
{
	const char *path = socket_path(kind);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void close_targets(target_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i].fd >= 0) {
			close(list[i].fd);
		}
	}
}

/* A duplicate of the descriptor of the running file target at path, or
 * -1 when there is none. */
static int dup_running(const char *path)
{
	int fd = -1;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count && fd < 0; i++) {
		if (targets[i].kind == TARGET_FILE &&
		    strcmp(targets[i].path, path) == 0) {
			fd = fcntl(targets[i].fd, F_DUPFD_CLOEXEC, 0);
		}
	}
	pthread_mutex_unlock(&lock);
	return fd;
}

int zc_log_configure(const zc_log_config_t *cfg, char *err, size_t err_size)
{
	target_t next[ZC_LOG_TARGETS_MAX];
	if (err_size > 0) {
		err[0] = '\0';
	}
	size_t n = cfg->target_count ? cfg->target_count : 1;
	if (n > ZC_LOG_TARGETS_MAX) {
		snprintf(err, err_size, "more than %d log targets",
		         ZC_LOG_TARGETS_MAX);
		return ZC_EINVAL_CONFIG;
	}
	for (size_t i = 0; i < n; i++) {
		const char *text = cfg->target_count ? cfg->target[i] : "stderr";
		next[i] = (target_t){ .fd = -1 };
		if (!parse_kind(text, &next[i].kind)) {
			snprintf(err, err_size, "log target '%s' is none of stderr, "
			         "syslog, journald or an absolute file path", text);
			close_targets(next, i);
			return ZC_EINVAL_CONFIG;
		}
		snprintf(next[i].path, sizeof(next[i].path), "%s", text);
		if (next[i].kind == TARGET_FILE) {
			const char *why = NULL;
			next[i].fd = open_file(text, &why);
			if (next[i].fd < 0 && cfg->keep_running_files &&
			    (next[i].fd = dup_running(text)) >= 0) {
				snprintf(err, err_size, "cannot open log file %s again: "
				         "%s (still writing to the file it had open)",
				         text, why);
			}
			if (next[i].fd < 0) {
				snprintf(err, err_size, "cannot open log file %s: %s",
				         text, why);
				close_targets(next, i);
				return ZC_EINVAL_CONFIG;
			}
		} else if (next[i].kind != TARGET_STDERR) {
			next[i].fd = connect_socket(next[i].kind);
		}
	}
	target_t old[ZC_LOG_TARGETS_MAX];
	pthread_mutex_lock(&lock);
	size_t old_count = count;
	memcpy(old, targets, sizeof(old));
	memcpy(targets, next, sizeof(next[0]) * n);
	count = n;
	atomic_store(&format, (int)cfg->format);
	zc_log_set_level((zc_log_level_t)cfg->level);
	pthread_mutex_unlock(&lock);
	close_targets(old, old_count);
	return ZC_EOK;
}

void zc_log_reopen(void)
{
	char failed[ZC_LOG_TARGET_LEN] = "";
	const char *why = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++) {
		if (targets[i].kind != TARGET_FILE) {
			continue;
		}
		int fd = open_file(targets[i].path, &why);
		if (fd < 0) {
			snprintf(failed, sizeof(failed), "%s", targets[i].path);
			continue;
		}
		close(targets[i].fd);
		targets[i].fd = fd;
	}
	pthread_mutex_unlock(&lock);
	if (failed[0] != '\0') {
		zc_error("cannot reopen log file %s: %s (still writing to the "
		         "file it had open)", failed, why);
	}
}

void zc_log_close(void)
{
	pthread_mutex_lock(&lock);
	close_targets(targets, count);
	targets[0] = (target_t){ .kind = TARGET_STDERR, .fd = -1 };
	count = 1;
	pthread_mutex_unlock(&lock);
}

static int syslog_severity(zc_log_level_t level)
{
	static const int severity[] = { 3, 4, 6, 7 };
	return severity[level];
}

/* RFC 3164 as glibc frames it for the local daemon. */
static size_t format_syslog(const log_line_t *l, char *out, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	int n = snprintf(out, size, "<%d>%s zonecast[%d]: %.*s",
	                 SYSLOG_FACILITY_DAEMON | syslog_severity(l->level),
	                 stamp, (int)getpid(), (int)l->body_len, l->body);
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* FIELD=value\n, the value's newlines made spaces (the native protocol
 * would need a binary form for them). */
static size_t put_field(char *out, size_t size, size_t len, const char *name,
                        const char *value, size_t value_len)
{
	int n = snprintf(out + len, size - len, "%s=", name);
	if (n < 0 || (size_t)n >= size - len) {
		return len;
	}
	len += (size_t)n;
	for (size_t i = 0; i < value_len && len < size - 1; i++) {
		out[len++] = value[i] == '\n' ? ' ' : value[i];
	}
	if (len < size) {
		out[len++] = '\n';
	}
	return len;
}

static size_t format_journal(const log_line_t *l, char *out, size_t size)
{
	char prio[4];
	snprintf(prio, sizeof(prio), "%d", syslog_severity(l->level));
	size_t len = put_field(out, size, 0, "PRIORITY", prio, strlen(prio));
	len = put_field(out, size, len, "SYSLOG_IDENTIFIER", "zonecast", 8);
	len = put_field(out, size, len, "MESSAGE", l->text, l->text_len);
	for (size_t i = 0; i < l->field_count; i++) {
		char name[64] = "ZONECAST_";
		size_t k = strlen(name);
		for (const char *p = l->fields[i].key; *p && k < sizeof(name) - 1;
		     p++) {
			name[k++] = (char)toupper((unsigned char)*p);
		}
		name[k] = '\0';
		len = put_field(out, size, len, name, l->fields[i].value,
		                strlen(l->fields[i].value));
	}
	return len;
}

/* Sends to a daemon's socket, connecting (again) when needed: a daemon
 * that started or restarted after us is found at the next line. */
static void send_to_daemon(target_t *t, const char *msg, size_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (t->fd < 0) {
			t->fd = connect_socket(t->kind);
		}
		if (t->fd < 0) {
			return;
		}
		if (send(t->fd, msg, len, MSG_NOSIGNAL) >= 0 || errno == EAGAIN) {
			return;
		}
		close(t->fd);
		t->fd = -1;
	}
}

void log_target_write(const log_line_t *l)
{
	char framed[8192];
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++) {
		target_t *t = &targets[i];
		ssize_t w = 0;
		size_t len;
		switch (t->kind) {
		case TARGET_STDERR:
			w = write(STDERR_FILENO, l->line, l->line_len);
			break;
		case TARGET_FILE:
			w = write(t->fd, l->line, l->line_len);
			break;
		case TARGET_SYSLOG:
			len = format_syslog(l, framed, sizeof(framed));
			send_to_daemon(t, framed, len);
			break;
		case TARGET_JOURNAL:
			len = format_journal(l, framed, sizeof(framed));
			send_to_daemon(t, framed, len);
			break;
		}
		(void)w;
	}
	pthread_mutex_unlock(&lock);
}
