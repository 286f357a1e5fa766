/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Quarantined zones: one zone whose build fails never stops the others.
 *
 * Design
 *
 * When a zone's build fails with an error of its own (see
 * builder_error_is_store_wide() for the rule), pass.c calls
 * quarantine_enter(): the zone's writes of that build were rolled back, so
 * the DNS server keeps answering from its last good build; the entry
 * (reason, time, the serial still served) goes to the edge store's
 * quarantine table, where every process sees it (the API, `zonecast zone
 * list`); the follower publishes the set to the writers, which refuse
 * writes to the zone (builder_follower_quarantined()); and the pass skips
 * the zone's record events from then on. The first full build of the zone
 * that succeeds (pass.c calls quarantine_release()) covers what was
 * skipped and ends the quarantine.
 *
 * Retries: a full build of the zone is queued 10 s after it failed, then
 * after twice as long each time, up to every 10 minutes (so a failure
 * taken for the zone's own by mistake heals by itself); at once after a
 * zone-level change (an import, new settings: likely the fix), when an
 * operator asks (EDGE_QUARANTINE_RETRY, set by `zonecast zone retry` or
 * POST /zones/{id}/retry) and when zonecast starts (quarantine_load()).
 * A failure is logged when it starts, when its cause changes and at most
 * every 10 minutes while it lasts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libknot/errcode.h>

#include "builder/pass.h"
#include "common/error.h"
#include "common/log.h"

#define RETRY_FIRST_MS 10000
#define RETRY_MAX_MS 600000
#define LOG_AGAIN_MS 600000
/* How often a pass looks for operators' retry requests, at most. */
#define REQUEST_POLL_MS 50

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool builder_error_is_store_wide(int code)
{
	switch (code) {
	case ZC_EMAPFULL:
	case ZC_EBUSY:
	case ZC_ESQL:
	case ZC_EUNAVAILABLE: /* PostgreSQL down: no zone's fault. */
	case ZC_ESESSIONEND:
	case ZC_EINDOUBT:
	case ZC_ETRIMMED:
	case ZC_ELMDB:
	case -ENOSPC:
	case -EDQUOT:
	case -EROFS:
	case -EACCES:
	case -EPERM:
	case -EIO:
	case -ENOMEM:
	case -EAGAIN:
	case -EBUSY:
	case -EINTR:
	case -EMFILE:
	case -ENFILE:
	case -EFBIG:
	case -ETIMEDOUT:
	case -ESTALE:
		return true;
	default:
		return false;
	}
}

int quarantine_find(const pass_state_t *st, uint64_t zone_id)
{
	for (size_t i = 0; i < st->quarantined_count; i++) {
		if (st->quarantined[i].zone_id == zone_id) {
			return (int)i;
		}
	}
	return -1;
}

/* Adds a zone to the list (not there yet); NULL without memory. */
static pass_quarantined_t *add(pass_state_t *st, uint64_t zone_id,
                               const uint8_t *apex)
{
	if (st->quarantined_count == st->quarantined_cap) {
		size_t cap = st->quarantined_cap ? st->quarantined_cap * 2 : 8;
		void *grown = realloc(st->quarantined, cap * sizeof(*st->quarantined));
		if (grown == NULL) {
			return NULL;
		}
		st->quarantined = grown;
		st->quarantined_cap = cap;
	}
	pass_quarantined_t *e = &st->quarantined[st->quarantined_count++];
	memset(e, 0, sizeof(*e));
	e->zone_id = zone_id;
	memcpy(e->apex, apex, knot_dname_size(apex));
	e->backoff_ms = RETRY_FIRST_MS;
	st->quarantine_changed = true;
	return e;
}

/* "full build failed at www.example.: value too large" */
static void format_reason(char *out, size_t size, const char *stage,
                          const uint8_t *owner, int code)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1] = "";
	if (owner != NULL && owner[0] != '\0') {
		knot_dname_to_str(name, owner, sizeof(name));
	}
	snprintf(out, size, "%s failed%s%s: %s", stage, name[0] ? " at " : "",
	         name, zc_strerror(code));
}

