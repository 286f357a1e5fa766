/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What may be stored (zonefile_record_check(), dns_rdata_valid()) and how
 * it is written (zonefile_rdata_text()): a table of cases, one per class
 * of rdata that used to be stored and then not re-imported (or crashed
 * libknot's writer), and a sweep over every type libknot describes with
 * random rdata that libknot's packet parser accepts, as an UPDATE would
 * carry it. Under ASan the sweep proves that nothing passing the format
 * check makes the writer read out of bounds; everywhere it proves that
 * whatever passes the whole check reads back as the same octets.
 * ZONECAST_CHECK_STATS=1 prints, per type, how the random rdata fared.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/libknot.h>
#include <libzscanner/scanner.h>

#include "common/error.h"
#include "dns/rdata.h"
#include "tests/unit/test.h"
#include "zonefile/zonefile.h"

typedef struct {
	const char *owner;   /* NULL: x.test. */
	const char *type;    /* Mnemonic or TYPEnnn. */
	uint32_t ttl;
	const char *hex;     /* Wire rdata. */
	int want;            /* ZC_EOK, ZC_ERDATA or ZC_EUNSTORABLE. */
} case_t;

static const case_t cases[] = {
	/* CAA tag: 1+ ASCII letters and digits (RFC 8659 §4.1). */
	{ NULL, "CAA", 300, "000078", ZC_ERDATA },                 /* 0 "" "x" */
	{ NULL, "CAA", 300, "0004746167" "2178", ZC_ERDATA },       /* tag! */
	{ NULL, "CAA", 300, "0003612d62" "78", ZC_ERDATA },         /* a-b */
	{ NULL, "CAA", 300, "000361620078", ZC_ERDATA },           /* ab\000 */
	{ NULL, "CAA", 300, "00054953535545" "78", ZC_EOK },        /* ISSUE "x" */
	{ NULL, "CAA", 300, "0005697373756500", ZC_EOK },          /* value \000 */
	{ NULL, "CAA", 300, "0005697373", ZC_ERDATA },             /* tag cut short */
	{ NULL, "CAA", 300, "00", ZC_ERDATA },
	/* TXT: character-strings filling the rdata, at least one. */
	{ NULL, "TXT", 300, "00", ZC_EOK },                        /* "" */
	{ NULL, "TXT", 300, "0000", ZC_EOK },                      /* "" "" */
	{ NULL, "TXT", 300, "0200ff03223b5c", ZC_EOK },            /* odd octets */
	{ NULL, "TXT", 300, "", ZC_ERDATA },
	{ NULL, "TXT", 300, "0561", ZC_ERDATA },                   /* runs past */
	{ NULL, "TXT", 300, "016100", ZC_EOK },
	{ NULL, "SPF", 300, "03616263ff", ZC_ERDATA },
	{ NULL, "HINFO", 300, "0161", ZC_ERDATA },                 /* one string */
	{ NULL, "HINFO", 300, "00000161", ZC_ERDATA },             /* three */
	{ NULL, "HINFO", 300, "0000", ZC_EOK },
	/* Fixed sizes that libzscanner's generic form does not check. */
	{ NULL, "A", 300, "010203", ZC_ERDATA },
	{ NULL, "A", 300, "0102030405", ZC_ERDATA },
	{ NULL, "AAAA", 300, "00", ZC_ERDATA },
	{ NULL, "MX", 300, "000a", ZC_ERDATA },
	{ NULL, "MX", 300, "000a00", ZC_EOK },
	{ NULL, "CNAME", 300, "c00c", ZC_ERDATA },                 /* compressed */
	{ NULL, "CNAME", 300, "03616263", ZC_ERDATA },             /* no end */
	{ NULL, "CNAME", 300, "0361626300ff", ZC_ERDATA },         /* extra data */
	{ NULL, "CNAME", 300, "0300002e00", ZC_EOK },              /* \000\000. */
	/* SVCB and HTTPS (RFC 9460): the target and every parameter fit. */
	{ NULL, "SVCB", 300, "00015e", ZC_ERDATA },                /* no name end */
	{ NULL, "SVCB", 300, "000100000100", ZC_ERDATA },          /* short param */
	{ NULL, "SVCB", 300, "00010000030002", ZC_ERDATA },        /* port short */
	{ NULL, "SVCB", 300, "000100" "0003000201bb", ZC_EOK },    /* port=443 */
	{ NULL, "SVCB", 300, "000100" "000300020035" "000100030268"
	  "33", ZC_ERDATA },                                  /* out of order */
	{ NULL, "SVCB", 300, "000100" "000300020035" "000300020035",
	  ZC_ERDATA },                                        /* repeated */
	{ NULL, "HTTPS", 300, "000100" "00010000", ZC_ERDATA },    /* alpn empty */
	{ NULL, "HTTPS", 300, "000100" "0001000100", ZC_ERDATA },  /* alpn "" */
	{ NULL, "HTTPS", 300, "000100" "000100030268" "32", ZC_EOK },
	{ NULL, "HTTPS", 300, "000100" "00020000", ZC_ERDATA },    /* no alpn */
	{ NULL, "HTTPS", 300, "000100" "000100030268" "32" "00020000",
	  ZC_EOK },                                           /* + ndalpn */
	{ NULL, "HTTPS", 300, "000100" "00000002" "0003", ZC_ERDATA }, /* port? */
	{ NULL, "HTTPS", 300, "000100" "00000002" "0003" "000300020035",
	  ZC_EOK },                                           /* mandatory */
	{ NULL, "HTTPS", 300, "000100" "00000002" "0000" "000300020035",
	  ZC_ERDATA },                                        /* lists 0 */
	{ NULL, "HTTPS", 300, "000100" "00040003010203", ZC_ERDATA },
	{ NULL, "HTTPS", 300, "000100" "00050000", ZC_ERDATA },    /* ech empty */
	{ NULL, "HTTPS", 300, "000100" "000700012f", ZC_ERDATA },  /* dohpath / */
	{ NULL, "HTTPS", 300, "000100" "000700092f712f7b3f646e737d", ZC_EOK },
	{ NULL, "HTTPS", 300, "000100" "000700062f7b3f646e73", ZC_ERDATA },
	{ NULL, "HTTPS", 300, "000100" "fde8000178", ZC_EOK },      /* key65000 */
	{ NULL, "HTTPS", 300, "000000", ZC_EOK },                  /* alias . */
	/* IPSECKEY gateways (RFC 4025). */
	{ NULL, "IPSECKEY", 300, "010300" "05", ZC_ERDATA },        /* name: no end */
	{ NULL, "IPSECKEY", 300, "010400", ZC_ERDATA },            /* type 4 */
	/* Algorithm 0 (no key, RFC 4025 §2.4): BIND loads no IPSECKEY
	 * without a key (outside tester 20). */
	{ NULL, "IPSECKEY", 300, "010000", ZC_ERDATA },
	{ NULL, "IPSECKEY", 300, "01000201", ZC_EOK },
	{ NULL, "IPSECKEY", 300, "010002", ZC_ERDATA },            /* no key */
	{ NULL, "IPSECKEY", 300, "01000001", ZC_ERDATA },          /* alg 0, key */
	{ NULL, "IPSECKEY", 300, "01010001020304", ZC_ERDATA },
	{ NULL, "IPSECKEY", 300, "0101020102030401", ZC_EOK },
	/* NSEC3 and NSEC3PARAM: salt and hash lengths (RFC 5155). */
	{ NULL, "NSEC3", 300, "01000001" "29", ZC_ERDATA },
	{ NULL, "NSEC3", 300, "01000001" "00" "0141" "000120", ZC_EOK },
	{ NULL, "NSEC3", 300, "01000001" "00" "00", ZC_ERDATA },
	{ NULL, "NSEC3PARAM", 300, "01000001" "05aa", ZC_ERDATA },
	{ NULL, "NSEC3PARAM", 300, "01000001" "01aa", ZC_EOK },
	/* Type bitmaps (RFC 4034 §4.1.2). */
	{ NULL, "NSEC", 300, "00" "000100", ZC_ERDATA },           /* zero octet */
	{ NULL, "NSEC", 300, "00" "000140" "000140", ZC_ERDATA },  /* window again */
	{ NULL, "NSEC", 300, "00" "000140", ZC_EOK },
	{ NULL, "CSYNC", 300, "000000010000" "0021" "40", ZC_ERDATA },
	{ NULL, "CSYNC", 300, "000000010003" "000160", ZC_EOK },
	/* LOC, APL, DS. */
	{ NULL, "LOC", 300, "01121613800000008000000000989680", ZC_ERDATA },
	{ NULL, "LOC", 300, "00a21613800000008000000000989680", ZC_ERDATA },
	{ NULL, "LOC", 300, "00121613800000008000000000989680", ZC_EOK },
	{ NULL, "LOC", 300, "00121613" "ff000000" "80000000" "00989680", ZC_ERDATA },
	{ NULL, "APL", 300, "", ZC_EOK },
	{ NULL, "APL", 300, "0001200401020300", ZC_ERDATA },       /* trailing 0 */
	{ NULL, "APL", 300, "0001210101", ZC_ERDATA },             /* /33 */
	{ NULL, "APL", 300, "000320010a", ZC_ERDATA },             /* family 3 */
	{ NULL, "APL", 300, "0001180301020381", ZC_ERDATA },       /* short */
	{ NULL, "APL", 300, "00011803010203", ZC_EOK },
	{ NULL, "DS", 300, "00010802", ZC_ERDATA },
	{ NULL, "DS", 300, "0001080200", ZC_ERDATA },              /* SHA-256: 32 */
	{ NULL, "DS", 300, "0001080500", ZC_EOK },                 /* unknown: any */
	{ NULL, "CDS", 300, "0000000000", ZC_EOK },                /* RFC 8078 */
	{ NULL, "SSHFP", 300, "0101", ZC_ERDATA },
	{ NULL, "SSHFP", 300, "010100", ZC_ERDATA },               /* SHA-1: 20 */
	{ NULL, "SSHFP", 300, "010300", ZC_EOK },
	{ NULL, "TLSA", 300, "030101", ZC_ERDATA },
	{ NULL, "TLSA", 300, "03010100", ZC_EOK },
	{ NULL, "DNSKEY", 300, "01000308", ZC_ERDATA },
	{ NULL, "CDNSKEY", 300, "0000030000", ZC_EOK },            /* RFC 8078 */
	{ NULL, "CERT", 300, "0001000100", ZC_ERDATA },
	{ NULL, "ZONEMD", 300, "000000010100" "00000000000000000000", ZC_ERDATA },
	{ NULL, "ZONEMD", 300, "000000010100" "000000000000000000000000", ZC_EOK },
	{ NULL, "ZONEMD", 300, "000000010101" "000000000000000000000000",
	  ZC_ERDATA },                                        /* SHA-384: 48 */
	/* NAPTR regexp (RFC 3402 §3.2). */
	/* An ERE that does not compile, a back-reference past its groups,
	 * \0, a bad interval: BIND refuses them (outside tester 20). */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "05" "2128217821" "00",
	  ZC_ERDATA },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "09" "215e2e2a24215c3221" "00",
	  ZC_ERDATA },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0b"
	  "215e282e2a2924215c3021" "00", ZC_ERDATA },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0a" "21617b322c317d2178" "21"
	  "00", ZC_ERDATA },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0b"
	  "215e282e2a2924215c3121" "00", ZC_EOK },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0161" "00", ZC_ERDATA },
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0821" "5e2e2a2421" "7821" "00",
	  ZC_EOK },                                           /* !^.*$!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0931" "5e2e2a2431" "783169"
	  "00", ZC_ERDATA },                                  /* delimiter 1 */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0921" "5e2e2a2421" "782169"
	  "00", ZC_EOK },                                     /* flag i */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0921" "5e2e2a2421" "782178"
	  "00", ZC_ERDATA },                                  /* flag x */
	/* BIND's own ERE check, not regcomp() (outside tester 23). */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "06" "21617b217821" "00",
	  ZC_EOK },  /* !a{!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "08" "21617b787d217821" "00",
	  ZC_EOK },  /* !a{x}!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0f" "215b5b2e73706163652e5d5d217821" "00",
	  ZC_EOK },  /* ![[.space.]]!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "08" "2128617c29217821" "00",
	  ZC_ERDATA },  /* !(a|)!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "08" "21617c7c62217821" "00",
	  ZC_ERDATA },  /* !a||b!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "06" "217c61217821" "00",
	  ZC_ERDATA },  /* !|a!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "07" "21612b3f217821" "00",
	  ZC_ERDATA },  /* !a+?!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "07" "21612a2a217821" "00",
	  ZC_ERDATA },  /* !a**!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "09" "21612a7b327d217821" "00",
	  ZC_ERDATA },  /* !a*{2}!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "0d" "21617b312c327d7b337d217821" "00",
	  ZC_ERDATA },  /* !a{1,2}{3}!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "09" "21617b317d2a217821" "00",
	  ZC_ERDATA },  /* !a{1}*!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "06" "212829217821" "00",
	  ZC_EOK },  /* !()!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "04" "21217821" "00",
	  ZC_ERDATA },  /* !!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "09" "212861295c31217821" "00",
	  ZC_EOK },  /* !(a)\1!x! */
	{ NULL, "NAPTR", 300, "00010001" "00" "00" "09" "212861295c32217821" "00",
	  ZC_ERDATA },  /* !(a)\2!x! */
	/* NS at a wildcard (RFC 4592 §4.2): BIND refuses the zone. */
	{ "*.x.test.", "NS", 300, "00", ZC_EUNSTORABLE },
	{ "*.x.test.", "CNAME", 300, "00", ZC_EOK },
	{ "a.*.x.test.", "NS", 300, "00", ZC_EOK },
	/* Types a zone does not hold, TTLs, unknown types. */
	{ NULL, "TYPE0", 300, "", ZC_EUNSTORABLE },
	{ NULL, "TYPE41", 300, "", ZC_EUNSTORABLE },
	{ NULL, "TYPE128", 300, "00", ZC_EUNSTORABLE },
	{ NULL, "TYPE255", 300, "", ZC_EUNSTORABLE },
	{ NULL, "TYPE65000", 300, "", ZC_EOK },
	{ NULL, "TYPE65000", 300, "00ff", ZC_EOK },
	{ NULL, "TYPE65535", 300, "01", ZC_EOK },
	{ NULL, "TYPE127", 300, "", ZC_EOK },
	{ NULL, "TYPE7", 300, "00", ZC_EOK },                      /* MB, obsolete */
	{ NULL, "NULL", 300, "00", ZC_EOK },
	{ NULL, "NULL", 300, "", ZC_ERDATA },                /* as libknot */
	{ NULL, "TYPE7", 300, "", ZC_ERDATA },
	{ NULL, "TXT", 2147483647, "00", ZC_EOK },
	{ NULL, "TXT", 2147483648u, "00", ZC_EUNSTORABLE },
	{ NULL, "TXT", 4294967295u, "00", ZC_EUNSTORABLE },
	{ NULL, "TXT", 0, "00", ZC_EOK },
	/* Values libzscanner writes no text form for. */
	{ NULL, "DHCID", 300, "", ZC_ERDATA },
	{ NULL, "OPENPGPKEY", 300, "", ZC_ERDATA },
	{ NULL, "URI", 300, "00010001", ZC_EOK },                  /* "" target */
};

