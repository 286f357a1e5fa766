/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * GET /client/v4/zones/{zone_id}/dns_records: Cloudflare's list filters,
 * orders and pages.
 *
 * Design
 *
 * Every filter given is one predicate: type (one type or a comma-separated
 * list of them, any of which matches); name (exact, the legacy
 * `name`, or contains, startswith, endswith); content (the same four); the
 * comment's (the four, present, absent); the tags' as one predicate (their
 * own filters joined by tag_match); proxied. `match=all` (the default)
 * joins the predicates with AND, `match=any` with OR; `search` is ANDed
 * whatever `match` says. Text comparisons ignore ASCII case, as
 * Cloudflare's do; a content filter matches either form of TXT content
 * (api/txt.h).
 *
 * Under AND, an exact name and a single type go to the records store, which
 * serves them from an index (records/query.c): no walk of the zone.
 * When they are all the filters, the store also counts and pages; else
 * the rows it gives are checked here, counted, and only the page's are
 * rendered. order=content sorts the matching records' contents in memory.
 * The listing reads one snapshot of the store, so its total and its page
 * agree. A parameter not named here gets a 400 (api_args_only()).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>

#include "api/content.h"
#include "api/json_text.h"
#include "api/match.h"
#include "api/record_json.h"
#include "api/record_list.h"
#include "api/reply.h"
#include "api/request.h"
#include "common/error.h"

#define MAX_TAG_FILTERS 16
#define MAX_TYPE_FILTERS 32

static const char *const params[] = {
	"page", "per_page", "type", "match", "order", "direction", "proxied",
	"search", "tag_match",
	"name", "name.exact", "name.contains", "name.startswith", "name.endswith",
	"content", "content.exact", "content.contains", "content.startswith",
	"content.endswith",
	"comment", "comment.exact", "comment.contains", "comment.startswith",
	"comment.endswith", "comment.present", "comment.absent",
	"tag.exact", "tag.contains", "tag.startswith", "tag.endswith",
	"tag.present", "tag.absent",
	NULL,
};

/* The four text filters of a field, by the suffix of their name. */
static const struct {
	const char *suffix;
	api_match_t op;
} ops[] = {
	{ "exact", API_MATCH_EXACT }, { "contains", API_MATCH_CONTAINS },
	{ "startswith", API_MATCH_STARTS }, { "endswith", API_MATCH_ENDS },
};

typedef struct {
	const char *value;       /* NULL: not given. */
	api_match_t op;
} text_t;

typedef enum { TAG_PRESENT, TAG_ABSENT, TAG_TEXT } tag_kind_t;

typedef struct {
	tag_kind_t kind;
	api_match_t op;
	char name[256];          /* The tag's name. */
	const char *value;       /* TAG_TEXT: what its value must match. */
} tag_filter_t;

typedef struct {
	const records_zone_t *zone;
	bool match_all, tags_all;
	/* Predicates; each one given counts. */
	uint16_t types[MAX_TYPE_FILTERS]; /* type=A,AAAA: any of them. */
	unsigned type_count;
	bool has_owner;
	uint8_t owner[KNOT_DNAME_MAXLEN];
	text_t name[4], content[4], comment[4];
	int comment_presence;    /* 1 present, -1 absent, 0 neither. */
	tag_filter_t tags[MAX_TAG_FILTERS];
	unsigned tag_count;
	int proxied;             /* -1: not given. */
	unsigned predicates;
	const char *search;
	/* Order. */
	const char *order;
	bool descending;
	/* What goes to the store (set once the predicates are known). */
	bool store_owner, store_type, needs_check;
} filter_t;

/* --- Reading the parameters --- */

/* The value of a parameter given at most once; false after a 400. */
static bool single(api_req_t *req, const char *key, const char **value)
{
	*value = api_query_arg(req, key);
	if (api_query_arg_nth(req, key, 1) != NULL) {
		api_error(req, 400, 1004, "%s: given more than once", key);
		return false;
	}
	return true;
}

/* A parameter that takes one of two words: *first when it is the first
 * (or absent and dflt_first). */
static bool choice(api_req_t *req, const char *key, const char *a,
                   const char *b, bool dflt_first, bool *first)
{
	const char *v;
	if (!single(req, key, &v)) {
		return false;
	}
	*first = dflt_first;
	if (v != NULL && strcmp(v, a) != 0 && strcmp(v, b) != 0) {
		api_error(req, 400, 1004, "%s: \"%s\" or \"%s\"", key, a, b);
		return false;
	}
	if (v != NULL) {
		*first = strcmp(v, a) == 0;
	}
	return true;
}

