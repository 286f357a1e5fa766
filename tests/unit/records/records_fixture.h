/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Shared by the records/ unit tests: zones and units of work on a real
 * records store in a temporary directory, run the way the group committer
 * (writer/writer.c) runs them: one write transaction, each unit in a
 * savepoint that is released or rolled back.
 */
#pragma once

#include <string.h>
#include <libknot/libknot.h>

#include "common/error.h"
#include "dns/name.h"
#include "records/records.h"
#include "tests/unit/test.h"
#include "zonefile/zonefile.h"

/* A name in wire form from text, in a buffer of the caller's. */
static const uint8_t *fx_name(uint8_t *buf, const char *text)
{
	if (knot_dname_from_str(buf, text, KNOT_DNAME_MAXLEN) == NULL) {
		fprintf(stderr, "bad name %s\n", text);
		exit(1);
	}
	knot_dname_to_lower(buf);
	return buf;
}

/* Creates zone `name` with SOA serial `serial` and one NS, in a write
 * transaction of its own. */
static inline int fx_zone_create(records_store_t *rs, const char *name,
                          uint32_t serial, records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN], ns[KNOT_DNAME_MAXLEN];
	uint8_t soa[2 * KNOT_DNAME_MAXLEN + 20];
	char ns_text[KNOT_DNAME_TXT_MAXLEN + 4];
	snprintf(ns_text, sizeof(ns_text), "ns.%s", name);
	fx_name(apex, name);
	fx_name(ns, ns_text);
	size_t len = knot_dname_size(ns);
	memcpy(soa, ns, len);
	memcpy(soa + len, ns, knot_dname_size(ns));
	len += knot_dname_size(ns);
	const uint32_t fields[5] = { serial, 3600, 600, 86400, 300 };
	for (int i = 0; i < 5; i++) {
		soa[len++] = (uint8_t)(fields[i] >> 24);
		soa[len++] = (uint8_t)(fields[i] >> 16);
		soa[len++] = (uint8_t)(fields[i] >> 8);
		soa[len++] = (uint8_t)fields[i];
	}
	const knot_dname_t *nss[1] = { ns };
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		ret = records_zone_create(rs, apex, 300, soa, (uint16_t)len, nss,
		                          1, zone);
	}
	if (ret == ZC_EOK) {
		return records_write_commit(rs);
	}
	records_write_rollback(rs);
	return ret;
}

/* Inserts "owner A 192.0.2.last" into the zone (inside a unit). */
static inline int fx_insert_a(records_store_t *rs, const records_zone_t *zone,
                       const char *owner, uint8_t last, int64_t *id)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	const uint8_t addr[4] = { 192, 0, 2, last };
	records_record_t rec = { .owner = fx_name(name, owner),
	                         .type = KNOT_RRTYPE_A, .ttl = 300,
	                         .rdata = addr, .rdata_len = 4 };
	int ret = records_record_insert(rs, zone, &rec);
	if (ret == ZC_EOK && id != NULL) {
		*id = rec.id;
	}
	return ret;
}

/* A unit's start as an API request's: the zone read (by id, as every
 * unit does first) and its version moved once. */
static inline int fx_unit_start(records_store_t *rs, int64_t zone_id,
                         records_zone_t *zone)
{
	int ret = records_zone_get(rs, zone_id, zone);
	return ret == ZC_EOK ? records_zone_bump(rs, zone) : ret;
}

/* One unit in a savepoint of the open transaction, as writer.c runs
 * it: released when fn succeeds, rolled back when it fails; `later`: as
 * in a batch of the writer's normal mode (run_unit(), later), its
 * savepoint taken late and its release not waited for. */
