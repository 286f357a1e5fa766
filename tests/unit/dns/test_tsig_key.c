/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * TSIG key tooling: grant lists (syntax and matching, table-driven), the
 * secret of each algorithm, its base64 and BIND forms, and making a key in
 * a real records store with every refusal naming its field.
 */
#include <libknot/descriptor.h>

#include "common/error.h"
#include "dns/tsig_grants.h"
#include "dns/tsig_key.h"
#include "records/records.h"
#include "tests/unit/test.h"

static const uint8_t key_name[] = "\x03" "key\x07" "example";

typedef struct {
	const char *grants;
	const char *owner;
	uint16_t type;
	bool allowed;
} grant_case_t;

static const grant_case_t grant_cases[] = {
	{ "", "www.example.", KNOT_RRTYPE_A, true },
	{ "", "example.", KNOT_RRTYPE_SOA, false },     /* "zone": not SOA */
	{ "zone", "a.b.example.", KNOT_RRTYPE_TXT, true },
	{ "zone:A,AAAA", "a.example.", KNOT_RRTYPE_TXT, false },
	{ "zone:A,AAAA", "a.example.", KNOT_RRTYPE_AAAA, true },
	{ "zone:A", "a.example.", KNOT_RRTYPE_ANY, false },
	{ "zone", "a.example.", KNOT_RRTYPE_ANY, true },
	{ "subdomain:dyn.example.", "dyn.example.", KNOT_RRTYPE_A, true },
	{ "subdomain:dyn.example.", "x.DYN.example.", KNOT_RRTYPE_A, true },
	{ "subdomain:dyn.example.", "xdyn.example.", KNOT_RRTYPE_A, false },
	{ "name:host.example.", "host.example.", KNOT_RRTYPE_A, true },
	{ "name:host.example.", "a.host.example.", KNOT_RRTYPE_A, false },
	{ "self:TXT", "key.example.", KNOT_RRTYPE_TXT, true },
	{ "self:TXT", "key.example.", KNOT_RRTYPE_A, false },
	{ "self", "other.example.", KNOT_RRTYPE_A, false },
	{ "name:a.example.:A name:b.example.:TXT", "b.example.", KNOT_RRTYPE_TXT,
	  true },
	{ "name:a.example.:A;name:b.example.:TXT", "b.example.", KNOT_RRTYPE_A,
	  false },
};

static void grants_match(void)
{
	for (size_t i = 0; i < sizeof(grant_cases) / sizeof(grant_cases[0]); i++) {
		const grant_case_t *c = &grant_cases[i];
		dns_tsig_grants_t g;
		char err[128] = "";
		uint8_t owner[KNOT_DNAME_MAXLEN];
		CHECK(dns_tsig_grants_parse(c->grants, &g, err, sizeof(err)));
		CHECK(knot_dname_from_str(owner, c->owner, sizeof(owner)) != NULL);
		knot_dname_to_lower(owner);
		bool got = dns_tsig_grants_allow(&g, key_name, owner, c->type);
		if (got != c->allowed) {
			fprintf(stderr, "grants '%s', %s type %u: %s\n", c->grants,
			        c->owner, c->type, got ? "allowed" : "refused");
		}
		CHECK(got == c->allowed);
	}
}

