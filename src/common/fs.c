/* SPDX-License-Identifier: GPL-3.0-or-later */
/* File system conditions behind failed writes (see fs.h). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/fsuid.h>
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
		return zc_fs_link_trusted(path) ? 0 : -ELOOP;
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

/* Whether a directory (an fd) is root's and writable by no one else: a
 * link in it was put there by root. */
static bool dir_trusted(int dirfd)
{
	struct stat st;
	return fstat(dirfd, &st) == 0 && st.st_uid == 0 &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

bool zc_fs_link_trusted(const char *path)
{
	if (geteuid() != 0) {
		return true;
	}
	char copy[PATH_MAX];
	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy)) {
		return false;
	}
	int fd = open(dirname(copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool trusted = fd >= 0 && dir_trusted(fd);
	if (fd >= 0) {
		close(fd);
	}
	return trusted;
}

/* openat() of one component: O_NOFOLLOW first; a link followed only when
 * dirfd is a directory of root's (or this is not root). */
static int open_component(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW, mode);
	if (fd >= 0 && (flags & O_PATH) && !(flags & O_DIRECTORY)) {
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISLNK(st.st_mode)) {
			return fd;
		}
		close(fd); /* The link itself: follow it, or not. */
		fd = -1;
		errno = ELOOP;
	}
	if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR)) {
		return fd;
	}
	struct stat st;
	bool link = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	            S_ISLNK(st.st_mode);
	if (!link) {
		return -1; /* errno of the open: not a directory, ... */
	}
	if (geteuid() != 0 || dir_trusted(dirfd)) {
		return openat(dirfd, name, flags, mode);
	}
	errno = ELOOP;
	return -1;
}

int zc_fs_open(const char *path, int flags, mode_t mode)
{
	/* Component by component from the start of the path: a link in any
	 * directory another user may write is not followed, the last
	 * component's or a directory's on the way (a log file's directory
	 * swapped for a link to one of root's). */
	char copy[PATH_MAX];
	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int dirfd = open(copy[0] == '/' ? "/" : ".",
	                 O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *save = NULL, *name = strtok_r(copy, "/", &save);
	while (dirfd >= 0 && name != NULL) {
		char *next = strtok_r(NULL, "/", &save);
		int fd;
		if (next == NULL) {
			fd = open_component(dirfd, name, flags, mode);
		} else {
			fd = open_component(dirfd, name, O_PATH | O_DIRECTORY |
			                    O_CLOEXEC, 0);
		}
		int err = errno;
		close(dirfd);
		errno = err;
		if (next == NULL) {
			return fd;
		}
		dirfd = fd;
		name = next;
	}
	if (dirfd >= 0) {
		close(dirfd); /* "/" or "": no file named */
		errno = EISDIR;
	}
	return -1;
}

/* A file of root's in the directory (made by root before it opened files
 * there as their owner) is given to the owner, checked on the descriptor:
 * a regular file of one link. */
static void adopt(const char *dir, const char *name, const struct stat *own)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		return;
	}
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1 && st.st_uid == 0 &&
	    fchownat(fd, "", own->st_uid, own->st_gid, AT_EMPTY_PATH) != 0) {
		/* The open as the owner says what it cannot open. */
	}
	if (fd >= 0) {
		close(fd);
	}
}

void zc_fs_as_owner(const char *dir, const char *const *files,
                    zc_fs_ids_t *saved)
{
	struct stat st;
	*saved = (zc_fs_ids_t){ .switched = false };
	if (geteuid() != 0 || stat(dir, &st) != 0 || st.st_uid == 0) {
		return;
	}
	for (size_t i = 0; files != NULL && files[i] != NULL; i++) {
		adopt(dir, files[i], &st);
	}
	saved->gid = setfsgid(st.st_gid);
	saved->uid = setfsuid(st.st_uid);
	saved->switched = true;
}

void zc_fs_as_root(const zc_fs_ids_t *saved)
{
	if (saved->switched) {
		setfsuid((uid_t)saved->uid);
		setfsgid((gid_t)saved->gid);
	}
}
