/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bulk import: replaces a zone's records in one transaction, checks them
 * in a streaming pass over the (okey, type) index, and logs one
 * zone_imported event. Memory stays bounded by the largest node.
 */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset.h>
#include <libknot/rrtype/soa.h>

#include "common/arena.h"
#include "common/error.h"
#include "dns/name.h"
#include "records/sqlite.h"

struct records_import {
	records_store_t *store;
	records_zone_t zone;
	bool is_new;
	sqlite3_stmt *insert;
	uint8_t apex_lf[DNS_LF_MAXLEN];
	size_t apex_lf_len;
	uint32_t file_serial;
	bool has_serial;
	int64_t now;
};

static int create_zone(records_import_t *imp, const knot_dname_t *apex)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(imp->store, "INSERT INTO zones"
	                              "(name, apex, serial, created_on,"
	                              " modified_on) VALUES (?, ?, 0, ?, ?)",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, apex, sizeof(name));
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(stmt, 2, apex, knot_dname_size(apex), SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 3, imp->now);
	sqlite3_bind_int64(stmt, 4, imp->now);
	ret = records_sql_error(imp->store->db, sqlite3_step(stmt));
	sqlite3_finalize(stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	imp->is_new = true;
	return records_zone_find(imp->store, apex, &imp->zone);
}

static int empty_zone(records_import_t *imp)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(imp->store, "DELETE FROM records"
	                              " WHERE zone_id = ?", &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, imp->zone.id);
	ret = records_sql_error(imp->store->db, sqlite3_step(stmt));
	sqlite3_finalize(stmt);
	return ret;
}

int records_import_begin(records_store_t *store, const knot_dname_t *apex,
                         records_import_t **out)
{
	records_import_t *imp = calloc(1, sizeof(*imp));
	if (imp == NULL) {
		return KNOT_ENOMEM;
	}
	imp->store = store;
	imp->now = records_now_ms();
	uint8_t lower[KNOT_DNAME_MAXLEN];
	knot_dname_copy_lower(lower, apex);
	imp->apex_lf_len = dns_name_to_lf(lower, imp->apex_lf);
	int ret = records_sql_exec(store, "BEGIN IMMEDIATE");
	if (ret != ZC_EOK) {
		free(imp);
		return ret;
	}
	ret = records_zone_find(store, lower, &imp->zone);
	if (ret == ZC_ENOZONE) {
		ret = create_zone(imp, lower);
	} else if (ret == ZC_EOK) {
		ret = empty_zone(imp);
	}
	if (ret == ZC_EOK) {
		ret = records_sql_prepare(store, "INSERT INTO records(zone_id,"
		                          " okey, owner, type, ttl, rdata,"
		                          " created_on, modified_on)"
		                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		                          &imp->insert);
	}
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	*out = imp;
	return ZC_EOK;
}

int records_import_add(records_import_t *imp, const knot_dname_t *owner,
                       uint16_t type, uint32_t ttl, const uint8_t *rdata,
                       uint16_t rdata_len)
{
	uint8_t lower[KNOT_DNAME_MAXLEN];
	uint8_t lf[DNS_LF_MAXLEN];
	knot_dname_copy_lower(lower, owner);
	size_t lf_len = dns_name_to_lf(lower, lf);
	if (lf_len < imp->apex_lf_len ||
	    memcmp(lf, imp->apex_lf, imp->apex_lf_len) != 0) {
		return KNOT_EOUTOFZONE;
	}
	if (type == KNOT_RRTYPE_SOA && lf_len == imp->apex_lf_len &&
	    rdata_len >= 20) {
		knot_rdata_t *rd = alloca(knot_rdata_size(rdata_len));
		knot_rdata_init(rd, rdata_len, rdata);
		imp->file_serial = knot_soa_serial(rd);
		imp->has_serial = true;
	}
	sqlite3_stmt *st = imp->insert;
	sqlite3_bind_int64(st, 1, imp->zone.id);
	sqlite3_bind_blob(st, 2, lf + imp->apex_lf_len,
	                  (int)(lf_len - imp->apex_lf_len), SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, lower, knot_dname_size(lower), SQLITE_STATIC);
	sqlite3_bind_int(st, 4, type);
	sqlite3_bind_int64(st, 5, ttl);
	sqlite3_bind_blob(st, 6, rdata, rdata_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, imp->now);
	sqlite3_bind_int64(st, 8, imp->now);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return records_sql_error(imp->store->db, rc);
}

/* State of the streaming check: the node and RRset being read. */
typedef struct {
	zc_arena_t arena;
	uint8_t okey[DNS_LF_MAXLEN];
	size_t okey_len;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	bool has_cname;
	bool has_other;
	knot_rrset_t rrset;
	bool ttl_reported;
	int problems;
	int soa_count;
	int apex_ns;
} check_t;

typedef void (*problem_cb)(const knot_dname_t *owner, uint16_t type,
                           const char *what, void *ctx);

/* Types allowed beside a CNAME (RFC 4035 §2.5, RFC 2181 §10.1). */
static bool cname_compatible(uint16_t type)
{
	return type == KNOT_RRTYPE_CNAME || type == KNOT_RRTYPE_RRSIG ||
	       type == KNOT_RRTYPE_NSEC;
}

static void end_node(check_t *c, problem_cb problem, void *ctx)
{
	if (c->has_cname && c->has_other) {
		problem(c->owner, KNOT_RRTYPE_CNAME,
		        "CNAME and other data at the same name", ctx);
		c->problems++;
	}
	c->has_cname = false;
	c->has_other = false;
}