/* name.*, content.*, comment.* (and the legacy exact `name`, `content`,
 * `comment`). */
static bool read_texts(api_req_t *req, const char *field, text_t *out,
                       filter_t *f)
{
	char key[32];
	for (size_t i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "%s.%s", field, ops[i].suffix);
		if (!single(req, key, &out[i].value)) {
			return false;
		}
		out[i].op = ops[i].op;
	}
	const char *legacy;
	if (!single(req, field, &legacy)) {
		return false;
	}
	if (legacy != NULL && out[0].value != NULL && strcmp(legacy, out[0].value)) {
		api_error(req, 400, 1004, "%s: differs from %s.exact", field, field);
		return false;
	}
	out[0].value = out[0].value ? out[0].value : legacy;
	/* An empty value: a name is never empty (the apex is "@" or its
	 * name), and an empty contains, startswith or endswith holds for
	 * every record; refused, where it listed the apex's records or
	 * every record. An exact empty content or comment is one. */
	for (size_t i = 0; i < 4; i++) {
		if (out[i].value != NULL && out[i].value[0] == '\0' &&
		    (i > 0 || strcmp(field, "name") == 0)) {
			bool legacy_one = i == 0 && legacy != NULL;
			api_error(req, 400, 1004, "%s%s%s: empty (%s)", field,
			          legacy_one ? "" : ".", legacy_one ? "" :
			          ops[i].suffix, i == 0 ? "the zone apex is @ or its "
			          "name" : "it would match every record");
			return false;
		}
		f->predicates += out[i].value != NULL;
	}
	return true;
}

/* One tag filter: "name" (present, absent) or "name:value". */
static bool read_tag(api_req_t *req, const char *key, tag_kind_t kind,
                     api_match_t op, const char *value, filter_t *f)
{
	if (f->tag_count == MAX_TAG_FILTERS) {
		api_error(req, 400, 1004, "%s: at most %d tag filters", key,
		          MAX_TAG_FILTERS);
		return false;
	}
	tag_filter_t *t = &f->tags[f->tag_count++];
	t->kind = kind;
	t->op = op;
	const char *colon = kind == TAG_TEXT ? strchr(value, ':') : NULL;
	size_t len = colon ? (size_t)(colon - value) : strlen(value);
	if (len == 0 || len >= sizeof(t->name)) {
		api_error(req, 400, 1004, "%s: a tag name%s is required", key,
		          kind == TAG_TEXT ? " (name:value)" : "");
		return false;
	}
	memcpy(t->name, value, len);
	t->name[len] = '\0';
	t->value = colon ? colon + 1 : "";
	return true;
}

static bool read_tags(api_req_t *req, filter_t *f)
{
	static const struct {
		const char *key;
		tag_kind_t kind;
		api_match_t op;
	} keys[] = {
		{ "tag.present", TAG_PRESENT, API_MATCH_EXACT },
		{ "tag.absent", TAG_ABSENT, API_MATCH_EXACT },
		{ "tag.exact", TAG_TEXT, API_MATCH_EXACT },
		{ "tag.contains", TAG_TEXT, API_MATCH_CONTAINS },
		{ "tag.startswith", TAG_TEXT, API_MATCH_STARTS },
		{ "tag.endswith", TAG_TEXT, API_MATCH_ENDS },
	};
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v;
		for (unsigned i = 0; (v = api_query_arg_nth(req, keys[k].key, i));
		     i++) {
			if (!read_tag(req, keys[k].key, keys[k].kind, keys[k].op, v, f)) {
				return false;
			}
		}
	}
	f->predicates += f->tag_count > 0;
	return choice(req, "tag_match", "all", "any", true, &f->tags_all);
}

/* type: one type or a comma-separated list of them (type=A,AAAA, as
 * Cloudflare takes and cloudflare-ddns sends), each checked as a type;
 * an empty member (A,,AAAA or a trailing comma) is refused. */
