/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Brings an edge store to this program's key format (EDGE_KEY_FORMAT in
 * edge/edge.h) before anything reads or builds it: an edge written in an
 * older format, or one that lost its file while the records store holds
 * zones, is emptied and every zone is fully built again. So is one that
 * applied the change log by another numbering of positions than the
 * records store's (changelog.h, "Positions": sequences on SQLite, commit
 * positions on PostgreSQL; meta log_numbering, absent in edges written
 * before there were two: sequences), such as a data directory moved to
 * the other engine by a zonecast migrate that could not carry the edge
 * over (builder_edge_migrated() restamps it otherwise), or an edge built
 * from PostgreSQL's sequences before it followed commits. And so is one
 * that applied less of the change log than was trimmed since (another
 * node sharing a PostgreSQL store trimmed it while this one was away).
 * The edge store is derived data, so this is always safe.
 *
 * A builder that finds the log trimmed past its position while it runs
 * (its node was paused longer than the liveness window, and the others
 * trimmed without it: records_journal_trim()) builds every zone again in
 * place instead (builder_edge_rebuild()): the edge store keeps answering
 * from what it holds while each zone's build replaces it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builder.h"
#include "builder/pass.h"
#include "common/error.h"
#include "common/log.h"

typedef struct {
	uint8_t (*apex)[KNOT_DNAME_MAXLEN];
	int64_t *id;
	size_t count, cap;
} apexes_t;

static int push_apex(apexes_t *a, const uint8_t *apex, int64_t id)
{
	if (a->count == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void *grown = realloc(a->apex, cap * sizeof(*a->apex));
		if (grown == NULL) {
			return 1;
		}
		a->apex = grown;
		grown = realloc(a->id, cap * sizeof(*a->id));
		if (grown == NULL) {
			return 1;
		}
		a->id = grown;
		a->cap = cap;
	}
	a->id[a->count] = id;
	memcpy(a->apex[a->count++], apex, knot_dname_size(apex));
	return 0;
}

static int collect_apex(const records_zone_t *zone, void *ctx)
{
	return push_apex(ctx, zone->apex, zone->id);
}

/* The edge's key format and the numbering of the positions it applied
 * (1, sequences, when absent). */
typedef struct {
	uint64_t keys, numbering;
} format_t;

static int format_get(edge_txn_t *txn, format_t *f)
{
	int ret = edge_meta_get(txn, "key_format", &f->keys);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(txn, "log_numbering", &f->numbering);
	}
	f->numbering = f->numbering != 0 ? f->numbering : RECORDS_LOG_SEQUENCES;
	return ret;
}

static int read_format(edge_store_t *es, format_t *f)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = format_get(&txn, f);
	edge_txn_abort(&txn);
	return ret;
}

/* Empties the edge and stamps the formats wanted, unless another process
 * did it first (then *done is set). */
static int reset(edge_store_t *es, const format_t *want, bool force,
                 bool *done)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	format_t f = { 0 };
	ret = format_get(&txn, &f);
	*done = !force && ret == ZC_EOK && f.keys == want->keys &&
	        f.numbering == want->numbering;
	if (ret == ZC_EOK && !*done) {
		ret = edge_txn_clear(&txn);
	}
	if (ret == ZC_EOK && !*done) {
		ret = edge_meta_put(&txn, "key_format", want->keys);
	}
	if (ret == ZC_EOK && !*done) {
		ret = edge_meta_put(&txn, "log_numbering", want->numbering);
	}
	if (ret != ZC_EOK || *done) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

/* applied_seq = seq (unless es applied more), with the identity of the
 * commit there (records_changelog_mark()). */
