/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Rdata format checks (rdata.h): libknot's descriptors for the fields it
 * names, then a reader per type for what libknot keeps as an opaque
 * remainder. Each reader consumes its fields through a bounds-checked
 * cursor; the rdata is valid when every field fits and nothing is left.
 */
#include <ctype.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/dname.h>

#include "dns/rdata.h"

/* A read position with the first problem met (sticky, as wire.h's). */
typedef struct {
	const uint8_t *pos;
	const uint8_t *end;
	const char *why;
} reader_t;

#define SHORT "the rdata ends inside a field"

static bool fail(reader_t *r, const char *why)
{
	if (r->why == NULL) {
		r->why = why;
	}
	return false;
}

static size_t left(const reader_t *r)
{
	return (size_t)(r->end - r->pos);
}

/* Returns the next n octets, or NULL past the end. */
static const uint8_t *take(reader_t *r, size_t n)
{
	if (r->why != NULL || left(r) < n) {
		fail(r, SHORT);
		return NULL;
	}
	const uint8_t *p = r->pos;
	r->pos += n;
	return p;
}

static uint32_t read_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static bool read_u8(reader_t *r, uint8_t *out)
{
	const uint8_t *p = take(r, 1);
	if (p != NULL) {
		*out = p[0];
	}
	return p != NULL;
}

static bool read_u16(reader_t *r, uint16_t *out)
{
	const uint8_t *p = take(r, 2);
	if (p != NULL) {
		*out = (uint16_t)(p[0] << 8 | p[1]);
	}
	return p != NULL;
}

/* An uncompressed domain name (RFC 3597 §4: no compression in new types). */
static bool read_name(reader_t *r)
{
	if (r->why != NULL) {
		return false;
	}
	int len = left(r) > 0 ? knot_dname_wire_check(r->pos, r->end, NULL) : -1;
	if (len <= 0) {
		return fail(r, "a domain name in the rdata is malformed, "
		            "compressed or longer than the rdata");
	}
	r->pos += len;
	return true;
}

/* A <character-string>: a length octet and that many octets (RFC 1035
 * §3.3). Sets *len to its length when len is not NULL. */
static bool read_string(reader_t *r, uint8_t *len)
{
	uint8_t n = 0;
	if (!read_u8(r, &n)) {
		return false;
	}
	if (left(r) < n) {
		return fail(r, "a character-string runs past the end of the "
		            "rdata");
	}
	take(r, n);
	if (len != NULL) {
		*len = n;
	}
	return true;
}

static bool at_end(const reader_t *r)
{
	return r->why != NULL || r->pos == r->end;
}

static bool finish(reader_t *r)
{
	if (r->why == NULL && r->pos != r->end) {
		fail(r, "data follows the last field of the rdata");
	}
	return r->why == NULL;
}

/* One or more character-strings filling the rest (TXT, SPF). */
static bool check_strings(reader_t *r)
{
	if (at_end(r)) {
		return fail(r, "the rdata holds no character-string (at least "
		            "one, RFC 1035 §3.3.14)");
	}
	while (!at_end(r)) {
		read_string(r, NULL);
	}
	return r->why == NULL;
}

/* CPU and OS (RFC 1035 §3.3.2). */
static bool check_hinfo(reader_t *r)
{
	read_string(r, NULL);
	read_string(r, NULL);
	return finish(r);
}

/* RFC 8659 §4.1: a tag of 1 or more ASCII letters and digits. */
static bool check_caa(reader_t *r)
{
	uint8_t flags = 0, tag_len = 0;
	if (!read_u8(r, &flags) || !read_u8(r, &tag_len)) {
		return false;
	}
	if (tag_len == 0) {
		return fail(r, "the CAA tag is empty (it holds 1 or more letters "
		            "and digits, RFC 8659 §4.1)");
	}
	const uint8_t *tag = take(r, tag_len);
	for (size_t i = 0; tag != NULL && i < tag_len; i++) {
		if (tag[i] > 0x7f || !isalnum(tag[i])) {
			return fail(r, "the CAA tag holds a character other than "
			            "ASCII letters and digits (RFC 8659 §4.1)");
		}
	}
	r->pos = r->end; /* The value: any octets. */
	return r->why == NULL;
}

/* URI: priority, weight, then the target's octets (RFC 7553 §4.5). */
static bool check_uri(reader_t *r)
{
	take(r, 4);
	r->pos = r->why == NULL ? r->end : r->pos;
	return r->why == NULL;
}

