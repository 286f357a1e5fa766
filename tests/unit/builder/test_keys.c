/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A signed zone's keys through the full build, on real SQLite and LMDB
 * files: the edge gets a version-2 keyset; one written before keysets had
 * a version byte is the same keys to verify and is rewritten by the next
 * build; a key the edge cannot hold (a PEM over 64 KiB, a ninth key)
 * fails the build with its own error instead of being left out.
 */
#include "signer/signer.h"
#include "tests/unit/zone_fixture.h"

static const char zone_text[] =
	"$TTL 300\n"
	"@ IN SOA ns hostmaster 10 7200 900 1209600 300\n"
	"@ IN NS ns\n"
	"ns IN A 192.0.2.1\n";

static const uint8_t apex[] = "\x07" "example\x00";

/* Stores a key of pem_len bytes (a real one when pem is NULL). */
static int add_key(records_store_t *rs, int64_t zone_id, uint16_t flags,
                   const uint8_t *pem, size_t pem_len)
{
	uint8_t *made = NULL;
	if (pem == NULL) {
		int ret = signer_key_generate(13, &made, &pem_len);
		if (ret != ZC_EOK) {
			return ret;
		}
		pem = made;
	}
	records_dnssec_key_t key = { .zone_id = zone_id, .flags = flags,
	                             .algorithm = 13, .pem = pem,
	                             .pem_len = pem_len, .active = true };
	int ret = records_write_begin(rs);
	if (ret == ZC_EOK) {
		ret = records_dnssec_key_add(rs, &key);
	}
	ret = ret == ZC_EOK ? records_write_commit(rs) :
	      (records_write_rollback(rs), ret);
	free(made);
	return ret;
}

/* Copies the zone's keyset value out of the edge (0: none). */
static size_t edge_keys(edge_store_t *es, int64_t zone_id, uint8_t *out,
                        size_t size)
{
	edge_txn_t txn = { 0 };
	const uint8_t *val;
	size_t len = 0;
	edge_txn_begin_read(es, &txn);
	if (edge_keys_get(&txn, (uint64_t)zone_id, &val, &len) != ZC_EOK ||
	    len > size) {
		len = 0;
	}
	if (len > 0) {
		memcpy(out, val, len);
	}
	edge_txn_abort(&txn);
	return len;
}

static void put_edge_keys(edge_store_t *es, int64_t zone_id,
                          const uint8_t *val, size_t len)
{
	edge_txn_t txn = { 0 };
	CHECK_EQ(edge_txn_begin_write(es, &txn), ZC_EOK);
	CHECK_EQ(edge_txn_put_keys(&txn, (uint64_t)zone_id, val, len), ZC_EOK);
	CHECK_EQ(edge_txn_commit(&txn), ZC_EOK);
}

/* The same keys in the form written before version 2 (no version byte,
 * no count: each key's flags, algorithm, active, PEM length and PEM). */
static size_t unmarked_form(const edge_keyset_t *ks, uint8_t *out)
{
	size_t len = 0;
	for (unsigned i = 0; i < ks->count; i++) {
		const edge_key_t *k = &ks->keys[i];
		uint8_t head[6] = { k->flags >> 8, (uint8_t)k->flags, k->algorithm,
		                    k->active, k->pem_len >> 8, (uint8_t)k->pem_len };
		memcpy(out + len, head, 6);
		memcpy(out + len + 6, k->pem, k->pem_len);
		len += 6 + k->pem_len;
	}
	return len;
}

