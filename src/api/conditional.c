/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * If-Match (RFC 9110 §13.1.1): optimistic concurrency for record writes.
 *
 *   If-Match = "*" / #entity-tag
 *   entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE
 *
 * A list matches when any of its tags matches the record's ETag by the
 * strong comparison (§8.8.3.2: neither is weak and the opaque tags are
 * identical octet by octet), so a weak tag never matches; "*" matches any
 * record that exists. The field may come as several lines, which make one
 * list (§5.3); empty list elements and whitespace around commas are
 * allowed (§5.6.1). A field that is no such list gets 400.
 *
 * If-None-Match (§13.1.2), of the same syntax, is the opposite: the write
 * goes ahead only when no tag in the list matches the record's ETag, by
 * the weak comparison (§8.8.3.2: the opaque tags alone), and "*" only
 * when there is no record, so on a write to a record that exists it
 * always fails: 412, nothing changed (§13.1.2: a method other than GET
 * and HEAD answers a false condition so).
 */
#include <stdio.h>
#include <string.h>

#include "api/conditional.h"
#include "api/reply.h"
#include "api/request.h"

/* Skips optional whitespace (OWS: spaces and tabs). */
static const char *skip_ows(const char *p)
{
	return p + strspn(p, " \t");
}

/* etagc = "!" / %x23-7E / obs-text (%x80-FF): anything visible but '"'. */
static bool is_etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

/* Reads one entity-tag at p into m (strong ones only, unless weak_too:
 * then weak ones too, by their opaque tag); returns the end, or NULL when
 * there is none (or one tag too many). */
static const char *read_tag(const char *p, api_if_match_t *m, bool weak_too)
{
	bool weak = strncmp(p, "W/", 2) == 0;
	const char *open = weak ? p + 2 : p;
	if (*open != '"') {
		return NULL;
	}
	const char *close = open + 1;
	while (is_etagc((unsigned char)*close)) {
		close++;
	}
	if (*close != '"') {
		return NULL;
	}
	size_t len = (size_t)(close + 1 - open);
	/* A tag too long to be one of ours can never match: not kept. */
	if ((!weak || weak_too) && len < API_ETAG_MAX) {
		if (m->count == API_IF_MATCH_MAX) {
			return NULL;
		}
		memcpy(m->tags[m->count], open, len);
		m->tags[m->count++][len] = '\0';
	}
	return close + 1;
}

/* Reads one field value (a list, or "*") into m. */
static bool read_field(const char *value, api_if_match_t *m, bool weak_too)
{
	const char *p = skip_ows(value);
	if (*p == '*' && *skip_ows(p + 1) == '\0') {
		m->any = true;
		return true;
	}
	while (*p != '\0') {
		if (*p != ',') {
			p = read_tag(p, m, weak_too);
			if (p == NULL) {
				return false;
			}
			p = skip_ows(p);
			if (*p != ',' && *p != '\0') {
				return false;
			}
		}
		if (*p == ',') {
			p = skip_ows(p + 1);
		}
	}
	return true;
}

/* Reads every field `name` of the request into m. */
static bool parse_fields(api_req_t *req, const char *name, api_if_match_t *m,
                         bool weak_too)
{
	memset(m, 0, sizeof(*m));
	const char *value;
	for (unsigned i = 0; (value = api_header_nth(req, name, i)) != NULL;
	     i++) {
		m->present = true;
		if (!read_field(value, m, weak_too)) {
			api_error(req, 400, 6003, "%s: %.80s is not \"*\" or a "
			          "list of at most %d entity tags (\"tag\", W/\"tag\")",
			          name, value, API_IF_MATCH_MAX);
			return false;
		}
	}
	return true;
}

bool api_if_match_parse(api_req_t *req, api_if_match_t *m)
{
	return parse_fields(req, "If-Match", m, false);
}

bool api_if_none_match_parse(api_req_t *req, api_if_match_t *m)
{
	return parse_fields(req, "If-None-Match", m, true);
}

bool api_if_none_match_ok(const api_if_match_t *m, const char *etag)
{
	if (m == NULL || !m->present) {
		return true;
	}
	if (m->any) {
		return false;
	}
	const char *opaque = strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
	for (unsigned i = 0; i < m->count; i++) {
		if (strcmp(m->tags[i], opaque) == 0) {
			return false;
		}
	}
	return true;
}

bool api_if_match_ok(const api_if_match_t *m, const char *etag)
{
	if (m == NULL || !m->present || m->any) {
		return true;
	}
	for (unsigned i = 0; i < m->count; i++) {
		if (strcmp(m->tags[i], etag) == 0) {
			return true;
		}
	}
	return false;
}
