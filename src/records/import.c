/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Bulk import (see records.h): collect in memory, sort into (okey, type,
 * canonical rdata) order, check each node against the zone-content rules
 * (records/rules.h), write sorted in one transaction.
 *
 * The write: the zone's row found and locked (records_zone_find_locked())
 * or created, its old records deleted (a signed zone keeps the DNSKEY,
 * CDS and CDNSKEY its signer publishes), every record id drawn at once
 * (records_alloc_ids()), the records streamed in key order through one
 * bulk load (db.h, rdb_copy_*(): COPY on PostgreSQL, an INSERT per row on
 * SQLite), then the zone's serial and record count and one zone-wide
 * change-log event (RECORDS_CHANGE_ZONE_IMPORTED). Any failure rolls the
 * whole transaction back: nothing of the import stays.
 */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrtype/soa.h>

#include "common/arena.h"
#include "common/error.h"
#include "dns/name.h"
#include "records/changelog.h"
#include "records/internal.h"
#include "records/rules.h"

/* One collected record; okey then rdata follow the header. */
typedef struct {
	uint64_t tag;
	uint32_t ttl;
	uint16_t type;
	uint16_t rdata_len;
	uint16_t okey_len;
	uint8_t data[];
} entry_t;

struct records_import {
	records_store_t *store;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint8_t apex_lf[DNS_LF_MAXLEN];
	size_t apex_lf_len;
	zc_arena_t arena;
	entry_t **entries;
	size_t count;
	size_t capacity;
	bool sorted;
	/* A signed zone keeps the keys its signer publishes (DNSKEY, CDS,
	 * CDNSKEY): kept of them are stored, and the file's are not taken
	 * (an import of a zone file without them made the zone bogus: its
	 * signatures by a key no longer published). */
	bool keep_keys;
	int64_t kept;
};

int records_import_begin(records_store_t *store, const knot_dname_t *apex,
                         records_import_t **out)
{
	records_import_t *imp = calloc(1, sizeof(*imp));
	if (imp == NULL) {
		return KNOT_ENOMEM;
	}
	imp->store = store;
	knot_dname_copy_lower(imp->apex, apex);
	imp->apex_lf_len = dns_name_to_lf(imp->apex, imp->apex_lf);
	zc_arena_init(&imp->arena, 4 << 20);
	*out = imp;
	return ZC_EOK;
}

uint64_t records_import_count(const records_import_t *imp)
{
	return imp->count;
}

int records_import_add(records_import_t *imp, const knot_dname_t *owner,
                       uint16_t type, uint32_t ttl, const uint8_t *rdata,
                       uint16_t rdata_len, uint64_t tag)
{
	if (!records_rules_in_zone(imp->apex, owner)) {
		return KNOT_EOUTOFZONE;
	}
	uint8_t lf[DNS_LF_MAXLEN];
	size_t lf_len = dns_name_to_lf(owner, lf);
	if (lf_len - imp->apex_lf_len > DNS_LF_KEY_MAXLEN) {
		return ZC_ENAMEKEY;
	}
	if (imp->store != NULL && imp->store->max_records != 0 &&
	    imp->count >= imp->store->max_records) {
		return ZC_ETOOMANY; /* Stop reading: nothing is written. */
	}
	if (imp->count == imp->capacity) {
		size_t cap = imp->capacity ? imp->capacity * 2 : 4096;
		entry_t **grown = realloc(imp->entries, cap * sizeof(*grown));
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		imp->entries = grown;
		imp->capacity = cap;
	}
	size_t okey_len = lf_len - imp->apex_lf_len;
	entry_t *e = zc_arena_alloc(&imp->arena,
	                            sizeof(*e) + okey_len + rdata_len);
	if (e == NULL) {
		return KNOT_ENOMEM;
	}
	e->tag = tag;
	e->ttl = ttl;
	e->type = type;
	e->rdata_len = rdata_len;
	e->okey_len = (uint16_t)okey_len;
	memcpy(e->data, lf + imp->apex_lf_len, okey_len);
	if (rdata_len > 0) {
		memcpy(e->data + okey_len, rdata, rdata_len);
	}
	imp->entries[imp->count++] = e;
	imp->sorted = false;
	return ZC_EOK;
}

