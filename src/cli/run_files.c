/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The pidfile of `zonecast serve` (pidfile, default DATA_DIR/zonecast.pid):
 * the process id and a newline, written whole (a temporary file renamed
 * into place, so a reader never sees half of it) and removed at exit if
 * it still names this process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/serve.h"
#include "common/error.h"
#include "common/log.h"

int serve_pidfile_write(const char *path)
{
	char tmp[CONFIG_STR_MAX + 16], text[24];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	/* Mode 0600, as every file serve writes (main.c's umask): root and
	 * the server's user read it. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ret = ZC_EOK;
	if (fd < 0 || write(fd, text, (size_t)n) != n) {
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