int main(void)
{
	const char *dir = test_tmpdir();
	records_store_t *rs;
	edge_store_t *es;
	CHECK_EQ(records_open(&rs, dir), ZC_EOK);
	CHECK_EQ(edge_open(&es, dir, 0), ZC_EOK);
	CHECK_EQ(fixture_import(rs, es, "example.", zone_text), ZC_EOK);
	records_zone_t zone;
	CHECK_EQ(records_zone_find(rs, apex, &zone), ZC_EOK);

	/* A KSK and a ZSK: a version-2 keyset that the signer loads. */
	CHECK_EQ(add_key(rs, zone.id, SIGNER_FLAGS_KSK, NULL, 0), ZC_EOK);
	CHECK_EQ(add_key(rs, zone.id, SIGNER_FLAGS_ZSK, NULL, 0), ZC_EOK);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	static uint8_t val[1 << 18], old[1 << 18];
	size_t len = edge_keys(es, zone.id, val, sizeof(val));
	CHECK(len > 0);
	CHECK_EQ(val[0], EDGE_KEYSET_VERSION);
	edge_keyset_t set;
	CHECK_EQ(edge_keyset_decode(val, len, &set), ZC_EOK);
	CHECK_EQ(set.count, 2);
	signer_keyset_t ks;
	CHECK_EQ(signer_keyset_decode(apex, val, len, &ks), ZC_EOK);
	CHECK_EQ(ks.ksk, 0);
	CHECK_EQ(ks.zsk, 1);
	signer_keyset_free(&ks);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* An edge written before version 2: the same keys, no difference;
	 * the next build writes version 2. */
	size_t old_len = unmarked_form(&set, old);
	put_edge_keys(es, zone.id, old, old_len);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	uint8_t again[4096];
	CHECK_EQ(edge_keys(es, zone.id, again, sizeof(again)), len);
	CHECK(memcmp(again, val, len) == 0);
	/* Other keys in the old form are a difference. */
	set.keys[1].active = false;
	old_len = unmarked_form(&set, old);
	put_edge_keys(es, zone.id, old, old_len);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 1);
	/* A keyset that does not decode is a difference too. */
	put_edge_keys(es, zone.id, (const uint8_t *)"\x09junk", 5);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 1);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	/* A PEM over 64 KiB: the build fails with ZC_EKEYSIZE (it used to
	 * leave the key out silently), the edge keeps the last keyset. */
	size_t big = EDGE_KEYSET_PEM_MAX + 1;
	uint8_t *pem = malloc(big);
	memset(pem, 'A', big);
	CHECK_EQ(add_key(rs, zone.id, SIGNER_FLAGS_ZSK, pem, big), ZC_EOK);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL),
	         ZC_EKEYSIZE);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), ZC_EKEYSIZE);
	CHECK_EQ(edge_keys(es, zone.id, again, sizeof(again)), len);
	CHECK(memcmp(again, val, len) == 0);
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_dnssec_keys_delete(rs, zone.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	free(pem);

	/* Eight keys are the most; a ninth fails the build. */
	for (int i = 0; i < EDGE_KEYSET_MAX_KEYS; i++) {
		CHECK_EQ(add_key(rs, zone.id, i == 0 ? SIGNER_FLAGS_KSK :
		                 SIGNER_FLAGS_ZSK, NULL, 0), ZC_EOK);
	}
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	len = edge_keys(es, zone.id, val, sizeof(val));
	CHECK_EQ(edge_keyset_decode(val, len, &set), ZC_EOK);
	CHECK_EQ(set.count, EDGE_KEYSET_MAX_KEYS);
	CHECK_EQ(add_key(rs, zone.id, SIGNER_FLAGS_ZSK, NULL, 0), ZC_EOK);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL),
	         ZC_EKEYCOUNT);
	CHECK_EQ(edge_keys(es, zone.id, again, sizeof(again)), len);

	/* No key: the zone is not signed any more at the edge. */
	CHECK_EQ(records_write_begin(rs), ZC_EOK);
	CHECK_EQ(records_dnssec_keys_delete(rs, zone.id), ZC_EOK);
	CHECK_EQ(records_write_commit(rs), ZC_EOK);
	CHECK_EQ(builder_full_build(rs, es, apex, NULL, NULL, NULL), ZC_EOK);
	CHECK_EQ(edge_keys(es, zone.id, val, sizeof(val)), 0);
	CHECK_EQ(builder_verify(rs, es, apex, NULL, NULL), 0);

	edge_close(es);
	records_close(rs);
	test_rmdir(dir);
	return test_done();
}
