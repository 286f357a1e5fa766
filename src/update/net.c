/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The net effect of one UPDATE message (see net.h): two lists of owned
 * copies of records, compared as multisets once the message ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>
#include <libknot/errcode.h>

#include "common/error.h"
#include "update/net.h"

struct update_net_rec {
	int64_t id;
	int64_t created_on, modified_on;
	uint8_t *owner;
	uint8_t *rdata;
	char *comment, *tags;   /* What the API keeps beside the record. */
	uint32_t ttl;
	uint16_t type, rdata_len;
	uint8_t api_form;
};

static void rec_free(update_net_rec_t *r)
{
	free(r->owner);
	free(r->rdata);
	free(r->comment);
	free(r->tags);
}

static int push(update_net_rec_t **list, size_t *count, size_t *cap,
                const records_record_t *rec)
{
	if (*count == *cap) {
		size_t grown_cap = *cap ? 2 * *cap : 8;
		update_net_rec_t *grown = realloc(*list, grown_cap * sizeof(*grown));
		if (grown == NULL) {
			return KNOT_ENOMEM;
		}
		*list = grown;
		*cap = grown_cap;
	}
	size_t owner_size = knot_dname_size(rec->owner);
	update_net_rec_t r = {
		.id = rec->id, .created_on = rec->created_on,
		.modified_on = rec->modified_on, .ttl = rec->ttl,
		.type = rec->type, .rdata_len = rec->rdata_len,
		.api_form = rec->api_form,
		.owner = malloc(owner_size),
		.rdata = malloc(rec->rdata_len + 1u),
		.comment = rec->comment != NULL ? strdup(rec->comment) : NULL,
		.tags = rec->tags != NULL ? strdup(rec->tags) : NULL,
	};
	if (r.owner == NULL || r.rdata == NULL ||
	    (rec->comment != NULL && r.comment == NULL) ||
	    (rec->tags != NULL && r.tags == NULL)) {
		rec_free(&r);
		return KNOT_ENOMEM;
	}
	memcpy(r.owner, rec->owner, owner_size);
	memcpy(r.rdata, rec->rdata, rec->rdata_len);
	(*list)[(*count)++] = r;
	return ZC_EOK;
}

int update_net_added(update_net_t *net, const records_record_t *rec)
{
	return push(&net->added, &net->added_count, &net->added_cap, rec);
}

int update_net_removed(update_net_t *net, const records_record_t *rec)
{
	for (size_t i = 0; i < net->added_count; i++) {
		if (net->added[i].id == rec->id) {
			rec_free(&net->added[i]);
			net->added[i] = net->added[--net->added_count];
			return ZC_EOK;
		}
	}
	return push(&net->removed, &net->removed_count, &net->removed_cap, rec);
}

/* An order over a record's owner (lowercase wire), type and rdata: what
 * makes it the same record to the API, whatever its TTL. */
static int cmp_rr(const void *pa, const void *pb)
{
	const update_net_rec_t *a = pa, *b = pb;
	size_t la = knot_dname_size(a->owner), lb = knot_dname_size(b->owner);
	int c = la != lb ? (la < lb ? -1 : 1) : memcmp(a->owner, b->owner, la);
	if (c == 0 && a->type != b->type) {
		c = a->type < b->type ? -1 : 1;
	}
	if (c == 0 && a->rdata_len != b->rdata_len) {
		c = a->rdata_len < b->rdata_len ? -1 : 1;
	}
	if (c == 0) {
		c = memcmp(a->rdata, b->rdata, a->rdata_len);
	}
	return c;
}

/* An order over what a message may change of a record: cmp_rr()'s, its
 * TTL, and whether the API shows the TTL as automatic
 * (RECORDS_API_TTL_AUTO). */
