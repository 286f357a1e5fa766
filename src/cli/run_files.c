/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The pidfile of `zonecast serve` (pidfile, default DATA_DIR/zonecast.pid):
 * the process id and a newline, written whole (a temporary file renamed
 * into place, so a reader never sees half of it) and removed at exit if
 * it still names this process. A file at that path that is not a pidfile
 * is left alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/serve.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"

/* Whether pid is a zonecast process that runs: /proc/PID/stat names its
 * command (in parentheses, which the name may itself hold: the last ')'
 * ends it) starting "zonecast", in a state other than a zombie's or a dead
 * one's. A stale pidfile's pid reused by another program, or the pid of a
 * killed server its parent has not reaped yet, does not keep a restarted
 * server from its pidfile. */
static bool is_zonecast(pid_t pid)
{
	char path[64], line[128] = "";
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
	if (fd >= 0) {
		close(fd);
	}
	if (n <= 0) {
		return false;
	}
	line[n] = '\0';
	const char *open_paren = strchr(line, '(');
	const char *close_paren = strrchr(line, ')');
	if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
	    close_paren[1] != ' ' || close_paren[2] == '\0') {
		return false;
	}
	char state = close_paren[2];
	return strncmp(open_paren + 1, "zonecast", 8) == 0 && state != 'Z' &&
	       state != 'X' && state != 'x';
}

/* Whether path may be replaced by a pidfile: absent, or a regular file
 * holding a process id and a newline (a stale pidfile) of no process that
 * runs. Anything else (the config file, a database: a mistyped pidfile
 * key; another live server's pidfile, which it would lose at our exit)
 * is not ours to overwrite, nor to remove at exit. */
static bool replaceable(const char *path, const char **why)
{
	struct stat st;
	*why = "a file that is not a pidfile is there";
	if (lstat(path, &st) != 0) {
		return errno == ENOENT;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > 24) {
		return false;
	}
	char text[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0) {
		close(fd);
	}
	if (n < 0) {
		return false;
	}
	text[n] = '\0';
	size_t digits = strspn(text, "0123456789");
	if (n != 0 && (digits == 0 || (text[digits] != '\0' &&
	                               strcmp(text + digits, "\n") != 0))) {
		return false;
	}
	long pid = n != 0 ? strtol(text, NULL, 10) : 0;
	if (pid > 0 && pid != (long)getpid() && is_zonecast((pid_t)pid)) {
		*why = "it names another zonecast that runs";
		return false;
	}
	return true;
}

int serve_pidfile_write(const char *path)
{
	char tmp[CONFIG_STR_MAX + 16], text[24];
	const char *why;
	if (!replaceable(path, &why)) {
		zc_error("pidfile %s: %s; not replaced (pidfile); serving "
		         "without one", path, why);
		return -EEXIST;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	/* Mode 0600, as every file serve writes (main.c's umask): root and
	 * the server's user read it. */
	int fd = zc_fs_create_new(tmp, 0600);
	int ret = fd < 0 ? fd : ZC_EOK;
	if (fd >= 0 && write(fd, text, (size_t)n) != n) {
		ret = -errno;
	}
	if (fd >= 0) {
		close(fd);
	}
	if (ret == ZC_EOK && rename(tmp, path) != 0) {
		ret = -errno;
	}
	if (ret != ZC_EOK) {
		zc_error("pidfile %s: cannot write it: %s; serving without one",
		         path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}

void serve_pidfile_remove(const char *path)
{
	char text[24] = "";
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		return;
	}
	bool ours = fgets(text, sizeof(text), f) != NULL &&
	            atoi(text) == (int)getpid();
	fclose(f);
	if (ours && unlink(path) != 0) {
		zc_warn("pidfile %s: cannot remove it: %s", path, strerror(errno));
	}
}
