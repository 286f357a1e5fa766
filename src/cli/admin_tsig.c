/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tsig create and tsig delete as administrative writes (admin.h): the
 * request's fields to admin/'s units (admin_tsig_create(),
 * admin_tsig_delete(), which the API's TSIG key endpoints run too), and
 * what the command prints. The secret is printed once, at creation, on
 * the command's stdout.
 *
 * Request fields: tsig-create {"name", "zone", "algorithm", "grants"
 * (space-separated), "transfer", "format": "bind" | "knot"}; tsig-delete
 * {"name"}.
 */
#include <string.h>
#include <libknot/dname.h>

#include "cli/admin.h"
#include "common/error.h"
#include "dns/name_text.h"
#include "dns/tsig_key.h"

static const char *field(const json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

/* The key as the operator asked to see it. */
static int format_key(const records_tsig_key_t *key, const char *name,
                      bool knot_format, char *text, size_t size)
{
	if (!knot_format) {
		return dns_tsig_key_format(key->name, key->algorithm, key->secret,
		                           key->secret_len, text, size);
	}
	char secret[256];
	int ret = dns_tsig_secret_b64(key->secret, key->secret_len, secret,
	                              sizeof(secret));
	snprintf(text, size, "%s:%s:%s\n", key->algorithm, name, secret);
	return ret;
}

int admin_cmd_tsig_create(admin_t *a, const json_t *req)
{
	const char *name = field(req, "name");
	const char *format = field(req, "format");
	records_zone_t zone;
	if (name == NULL) {
		fprintf(a->err, "zonecast tsig create: no key name\n");
		return ZC_EUSAGE;
	}
	int ret = admin_find_zone(a, "tsig", field(req, "zone"), &zone);
	if (ret != ZC_EOK) {
		return ret;
	}
	records_tsig_key_t key;
	char err[300] = "", text[512];
	ret = admin_tsig_create(a->writer, zone.id, name, field(req, "algorithm"),
	                        field(req, "grants"),
	                        !json_is_false(json_object_get(req, "transfer")),
	                        &key, err, sizeof(err));
	if (ret == ZC_EOK) {
		ret = format_key(&key, name, format != NULL &&
		                 strcmp(format, "knot") == 0, text, sizeof(text));
	}
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast tsig create: %s\n",
		        err[0] ? err : zc_strerror(ret));
		return ret;
	}
	fputs(text, a->out);
	return ZC_EOK;
}

int admin_cmd_tsig_delete(admin_t *a, const json_t *req)
{
	const char *name = field(req, "name");
	uint8_t wire[KNOT_DNAME_MAXLEN];
	records_tsig_key_t key;
	if (name == NULL || dns_name_from_text(wire, name, sizeof(wire)) ==
	    NULL || records_tsig_find(a->rs, wire, &key) != ZC_EOK) {
		fprintf(a->err, "zonecast tsig delete: no key %s\n",
		        name ? name : "");
		return ZC_ENOKEY;
	}
	int ret = admin_tsig_delete(a->writer, 0, key.id);
	if (ret != ZC_EOK) {
		fprintf(a->err, "zonecast tsig delete: %s\n", zc_strerror(ret));
	}
	return ret;
}
