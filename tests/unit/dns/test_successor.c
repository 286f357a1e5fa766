/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Next names for compact denial NSEC records (dns/successor.h), checked
 * against a comparator of their own (RFC 4034 §6.1 on wire labels, written
 * here without the lookup form):
 *
 *   - hand-made cases around the limits (253 to 255 octets, 63-octet labels,
 *     0x40 and 0xff octets, the walk up to the apex);
 *   - every possible name of a small bound on the name size, sorted: the
 *     next name must be the very next one of the list, the name after a
 *     subtree the first one of the list outside it;
 *   - random names of 240 to 255 octets with labels of 1 to 63 octets, and
 *     for each, names made from it by small changes (an octet more or less,
 *     one incremented, labels added or dropped): none may fall strictly
 *     between the name and its next name.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/dname.h>

#include "dns/successor.h"
#include "tests/unit/test.h"

#define MAXN KNOT_DNAME_MAXLEN

/* --- A comparator of our own --- */

static uint8_t low(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static unsigned labels_of(const uint8_t *name, const uint8_t **out)
{
	unsigned n = 0;
	for (const uint8_t *p = name; *p != 0; p += *p + 1) {
		out[n++] = p;
	}
	return n;
}

/* RFC 4034 §6.1: labels from the root, octets lowercased, a label before
 * any longer label it starts, a name before the names below it. */
static int canon_cmp(const uint8_t *a, const uint8_t *b)
{
	const uint8_t *la[128], *lb[128];
	unsigned na = labels_of(a, la), nb = labels_of(b, lb);
	while (na > 0 && nb > 0) {
		const uint8_t *x = la[--na], *y = lb[--nb];
		unsigned n = x[0] < y[0] ? x[0] : y[0];
		for (unsigned i = 1; i <= n; i++) {
			if (low(x[i]) != low(y[i])) {
				return low(x[i]) < low(y[i]) ? -1 : 1;
			}
		}
		if (x[0] != y[0]) {
			return x[0] < y[0] ? -1 : 1;
		}
	}
	return (na > 0) - (nb > 0);
}

/* True when name is below (not equal to) top. */
static bool is_below(const uint8_t *name, const uint8_t *top)
{
	const uint8_t *ln[128], *lt[128];
	unsigned nn = labels_of(name, ln), nt = labels_of(top, lt);
	if (nn <= nt) {
		return false;
	}
	const uint8_t *suffix = nt == 0 ? name + knot_dname_size(name) - 1 :
	                        ln[nn - nt];
	return canon_cmp(suffix, top) == 0;
}

/* A wire name of at most max octets, labels of 1..63 octets. */
static bool is_valid(const uint8_t *name, size_t max)
{
	size_t size = 0;
	for (const uint8_t *p = name; ; p += *p + 1) {
		if (*p > 63) {
			return false;
		}
		size += 1u + *p;
		if (*p == 0) {
			break;
		}
		if (size > max) {
			return false;
		}
	}
	return size <= max;
}

static void show(const char *what, const uint8_t *name)
{
	fprintf(stderr, "  %s (%zu octets):", what, knot_dname_size(name));
	for (size_t i = 0; i < knot_dname_size(name); i++) {
		fprintf(stderr, " %02x", name[i]);
	}
	fprintf(stderr, "\n");
}

/* --- Building names --- */

/* name = label(len octets of c) . suffix */
static size_t prepend(uint8_t *out, const uint8_t *data, uint8_t len,
                      const uint8_t *suffix)
{
	uint8_t tmp[MAXN * 2];
	size_t ssize = knot_dname_size(suffix);
	tmp[0] = len;
	memcpy(tmp + 1, data, len);
	memcpy(tmp + 1 + len, suffix, ssize);
	memcpy(out, tmp, 1u + len + ssize);
	return 1u + len + ssize;
}

static size_t repeat_label(uint8_t *out, uint8_t c, uint8_t len,
                           const uint8_t *suffix)
{
	uint8_t data[63];
	memset(data, c, len);
	return prepend(out, data, len, suffix);
}

/* --- Hand-made cases --- */

static void check_result(const uint8_t *name, const uint8_t *apex,
                         const uint8_t *got, size_t got_len,
                         const uint8_t *want)
{
	bool ok = got_len == knot_dname_size(got) &&
	          knot_dname_is_equal(got, want);
	CHECK(ok);
	if (!ok) {
		show("name", name);
		show("apex", apex);
		show("got", got);
		show("want", want);
	}
}

static void limits(void)
{
	uint8_t apex[MAXN], name[MAXN], want[MAXN], got[MAXN];
	knot_dname_from_str(apex, "example.", sizeof(apex));

	/* Room for \000.: RFC 9824 §3.1, lowercased. */
	knot_dname_from_str(name, "WwW.Example.", sizeof(name));
	knot_dname_from_str(want, "\\000.www.example.", sizeof(want));
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* 253 octets: \000. still fits (255). */
	size_t n = repeat_label(name, 'a', 63, apex);      /* 73 */
	n = repeat_label(name, 'a', 63, name);             /* 137 */
	n = repeat_label(name, 'a', 63, name);             /* 201 */
	n = repeat_label(name, 'a', 51, name);             /* 253 */
	CHECK_EQ(n, 253);
	want[0] = 1;
	want[1] = 0;
	memcpy(want + 2, name, n);
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* 254 octets, first label of 52: a 0x00 appended to it. */
	repeat_label(name, 'a', 52, name + 52);
	CHECK_EQ(knot_dname_size(name), 254);
	memcpy(want, name, 254);
	memmove(want + 54, want + 53, 254 - 53);
	want[0] = 53;
	want[53] = 0x00;
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* 255 octets: the last octet of the first label plus one. */
	repeat_label(name, 'a', 53, name + 53);
	CHECK_EQ(knot_dname_size(name), 255);
	memcpy(want, name, 255);
	want[53] = 'b';
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* 0x40 is followed by 0x5b: A-Z compare as a-z. */
	name[53] = 0x40;
	want[53] = 0x5b;
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* Trailing 0xff octets are dropped, then the last one incremented:
	 * "ab\xff\xff" -> "ac". */
	name[50] = 'a';
	name[51] = 'b';
	name[52] = 0xff;
	name[53] = 0xff;
	uint8_t data[63];
	memcpy(data, name + 1, 53);
	data[50] = 'c';
	prepend(want, data, 51, name + 54);
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* A first label of 0xff only, at 255 octets: the parent's label
	 * next, 63 octets of a, so incremented. */
	repeat_label(name, 0xff, 53, name + 54);
	memcpy(data, name + 55, 63); /* 63 octets: no room, incremented */
	data[62] = 'b';
	prepend(want, data, 63, name + 54 + 64);
	check_result(name, apex, got, dns_name_next(name, apex, got), want);

	/* Everything 0xff up to the apex: the apex ends the zone. */
	n = repeat_label(name, 0xff, 63, apex);
	n = repeat_label(name, 0xff, 63, name);
	n = repeat_label(name, 0xff, 63, name);
	n = repeat_label(name, 0xff, 53, name);
	CHECK_EQ(n, 255);
	check_result(name, apex, got, dns_name_next(name, apex, got), apex);

	/* RFC 9824 §3.4: after a cut, sub\000.example. */
	knot_dname_from_str(name, "Sub.example.", sizeof(name));
	knot_dname_from_str(want, "sub\\000.example.", sizeof(want));
	check_result(name, apex, got, dns_name_after_subtree(name, apex, got),
	             want);
	/* A 63-octet cut label: incremented instead. */
	repeat_label(name, 'q', 63, apex);
	repeat_label(want, 'q', 63, apex);
	want[63] = 'r';
	check_result(name, apex, got, dns_name_after_subtree(name, apex, got),
	             want);
	/* The apex itself: nothing of the zone follows its names. */
	check_result(apex, apex, got, dns_name_after_subtree(apex, apex, got),
	             apex);
	/* In the root zone. */
	knot_dname_from_str(apex, ".", sizeof(apex));
	knot_dname_from_str(name, "a.", sizeof(name));
	knot_dname_from_str(want, "\\000.a.", sizeof(want));
	check_result(name, apex, got, dns_name_next(name, apex, got), want);
}

/* --- Every name of a small bound --- */

typedef struct {
	uint8_t (*names)[16];
	size_t count, cap;
} list_t;

static void list_add(list_t *l, const uint8_t *name)
{
	if (l->count == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->names = realloc(l->names, l->cap * sizeof(*l->names));
		if (l->names == NULL) {
			abort();
		}
	}
	memcpy(l->names[l->count++], name, knot_dname_size(name));
}

/* Adds name and every name below it made of labels over alphabet that
 * fits in max octets. */
static void enumerate(list_t *l, const uint8_t *name, size_t max,
                      const uint8_t *alphabet, size_t alen)
{
	list_add(l, name);
	size_t size = knot_dname_size(name);
	uint8_t data[16], child[16];
	for (uint8_t len = 1; size + 1u + len <= max; len++) {
		/* Every label of len octets: a counter in base alen. */
		size_t digits[16] = { 0 };
		for (;;) {
			for (uint8_t i = 0; i < len; i++) {
				data[i] = alphabet[digits[i]];
			}
			prepend(child, data, len, name);
			enumerate(l, child, max, alphabet, alen);
			uint8_t i = 0;
			while (i < len && ++digits[i] == alen) {
				digits[i++] = 0;
			}
			if (i == len) {
				break;
			}
		}
	}
}

static int qsort_cmp(const void *a, const void *b)
{
	return canon_cmp(a, b);
}

/* Index of the first listed name >= name. */
static size_t lower_bound(const list_t *l, const uint8_t *name)
{
	size_t lo = 0, hi = l->count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (canon_cmp(l->names[mid], name) < 0) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* With the list of every possible name (complete: every octet that
 * compares differently), the results must be exactly the listed names;
 * with a partial alphabet, no listed name may lie between. */
static void check_list(const uint8_t *apex, size_t max, const uint8_t *alphabet,
                       size_t alen)
{
	list_t l = { 0 };
	enumerate(&l, apex, max, alphabet, alen);
	qsort(l.names, l.count, sizeof(*l.names), qsort_cmp);
	CHECK(knot_dname_is_equal(l.names[0], apex));
	unsigned bad = 0;
	for (size_t i = 0; i < l.count && bad < 5; i++) {
		const uint8_t *name = l.names[i];
		uint8_t next[MAXN], after[MAXN];
		dns_name_next_within(name, apex, max, next);
		dns_name_after_subtree_within(name, apex, max, after);
		/* The first listed name outside name's subtree. */
		size_t out = i + 1;
		while (out < l.count && is_below(l.names[out], name)) {
			out++;
		}
		bool ok = is_valid(next, max) && is_valid(after, max);
		if (knot_dname_is_equal(next, apex)) {
			ok = ok && i + 1 == l.count;
		} else {
			ok = ok && canon_cmp(next, name) > 0 &&
			     lower_bound(&l, next) == i + 1;
		}
		if (knot_dname_is_equal(after, apex)) {
			ok = ok && out == l.count;
		} else {
			ok = ok && canon_cmp(after, name) > 0 &&
			     !is_below(after, name) &&
			     lower_bound(&l, after) == out;
		}
		CHECK(ok);
		if (!ok) {
			bad++;
			show("name", name);
			show("next", next);
			show("after subtree", after);
			if (i + 1 < l.count) {
				show("listed next", l.names[i + 1]);
			}
		}
	}
	free(l.names);
}

static void small_bounds(void)
{
	uint8_t apex[MAXN];
	/* Every octet that compares differently (no A-Z): one-label names
	 * of up to 2 octets under z. (max 6), every one of them listed. */
	uint8_t all[256];
	size_t n = 0;
	for (unsigned c = 0; c < 256; c++) {
		if (c < 'A' || c > 'Z') {
			all[n++] = (uint8_t)c;
		}
	}
	knot_dname_from_str(apex, "z.", sizeof(apex));
	check_list(apex, 6, all, n);
	/* Deeper names over octets at the edges: 0x00, 0x01, 0x40 (then
	 * 0x5b), a, 0xfe, 0xff; up to 7 octets below the apex. */
	static const uint8_t edges[] = { 0x00, 0x01, 0x40, 0x5b, 'a', 0xfe, 0xff };
	check_list(apex, 10, edges, sizeof(edges));
	knot_dname_from_str(apex, ".", sizeof(apex));
	check_list(apex, 7, edges, sizeof(edges));
}

/* --- Random long names and their neighbours --- */

static uint8_t random_octet(void)
{
	static const uint8_t edges[] = { 0x00, 0x01, 0x3f, 0x40, 'A', 'Z', 0x5b,
	                                 0x60, 'a', 'z', 0x7b, 0xfe, 0xff };
	if (rand() % 2) {
		return edges[rand() % sizeof(edges)];
	}
	return (uint8_t)rand();
}

/* A random name of exactly size octets (3..255) below apex, or false. */
static bool random_name(uint8_t *out, const uint8_t *apex, size_t size)
{
	size_t asize = knot_dname_size(apex);
	if (size < asize + 2) {
		return false;
	}
	memcpy(out, apex, asize);
	size_t cur = asize;
	while (cur < size) {
		size_t room = size - cur;          /* octets to add */
		size_t len;
		if (room <= 64) {
			len = room - 1;                 /* the last label */
		} else {
			len = 1 + (size_t)rand() % 63;
			if (room - (len + 1) < 2) {     /* leave room for one more */
				len = room - 3;
			}
		}
		if (len == 0 || len > 63) {
			return false;
		}
		uint8_t data[63];
		for (size_t i = 0; i < len; i++) {
			data[i] = random_octet();
		}
		prepend(out, data, (uint8_t)len, out);
		cur += len + 1;
	}
	return knot_dname_size(out) == size;
}

/* Names near name: at every level below the apex, the label there changed
 * (an octet more or less, one octet up or down, cut short) with the labels
 * on its left dropped, or labels added on the left of name. */
typedef void (*visit_fn)(const uint8_t *candidate, void *ctx);

static void near_names(const uint8_t *name, const uint8_t *apex, visit_fn fn,
                       void *ctx)
{
	const uint8_t *labels[128];
	unsigned n = labels_of(name, labels);
	const uint8_t *apex_labels[128];
	unsigned below = n - labels_of(apex, apex_labels);
	uint8_t cand[MAXN * 2], data[80];
	static const uint8_t extra[] = { 0x00, 0x01, 0x40, 0x5b, 'a', 0xff };
	/* Children. */
	for (size_t e = 0; e < sizeof(extra); e++) {
		for (uint8_t len = 1; len <= 3; len++) {
			repeat_label(cand, extra[e], len, name);
			if (is_valid(cand, MAXN)) {
				fn(cand, ctx);
			}
		}
	}
	for (unsigned lv = 0; lv < below; lv++) {
		const uint8_t *label = labels[lv];
		const uint8_t *parent = label + 1 + label[0];
		uint8_t len = label[0];
		memcpy(data, label + 1, len);
		/* Longer. */
		for (size_t e = 0; e < sizeof(extra); e++) {
			data[len] = extra[e];
			prepend(cand, data, len + 1, parent);
			if (len < 63 && is_valid(cand, MAXN)) {
				fn(cand, ctx);
			}
		}
		/* Cut short, and cut short with the last octet moved. */
		for (uint8_t k = 1; k <= len; k++) {
			memcpy(data, label + 1, len);
			prepend(cand, data, k, parent);
			fn(cand, ctx);
			uint8_t last = data[k - 1];
			if (last < 0xff) {
				data[k - 1] = last + 1;
				prepend(cand, data, k, parent);
				fn(cand, ctx);
			}
			if (last > 0) {
				data[k - 1] = last - 1;
				prepend(cand, data, k, parent);
				fn(cand, ctx);
			}
		}
		/* One octet changed anywhere. */
		for (uint8_t i = 0; i < len; i++) {
			memcpy(data, label + 1, len);
			data[i] = (uint8_t)(data[i] + 1);
			prepend(cand, data, len, parent);
			fn(cand, ctx);
		}
	}
}

typedef struct {
	const uint8_t *name, *next, *apex;
	bool wraps;
	unsigned bad;
} near_ctx_t;

static void check_near(const uint8_t *cand, void *arg)
{
	near_ctx_t *c = arg;
	if (canon_cmp(cand, c->name) <= 0) {
		return;
	}
	/* A possible name after name: never before next. */
	bool ok = !c->wraps && canon_cmp(cand, c->next) >= 0;
	CHECK(ok);
	if (!ok && c->bad++ < 3) {
		show("name", c->name);
		show("next", c->next);
		show("a name between them", cand);
	}
}

static void random_long_names(void)
{
	srand(20240611);
	static const char *const apexes[] = { ".", "example.", "a.b.example.",
	                                      "zone-with-a-longer-name.test." };
	unsigned made = 0;
	for (unsigned round = 0; round < 40; round++) {
		for (size_t size = 240; size <= 255; size++) {
			uint8_t apex[MAXN], name[MAXN], next[MAXN];
			knot_dname_from_str(apex, apexes[round % 4], sizeof(apex));
			if (!random_name(name, apex, size)) {
				continue;
			}
			made++;
			size_t len = dns_name_next(name, apex, next);
			CHECK_EQ(len, knot_dname_size(next));
			CHECK(is_valid(next, MAXN));
			bool wraps = knot_dname_is_equal(next, apex);
			CHECK(wraps || canon_cmp(next, name) > 0);
			CHECK(wraps || is_below(next, apex));
			near_ctx_t c = { name, next, apex, wraps, 0 };
			near_names(name, apex, check_near, &c);
			/* Same for the name after its subtree. */
			uint8_t after[MAXN];
			dns_name_after_subtree(name, apex, after);
			CHECK(is_valid(after, MAXN));
			wraps = knot_dname_is_equal(after, apex);
			CHECK(wraps || (canon_cmp(after, name) > 0 &&
			                !is_below(after, name)));
		}
	}
	CHECK(made > 400);
}

int main(void)
{
	limits();
	small_bounds();
	random_long_names();
	return test_done();
}