static size_t from_hex(const char *hex, uint8_t *out)
{
	size_t n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

/* Whether libknot's packet parser (UPDATE, transfers to Knot, kdig)
 * takes the rdata. */
static bool knot_parses(uint16_t type, const uint8_t *rdata, size_t len)
{
	uint8_t wire[1024] = { 0 };
	wire[1] = (uint8_t)(type >> 8), wire[2] = (uint8_t)type;
	wire[4] = 1;
	wire[9] = (uint8_t)(len >> 8), wire[10] = (uint8_t)len;
	memcpy(wire + 11, rdata, len);
	knot_rrset_t rr;
	knot_rrset_init_empty(&rr);
	size_t pos = 0;
	int ret = knot_rrset_rr_from_wire(wire, &pos, 11 + len, &rr, NULL, false);
	knot_rrset_clear(&rr, NULL);
	return ret == KNOT_EOK;
}

static void table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const case_t *c = &cases[i];
		uint16_t type;
		uint8_t rdata[512];
		CHECK(knot_rrtype_from_string(c->type, &type) == 0);
		size_t len = from_hex(c->hex, rdata);
		const char *why = NULL;
		uint8_t owner[KNOT_DNAME_MAXLEN];
		knot_dname_from_str(owner, c->owner ? c->owner : "x.test.",
		                    sizeof(owner));
		int ret = zonefile_record_check(owner, type, c->ttl, rdata,
		                                (uint16_t)len,
		                                &why);
		if (ret != c->want) {
			fprintf(stderr, "case %zu: %s %s: %s, want %s (%s)\n", i,
			        c->type, c->hex, zc_strerror(ret),
			        zc_strerror(c->want), why ? why : "");
		}
		CHECK_EQ(ret, c->want);
		CHECK((ret == ZC_EOK) == (why == NULL));
		if (ret == ZC_EOK) {
			CHECK(knot_parses(type, rdata, len));
		}
	}
}

