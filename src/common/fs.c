/* SPDX-License-Identifier: GPL-3.0-or-later */
/* File system conditions behind failed writes (see fs.h). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/fs.h"

/* Free space below this counts as a full disk (the failed write took the
 * rest). */
#define NEARLY_FULL (64u << 10)

int zc_fs_probe_write(const char *dir, int dir_len)
{
	char probe[4096];
	if (snprintf(probe, sizeof(probe), "%.*s/.zonecast-write-probe", dir_len,
	             dir) >= (int)sizeof(probe)) {
		return -ENAMETOOLONG;
	}
	int fd = zc_fs_create_new(probe, 0600);
	if (fd < 0) {
		return fd;
	}
	close(fd);
	unlink(probe);
	return 0;
}

int zc_fs_condition(const char *path)
{
	struct statvfs st;
	if (path == NULL || path[0] == '\0' || statvfs(path, &st) != 0) {
		return 0;
	}
	if (st.f_flag & ST_RDONLY) {
		return -EROFS;
	}
	const char *slash = strrchr(path, '/');
	int ret = slash != NULL ? zc_fs_probe_write(path, (int)(slash - path)) :
	          zc_fs_probe_write(".", 1);
	if (ret == -EROFS || ret == -EACCES) {
		return ret;
	}
	/* Root may write into the blocks reserved for it. */
	unsigned long long blocks = geteuid() == 0 ? st.f_bfree : st.f_bavail;
	return blocks * st.f_frsize < NEARLY_FULL ? -ENOSPC : 0;
}

int zc_fs_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	int ret = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return ret;
}

int zc_fs_create_new(const char *path, mode_t mode)
{
	if (unlink(path) != 0 && errno != ENOENT) {
		return -errno;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	              mode);
	return fd >= 0 ? fd : -errno;
}

int zc_fs_may_follow(const char *path)
{
	struct stat st;
	if (geteuid() != 0 || lstat(path, &st) != 0) {
		return 0; /* absent, or not root's risk: the open says */
	}
	if (S_ISLNK(st.st_mode)) {
		return st.st_uid == 0 ? 0 : -ELOOP;
	}
	return S_ISREG(st.st_mode) && st.st_nlink > 1 ? -EMLINK : 0;
}

const char *zc_fs_link_refusal(int ret)
{
	return ret == -ELOOP ? "a symbolic link where another user could have "
	                       "put it (not followed)" :
	       ret == -EMLINK ? "a file with other hard links (not opened)" :
	       strerror(-ret);
}

bool zc_fs_link_trusted(const char *path)
{
	if (geteuid() != 0) {
		return true;
	}
	char copy[PATH_MAX];
	struct stat st;
	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy)) {
		return false;
	}
	return stat(dirname(copy), &st) == 0 && st.st_uid == 0 &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int zc_fs_open(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_NOFOLLOW, mode);
	if (fd >= 0 && (flags & O_PATH)) {
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISLNK(st.st_mode)) {
			return fd;
		}
		close(fd); /* The link itself: follow it, or not. */
		fd = -1;
		errno = ELOOP;
	}
	if (fd >= 0 || errno != ELOOP) {
		return fd;
	}
	if (!zc_fs_link_trusted(path)) {
		errno = ELOOP;
		return -1;
	}
	return open(path, flags, mode);
}