static int blob_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c != 0 ? c : (alen > blen) - (alen < blen);
}

/* The order of the stores: okey (as SQLite and LMDB compare blobs), then
 * type, then rdata in canonical form (records/rules.h) so duplicates sit
 * side by side, names in rdata differing in case or not. */
static int entry_cmp(const void *pa, const void *pb)
{
	const entry_t *a = *(entry_t *const *)pa;
	const entry_t *b = *(entry_t *const *)pb;
	int c = blob_cmp(a->data, a->okey_len, b->data, b->okey_len);
	if (c != 0) {
		return c;
	}
	if (a->type != b->type) {
		return a->type < b->type ? -1 : 1;
	}
	return records_rules_rdata_cmp(a->type, a->data + a->okey_len,
	                               a->rdata_len, b->data + b->okey_len,
	                               b->rdata_len);
}

static void sort_entries(records_import_t *imp)
{
	if (!imp->sorted) {
		qsort(imp->entries, imp->count, sizeof(*imp->entries), entry_cmp);
		imp->sorted = true;
	}
}

static bool same_node(const entry_t *a, const entry_t *b)
{
	return a->okey_len == b->okey_len &&
	       memcmp(a->data, b->data, a->okey_len) == 0;
}

/* One node being checked: its entries, as the rules see them. */
typedef struct {
	records_import_t *imp;
	records_problem_cb problem;
	void *ctx;
	entry_t **entries;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	records_rules_rr_t *rr;
	size_t cap;
} check_t;

/* Reports a problem the rules found in the node (rules.h). */
static void on_rule(size_t index, records_verdict_t verdict, void *ctx)
{
	check_t *c = ctx;
	const char *what = records_rules_reason(verdict);
	if (index == SIZE_MAX) {
		uint16_t type = verdict == RECORDS_RULE_NO_SOA ? KNOT_RRTYPE_SOA :
		                KNOT_RRTYPE_NS;
		c->problem(c->owner, type, 0, what, c->ctx);
		return;
	}
	const entry_t *e = c->entries[index];
	c->problem(c->owner, e->type, e->tag, what, c->ctx);
}

/* Checks one node: n entries in entry_cmp() order (n == 0: the apex,
 * which no record named). Returns the problems found, or a code. */
static int check_node(check_t *c, entry_t **node, size_t n)
{
	records_import_t *imp = c->imp;
	uint8_t lf[DNS_LF_MAXLEN];
	size_t okey_len = n > 0 ? node[0]->okey_len : 0;
	memcpy(lf, imp->apex_lf, imp->apex_lf_len);
	if (okey_len > 0) {
		memcpy(lf + imp->apex_lf_len, node[0]->data, okey_len);
	}
	if (dns_name_from_lf(lf, imp->apex_lf_len + okey_len, c->owner) < 0) {
		c->owner[0] = 0;
	}
	if (n > c->cap) {
		size_t cap = n > 2 * c->cap ? n : 2 * c->cap;
		records_rules_rr_t *grown = realloc(c->rr, cap * sizeof(*grown));
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		c->rr = grown;
		c->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		const entry_t *e = node[i];
		c->rr[i] = (records_rules_rr_t){
			.type = e->type, .ttl = e->ttl, .rdata_len = e->rdata_len,
			.rdata = e->data + e->okey_len, .tag = e->tag };
	}
	c->entries = node;
	records_rules_node_t rn = { .apex = imp->apex, .owner = c->owner,
	                            .rr = c->rr, .count = n };
	return records_rules_check_node(&rn, on_rule, c);
}