static int save_applied(records_store_t *rs, edge_store_t *es, uint64_t seq)
{
	uint64_t head, id = 0, unused, trimmed;
	int ret = seq != 0 ? records_changelog_mark(rs, seq, 0, &head, &id,
	                                            &unused, &trimmed) : ZC_EOK;
	if (ret != ZC_EOK) {
		return ret;
	}
	edge_txn_t txn = { 0 };
	ret = edge_txn_begin_write(es, &txn);
	uint64_t old = 0;
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &old);
	}
	if (ret == ZC_EOK && old < seq) {
		ret = edge_meta_put(&txn, "applied_seq", seq);
		if (ret == ZC_EOK) {
			ret = edge_meta_put(&txn, "applied_id", id);
		}
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

/* Full builds of the zones listed, then applied_seq = seq: every build
 * read a snapshot at least as new as seq, and what came later is replayed
 * (builds are idempotent). A zone whose build fails with an error of its
 * own is quarantined: it must not keep the others from being served, and
 * the follower tries it again. */
static int build_all(records_store_t *rs, edge_store_t *es,
                     const apexes_t *a, uint64_t seq)
{
	int ret = ZC_EOK;
	for (size_t i = 0; ret == ZC_EOK && i < a->count; i++) {
		ret = builder_full_build(rs, es, a->apex[i], NULL, NULL, NULL);
		if (ret != ZC_EOK && !builder_error_is_store_wide(ret)) {
			edge_quarantine_t q;
			ret = quarantine_store(es, (uint64_t)a->id[i], a->apex[i],
			                       ret, "full build", NULL, seq, &q);
			char name[KNOT_DNAME_TXT_MAXLEN + 1];
			knot_dname_to_str(name, a->apex[i], sizeof(name));
			if (ret == ZC_EOK) {
				zc_error("zone %s: quarantined: %s", name, q.reason);
			}
		}
	}
	return ret == ZC_EOK ? save_applied(rs, es, seq) : ret;
}

/* Full builds of every zone, the edge store emptied first; the log is
 * applied from `seq` on. */
static int rebuild(records_store_t *rs, edge_store_t *es, const format_t *had,
                   const format_t *want, bool force)
{
	uint64_t seq = 0;
	apexes_t a = { 0 };
	int ret = records_last_seq(rs, &seq);
	if (ret == ZC_EOK) {
		ret = records_zone_list(rs, false, collect_apex, &a);
	}
	bool done = false;
	if (ret == ZC_EOK) {
		ret = reset(es, want, force, &done);
	}
	if (ret == ZC_EOK && !done && a.count > 0 && had->keys != want->keys) {
		zc_info("edge store: key format %llu, this zonecast writes %llu: "
		        "building its %zu zones again from the records store",
		        (unsigned long long)had->keys,
		        (unsigned long long)want->keys, a.count);
	} else if (ret == ZC_EOK && !done && a.count > 0 &&
	           had->numbering != want->numbering) {
		zc_info("edge store: it applied the change log by %s, this"
		        " records store numbers it by %s: building its %zu zones"
		        " again from the records store",
		        had->numbering == RECORDS_LOG_COMMITS ? "commit" :
		        "sequence",
		        want->numbering == RECORDS_LOG_COMMITS ? "commit" :
		        "sequence", a.count);
	}
	if (ret == ZC_EOK && !done) {
		ret = build_all(rs, es, &a, seq);
	}
	free(a.apex);
	free(a.id);
	return ret;
}

/* What collect_gone() adds to: the zones at the edge that the records
 * store no longer holds. */
typedef struct {
	records_store_t *rs;
	apexes_t *a;
	int ret;
} gone_t;

static int collect_gone(const edge_zone_t *zone, void *ctx)
{
	gone_t *g = ctx;
	records_zone_t found;
	g->ret = records_zone_find(g->rs, zone->apex, &found);
	if (g->ret == ZC_ENOZONE) {
		g->ret = push_apex(g->a, zone->apex, (int64_t)zone->zone_id) == 0 ?
		         ZC_EOK : KNOT_ENOMEM;
	}
	return g->ret != ZC_EOK;
}

/* Adds to a the zones served from es that the records store no longer
 * holds (deleted while the log that said so was trimmed): their full
 * builds drop them. */
static int collect_gone_zones(records_store_t *rs, edge_store_t *es,
                              apexes_t *a)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	gone_t g = { .rs = rs, .a = a, .ret = ZC_EOK };
	ret = edge_zone_foreach(&txn, collect_gone, &g);
	edge_txn_abort(&txn);
	return ret != ZC_EOK ? ret : g.ret;
}

int builder_edge_rebuild(records_store_t *rs, edge_store_t *es)
{
	uint64_t seq = 0;
	apexes_t a = { 0 };
	int ret = records_last_seq(rs, &seq);
	if (ret == ZC_EOK) {
		ret = records_zone_list(rs, false, collect_apex, &a);
	}
	size_t held = a.count;
	if (ret == ZC_EOK) {
		ret = collect_gone_zones(rs, es, &a);
	}
	if (ret == ZC_EOK) {
		ret = build_all(rs, es, &a, seq);
	}
	if (ret == ZC_EOK) {
		zc_info("edge store: every zone built again from the records"
		        " store at seq %llu (%zu built, %zu deleted meanwhile"
		        " dropped)", (unsigned long long)seq, held,
		        a.count - held);
	}
	free(a.apex);
	free(a.id);
	return ret;
}