int quarantine_store(edge_store_t *es, uint64_t zone_id, const uint8_t *apex,
                     int code, const char *stage, const uint8_t *owner,
                     uint64_t seq, edge_quarantine_t *out)
{
	edge_txn_t txn = { 0 };
	edge_quarantine_t *q = out;
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = edge_quarantine_get(&txn, zone_id, q);
	if (ret == KNOT_ENOENT || ret == ZC_EFORMAT) {
		memset(q, 0, sizeof(*q));
		q->zone_id = zone_id;
		q->since_ms = wall_ms();
		q->apex_len = (uint8_t)knot_dname_size(apex);
		memcpy(q->apex, apex, q->apex_len);
		ret = ZC_EOK;
	}
	edge_zone_t zone;
	if (ret == ZC_EOK) {
		/* What the DNS server answers from meanwhile. */
		q->serial = edge_zone_get(&txn, apex, &zone) == ZC_EOK &&
		            zone.zone_id == zone_id ? zone.serial : 0;
		q->flags &= (uint8_t)~EDGE_QUARANTINE_RETRY;
		q->last_ms = wall_ms();
		q->attempts++;
		q->code = code;
		q->seq = seq;
		format_reason(q->reason, sizeof(q->reason), stage, owner, code);
		ret = edge_txn_put_quarantine(&txn, q);
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

/* Logs the quarantine of a zone, or another failure of it. */
static void log_failure(pass_quarantined_t *e, const edge_quarantine_t *q,
                        bool first, int old_code)
{
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, e->apex, sizeof(name));
	unsigned next_s = e->backoff_ms / 1000;
	if (first) {
		char serving[64];
		snprintf(serving, sizeof(serving), q->serial != 0 ?
		         "its last good build (serial %u)" :
		         "nothing (it was never built)", q->serial);
		zc_error("zone %s: quarantined: %s; the DNS server answers from "
		         "%s, writes to the zone are refused and its changes wait; "
		         "next try in %u s, or `zonecast zone retry %s` once the "
		         "cause is fixed", name, q->reason, serving, next_s, name);
		return;
	}
	if (q->code != old_code || zc_log_due(&e->logged, LOG_AGAIN_MS)) {
		zc_warn("zone %s: still quarantined: %s (attempt %u); next try in "
		        "%u s", name, q->reason, q->attempts, next_s);
	}
}

int quarantine_enter(pass_state_t *st, uint64_t zone_id, const uint8_t *apex,
                     int code, const char *stage, const uint8_t *owner)
{
	edge_quarantine_t q;
	int ret = quarantine_store(st->es, zone_id, apex, code, stage, owner,
	                           st->read_seq, &q);
	if (ret != ZC_EOK) {
		return ret;
	}
	int i = quarantine_find(st, zone_id);
	bool first = i < 0;
	pass_quarantined_t *e = first ? add(st, zone_id, apex) :
	                        &st->quarantined[i];
	if (e == NULL) {
		return KNOT_ENOMEM; /* Stored: the next pass loads nothing new. */
	}
	int old_code = e->code;
	e->code = code;
	e->retry_at = mono_ms() + e->backoff_ms;
	if (first) {
		atomic_store(&e->logged, mono_ms());
	}
	log_failure(e, &q, first, old_code);
	e->backoff_ms = e->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS :
	                e->backoff_ms * 2;
	return ZC_EOK;
}

int quarantine_release(pass_state_t *st, int i)
{
	pass_quarantined_t *e = &st->quarantined[i];
	edge_txn_t txn = { 0 };
	edge_quarantine_t q = { .attempts = 0 };
	edge_zone_t zone = { .serial = 0 };
	int ret = edge_txn_begin_write(st->es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	bool built = edge_zone_get(&txn, e->apex, &zone) == ZC_EOK;
	if (edge_quarantine_get(&txn, e->zone_id, &q) != ZC_EOK) {
		q.attempts = 0; /* Gone with the zone (deleted). */
	}
	ret = edge_txn_del_quarantine(&txn, e->zone_id);
	ret = ret == ZC_EOK ? edge_txn_commit(&txn) : ret;
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	char name[KNOT_DNAME_TXT_MAXLEN + 1];
	knot_dname_to_str(name, e->apex, sizeof(name));
	if (built && q.attempts > 0) {
		zc_info("zone %s: released from quarantine: built at serial %u "
		        "after %u failed attempt(s); writes are accepted again",
		        name, zone.serial, q.attempts);
	} else if (built) {
		zc_info("zone %s: released from quarantine: built at serial %u "
		        "(it was built whole meanwhile); writes are accepted again",
		        name, zone.serial);
	} else {
		zc_info("zone %s: released from quarantine: the zone is gone",
		        name);
	}
	memmove(e, e + 1, (st->quarantined_count - (size_t)i - 1) * sizeof(*e));
	st->quarantined_count--;
	st->quarantine_changed = true;
	return ZC_EOK;
}

typedef struct {
	pass_state_t *st;
	bool retry_now;
} load_t;

static int load_one(const edge_quarantine_t *q, void *ctx)
{
	load_t *l = ctx;
	pass_state_t *st = l->st;
	if (quarantine_find(st, q->zone_id) >= 0) {
		return 0;
	}
	pass_quarantined_t *e = add(st, q->zone_id, q->apex);
	if (e == NULL) {
		return 1;
	}
	e->code = q->code;
	atomic_store(&e->logged, mono_ms());
	e->retry_at = l->retry_now ? 0 : mono_ms() + RETRY_FIRST_MS;
	if (l->retry_now) {
		char name[KNOT_DNAME_TXT_MAXLEN + 1];
		knot_dname_to_str(name, q->apex, sizeof(name));
		zc_warn("zone %s: quarantined (%s; %u attempt(s)): trying it "
		        "again", name, q->reason, q->attempts);
	}
	return 0;
}

int quarantine_load(pass_state_t *st, bool retry_now)
{
	load_t l = { .st = st, .retry_now = retry_now };
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(st->es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = edge_quarantine_foreach(&txn, load_one, &l);
	edge_txn_abort(&txn);
	return ret;
}

/* Whether an operator asked for a retry, or the entry is gone. */
static bool requested(edge_txn_t *txn, const pass_quarantined_t *e)
{
	edge_quarantine_t q;
	int ret = edge_quarantine_get(txn, e->zone_id, &q);
	return ret == KNOT_ENOENT ||
	       (ret == ZC_EOK && (q.flags & EDGE_QUARANTINE_RETRY));
}

int quarantine_schedule(pass_state_t *st)
{
	if (st->quarantined_count == 0) {
		return ZC_EOK;
	}
	int64_t now = mono_ms();
	bool poll = now - st->requests_polled >= REQUEST_POLL_MS;
	edge_txn_t txn = { 0 };
	int ret = poll ? edge_txn_begin_read(st->es, &txn) : ZC_EOK;
	if (ret != ZC_EOK) {
		return ret;
	}
	st->requests_polled = poll ? now : st->requests_polled;
	for (size_t i = 0; i < st->quarantined_count; i++) {
		pass_quarantined_t *e = &st->quarantined[i];
		if (pass_full_pending(st, e->apex)) {
			continue;
		}
		if (now >= e->retry_at || (poll && requested(&txn, e))) {
			pass_queue_full(st, e->apex, UINT64_MAX);
		}
	}
	if (poll) {
		edge_txn_abort(&txn);
	}
	return ZC_EOK;
}

/* --- Public: the entries, for the API and the CLI. --- */

int builder_quarantine_get(edge_store_t *es, uint64_t zone_id,
                           edge_quarantine_t *out)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_quarantine_get(&txn, zone_id, out);
		edge_txn_abort(&txn);
	}
	return ret;
}

int builder_quarantine_list(edge_store_t *es,
                            int (*cb)(const edge_quarantine_t *q, void *ctx),
                            void *ctx)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_quarantine_foreach(&txn, cb, ctx);
		edge_txn_abort(&txn);
	}
	return ret;
}

int builder_quarantine_request_retry(edge_store_t *es, uint64_t zone_id,
                                     uint32_t *attempts)
{
	edge_txn_t txn = { 0 };
	edge_quarantine_t q;
	int ret = edge_txn_begin_write(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_quarantine_get(&txn, zone_id, &q);
	}
	if (ret == ZC_EOK) {
		q.flags |= EDGE_QUARANTINE_RETRY;
		ret = edge_txn_put_quarantine(&txn, &q);
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	if (attempts != NULL) {
		*attempts = q.attempts;
	}
	return edge_txn_commit(&txn);
}
