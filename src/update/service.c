/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The UPDATE hook: checks on the DNS worker's thread (parse, zone
 * section, TSIG, source address, quarantine, prescans, policy), then one
 * unit of the group committer per message, answered from its completion
 * callback, or, when the message changed its zone, once the builder has
 * applied it (update.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <libknot/descriptor.h>
#include <libknot/errcode.h>
#include <libknot/packet/wire.h>
#include <libknot/rrtype/opt.h>
#include <netinet/in.h>

#include "common/error.h"
#include "common/hash.h"
#include "common/log.h"
#include "dns/reply.h"
#include "dns/tsig_log.h"
#include "server/answer.h"
#include "update/internal.h"
#include "update/update.h"

/* Header + zone section + OPT + TSIG. */
#define RESPONSE_MAX (KNOT_WIRE_HEADER_SIZE + KNOT_DNAME_MAXLEN + 4 + 11 + \
                      DNS_TSIG_ROOM)

/* Zones looked up for UPDATEs are kept this long. A zone deleted
 * meanwhile is caught by the committer unit, which looks the name up
 * again (made again under it: a new id) and drops it here. A SQLite read
 * per message costs more than the rest of its checks. */
#define CACHE_MS 1000
#define CACHE_SLOTS 256

typedef struct {
	int64_t at;                  /* Monotonic ms; 0: empty. */
	records_zone_t zone;
} zone_slot_t;

/* TSIG keys read for UPDATEs are kept this long, so that a signed
 * message costs no read of the store of its own (precheck_kept()). Keys
 * are never changed, only deleted (and perhaps made again under the
 * name): a kept key only ever lets a message through to the committer,
 * whose unit checks in its transaction that the key's id still exists
 * (update_key_check(), policy.c); every other answer is the store's key's
 * (precheck()). */
#define KEY_CACHE_MS 60000
#define KEY_CACHE_SLOTS 64

typedef struct {
	int64_t at;                  /* Monotonic ms; 0: empty. */
	records_tsig_key_t key;
} key_slot_t;

struct update_service {
	update_config_t cfg;         /* live_lock guards max_size,
	                                live_wait_ms (update_reconfigure). */
	dns_tsig_policy_t tsig;      /* Time window (live_lock) and replay
	                                cache. */
	zc_acl_t allow;              /* live_lock */
	pthread_mutex_t live_lock;   /* Taken alone, briefly. */
	records_pool_t *pool;
	atomic_bool stopping;
	atomic_bool stop_logged;     /* The stop's SERVFAILs were said. */
	pthread_mutex_t cache_lock;  /* Guards zones[] and keys[]. */
	zone_slot_t zones[CACHE_SLOTS];
	key_slot_t keys[KEY_CACHE_SLOTS];
};

/* The UPDATEs a stop answers SERVFAIL (nothing written, the client may
 * send them again to the next server): said once, not once each (they
 * went unlogged: outside tester 37). */