/* The DNAME whose subtree the sorted walk is in (RFC 6672 §2.4). */
typedef struct {
	const entry_t *node;   /* Its node's first entry; NULL: none. */
	char what[KNOT_DNAME_TXT_MAXLEN + 64];
} dname_t;

/* The subtree rule of DNAME for one node (n entries, in entry_cmp()
 * order, after every node before it): a node below the DNAME the walk is
 * in has each of its records reported; otherwise a DNAME of its own
 * starts a subtree. Names sort right after their ancestors (dns/name.h),
 * so a DNAME's subtree is the nodes that follow it while they are below
 * it. Returns the problems found. */
static int check_below_dname(check_t *c, dname_t *d, entry_t **node, size_t n)
{
	const entry_t *e = node[0];
	if (d->node != NULL &&
	    records_rules_key_is_below(e->data, e->okey_len, d->node->data,
	                               d->node->okey_len)) {
		for (size_t i = 0; i < n; i++) {
			c->problem(c->owner, node[i]->type, node[i]->tag, d->what,
			           c->ctx);
		}
		return (int)n;
	}
	d->node = NULL;
	for (size_t i = 0; i < n; i++) {
		if (node[i]->type == KNOT_RRTYPE_DNAME) {
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, c->owner, sizeof(name));
			snprintf(d->what, sizeof(d->what), "record below the "
			         "DNAME at %s (RFC 6672 section 2.4)", name);
			d->node = e;
			break;
		}
	}
	return 0;
}

int records_import_check(records_import_t *imp, records_problem_cb problem,
                         void *ctx)
{
	sort_entries(imp);
	check_t c = { .imp = imp, .problem = problem, .ctx = ctx };
	dname_t d = { .node = NULL };
	int problems = 0, ret = 0;
	/* The apex sorts first; a zone without records there still gets
	 * its SOA and NS rules checked. */
	if (imp->count == 0 || imp->entries[0]->okey_len != 0) {
		ret = check_node(&c, NULL, 0);
		problems += ret > 0 ? ret : 0;
	}
	size_t first = 0;
	for (size_t i = 1; i <= imp->count && ret >= 0; i++) {
		if (i == imp->count || !same_node(imp->entries[i],
		                                  imp->entries[first])) {
			ret = check_node(&c, imp->entries + first, i - first);
			problems += ret > 0 ? ret : 0;
			if (ret >= 0) {
				problems += check_below_dname(&c, &d,
				                              imp->entries + first,
				                              i - first);
			}
			first = i;
		}
	}
	free(c.rr);
	return ret < 0 ? ret : problems;
}

/* --- Writing --- */

/* Deletes an existing zone's records but, when it is signed (it has
 * keys), those its signer publishes. */
static int empty_zone(records_import_t *imp, int64_t zone_id)
{
	/* Deleted below rows.c: what this transaction read ahead of the
	 * zone (its nodes, its DNAMEs) is not so any more. */
	records_prefetch_forget_zone(imp->store, zone_id);
	int64_t keys = 0;
	int ret = records_query_int64(imp->store, RDB_SQL("SELECT count(*)"
	                              " FROM dnssec_keys WHERE zone_id = ?1"),
	                              zone_id, &keys);
	if (ret != ZC_EOK || keys == 0) {
		return ret != ZC_EOK ? ret : records_exec_int64(imp->store,
		       RDB_SQL("DELETE FROM records WHERE zone_id = ?1"), zone_id);
	}
	imp->keep_keys = true;
	ret = records_exec_int64(imp->store, RDB_SQL("DELETE FROM records"
	                         " WHERE zone_id = ?1 AND type NOT IN"
	                         " (48, 59, 60)"), zone_id); /* DNSKEY, CDS, CDNSKEY */
	return ret != ZC_EOK ? ret : records_query_int64(imp->store, RDB_SQL(
		"SELECT count(*) FROM records WHERE zone_id = ?1"), zone_id,
		&imp->kept);
}