static int cmp_rec(const void *pa, const void *pb)
{
	const update_net_rec_t *a = pa, *b = pb;
	int c = cmp_rr(a, b);
	if (c == 0 && a->ttl != b->ttl) {
		c = a->ttl < b->ttl ? -1 : 1;
	}
	uint8_t auto_a = a->api_form & RECORDS_API_TTL_AUTO;
	uint8_t auto_b = b->api_form & RECORDS_API_TTL_AUTO;
	if (c == 0 && auto_a != auto_b) {
		c = auto_a < auto_b ? -1 : 1;
	}
	return c;
}

bool update_net_none(update_net_t *net)
{
	if (net->added_count != net->removed_count) {
		return false;
	}
	if (net->added_count == 0) {
		return true; /* No lists to sort (qsort() takes no NULL). */
	}
	qsort(net->added, net->added_count, sizeof(*net->added), cmp_rec);
	qsort(net->removed, net->removed_count, sizeof(*net->removed), cmp_rec);
	for (size_t i = 0; i < net->added_count; i++) {
		if (cmp_rec(&net->added[i], &net->removed[i]) != 0) {
			return false;
		}
	}
	return true;
}

/* Drops the entries whose id is -1 (update_net_relink()'s pairs). */
static void compact(update_net_rec_t *list, size_t *count)
{
	size_t kept = 0;
	for (size_t i = 0; i < *count; i++) {
		if (list[i].id == -1) {
			rec_free(&list[i]);
		} else {
			list[kept++] = list[i];
		}
	}
	*count = kept;
}

int update_net_relink(update_net_t *net,
                      int (*relink)(void *ctx, const records_record_t *orig,
                                    int64_t added_id),
                      void *ctx)
{
	if (net->added_count == 0 || net->removed_count == 0) {
		return ZC_EOK;
	}
	/* Paired on owner, type and rdata: a record added again with
	 * another TTL (its RRset retimed by a later add of the message:
	 * outside tester 45), or with the TTL the API showed as automatic
	 * now given, is the same record with the TTL it has now (its
	 * modified_on then now). */
	qsort(net->added, net->added_count, sizeof(*net->added), cmp_rr);
	qsort(net->removed, net->removed_count, sizeof(*net->removed),
	      cmp_rr);
	int ret = ZC_EOK;
	size_t a = 0, r = 0;
	while (a < net->added_count && r < net->removed_count && ret == ZC_EOK) {
		update_net_rec_t *add = &net->added[a], *rem = &net->removed[r];
		int c = cmp_rr(rem, add);
		if (c < 0) {
			r++;
			continue;
		}
		if (c > 0) {
			a++;
			continue;
		}
		if (add->id != rem->id) {
			records_record_t orig = {
				.id = rem->id, .owner = rem->owner,
				.type = rem->type, .ttl = add->ttl,
				.rdata = rem->rdata, .rdata_len = rem->rdata_len,
				.comment = rem->comment, .tags = rem->tags,
				.api_form = (rem->api_form & ~RECORDS_API_TTL_AUTO) |
				            (add->api_form & RECORDS_API_TTL_AUTO),
				.created_on = rem->created_on,
				.modified_on = cmp_rec(rem, add) == 0 ?
				               rem->modified_on : 0,
			};
			ret = relink(ctx, &orig, add->id);
		}
		add->id = rem->id = -1;
		a++;
		r++;
	}
	compact(net->added, &net->added_count);
	compact(net->removed, &net->removed_count);
	return ret;
}

void update_net_clear(update_net_t *net)
{
	for (size_t i = 0; i < net->added_count; i++) {
		rec_free(&net->added[i]);
	}
	for (size_t i = 0; i < net->removed_count; i++) {
		rec_free(&net->removed[i]);
	}
	net->added_count = 0;
	net->removed_count = 0;
}

void update_net_free(update_net_t *net)
{
	update_net_clear(net);
	free(net->added);
	free(net->removed);
	net->added = net->removed = NULL;
	net->added_cap = net->removed_cap = 0;
}