/* Type bitmap (RFC 4034 §4.1.2): windows in increasing order, each of 1
 * to 32 octets whose last is not zero. */
static bool check_bitmap(reader_t *r)
{
	int last_window = -1;
	while (!at_end(r)) {
		uint8_t window = 0, len = 0;
		if (!read_u8(r, &window) || !read_u8(r, &len)) {
			return false;
		}
		if ((int)window <= last_window) {
			return fail(r, "type bitmap windows out of order or "
			            "repeated (RFC 4034 §4.1.2)");
		}
		if (len == 0 || len > 32) {
			return fail(r, "a type bitmap window is not 1 to 32 octets "
			            "long (RFC 4034 §4.1.2)");
		}
		const uint8_t *bits = take(r, len);
		if (bits != NULL && bits[len - 1] == 0) {
			return fail(r, "a type bitmap window ends in a zero octet "
			            "(RFC 4034 §4.1.2)");
		}
		last_window = window;
	}
	return r->why == NULL;
}

/* CSYNC: SOA serial, flags, type bitmap (RFC 7477 §2.1). */
static bool check_csync(reader_t *r)
{
	take(r, 6);
	return check_bitmap(r);
}

/* NSEC3 (RFC 5155 §3.2) and NSEC3PARAM (§4.2). */
static bool check_nsec3(reader_t *r, bool param)
{
	uint8_t salt_len = 0, hash_len = 0;
	take(r, 4); /* Algorithm, flags, iterations. */
	if (read_u8(r, &salt_len)) {
		take(r, salt_len);
	}
	if (param) {
		return finish(r);
	}
	if (read_u8(r, &hash_len) && hash_len == 0) {
		return fail(r, "the NSEC3 next hashed owner is empty "
		            "(RFC 5155 §3.2)");
	}
	take(r, hash_len);
	return check_bitmap(r);
}

/* IPSECKEY (RFC 4025 §2): the gateway's form follows its type. */
static bool check_ipseckey(reader_t *r)
{
	uint8_t precedence = 0, gateway_type = 0, algorithm = 0;
	read_u8(r, &precedence);
	read_u8(r, &gateway_type);
	read_u8(r, &algorithm);
	switch (gateway_type) {
	case 0:
		break;
	case 1:
		take(r, 4);
		break;
	case 2:
		take(r, 16);
		break;
	case 3:
		read_name(r);
		break;
	default:
		return fail(r, "the IPSECKEY gateway type is not 0 to 3 "
		            "(RFC 4025 §2.3)");
	}
	if (r->why != NULL) {
		return false;
	}
	if (algorithm == 0) {
		/* RFC 4025 §2.4 has no key with algorithm 0, and BIND loads no
		 * IPSECKEY without one (from text or wire): no form of it
		 * loads in both BIND and Knot. */
		return fail(r, "an IPSECKEY of algorithm 0 (no public key, RFC "
		            "4025 §2.4) is not stored: BIND refuses an IPSECKEY "
		            "without a key");
	}
	if (algorithm != 0 && at_end(r)) {
		return fail(r, "the IPSECKEY public key is missing (RFC 4025 "
		            "§2.5)");
	}
	r->pos = r->end;
	return true;
}

/* LOC (RFC 1876 §2): version 0; size and precisions as digit pairs. */
static bool check_loc(reader_t *r)
{
	const uint8_t *p = take(r, 16);
	if (p == NULL) {
		return false;
	}
	if (p[0] != 0) {
		return fail(r, "the LOC version is not 0 (RFC 1876 §2)");
	}
	for (int i = 1; i <= 3; i++) {
		if ((p[i] >> 4) > 9 || (p[i] & 0x0f) > 9) {
			return fail(r, "a LOC size or precision is not a digit "
			            "and a power of ten (RFC 1876 §2)");
		}
		if ((p[i] >> 4) == 0 && p[i] != 0) {
			/* 0 times a power of ten: its text "0m" reads as 0x00. */
			return fail(r, "a LOC size or precision of 0 is not "
			            "written as 0x00 (RFC 1876 §2)");
		}
	}
	/* Thousandths of an arc second, offset by 2^31. */
	int64_t lat = (int64_t)read_be32(p + 4) - (1LL << 31);
	int64_t lon = (int64_t)read_be32(p + 8) - (1LL << 31);
	if (lat < -90LL * 3600000 || lat > 90LL * 3600000 ||
	    lon < -180LL * 3600000 || lon > 180LL * 3600000) {
		return fail(r, "a LOC latitude or longitude is out of range "
		            "(RFC 1876 §2)");
	}
	return finish(r);
}

