/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Master-file writing: a zone from the records store, record by record,
 * in constant memory (see zonefile.h).
 *
 * Each record is a line of its own with its own TTL. The rdata is
 * libknot's presentation form, or RFC 3597's generic form ("TYPE10 \# 1
 * 00") where the presentation form would not read back: for types that
 * libzscanner has no mnemonic for, and for stored rdata that is not
 * well-formed for its type (written by a version that did not check it),
 * which libknot's writer must not be given.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset-dump.h>
#include <libknot/rrset.h>

#include "common/error.h"
#include "dns/rdata.h"
#include "zonefile/zonefile.h"

/* Types libknot names but libzscanner does not read by name. */
static bool has_mnemonic(uint16_t type)
{
	return type != KNOT_RRTYPE_NULL && type != 24 /* SIG */;
}

static int dump(uint16_t type, const uint8_t *rdata, uint16_t len, char *out,
                size_t size, const knot_dump_style_t *style)
{
	uint8_t buf[sizeof(knot_rdata_t) + 65536];
	knot_rdata_t *rd = (knot_rdata_t *)buf;
	knot_rdata_init(rd, len, rdata);
	knot_rrset_t rr;
	knot_rrset_init(&rr, NULL, type, KNOT_CLASS_IN, 0);
	rr.rrs.count = 1;
	rr.rrs.size = knot_rdata_size(len);
	rr.rrs.rdata = rd;
	return knot_rrset_txt_dump_data(&rr, 0, out, size, style);
}

/*
 * Writes every escaped '[' (backslash, bracket) as \091: the same octet
 * for libzscanner and RFC 1035, but BIND reads a backslash-bracket at the
 * start of a label as a bitstring label (RFC 2673) and refuses the file.
 * libknot escapes '[' only in names; the rewrite is exact anywhere, as
 * \X and \DDD both stand for one octet. Returns the new length, or -1
 * when size is too small.
 */
static int unbracket(char *text, size_t len, size_t size)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (text[i] != '\\') {
			continue;
		}
		if (text[i + 1] != '[') {
			i += isdigit((unsigned char)text[i + 1]) ? 3 : 1;
			continue;
		}
		if (len + 2 >= size) {
			return -1;
		}
		memmove(text + i + 4, text + i + 2, len - i - 1);
		memcpy(text + i + 1, "091", 3);
		len += 2;
		i += 3;
	}
	return (int)len;
}

/* A name as every name of the export is written (owners and $ORIGIN
 * alike): libknot's text with unbracket() (the zone's name went out as
 * stored, "$ORIGIN \[z.", which BIND refused). */
static int name_text(const knot_dname_t *name, char *out, size_t size)
{
	if (knot_dname_to_str(out, name, size) == NULL ||
	    unbracket(out, strlen(out), size) < 0) {
		return KNOT_EINVAL;
	}
	return ZC_EOK;
}

int zonefile_rdata_text(uint16_t type, const uint8_t *rdata, uint16_t len,
                        char *out, size_t size, bool *generic)
{
	knot_dump_style_t style = KNOT_DUMP_STYLE_DEFAULT;
	*generic = !has_mnemonic(type) || !dns_rdata_valid(type, rdata, len, NULL);
	int ret = -1;
	if (!*generic) {
		ret = dump(type, rdata, len, out, size, &style);
		ret = ret < 0 ? ret : unbracket(out, (size_t)ret, size);
	}
	if (ret < 0) {
		/* Generic: the data as it is, whatever its form. */
		style.generic = true;
		*generic = true;
		ret = dump(type, rdata, len, out, size, &style);
	}
	return ret < 0 ? ZC_ENOSPACE : ret;
}

void zonefile_type_text(uint16_t type, bool generic, char *out, size_t size)
{
	if (generic) {
		snprintf(out, size, "TYPE%u", type);
	} else {
		knot_rrtype_to_string(type, out, size);
	}
}

typedef struct {
	FILE *out;
	char *line;
	size_t line_size;
	uint32_t serial;
	int error;
} export_t;

/* Puts the zone's serial into an SOA rdata (the records keep the one it
 * was imported with; the zone row holds the live one). */
static void set_serial(uint8_t *rdata, uint16_t len, uint32_t serial)
{
	if (len < 20) {
		return;
	}
	uint8_t *p = rdata + len - 20;
	p[0] = (uint8_t)(serial >> 24);
	p[1] = (uint8_t)(serial >> 16);
	p[2] = (uint8_t)(serial >> 8);
	p[3] = (uint8_t)serial;
}

/* Writes one record as "OWNER<tab>TTL<tab>TEXT". */
static void write_row(export_t *e, const records_row_t *row)
{
	if (e->error != ZC_EOK) {
		return;
	}
	uint8_t soa[2 * KNOT_DNAME_MAXLEN + 20];
	const uint8_t *rdata = row->rdata;
	if (row->type == KNOT_RRTYPE_SOA && row->rdata_len <= sizeof(soa)) {
		memcpy(soa, row->rdata, row->rdata_len);
		set_serial(soa, row->rdata_len, e->serial);
		rdata = soa;
	}
	char owner[4 * KNOT_DNAME_MAXLEN + 1];
	if (name_text(row->owner, owner, sizeof(owner)) != ZC_EOK) {
		e->error = KNOT_EINVAL;
		return;
	}
	bool generic;
	int n = zonefile_rdata_text(row->type, rdata, row->rdata_len, e->line,
	                            e->line_size, &generic);
	if (n < 0) {
		e->error = n;
		return;
	}
	if (generic && has_mnemonic(row->type)) {
		/* Stored before rdata was checked: say why it looks so. */
		const char *why = "";
		dns_rdata_valid(row->type, row->rdata, row->rdata_len, &why);
		fprintf(e->out, "; malformed for its type (%s); an import "
		        "refuses it\n", why);
	}
	char type[32];
	zonefile_type_text(row->type, generic, type, sizeof(type));
	fprintf(e->out, "%-20s\t%u\t%s\t%s\n", owner, row->ttl, type, e->line);
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
	char origin[4 * KNOT_DNAME_MAXLEN + 1];
	ret = name_text(apex, origin, sizeof(origin));
	if (ret != ZC_EOK) {
		records_scan_end(scan);
		return ret;
	}
	fprintf(e->out, "$ORIGIN %s\n", origin);
	records_row_t row;
	while ((ret = records_scan_next(scan, &row)) == 1 && row.okey_len == 0) {
		if (row.type == KNOT_RRTYPE_SOA) {
			write_row(e, &row);
		}
	}
	records_scan_end(scan);
	return ret < 0 ? ret : e->error;
}

int zonefile_export(records_store_t *store, const knot_dname_t *apex,
                    FILE *out)
{
	/* The longest rdata text: 65535 octets as "\DDD" escapes. */
	export_t e = { .out = out, .line_size = 4 * 65536 + 64 };
	e.line = malloc(e.line_size);
	if (e.line == NULL) {
		return KNOT_ENOMEM;
	}
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
		write_row(&e, &row);
		ret = e.error;
	}
	if (ret == 0) {
		ret = e.error;
	}
	records_scan_end(scan);
	free(e.line);
	return ret;
}
