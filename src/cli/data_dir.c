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
 * One writer per data directory. `serve` takes an exclusive flock() on
 * DATA_DIR/serve.lock before it seeds, builds or binds anything, and holds
 * it until it exits (the kernel drops it when the process ends, however it
 * ends). The lock belongs to the file, not to the path, so a symlink or a
 * bind mount of the same directory finds it taken too.
 *
 * The commands that write (zone import and delete, tsig create and
 * delete, dnssec enable, disable and rollover: cli/admin.h) go through
 * the same lock, so that no write of theirs goes beside a server's writer
 * and no build of theirs beside its builder (which let a chunked full
 * build be overtaken and the served serial move back):
 *   - held by a serve: the command sends the write to it over its control
 *     socket, named in the lock file, and the server runs it;
 *   - free: the command takes the lock for as long as it writes and builds
 *     (a serve started meanwhile exits at once with "data directory ... is
 *     in use by `zonecast zone import` (pid N)": start it again when the
 *     command is done);
 *   - held by another command: it waits its turn (saying so).
 * The reading commands (zone list and export, tsig list, dnssec keys and
 * ds, verify) and token create take no lock: they read (or write a
 * token) through the records store's own locking.
 *
 * The lock file says who holds it, for the messages and for the commands:
 * "PID\nWHO\n" ("zonecast serve", "zonecast zone import", ...), and a
 * serve adds "control PATH\n" once its control socket listens (PATH
 * relative to the data directory when inside it; "none" without one).
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
	/* Its records in PostgreSQL (records.h, records_bind()). */
	if ((size_t)snprintf(path, sizeof(path), "%s/" RECORDS_STORE_FILE,
	                     dir) < sizeof(path) && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode)) {
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

/* The lock file's text: "PID\nWHO\n", and a serve's "control PATH\n". */
#define LOCK_TEXT_MAX (PATH_MAX + 128)

/* Reads who holds the lock from its file (fields "" while not written:
 * the holder may be starting). */
static void read_holder(int fd, cli_holder_t *h)
{
	char text[LOCK_TEXT_MAX];
	memset(h, 0, sizeof(*h));
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);
	for (int i = 0; line != NULL; i++, line = strtok_r(NULL, "\n", &save)) {
		if (i == 0) {
			h->pid = strtol(line, NULL, 10);
		} else if (i == 1) {
			snprintf(h->who, sizeof(h->who), "%s", line);
		} else if (strncmp(line, "control ", 8) == 0) {
			snprintf(h->control, sizeof(h->control), "%s", line + 8);
		}
	}
}

bool cli_holder_is_serve(const cli_holder_t *h)
{
	/* An empty "who": a serve of a version that wrote its pid only. */
	return h->who[0] == '\0' || strcmp(h->who, CLI_HOLDER_SERVE) == 0;
}

/* Says who holds the lock, for a serve that cannot start: the pid written
 * right after the lock was taken (waited for a moment: the two may be
 * starting). */
static void report_holder(const char *dir, int fd)
{
	cli_holder_t h;
	read_holder(fd, &h);
	for (int tries = 0; tries < 50 && h.pid == 0; tries++) {
		usleep(2000);
		read_holder(fd, &h);
	}
	char real[PATH_MAX], pid[32] = "";
	const char *shown = realpath(dir, real) != NULL ? real : dir;
	if (h.pid != 0) {
		snprintf(pid, sizeof(pid), " (pid %ld)", h.pid);
	}
	if (cli_holder_is_serve(&h)) {
		fprintf(stderr, "zonecast serve: data directory %s is in use by "
		        "another zonecast serve%s: one data directory has one "
		        "server; nothing was started\n", shown, pid);
	} else {
		fprintf(stderr, "zonecast serve: data directory %s is in use by "
		        "`%s`%s, which writes to it with no server running; "
		        "nothing was started: start zonecast serve once it is "
		        "done\n", shown, h.who, pid);
	}
}

/* Writes the lock file's text (the lock holds without it: only the
 * messages would lose the pid). */