/* APL items (RFC 3123 §4): IPv4 or IPv6 prefixes, the address without
 * its trailing zero octets. */
static bool check_apl(reader_t *r)
{
	while (!at_end(r)) {
		uint16_t family = 0;
		uint8_t prefix = 0, afd = 0;
		if (!read_u16(r, &family) || !read_u8(r, &prefix) ||
		    !read_u8(r, &afd)) {
			return false;
		}
		size_t afd_len = afd & 0x7f;
		size_t max = family == 1 ? 4 : family == 2 ? 16 : 0;
		if (max == 0) {
			return fail(r, "an APL item is not of address family 1 "
			            "or 2 (RFC 3123 §4)");
		}
		if (prefix > max * 8 || afd_len > max) {
			return fail(r, "an APL prefix or address is longer than "
			            "its family's addresses (RFC 3123 §4)");
		}
		const uint8_t *addr = take(r, afd_len);
		if (addr != NULL && afd_len > 0 && addr[afd_len - 1] == 0) {
			return fail(r, "an APL address ends in a zero octet "
			            "(RFC 3123 §4)");
		}
	}
	return r->why == NULL;
}

/* A digest of a known algorithm has that algorithm's size. */
static bool digest_fits(reader_t *r, uint8_t algorithm,
                        const uint8_t sizes[][2], const char *why)
{
	size_t len = left(r);
	for (int i = 0; sizes[i][0] != 0; i++) {
		if (sizes[i][0] == algorithm && sizes[i][1] != len) {
			return fail(r, why);
		}
	}
	r->pos = r->end;
	return true;
}

/* The last field: opaque, but not empty. */
static bool rest_not_empty(reader_t *r, const char *why)
{
	if (r->why == NULL && at_end(r)) {
		return fail(r, why);
	}
	r->pos = r->end;
	return r->why == NULL;
}

/* DS and CDS: key tag, algorithm, digest type, digest (RFC 4034 §5.1);
 * SHA-1 (RFC 4034), SHA-256 (RFC 4509), GOST (RFC 5933) and SHA-384
 * (RFC 6605) digests have their hash's size. */
static bool check_ds(reader_t *r)
{
	static const uint8_t sizes[][2] = { { 1, 20 }, { 2, 32 }, { 3, 32 },
	                                    { 4, 48 }, { 0, 0 } };
	const uint8_t *head = take(r, 4);
	if (!rest_not_empty(r, "the DS digest is empty (RFC 4034 §5.1.4)")) {
		return false;
	}
	r->pos = head + 4;
	return digest_fits(r, head[3], sizes, "the DS digest is not the size "
	                   "of its digest type's hash (RFC 4509, RFC 6605)");
}

/* SSHFP: algorithm, type, fingerprint of SHA-1 (RFC 4255) or SHA-256
 * (RFC 6594) size. */
static bool check_sshfp(reader_t *r)
{
	static const uint8_t sizes[][2] = { { 1, 20 }, { 2, 32 }, { 0, 0 } };
	const uint8_t *head = take(r, 2);
	if (!rest_not_empty(r, "the SSHFP fingerprint is empty (RFC 4255 "
	                    "§3.1.3)")) {
		return false;
	}
	r->pos = head + 2;
	return digest_fits(r, head[1], sizes, "the SSHFP fingerprint is not "
	                   "the size of its type's hash (RFC 6594 §3)");
}

/* ZONEMD (RFC 8976 §2.2): serial, scheme, hash algorithm, a digest of at
 * least 12 octets, SHA-384 and SHA-512 ones of their size. */
static bool check_zonemd(reader_t *r)
{
	static const uint8_t sizes[][2] = { { 1, 48 }, { 2, 64 }, { 0, 0 } };
	const uint8_t *head = take(r, 6);
	if (r->why == NULL && left(r) < 12) {
		return fail(r, "the ZONEMD digest is shorter than 12 octets "
		            "(RFC 8976 §2.2.4)");
	}
	return head != NULL && digest_fits(r, head[5], sizes, "the ZONEMD "
	                                   "digest is not the size of its "
	                                   "hash (RFC 8976 §2.2.3)");
}

/* The last field of TLSA, SMIMEA, CERT, DNSKEY and CDNSKEY: not empty. */
static bool check_trailing_data(uint16_t type, reader_t *r)
{
	switch (type) {
	case KNOT_RRTYPE_TLSA:
	case KNOT_RRTYPE_SMIMEA:
		take(r, 3);
		return rest_not_empty(r, "the certificate association data is "
		                      "empty (RFC 6698 §2.1.4)");
	case KNOT_RRTYPE_CERT:
		take(r, 5);
		return rest_not_empty(r, "the CERT certificate is empty (RFC "
		                      "4398 §2)");
	default:
		take(r, 4);
		return rest_not_empty(r, "the public key is empty (RFC 4034 "
		                      "§2.1.4)");
	}
}