static inline int fx_run_unit_as(records_store_t *rs, bool later,
                          int (*fn)(records_store_t *rs, void *ctx),
                          void *ctx)
{
	int ret = later ? records_savepoint_later(rs) : records_savepoint(rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = fn(rs, ctx);
	if (ret == ZC_EOK) {
		ret = later ? records_savepoint_release_later(rs) :
		      records_savepoint_release(rs);
	}
	if (ret != ZC_EOK) {
		records_savepoint_rollback(rs);
	}
	return ret;
}

static inline int fx_run_unit(records_store_t *rs,
                       int (*fn)(records_store_t *rs, void *ctx), void *ctx)
{
	return fx_run_unit_as(rs, false, fn, ctx);
}

/* The unit of the tests: adds A records (names[i], address i + 1) to
 * a zone; fails with `fail` after its writes when that is not ZC_EOK
 * (a request refused after it wrote, e.g. a check of the whole batch). */
typedef struct {
	int64_t zone_id;
	const char *names[8];
	int64_t deletes[8];     /* Record ids deleted first (0 ends). */
	int fail;
	uint32_t version;       /* Out: the unit's version. */
} fx_add_t;

static inline int fx_add_unit(records_store_t *rs, void *ctx)
{
	fx_add_t *a = ctx;
	records_zone_t zone;
	int ret = fx_unit_start(rs, a->zone_id, &zone);
	for (int i = 0; i < 8 && a->deletes[i] != 0 && ret == ZC_EOK; i++) {
		ret = records_record_delete(rs, &zone, a->deletes[i]);
	}
	for (int i = 0; i < 8 && a->names[i] != NULL && ret == ZC_EOK; i++) {
		ret = fx_insert_a(rs, &zone, a->names[i], (uint8_t)(i + 1), NULL);
	}
	a->version = zone.serial;
	return ret == ZC_EOK ? a->fail : ret;
}

/* Runs units in one write transaction (a group commit); results[i]
 * receives each unit's code. Returns the commit's. */
static inline int fx_batch(records_store_t *rs, fx_add_t *units, size_t n,
                    int *results)
{
	int ret = records_write_begin(rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	for (size_t i = 0; i < n; i++) {
		results[i] = fx_run_unit(rs, fx_add_unit, &units[i]);
	}
	return records_write_commit(rs);
}

/* Runs one unit in a write transaction of its own. */
static inline int fx_single(records_store_t *rs, fx_add_t *unit)
{
	int result;
	int ret = fx_batch(rs, unit, 1, &result);
	return ret == ZC_EOK ? result : ret;
}

static inline int fx_import_record(const knot_dname_t *owner, uint16_t type,
                            uint32_t ttl, const uint8_t *rdata,
                            uint16_t rdata_len, const char *file,
                            uint64_t line, void *ctx)
{
	(void)file;
	return records_import_add(ctx, owner, type, ttl, rdata, rdata_len,
	                          line) != 0;
}

/* Imports master-file text as zone `name` (replacing its records). */
static inline int fx_import(records_store_t *rs, const char *name, const char *text,
                     records_zone_t *zone)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	fx_name(apex, name);
	records_import_t *imp;
	int ret = records_import_begin(rs, apex, &imp);
	if (ret != ZC_EOK) {
		return ret;
	}
	zonefile_handler_t h = { .record = fx_import_record, .ctx = imp };
	ret = zonefile_parse_text(text, strlen(text), apex, 300, &h);
	if (ret != ZC_EOK) {
		records_import_abort(imp);
		return ret;
	}
	return records_import_commit(imp, NULL, zone);
}

static inline int fx_count_cb(const records_record_t *rec, void *ctx)
{
	(void)rec;
	(*(int64_t *)ctx)++;
	return 0;
}

/* The zone's records of that owner and type (NULL, 0: any), counted
 * by reading them; -1 on a failure. */
static inline int64_t fx_count(records_store_t *rs, int64_t zone_id,
                        const char *owner, uint16_t type)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	int64_t n = 0;
	int ret = records_record_foreach(rs, zone_id,
	                                 owner ? fx_name(name, owner) : NULL,
	                                 type, fx_count_cb, &n);
	return ret == ZC_EOK ? n : -1;
}

static inline int fx_id_cb(const records_record_t *rec, void *ctx)
{
	*(int64_t *)ctx = rec->id;
	return 1;
}