static void grants_refused(void)
{
	static const struct { const char *grants, *says; } bad[] = {
		{ "everything", "kind must be zone, subdomain, name or self" },
		{ "subdomain", "a valid name is required" },
		{ "name:", "a valid name is required" },
		{ "zone:A,NOSUCHTYPE", "unknown type 'NOSUCHTYPE'" },
		{ ":", "empty grant" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dns_tsig_grants_t g;
		char err[200] = "";
		CHECK(!dns_tsig_grants_parse(bad[i].grants, &g, err, sizeof(err)));
		if (strstr(err, bad[i].says) == NULL) {
			fprintf(stderr, "'%s': %s\n", bad[i].grants, err);
		}
		CHECK(strstr(err, bad[i].says) != NULL);
	}
	char many[1024] = "";
	for (int i = 0; i <= DNS_TSIG_GRANTS_MAX; i++) {
		strcat(many, "zone ");
	}
	dns_tsig_grants_t g;
	char err[200] = "";
	CHECK(!dns_tsig_grants_parse(many, &g, err, sizeof(err)));
	CHECK(strstr(err, "more than 32 grants") != NULL);
	/* A text past 1023 characters is refused whole, never read cut
	 * short: here the cut would leave "name:a.test" (every type). */
	char longer[1100];
	memset(longer, ' ', sizeof(longer));
	memcpy(longer + 1012, "name:a.test:TXT", 16); /* 1027 characters */
	CHECK(!dns_tsig_grants_parse(longer, &g, err, sizeof(err)));
	CHECK(strstr(err, "longer than 1023") != NULL);
	memcpy(longer + 990, "name:a.test:TXT", 16); /* 1005 characters */
	CHECK(dns_tsig_grants_parse(longer, &g, err, sizeof(err)));
	CHECK_EQ(g.count, 1);
}

static void secrets(void)
{
	static const struct { const char *alg; size_t len; } sizes[] = {
		{ "hmac-md5", 16 }, { "hmac-sha1", 20 }, { "hmac-sha224", 28 },
		{ "hmac-sha256", 32 }, { "hmac-sha384", 48 }, { "hmac-sha512", 64 },
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t a[128], b[128];
		size_t alen = 0, blen = 0;
		CHECK_EQ(dns_tsig_secret_new(sizes[i].alg, a, sizeof(a), &alen),
		         ZC_EOK);
		CHECK_EQ(dns_tsig_secret_new(sizes[i].alg, b, sizeof(b), &blen),
		         ZC_EOK);
		CHECK_EQ(alen, sizes[i].len);
		CHECK(alen == blen && memcmp(a, b, alen) != 0);
	}
	uint8_t small[8];
	size_t len = 0;
	CHECK_EQ(dns_tsig_secret_new("hmac-sha512", small, sizeof(small), &len),
	         ZC_EOK);
	CHECK_EQ(len, sizeof(small));
	/* "zonecast" in base64, and in BIND's key clause. */
	char b64[16], text[256];
	CHECK_EQ(dns_tsig_secret_b64((const uint8_t *)"zonecast", 8, b64,
	                             sizeof(b64)), ZC_EOK);
	CHECK(strcmp(b64, "em9uZWNhc3Q=") == 0);
	CHECK_EQ(dns_tsig_secret_b64((const uint8_t *)"zonecast", 8, b64, 12),
	         ZC_ENOSPACE);
	CHECK_EQ(dns_tsig_key_format(key_name, "hmac-sha256",
	                             (const uint8_t *)"zonecast", 8, text,
	                             sizeof(text)), ZC_EOK);
	CHECK(strcmp(text, "key \"key.example\" {\n\talgorithm hmac-sha256;\n"
	                   "\tsecret \"em9uZWNhc3Q=\";\n};\n") == 0);
	CHECK_EQ(dns_tsig_key_format(key_name, "hmac-sha256",
	                             (const uint8_t *)"zonecast", 8, text, 20),
	         ZC_ENOSPACE);
}

static void create_in_records(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	static const uint8_t soa[] = "\x02ns\x00\x04host\x00"
	                             "\x00\x00\x00\x01\x00\x00\x1c\x20"
	                             "\x00\x00\x03\x84\x00\x12\x75\x00"
	                             "\x00\x00\x01\x2c";
	CHECK_EQ(records_zone_create(rs, (const uint8_t *)"\x07" "example",
	                             3600, soa, sizeof(soa) - 1, NULL, 0,
	                             &zone), ZC_EOK);
	records_tsig_key_t key, found;
	char err[300] = "";
	CHECK_EQ(records_tsig_create(rs, zone.id, "Key.Example.", NULL,
	                             "subdomain:dyn.example.:A", true, &key,
	                             err, sizeof(err)), ZC_EOK);
	CHECK(strcmp(key.algorithm, "hmac-sha256") == 0);
	CHECK_EQ(key.secret_len, 32);
	CHECK_EQ(records_tsig_find(rs, key_name, &found), ZC_EOK);
	CHECK(found.secret_len == 32 &&
	      memcmp(found.secret, key.secret, 32) == 0);
	CHECK(strcmp(found.grants, "subdomain:dyn.example.:A") == 0);
	static const struct {
		const char *name, *alg, *grants, *says;
		int code;
	} bad[] = {
		{ "key.example.", NULL, NULL, "name: a key named", ZC_EEXISTS },
		{ "a..b", NULL, NULL, "name: 'a..b' is not a valid", ZC_EUSAGE },
		{ "k2", "hmac-sha3", NULL, "algorithm: 'hmac-sha3'", ZC_EUSAGE },
		{ "k3", NULL, "subdomain", "a valid name is required", ZC_EUSAGE },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(records_tsig_create(rs, zone.id, bad[i].name, bad[i].alg,
		                             bad[i].grants, true, &key, err,
		                             sizeof(err)), bad[i].code);
		if (strstr(err, bad[i].says) == NULL) {
			fprintf(stderr, "%s: %s\n", bad[i].name, err);
		}
		CHECK(strstr(err, bad[i].says) != NULL);
	}
	records_write_rollback(rs);
	records_close(rs);
	test_rmdir(dir);
}

int main(void)
{
	grants_match();
	grants_refused();
	secrets();
	create_in_records();
	return test_done();
}
