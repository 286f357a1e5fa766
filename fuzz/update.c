/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: an RFC 2136 UPDATE message through everything zonecast
 * does with it: parse, TSIG check (a known key), prerequisite and update
 * prescans, the key's policy, and the prerequisites and update applied to
 * a real records store (fuzz_zone.h's zone) in a transaction that is then
 * rolled back, so every input starts from the same zone.
 */
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>

#include "fuzz/fuzz.h"
#include "fuzz/fuzz_zone.h"
#include "update/internal.h"

static records_store_t *rs;
static const uint8_t secret[32] = "zonecast-fuzz-secret-0123456789";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	edge_store_t *es = fuzz_zone_open();
	if (es == NULL || records_open(&rs, fuzz_zone_dir) != 0) {
		abort();
	}
	edge_close(es);
	records_tsig_key_t key = { .zone_id = 1, .transfer = true,
	                           .secret_len = sizeof(secret) };
	memcpy(key.name, "\x07" "fuzzkey", 9);
	strcpy(key.algorithm, "hmac-sha256");
	memcpy(key.secret, secret, sizeof(secret));
	strcpy(key.grants, "subdomain:example.:A,AAAA,TXT,CNAME,MX name:x.example.");
	if (records_write_begin(rs) != 0 || records_tsig_add(rs, &key) != 0 ||
	    records_write_commit(rs) != 0) {
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65535) {
		return 0;
	}
	update_msg_t m = { 0 };
	m.wire = malloc(size + 1);
	if (m.wire == NULL) {
		return 0;
	}
	memcpy(m.wire, data, size);
	m.pkt = knot_pkt_new(m.wire, (uint16_t)size, NULL);
	if (m.pkt != NULL && update_parse(m.pkt) == KNOT_EOK &&
	    knot_wire_get_qdcount(m.wire) == 1 &&
	    records_zone_find(rs, knot_pkt_qname(m.pkt), &m.zone) == 0) {
		records_tsig_key_t key;
		bool signed_ok = true;
		if (m.pkt->tsig_rr != NULL) {
			bool found = records_tsig_find(rs, m.pkt->tsig_rr->owner,
			                               &key) == 0;
			signed_ok = dns_tsig_check(m.pkt, found, key.algorithm,
			                           key.secret, key.secret_len,
			                           NULL, &m.tsig) == 0;
		}
		bool final;
		uint8_t pre = update_prereq_prescan(knot_pkt_section(m.pkt,
		                                                     KNOT_ANSWER),
		                                    m.zone.apex, &final);
		/* As update_handle(): a prescan's rcode is the answer only
		 * when final; else the committer decides. */
		if (signed_ok && ((pre == 0 && update_prescan(&m, true) == 0) ||
		                  (pre != 0 && !final))) {
			update_policy_allows("zone subdomain:a.example.:A "
			                     "name:b.example. self:TXT",
			                     (const uint8_t *)"\x01" "b\x07" "example",
			                     &m);
			if (records_write_begin(rs) == 0) {
				update_apply(rs, &m);
				records_write_rollback(rs);
			}
		}
	}
	update_net_free(&m.net);
	knot_pkt_free(m.pkt);
	free(m.wire);
	return 0;
}