/* The writer's generic form takes anything, and says so. */
static void generic_form(void)
{
	char text[256], type[32];
	bool generic;
	const uint8_t caa[] = { 0, 0, 'x' };
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_CAA, caa, 3, text, sizeof(text),
	                          &generic) > 0);
	CHECK(generic && strcmp(text, "\\# 3 000078") == 0);
	zonefile_type_text(KNOT_RRTYPE_CAA, generic, type, sizeof(type));
	CHECK(strcmp(type, "TYPE257") == 0);
	const uint8_t null[] = { 0xab };
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_NULL, null, 1, text, sizeof(text),
	                          &generic) > 0);
	CHECK(generic && strcmp(text, "\\# 1 AB") == 0);
	const uint8_t txt[] = { 1, ';' };
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_TXT, txt, 2, text, sizeof(text),
	                          &generic) > 0);
	CHECK(!generic && strcmp(text, "\";\"") == 0);
	zonefile_type_text(KNOT_RRTYPE_TXT, generic, type, sizeof(type));
	CHECK(strcmp(type, "TXT") == 0);
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_TXT, txt, 2, text, 3,
	                          &generic) == ZC_ENOSPACE);
	/* '[' in names as \091 (BIND reads backslash-bracket as a bitstring
	 * label); a backslash before '[' in a string stays as it is. */
	const uint8_t bracket[] = { 2, '[', 'a', 3, 'b', '[', '[', 0 };
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_CNAME, bracket, sizeof(bracket),
	                          text, sizeof(text), &generic) > 0);
	CHECK(strcmp(text, "\\091a.b\\091\\091.") == 0);
	const uint8_t slash[] = { 3, '\\', '[', 'x' };
	CHECK(zonefile_rdata_text(KNOT_RRTYPE_TXT, slash, sizeof(slash), text,
	                          sizeof(text), &generic) > 0);
	CHECK(strcmp(text, "\"\\\\[x\"") == 0);
}