bool builder_log_diverged(records_store_t *rs, uint64_t applied,
                          uint64_t applied_id, uint64_t head, uint64_t id,
                          uint64_t trimmed, char *why, size_t size)
{
	char a[32], h[32];
	records_position_text(rs, applied, a, sizeof(a));
	records_position_text(rs, head, h, sizeof(h));
	if (head < applied) {
		snprintf(why, size, "it ends at position %s, before position"
		         " %s applied here", h, a);
		return true;
	}
	if (applied_id != 0 && id != 0 && id != applied_id) {
		snprintf(why, size, "the commit at position %s is another one"
		         " than the one applied here", a);
		return true;
	}
	/* No commit at all at a position applied here (its identity was
	 * read there) that no trim removed: PostgreSQL's log_pos sequence
	 * resumed past a gap after a failover or a restore (values logged
	 * ahead of use), so the log goes on past the lost commit. Nothing
	 * else removes a commit: zone deletes keep the log, a migration
	 * resets the identity (not checked), a failed commit's hole is
	 * never a position applied. */
	if (applied_id != 0 && id == 0 && applied > trimmed) {
		snprintf(why, size, "no commit holds position %s applied here,"
		         " and the log was not trimmed past it", a);
		return true;
	}
	return false;
}

/* A zone served from the edge store, with its serial. */
typedef struct {
	apexes_t a;
	uint32_t *serial;
} served_t;

static int collect_served(const edge_zone_t *zone, void *ctx)
{
	served_t *s = ctx;
	size_t cap = s->a.cap;
	if (push_apex(&s->a, zone->apex, (int64_t)zone->zone_id) != 0) {
		return 1;
	}
	if (s->a.cap != cap || s->serial == NULL) {
		uint32_t *grown = realloc(s->serial,
		                          s->a.cap * sizeof(*grown));
		if (grown == NULL) {
			return 1;
		}
		s->serial = grown;
	}
	s->serial[s->a.count - 1] = zone->serial;
	return 0;
}

/* RFC 1982: is a newer than b? */
static bool serial_newer(uint32_t a, uint32_t b)
{
	return a != b && (int32_t)(a - b) > 0;
}

/*
 * The records store went back: its versions up to `served` may hold other
 * content than this edge served under the same serials, so no IXFR may
 * start from `served` or before. Gives the zone a zone-wide version past
 * both serials (its journal starts there: secondaries take an AXFR),
 * unless the journal starts past `served` already (another node did it
 * first, or a zone-wide change since). The store's serial newer than
 * `served` is not enough: writes after the restore may have taken it
 * past before this ran, and an IXFR from `served` then applied the new
 * history's changes to the old one (outside tester 29).
 */
static int version_past(records_store_t *rs, const uint8_t *apex,
                        uint32_t served)
{
	records_zone_t zone;
	int ret = records_write_begin(rs);
	if (ret != ZC_EOK) {
		return ret;
	}
	ret = records_zone_find(rs, apex, &zone);
	if (ret == ZC_EOK) {
		ret = records_zone_get(rs, zone.id, &zone); /* Locked. */
	}
	uint32_t was = zone.serial;
	bool has = false;
	uint32_t start = 0;
	if (ret == ZC_EOK) {
		ret = records_changelog_journal_start(rs, zone.id, &has, &start);
	}
	bool bump = ret == ZC_EOK && has && !serial_newer(start, served);
	if (bump) {
		ret = records_zone_set_serial(rs, &zone,
		                              (serial_newer(zone.serial, served) ?
		                               zone.serial : served) + 1);
	}
	if (bump && ret == ZC_EOK) {
		ret = records_log_zone_event(rs, &zone,
		                             RECORDS_CHANGE_ZONE_SETTINGS);
	}
	if (ret != ZC_EOK || !bump) {
		records_write_rollback(rs);
		return ret == ZC_ENOZONE ? ZC_EOK : ret;
	}
	ret = records_write_commit(rs);
	if (ret == ZC_EOK) {
		zc_warn("zone %s: serial %u in the records store, %u served"
		        " here before it went back: now serial %u",
		        zone.name, was, served, zone.serial);
	}
	return ret;
}

int builder_edge_diverged(records_store_t *rs, edge_store_t *es)
{
	served_t s = { 0 };
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_zone_foreach(&txn, collect_served, &s);
		edge_txn_abort(&txn);
	}
	for (size_t i = 0; ret == ZC_EOK && i < s.a.count; i++) {
		ret = version_past(rs, s.a.apex[i], s.serial[i]);
	}
	free(s.a.apex);
	free(s.a.id);
	free(s.serial);
	if (ret == ZC_EOK) {
		/* The edge's fences name positions of the other log: capped
		 * at 0, every build of this one is newer. */
		ret = edge_txn_begin_write(es, &txn);
		if (ret == ZC_EOK) {
			ret = edge_txn_renumber(&txn, 0);
			if (ret == ZC_EOK) {
				ret = edge_meta_put(&txn, "applied_seq", 0);
			}
			if (ret == ZC_EOK) {
				ret = edge_meta_put(&txn, "applied_id", 0);
			}
			if (ret == ZC_EOK) {
				ret = edge_txn_commit(&txn);
			} else {
				edge_txn_abort(&txn);
			}
		}
	}
	return ret == ZC_EOK ? builder_edge_rebuild(rs, es) : ret;
}

