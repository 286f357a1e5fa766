/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The RR changes of one version of the signed view, as kept in its
 * journal (db.h, vjournal.data) and replayed by IXFR. Each change:
 *
 *   u8 added (1) or deleted (0), owner (wire), u16 type, u32 TTL,
 *   u16 rdata length, rdata
 *
 * integers big-endian. Past `limit` changes the diff only counts
 * (overflow): such a version is not journaled, IXFR across it is
 * answered in AXFR form.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "sigview/internal.h"

void view_diff_init(view_diff_t *d, size_t limit)
{
	memset(d, 0, sizeof(*d));
	d->limit = limit;
}

void view_diff_deinit(view_diff_t *d)
{
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

static bool reserve(view_diff_t *d, size_t more)
{
	if (d->len + more <= d->cap) {
		return true;
	}
	size_t cap = d->cap ? d->cap : 4096;
	while (cap < d->len + more) {
		cap *= 2;
	}
	uint8_t *grown = realloc(d->buf, cap);
	if (grown == NULL) {
		d->error = KNOT_ENOMEM;
		return false;
	}
	d->buf = grown;
	d->cap = cap;
	return true;
}

void view_diff_add(view_diff_t *d, bool added, const knot_dname_t *owner,
                   uint16_t type, uint32_t ttl, const uint8_t *rdata,
                   uint16_t rdata_len)
{
	d->count++;
	if (d->count > d->limit) {
		d->overflow = true;
	}
	if (d->overflow || d->error != ZC_EOK) {
		return;
	}
	size_t olen = knot_dname_size(owner);
	if (!reserve(d, 1 + olen + 8 + rdata_len)) {
		return;
	}
	uint8_t *p = d->buf + d->len;
	*p++ = added ? 1 : 0;
	memcpy(p, owner, olen);
	p += olen;
	*p++ = (uint8_t)(type >> 8);
	*p++ = (uint8_t)type;
	*p++ = (uint8_t)(ttl >> 24);
	*p++ = (uint8_t)(ttl >> 16);
	*p++ = (uint8_t)(ttl >> 8);
	*p++ = (uint8_t)ttl;
	*p++ = (uint8_t)(rdata_len >> 8);
	*p++ = (uint8_t)rdata_len;
	memcpy(p, rdata, rdata_len);
	d->len += 1 + olen + 8 + rdata_len;
}

void view_diff_rrset(view_diff_t *d, bool added, const knot_rrset_t *rr)
{
	knot_rdata_t *rd = rr->rrs.rdata;
	for (uint16_t i = 0; i < rr->rrs.count; i++) {
		view_diff_add(d, added, rr->owner, rr->type, rr->ttl, rd->data,
		              rd->len);
		rd = knot_rdataset_next(rd);
	}
}

int view_diff_foreach(const uint8_t *data, size_t len,
                      int (*cb)(const records_journal_rr_t *rr, void *ctx),
                      void *ctx)
{
	size_t pos = 0;
	while (pos < len) {
		if (len - pos < 2) {
			return ZC_EFORMAT;
		}
		records_journal_rr_t rr = { .added = data[pos] != 0 };
		pos++;
		int olen = knot_dname_wire_check(data + pos, data + len, NULL);
		if (olen <= 0 || len - pos - (size_t)olen < 8) {
			return ZC_EFORMAT;
		}
		rr.owner = data + pos;
		pos += (size_t)olen;
		const uint8_t *p = data + pos;
		rr.type = (uint16_t)(p[0] << 8 | p[1]);
		rr.ttl = (uint32_t)p[2] << 24 | (uint32_t)p[3] << 16 |
		         (uint32_t)p[4] << 8 | p[5];
		rr.rdata_len = (uint16_t)(p[6] << 8 | p[7]);
		pos += 8;
		if (len - pos < rr.rdata_len) {
			return ZC_EFORMAT;
		}
		rr.rdata = data + pos;
		pos += rr.rdata_len;
		int ret = cb(&rr, ctx);
		if (ret != ZC_EOK) {
			return ret;
		}
	}
	return ZC_EOK;
}
