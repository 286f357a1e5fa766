/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Cloudflare-shaped record content to and from wire form (content.h). */
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/rrset-dump.h>
#include <libknot/rrset.h>

#include "api/content.h"
#include "api/content_idna.h"
#include "api/txt.h"
#include "common/error.h"
#include "dns/name.h"
#include "dns/name_text.h"
#include "dns/rdata.h"
#include "records/rules.h"
#include "zonefile/zonefile.h"

/* A record line: owner, TTL, class, type and the content. */
#define LINE_MAX_LEN (API_CONTENT_MAX + KNOT_DNAME_TXT_MAXLEN + 64)

typedef struct {
	api_wire_t *out;
	int records;
	char *err;
	size_t err_size;
} parse_t;

static int on_record(const knot_dname_t *owner, uint16_t type, uint32_t ttl,
                     const uint8_t *rdata, uint16_t rdata_len,
                     const char *file, uint64_t line, void *ctx)
{
	(void)file, (void)line;
	parse_t *p = ctx;
	if (p->records++ == 0) {
		knot_dname_copy_lower(p->out->owner, owner);
		p->out->type = type;
		p->out->ttl = ttl;
		p->out->rdata_len = rdata_len;
		memcpy(p->out->rdata, rdata, rdata_len);
	}
	return 0;
}

static void on_error(const char *file, uint64_t line, const char *msg,
                     void *ctx)
{
	(void)file, (void)line;
	parse_t *p = ctx;
	if (p->err[0] == '\0') {
		snprintf(p->err, p->err_size, "content: %s", msg);
	}
}

/* Types whose content is one domain name, which Cloudflare gives as an
 * FQDN without the trailing dot. */
static bool is_name_type(uint16_t type)
{
	return type == KNOT_RRTYPE_CNAME || type == KNOT_RRTYPE_NS ||
	       type == KNOT_RRTYPE_PTR || type == KNOT_RRTYPE_DNAME ||
	       type == KNOT_RRTYPE_MX;
}

/* Whether the text ends with a '.' that no backslash escapes. */
static bool ends_with_dot(const char *text, size_t len)
{
	size_t slashes = 0;
	if (len == 0 || text[len - 1] != '.') {
		return false;
	}
	while (slashes + 1 < len && text[len - 2 - slashes] == '\\') {
		slashes++;
	}
	return slashes % 2 == 0;
}

/*
 * Copies content into a master-file line so that it means what it says:
 * outside quotes an unescaped ';' would start a comment and '(' or ')'
 * would group lines, and neither belongs to a one-line content, so each
 * is escaped (\; \( \)) and stands for itself, as Cloudflare takes
 * content ("v=DKIM1; k=rsa", a CAA value with ';'). Returns the length
 * written, or 0 when out of room.
 */
static size_t copy_escaped(const char *content, size_t len, char *out,
                           size_t size)
{
	size_t pos = 0;
	bool quoted = false;
	for (size_t i = 0; i < len; i++) {
		char c = content[i];
		if (pos + 3 >= size) {
			return 0;
		}
		if (c == '\\' && i + 1 < len) {
			out[pos++] = c;
			out[pos++] = content[++i];
			continue;
		}
		if (c == '"') {
			quoted = !quoted;
		} else if (!quoted && (c == ';' || c == '(' || c == ')')) {
			out[pos++] = '\\';
		}
		out[pos++] = c;
	}
	return pos;
}

bool api_content_is_txt(uint16_t type)
{
	return type == KNOT_RRTYPE_TXT || type == KNOT_RRTYPE_SPF;
}

/* RFC 3597 §5 generic form: "\# LENGTH HEX", the rdata whole. */
static bool is_generic(const char *content)
{
	return strncmp(content, "\\#", 2) == 0 &&
	       (content[2] == ' ' || content[2] == '\t');
}

/* The blank-separated words of content, a quoted character-string one
 * word. */
static size_t words(const char *content)
{
	size_t n = 0;
	const char *p = content;
	for (;;) {
		p += strspn(p, " \t");
		if (*p == '\0') {
			return n;
		}
		n++;
		p += api_content_word_len(p);
	}
}

