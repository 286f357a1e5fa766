/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Opening and closing a records store: a database connection (db.h)
 * brought to this program's schema (schema.c). records.h has the design.
 */
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "records/internal.h"

bool records_target_is_pg(const char *target)
{
	return rdb_target_is_pg(target);
}

/* DIR/records-store's path. */
static int bound_path(const char *dir, char *path, size_t size)
{
	int n = snprintf(path, size, "%s/" RECORDS_STORE_FILE, dir);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : ZC_EOK;
}

int records_bound_target(const char *dir, char *uri, size_t size)
{
	char path[4096];
	int ret = bound_path(dir, path, sizeof(path));
	FILE *f = ret == ZC_EOK ? fopen(path, "re") : NULL;
	if (f == NULL) {
		return ret != ZC_EOK ? ret : errno == ENOENT ? ZC_EOK : -errno;
	}
	uri[0] = '\0';
	bool got = fgets(uri, (int)size, f) != NULL;
	fclose(f);
	uri[strcspn(uri, "\r\n")] = '\0';
	if (!got || !records_target_is_pg(uri)) {
		zc_error("%s holds no postgresql:// URI", path);
		return ZC_EINVAL_CONFIG;
	}
	return 1;
}

static int bind_write(const char *dir, const char *uri, bool replacing);

int records_bind(const char *dir, const char *uri)
{
	return bind_write(dir, uri, false);
}

int records_bind_replacing(const char *dir, const char *uri)
{
	return bind_write(dir, uri, true);
}

static int bind_write(const char *dir, const char *uri, bool replacing)
{
	char shown[4096];
	records_uri_redact(uri, shown, sizeof(shown));
	if (!records_target_is_pg(uri)) {
		zc_error("records-store: %s is no postgresql:// URI", shown);
		return ZC_EINVAL_CONFIG;
	}
	char bound[4096], path[4096];
	int ret = records_bound_target(dir, bound, sizeof(bound));
	if (ret == 1) {
		if (strcmp(bound, uri) == 0) {
			return ZC_EOK;
		}
		zc_error("data directory %s belongs to the records store in"
		         " %s/" RECORDS_STORE_FILE ", not %s: its edge store"
		         " holds that store's zones", dir, dir, shown);
		return ZC_EINVAL_CONFIG;
	}
	if (ret != ZC_EOK || (ret = bound_path(dir, path, sizeof(path))) !=
	    ZC_EOK) {
		return ret;
	}
	char sqlite_path[4096];
	snprintf(sqlite_path, sizeof(sqlite_path), "%s/records.db", dir);
	if (!replacing && access(sqlite_path, F_OK) == 0) {
		zc_error("data directory %s already holds an SQLite records"
		         " store (records.db): start with an empty data"
		         " directory for %s", dir, shown);
		return ZC_EINVAL_CONFIG;
	}
	/* 0600: the URI may hold a password. Written whole, then renamed. */
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = zc_fs_create_new(tmp, 0600);
	if (fd < 0) {
		return fd;
	}
	size_t len = strlen(uri);
	bool ok = write(fd, uri, len) == (ssize_t)len &&
	          write(fd, "\n", 1) == 1 && fsync(fd) == 0;
	ret = ok ? ZC_EOK : -errno;
	close(fd);
	if (ret == ZC_EOK && rename(tmp, path) != 0) {
		ret = -errno;
	}
	if (ret != ZC_EOK) {
		unlink(tmp);
	}
	return ret == ZC_EOK ? zc_fs_sync_dir(dir) : ret;
}

int records_describe(const char *target, const char **backend, char *where,
                     size_t size)
{
	char uri[4096];
	int bound = records_target_is_pg(target) ? 0 :
	            records_bound_target(target, uri, sizeof(uri));
	if (bound < 0) {
		return bound;
	}
	if (bound == 0 && !records_target_is_pg(target)) {
		*backend = "sqlite";
		snprintf(where, size, "%s/records.db", target);
		return ZC_EOK;
	}
	*backend = "postgresql";
	records_uri_redact(bound == 1 ? uri : target, where, size);
	return ZC_EOK;
}

int records_tune_for_reads(records_store_t *store)
{
	if (rdb_kind(store->db) != RDB_SQLITE) {
		return ZC_EOK;
	}
	return rdb_exec(store->db,
	                "PRAGMA cache_size = -8192;");
}

int records_open(records_store_t **out, const char *target)
{
	char path[4096];
	int bound = records_target_is_pg(target) ? 0 :
	            records_bound_target(target, path, sizeof(path));
	if (bound < 0) {
		return bound;
	}
	if (bound == 1) {
		/* path holds the URI the data directory names. */
	} else if (records_target_is_pg(target)) {
		if (snprintf(path, sizeof(path), "%s", target) >=
		    (int)sizeof(path)) {
			return -ENAMETOOLONG;
		}
	} else if (snprintf(path, sizeof(path), "%s/records.db", target) >=
	           (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	records_store_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = (s->target = strdup(path)) != NULL ? ZC_EOK : KNOT_ENOMEM;
	if (ret == ZC_EOK) {
		ret = rdb_open(&s->db, path, NULL);
	}
	if (ret == ZC_EOK) {
		ret = records_schema_migrate(s);
	}
	if (ret != ZC_EOK) {
		records_close(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

void records_close(records_store_t *store)
{
	if (store == NULL) {
		return;
	}
	rdb_close(store->db);
	records_prefetch_free(store);
	free(store->target);
	free(store);
}