/* --- The sweep --- */

static unsigned rnd(unsigned n)
{
	return n ? (unsigned)random() % n : 0;
}

/* Octets that matter to text forms, often; any octet sometimes. */
static uint8_t octet(void)
{
	static const char special[] = "aZ09-_*.\\\"();@$ \t,=";
	return rnd(3) ? (uint8_t)special[rnd(sizeof(special) - 1)] :
	       (uint8_t)rnd(256);
}

static size_t put_name(uint8_t *p)
{
	size_t pos = 0;
	for (int i = rnd(4); i > 0; i--) {
		int len = 1 + rnd(6);
		p[pos++] = (uint8_t)len;
		for (int j = 0; j < len; j++) {
			p[pos++] = octet();
		}
	}
	p[pos++] = 0;
	return pos;
}

static size_t put_strings(uint8_t *p, int count)
{
	size_t pos = 0;
	for (int i = 0; i < count; i++) {
		int len = rnd(6);
		p[pos++] = (uint8_t)len;
		for (int j = 0; j < len; j++) {
			p[pos++] = octet();
		}
	}
	return pos;
}

/* SvcParams in increasing key order, values mostly well-formed. */
static size_t put_svc_params(uint8_t *p)
{
	size_t pos = 0;
	unsigned key = rnd(3);
	for (int i = rnd(4); i > 0; i--, key += 1 + rnd(3)) {
		uint8_t v[64];
		size_t len = 0;
		switch (key) {
		case 1:
			len = put_strings(v, 1 + rnd(2));
			break;
		case 3:
			len = 2, v[0] = octet(), v[1] = octet();
			break;
		case 4:
		case 6:
			len = (key == 4 ? 4 : 16) * (1 + rnd(2));
			for (size_t j = 0; j < len; j++) {
				v[j] = (uint8_t)rnd(256);
			}
			break;
		case 0:
			len = 2, v[0] = 0, v[1] = (uint8_t)(1 + rnd(6));
			break;
		case 2:
			break;
		default:
			len = rnd(5);
			for (size_t j = 0; j < len; j++) {
				v[j] = octet();
			}
		}
		p[pos++] = (uint8_t)(key >> 8), p[pos++] = (uint8_t)key;
		p[pos++] = 0, p[pos++] = (uint8_t)len;
		memcpy(p + pos, v, len);
		pos += len;
	}
	return pos;
}

