/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * zonecast secondaries ZONE --notify ... --allow-transfer ... as an
 * administrative write (admin.h): the running server carries it out (and
 * writes its audit line), or the command itself when none runs. It wrote
 * the store directly while a server ran, and a new allow-transfer entry
 * (who may copy the zone) left no line in the server's log.
 *
 * Request fields: secondaries-set {"zone", "notify": [SPEC...] (absent:
 * kept), "allow_transfer": [SPEC...] (absent: kept)}. Prints the zone's
 * secondaries as they are after the change.
 */
#include <libknot/dname.h>

#include "cli/admin.h"
#include "common/error.h"
#include "transfer/secondary.h"

#define LIST_MAX 64

static int print_entry(int64_t zone_id, records_secondary_kind_t kind,
                       const char *spec, void *ctx)
{
	(void)zone_id;
	fprintf(ctx, "%s\t%s\n", kind == RECORDS_SECONDARY_NOTIFY ? "notify" :
	        "allow-transfer", spec);
	return 0;
}

int admin_secondaries_print(records_store_t *rs, int64_t zone_id, FILE *out)
{
	return records_secondaries_foreach(rs, zone_id, print_entry, out);
}

/* Checks an entry's syntax and that the key it names exists. */
static int check(admin_t *a, const char *spec, bool notify)
{
	char err[1600] = "";
	secondary_notify_t target;
	zc_acl_t acl = { .count = 0 };
	secondary_keys_t keys = { .count = 0 };
	int ret = notify ? secondary_notify_parse(spec, &target, err, sizeof(err)) :
	          secondary_acl_parse(spec, &acl, &keys, err, sizeof(err));
	const uint8_t *key = notify ? (target.has_key ? target.key : NULL) :
	                     (keys.count > 0 ? keys.name[0] : NULL);
	records_tsig_key_t found;
	if (ret == ZC_EOK && key != NULL &&
	    records_tsig_find(a->rs, key, &found) != ZC_EOK) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, key, sizeof(name));
		snprintf(err, sizeof(err), "'%s': no TSIG key %s (zonecast tsig "
		         "create)", spec, name);
		ret = ZC_EUSAGE;
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast secondaries: %s\n", err);
	}
	return ret;
}

/* The entries of list (NULL: not given) into specs; false when one is not
 * a string or there are too many. */
static bool read_list(admin_t *a, const json_t *list, const char **specs,
                      size_t *count)
{
	*count = 0;
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) {
		if (!json_is_string(v) || *count == LIST_MAX) {
			fprintf(a->err, "zonecast secondaries: at most %d entries, "
			        "each a string\n", LIST_MAX);
			return false;
		}
		specs[(*count)++] = json_string_value(v);
	}
	return true;
}

int admin_cmd_secondaries(admin_t *a, const json_t *req)
{
	const json_t *jn = json_object_get(req, "notify");
	const json_t *jt = json_object_get(req, "allow_transfer");
	const char *notify[LIST_MAX], *transfer[LIST_MAX];
	size_t nn = 0, nt = 0;
	records_zone_t zone;
	int ret = admin_find_zone(a, "secondaries",
	                          json_string_value(json_object_get(req, "zone")),
	                          &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (!read_list(a, jn, notify, &nn) || !read_list(a, jt, transfer, &nt)) {
		return ZC_EUSAGE;
	}
	for (size_t i = 0; i < nn; i++) {
		if (check(a, notify[i], true) != ZC_EOK) {
			return ZC_EUSAGE;
		}
	}
	for (size_t i = 0; i < nt; i++) {
		if (check(a, transfer[i], false) != ZC_EOK) {
			return ZC_EUSAGE;
		}
	}
	records_zone_t locked;
	ret = records_write_begin(a->rs);
	if (ret == ZC_EOK) {
		/* The zone's row first (records_secondaries_set()). */
		ret = records_zone_get(a->rs, zone.id, &locked);
	}
	if (ret == ZC_EOK && jn != NULL) {
		ret = records_secondaries_set(a->rs, zone.id,
		                              RECORDS_SECONDARY_NOTIFY, notify, nn);
	}
	if (ret == ZC_EOK && jt != NULL) {
		ret = records_secondaries_set(a->rs, zone.id,
		                              RECORDS_SECONDARY_TRANSFER, transfer,
		                              nt);
	}
	if (ret == ZC_EOK) {
		ret = records_write_commit(a->rs);
	} else {
		records_write_rollback(a->rs);
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast secondaries: %s\n", zc_strerror(ret));
		return ret;
	}
	return admin_secondaries_print(a->rs, zone.id, a->out);
}