/* Appends content, made zone-file ready for its type. */
static int content_text(uint16_t type, const char *content, int priority,
                        char *out, size_t size)
{
	size_t pos = 0;
	bool generic = is_generic(content);
	if (priority >= 0 && !generic && (type == KNOT_RRTYPE_MX ||
	                                  type == KNOT_RRTYPE_SRV ||
	                                  type == KNOT_RRTYPE_URI)) {
		pos += snprintf(out, size, "%d ", priority);
	}
	size_t clen = strlen(content);
	if (pos + clen + 4 >= size) {
		return ZC_ENOSPACE;
	}
	if (pos == 0 && !generic && strncmp(content, "\\#", 2) == 0) {
		/* A name or string starting with an escaped '#': the scanner
		 * would take "\#" for RFC 3597's marker; \035 is that octet. */
		memcpy(out, "\\035", 4);
		pos = 4;
		content += 2;
		clen -= 2;
	}
	size_t copied = copy_escaped(content, clen, out + pos, size - pos - 2);
	if (copied == 0 && clen > 0) {
		return ZC_ENOSPACE;
	}
	pos += copied;
	bool name_last = is_name_type(type) || type == KNOT_RRTYPE_SRV;
	if (name_last && !generic && clen > 0 && !ends_with_dot(content, clen)) {
		out[pos++] = '.'; /* An FQDN, not a name relative to the zone. */
	}
	out[pos] = '\0';
	return ZC_EOK;
}

#define NAME_ERROR "name: not a valid domain name (labels of 1 to 63 " \
	"octets, 255 in all; a label in Unicode must be an internationalized " \
	"one, IDNA2008)"

bool api_fqdn_parse(const char *text, uint8_t out[KNOT_DNAME_MAXLEN])
{
	char buf[KNOT_DNAME_TXT_MAXLEN + 2];
	char ascii[DNS_NAME_IDNA_MAX];
	/* Cloudflare's: names written in Unicode are stored in Punycode;
	 * resolvers ask for that form. */
	if (!dns_name_idna(text, ascii, sizeof(ascii))) {
		return false;
	}
	text = ascii;
	size_t len = strlen(text);
	int n = snprintf(buf, sizeof(buf), "%s%s", text,
	                 ends_with_dot(text, len) ? "" : ".");
	if (len == 0 || n < 0 || (size_t)n >= sizeof(buf) ||
	    knot_dname_from_str(out, buf, KNOT_DNAME_MAXLEN) == NULL) {
		return false;
	}
	knot_dname_to_lower(out);
	return true;
}