static size_t put_remainder(uint16_t type, uint8_t *p)
{
	size_t pos = 0;
	int form = rnd(4);
	if (type == KNOT_RRTYPE_SVCB || type == KNOT_RRTYPE_HTTPS) {
		p[pos++] = 0, p[pos++] = (uint8_t)rnd(3);
		pos += put_name(p + pos);
		return pos + (form ? put_svc_params(p + pos) : 0);
	}
	if (type == KNOT_RRTYPE_CAA && form) {
		p[pos++] = (uint8_t)(rnd(2) ? 0 : 128);
		pos += put_strings(p + pos, 1);
		return pos + put_strings(p + pos, 0) + rnd(3);
	}
	if (form == 0) {
		return put_strings(p, 1 + rnd(3));
	}
	int len = form == 1 ? rnd(40) : 1 + rnd(12);
	for (int i = 0; i < len; i++) {
		p[pos++] = rnd(3) ? (uint8_t)rnd(256) : (uint8_t)rnd(4);
	}
	return pos;
}

static size_t put_rdata(uint16_t type, uint8_t *p)
{
	const knot_rdata_descriptor_t *d = knot_get_rdata_descriptor(type);
	size_t pos = 0;
	for (int i = 0; d->block_types[i] != KNOT_RDATA_WF_END; i++) {
		int block = d->block_types[i];
		if (block > 0) {
			for (int j = 0; j < block; j++) {
				p[pos++] = rnd(3) ? (uint8_t)rnd(256) : (uint8_t)rnd(3);
			}
		} else if (block == KNOT_RDATA_WF_REMAINDER) {
			pos += put_remainder(type, p + pos);
		} else if (block == KNOT_RDATA_WF_NAPTR_HEADER) {
			for (int j = 0; j < 4; j++) {
				p[pos++] = (uint8_t)rnd(256);
			}
			pos += put_strings(p + pos, 3);
		} else {
			pos += put_name(p + pos);
		}
	}
	return pos;
}