static void stopping_servfail(update_service_t *u)
{
	if (!atomic_exchange(&u->stop_logged, true)) {
		zc_warn("update: SERVFAIL from now on: the server is stopping "
		        "(nothing of these UPDATEs is written; clients may send "
		        "them again)");
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Slot of a name (any case). */
static unsigned slot_of(const knot_dname_t *name)
{
	uint32_t h = 2166136261u;
	for (const uint8_t *p = name; p < name + knot_dname_size(name); p++) {
		h = (h ^ (uint8_t)tolower(*p)) * 16777619u;
	}
	return h % CACHE_SLOTS;
}

static int zone_lookup(update_service_t *u, records_store_t **rs,
                       const knot_dname_t *apex, records_zone_t *zone)
{
	unsigned i = slot_of(apex);
	int64_t now = mono_ms();
	pthread_mutex_lock(&u->cache_lock);
	zone_slot_t *z = &u->zones[i];
	bool hit = z->at != 0 && now - z->at < CACHE_MS &&
	           knot_dname_is_case_equal(z->zone.apex, apex);
	if (hit) {
		*zone = z->zone;
	}
	pthread_mutex_unlock(&u->cache_lock);
	if (hit) {
		return ZC_EOK;
	}
	int ret = *rs != NULL ? ZC_EOK : records_pool_get(u->pool, rs);
	if (ret == ZC_EOK) {
		ret = records_zone_find(*rs, apex, zone);
	}
	if (ret == ZC_EOK) {
		pthread_mutex_lock(&u->cache_lock);
		u->zones[i] = (zone_slot_t){ .at = now, .zone = *zone };
		pthread_mutex_unlock(&u->cache_lock);
	}
	return ret;
}

void update_zone_forget(update_service_t *u, const knot_dname_t *apex)
{
	pthread_mutex_lock(&u->cache_lock);
	zone_slot_t *z = &u->zones[slot_of(apex)];
	if (knot_dname_is_case_equal(z->zone.apex, apex)) {
		z->at = 0;
	}
	pthread_mutex_unlock(&u->cache_lock);
}

/* The key named so, read from the store (and kept for precheck_kept());
 * a name without a key is forgotten. */
static int key_lookup(update_service_t *u, records_store_t **rs,
                      const knot_dname_t *name, records_tsig_key_t *key)
{
	int ret = *rs != NULL ? ZC_EOK : records_pool_get(u->pool, rs);
	if (ret == ZC_EOK) {
		ret = records_tsig_find(*rs, name, key);
	}
	key_slot_t *k = &u->keys[slot_of(name) % KEY_CACHE_SLOTS];
	pthread_mutex_lock(&u->cache_lock);
	if (ret == ZC_EOK) {
		*k = (key_slot_t){ .at = mono_ms(), .key = *key };
	} else if (ret == ZC_ENOKEY &&
	           knot_dname_is_case_equal(k->key.name, name)) {
		k->at = 0;
	}
	pthread_mutex_unlock(&u->cache_lock);
	return ret;
}

/* The key named so as kept (no read of the store); false when none is. */
static bool key_kept(update_service_t *u, const knot_dname_t *name,
                     records_tsig_key_t *key)
{
	key_slot_t *k = &u->keys[slot_of(name) % KEY_CACHE_SLOTS];
	pthread_mutex_lock(&u->cache_lock);
	bool kept = k->at != 0 && mono_ms() - k->at < KEY_CACHE_MS &&
	            knot_dname_is_case_equal(k->key.name, name);
	if (kept) {
		*key = k->key;
	}
	pthread_mutex_unlock(&u->cache_lock);
	return kept;
}

void update_key_forget(update_service_t *u, const knot_dname_t *name)
{
	pthread_mutex_lock(&u->cache_lock);
	key_slot_t *k = &u->keys[slot_of(name) % KEY_CACHE_SLOTS];
	if (knot_dname_is_case_equal(k->key.name, name)) {
		k->at = 0;
	}
	pthread_mutex_unlock(&u->cache_lock);
}

int update_start(const update_config_t *cfg, update_service_t **out)
{
	update_service_t *u = calloc(1, sizeof(*u));
	if (u == NULL) {
		return KNOT_ENOMEM;
	}
	u->cfg = *cfg;
	if (cfg->allow_update != NULL) {
		u->allow = *cfg->allow_update;
	}
	u->cfg.allow_update = &u->allow;
	if (u->cfg.max_size == 0) {
		u->cfg.max_size = 65535;
	}
	if (u->cfg.live_wait_ms == 0) {
		u->cfg.live_wait_ms = UPDATE_DEFAULT_LIVE_WAIT_MS;
	}
	u->tsig.max_fudge = (uint16_t)cfg->tsig_max_fudge;
	u->tsig.replay = dns_tsig_replay_new(cfg->tsig_replay_cache ?
	                                     cfg->tsig_replay_cache :
	                                     UPDATE_TSIG_REPLAY_CACHE);
	u->pool = records_pool_new(cfg->data_dir);
	if (u->pool == NULL || u->tsig.replay == NULL) {
		records_pool_free(u->pool);
		dns_tsig_replay_free(u->tsig.replay);
		free(u);
		return KNOT_ENOMEM;
	}
	pthread_mutex_init(&u->cache_lock, NULL);
	pthread_mutex_init(&u->live_lock, NULL);
	*out = u;
	return ZC_EOK;
}

int update_reconfigure(update_service_t *u, const update_config_t *cfg)
{
	if (u == NULL || cfg == NULL) {
		return ZC_EUSAGE;
	}
	pthread_mutex_lock(&u->live_lock);
	u->allow = cfg->allow_update != NULL ? *cfg->allow_update :
	           (zc_acl_t){ .count = 0 };
	u->cfg.max_size = cfg->max_size ? cfg->max_size : 65535;
	u->cfg.live_wait_ms = cfg->live_wait_ms ? cfg->live_wait_ms :
	                      UPDATE_DEFAULT_LIVE_WAIT_MS;
	unsigned was = u->tsig.max_fudge ? u->tsig.max_fudge :
	               DNS_TSIG_MAX_FUDGE_DEFAULT;
	unsigned now = cfg->tsig_max_fudge ? cfg->tsig_max_fudge :
	               DNS_TSIG_MAX_FUDGE_DEFAULT;
	if (now > was) {
		/* What the cache forgot under the narrower window would pass
		 * the time check again (outside tester 43: a captured
		 * UPDATE replayed after a reload raised tsig-max-fudge). */
		dns_tsig_replay_window_grew(u->tsig.replay, (uint16_t)was,
		                            (uint16_t)now, (uint64_t)time(NULL));
	}
	u->tsig.max_fudge = (uint16_t)cfg->tsig_max_fudge;
	pthread_mutex_unlock(&u->live_lock);
	return ZC_EOK;
}

/* The live settings a message is judged by (one copy per message). */
typedef struct {
	size_t max_size;
	unsigned live_wait_ms;
	dns_tsig_policy_t tsig;
} live_t;

static live_t live_get(update_service_t *u)
{
	pthread_mutex_lock(&u->live_lock);
	live_t l = { .max_size = u->cfg.max_size,
	             .live_wait_ms = u->cfg.live_wait_ms, .tsig = u->tsig };
	pthread_mutex_unlock(&u->live_lock);
	return l;
}

static bool allowed_unsigned(update_service_t *u,
                             const struct sockaddr_storage *from)
{
	pthread_mutex_lock(&u->live_lock);
	bool ok = zc_acl_match(&u->allow, from);
	pthread_mutex_unlock(&u->live_lock);
	return ok;
}

void update_shutdown(update_service_t *u)
{
	if (u != NULL) {
		atomic_store(&u->stopping, true);
	}
}

void update_free(update_service_t *u)
{
	if (u != NULL) {
		records_pool_free(u->pool);
		dns_tsig_replay_free(u->tsig.replay);
		pthread_mutex_destroy(&u->cache_lock);
		pthread_mutex_destroy(&u->live_lock);
		free(u);
	}
}

static void msg_free(update_msg_t *m)
{
	update_net_free(&m->net);
	free(m->over);
	knot_pkt_free(m->pkt);
	free(m->wire);
	free(m);
}

int update_parse(knot_pkt_t *pkt)
{
	/* NOCANON: names inside rdata keep the case the client wrote, as
	 * the API and zone files keep it (RFC 4343 §4.1); owners are
	 * lowercased, as the API stores them. */
	int ret = knot_pkt_parse(pkt, KNOT_PF_NOCANON);
	for (uint16_t i = 0; ret == KNOT_EOK && i < pkt->rrset_count; i++) {
		knot_dname_to_lower(pkt->rr[i].owner);
	}
	return ret;
}

/* Answers: the request's header and zone section, the rcode, an OPT when
 * the request had one (RFC 6891 §7, as BIND and knotd answer), TSIG. */
static void respond(update_msg_t *m)
{
	if (m->drop) {
		server_reply_send(m->reply, NULL, 0); /* UDP: nothing sent. */
		m->reply = NULL;
		return;
	}
	update_audit_answer(m); /* Every refusal has its line. */
	if (m->tsig.present && !m->copy) {
		/* Before it goes out: a copy sent once the client has it
		 * is answered the same (take_copy()). */
		dns_tsig_replay_answered(update_tsig_policy(m->service).replay,
		                         &m->tsig, m->rcode);
	}
	uint8_t resp[RESPONSE_MAX];
	knot_pkt_t *q = m->pkt;
	size_t len = dns_error_reply(m->wire, q ? q->size : m->wire_len,
	                             q ? q->qname_size : 0, resp, sizeof(resp),
	                             m->rcode);
	if (q != NULL && q->opt_rr != NULL) {
		len = dns_reply_add_opt(resp, len, sizeof(resp),
		                        ANSWER_EDNS_PAYLOAD, m->rcode >> 4,
		                        knot_edns_do(q->opt_rr));
	}
	knot_wire_clear_cd(resp);
	if (m->tsig.present) {
		server_reply_send_signed(m->reply, resp, len, &m->tsig);
	} else {
		server_reply_send(m->reply, resp, len);
	}
	m->reply = NULL;
}

static void finish(update_msg_t *m, uint8_t rcode)
{
	m->rcode = rcode;
	respond(m);
	msg_free(m);
}

static _Atomic int64_t storage_logged;
static _Atomic int64_t live_logged;

/* The builder has applied the message (or could not, in time), or the
 * messages before it on its connection are answered. */
static void on_live(builder_waiter_t *w, int result)
{
	update_msg_t *m = (update_msg_t *)((uint8_t *)w -
	                                   offsetof(update_msg_t, waiter));
	if (result == ZC_ENOZONE) {
		/* Applied, then the zone was deleted (before the builder
		 * served the version): NOERROR, as the write happened; a
		 * SERVFAIL would have the client send it again, into
		 * whatever zone is made under the name next. */
		zc_debug("update %s: serial %u committed, and the zone was "
		         "deleted before it was served", m->zone.name,
		         m->zone.serial);
	} else if (result != ZC_EOK && !w->order_only) {
		m->rcode = KNOT_RCODE_SERVFAIL;
		if (zc_log_due(&live_logged, 10000)) {
			zc_warn("update %s: serial %u committed but not served "
			        "(%s): SERVFAIL; it is served once the builder "
			        "applies it", m->zone.name, m->zone.serial,
			        result == -ETIMEDOUT ? "live-wait passed" :
			        zc_strerror(result));
		}
	}
	respond(m);
	msg_free(m);
}

/* Answers once the edge store serves the zone version the message was
 * applied to (its new serial, or, for a NOERROR that changed nothing, the
 * serial it read: the data it found may be a concurrent write's, not served
 * yet), or (order_only: an answer that is not an acknowledgement) once the
 * messages before it on its TCP connection are answered: pipelined UPDATEs
 * are answered in order. */
static void await_live(update_msg_t *m, bool order_only)
{
	update_service_t *u = m->service;
	builder_waiter_t *w = &m->waiter;
	w->zone_id = (uint64_t)m->zone.id;
	memcpy(w->apex, m->zone.apex, knot_dname_size(m->zone.apex));
	w->version = m->zone.serial;
	w->seq = m->unit.seq;
	w->deadline_ms = mono_ms() + live_get(u).live_wait_ms;
	w->order = server_reply_stream(m->reply);
	w->order_only = order_only;
	w->done = on_live;
	builder_follower_await(u->cfg.follower, w);
}

update_wait_t update_live_wait(int result, uint8_t rcode, bool tcp)
{
	/* A NOERROR that changed nothing found its data already stored,
	 * maybe by a concurrent write not served yet (a duplicate, a retry
	 * after a SERVFAIL): it waits for the version it read. */
	if (result == ZC_EOK && rcode == KNOT_RCODE_NOERROR) {
		return UPDATE_AWAIT_SERVED;
	}
	return tcp ? UPDATE_AWAIT_ORDER : UPDATE_ANSWER_NOW;
}

static void on_committed(writer_unit_t *unit, int result)
{
	update_msg_t *m = (update_msg_t *)unit;
	if (m->drop || m->copy) {
		/* A copy the committer's replay check found (a kept key's
		 * message): dropped, its first still in progress, or
		 * answered as its first was. */
		respond(m);
		msg_free(m);
		return;
	}
	if (m->replay_pending) {
		/* A kept key's message whose unit failed before its key
		 * check (the store busy or down): remembered all the same,
		 * with where it came from, as a message checked with the
		 * store's key is at once, so that the same bytes sent again
		 * are a replay, or the client's copy (outside tester 43: its
		 * retries got BADTIME). A copy itself is dropped or answered
		 * as its first; a replay gets BADTIME. */
		m->replay_pending = false;
		if (update_tsig_replay(m->service, m) != ZC_EOK) {
			if (!m->drop && !m->copy) {
				m->rcode = KNOT_RCODE_NOTAUTH; /* BADTIME */
			}
			respond(m);
			msg_free(m);
			return;
		}
	}
	if (result != ZC_EOK && m->rcode == KNOT_RCODE_NOERROR) {
		m->rcode = KNOT_RCODE_SERVFAIL; /* The commit itself failed. */
	}
	if (unit->lost && !m->refused) {
		/* Its transaction was lost: a prerequisite's answer
		 * (YXDOMAIN, NXRRSET...) may rest on an earlier unit's write
		 * that went with it, so SERVFAIL, as for the writes. A
		 * refusal decided before the transaction stands. */
		m->rcode = KNOT_RCODE_SERVFAIL;
	}
	if (result == ZC_EOK && m->rcode == KNOT_RCODE_NOERROR) {
		update_audit_accepted(m);
	}
	if (result == ZC_EOK || m->rcode != KNOT_RCODE_SERVFAIL) {
		zc_debug("update %s: rcode %u%s", m->zone.name, m->rcode,
		         m->changed && result == ZC_EOK ? ", new serial" : "");
	} else if (!zc_storage_error(result) || zc_log_due(&storage_logged,
	                                                    10000)) {
		/* A full disk fails every UPDATE: say so now and then. */
		zc_warn("update %s: SERVFAIL (%s)", m->zone.name,
		        zc_strerror(result));
	}
	update_wait_t wait = update_live_wait(result, m->rcode, m->tcp);
	if (m->service->cfg.follower != NULL && wait != UPDATE_ANSWER_NOW) {
		await_live(m, wait == UPDATE_AWAIT_ORDER);
		return;
	}
	respond(m);
	msg_free(m);
}

/* When each kind of BADTIME was last logged. */
static _Atomic int64_t replay_logged, unproven_logged, window_logged;

/* Says why a signed UPDATE got BADTIME: out of its time window (RFC 8945
 * §5.2.3, the fudge capped by tsig-max-fudge) or a replay. Ten a second
 * at most of each: a flood of replays must not flood the log. */
static void log_badtime(const update_msg_t *m,
                        const struct sockaddr_storage *from)
{
	const dns_tsig_t *t = &m->tsig;
	if (!zc_log_due(t->replay == DNS_TSIG_REPLAYED ? &replay_logged :
	                t->replay == DNS_TSIG_UNPROVEN ? &unproven_logged :
	                &window_logged, 100)) {
		return;
	}
	char key[KNOT_DNAME_TXT_MAXLEN + 1], zone[KNOT_DNAME_TXT_MAXLEN + 1];
	char addr[ZC_ADDR_TEXT_MAX];
	knot_dname_to_str(key, m->tsig.name, sizeof(key));
	knot_dname_to_str(zone, knot_pkt_qname(m->pkt), sizeof(zone));
	zc_addr_text(from, addr, sizeof(addr));
	if (t->replay == DNS_TSIG_REPLAYED) {
		zc_warn("update %s from %s: refused a replay: key %s sent this "
		        "very message (same MAC) within the last %u s; NOTAUTH "
		        "BADTIME", zone, addr, key, t->window);
	} else if (t->replay == DNS_TSIG_UNPROVEN) {
		zc_warn("update %s from %s: key %s: signed at %llu, before a "
		        "message the full replay cache had to drop "
		        "(tsig-replay-cache), so possibly a replay; NOTAUTH "
		        "BADTIME", zone, addr, key,
		        (unsigned long long)t->time_signed);
	} else {
		long long skew = (long long)time(NULL) - (long long)t->time_signed;
		zc_warn("update %s from %s: key %s: signed %lld s %s the "
		        "server's time, outside the window of %u s (fudge %u, "
		        "tsig-max-fudge caps it); NOTAUTH BADTIME", zone, addr,
		        key, skew < 0 ? -skew : skew, skew < 0 ? "after" :
		        "before", t->window, t->fudge);
	}
}

static _Atomic int64_t full_logged;

/* The replay cache had to drop a live entry: requests signed before it
 * are refused from now on (tsig_replay.c). Once a minute at most. */
static void log_replay_cache_full(const update_service_t *u)
{
	if (zc_log_due(&full_logged, 60000)) {
		zc_warn("update: the TSIG replay cache is full (tsig-replay-cache "
		        "%zu): signed UPDATEs come faster than it can remember "
		        "for their time window; those signed before the oldest "
		        "it still holds get BADTIME", u->cfg.tsig_replay_cache ?
		        u->cfg.tsig_replay_cache : (size_t)UPDATE_TSIG_REPLAY_CACHE);
	}
}

/* Where a message came from, for the replay cache (dns_tsig_replay_tag()):
 * over UDP a hash of the client's address and port, never 0; over TCP 0
 * (a retry comes on another connection, where the first's answer does
 * not go). */
static uint64_t origin_of(const update_msg_t *m)
{
	if (m->tcp) {
		return 0;
	}
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	if (m->from.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&m->from;
		h = zc_hash_bytes(h, a->sin6_addr.s6_addr, 16);
		h = zc_hash_bytes(h, (const uint8_t *)&a->sin6_port, 2);
	} else {
		const struct sockaddr_in *a = (const void *)&m->from;
		h = zc_hash_bytes(h, (const uint8_t *)&a->sin_addr, 4);
		h = zc_hash_bytes(h, (const uint8_t *)&a->sin_port, 2);
	}
	return zc_hash_finish(h) | 1;
}

/* Notes where a message the replay cache took came from (origin_of()). */
static void tag_origin(update_service_t *u, update_msg_t *m)
{
	if (!m->tcp) {
		dns_tsig_replay_tag(live_get(u).tsig.replay, &m->tsig,
		                    origin_of(m));
	}
}

/*
 * A signed message the replay cache holds (REPLAYED), over UDP from the
 * address and port its first came from: a client's retry, the same bytes,
 * of a message it has no answer to (nsupdate sends it again after 3 s
 * when the first's answer is late or lost: outside tester 40 saw BADTIME,
 * "clocks are unsynchronized", and nsupdate said the update failed, though
 * it was made). Dropped while the first is in progress (its answer goes
 * to the same client and id once it is made); answered as the first was,
 * signed, once that went out. Nothing of it is applied either way. Over
 * TCP, from elsewhere, or once the cache no longer holds the first, it
 * stays a replay (BADTIME). Returns whether it took the message.
 */
static bool take_copy(update_service_t *u, update_msg_t *m)
{
	live_t l = live_get(u);
	uint8_t rcode = 0;
	if (m->tcp || m->tsig.replay != DNS_TSIG_REPLAYED ||
	    l.tsig.replay == NULL) {
		return false;
	}
	switch (dns_tsig_replay_copy(l.tsig.replay, &m->tsig, origin_of(m),
	                             m->arrived_ns, &rcode)) {
	case DNS_TSIG_COPY_PENDING:
		m->drop = true;
		update_audit_dropped(m, "a copy of a message in progress (a "
		                     "client's retry): its first's answer goes "
		                     "out once it is made");
		return true;
	case DNS_TSIG_COPY_ANSWERED:
		m->copy = true;
		m->rcode = rcode;
		m->tsig.error = 0; /* Signed as the first's answer was. */
		update_audit_copy(m, "a copy of a message answered (a client's "
		                  "retry): answered the same, nothing applied "
		                  "again");
		return true;
	default:
		return false;
	}
}

/* Zone section (§3.1.1), TSIG (§3.3 / RFC 8945), source address; *why
 * says what refused the request for its audit line (a TSIG failure has
 * its own: dns_tsig_log_refusal()). */
static uint8_t authorize(update_service_t *u, update_msg_t *m,
                         records_store_t **rs,
                         const struct sockaddr_storage *from,
                         records_tsig_key_t *key, const char **why)
{
	knot_pkt_t *q = m->pkt;
	if (knot_wire_get_qdcount(q->wire) != 1 ||
	    knot_pkt_qtype(q) != KNOT_RRTYPE_SOA ||
	    knot_pkt_qclass(q) != KNOT_CLASS_IN) {
		return KNOT_RCODE_FORMERR;
	}
	int ret = zone_lookup(u, rs, knot_pkt_qname(q), &m->zone);
	if (q->tsig_rr != NULL) {
		bool found = key_lookup(u, rs, q->tsig_rr->owner, key) == ZC_EOK;
		live_t l = live_get(u);
		int tret = dns_tsig_verify(q, found, key->algorithm, key->secret,
		                           key->secret_len, &l.tsig, &m->tsig);
		m->key_id = found ? key->id : 0;
		if (tret == KNOT_TSIG_EBADTIME && take_copy(u, m)) {
			/* m->drop: not answered; m->copy: as its first. */
			return m->copy ? m->rcode : KNOT_RCODE_NOERROR;
		}
		tret = dns_tsig_count(tret, &m->tsig);
		if (tret == ZC_EOK) {
			tag_origin(u, m);
		}
		if (tret != ZC_EOK) {
			/* The audit line of the refusal (BADTIME also gets
			 * log_badtime()'s warning with the details). */
			dns_tsig_log_refusal("update", q, &m->tsig, tret, found,
			                     key->algorithm, from);
			m->audited = true;
		}
		if (tret == KNOT_EMALF) {
			/* A MAC of a bad size, a TSIG not of class ANY. */
			return KNOT_RCODE_FORMERR;
		}
		if (tret == KNOT_TSIG_EBADTIME) {
			log_badtime(m, from);
		} else if (m->tsig.replay == DNS_TSIG_FRESH_FULL) {
			log_replay_cache_full(u);
		}
		if (tret != ZC_EOK) {
			return KNOT_RCODE_NOTAUTH; /* BADKEY/BADSIG/BADTIME */
		}
	}
	if (ret == ZC_ENOZONE) {
		*why = "not a zone served here";
		return KNOT_RCODE_NOTAUTH; /* Not a zone of ours. */
	}
	if (ret != ZC_EOK) {
		return KNOT_RCODE_SERVFAIL;
	}
	if (m->tsig.present && key->zone_id != m->zone.id) {
		/* Perhaps a zone kept from before it was deleted and made
		 * again (a new id), and the key is the new zone's. */
		update_zone_forget(u, knot_pkt_qname(q));
		ret = zone_lookup(u, rs, knot_pkt_qname(q), &m->zone);
		if (ret == ZC_ENOZONE) {
			*why = "not a zone served here";
			return KNOT_RCODE_NOTAUTH; /* Deleted meanwhile. */
		}
		if (ret != ZC_EOK) {
			return KNOT_RCODE_SERVFAIL;
		}
	}
	if (m->tsig.present && (ret != ZC_EOK || key->zone_id != m->zone.id)) {
		*why = "the key belongs to another zone";
		return KNOT_RCODE_REFUSED;
	}
	if (m->tsig.present) {
		return KNOT_RCODE_NOERROR;
	}
	if (!allowed_unsigned(u, from)) {
		*why = "unsigned, and the client is not in allow-update";
		return KNOT_RCODE_REFUSED;
	}
	return KNOT_RCODE_NOERROR;
}

static _Atomic int64_t quarantine_logged;

bool update_zone_quarantined(update_service_t *u, int64_t zone_id)
{
	return builder_follower_quarantined(u->cfg.follower, (uint64_t)zone_id);
}

/* A quarantined zone takes no writes: they would be acknowledged and not
 * served. SERVFAIL (the server's state, not the client's fault; REFUSED
 * would point at keys and policies). */
static uint8_t check_quarantine(update_service_t *u, const update_msg_t *m)
{
	if (!builder_follower_quarantined(u->cfg.follower,
	                                  (uint64_t)m->zone.id)) {
		return KNOT_RCODE_NOERROR;
	}
	if (zc_log_due(&quarantine_logged, 10000)) {
		zc_warn("update %s: SERVFAIL: the zone is quarantined (its "
		        "builds fail; `zonecast zone list` says why), nothing "
		        "written", m->zone.name);
	}
	return KNOT_RCODE_SERVFAIL;
}

/* An EDNS version this server speaks (0), or no OPT: else BADVERS, and
 * nothing of the message is applied (RFC 6891 §6.1.3). */
static bool edns_version_ok(const knot_pkt_t *q)
{
	return q->opt_rr == NULL || knot_edns_get_version(q->opt_rr) == 0;
}

/*
 * The fast path of a signed message: verified with a kept key (no read of
 * the store), and every other check passed. Anything else returns false
 * with nothing logged or counted, and precheck() judges the message again
 * with the store's key, as if no key were kept: an answer other than
 * "passed" is never given on a kept key's word (it may have been deleted,
 * or made again). The replay check waits for the committer, once the key
 * is known to exist (update_key_check()): a deleted key's messages must
 * not fill the replay cache that every key shares.
 */
static bool precheck_kept(update_service_t *u, update_msg_t *m)
{
	knot_pkt_t *q = m->pkt;
	records_tsig_key_t key;
	if (q->tsig_rr == NULL || !edns_version_ok(q) ||
	    knot_wire_get_qdcount(q->wire) != 1 ||
	    knot_pkt_qtype(q) != KNOT_RRTYPE_SOA ||
	    knot_pkt_qclass(q) != KNOT_CLASS_IN ||
	    !key_kept(u, q->tsig_rr->owner, &key)) {
		return false;
	}
	live_t l = live_get(u);
	dns_tsig_policy_t window = l.tsig;
	window.replay = NULL;
	if (dns_tsig_verify(q, true, key.algorithm, key.secret, key.secret_len,
	                    &window, &m->tsig) != ZC_EOK ||
	    (l.tsig.replay != NULL &&
	     dns_tsig_replay_known(l.tsig.replay, &m->tsig))) {
		/* A replay is refused at once, not queued for the writer. */
		return false;
	}
	records_store_t *rs = NULL; /* Borrowed on a cache miss only. */
	int ret = zone_lookup(u, &rs, knot_pkt_qname(q), &m->zone);
	if (rs != NULL) {
		records_pool_put(u->pool, rs);
	}
	bool final;
	if (ret != ZC_EOK || key.zone_id != m->zone.id ||
	    update_zone_quarantined(u, m->zone.id) ||
	    update_prereq_prescan(knot_pkt_section(q, KNOT_ANSWER),
	                          m->zone.apex, &final) != KNOT_RCODE_NOERROR ||
	    update_prescan(m, false) != KNOT_RCODE_NOERROR ||
	    !update_policy_allows(key.grants, key.name, m)) {
		return false;
	}
	m->key_id = key.id;
	m->key_kept = true;
	m->replay_pending = l.tsig.replay != NULL;
	return true;
}

int update_tsig_replay(update_service_t *u, update_msg_t *m)
{
	live_t l = live_get(u);
	int tret = dns_tsig_replay(&l.tsig, &m->tsig);
	if (tret != ZC_EOK && take_copy(u, m)) {
		return tret;
	}
	tret = dns_tsig_count(tret, &m->tsig);
	if (tret == ZC_EOK) {
		tag_origin(u, m);
	}
	if (tret != ZC_EOK) {
		dns_tsig_log_refusal("update", m->pkt, &m->tsig, tret, true,
		                     dnssec_tsig_algorithm_to_name(
		                             m->tsig.key.algorithm), &m->from);
		m->audited = true;
		log_badtime(m, &m->from);
	} else if (m->tsig.replay == DNS_TSIG_FRESH_FULL) {
		log_replay_cache_full(u);
	}
	return tret;
}

dns_tsig_policy_t update_tsig_policy(update_service_t *u)
{
	return live_get(u).tsig;
}

/* Everything that can be decided before the committer. */
static uint8_t precheck(update_service_t *u, update_msg_t *m,
                        const struct sockaddr_storage *from)
{
	/* An EDNS version this server does not speak: BADVERS before
	 * anything else, unsigned, as BIND and knotd answer (§6.1.3). */
	if (!edns_version_ok(m->pkt)) {
		update_audit_refused(m, KNOT_RCODE_BADVERS, "EDNS version other "
		                     "than 0 (RFC 6891 section 6.1.3)");
		return KNOT_RCODE_BADVERS;
	}
	if (m->wire_len <= live_get(u).max_size && precheck_kept(u, m)) {
		return KNOT_RCODE_NOERROR;
	}
	m->key_kept = false;
	m->replay_pending = false;
	records_store_t *rs = NULL; /* Borrowed on a cache miss only. */
	records_tsig_key_t key;
	const char *why = NULL;
	uint8_t rcode = authorize(u, m, &rs, from, &key, &why);
	if (rs != NULL) {
		records_pool_put(u->pool, rs);
	}
	if (m->drop || m->copy) {
		return rcode;
	}
	/* Past update-max-size: REFUSED once authorized, so the answer
	 * carries the zone section, the OPT and, to a signed request, a
	 * TSIG (refused before the message was read, it had none of them,
	 * and nsupdate and knsupdate reported a TSIG error: outside tester
	 * 31). */
	if (rcode == KNOT_RCODE_NOERROR && m->wire_len > live_get(u).max_size) {
		rcode = KNOT_RCODE_REFUSED;
		why = "larger than update-max-size";
	}
	if (why != NULL) {
		update_audit_refused(m, rcode, why);
	}
	if (rcode == KNOT_RCODE_NOERROR) {
		rcode = check_quarantine(u, m);
		if (rcode != KNOT_RCODE_NOERROR) {
			update_audit_refused(m, rcode, "the zone is quarantined");
		}
	}
	if (rcode == KNOT_RCODE_NOERROR) {
		bool final;
		rcode = update_prereq_prescan(knot_pkt_section(m->pkt,
		                                               KNOT_ANSWER),
		                              m->zone.apex, &final);
		if (rcode != KNOT_RCODE_NOERROR && !final) {
			/* A prerequisite before the malformed one may fail
			 * first: the committer checks them in order
			 * (update_prereq_check()), nothing is applied. */
			return KNOT_RCODE_NOERROR;
		}
	}
	if (rcode == KNOT_RCODE_NOERROR) {
		rcode = update_prescan(m, true);
	}
	if (rcode == KNOT_RCODE_NOERROR && m->tsig.present &&
	    !update_policy_allows(key.grants, key.name, m)) {
		char kname[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(kname, key.name, sizeof(kname));
		zc_info("update %s: refused by the grants of key %s (%s)",
		        m->zone.name, kname, key.grants[0] ? key.grants :
		        "zone");
		rcode = KNOT_RCODE_REFUSED;
		update_audit_refused(m, rcode, "outside the key's grants");
	}
	return rcode;
}

void update_handle(void *ctx, const uint8_t *msg, size_t len,
                   const struct sockaddr_storage *from, bool tcp,
                   server_reply_t *reply)
{
	update_service_t *u = ctx;
	update_msg_t *m = calloc(1, sizeof(*m));
	if (m == NULL || (m->wire = malloc(len)) == NULL) {
		free(m);
		server_reply_send(reply, NULL, 0);
		return;
	}
	memcpy(m->wire, msg, len);
	m->wire_len = len;
	m->reply = reply;
	m->service = u;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	m->arrived_ns = (uint64_t)ts.tv_sec * 1000000000 +
	                (uint64_t)ts.tv_nsec;
	m->tcp = tcp;
	m->from = *from;
	if (atomic_load(&u->stopping)) {
		stopping_servfail(u);
		finish(m, KNOT_RCODE_SERVFAIL);
		return;
	}
	m->pkt = knot_pkt_new(m->wire, (uint16_t)len, NULL);
	if (m->pkt == NULL) {
		finish(m, KNOT_RCODE_SERVFAIL);
		return;
	}
	if (update_parse(m->pkt) != KNOT_EOK) {
		/* Answer with the zone section if it can be read. */
		if (knot_wire_get_qdcount(m->wire) != 1 ||
		    knot_pkt_parse_question(m->pkt) != KNOT_EOK) {
			m->pkt->qname_size = 0;
		}
		finish(m, KNOT_RCODE_FORMERR);
		return;
	}
	uint8_t rcode = precheck(u, m, from);
	if (rcode != KNOT_RCODE_NOERROR || m->drop || m->copy) {
		finish(m, rcode);
		return;
	}
	m->unit.fn = update_apply;
	m->unit.hint = update_hint;
	m->unit.ctx = m;
	m->unit.done = on_committed;
	m->unit.want_seq = u->cfg.follower != NULL; /* For await_live(). */
	if (writer_submit(u->cfg.writer, &m->unit) != ZC_EOK) {
		stopping_servfail(u); /* ZC_EBUSY: the writer is stopping. */
		finish(m, KNOT_RCODE_SERVFAIL);
	}
}
