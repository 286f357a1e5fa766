/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Opening and closing a records store: the SQLite connection (sql.c)
 * brought to this program's schema (schema.c). records.h has the design.
 */
#include <stdio.h>

#include "common/error.h"
#include "records/internal.h"

int records_open(records_store_t **out, const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/records.db", dir) >= (int)sizeof(path)) {
		return -36; /* -ENAMETOOLONG */
	}
	records_store_t *s;
	int ret = records_sql_open(&s, path);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_schema_migrate(s);
	if (ret != ZC_EOK) {
		records_sql_close(s);
		return ret;
	}
	*out = s;
	return ZC_EOK;
}

void records_close(records_store_t *store)
{
	records_sql_close(store);
}
