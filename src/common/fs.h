/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What a file system says when a write failed without a useful errno
 * (LMDB's short writes, SQLite's "disk I/O error"): full, read-only.
 */
#pragma once

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