static bool read_type(api_req_t *req, filter_t *f)
{
	const char *type;
	if (!single(req, "type", &type)) {
		return false;
	}
	for (const char *p = type; p != NULL; ) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0) {
			api_error(req, 400, 1004, "type: %s", type[0] == '\0' ?
			          "empty (a record type, or a comma-separated list "
			          "of them)" : "an empty member in the list of types");
			return false;
		}
		char one[32];
		uint16_t code = 0;
		if (len < sizeof(one)) {
			memcpy(one, p, len);
			one[len] = '\0';
		}
		if (len >= sizeof(one) || knot_rrtype_from_string(one, &code) != 0 ||
		    code == 0) {
			api_error(req, 400, 1004, "type: unknown record type \"%.*s\"",
			          (int)(len < sizeof(one) ? len : sizeof(one)), p);
			return false;
		}
		if (f->type_count == MAX_TYPE_FILTERS) {
			api_error(req, 400, 1004, "type: at most %d types",
			          MAX_TYPE_FILTERS);
			return false;
		}
		f->types[f->type_count++] = code;
		p = comma ? comma + 1 : NULL;
	}
	f->predicates += type != NULL;
	return true;
}

/* Whether the record's type is one the type filter lists. */
static bool type_listed(const filter_t *f, uint16_t type)
{
	for (unsigned i = 0; i < f->type_count; i++) {
		if (f->types[i] == type) {
			return true;
		}
	}
	return false;
}

static bool read_order(api_req_t *req, filter_t *f)
{
	static const char *const orders[] = { "type", "name", "content", "ttl",
	                                      "proxied" };
	if (!single(req, "order", &f->order)) {
		return false;
	}
	bool known = f->order == NULL;
	for (size_t i = 0; i < 5 && !known; i++) {
		known = strcmp(f->order, orders[i]) == 0;
	}
	if (!known) {
		api_error(req, 400, 1004, "order: one of type, name, content, ttl, "
		          "proxied");
		return false;
	}
	bool asc;
	if (!choice(req, "direction", "asc", "desc", true, &asc)) {
		return false;
	}
	f->descending = !asc;
	return true;
}

static bool read_filter(api_req_t *req, const records_zone_t *zone,
                        filter_t *f)
{
	memset(f, 0, sizeof(*f));
	f->zone = zone;
	f->proxied = -1;
	bool proxied;
	if (!api_args_only(req, params) || !read_type(req, f) ||
	    !read_texts(req, "name", f->name, f) ||
	    !read_texts(req, "content", f->content, f) ||
	    !read_texts(req, "comment", f->comment, f) || !read_tags(req, f) ||
	    !choice(req, "match", "all", "any", true, &f->match_all) ||
	    !single(req, "search", &f->search) || !read_order(req, f) ||
	    !choice(req, "proxied", "true", "false", false, &proxied)) {
		return false;
	}
	if (f->search != NULL && f->search[0] == '\0') {
		api_error(req, 400, 1004, "search: empty (it would match every "
		          "record)");
		return false;
	}
	if (api_query_arg(req, "proxied") != NULL) {
		f->proxied = proxied;
		f->predicates++;
	}
	bool present = api_query_has(req, "comment.present");
	bool absent = api_query_has(req, "comment.absent");
	f->comment_presence = present ? 1 : absent ? -1 : 0;
	f->predicates += present + absent;
	const char *exact = f->name[0].value;
	char err[256];
	if (exact != NULL &&
	    api_name_parse(zone->apex, exact, f->owner, err, sizeof(err)) != ZC_EOK) {
		api_error(req, 400, 1004, "%s", err);
		return false;
	}
	f->has_owner = exact != NULL;
	/* Under AND (or with one predicate), the exact name and a single
	 * type narrow the rows in the store, by its indexes; a list of
	 * types is checked here. */
	bool narrow = f->match_all || f->predicates == 1;
	f->store_owner = narrow && f->has_owner;
	f->store_type = narrow && f->type_count == 1;
	unsigned in_store = f->store_owner + f->store_type;
	f->needs_check = f->predicates > in_store || f->search != NULL;
	return true;
}

/* --- Checking a record --- */

static bool name_matches(const filter_t *f, const records_record_t *rec,
                         const char *name, api_match_t op, const char *want)
{
	if (op == API_MATCH_EXACT) {
		return knot_dname_is_equal(rec->owner, f->owner);
	}
	return api_text_match(name, want, op);
}

static bool comment_matches(const char *comment, const text_t *t)
{
	return comment != NULL && api_text_match(comment, t->value, t->op);
}

