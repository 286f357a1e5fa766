/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Schema step 13 on PostgreSQL, shared by the migration (schema.c) and
 * test_pg_order, which proves the commit order with it: changes_seal is
 * queued for a transaction's first event only.
 *
 * The baseline's trigger was queued for every event and fired at COMMIT
 * once per event; all calls but the first did nothing, after the first had
 * taken the position lock. A batch of 1,000 records spent about 2 ms of
 * its COMMIT in them, every other committer waiting on the lock meanwhile
 * (docs/benchmarks.md, "The seal queued once per transaction").
 *
 * A constraint trigger's WHEN is evaluated when the row is inserted, not
 * deferred: zc_seal_wanted() is true for the transaction's first event and
 * marks the transaction in zonecast.queued (set local). A marker set inside
 * a savepoint that rolls back is rolled back with it, as the queued trigger
 * is, so the next event queues it again: a transaction that commits events
 * always has its one queued seal. zc_seal() keeps its own guard.
 */
#pragma once

#define RECORDS_PG_SEAL_ONCE_SQL \
	"CREATE OR REPLACE FUNCTION zc_seal_wanted() RETURNS boolean" \
	" LANGUAGE plpgsql AS $$" \
	" BEGIN" \
	"  IF current_setting('zonecast.queued', true) IS NOT DISTINCT FROM" \
	"     pg_current_xact_id()::text THEN" \
	"   RETURN false;" \
	"  END IF;" \
	"  PERFORM set_config('zonecast.queued', pg_current_xact_id()::text," \
	"                     true);" \
	"  RETURN true;" \
	" END $$;" \
	"DROP TRIGGER IF EXISTS changes_seal ON changes;" \
	"CREATE CONSTRAINT TRIGGER changes_seal AFTER INSERT ON changes" \
	"  DEFERRABLE INITIALLY DEFERRED" \
	"  FOR EACH ROW WHEN (zc_seal_wanted()) EXECUTE FUNCTION zc_seal();"