static void write_text(int fd, const char *text)
{
	size_t len = strlen(text);
	if (pwrite(fd, text, len, 0) != (ssize_t)len ||
	    ftruncate(fd, (off_t)len) != 0) {
		/* Said by nobody: a full disk also stops the stores. */
	}
}

/* Root (an operator's command) leaves the lock file to the directory's
 * owner, the server's user: a server started as that user must open it. */
static void give_to_owner(const char *dir, int fd)
{
	struct stat st, own;
	if (geteuid() == 0 && stat(dir, &st) == 0 && fstat(fd, &own) == 0 &&
	    (own.st_uid != st.st_uid || own.st_gid != st.st_gid) &&
	    fchown(fd, st.st_uid, st.st_gid) != 0) {
		/* The server says so if it cannot open it. */
	}
}

int cli_claim_data_dir(const char *dir, const char *who, int *lock_fd,
                       cli_holder_t *holder)
{
	*lock_fd = -1;
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/serve.lock", dir) >=
	    sizeof(path)) {
		fprintf(stderr, "zonecast: data directory path too long: %s\n",
		        dir);
		return -ENAMETOOLONG;
	}
	/* Never through a link: the directory may belong to the server's
	 * user, who could have put there a link to a file of root's for an
	 * operator's command to lock, give away and overwrite. */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
	              O_NONBLOCK, 0600);
	if (fd < 0 && errno == EACCES) {
		/* To see who holds it. */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	}
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	                st.st_nlink != 1)) {
		close(fd);
		fd = -1;
		errno = EINVAL;
	}
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "zonecast: cannot open %s: %s\n", path,
		        err == ELOOP ? "it is a symbolic link (not followed)" :
		        err == EINVAL ? "not a regular file of one link" :
		        strerror(err));
		return -err;
	}
	give_to_owner(dir, fd);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		if (err == EWOULDBLOCK && holder != NULL) {
			read_holder(fd, holder);
			close(fd);
			return 1;
		}
		if (err == EWOULDBLOCK) {
			report_holder(dir, fd);
		} else {
			fprintf(stderr, "zonecast: cannot lock %s: %s\n", path,
			        strerror(err));
		}
		close(fd);
		return -err;
	}
	/* Tells a second serve, a command (and the operator) who holds it. */
	char text[LOCK_TEXT_MAX];
	snprintf(text, sizeof(text), "%ld\n%s\n", (long)getpid(), who);
	write_text(fd, text);
	*lock_fd = fd;
	return 0;
}

int cli_lock_data_dir(const char *dir, int *lock_fd)
{
	int ret = cli_prepare_data_dir(dir);
	if (ret != ZC_EOK) {
		*lock_fd = -1;
		return ret;
	}
	ret = cli_claim_data_dir(dir, CLI_HOLDER_SERVE, lock_fd, NULL);
	if (ret < 0 && ret != -EWOULDBLOCK) {
		fprintf(stderr, "zonecast serve: nothing was started\n");
	}
	return ret;
}

void cli_note_control(int lock_fd, const char *dir, const char *control)
{
	char text[LOCK_TEXT_MAX], cwd[PATH_MAX] = "";
	size_t dir_len = strlen(dir);
	const char *shown = control[0] != '\0' ? control : "none";
	char joined[PATH_MAX];
	if (strncmp(control, dir, dir_len) == 0 && control[dir_len] == '/') {
		shown = control + dir_len + 1; /* Relative to the directory. */
	} else if (control[0] != '\0' && control[0] != '/' &&
	           getcwd(cwd, sizeof(cwd)) != NULL &&
	           (size_t)snprintf(joined, sizeof(joined), "%s/%s", cwd,
	                            control) < sizeof(joined)) {
		shown = joined;
	}
	snprintf(text, sizeof(text), "%ld\n%s\ncontrol %s\n", (long)getpid(),
	         CLI_HOLDER_SERVE, shown);
	write_text(lock_fd, text);
}
