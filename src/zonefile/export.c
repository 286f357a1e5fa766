/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Master-file writing: a zone from the records store, RRset by RRset, in
 * constant memory (see zonefile.h).
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset-dump.h>
#include <libknot/rrset.h>

#include "common/arena.h"
#include "common/error.h"
#include "zonefile/zonefile.h"

typedef struct {
	FILE *out;
	zc_arena_t arena;
	knot_rrset_t rrset;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	char *buf;
	size_t buf_size;
	uint32_t serial;
	int error;
} export_t;

/* Puts the zone's serial into an SOA rdata (the records keep the one it
 * was imported with; the zone row holds the live one). */
static void set_serial(knot_rrset_t *soa, uint32_t serial)
{
	knot_rdata_t *rd = soa->rrs.rdata;
	if (rd->len < 20) {
		return;
	}
	uint8_t *p = rd->data + rd->len - 20;
	p[0] = (uint8_t)(serial >> 24);
	p[1] = (uint8_t)(serial >> 16);
	p[2] = (uint8_t)(serial >> 8);
	p[3] = (uint8_t)serial;
}

static void flush_rrset(export_t *e)
{
	if (e->rrset.rrs.count == 0 || e->error != ZC_EOK) {
		return;
	}
	if (e->rrset.type == KNOT_RRTYPE_SOA) {
		set_serial(&e->rrset, e->serial);
	}
	int ret = knot_rrset_txt_dump(&e->rrset, &e->buf, &e->buf_size,
	                              &KNOT_DUMP_STYLE_DEFAULT);
	if (ret < 0) {
		e->error = ret;
		return;
	}
	fputs(e->buf, e->out);
	zc_arena_reset(&e->arena);
	knot_rrset_init_empty(&e->rrset);
}

static void add_row(export_t *e, const records_row_t *row)
{
	if (e->rrset.rrs.count == 0 || row->type != e->rrset.type ||
	    !knot_dname_is_equal(row->owner, e->owner)) {
		flush_rrset(e);
		memcpy(e->owner, row->owner, knot_dname_size(row->owner));
		knot_rrset_init(&e->rrset, e->owner, row->type, KNOT_CLASS_IN,
		                row->ttl);
	}
	int ret = knot_rrset_add_rdata(&e->rrset, row->rdata, row->rdata_len,
	                               zc_arena_mm(&e->arena));
	if (ret != KNOT_EOK && e->error == ZC_EOK) {
		e->error = ret;
	}
}

/* Writes the apex SOA first, as every master file starts with it. */
static int write_soa(records_store_t *store, const knot_dname_t *apex,
                     export_t *e)
{
	records_zone_t zone;
	uint64_t seq;
	records_scan_t *scan;
	int ret = records_scan_begin(store, apex, &zone, &seq, &scan);
	if (ret != ZC_EOK) {
		return ret;
	}
	e->serial = zone.serial;
	fprintf(e->out, "$ORIGIN %s\n", zone.name);
	records_row_t row;
	while ((ret = records_scan_next(scan, &row)) == 1 && row.okey_len == 0) {
		if (row.type == KNOT_RRTYPE_SOA) {
			add_row(e, &row);
		}
	}
	flush_rrset(e);
	records_scan_end(scan);
	return ret < 0 ? ret : e->error;
}

int zonefile_export(records_store_t *store, const knot_dname_t *apex,
                    FILE *out)
{
	/* knot_rrset_txt_dump() grows the buffer but wants one to start. */
	export_t e = { .out = out, .buf_size = 64 * 1024 };
	e.buf = malloc(e.buf_size);
	if (e.buf == NULL) {
		return KNOT_ENOMEM;
	}
	zc_arena_init(&e.arena, 64 * 1024);
	knot_rrset_init_empty(&e.rrset);
	int ret = write_soa(store, apex, &e);
	records_zone_t zone;
	uint64_t seq;
	records_scan_t *scan = NULL;
	if (ret == ZC_EOK) {
		ret = records_scan_begin(store, apex, &zone, &seq, &scan);
	}
	records_row_t row;
	while (ret == ZC_EOK && (ret = records_scan_next(scan, &row)) == 1) {
		ret = ZC_EOK;
		if (row.okey_len == 0 && row.type == KNOT_RRTYPE_SOA) {
			continue;
		}
		add_row(&e, &row);
	}
	if (ret == 0) {
		flush_rrset(&e);
		ret = e.error;
	}
	records_scan_end(scan);
	free(e.buf);
	zc_arena_deinit(&e.arena);
	return ret;
}