int api_name_parse(const knot_dname_t *apex, const char *name,
                   uint8_t *owner, char *err, size_t err_size)
{
	/* Cloudflare's name: "@" or empty for the apex, a name ending in
	 * an unescaped '.' as it is, a name that read as absolute lies in
	 * the zone as that (an FQDN without its final dot), any other
	 * relative to the zone. Decided on the names' wire forms, which
	 * equal whatever the spelling ("\111dd.test", "ODD.test", "é.test"
	 * are "odd.test"'s and "\195\169.test"'s): a text comparison with
	 * the apex's text took such an FQDN for a relative name and stored
	 * the record under NAME.ZONE.ZONE. */
	size_t len = strlen(name);
	if (len == 0 || strcmp(name, "@") == 0) {
		knot_dname_copy_lower(owner, apex);
		return ZC_EOK;
	}
	bool ok = api_fqdn_parse(name, owner);
	if (!ends_with_dot(name, len) &&
	    (!ok || !records_rules_in_zone(apex, owner))) {
		/* Relative: the name's labels, then the apex's. */
		char text[KNOT_DNAME_TXT_MAXLEN + 2];
		char apex_txt[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(apex_txt, apex, sizeof(apex_txt));
		int n = snprintf(text, sizeof(text), "%s.%s", name,
		                 strcmp(apex_txt, ".") == 0 ? "" : apex_txt);
		ok = n > 0 && (size_t)n < sizeof(text) &&
		     api_fqdn_parse(text, owner);
	}
	if (!ok) {
		snprintf(err, err_size, NAME_ERROR);
		return ZC_EUSAGE;
	}
	if (!records_rules_in_zone(apex, owner)) {
		snprintf(err, err_size, "name: outside the zone");
		return ZC_EUSAGE;
	}
	return ZC_EOK;
}

/* The checks every stored record passes (zonefile_record_check()). */
static int check_record(const api_wire_t *w, char *err, size_t err_size)
{
	const char *why = NULL;
	int ret = zonefile_record_check(w->owner, w->type, w->ttl, w->rdata,
	                                w->rdata_len, &why);
	if (ret == KNOT_ENOMEM) {
		return ret;
	}
	if (ret != ZC_EOK) {
		snprintf(err, err_size, "content: %s", why);
		return ZC_EUSAGE;
	}
	return ZC_EOK;
}

/* TXT content in either of Cloudflare's forms (api/txt.h). */
static int parse_txt(const uint8_t *owner, uint16_t type, uint32_t ttl,
                     const char *content, api_wire_t *out, char *err,
                     size_t err_size)
{
	int ret = api_txt_parse(content, out->rdata, &out->rdata_len, err,
	                        err_size);
	if (ret != ZC_EOK) {
		return ret;
	}
	knot_dname_copy_lower(out->owner, owner);
	out->type = type;
	out->ttl = ttl;
	out->form = api_txt_is_plain(content) ? API_FORM_PLAIN : API_FORM_TEXT;
	return check_record(out, err, err_size);
}

int api_content_parse(const knot_dname_t *apex, const char *name,
                      const char *type, const char *content, int priority,
                      uint32_t ttl, api_wire_t *out, char *err,
                      size_t err_size)
{
	static __thread char line[LINE_MAX_LEN];
	uint8_t owner[KNOT_DNAME_MAXLEN];
	char owner_txt[KNOT_DNAME_TXT_MAXLEN + 1];
	err[0] = '\0';
	uint16_t rtype;
	if (type == NULL || knot_rrtype_from_string(type, &rtype) != 0 ||
	    rtype == KNOT_RRTYPE_ANY || rtype == KNOT_RRTYPE_OPT ||
	    rtype == KNOT_RRTYPE_TSIG || rtype == KNOT_RRTYPE_AXFR ||
	    rtype == KNOT_RRTYPE_IXFR || !dns_rdata_type_storable(rtype)) {
		snprintf(err, err_size, "type: unknown or unsupported record type");
		return ZC_EUSAGE;
	}
	if (content == NULL || strchr(content, '\n') || strchr(content, '\r')) {
		snprintf(err, err_size, "content: missing, or holds a line break");
		return ZC_EUSAGE;
	}
	for (const char *c = name; *c != '\0'; c++) {
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			snprintf(err, err_size, "name: a space or control character "
			         "(write it as \\DDD)");
			return ZC_EUSAGE;
		}
	}
	/* The owner goes into the line as libknot writes it: every special
	 * octet escaped, so the scanner reads back exactly this name. */
	int ret = api_name_parse(apex, name, owner, err, err_size);
	if (ret != ZC_EOK) {
		return ret;
	}
	out->form = API_FORM_TEXT;
	if (api_content_is_txt(rtype) && !is_generic(content)) {
		return parse_txt(owner, rtype, ttl, content, out, err, err_size);
	}
	/* Names in content written in Unicode are stored in Punycode, as
	 * the record's name is (content_idna.h). */
	static __thread char ascii[API_CONTENT_MAX];
	int idna = api_content_idna(rtype, content, priority >= 0, ascii,
	                            sizeof(ascii));
	if (idna < 0) {
		snprintf(err, err_size, "content: a name in Unicode must be an "
		         "internationalized one (IDNA2008), or written in "
		         "Punycode");
		return ZC_EUSAGE;
	}
	if (idna > 0) {
		content = ascii;
	}
	knot_dname_to_str(owner_txt, owner, sizeof(owner_txt));
	/* TYPEnnn: libzscanner reads every type so, also those it has no
	 * mnemonic for (NULL, SIG), in their generic form. */
	int n = snprintf(line, sizeof(line), "%s %u IN TYPE%u ", owner_txt, ttl,
	                 rtype);
	if (n < 0 || content_text(rtype, content, priority, line + n,
	                          sizeof(line) - n - 1) != ZC_EOK) {
		snprintf(err, err_size, "content: too long");
		return ZC_EUSAGE;
	}
	strcat(line, "\n");
	parse_t p = { .out = out, .err = err, .err_size = err_size };
	zonefile_handler_t h = { .record = on_record, .error = on_error, .ctx = &p };
	/* Names in content are FQDNs with their final dot or without
	 * (docs/api.md), in every type: the origin is the root, so that no
	 * name of a multi-name content (SVCB/HTTPS targets, RP, KX, NAPTR
	 * replacements) is taken as relative to the zone. The owner is
	 * absolute already. */
	static const uint8_t root[1] = { 0 };
	ret = zonefile_parse_record(line, strlen(line), root, &h);
	if (ret != ZC_EOK || p.records != 1) {
		if (err[0] == '\0') {
			snprintf(err, err_size, "content: not a valid %s record", type);
		}
		if (priority < 0 && !is_generic(content) &&
		    words(content) == (rtype == KNOT_RRTYPE_MX ? 1 :
		                       rtype == KNOT_RRTYPE_SRV ? 3 :
		                       rtype == KNOT_RRTYPE_URI ? 2 : 0)) {
			/* The type's fields but the priority: "mail.example"
			 * read as a bad number, an SRV's weight as its
			 * priority. Name what is missing, with what the
			 * parser said. */
			char said[200];
			snprintf(said, sizeof(said), "%s", err);
			snprintf(err, err_size, "priority: required for %s (0 to "
			         "65535), or the content starting with it (%s)",
			         type, said);
		}
		return ZC_EUSAGE;
	}
	return check_record(out, err, err_size);
}

void api_name_format(const knot_dname_t *name, char *out, size_t size)
{
	knot_dname_to_str(out, name, size);
	size_t len = strlen(out);
	if (len > 1 && out[len - 1] == '.') {
		out[len - 1] = '\0';
	}
}