/* The id of the zone's first record of that owner (0: none). */
static inline int64_t fx_id(records_store_t *rs, int64_t zone_id, const char *owner)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	int64_t id = 0;
	records_record_foreach(rs, zone_id, fx_name(name, owner), 0, fx_id_cb,
	                       &id);
	return id;
}

/* The zone's kept record count (zones.record_count). */
static inline int64_t fx_kept(records_store_t *rs, int64_t zone_id)
{
	int64_t n = -1;
	return records_zone_kept_count(rs, zone_id, &n) == ZC_EOK ? n : -1;
}

/* The zone's serial now. */
static inline uint32_t fx_serial(records_store_t *rs, int64_t zone_id)
{
	records_zone_t zone;
	return records_zone_get(rs, zone_id, &zone) == ZC_EOK ? zone.serial : 0;
}

/* A journal (IXFR) read, as "+name@version" and "-name@version" lines. */
typedef struct {
	int count;
	char text[4096];
} fx_journal_t;

static inline int fx_journal_cb(const records_journal_rr_t *rr, void *ctx)
{
	fx_journal_t *j = ctx;
	char owner[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(owner, rr->owner, sizeof(owner));
	size_t pos = strlen(j->text);
	snprintf(j->text + pos, sizeof(j->text) - pos, "%s%c%s@%u",
	         pos ? " " : "", rr->added ? '+' : '-', owner, rr->version);
	j->count++;
	return ZC_EOK;
}

static inline int fx_journal(records_store_t *rs, const char *zone, uint32_t from,
                      uint32_t to, fx_journal_t *j)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	memset(j, 0, sizeof(*j));
	return records_journal_read(rs, fx_name(apex, zone), from, to,
	                            fx_journal_cb, j);
}

/* Change-log events past a sequence, as "kind[:owner]@version" words:
 * kinds rc, rd (record created, deleted), zc, zd, zs, zi, zt (zone
 * created, deleted, settings, imported, touched). */
typedef struct {
	int count;
	uint64_t last;          /* The last event's sequence. */
	char text[8192];
} fx_events_t;

static inline int fx_events_cb(const records_change_t *chg, void *ctx)
{
	static const char *const kinds[] = {
		"?", "zc", "zd", "zs", "zi", "rc", "rd", "zt",
	};
	fx_events_t *e = ctx;
	size_t pos = strlen(e->text);
	const char *kind = (unsigned)chg->kind < 8 ? kinds[chg->kind] : "?";
	char owner[KNOT_DNAME_TXT_MAXLEN + 1] = "";
	if (chg->kind == RECORDS_CHANGE_RECORD_CREATED ||
	    chg->kind == RECORDS_CHANGE_RECORD_DELETED) {
		uint8_t lf[DNS_LF_MAXLEN], name[KNOT_DNAME_MAXLEN];
		size_t len = dns_name_to_lf(chg->apex, lf);
		memcpy(lf + len, chg->okey, chg->okey_len);
		if (dns_name_from_lf(lf, len + chg->okey_len, name) >= 0) {
			knot_dname_to_str(owner, name, sizeof(owner));
		}
	}
	snprintf(e->text + pos, sizeof(e->text) - pos, "%s%s%s%s@%u",
	         pos ? " " : "", kind, owner[0] ? ":" : "", owner,
	         chg->version);
	e->count++;
	e->last = chg->seq;
	return 0;
}

static inline int fx_events(records_store_t *rs, uint64_t after, fx_events_t *e)
{
	memset(e, 0, sizeof(*e));
	return records_changes_since(rs, after, 0, fx_events_cb, e);
}

/* The newest change-log sequence. */
static inline uint64_t fx_last_seq(records_store_t *rs)
{
	uint64_t seq = 0;
	return records_last_seq(rs, &seq) == ZC_EOK ? seq : 0;
}

#define CHECK_STR(a, b) do { \
	const char *sa_ = (a), *sb_ = (b); \
	if (strcmp(sa_, sb_) == 0) { \
		test_passed++; \
	} else { \
		test_failed++; \
		fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
		        __FILE__, __LINE__, #a, sa_, sb_); \
	} \
} while (0)