/* KEY (RFC 2535 §3.1.2): flags whose A/C bits are both set say "no key",
 * and then the rdata ends after the algorithm. */
static bool check_key(reader_t *r)
{
	uint16_t flags = 0;
	read_u16(r, &flags);
	take(r, 2);
	if (r->why == NULL && (flags & 0xc000) == 0xc000 && !at_end(r)) {
		return fail(r, "a KEY whose flags say \"no key\" holds one (RFC "
		            "2535 §3.1.2)");
	}
	r->pos = r->why == NULL ? r->end : r->pos;
	return r->why == NULL;
}

/* Whether the ERE `re` (len octets, no NUL) is one BIND loads, and how
 * many parenthesised subexpressions it has. BIND does not compile the
 * ERE: it checks it with its own parser (isc_regex_validate(), lib/isc/
 * regex.c), stricter than POSIX in places ("a**", "(a|)", "|a", "a+?",
 * "a{1}*" refused) and looser in others ("a{" and "a{x}" are literals,
 * a collating element's name is not looked up). This is a parser of our
 * own with the same rules, so what loads here loads in BIND and back;
 * nothing is compiled (glibc's regcomp() expanded nested intervals into
 * gigabytes). Returns the group count, or -1 when BIND refuses the ERE. */
#define NAPTR_DUP_MAX 255
static const char *const naptr_classes[] = {
	"alnum", "digit", "punct", "alpha", "graph", "space",
	"blank", "lower", "upper", "cntrl", "print", "xdigit",
};

/* A bracket expression from re[i] (just past its '['). Sets *next past
 * its ']'. `range_start` is the last endpoint (it carries over from one
 * bracket expression to the next, as BIND's does). False when BIND
 * refuses it. */
static bool naptr_bracket(const char *re, size_t len, size_t i, size_t *next,
                          int *range_start)
{
	bool negated = false, seen = false;
	int range = 0; /* 2: just after "x-"; 1: after its end point. */
	while (i < len) {
		char c = re[i];
		if (c == '^' && !seen && !negated) {
			negated = true;
			i++;
			continue;
		}
		if (c == '-' && range != 2 && seen) {
			if (range == 1) {
				return false; /* "a-b-c" */
			}
			range = 2;
			i++;
			continue;
		}
		if (c == ']' && seen) {
			*next = i + 1;
			return true;
		}
		if (c == ']' && i + 1 == len) {
			return false; /* "[]" at the end: never closed */
		}
		if (c == '[' && i + 1 < len &&
		    (re[i + 1] == '.' || re[i + 1] == '=' || re[i + 1] == ':')) {
			char kind = re[i + 1];
			size_t start = i + 2, j = start;
			while (j + 1 < len && !(re[j] == kind && re[j + 1] == ']')) {
				j++;
			}
			if (j + 1 >= len) {
				return false; /* not closed */
			}
			size_t n = j - start; /* the name's octets */
			if (kind == '.') {
				if (range != 0) {
					range--;
				}
				if (n == 0) {
					return false; /* "[..]" */
				}
				/* A multi-octet element ends no range. A
				 * one-octet one is taken as BIND takes it, a
				 * signed char (amd64): an octet >= 0x80 starts
				 * a range any end point may close. */
				*range_start = n == 1 ? (int)(signed char)re[start] :
				               256;
			} else if (range == 2) {
				return false; /* a class as a range's end */
			} else if (kind == '=' && n == 0) {
				return false; /* "[==]" */
			} else if (kind == ':') {
				bool known = false;
				for (size_t k = 0; k < sizeof naptr_classes /
				                       sizeof naptr_classes[0]; k++) {
					if (strlen(naptr_classes[k]) == n &&
					    memcmp(naptr_classes[k], re + start, n) == 0) {
						known = true;
					}
				}
				if (!known) {
					return false;
				}
			}
			seen = true;
			i = j + 2;
			continue;
		}
		if (c == '[') {
			/* A '[' not opening a class: the next octet is read
			 * on its own, the '[' counts as seen only. */
			seen = true;
			i++;
			continue;
		}
		seen = true;
		if (range == 2 && (unsigned char)c < *range_start) {
			return false; /* "z-a" */
		}
		if (range != 0) {
			range--;
		}
		*range_start = (unsigned char)c;
		i++;
	}
	return false;
}