/* Finds or creates the zone row; empties an existing zone. */
static int prepare_zone(records_import_t *imp, int64_t now,
                        records_zone_t *zone, bool *is_new)
{
	/* The zone's row locked to the commit (PostgreSQL): other writers
	 * of the zone wait for the import, writers of other zones do not. */
	int ret = records_zone_find_locked(imp->store, imp->apex, zone);
	*is_new = (ret == ZC_ENOZONE);
	if (ret == ZC_EOK) {
		return empty_zone(imp, zone->id);
	}
	if (ret != ZC_ENOZONE) {
		return ret;
	}
	rdb_stmt_t *stmt;
	ret = rdb_prepare(imp->store->db, RDB_SQL(
		"INSERT INTO zones(name, apex,"
		" serial, created_on, modified_on)"
		" VALUES (?1, ?2, 0, ?3, ?4)"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, imp->apex, sizeof(name));
	rdb_bind_text(stmt, 1, name);
	rdb_bind_blob(stmt, 2, imp->apex, knot_dname_size(imp->apex));
	rdb_bind_int64(stmt, 3, now);
	rdb_bind_int64(stmt, 4, now);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	return ret == ZC_EOK ? records_zone_find(imp->store, imp->apex, zone) : ret;
}

/* The zone file's serial, from the apex SOA's rdata (RFC 1035 §3.3.13). */
static void note_serial(const entry_t *e, uint32_t *file_serial,
                        bool *has_serial)
{
	if (e->type == KNOT_RRTYPE_SOA && e->okey_len == 0 &&
	    e->rdata_len >= 22) {
		knot_rdata_t *rd = alloca(knot_rdata_size(e->rdata_len));
		knot_rdata_init(rd, e->rdata_len, e->data + e->okey_len);
		*file_serial = knot_soa_serial(rd);
		*has_serial = true;
	}
}

/* The columns copy_entry() gives, in its order. */
#define IMPORT_COLUMNS "id, zone_id, okey, owner, type, ttl, rdata," \
	" created_on, modified_on"

/* One record as a row of the load. lf holds the apex's LF, owner room
 * for the owner. */
static int copy_entry(records_import_t *imp, rdb_copy_t *copy,
                      const entry_t *e, int64_t id, int64_t zone_id,
                      int64_t now, uint8_t *lf, uint8_t *owner)
{
	memcpy(lf + imp->apex_lf_len, e->data, e->okey_len);
	int olen = dns_name_from_lf(lf, imp->apex_lf_len + e->okey_len, owner);
	if (olen < 0) {
		return olen;
	}
	rdb_copy_int64(copy, id);
	rdb_copy_int64(copy, zone_id);
	/* The apex's okey and an empty rdata are empty values, not NULL. */
	rdb_copy_blob(copy, e->okey_len ? e->data : (const uint8_t *)"",
	              e->okey_len);
	rdb_copy_blob(copy, owner, (size_t)olen);
	rdb_copy_int64(copy, e->type);
	rdb_copy_int64(copy, e->ttl);
	rdb_copy_blob(copy, e->rdata_len ? e->data + e->okey_len :
	              (const uint8_t *)"", e->rdata_len);
	rdb_copy_int64(copy, now);
	rdb_copy_int64(copy, now);
	return rdb_copy_row(copy);
}

/* Writes every record, in key order, with ids drawn at once beforehand
 * (nothing else may run on the connection during the load). */
static int insert_all(records_import_t *imp, int64_t zone_id, int64_t now,
                      uint32_t *file_serial, bool *has_serial,
                      int64_t *stored)
{
	int64_t *ids = malloc((imp->count + 1) * sizeof(*ids));
	if (ids == NULL) {
		return KNOT_ENOMEM;
	}
	rdb_copy_t *copy = NULL;
	int ret = records_alloc_ids(imp->store, imp->count, ids);
	if (ret == ZC_EOK) {
		ret = rdb_copy_begin(imp->store->db, "records", IMPORT_COLUMNS,
		                     &copy);
	}
	uint8_t lf[DNS_LF_MAXLEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	memcpy(lf, imp->apex_lf, imp->apex_lf_len);
	for (size_t i = 0; i < imp->count && ret == ZC_EOK; i++) {
		const entry_t *e = imp->entries[i];
		note_serial(e, file_serial, has_serial);
		if (imp->keep_keys &&
		    records_rules_is_published_key(e->type)) {
			continue; /* The signer's, kept. */
		}
		ret = copy_entry(imp, copy, e, ids[i], zone_id, now, lf, owner);
		(*stored)++;
	}
	if (ret == ZC_EOK) {
		ret = rdb_copy_end(copy);
	} else {
		rdb_copy_abort(copy);
	}
	free(ids);
	return ret;
}

/* RFC 1982: is a newer than b? */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

static int write_zone(records_import_t *imp, uint64_t *seq,
                      records_zone_t *zone)
{
	int64_t now = records_now_ms();
	bool is_new, has_serial = false;
	uint32_t file_serial = 0;
	int64_t stored = 0;
	int ret = prepare_zone(imp, now, zone, &is_new);
	if (ret == ZC_EOK) {
		ret = insert_all(imp, zone->id, now, &file_serial, &has_serial,
		                 &stored);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	uint32_t serial = zone->serial + 1;
	if (has_serial && (is_new || serial_newer(file_serial, zone->serial))) {
		serial = file_serial;
	}
	if (is_new) {
		/* Never behind a zone deleted under the name. */
		ret = records_zone_first_serial(imp->store, imp->apex, &serial);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	rdb_stmt_t *stmt;
	ret = rdb_prepare(imp->store->db, RDB_SQL(
		"UPDATE zones SET serial = ?1,"
		" modified_on = ?2, record_count = ?3"
		" WHERE id = ?4"), &stmt);
	if (ret != ZC_EOK) {
		return ret;
	}
	rdb_bind_int64(stmt, 1, serial);
	rdb_bind_int64(stmt, 2, now);
	rdb_bind_int64(stmt, 3, stored + imp->kept);
	rdb_bind_int64(stmt, 4, zone->id);
	ret = rdb_run(stmt);
	rdb_done(stmt);
	zone->serial = serial;
	if (ret == ZC_EOK) {
		records_change_entry_t entry = {
			.zone_id = zone->id, .apex = zone->apex,
			.version = serial, .kind = RECORDS_CHANGE_ZONE_IMPORTED,
		};
		ret = records_changelog_append(imp->store, &entry, seq);
	}
	return ret;
}

int records_import_commit(records_import_t *imp, uint64_t *seq,
                          records_zone_t *zone)
{
	records_zone_t local_zone;
	uint64_t local_seq;
	sort_entries(imp);
	records_ids_forget(imp->store);
	records_changelog_begin(imp->store);
	int ret = rdb_begin_write(imp->store->db);
	if (ret == ZC_EOK) {
		ret = write_zone(imp, seq ? seq : &local_seq,
		                 zone ? zone : &local_zone);
		ret = (ret == ZC_EOK) ? records_ids_flush(imp->store) : ret;
		ret = (ret == ZC_EOK) ? rdb_commit(imp->store->db) : ret;
		if (ret != ZC_EOK) {
			rdb_rollback(imp->store->db);
			records_changelog_rollback(imp->store);
		}
	}
	if (ret == ZC_EOK && seq != NULL &&
	    records_changelog_committed(imp->store, seq) != ZC_EOK) {
		*seq = 0; /* Committed all the same; not to be waited for. */
	}
	if (ret == ZC_EOK) {
		/* The zone's build reads it next: with the planner told. */
		records_stats_grew(imp->store, (int64_t)imp->count);
		records_keep_stats(imp->store);
	}
	records_ids_forget(imp->store);
	records_import_abort(imp);
	return ret;
}

void records_import_abort(records_import_t *imp)
{
	if (imp == NULL) {
		return;
	}
	zc_arena_deinit(&imp->arena);
	free(imp->entries);
	free(imp);
}