/* Whether one tag filter holds for the record's tags (a JSON array). */
static bool tag_matches(const tag_filter_t *t, json_t *tags)
{
	size_t i, n = strlen(t->name);
	json_t *v;
	json_array_foreach(tags, i, v) {
		const char *tag = json_string_value(v);
		if (tag == NULL || strncasecmp(tag, t->name, n) != 0 ||
		    (tag[n] != '\0' && tag[n] != ':')) {
			continue;
		}
		if (t->kind != TAG_TEXT) {
			return t->kind == TAG_PRESENT;
		}
		if (api_text_match(tag[n] == ':' ? tag + n + 1 : "", t->value, t->op)) {
			return true;
		}
	}
	return t->kind == TAG_ABSENT;
}

static bool tags_match(const filter_t *f, const records_record_t *rec)
{
	json_t *tags = rec->tags ? json_loads(rec->tags, 0, NULL) : NULL;
	if (!json_is_array(tags)) {
		json_decref(tags);
		tags = json_array();
	}
	bool all = true, any = false;
	for (unsigned i = 0; i < f->tag_count; i++) {
		bool m = tag_matches(&f->tags[i], tags);
		all = all && m;
		any = any || m;
	}
	json_decref(tags);
	return f->tags_all ? all : any;
}

/* search: anywhere in the name, the type, the content, the comment or
 * the tags (Cloudflare leaves its exact behaviour open; it is meant for
 * people). */
static bool search_matches(const filter_t *f, const records_record_t *rec,
                           const char *name)
{
	char type[32];
	knot_rrtype_to_string(rec->type, type, sizeof(type));
	return api_text_match(name, f->search, API_MATCH_CONTAINS) ||
	       api_text_match(type, f->search, API_MATCH_CONTAINS) ||
	       api_content_match(rec->owner, rec->type, rec->rdata, rec->rdata_len,
	                         f->search, API_MATCH_CONTAINS) ||
	       (rec->comment && api_text_match(rec->comment, f->search,
	                                       API_MATCH_CONTAINS)) ||
	       (rec->tags && api_text_match(rec->tags, f->search,
	                                    API_MATCH_CONTAINS));
}

/* Folds one predicate's outcome into *all and *any. */
static void fold(bool m, bool *all, bool *any)
{
	*all = *all && m;
	*any = *any || m;
}

static bool record_matches(const filter_t *f, const records_record_t *rec)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	api_name_format(rec->owner, name, sizeof(name));
	bool all = true, any = false;
	if (f->type_count > 0) {
		fold(type_listed(f, rec->type), &all, &any);
	}
	for (size_t i = 0; i < 4; i++) {
		if (f->name[i].value != NULL) {
			fold(name_matches(f, rec, name, f->name[i].op, f->name[i].value),
			     &all, &any);
		}
		if (f->content[i].value != NULL) {
			fold(api_content_match(rec->owner, rec->type, rec->rdata,
			                       rec->rdata_len, f->content[i].value,
			                       f->content[i].op), &all, &any);
		}
		if (f->comment[i].value != NULL) {
			fold(comment_matches(rec->comment, &f->comment[i]), &all, &any);
		}
	}
	if (f->comment_presence != 0) {
		bool has = rec->comment != NULL && rec->comment[0] != '\0';
		fold(f->comment_presence > 0 ? has : !has, &all, &any);
	}
	if (f->tag_count > 0) {
		fold(tags_match(f, rec), &all, &any);
	}
	if (f->proxied >= 0) {
		fold(f->proxied == 0, &all, &any); /* Nothing is proxied. */
	}
	if (f->search != NULL && !search_matches(f, rec, name)) {
		return false;
	}
	return f->predicates == 0 || (f->match_all ? all : any);
}

/* --- Listing --- */

typedef struct {
	const filter_t *f;
	json_text_t page;       /* "[" and the page's records, as text. */
	long count;             /* Records in it. */
	int64_t skip, take, total;
	/* order=content: the matches, sorted afterwards. */
	bool collect;
	struct sorted *sorted;
	size_t sorted_count, sorted_cap;
	bool failed;
} list_t;

typedef struct sorted {
	int64_t id;
	int64_t seq;             /* Name order, to break ties. */
	char *content;
} sorted_t;

static bool keep_sorted(list_t *l, const records_record_t *rec)
{
	static __thread char content[API_CONTENT_MAX];
	int priority;
	if (l->sorted_count == l->sorted_cap) {
		size_t cap = l->sorted_cap ? 2 * l->sorted_cap : 256;
		sorted_t *grown = realloc(l->sorted, cap * sizeof(*grown));
		if (grown == NULL) {
			return false;
		}
		l->sorted = grown;
		l->sorted_cap = cap;
	}
	if (api_content_format(rec->owner, rec->type, rec->rdata, rec->rdata_len,
	                       rec->api_form, content, sizeof(content),
	                       &priority) != ZC_EOK) {
		content[0] = '\0';
	}
	sorted_t *s = &l->sorted[l->sorted_count];
	s->id = rec->id;
	s->seq = (int64_t)l->sorted_count;
	s->content = strdup(content);
	l->sorted_count += s->content != NULL;
	return s->content != NULL;
}

