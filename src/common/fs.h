/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a file system says when a write failed without a useful errno
 * (LMDB's short writes, SQLite's "disk I/O error"): full, read-only. And
 * files made in a directory another user may own (the data directory of
 * a server that runs as `user`), never through a link that user put
 * there for root to write through.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* After an I/O error that says nothing more (a short write, SQLite's
 * "disk I/O error"): -EROFS when path's file system is read-only now,
 * -ENOSPC when it has (almost) no free space, else 0. */
int zc_fs_condition(const char *path);

/* Makes and removes a file in the directory (the first dir_len bytes of
 * dir): ext4 turned read-only by an error shows it only to writers, not to
 * statvfs() or access(). 0 or -errno. */
int zc_fs_probe_write(const char *dir, int dir_len);

/* Makes the directory's entries durable (after a rename or a new file in
 * it): open and fsync the directory. 0 or -errno. */
int zc_fs_sync_dir(const char *dir);

/* Creates path afresh for writing (whatever was there is removed first),
 * never through a symbolic link: O_EXCL | O_NOFOLLOW. An fd or -errno. */
int zc_fs_create_new(const char *path, mode_t mode);

/* Whether root may open path by its name (a check for the message; the
 * open itself must not follow what it refuses: zc_fs_open(),
 * zc_fs_as_owner()): 0 when not root, or path is absent, no symbolic link
 * or one zc_fs_link_trusted() takes, and not a regular file with other
 * hard links; else -ELOOP or -EMLINK. */
int zc_fs_may_follow(const char *path);

/* Whether root may follow a symbolic link found at path: only where no
 * other user could have put it there or swap it (its directory is
 * root's and writable by no one else). Not root: always (a link gives
 * a user nothing he could not open himself). */
bool zc_fs_link_trusted(const char *path);

/* open() of path that follows a symbolic link only when
 * zc_fs_link_trusted() (O_NOFOLLOW first, so there is no moment between
 * a check and the open for a link to appear): an fd, or -1 with errno
 * (ELOOP for a link not followed). With O_PATH the link itself is never
 * returned: one not followed is ELOOP too. */
int zc_fs_open(const char *path, int flags, mode_t mode);

/* The reason zc_fs_may_follow() (or an O_NOFOLLOW open) refused, for a
 * message: ret is its -errno. */
const char *zc_fs_link_refusal(int ret);

/* The file-system ids of this thread before zc_fs_as_owner(). */
typedef struct {
	bool switched;
	int uid, gid;
} zc_fs_ids_t;

/* When root works in a directory of another user's (a data directory of
 * a server that runs as `user`), makes this thread open files as that
 * user (setfsuid/setfsgid) until zc_fs_as_root(): a library that opens
 * files by name, following links (LMDB; SQLite resolves a link at the
 * database's own name), then cannot open a file of root's a link points
 * to, and the files it makes are the owner's. Threads started meanwhile
 * inherit it. files (NULL-terminated names in dir, or NULL): those of
 * root's (made before), regular files of one link, are given to the
 * owner first, checked on the descriptor. */
void zc_fs_as_owner(const char *dir, const char *const *files,
                    zc_fs_ids_t *saved);
void zc_fs_as_root(const zc_fs_ids_t *saved);
