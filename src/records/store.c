/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Opening and closing a records store: a database connection (db.h)
 * brought to this program's schema (schema.c). records.h has the design.
 */
#include <stdio.h>
#include <stdlib.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "records/internal.h"

int records_open(records_store_t **out, const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/records.db", dir) >= (int)sizeof(path)) {
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

