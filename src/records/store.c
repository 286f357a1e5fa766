/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Opening and closing a records store: a database connection (db.h)
 * brought to this program's schema (schema.c). records.h has the design.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"

bool records_target_is_pg(const char *target)
{
	return strncmp(target, "postgresql://", 13) == 0 ||
	       strncmp(target, "postgres://", 11) == 0;
}

int records_open(records_store_t **out, const char *target)
{
	char path[4096];
	if (records_target_is_pg(target)) {
		if (snprintf(path, sizeof(path), "%s", target) >=
		    (int)sizeof(path)) {
			return -36; /* -ENAMETOOLONG */
		}
	} else if (snprintf(path, sizeof(path), "%s/records.db", target) >=
	           (int)sizeof(path)) {
		return -36; /* -ENAMETOOLONG */
	}
	records_store_t *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return KNOT_ENOMEM;
	}
	int ret = rdb_open(&s->db, path, NULL);
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
	free(store);
}

int64_t records_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