/* Finds name (as libknot writes it) in content from `from` on, standing
 * alone between blanks or the ends, outside quoted character-strings (a
 * NAPTR's regexp holds names too: "!^(.*) sip.rt.test. (.*)$!\\1!" lost
 * its dot, and a GET written back changed the record); NULL when it is
 * not there. */
static char *find_token(char *content, size_t from, const char *name)
{
	size_t n = strlen(name);
	bool quoted = false;
	for (size_t i = 0; content[i] != '\0'; i++) {
		if (!quoted && i >= from && (i == 0 || content[i - 1] == ' ') &&
		    strncmp(content + i, name, n) == 0 &&
		    (content[i + n] == '\0' || content[i + n] == ' ')) {
			return content + i;
		}
		if (content[i] == '\\' && content[i + 1] != '\0') {
			i++;
		} else if (content[i] == '"') {
			quoted = !quoted;
		}
	}
	return NULL;
}

/*
 * Drops the final dot of every name of the content, the root's excepted
 * ("."): names in content are FQDNs without their final dot, as content
 * is read (docs/api.md), in every type. Only single-name types lost it
 * (and an SRV's root target lost its only character, "2 3 ." read back
 * as "2 3 "). The names are found in the order of the type's descriptor,
 * each as libknot writes it, standing alone between blanks.
 */
static void strip_name_dots(uint16_t type, const uint8_t *rdata,
                            uint16_t len, char *content)
{
	/* libknot describes SVCB and HTTPS as one remainder, and IPSECKEY's
	 * gateway is a name only when its type (the second octet) is 3. */
	static const int svcb[] = { 2, KNOT_RDATA_WF_FIXED_DNAME,
	                            KNOT_RDATA_WF_REMAINDER, KNOT_RDATA_WF_END };
	static const int ipseckey[] = { 3, KNOT_RDATA_WF_FIXED_DNAME,
	                                KNOT_RDATA_WF_REMAINDER,
	                                KNOT_RDATA_WF_END };
	const int *blocks = knot_get_rdata_descriptor(type)->block_types;
	if (type == KNOT_RRTYPE_SVCB || type == KNOT_RRTYPE_HTTPS) {
		blocks = svcb;
	} else if (type == KNOT_RRTYPE_IPSECKEY) {
		if (len < 3 || rdata[1] != 3) {
			return;
		}
		blocks = ipseckey;
	}
	const uint8_t *p = rdata, *end = rdata + len;
	size_t from = 0;
	for (int i = 0; blocks[i] != KNOT_RDATA_WF_END; i++) {
		int block = blocks[i];
		if (block > 0) {
			if (end - p < block) {
				return;
			}
			p += block;
			continue;
		}
		if (block == KNOT_RDATA_WF_REMAINDER) {
			return;
		}
		if (block == KNOT_RDATA_WF_NAPTR_HEADER) {
			if (end - p < 4) {
				return;
			}
			p += 4;
			for (int s = 0; s < 3; s++) {
				if (p >= end || end - p - 1 < *p) {
					return;
				}
				p += 1 + *p;
			}
			continue;
		}
		int size = knot_dname_wire_check(p, end, NULL);
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		if (size <= 0 || knot_dname_to_str(name, p, sizeof(name)) == NULL) {
			return;
		}
		p += size;
		char *at = find_token(content, from, name);
		if (at == NULL) {
			return;
		}
		size_t n = strlen(name);
		if (n > 1 && name[n - 1] == '.') {
			memmove(at + n - 1, at + n, strlen(at + n) + 1);
			n--;
		}
		from = (size_t)(at - content) + n;
	}
}

int api_content_format(const knot_dname_t *owner, uint16_t type,
                       const uint8_t *rdata, uint16_t rdata_len, int form,
                       char *content, size_t size, int *priority)
{
	(void)owner;
	bool generic;
	*priority = -1;
	if (api_content_is_txt(type)) {
		int ret = api_txt_format(rdata, rdata_len, form, content, size);
		if (ret != ZC_EFORMAT) {
			return ret; /* Else the generic form, below. */
		}
	}
	if (zonefile_rdata_text(type, rdata, rdata_len, content, size,
	                        &generic) < 0) {
		return ZC_ENOSPACE;
	}
	size_t len = strlen(content);
	while (len > 0 && content[len - 1] == ' ') {
		content[--len] = '\0'; /* libknot ends some (CAA) with a blank. */
	}
	if (!generic) {
		strip_name_dots(type, rdata, rdata_len, content);
	}
	if (!generic && (type == KNOT_RRTYPE_MX || type == KNOT_RRTYPE_SRV ||
	                 type == KNOT_RRTYPE_URI)) {
		char *space = strchr(content, ' ');
		if (space != NULL) {
			*priority = atoi(content);
			memmove(content, space + 1, strlen(space + 1) + 1);
		}
	}
	return ZC_EOK;
}