/* Appends rec to the page (json_text.h: a page of thousands of records
 * is answered without a jansson object per record). */
static void add_to_page(list_t *l, const records_record_t *rec)
{
	if (l->count > 0) {
		json_text_lit(&l->page, ",");
	}
	api_record_json_text(&l->page, l->f->zone, rec);
	l->count++;
}

static int list_record(const records_record_t *rec, void *ctx)
{
	list_t *l = ctx;
	if (l->f->needs_check && !record_matches(l->f, rec)) {
		return 0;
	}
	if (l->collect) {
		l->failed = !keep_sorted(l, rec);
		return l->failed ? 1 : 0;
	}
	if (l->total >= l->skip && l->total < l->skip + l->take) {
		add_to_page(l, rec);
	}
	l->total++;
	return 0;
}

static int compare_content(const void *a, const void *b, void *desc)
{
	const sorted_t *x = a, *y = b;
	int c = strcmp(x->content, y->content);
	if (c == 0) {
		c = x->seq < y->seq ? -1 : x->seq > y->seq;
	}
	return *(bool *)desc ? -c : c;
}

static int add_found(const records_record_t *rec, void *ctx)
{
	add_to_page(ctx, rec);
	return 1;
}

/* order=content: sorts what was collected, renders the page. */
static int sorted_page(api_req_t *req, list_t *l)
{
	bool desc = l->f->descending;
	qsort_r(l->sorted, l->sorted_count, sizeof(sorted_t), compare_content,
	        &desc);
	int ret = ZC_EOK;
	l->total = (int64_t)l->sorted_count;
	for (int64_t i = l->skip; i < l->total && i < l->skip + l->take &&
	     ret == ZC_EOK; i++) {
		ret = records_record_find(req->rs, l->f->zone->id,
		                          l->sorted[i].id, add_found, l);
	}
	return ret;
}

static records_order_t store_order(const char *order)
{
	if (order != NULL && strcmp(order, "type") == 0) {
		return RECORDS_ORDER_TYPE;
	}
	if (order != NULL && strcmp(order, "ttl") == 0) {
		return RECORDS_ORDER_TTL;
	}
	return RECORDS_ORDER_NAME; /* name, proxied (all false), content. */
}

void api_record_list(api_req_t *req, const records_zone_t *zone)
{
	long page, per_page;
	filter_t f;
	if (!read_filter(req, zone, &f) || !api_paging(req, &page, &per_page)) {
		return;
	}
	list_t l = { .f = &f,
	             .skip = (int64_t)(page - 1) * per_page, .take = per_page,
	             .collect = f.order != NULL && strcmp(f.order, "content") == 0 };
	json_text_lit(&l.page, "[");
	records_query_t q = {
		.owner = f.store_owner ? f.owner : NULL,
		.type = f.store_type ? f.types[0] : 0,
		.order = store_order(f.order),
		.descending = f.descending && !l.collect,
		.limit = -1,
	};
	int64_t total = 0;
	int ret = records_read_begin(req->rs);
	bool reading = ret == ZC_EOK;
	if (ret == ZC_EOK && !f.needs_check && !l.collect) {
		/* The store filters, counts and pages: the callback sees the
		 * page only. */
		q.offset = l.skip;
		q.limit = l.take;
		l.skip = 0;
		ret = records_record_query(req->rs, zone->id, &q, &total,
		                           list_record, &l);
		l.total = total;
	} else if (ret == ZC_EOK) {
		ret = records_record_query(req->rs, zone->id, &q, NULL, list_record,
		                           &l);
		if (ret == ZC_EOK && l.failed) {
			ret = KNOT_ENOMEM;
		}
		if (ret == ZC_EOK && l.collect) {
			ret = sorted_page(req, &l);
		}
	}
	if (reading) {
		records_read_end(req->rs);
	}
	for (size_t i = 0; i < l.sorted_count; i++) {
		free(l.sorted[i].content);
	}
	free(l.sorted);
	api_list_result_text(req, ret, &l.page, l.count, page, per_page,
	                     (long)l.total, "dns_records");
}
