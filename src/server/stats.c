/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The DNS workers' counters (stats.h): counting on the query path, and
 * their sums for the metrics endpoint.
 */
#include <libknot/descriptor.h>
#include <libknot/packet/wire.h>

#include "server/stats.h"
#include "server/worker.h"

/* Answer time bounds: an answer from the edge store takes microseconds,
 * a signature made online tens of them, one waiting on a cold page more. */
static const uint64_t latency_bounds[SERVER_STATS_LATENCY_BUCKETS] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 10000000, 100000000, 1000000000,
};

static const struct {
	uint16_t type;
	const char *name;
} types[SERVER_STATS_TYPES - 2] = {
	{ KNOT_RRTYPE_A, "A" }, { KNOT_RRTYPE_NS, "NS" },
	{ KNOT_RRTYPE_CNAME, "CNAME" }, { KNOT_RRTYPE_SOA, "SOA" },
	{ KNOT_RRTYPE_PTR, "PTR" }, { KNOT_RRTYPE_MX, "MX" },
	{ KNOT_RRTYPE_TXT, "TXT" }, { KNOT_RRTYPE_AAAA, "AAAA" },
	{ KNOT_RRTYPE_SRV, "SRV" }, { KNOT_RRTYPE_NAPTR, "NAPTR" },
	{ KNOT_RRTYPE_DNAME, "DNAME" }, { KNOT_RRTYPE_DS, "DS" },
	{ KNOT_RRTYPE_RRSIG, "RRSIG" }, { KNOT_RRTYPE_NSEC, "NSEC" },
	{ KNOT_RRTYPE_DNSKEY, "DNSKEY" }, { KNOT_RRTYPE_NSEC3, "NSEC3" },
	{ KNOT_RRTYPE_TLSA, "TLSA" }, { KNOT_RRTYPE_CDS, "CDS" },
	{ KNOT_RRTYPE_CDNSKEY, "CDNSKEY" }, { KNOT_RRTYPE_SVCB, "SVCB" },
	{ KNOT_RRTYPE_HTTPS, "HTTPS" }, { KNOT_RRTYPE_CAA, "CAA" },
	{ KNOT_RRTYPE_IXFR, "IXFR" }, { KNOT_RRTYPE_AXFR, "AXFR" },
	{ KNOT_RRTYPE_ANY, "ANY" },
};
#define TYPE_OTHER (SERVER_STATS_TYPES - 2)
#define TYPE_NONE (SERVER_STATS_TYPES - 1)

static const char *const rcode_names[SERVER_STATS_RCODES] = {
	"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
	"YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "BADVERS",
	"other",
};
#define RCODE_BADVERS 11
#define RCODE_OTHER 12

static const char *const cookie_names[SERVER_STATS_COOKIES] = {
	"unchecked", "absent", "new", "valid", "malformed",
};

static const char *const deferred_names[SERVER_STATS_DEFERRED] = {
	"update", "transfer", "signed",
};

const char *server_stats_type_name(unsigned i)
{
	return i < TYPE_OTHER ? types[i].name : i == TYPE_OTHER ? "other" :
	       "none";
}

const char *server_stats_rcode_name(unsigned i)
{
	return i < SERVER_STATS_RCODES ? rcode_names[i] : "other";
}

const char *server_stats_cookie_name(unsigned i)
{
	return i < SERVER_STATS_COOKIES ? cookie_names[i] : "other";
}

const char *server_stats_deferred_name(unsigned i)
{
	return i < SERVER_STATS_DEFERRED ? deferred_names[i] : "other";
}

static unsigned type_index(uint16_t type)
{
	for (unsigned i = 0; i < TYPE_OTHER; i++) {
		if (types[i].type == type) {
			return i;
		}
	}
	return TYPE_OTHER;
}

static unsigned rcode_index(unsigned rcode)
{
	return rcode <= KNOT_RCODE_NOTZONE ? rcode :
	       rcode == KNOT_RCODE_BADVERS ? RCODE_BADVERS : RCODE_OTHER;
}

/* The question's type in our response (its name uncompressed, right
 * after the header), or TYPE_NONE when it carries no question. */
static unsigned response_type(const uint8_t *resp, size_t len)
{
	if (len <= KNOT_WIRE_HEADER_SIZE || knot_wire_get_qdcount(resp) == 0) {
		return TYPE_NONE;
	}
	size_t pos = KNOT_WIRE_HEADER_SIZE;
	while (pos < len && resp[pos] != 0 && resp[pos] <= 63) {
		pos += 1u + resp[pos];
	}
	if (pos + 3 > len || resp[pos] != 0) {
		return TYPE_NONE;
	}
	return type_index((uint16_t)(resp[pos + 1] << 8 | resp[pos + 2]));
}

uint64_t server_stats_answer(server_worker_stats_t *st, const uint8_t *resp,
                             size_t len, int rcode_hint, unsigned cookie,
                             uint64_t since)
{
	uint64_t now = zc_clock_ns();
	uint64_t took = now - since;
	zc_local_add(&st->latency[zc_bucket(latency_bounds,
	             SERVER_STATS_LATENCY_BUCKETS, took)], 1);
	zc_local_add(&st->latency_sum_ns, took);
	if (len == 0) {
		zc_local_add(&st->dropped, 1);
		return now;
	}
	unsigned rcode = rcode_hint >= 0 ? (unsigned)rcode_hint :
	                 knot_wire_get_rcode(resp);
	zc_local_add(&st->answers[response_type(resp, len)][rcode_index(rcode)],
	             1);
	if (cookie < SERVER_STATS_COOKIES) {
		zc_local_add(&st->cookies[cookie], 1);
	}
	return now;
}

uint64_t server_stats_deferral(server_worker_stats_t *st,
                               server_stats_deferred_t kind)
{
	zc_local_add(&st->deferred[kind], 1);
	return zc_clock_ns();
}

/* Adds one worker's block to its transport's sums. */
static void add_worker(const server_worker_stats_t *st,
                       server_proto_stats_t *p)
{
	for (unsigned t = 0; t < SERVER_STATS_TYPES; t++) {
		for (unsigned r = 0; r < SERVER_STATS_RCODES; r++) {
			p->answers[t][r] += zc_local_get(&st->answers[t][r]);
		}
	}
	p->dropped += zc_local_get(&st->dropped);
	for (unsigned k = 0; k < SERVER_STATS_DEFERRED; k++) {
		p->deferred[k] += zc_local_get(&st->deferred[k]);
	}
	for (unsigned c = 0; c < SERVER_STATS_COOKIES; c++) {
		p->cookies[c] += zc_local_get(&st->cookies[c]);
	}
	for (unsigned b = 0; b <= SERVER_STATS_LATENCY_BUCKETS; b++) {
		p->latency.counts[b] += zc_local_get(&st->latency[b]);
	}
	p->latency.sum += zc_local_get(&st->latency_sum_ns);
}

void server_stats_sum(const server_worker_stats_t *st, bool tcp,
                      server_counts_t *out)
{
	server_proto_stats_t *p = &out->proto[tcp ? SERVER_STATS_TCP :
	                                      SERVER_STATS_UDP];
	p->latency.buckets = SERVER_STATS_LATENCY_BUCKETS;
	p->latency.bounds = latency_bounds;
	add_worker(st, p);
	out->rrl_dropped += zc_local_get(&st->rrl_dropped);
	out->rrl_slipped += zc_local_get(&st->rrl_slipped);
	out->workers++;
}
