/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The change log: every committed write's events, in order. changelog.c
 * is the only code that writes or reads them; this header is the whole
 * interface, with no SQLite in it, so that another log (a replicated one,
 * or PostgreSQL's tables) can take its place behind the same calls.
 *
 * Design
 *
 * Events. Each event has a sequence (global, ascending, never handed out
 * twice), its zone (id and apex) and the zone's version (its SOA serial
 * after the change). A version is one write transaction's unit of work
 * (an API call, an API batch, one UPDATE message): its events share the
 * version, and versions of a zone only grow (RFC 1982). Record events
 * carry the node (okey: the owner's LF relative to the apex, dns/name.h),
 * the type, the record's id, TTL and rdata; an update of a record is a
 * delete of the old one and a create of the new one, so the builder
 * always knows what to clean up.
 *
 * Appending. records_changelog_append() writes into the caller's write
 * transaction (the transactional outbox): an event commits with the
 * change it describes or not at all. What an append does besides the
 * event depends on its kind, in one table (changelog.c, `rules`):
 *
 *   kind             names a node   indexes its version   restarts IXFR
 *   record created   yes            yes                   no
 *   record deleted   yes            yes                   no
 *   zone touched     the apex       yes                   no
 *   zone created     no             yes                   yes
 *   zone settings    no             yes                   yes
 *   zone imported    no             no                    yes
 *   zone deleted     no             no                    no
 *
 * "Indexes its version": the first event of each (zone, version) is
 * indexed, so an IXFR reads from there instead of scanning other zones'
 * history. The units of work appending through the group committer
 * index theirs; an import (a transaction of its own) restarts the
 * journal at its version and a deletion ends the zone, so no journal
 * read ever starts inside either. "Restarts IXFR": a zone-wide change
 * cannot be expressed as record differences, so the oldest version IXFR
 * can start from (the journal start) moves to its version.
 *
 * Positions. Readers get every event with its position in the log,
 * whose order is the order in which the transactions committed: a
 * reader that follows positions (everything past the last it read)
 * never skips an event that commits late, because a commit not yet
 * visible always gets a larger position than every visible one. A
 * position is a uint64_t; 0 is "before the first event".
 *
 *   SQLite: the event's sequence (changes.seq). Writers take turns
 *   (BEGIN IMMEDIATE), so sequence order is commit order.
 *
 *   PostgreSQL: writers of several nodes commit at once, and a
 *   transaction that drew smaller sequences may commit after one that
 *   drew larger ones: sequences are not commit order, and a reader of
 *   `seq > last` would skip the late commit's events for good. Every
 *   transaction that wrote events is sealed at COMMIT with a commit
 *   position in commit order (log_commits.pos, schema_pg.sql and
 *   docs/design-postgresql.md §2.2-2.3: every snapshot sees all the
 *   committed positions up to the largest it sees). An event's position
 *   is (commit position << 24) | rank, its rank being its place among its
 *   commit's events in sequence order (1, 2, ...), except that the last
 *   event of every commit has rank 0xFFFFFF. So (p << 24) | 0xFFFFFF
 *   means "commit p read whole", however it was reached: the builder
 *   after its last event, records_last_seq(), records_trimmed_seq(),
 *   records_changelog_committed(). A reader may stop inside a commit
 *   (the builder stops between two versions) and resume from there.
 *   Positions have no gaps within a commit; between commits a gap is a
 *   trimmed commit, or a position drawn by a transaction that then
 *   failed to commit (records_changelog_follows() tells the builder
 *   which events are next). A commit can be read event by event up to
 *   0xFFFFFE events; only a migrated journal is larger, and no builder
 *   reads inside it (an edge store that applied the other numbering is
 *   built again from the records: records_changelog_numbering(),
 *   builder_edge_prepare()).
 *
 * Sequences still name events inside the store. A zone's events are
 * written only while its row is locked (records.h, "Concurrency"), so
 * for one zone sequence order is version order on both engines, and the
 * IXFR journal (zone_versions, records_changelog_journal()) keeps them.
 *
 * Reading. The builder reads everything past a position
 * (records_changes_since()) and fences full builds with the newest one
 * (records_last_seq()); IXFR reads one zone's record events between two
 * versions (records_changelog_journal()); `zonecast status` and the
 * metrics count events past a position (records_backlog(),
 * records_zone_activity()). Inside records_read_begin()/end() each reads
 * that snapshot of the store.
 *
 * Trimming. records_journal_trim() deletes events older than the
 * retention that the builder has applied, never the newest event (SQLite:
 * new sequences follow it; PostgreSQL: whole commits, never the newest,
 * and nothing that a live node sharing the store has not applied), and
 * moves each zone's journal start past what went, so an IXFR from a
 * trimmed version is refused (the secondary takes an AXFR) rather than
 * answered wrong.
 *
 * On SQLite: the tables `changes` (the events, seq its rowid) and
 * `zone_versions` (the index), and the column zones.ixfr_from (the
 * journal start); schema.c creates them, no other file touches them. On
 * PostgreSQL also log_commits (the seal trigger writes it); the reads and
 * the trim by positions are changelog_pg.c's.
 *
 * The store handle is the transaction the events belong to; calls run on
 * the caller's thread and connection (one per thread, records.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libknot/dname.h>

#include "dns/name.h"

typedef struct records_store records_store_t;

/* Kinds of change-log events. */
typedef enum {
	RECORDS_CHANGE_ZONE_CREATED = 1,
	RECORDS_CHANGE_ZONE_DELETED = 2,
	RECORDS_CHANGE_ZONE_SETTINGS = 3,
	RECORDS_CHANGE_ZONE_IMPORTED = 4,
	RECORDS_CHANGE_RECORD_CREATED = 5,
	RECORDS_CHANGE_RECORD_DELETED = 6,
	/* A version without record changes (records_zone_touch()): the
	 * signed view refreshes signatures in it. Not zone-wide: IXFR spans
	 * it; the builder moves the edge serial (the apex node is rebuilt,
	 * unchanged). */
	RECORDS_CHANGE_ZONE_TOUCHED = 7,
} records_change_kind_t;

/* --- Appending (records/ only, inside the caller's write transaction) --- */

/* One event to append. Borrowed pointers, read during the call only. */
typedef struct {
	int64_t zone_id;
	const knot_dname_t *apex;     /* Wire, lowercase. */
	uint32_t version;             /* The zone's serial after the change. */
	records_change_kind_t kind;
	/* Record events only (the other kinds ignore them): */
	const uint8_t *okey;          /* The node: owner LF below the apex. */
	size_t okey_len;
	uint16_t type;
	int64_t record_id;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
} records_change_entry_t;

/* Tells the change log that the caller begins a write transaction: what
 * records_changelog_committed() reports starts afresh. */
void records_changelog_begin(records_store_t *store);

/*
 * Appends one event and applies its kind's rules (see the table above);
 * *seq (unless NULL) receives its sequence, which names the event in the
 * store but is no position on PostgreSQL (the commit's position is drawn
 * at COMMIT: records_changelog_committed()). Fails only as the store does
 * (ZC_EBUSY, ZC_ESQL, storage errors); the caller rolls back.
 */
int records_changelog_append(records_store_t *store,
                             const records_change_entry_t *entry,
                             uint64_t *seq);

/* PostgreSQL, last before the commit of a write transaction whose units
 * took late savepoints and appended (records_write_commit()): indexes the
 * first event of each of its versions (IXFR starts there), one statement
 * for the transaction, queued. Otherwise each version was indexed at its
 * first event; nothing here. */
int records_changelog_index_versions(records_store_t *store);

/* Tells the change log that the caller's write transaction, or a
 * savepoint in it, was rolled back: what was appended there is gone, and
 * its versions may be handed out again (SQLite: the connection forgets
 * which version it indexed last, so that it indexes it again). */
void records_changelog_rollback(records_store_t *store);

/*
 * Right after the caller's write transaction committed (before the
 * connection's next one): *seq receives the position of its last event,
 * for waiting until the builder applied it (builder_follower_applied()
 * >= *seq); 0 when it appended nothing that committed. SQLite: the
 * newest sequence. PostgreSQL: (its commit position << 24) | 0xFFFFFF,
 * one query.
 */
int records_changelog_committed(records_store_t *store, uint64_t *seq);

/* --- Reading: the builder --- */

/* One change-log event. Record events name the node they touch (okey,
 * the owner's LF relative to the apex) and the record's type. */
typedef struct {
	uint64_t seq;            /* Its position (see "Positions"). */
	/* Identities as records_changelog_mark() gives them, read with the
	 * event at no extra query: log_id, of the commit holding seq;
	 * from_id, of the commit at the position the read went on from
	 * (the first event's: `after`'s; 0: no commit there). */
	uint64_t log_id, from_id;
	int64_t zone_id;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	uint32_t version;
	records_change_kind_t kind;
	uint8_t okey[DNS_LF_KEY_MAXLEN];
	size_t okey_len;
	uint16_t type;
} records_change_t;

/* The newest position (the end of the newest commit; 0 for an empty
 * log): in a snapshot, everything it sees is at or before it. */
int records_last_seq(records_store_t *store, uint64_t *seq);

/* The last position records_journal_trim() removed (0: none): an edge
 * store that applied less than that cannot follow the log any more and
 * is built again from the records (another node sharing a PostgreSQL
 * store trimmed while it was down: builder_edge_prepare() at start, the
 * builder's pass when it was paused). */
int records_trimmed_seq(records_store_t *store, uint64_t *seq);

/*
 * Reads up to `limit` change events (0: no limit) past position `after`,
 * in the log's order, calling cb for each (cb returns non-zero to stop);
 * chg->seq is the event's position. `after` may lie inside a commit.
 * Inside records_read_begin()/end() it reads that snapshot. (PostgreSQL
 * reads in pages of commits, so a pass over a long backlog holds one
 * page in memory, not the backlog.)
 */
int records_changes_since(records_store_t *store, uint64_t after,
                          unsigned limit,
                          int (*cb)(const records_change_t *chg, void *ctx),
                          void *ctx);

/*
 * Whether `seq`, the first event read past `after`, is the event right
 * after it: when it is not, events may be missing in between (a trimmed
 * log), which the builder checks (records_trimmed_seq()). SQLite: seq is
 * after + 1. PostgreSQL: the rest of after's commit, or, after a whole
 * commit, the first event of the next position.
 */
bool records_changelog_follows(records_store_t *store, uint64_t after,
                               uint64_t seq);

/*
 * Which log a position belongs to. A records store can go back to an
 * earlier state (a backup or dump restored, a failover to a replica that
 * lost commits) while an edge store keeps what it applied: the positions
 * then name other events, and a builder that went on by position would
 * take new commits for applied ones. So the builder remembers an identity
 * of the commit at the position it applied, and checks it:
 *
 *   PostgreSQL: the commit's (xid, at) in log_commits (a dump and
 *   restore keeps them; a new commit at the same position has another).
 *   SQLite: the event's (at, zone, version, kind, record id).
 *
 * The log's reads give the same identities with their events
 * (records_change_t.log_id, .from_id). One query, in the caller's
 * snapshot if it holds one: *head receives
 * records_last_seq(), *id_a and *id_b the identities (never 0) of the
 * commits holding positions a and b, 0 when there is none (position 0,
 * trimmed, or not written: a position past the head, or a failed commit's
 * hole on PostgreSQL), *trimmed records_trimmed_seq() (0: never trimmed;
 * a position at or before it holds no commit any more).
 */
int records_changelog_mark(records_store_t *store, uint64_t a, uint64_t b,
                           uint64_t *head, uint64_t *id_a, uint64_t *id_b,
                           uint64_t *trimmed);

/* How positions are numbered, for an edge store that must follow one
 * numbering: RECORDS_LOG_SEQUENCES (SQLite) or RECORDS_LOG_COMMITS
 * (PostgreSQL), see "Positions". */
#define RECORDS_LOG_SEQUENCES 1
#define RECORDS_LOG_COMMITS 2
unsigned records_changelog_numbering(records_store_t *store);

/* A position as an operator reads it (zonecast status): on SQLite the
 * sequence; on PostgreSQL the commit position, "C" for commit C read
 * whole and "C.R" for its first R events (the 64-bit form packs rank R
 * into the low 24 bits, a number nobody can read). */
void records_position_text(records_store_t *store, uint64_t seq, char *out,
                           size_t size);

/* --- Reading: IXFR --- */

/* One record event of the journal; pointers valid during the callback. */
typedef struct {
	uint32_t version;
	bool added;                  /* false: deleted */
	const knot_dname_t *owner;   /* Wire, lowercase. */
	uint16_t type;
	uint32_t ttl;
	const uint8_t *rdata;
	uint16_t rdata_len;
} records_journal_rr_t;

/* The zone's journal start: IXFR from a serial before it is answered in
 * AXFR form; *has false when the zone has none (every IXFR is). */
int records_changelog_journal_start(records_store_t *store, int64_t zone_id,
                                    bool *has, uint32_t *from);

/*
 * Calls cb for every record event of the zone (zone_id, apex, at version
 * `serial` now) with from < version <= to, in log order; cb returns
 * ZC_EOK to go on, anything else stops the read and is returned.
 * ZC_ENOJOURNAL when the journal does not reach back to `from` (trimmed,
 * or a zone-wide change lies in between) or `to` is past `serial`;
 * ZC_ENOZONE when the log knows no such zone. Call it inside a read
 * snapshot that also gave `serial` (records_journal_read() does).
 */
int records_changelog_journal(records_store_t *store, int64_t zone_id,
                              const knot_dname_t *apex, uint32_t serial,
                              uint32_t from, uint32_t to,
                              int (*cb)(const records_journal_rr_t *rr,
                                        void *ctx),
                              void *ctx);

/* --- Reading: status and metrics --- */

/* The change log past a position. */
typedef struct {
	uint64_t last_seq;   /* The newest position. */
	uint64_t events;     /* Events past `after` (SQLite: last_seq -
	                      * after; PostgreSQL: counted). */
	int64_t oldest_ms;   /* Unix ms of the first of them (PostgreSQL:
	                      * of its commit; 0: none). */
} records_backlog_t;

int records_backlog(records_store_t *store, uint64_t after,
                    records_backlog_t *out);

/*
 * Events per zone with positions after < p <= *last_seq, *last_seq being
 * set to the newest position first (one snapshot): cb(zone_id, events,
 * ctx) for each zone that has some (cb returns non-zero to stop). Must
 * not run inside a transaction (it takes its own snapshot).
 */
int records_zone_activity(records_store_t *store, uint64_t after,
                          int (*cb)(int64_t zone_id, uint64_t events,
                                    void *ctx),
                          void *ctx, uint64_t *last_seq);

/* --- Trimming --- */

/*
 * Deletes change-log events older than before_ms (Unix milliseconds) and
 * not past position max_seq (what the builder has applied), never the
 * newest, in its own write transaction (none may be open), about 100,000
 * a call (PostgreSQL: whole commits, at least one); moves each zone's
 * journal start past what went. *removed receives the number of events
 * deleted. On PostgreSQL one node trims at a time (another's trim running
 * makes this one remove nothing), and nothing goes past the lowest
 * applied position of the live nodes (records_node_beat(): a heartbeat
 * within RECORDS_NODE_DOWN_MS, as zonecast status says up); a node down
 * longer holds nothing back.
 */
int records_journal_trim(records_store_t *store, int64_t before_ms,
                         uint64_t max_seq, uint64_t *removed);