/* One random RR in wire form through libknot's parser, as an UPDATE's
 * would go; then the check, and for what passes, an independent read of
 * the text written for it. */
static int sweep_one(uint16_t type, int *counts)
{
	uint8_t wire[2048];
	size_t pos = 0;
	wire[pos++] = 0;
	wire[pos++] = (uint8_t)(type >> 8), wire[pos++] = (uint8_t)type;
	wire[pos++] = 0, wire[pos++] = 1;
	memset(wire + pos, 0, 4), wire[pos + 3] = 60, pos += 4;
	size_t len = put_rdata(type, wire + pos + 2);
	wire[pos] = (uint8_t)(len >> 8), wire[pos + 1] = (uint8_t)len;
	pos += 2 + len;
	knot_rrset_t rr;
	knot_rrset_init_empty(&rr);
	size_t at = 0;
	if (knot_rrset_rr_from_wire(wire, &at, pos, &rr, NULL, false) != 0) {
		return 0;
	}
	const knot_rdata_t *rd = rr.rrs.rdata;
	int ret = zonefile_record_check(rr.owner, type, 60, rd->data,
	                                rd->len, NULL);
	counts[ret == ZC_EOK ? 0 : ret == ZC_ERDATA ? 1 : 2]++;
	/* Writing is safe whatever the check said (generic form). */
	static char text[4 * 65536 + 64];
	bool generic;
	CHECK(zonefile_rdata_text(type, rd->data, rd->len, text, sizeof(text),
	                          &generic) >= 0);
	if (ret == ZC_EOK) {
		CHECK(dns_rdata_valid(type, rd->data, rd->len, NULL));
	} else if (ret == ZC_ERDATA) {
		CHECK(generic);
	}
	knot_rrset_clear(&rr, NULL);
	return 1;
}

static void sweep(int per_type)
{
	bool stats = getenv("ZONECAST_CHECK_STATS") != NULL;
	srandom(8659);
	for (unsigned type = 1; type < 65536; type++) {
		const knot_rdata_descriptor_t *d = knot_get_rdata_descriptor(type);
		if ((d->type_name == NULL && type != 65000) ||
		    !dns_rdata_type_storable((uint16_t)type)) {
			continue;
		}
		int counts[3] = { 0 }, parsed = 0;
		for (int i = 0; i < per_type; i++) {
			parsed += sweep_one((uint16_t)type, counts);
		}
		if (stats) {
			printf("%-10s parsed %5d  stored %5d  malformed %5d  "
			       "no exact text %5d\n", d->type_name ? d->type_name :
			       "TYPE65000", parsed, counts[0], counts[1], counts[2]);
		}
	}
}

int main(int argc, char **argv)
{
	table();
	generic_form();
	sweep(argc > 1 ? atoi(argv[1]) : 2000);
	return test_done();
}
