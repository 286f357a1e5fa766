/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: an AXFR or IXFR request (or another TSIG-signed message
 * the transfer threads answer) through xfr_worker_serve(), what a
 * transfer thread runs for each request: parse, TSIG check, zone and
 * access checks, the AXFR walk or the IXFR journal condensed, the
 * messages packed and signed. The stores are real: fuzz_zone.h's zone
 * with seven versions of change history, and a zone big enough for
 * multi-message transfers and an RRset split over messages. Every
 * message sent must parse as a response, and a transfer that completes
 * must begin and end with an SOA.
 *
 * The input is the DNS message. Its ID picks the client (bits 0-1:
 * 127.0.0.1, 192.0.2.99 (not allowed), ::1, ::ffff:127.0.0.1) and a
 * broken connection (bits 2-3: the first or second write fails, or the
 * server is stopping). A TSIG RR named after a key of the store with
 * time signed 0 is replaced by a valid signature with that key, so
 * mutated requests reach the signed paths; any other TSIG is kept.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/errcode.h>
#include <libknot/error.h>
#include <libknot/rrtype/tsig.h>
#include <libknot/tsig-op.h>

#include "common/log.h"
#include "fuzz/fuzz.h"
#include "fuzz/fuzz_zone.h"
#include "server/worker.h"
#include "transfer/internal.h"
#include "transfer/transfer.h"

static records_store_t *rs;
static zc_acl_t acl;
static transfer_config_t cfg;
static atomic_bool stop;
static xfr_worker_t worker;

typedef struct {
	const char *name;       /* Key name (text). */
	const char *zone;
	const char *algorithm;
	bool transfer;
} fuzz_key_t;

static const fuzz_key_t keys[] = {
	{ "fuzzkey.", "example.", "hmac-sha256", true },
	{ "noxfr.", "example.", "hmac-sha256", false },
	{ "bigkey.", "big.test.", "hmac-sha512", true },
};
static const uint8_t secret[32] = "zonecast-fuzz-secret-0123456789";

static int first_id(const records_record_t *rec, void *ctx)
{
	*(int64_t *)ctx = rec->id;
	return 1;
}

/* The zone being changed, one version per records_write_begin(). */
static records_zone_t changing;

