/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Schema step 13 on PostgreSQL, shared by the migration (schema.c) and
 * test_pg_order, which proves the commit order with it: changes_seal is
 * queued for a transaction's first event only.
 *
 * The baseline's trigger was queued for every event and fired at COMMIT
 * once per event; all calls but the first did nothing, after the first had
 * taken the position lock. A batch of 1,000 records spent about 1 ms of
 * its COMMIT in them, every other committer waiting on the lock meanwhile
 * (bench/pg_seal; docs/benchmarks.md, "The seal queued once per
 * transaction").
 *
 * A constraint trigger's WHEN is evaluated when the row is inserted, not
 * deferred. This one is true for the transaction's first event, which
 * marks the transaction in zonecast.queued (set_config local: gone when
 * the transaction ends). A mark set inside a savepoint that rolls back is
 * rolled back with it, as the queued trigger is, so the next event queues
 * it again: a transaction that commits events always has its one queued
 * seal. The mark holds the transaction's id rather than a flag, so that
 * neither a value left by an earlier transaction nor one set for the
 * session passes for this transaction's mark, unless it is set to this
 * transaction's own id on purpose (as zc_seal()'s own guard could be
 * fooled since the baseline): only a session that writes SQL by hand can
 * do that, and such a session can disable the trigger as well.
 *
 * The expression is written out, not a function: a PL/pgSQL call per
 * event cost about 5 us, more than the trigger calls it saves. CASE keeps
 * the test before the mark. zc_seal() keeps its own guard.
 */
#pragma once

#define RECORDS_PG_SEAL_ONCE_SQL \
	"DROP TRIGGER IF EXISTS changes_seal ON changes;" \
	"CREATE CONSTRAINT TRIGGER changes_seal AFTER INSERT ON changes" \
	"  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW" \
	"  WHEN (CASE WHEN current_setting('zonecast.queued', true)" \
	"              IS NOT DISTINCT FROM pg_current_xact_id()::text" \
	"        THEN false" \
	"        ELSE set_config('zonecast.queued'," \
	"                        pg_current_xact_id()::text, true) IS NOT NULL" \
	"        END)" \
	"  EXECUTE FUNCTION zc_seal();"
