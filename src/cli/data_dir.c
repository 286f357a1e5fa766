/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The data directory as the commands see it: who may create one, whether
 * one is there, whether it can be written, and the lock that makes
 * `zonecast serve` its only server.
 *
 * Only `serve` and `zone import` create a data directory: every other
 * command refuses a path that holds no records store, so a mistyped
 * --data-dir is an error instead of a new, empty directory that answers
 * "no zones" or "no differences".
 *
 * One `serve` per data directory: it takes an exclusive flock() on
 * DATA_DIR/serve.lock before it seeds, builds or binds anything, and holds
 * it until it exits (the kernel drops it when the process ends, however it
 * ends). The lock belongs to the file, not to the path, so a symlink or a
 * bind mount of the same directory finds it taken too. The administrative
 * commands (zone, tsig, dnssec, token, verify) do not take it: they write
 * through the records store's own locking beside a running server, whose
 * builder picks their changes up from the change log.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/error.h"
#include "common/fs.h"

int cli_prepare_data_dir(const char *dir)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int err = errno;
		fprintf(stderr, "zonecast: cannot create data directory %s: %s\n",
		        dir, strerror(err));
		return -err;
	}
	return ZC_EOK;
}

int cli_require_data_dir(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	if ((size_t)snprintf(path, sizeof(path), "%s/records.db", dir) <
	    sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		return ZC_EOK;
	}
	fprintf(stderr, "zonecast: no zonecast data directory at %s (no "
	        "records.db there; only 'zonecast serve' and 'zonecast zone "
	        "import' create one)\n", dir);
	return -ENOENT;
}

int cli_writable_data_dir(const char *dir)
{
	int err = access(dir, W_OK) == 0 ? 0 : errno;
	if (err == ENOENT) {
		return ZC_EOK; /* Made later. */
	}
	if (err == 0) {
		err = -zc_fs_probe_write(dir, (int)strlen(dir));
	}
	if (err == 0) {
		return ZC_EOK;
	}
	fprintf(stderr, "zonecast: data directory %s is not writable (%s): "
	        "the records store and the edge store must be written; "
	        "nothing was started\n", dir, strerror(err));
	return -err;
}

/* Says which serve holds the lock: the pid it writes into the file right
 * after taking it (waited for a moment: the two may be starting). */
static void report_holder(const char *dir, int fd)
{
	char text[32] = "";
	for (int tries = 0; tries < 50 && text[0] == '\0'; tries++) {
		ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
		text[n > 0 ? n : 0] = '\0';
		text[strcspn(text, "\n")] = '\0';
		if (text[0] == '\0') {
			usleep(2000);
		}
	}
	char real[PATH_MAX];
	const char *shown = realpath(dir, real) != NULL ? real : dir;
	fprintf(stderr, "zonecast serve: data directory %s is in use by "
	        "another zonecast serve%s%s%s: one data directory has one "
	        "server; nothing was started\n", shown,
	        text[0] ? " (pid " : "", text, text[0] ? ")" : "");
}

int cli_lock_data_dir(const char *dir, int *lock_fd)
{
	*lock_fd = -1;
	int ret = cli_prepare_data_dir(dir);
	if (ret != ZC_EOK) {
		return ret;
	}
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/serve.lock", dir) >=
	    sizeof(path)) {
		fprintf(stderr, "zonecast: data directory path too long: %s\n",
		        dir);
		return -ENAMETOOLONG;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "zonecast serve: cannot open %s: %s; nothing was "
		        "started\n", path, strerror(err));
		return -err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		if (err == EWOULDBLOCK) {
			report_holder(dir, fd);
		} else {
			fprintf(stderr, "zonecast serve: cannot lock %s: %s; "
			        "nothing was started\n", path, strerror(err));
		}
		close(fd);
		return -err;
	}
	/* Tells a second serve (and the operator) who holds it. */
	char pid[24];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, len, 0) != len) {
		/* The lock holds without it; only the message loses the pid. */
	}
	*lock_fd = fd;
	return ZC_EOK;
}