static void check_row(check_t *c, const records_row_t *row, bool apex,
                      problem_cb problem, void *ctx)
{
	bool new_node = row->okey_len != c->okey_len ||
	                memcmp(row->okey, c->okey, c->okey_len) != 0;
	if (new_node || row->type != c->rrset.type) {
		zc_arena_reset(&c->arena);
		knot_rrset_init(&c->rrset, c->owner, row->type, KNOT_CLASS_IN,
		                row->ttl);
		c->ttl_reported = false;
	}
	if (new_node) {
		end_node(c, problem, ctx);
		memcpy(c->okey, row->okey, row->okey_len);
		c->okey_len = row->okey_len;
		memcpy(c->owner, row->owner, knot_dname_size(row->owner));
	}
	if (row->type == KNOT_RRTYPE_CNAME) {
		c->has_cname = true;
	} else if (!cname_compatible(row->type)) {
		c->has_other = true;
	}
	if (apex && row->type == KNOT_RRTYPE_SOA) {
		c->soa_count++;
	} else if (row->type == KNOT_RRTYPE_SOA) {
		problem(c->owner, row->type, "SOA outside the zone apex", ctx);
		c->problems++;
	}
	if (apex && row->type == KNOT_RRTYPE_NS) {
		c->apex_ns++;
	}
	if (row->ttl != c->rrset.ttl && !c->ttl_reported) {
		problem(c->owner, row->type, "records of one RRset have "
		        "different TTLs (RFC 2181 section 5.2)", ctx);
		c->problems++;
		c->ttl_reported = true;
	}
	uint16_t before = c->rrset.rrs.count;
	knot_rrset_add_rdata(&c->rrset, row->rdata, row->rdata_len,
	                     zc_arena_mm(&c->arena));
	if (c->rrset.rrs.count == before) {
		problem(c->owner, row->type, "duplicate record", ctx);
		c->problems++;
	}
}

int records_import_check(records_import_t *imp, problem_cb problem, void *ctx)
{
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(imp->store, "SELECT id, okey, owner, type,"
	                              " ttl, rdata FROM records WHERE"
	                              " zone_id = ? ORDER BY okey, type",
	                              &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	sqlite3_bind_int64(stmt, 1, imp->zone.id);
	check_t c = { .okey_len = SIZE_MAX };
	zc_arena_init(&c.arena, 64 * 1024);
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		records_row_t row = {
			.okey = sqlite3_column_blob(stmt, 1),
			.okey_len = sqlite3_column_bytes(stmt, 1),
			.owner = sqlite3_column_blob(stmt, 2),
			.type = sqlite3_column_int(stmt, 3),
			.ttl = (uint32_t)sqlite3_column_int64(stmt, 4),
			.rdata = sqlite3_column_blob(stmt, 5),
			.rdata_len = sqlite3_column_bytes(stmt, 5),
		};
		if (row.okey_len > DNS_LF_MAXLEN || row.owner == NULL) {
			continue;
		}
		if (row.okey == NULL) {
			row.okey = (const uint8_t *)"";
		}
		if (row.rdata == NULL) {
			row.rdata = (const uint8_t *)"";
		}
		check_row(&c, &row, row.okey_len == 0, problem, ctx);
	}
	end_node(&c, problem, ctx);
	ret = records_sql_error(imp->store->db, rc);
	sqlite3_finalize(stmt);
	zc_arena_deinit(&c.arena);
	if (ret != ZC_EOK) {
		return ret;
	}
	if (c.soa_count != 1) {
		problem(imp->zone.apex, KNOT_RRTYPE_SOA, c.soa_count == 0 ?
		        "no SOA record at the zone apex" :
		        "more than one SOA record at the zone apex", ctx);
		c.problems++;
	}
	if (c.apex_ns == 0) {
		problem(imp->zone.apex, KNOT_RRTYPE_NS,
		        "no NS records at the zone apex", ctx);
		c.problems++;
	}
	return c.problems;
}

/* RFC 1982: is a newer than b? */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

int records_import_commit(records_import_t *imp, uint64_t *seq,
                          records_zone_t *zone)
{
	uint32_t serial = imp->zone.serial + 1;
	if (imp->has_serial && (imp->is_new ||
	    serial_newer(imp->file_serial, imp->zone.serial))) {
		serial = imp->file_serial;
	}
	sqlite3_stmt *stmt;
	int ret = records_sql_prepare(imp->store, "UPDATE zones SET serial = ?,"
	                              " modified_on = ? WHERE id = ?", &stmt);
	if (ret == ZC_EOK) {
		sqlite3_bind_int64(stmt, 1, serial);
		sqlite3_bind_int64(stmt, 2, imp->now);
		sqlite3_bind_int64(stmt, 3, imp->zone.id);
		ret = records_sql_error(imp->store->db, sqlite3_step(stmt));
		sqlite3_finalize(stmt);
	}
	if (ret == ZC_EOK) {
		ret = records_log_append(imp->store, imp->zone.id, imp->zone.apex,
		                         knot_dname_size(imp->zone.apex), serial,
		                         RECORDS_CHANGE_ZONE_IMPORTED, seq);
	}
	if (ret == ZC_EOK) {
		sqlite3_finalize(imp->insert);
		imp->insert = NULL;
		ret = records_sql_exec(imp->store, "COMMIT");
	}
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	imp->zone.serial = serial;
	if (zone != NULL) {
		*zone = imp->zone;
	}
	free(imp);
	return ZC_EOK;
}

void records_import_abort(records_import_t *imp)
{
	if (imp == NULL) {
		return;
	}
	sqlite3_finalize(imp->insert);
	records_sql_exec(imp->store, "ROLLBACK");
	free(imp);
}