static int naptr_ere_groups(const char *re, size_t len)
{
	bool atom = false;     /* something a repetition can apply to */
	bool repeated = false; /* ...that is already repeated (or ^ $) */
	bool empty_ok = true;  /* "()" is allowed, "(a|)" is not */
	int open = 0, groups = 0, range_start = 0;
	if (len == 0) {
		return -1;
	}
	for (size_t i = 0; i < len; ) {
		char c = re[i];
		switch (c) {
		case '\\':
			if (i + 1 == len) {
				return -1;
			}
			if (re[i + 1] >= '1' && re[i + 1] <= '9' &&
			    re[i + 1] - '0' > groups) {
				return -1; /* a back-reference past its groups */
			}
			atom = true;
			repeated = false;
			i += 2;
			break;
		case '[':
			if (!naptr_bracket(re, len, i + 1, &i, &range_start)) {
				return -1;
			}
			atom = true;
			repeated = false;
			break;
		case '{':
			if (i + 1 == len || !isdigit((unsigned char)re[i + 1])) {
				atom = true; /* "a{", "a{x}", "a{,5}": literal */
				repeated = false;
				i++;
				break;
			}
			if (!atom || repeated) {
				return -1;
			}
			unsigned low = 0, high = 0;
			bool comma = false, has_high = false;
			for (i++; ; i++) {
				if (i == len) {
					return -1; /* "a{1" */
				}
				if (re[i] == '}') {
					break;
				}
				if (re[i] == ',' && !comma) {
					comma = true;
				} else if (isdigit((unsigned char)re[i]) && !comma) {
					low = low * 10 + (unsigned)(re[i] - '0');
				} else if (isdigit((unsigned char)re[i])) {
					high = high * 10 + (unsigned)(re[i] - '0');
					has_high = true;
				} else {
					return -1; /* "a{1, 2}", "a{1,2,3}" */
				}
				if (low > NAPTR_DUP_MAX || high > NAPTR_DUP_MAX) {
					return -1;
				}
			}
			if (has_high && low > high) {
				return -1;
			}
			atom = true;
			repeated = true;
			i++;
			break;
		case '(':
			atom = false;
			repeated = false;
			empty_ok = true;
			open++;
			groups++;
			i++;
			break;
		case ')':
			if (open > 0 && !atom && !empty_ok) {
				return -1; /* "(a|)" */
			}
			if (open > 0) {
				open--;
			}
			atom = true;
			repeated = false;
			i++;
			break;
		case '|':
			if (!atom) {
				return -1; /* "|a", "a||b" */
			}
			atom = false;
			empty_ok = false;
			repeated = false;
			i++;
			break;
		case '^':
		case '$':
			atom = true;
			repeated = true;
			i++;
			break;
		case '+':
		case '*':
		case '?':
			if (repeated || !atom) {
				return -1; /* "a**", "a+?", "*a", "^*" */
			}
			repeated = true;
			i++;
			break;
		default: /* '.', '}', and any other octet */
			atom = true;
			repeated = false;
			i++;
			break;
		}
	}
	return open == 0 && atom ? groups : -1;
}

/* An RFC 3402 §3.2 substitution expression, as BIND checks it: a
 * delimiter (not NUL, digit, backslash or flag), the ERE, the delimiter,
 * the replacement, the delimiter, flags ("i"). Backslash escapes the
 * next octet. The ERE must pass BIND's own check (naptr_ere_groups()),
 * and a replacement's back-reference \1 to \9 name a subexpression it
 * has (\0 none): BIND refuses the record otherwise, so its zone did not
 * load. */
static bool is_naptr_regexp(const uint8_t *p, size_t len)
{
	if (len == 0) {
		return true;
	}
	uint8_t delim = p[0];
	if (delim == 0 || delim == '\\' || delim == 'i' || isdigit(delim)) {
		return false;
	}
	char ere[256];
	size_t ere_len = 0;
	unsigned groups = 0;
	int part = 0; /* 0: ERE, 1: replacement, 2: flags. */
	for (size_t i = 1; i < len; i++) {
		if (p[i] == 0) {
			return false;
		}
		if (part == 2) {
			if (p[i] != 'i') {
				return false;
			}
		} else if (p[i] == '\\') {
			if (++i == len || p[i] == 0) {
				return false;
			}
			if (part == 0) {
				ere[ere_len++] = '\\';
				ere[ere_len++] = (char)p[i];
			} else if (p[i] == '0') {
				return false;
			} else if (isdigit(p[i]) && (unsigned)(p[i] - '0') > groups) {
				groups = (unsigned)(p[i] - '0');
			}
		} else if (p[i] == delim) {
			part++;
		} else if (part == 0) {
			ere[ere_len++] = (char)p[i];
		}
	}
	if (part != 2) {
		return false;
	}
	int has = naptr_ere_groups(ere, ere_len);
	return has >= 0 && (unsigned)has >= groups;
}