/* Has the change log been trimmed past what this edge store applied? */
static int trimmed_past(records_store_t *rs, edge_store_t *es, bool *past)
{
	uint64_t trimmed = 0, applied = 0;
	*past = false;
	int ret = records_trimmed_seq(rs, &trimmed);
	if (ret != ZC_EOK || trimmed == 0) {
		return ret;
	}
	ret = builder_edge_applied(es, &applied);
	if (ret == ZC_EOK && applied < trimmed) {
		zc_warn("edge store: applied the change log up to seq %llu, but"
		        " it now starts after seq %llu (trimmed while this node"
		        " was away): building every zone again from the"
		        " records store", (unsigned long long)applied,
		        (unsigned long long)trimmed);
		*past = true;
	}
	return ret;
}

/* Is the log another one than the one this edge store applied (the
 * records store went back to an earlier state while it was away)? */
static int diverged(records_store_t *rs, edge_store_t *es, bool *past)
{
	uint64_t applied = 0, applied_id = 0, head = 0, id = 0, unused;
	uint64_t trimmed = 0;
	*past = false;
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", &applied);
		if (ret == ZC_EOK) {
			ret = edge_meta_get(&txn, "applied_id", &applied_id);
		}
		edge_txn_abort(&txn);
	}
	if (ret == ZC_EOK) {
		ret = records_changelog_mark(rs, applied, 0, &head, &id,
		                             &unused, &trimmed);
	}
	char why[160];
	if (ret == ZC_EOK && builder_log_diverged(rs, applied, applied_id,
	                                          head, id, trimmed, why,
	                                          sizeof(why))) {
		zc_error("edge store: the change log is not the one it applied"
		         " (%s): the records store went back to an earlier"
		         " state (a backup restored, or a failover to a replica"
		         " that lost commits); building every zone again from"
		         " the records store, zones served at a newer serial"
		         " get a version past it", why);
		*past = true;
	}
	return ret;
}

int builder_edge_applied_by(edge_store_t *es, unsigned numbering,
                            uint64_t *applied, bool *usable)
{
	*applied = 0;
	*usable = false;
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_read(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	format_t f = { 0 };
	ret = format_get(&txn, &f);
	if (ret == ZC_EOK) {
		ret = edge_meta_get(&txn, "applied_seq", applied);
	}
	edge_txn_abort(&txn);
	*usable = ret == ZC_EOK && f.keys == EDGE_KEY_FORMAT &&
	          f.numbering == numbering;
	return ret;
}

int builder_edge_migrated(edge_store_t *es, unsigned from, unsigned to,
                          uint64_t applied)
{
	edge_txn_t txn = { 0 };
	int ret = edge_txn_begin_write(es, &txn);
	if (ret != ZC_EOK) {
		return ret;
	}
	format_t f = { 0 };
	ret = format_get(&txn, &f);
	if (ret == ZC_EOK && (f.keys != EDGE_KEY_FORMAT ||
	                      f.numbering != from)) {
		ret = ZC_ESTALE;
	}
	if (ret == ZC_EOK) {
		ret = edge_txn_renumber(&txn, applied);
	}
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&txn, "applied_seq", applied);
	}
	if (ret == ZC_EOK) {
		/* The copied log's commits are new ones: not checked. */
		ret = edge_meta_put(&txn, "applied_id", 0);
	}
	if (ret == ZC_EOK) {
		ret = edge_meta_put(&txn, "log_numbering", to);
	}
	if (ret != ZC_EOK) {
		edge_txn_abort(&txn);
		return ret;
	}
	return edge_txn_commit(&txn);
}

int builder_edge_prepare(records_store_t *rs, edge_store_t *es)
{
	const format_t want = { EDGE_KEY_FORMAT,
	                        records_changelog_numbering(rs) };
	format_t had = { 0 };
	int ret = read_format(es, &had);
	if (ret == ZC_EOK && had.keys == want.keys &&
	    had.numbering == want.numbering) {
		bool past = false;
		ret = diverged(rs, es, &past);
		if (ret != ZC_EOK || past) {
			return ret != ZC_EOK ? ret : builder_edge_diverged(rs, es);
		}
		ret = trimmed_past(rs, es, &past);
		if (ret != ZC_EOK || !past) {
			return ret;
		}
		return rebuild(rs, es, &had, &want, true);
	}
	if (ret != ZC_EOK) {
		return ret;
	}
	if (had.keys > EDGE_KEY_FORMAT) {
		zc_error("edge store: key format %llu is newer than this "
		         "zonecast's (%u)", (unsigned long long)had.keys,
		         EDGE_KEY_FORMAT);
		return ZC_ESCHEMA;
	}
	return rebuild(rs, es, &had, &want, false);
}