static void version_begin(const char *apex_text)
{
	uint8_t apex[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(apex, apex_text, sizeof(apex));
	if (records_zone_find(rs, apex, &changing) != 0 ||
	    records_write_begin(rs) != 0 ||
	    records_zone_bump(rs, &changing) != 0) {
		abort();
	}
}

static void version_commit(void)
{
	if (records_write_commit(rs) != 0) {
		abort();
	}
}

/* Adds a record (rdata given) or deletes the first of owner and type. */
static void change(const char *owner, uint16_t type, uint32_t ttl,
                   const char *rdata, uint16_t rdata_len)
{
	uint8_t name[KNOT_DNAME_MAXLEN];
	knot_dname_from_str(name, owner, sizeof(name));
	if (rdata != NULL) {
		records_record_t rec = { .owner = name, .type = type, .ttl = ttl,
		                         .rdata = (const uint8_t *)rdata,
		                         .rdata_len = rdata_len };
		if (records_record_insert(rs, &changing, &rec) != 0) {
			abort();
		}
		return;
	}
	int64_t id = 0;
	if (records_record_foreach(rs, changing.id, name, type, first_id,
	                           &id) != 0 ||
	    id == 0 || records_record_delete(rs, &changing, id) != 0) {
		abort();
	}
}

/* big.test.: 3000 nodes, and a TXT RRset of 80 kB (more than a message). */
static char *big_zone(void)
{
	size_t cap = 1 << 20, n = 0;
	char *text = malloc(cap);
	n += snprintf(text + n, cap - n, "$TTL 600\n@ SOA ns h 100 1 2 3 4\n"
	              "@ NS ns\nns A 10.0.0.1\n");
	for (int i = 0; i < 3000; i++) {
		n += snprintf(text + n, cap - n, "h%d A 10.%d.%d.%d\n", i,
		              i >> 16, (i >> 8) & 255, i & 255);
	}
	for (int i = 0; i < 400; i++) {
		n += snprintf(text + n, cap - n, "fat TXT \"%03d%0197d\"\n", i,
		              0);
	}
	return text;
}

/* The stores: example. at serial 1 (imported) then six record changes
 * (serial 7), big.test. at 100 then one change of 300 records. */
static void make_stores(void)
{
	edge_store_t *es = fuzz_zone_open();
	if (es == NULL || records_open(&rs, fuzz_zone_dir) != 0) {
		abort();
	}
	char *big = big_zone();
	if (fuzz_zone_import(rs, es, (const uint8_t *)"\x03" "big\x04" "test",
	                     big) != 0) {
		abort();
	}
	free(big);
	/* 2: two adds; 3: a delete and an add; 4: a TTL change (delete and
	 * add); 5 and 6: an add taken back; 7: version 2's add deleted. */
	version_begin("example.");
	change("new.example.", KNOT_RRTYPE_A, 300, "\xc0\x00\x02\x4d", 4);
	change("txt.example.", KNOT_RRTYPE_TXT, 300, "\x02v2", 3);
	version_commit();
	version_begin("example.");
	change("mail.example.", KNOT_RRTYPE_AAAA, 0, NULL, 0);
	change("new.example.", KNOT_RRTYPE_AAAA, 300,
	       "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x77", 16);
	version_commit();
	version_begin("example.");
	change("web.example.", KNOT_RRTYPE_A, 0, NULL, 0);
	change("web.example.", KNOT_RRTYPE_A, 60, "\xc0\x00\x02\x50", 4);
	version_commit();
	version_begin("example.");
	change("tmp.example.", KNOT_RRTYPE_A, 300, "\xc0\x00\x02\x01", 4);
	version_commit();
	version_begin("example.");
	change("tmp.example.", KNOT_RRTYPE_A, 0, NULL, 0);
	version_commit();
	version_begin("example.");
	change("new.example.", KNOT_RRTYPE_A, 0, NULL, 0);
	version_commit();
	version_begin("big.test.");
	for (int i = 0; i < 300; i++) {
		char owner[64], rdata[4] = { 10, 9, (char)(i >> 8), (char)i };
		snprintf(owner, sizeof(owner), "n%d.big.test.", i);
		change(owner, KNOT_RRTYPE_A, 60, rdata, 4);
	}
	version_commit();
	if (builder_catch_up(rs, es, NULL) != 0) {
		abort();
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		records_zone_t zone;
		uint8_t apex[KNOT_DNAME_MAXLEN];
		knot_dname_from_str(apex, keys[i].zone, sizeof(apex));
		records_tsig_key_t key = { .transfer = keys[i].transfer,
		                           .secret_len = sizeof(secret) };
		knot_dname_from_str(key.name, keys[i].name, sizeof(key.name));
		strcpy(key.algorithm, keys[i].algorithm);
		memcpy(key.secret, secret, sizeof(secret));
		if (records_zone_find(rs, apex, &zone) != 0) {
			abort();
		}
		key.zone_id = zone.id;
		if (records_write_begin(rs) != 0 ||
		    records_tsig_add(rs, &key) != 0 ||
		    records_write_commit(rs) != 0) {
			abort();
		}
	}
	cfg = (transfer_config_t){ .data_dir = fuzz_zone_dir, .edge = es,
	                           .allow_transfer = &acl };
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	zc_log_set_level(getenv("FUZZ_LOG") ? ZC_LOG_DEBUG : ZC_LOG_ERROR);
	if (zc_acl_add(&acl, "127.0.0.0/8") != 0 ||
	    zc_acl_add(&acl, "::1") != 0) {
		abort();
	}
	make_stores();
	xfr_worker_init(&worker, &cfg, &stop);
	return 0;
}

/* The key and MAC of the request resign() signed. */
static uint8_t signer_name[KNOT_DNAME_MAXLEN];
static knot_tsig_key_t signer;
static uint8_t request_mac[64];
static size_t request_mac_len;

/* Replaces a TSIG with time signed 0 by a valid one when its name is a
 * key of ours: true with the new length in *len. */
static bool resign(uint8_t *msg, size_t *len, size_t max)
{
	knot_pkt_t *q = knot_pkt_new(msg, (uint16_t)*len, NULL);
	bool done = false;
	if (q == NULL || knot_pkt_parse(q, 0) != KNOT_EOK || q->tsig_rr == NULL ||
	    knot_tsig_rdata_time_signed(q->tsig_rr) != 0) {
		knot_pkt_free(q);
		return false;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		uint8_t *name = signer_name;
		knot_dname_from_str(name, keys[i].name, sizeof(signer_name));
		if (!knot_dname_is_case_equal(name, q->tsig_rr->owner)) {
			continue;
		}
		signer = (knot_tsig_key_t){
			.algorithm = dnssec_tsig_algorithm_from_name(
				keys[i].algorithm),
			.name = name,
			.secret = { .size = sizeof(secret),
			            .data = (uint8_t *)secret },
		};
		request_mac_len = sizeof(request_mac);
		size_t size = q->size; /* The message without its TSIG. */
		if (knot_tsig_sign(msg, &size, max, NULL, 0, request_mac,
		                   &request_mac_len, &signer, 0, 0) == KNOT_EOK) {
			*len = size;
			done = true;
		}
		break;
	}
	knot_pkt_free(q);
	return done;
}

/* What came out for one request. */
typedef struct {
	bool transfer;
	bool signed_ok;         /* The request carries a valid signature. */
	uint8_t mac[64];        /* The MAC the next response's covers. */
	size_t mac_len;
	unsigned writes;        /* server_reply_write() calls. */
	unsigned fail_at;       /* That write fails (0: none). */
	uint16_t first_type;    /* First answer RR of the first message. */
	uint16_t last_type;     /* Last answer RR of the last message. */
	uint8_t rcode;          /* Of the first message (extended). */
	bool closed;            /* Ended by closing the connection. */
	bool done;
} sink_t;

/* Each response to a validly signed request must be signed, with the
 * MACs chained over a transfer (RFC 8945 §5.3.1); errors may go unsigned
 * (BADVERS, whose header rcode is 0, among them: its upper bits are the
 * OPT's). */
static void check_tsig(sink_t *s, const knot_pkt_t *r)
{
	if (r->tsig_rr == NULL) {
		if (knot_pkt_ext_rcode(r) == KNOT_RCODE_NOERROR) {
			fprintf(stderr, "xfr_request: unsigned response %u to a "
			        "signed request\n", s->writes + 1);
			abort();
		}
		return;
	}
	int ret = s->writes == 0 ?
		knot_tsig_client_check(r->tsig_rr, r->wire, r->size, s->mac,
		                       s->mac_len, &signer, 0) :
		knot_tsig_client_check_next(r->tsig_rr, r->wire, r->size, s->mac,
		                            s->mac_len, &signer, 0);
	size_t mac_len = knot_tsig_rdata_mac_length(r->tsig_rr);
	if (ret != KNOT_EOK || mac_len > sizeof(s->mac)) {
		fprintf(stderr, "xfr_request: response %u: TSIG %s\n",
		        s->writes + 1, knot_strerror(ret));
		abort();
	}
	memcpy(s->mac, knot_tsig_rdata_mac(r->tsig_rr), mac_len);
	s->mac_len = mac_len;
}

/* A message the server sent: must parse as a response; after the first,
 * an error can only close the connection. */
static int sink(void *ctx, const uint8_t *msg, size_t len, bool last)
{
	sink_t *s = ctx;
	if (s->done) {
		abort(); /* Anything after the last message. */
	}
	s->done = last;
	if (len == 0) {
		s->closed = true;
		return last ? 0 : -1;
	}
	uint8_t *copy = malloc(len);
	memcpy(copy, msg, len);
	knot_pkt_t *r = knot_pkt_new(copy, (uint16_t)len, NULL);
	if (len > 65535 || r == NULL || knot_pkt_parse(r, 0) != KNOT_EOK ||
	    !knot_wire_get_qr(copy) || knot_wire_get_qdcount(copy) > 1) {
		fprintf(stderr, "xfr_request: message %u does not parse as a "
		        "response\n", s->writes + 1);
		abort();
	}
	if (s->signed_ok) {
		check_tsig(s, r);
	}
	const knot_pktsection_t *an = knot_pkt_section(r, KNOT_ANSWER);
	if (s->writes == 0) {
		/* With the OPT's upper bits (BADVERS). */
		s->rcode = (uint8_t)knot_pkt_ext_rcode(r);
		s->first_type = an->count > 0 ? knot_pkt_rr(an, 0)->type : 0;
	} else if (knot_pkt_ext_rcode(r) != KNOT_RCODE_NOERROR) {
		fprintf(stderr, "xfr_request: rcode %u after %u messages\n",
		        knot_pkt_ext_rcode(r), s->writes);
		abort();
	}
	s->last_type = an->count > 0 ? knot_pkt_rr(an, an->count - 1)->type : 0;
	knot_pkt_free(r);
	free(copy);
	if (!last && ++s->writes == s->fail_at) {
		return -32; /* -EPIPE: the client went away. */
	}
	return 0;
}

/* Serves msg as the server would, checking what it sends. */
static void serve(const uint8_t *data, size_t len, uint8_t *msg,
                  const struct sockaddr_storage *from, bool query, bool tcp,
                  unsigned fail_at, bool signed_ok)
{
	memcpy(msg, data, len);
	sink_t s = { .transfer = !query, .fail_at = fail_at,
	             .signed_ok = signed_ok, .mac_len = request_mac_len };
	memcpy(s.mac, request_mac, request_mac_len);
	server_reply_t *reply = server_reply_sink(sink, &s);
	if (reply == NULL) {
		return;
	}
	xfr_worker_serve(&worker, msg, len, from, query, tcp, reply);
	if (!s.done) {
		abort(); /* No server_reply_send(). */
	}
	if (s.transfer && s.first_type != 0 &&
	    s.rcode != KNOT_RCODE_NOERROR) {
		fprintf(stderr, "xfr_request: records with rcode %u\n", s.rcode);
		abort();
	}
	/* A transfer that went through begins and ends with the SOA
	 * (RFC 5936 §2.2, RFC 1995 §4). */
	if (s.transfer && !s.closed && s.rcode == KNOT_RCODE_NOERROR &&
	    (s.first_type != KNOT_RRTYPE_SOA || s.last_type != KNOT_RRTYPE_SOA)) {
		fprintf(stderr, "xfr_request: transfer from type %u to type %u\n",
		        s.first_type, s.last_type);
		abort();
	}
}

static void client(uint16_t id, struct sockaddr_storage *ss)
{
	static const char *const addrs[] = { "127.0.0.1", "192.0.2.99", "::1",
	                                     "::ffff:127.0.0.1" };
	const char *text = addrs[id & 3];
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':') == NULL) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(5353);
		inet_pton(AF_INET, text, &in->sin_addr);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(5353);
		inet_pton(AF_INET6, text, &in6->sin6_addr);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65535) {
		return 0;
	}
	/* Room to sign: the signed message is the input. */
	size_t max = size + 512 <= 65535 ? size + 512 : 65535;
	uint8_t *signed_msg = malloc(max);
	memcpy(signed_msg, data, size);
	size_t len = size;
	bool signed_ok = resign(signed_msg, &len, max);
	if (!signed_ok) {
		memcpy(signed_msg, data, size); /* The parse may have changed it. */
	}
	server_hooks_t hooks = { .transfer = transfer_handle,
	                         .signed_query = transfer_signed_query };
	message_kind_t kind = server_message_kind(signed_msg, len, true,
	                                          &hooks);
	uint16_t id = len >= 2 ?
	              (uint16_t)(signed_msg[0] << 8 | signed_msg[1]) : 0;
	unsigned fail_at = (id >> 2) & 3;
	struct sockaddr_storage from;
	client(id, &from);
	uint8_t *msg = malloc(len ? len : 1);
	if (kind == MESSAGE_TRANSFER) {
		atomic_store(&stop, fail_at == 3);
		serve(signed_msg, len, msg, &from, false, true,
		      fail_at == 3 ? 0 : fail_at, signed_ok);
		atomic_store(&stop, false);
	} else if (kind == MESSAGE_SIGNED) {
		serve(signed_msg, len, msg, &from, true, true, 0, signed_ok);
		serve(signed_msg, len, msg, &from, true, false, 0, signed_ok);
	}
	free(msg);
	free(signed_msg);
	return 0;
}