/* NAPTR's order, preference, flags, services and regexp (RFC 3403 §4.1). */
static bool check_naptr_head(reader_t *r)
{
	uint8_t len = 0;
	take(r, 4);
	read_string(r, NULL);
	read_string(r, NULL);
	if (read_string(r, &len) && !is_naptr_regexp(r->pos - len, len)) {
		return fail(r, "the NAPTR regexp is not delimiter, ERE, "
		            "delimiter, replacement, delimiter, flags (RFC 3402 "
		            "§3.2), with an ERE BIND accepts and back-references "
		            "to its subexpressions only");
	}
	return r->why == NULL;
}

/* --- SVCB and HTTPS (RFC 9460) --- */

enum {
	SVC_MANDATORY = 0,
	SVC_ALPN = 1,
	SVC_NO_DEFAULT_ALPN = 2,
	SVC_PORT = 3,
	SVC_IPV4HINT = 4,
	SVC_ECH = 5,
	SVC_IPV6HINT = 6,
	SVC_DOHPATH = 7,
};

static bool is_varchar(uint8_t c)
{
	return c < 0x80 && (isalnum(c) || c == '_');
}

/* Length of the UTF-8 sequence at p (at most n octets), 0 if invalid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	size_t len = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 :
	             (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (len == 0 || len > n || (len == 2 && p[0] < 0xc2)) {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			return 0;
		}
	}
	return len;
}

/* An RFC 6570 expression's variable list, from after its operator to
 * before its "}": varspecs separated by commas, each a name of varchars
 * (or %XX) with an optional ":1-9999" or "*". Sets *dns when a
 * variable is named "dns". */
static bool template_vars(const uint8_t *p, const uint8_t *end, bool *dns)
{
	while (p < end) {
		const uint8_t *name = p;
		while (p < end && (is_varchar(*p) || *p == '.' || *p == '%')) {
			if (*p == '%' && (end - p < 3 || !isxdigit(p[1]) ||
			                  !isxdigit(p[2]))) {
				return false;
			}
			p += *p == '%' ? 3 : 1;
		}
		if (p == name || name[0] == '.' || p[-1] == '.') {
			return false;
		}
		*dns |= (p - name == 3 && memcmp(name, "dns", 3) == 0);
		if (p < end && *p == '*') {
			p++;
		} else if (p < end && *p == ':') {
			const uint8_t *digits = ++p;
			while (p < end && isdigit(*p)) {
				p++;
			}
			if (p == digits || p - digits > 4 || *digits == '0') {
				return false;
			}
		}
		if (p < end && *p++ != ',') {
			return false;
		}
		if (p == end && p[-1] == ',') {
			return false;
		}
	}
	return true;
}

/* dohpath (RFC 9461 §5): a relative URI template (RFC 6570) in UTF-8,
 * starting with "/", with a "dns" variable. */
static bool is_dohpath(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	bool dns = false;
	if (len == 0 || p[0] != '/') {
		return false;
	}
	while (p < end) {
		if (*p == '{') {
			const uint8_t *close = memchr(p, '}', end - p);
			if (close == NULL) {
				return false;
			}
			const uint8_t *vars = p + 1;
			if (vars < close && strchr("+#./;?&", *vars) != NULL) {
				vars++;
			}
			if (!template_vars(vars, close, &dns) || vars == close) {
				return false;
			}
			p = close + 1;
		} else if (*p == '%') {
			if (end - p < 3 || !isxdigit(p[1]) || !isxdigit(p[2])) {
				return false;
			}
			p += 3;
		} else if (*p <= 0x20 || *p == 0x7f || strchr("\"'<>\\^`|}", *p)) {
			return false;
		} else {
			size_t n = utf8_len(p, end - p);
			if (n == 0) {
				return false;
			}
			p += n;
		}
	}
	return dns;
}

