/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Internal to records/: struct records_store, the connection (a database
 * driver handle, db.h) and what each file of the store keeps per
 * connection; each field names the file that owns it (the only one that
 * writes it). Every file of the store includes it through internal.h or
 * directly.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "records/db.h"
#include "records/records.h"

#define RECORDS_COUNT_ZONES 8
/* TSIG key ids remembered as alive per write transaction (tsig_keys.c). */
#define RECORDS_TSIG_ALIVE_MAX 16
/* Record ids drawn from PostgreSQL's sequence at once (rows.c). */
#define RECORDS_ID_BLOCK_MIN 16
#define RECORDS_ID_BLOCK_MAX 1024

struct records_store {
	/* store.c: the connection (its statements are the driver's), and
	 * what it connects to (planner_stats.c opens another). */
	rdb_t *db;
	char *target;
	/* changelog.c: the zone_versions row of the unit in progress is
	 * written (dropped at every rollback: the version may be handed
	 * out again). */
	int64_t version_zone;
	uint32_t version_logged;
	/* changelog.c, PostgreSQL: the write transaction's top-level id
	 * (0: not known yet; read with the first event appended, or with a
	 * zone's row locked: records_changelog_xid()), and whether events
	 * were appended since records_changelog_begin(): then
	 * records_changelog_committed() looks the commit up by that id. */
	int64_t log_xid;
	bool log_appended;
	/* query.c: zone id -> apex of the last zone looked up by id (ids
	 * are never reused and apexes never change, so this never goes
	 * stale). */
	int64_t apex_zone;
	uint8_t apex[KNOT_DNAME_MAXLEN];
	/* rows.c: record ids, the next one to hand out. SQLite: read at
	 * the first insert of a write transaction and written back to
	 * counters at its commit. PostgreSQL: drawn from the sequence
	 * record_ids in blocks (ids[ids_at..ids_n) not handed out yet,
	 * dropped at the transaction's end: records_ids_forget()), the
	 * block doubling from RECORDS_ID_BLOCK_MIN within a transaction
	 * (ids_block). */
	bool ids_loaded;
	bool ids_dirty;
	int64_t next_id;
	int64_t ids[RECORDS_ID_BLOCK_MAX];
	size_t ids_at, ids_n, ids_block;
	/* txn.c: inside a write transaction (records_write_begin()), and
	 * the units released in it so far: on PostgreSQL the transaction
	 * holds their row locks (zones) until it ends, so a later unit must
	 * not wait for a lock (zones.c: NOWAIT), which could close a cycle
	 * with another node's batch. */
	bool in_write;
	unsigned units_kept;
	/* Units of this transaction took late savepoints
	 * (records_savepoint_later()): on PostgreSQL their events are rows
	 * gathered across units, and the versions are indexed at the commit
	 * (changelog.c); otherwise (SQLite, or a batch run again unit by
	 * unit) each version at its first event. */
	bool lazy_units;
	/* tsig_keys.c: ids of TSIG keys records_tsig_alive() found in this
	 * write transaction (a fact about a moment after its batch was
	 * formed: it holds for every unit of the batch). */
	int64_t tsig_alive[RECORDS_TSIG_ALIVE_MAX];
	size_t tsig_alive_n;
	/* zones.c: inside a write transaction, the zone row last read
	 * (locked) or written, kept as this connection changed it
	 * (records_zone_get() is the first read of every unit; the committer
	 * runs many per batch). Its serial and modified_on are written to
	 * the row only when the transaction commits or another zone's row
	 * takes its place (zrow_dirty): one UPDATE of the row per batch, not
	 * one per unit, each of which left a version of the row that every
	 * later read and foreign-key check of the batch walked on
	 * PostgreSQL. Saved at the unit's and the inner savepoint and put
	 * back by their rollback; dropped at every transaction boundary and
	 * every other zones write (which first writes what is pending). */
	bool zrow_valid;
	bool zrow_dirty;
	records_zone_t zrow;
	struct records_zrow_saved {
		bool valid, dirty;
		records_zone_t row;
	} zrow_saved[2];
	/* counts.c: records_set_max_records(), 0 for no bound; records per
	 * zone changed in this write transaction, written at its commit;
	 * deltas saved at the unit's and the inner savepoint. */
	uint64_t max_records;
	struct {
		int64_t zone_id, base, delta;
	} counts[RECORDS_COUNT_ZONES];
	size_t count_n;
	int64_t counts_taken; /* Added, written with a serial at commit. */
	int64_t count_saved[2][RECORDS_COUNT_ZONES];
	size_t count_saved_n[2];
	/* prefetch.c: the owners a write transaction's units named before
	 * they ran, and the records at them, read once their zone's row was
	 * locked (NULL until first used). */
	struct records_prefetch *prefetch;
};

/* Current time in Unix milliseconds. */
static inline int64_t records_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