/* The value of one SvcParam by the key's rules (RFC 9460 §7, RFC 9461). */
static bool check_svc_value(reader_t *r, uint16_t key, const uint8_t *v,
                            uint16_t len)
{
	reader_t list = { .pos = v, .end = v + len };
	switch (key) {
	case SVC_MANDATORY: {
		int last = -1;
		uint16_t k = 0;
		if (len == 0 || len % 2 != 0) {
			return fail(r, "SVCB mandatory is not a list of keys "
			            "(RFC 9460 §8)");
		}
		while (!at_end(&list) && read_u16(&list, &k)) {
			if (k == SVC_MANDATORY || (int)k <= last) {
				return fail(r, "SVCB mandatory keys are not in "
				            "increasing order, repeat or list "
				            "mandatory (RFC 9460 §8)");
			}
			last = k;
		}
		return true;
	}
	case SVC_ALPN: {
		uint8_t n = 0;
		if (len == 0) {
			return fail(r, "SVCB alpn is empty (RFC 9460 §7.1.1)");
		}
		while (!at_end(&list) && read_string(&list, &n) && n > 0) {
		}
		if (list.why != NULL || n == 0) {
			return fail(r, "SVCB alpn is not a list of non-empty "
			            "protocol ids (RFC 9460 §7.1.1)");
		}
		return true;
	}
	case SVC_NO_DEFAULT_ALPN:
		return len == 0 ? true : fail(r, "SVCB no-default-alpn has a "
		                              "value (RFC 9460 §7.1.1)");
	case SVC_PORT:
		return len == 2 ? true : fail(r, "SVCB port is not 2 octets "
		                              "(RFC 9460 §7.2)");
	case SVC_IPV4HINT:
	case SVC_IPV6HINT: {
		size_t size = key == SVC_IPV4HINT ? 4 : 16;
		return (len > 0 && len % size == 0) ? true :
		       fail(r, "an SVCB address hint is not a list of addresses "
		            "(RFC 9460 §7.3)");
	}
	case SVC_ECH:
		return len > 0 ? true : fail(r, "SVCB ech is empty (RFC 9460 "
		                             "§9)");
	case SVC_DOHPATH:
		return is_dohpath(v, len) ? true :
		       fail(r, "SVCB dohpath is not a relative URI template with "
		            "a dns variable (RFC 9461 §5)");
	default:
		return true;
	}
}

/* Every key that mandatory lists is present (RFC 9460 §8). */
static bool has_mandatory_keys(const uint8_t *params, const uint8_t *end)
{
	reader_t r = { .pos = params, .end = end };
	uint16_t key = 0, len = 0;
	if (!read_u16(&r, &key) || key != SVC_MANDATORY || !read_u16(&r, &len)) {
		return true; /* No mandatory: keys are in order, it is first. */
	}
	reader_t list = { .pos = r.pos, .end = r.pos + len };
	reader_t rest = { .pos = r.pos + len, .end = end };
	uint16_t want = 0;
	while (!at_end(&list) && read_u16(&list, &want)) {
		bool found = false;
		while (!found && !at_end(&rest) && read_u16(&rest, &key) &&
		       read_u16(&rest, &len) && take(&rest, len) != NULL) {
			found = (key == want);
		}
		if (!found) {
			return false;
		}
	}
	return true;
}

static bool check_svcb(reader_t *r)
{
	uint16_t priority = 0;
	read_u16(r, &priority);
	read_name(r);
	const uint8_t *params = r->pos;
	int last = -1;
	bool alpn = false, no_default_alpn = false;
	while (!at_end(r)) {
		uint16_t key = 0, len = 0;
		if (!read_u16(r, &key) || !read_u16(r, &len)) {
			return false;
		}
		const uint8_t *value = take(r, len);
		if (value == NULL) {
			return fail(r, "an SVCB parameter runs past the end of the "
			            "rdata");
		}
		if ((int)key <= last) {
			return fail(r, "SVCB parameters are not in increasing key "
			            "order, or repeat (RFC 9460 §2.2)");
		}
		if (!check_svc_value(r, key, value, len)) {
			return false;
		}
		alpn |= (key == SVC_ALPN);
		no_default_alpn |= (key == SVC_NO_DEFAULT_ALPN);
		last = key;
	}
	if (r->why != NULL) {
		return false;
	}
	if (no_default_alpn && !alpn) {
		return fail(r, "SVCB no-default-alpn without alpn (RFC 9460 "
		            "§7.1.1)");
	}
	if (!has_mandatory_keys(params, r->end)) {
		return fail(r, "a key that SVCB mandatory lists is missing "
		            "(RFC 9460 §8)");
	}
	return true;
}

/* The part libknot keeps opaque, by type. */
static bool check_remainder(uint16_t type, reader_t *r)
{
	switch (type) {
	case KNOT_RRTYPE_TXT:
	case KNOT_RRTYPE_SPF:
		return check_strings(r);
	case KNOT_RRTYPE_HINFO:
		return check_hinfo(r);
	case KNOT_RRTYPE_CAA:
		return check_caa(r);
	case KNOT_RRTYPE_URI:
		return check_uri(r);
	case KNOT_RRTYPE_SVCB:
	case KNOT_RRTYPE_HTTPS:
		return check_svcb(r);
	case KNOT_RRTYPE_IPSECKEY:
		return check_ipseckey(r);
	case KNOT_RRTYPE_NSEC:
		return check_bitmap(r);
	case KNOT_RRTYPE_NSEC3:
		return check_nsec3(r, false);
	case KNOT_RRTYPE_NSEC3PARAM:
		return check_nsec3(r, true);
	case KNOT_RRTYPE_CSYNC:
		return check_csync(r);
	case KNOT_RRTYPE_APL:
		return check_apl(r);
	case KNOT_RRTYPE_DS:
	case KNOT_RRTYPE_CDS:
		return check_ds(r);
	case KNOT_RRTYPE_SSHFP:
		return check_sshfp(r);
	case KNOT_RRTYPE_KEY:
		return check_key(r);
	case KNOT_RRTYPE_ZONEMD:
		return check_zonemd(r);
	case KNOT_RRTYPE_TLSA:
	case KNOT_RRTYPE_SMIMEA:
	case KNOT_RRTYPE_CERT:
	case KNOT_RRTYPE_DNSKEY:
	case KNOT_RRTYPE_CDNSKEY:
		return check_trailing_data(type, r);
	default:
		r->pos = r->end; /* Opaque to the text form too (hex, base64). */
		return true;
	}
}

bool dns_rdata_type_storable(uint16_t type)
{
	return type != 0 && type != KNOT_RRTYPE_OPT &&
	       (type < 128 || type > 255);
}

bool dns_rdata_valid(uint16_t type, const uint8_t *rdata, size_t len,
                     const char **why)
{
	reader_t r = { .pos = rdata, .end = rdata + len };
	const knot_rdata_descriptor_t *desc = knot_get_rdata_descriptor(type);
	if (desc->type_name == NULL) {
		/* MD, MF, MB, MG, MR, PX, NXT: libknot's packet parser reads
		 * their names, so they are checked as it reads them. */
		desc = knot_get_obsolete_rdata_descriptor(type);
	}
	if (desc->type_name == NULL || rdata == NULL) {
		return rdata != NULL || len == 0; /* Unknown: opaque octets. */
	}
	if (len == 0 && type != KNOT_RRTYPE_APL) {
		/* libknot's packet parser refuses it (an empty NULL would
		 * break transfers to Knot secondaries); only APL may be empty
		 * (RFC 3123 §4). */
		if (why != NULL) {
			*why = "the rdata is empty (of the known types only APL may "
			       "be)";
		}
		return false;
	}
	if (type == KNOT_RRTYPE_LOC) {
		bool ok = check_loc(&r); /* Its descriptor: 16 octets. */
		if (!ok && why != NULL) {
			*why = r.why;
		}
		return ok;
	}
	bool remainder = false;
	for (int i = 0; desc->block_types[i] != KNOT_RDATA_WF_END &&
	                r.why == NULL; i++) {
		int block = desc->block_types[i];
		if (block > 0) {
			take(&r, (size_t)block);
		} else if (block == KNOT_RDATA_WF_REMAINDER) {
			check_remainder(type, &r);
			remainder = true;
		} else if (block == KNOT_RDATA_WF_NAPTR_HEADER) {
			check_naptr_head(&r);
		} else {
			read_name(&r);
		}
	}
	bool ok = remainder ? r.why == NULL : finish(&r);
	if (!ok && why != NULL) {
		*why = r.why;
	}
	return ok;
}

int dns_a6_prefix_name(const uint8_t *rdata, size_t len, size_t *at)
{
	*at = 0;
	if (len < 1 || rdata[0] > 128) {
		return -1;
	}
	size_t start = 1 + (size_t)(128 - rdata[0] + 7) / 8;
	if (rdata[0] == 0) {
		return start == len ? 0 : -1;
	}
	if (start >= len) {
		return -1;
	}
	int size = knot_dname_wire_check(rdata + start, rdata + len, NULL);
	if (size <= 0 || start + (size_t)size != len) {
		return -1;
	}
	*at = start;
	return size;
}
