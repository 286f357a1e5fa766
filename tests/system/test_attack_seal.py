"""Outside test of schema step 13 (commits 72f050c, 7d1abda;
src/records/schema_pg_seal.h): the change log's deferred constraint trigger
changes_seal is queued for a transaction's first insert into `changes` only,
its WHEN marking the transaction in the setting zonecast.queued (set_config
local). At COMMIT zc_seal() gives the transaction its one log_commits row,
by which the builder reads events (docs/postgresql.md, "So positions are
handed out at commit").

The failure hunted: a committed transaction that wrote events but has no
log_commits row (its events would silently never be built), or a marker
that leaks (out of a rolled-back savepoint, into another transaction).
Every test ends by checking, over the whole database, that each committed
xid in `changes` has exactly one position and that no position exists for a
transaction without events.

The SQL scenarios run psql sessions on databases made by this zonecast
(`zonecast zone list` on an empty database: baseline, step 12, step 13);
the end-to-end ones run `zonecast serve` on PostgreSQL and write through the
API and RFC 2136 UPDATE; the migration ones open stores at schema 11 and 12
and move stores with `zonecast migrate` both ways. The cluster is the
session's `pg_cluster` (dev/pg), except for the prepared-transaction test,
which needs max_prepared_transactions and runs its own."""

import os
import re
import subprocess
import threading
import time

import dns.message
import dns.query
import dns.rcode
import dns.update
import pytest

import pg
import servers
from test_attack_pg import zonecast
from test_pg_cluster import SCHEMA, Session, psql, query

EVENT = ("INSERT INTO changes(zone_id, apex, version, kind, okey, type, at)"
         " VALUES (1, '\\x00', %d, 5, '\\x61', 1, 0);")
# The baseline's trigger (schema_pg.sql), as a store at schema 12 has it.
OLD_TRIGGER = ("DROP TRIGGER changes_seal ON changes;"
               " CREATE CONSTRAINT TRIGGER changes_seal AFTER INSERT ON changes"
               " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION zc_seal();")

_serial = iter(range(1, 10 ** 6))


def err(sql):
    """sql, which fails, for a Session (psql stops at other errors)."""
    return "\\set ON_ERROR_STOP 0\n%s\n\\set ON_ERROR_STOP 1" % sql


def bind_dir(path, host, db):
    path.mkdir(parents=True, exist_ok=True)
    with open(os.open(str(path / "records-store"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("postgresql://zc@/%s?host=%s\n" % (db, host))
    return path


def new_db(host, prefix="seal"):
    db = "%s_%d_%d" % (prefix, os.getpid(), next(_serial))
    query(host, "postgres", 'CREATE DATABASE "%s"' % db)
    return db


@pytest.fixture
def current(pg_cluster, tmp_path):
    """A database at this zonecast's schema (made by the zonecast itself)
    with zone 1, for psql sessions."""
    db = new_db(pg_cluster)
    zonecast("zone", "list", "--data-dir", str(bind_dir(tmp_path / "cur", pg_cluster, db)))
    assert query(pg_cluster, db, "SELECT version FROM schema_version") == [
        [str(servers.RECORDS_SCHEMA_VERSION)]]
    query(pg_cluster, db, "INSERT INTO zones(id, name, apex, serial, created_on, modified_on)"
          " VALUES (1, 'a.test.', '\\x01610474657374', 0, 0, 0)")
    yield pg_cluster, db
    query(pg_cluster, "postgres", 'DROP DATABASE "%s" WITH (FORCE)' % db)


def seal_problems(host, db):
    """Committed xids of `changes` without a position, and positions of
    transactions without events (as lines; [] when sealing is whole)."""
    rows = query(host, db,
                 "SELECT 'unsealed xid ' || c.xid || ' events ' || count(*)"
                 " FROM changes c LEFT JOIN log_commits l ON l.xid = c.xid"
                 " WHERE l.pos IS NULL GROUP BY c.xid"
                 " UNION ALL SELECT 'position without events ' || l.pos || ' xid ' || l.xid"
                 " FROM log_commits l WHERE NOT EXISTS"
                 " (SELECT 1 FROM changes c WHERE c.xid = l.xid)"
                 "  AND l.node IS DISTINCT FROM 'zonecast migrate'")
    return [r[0] for r in rows]


def trigger_state(host, db):
    """(count of changes_seal triggers, tgenabled, WHEN present, deferred)."""
    return query(host, db, "SELECT count(*), min(tgenabled), bool_and(tgqual IS NOT NULL),"
                           " bool_and(tgdeferrable AND tginitdeferred) FROM pg_trigger"
                           " WHERE tgname = 'changes_seal'"
                           " AND tgrelid = 'changes'::regclass")[0]


def run_script(s, statements):
    for sql in statements:
        s.run(sql)


def seal_calls(host, db, name, statements):
    """Runs statements in a new session counting PL/pgSQL calls; the
    calls of zc_seal() they made, as psql prints them."""
    s = Session(host, db, name)
    try:
        s.run("SET track_functions = 'pl';")
        run_script(s, statements + ["SELECT pg_stat_force_next_flush();"])
        return s.run("SELECT calls FROM pg_stat_user_functions WHERE funcname = 'zc_seal';")
    finally:
        s.close()


# ---------------------------------------------------------------- SQL level

# (name, statements, versions that must end committed). Each scenario uses
# its own version numbers so the committed events can be told apart.
SCENARIOS = [
    ("released inner savepoint inside a rolled-back outer one, then a write",
     ["BEGIN;", "SAVEPOINT a;", "SAVEPOINT b;", EVENT % 101, "RELEASE b;", "ROLLBACK TO a;",
      EVENT % 102, "COMMIT;"], {102}),
    ("the writer's pattern: first unit rolled back (ROLLBACK TO; RELEASE), second kept",
     ["BEGIN;", "SAVEPOINT zc_unit;", EVENT % 111, EVENT % 111,
      "ROLLBACK TO zc_unit; RELEASE zc_unit;", "SAVEPOINT zc_unit;", EVENT % 112,
      "RELEASE zc_unit;", "COMMIT;"], {112}),
    ("UPDATE's inner savepoint rolled back inside a kept unit, then a write in the unit",
     ["BEGIN;", "SAVEPOINT zc_unit;", "SAVEPOINT zc_inner;", EVENT % 121,
      "ROLLBACK TO zc_inner; RELEASE zc_inner;", EVENT % 122, "RELEASE zc_unit;", "COMMIT;"],
     {122}),
    ("inner rolled back, unit kept without events, next unit writes",
     ["BEGIN;", "SAVEPOINT zc_unit;", "SAVEPOINT zc_inner;", EVENT % 131,
      "ROLLBACK TO zc_inner; RELEASE zc_inner;", "RELEASE zc_unit;", "SAVEPOINT zc_unit;",
      EVENT % 132, "RELEASE zc_unit;", "COMMIT;"], {132}),
    ("three levels: b rolled back, written again, released, a rolled back, c kept",
     ["BEGIN;", "SAVEPOINT a;", "SAVEPOINT b;", EVENT % 141, "ROLLBACK TO b;", EVENT % 141,
      "RELEASE b;", "ROLLBACK TO a;", "SAVEPOINT c;", EVENT % 142, "RELEASE c;", "COMMIT;"],
     {142}),
    ("first event in a released savepoint; a later one rolled back",
     ["BEGIN;", "SAVEPOINT a;", EVENT % 151, "SAVEPOINT b;", EVENT % 152, "ROLLBACK TO b;",
      "RELEASE a;", "COMMIT;"], {151}),
    ("same savepoint name reused (shadowing): inner rolled back, outer kept",
     ["BEGIN;", "SAVEPOINT s;", EVENT % 161, "SAVEPOINT s;", EVENT % 162, "ROLLBACK TO s;",
      "RELEASE s;", "RELEASE s;", "COMMIT;"], {161}),
    ("a PL/pgSQL exception block takes its first event back; the next one is kept",
     ["DO $$ BEGIN BEGIN " + EVENT % 171 + " RAISE EXCEPTION 'x'; EXCEPTION WHEN others"
      " THEN NULL; END; " + EVENT % 172 + " END $$;"], {172}),
    ("SET CONSTRAINTS IMMEDIATE fired the seal in a savepoint that rolls back",
     ["BEGIN;", EVENT % 181, "SAVEPOINT s;", "SET CONSTRAINTS changes_seal IMMEDIATE;",
      "ROLLBACK TO s;", EVENT % 181, "COMMIT;"], {181}),
    ("immediate seal inside a rolled-back savepoint that held the first event",
     ["BEGIN;", "SAVEPOINT s;", "SET CONSTRAINTS ALL IMMEDIATE;", EVENT % 191,
      "ROLLBACK TO s;", EVENT % 192, "COMMIT;"], {192}),
    ("immediate from the start; a rolled-back savepoint in between",
     ["BEGIN;", "SET CONSTRAINTS ALL IMMEDIATE;", EVENT % 201, "SAVEPOINT s;", EVENT % 202,
      "ROLLBACK TO s;", EVENT % 203, "COMMIT;"], {201, 203}),
    ("RESET ALL after the first event (the mark gone: queued twice, sealed once)",
     ["BEGIN;", EVENT % 211, "RESET ALL;", EVENT % 212, "COMMIT;"], {211, 212}),
    ("RESET zonecast.queued inside a rolled-back savepoint",
     ["BEGIN;", EVENT % 221, "SAVEPOINT s;", "RESET zonecast.queued;", EVENT % 222,
      "ROLLBACK TO s;", EVENT % 223, "COMMIT;"], {221, 223}),
    ("a multi-row INSERT failing on its second row inside a savepoint",
     ["BEGIN;", "SAVEPOINT s;",
      err("INSERT INTO changes(zone_id, apex, version, kind, okey, type, at) VALUES"
          " (1, '\\x00', 231, 5, '\\x61', 1, 0), (1, '\\x00', 231, 5, '\\x61', 1, NULL);"),
      "ROLLBACK TO s;", EVENT % 232, "COMMIT;"], {232}),
    ("INSERT ... SELECT of many rows, and a CTE insert",
     ["BEGIN;", "INSERT INTO changes(zone_id, apex, version, kind, okey, type, at)"
      " SELECT 1, '\\x00', 241, 5, int8send(g), 1, 0 FROM generate_series(1, 500) g;",
      "WITH x AS (INSERT INTO changes(zone_id, apex, version, kind, okey, type, at)"
      " VALUES (1, '\\x00', 242, 5, '\\x61', 1, 0) RETURNING 1) SELECT count(*) FROM x;",
      "COMMIT;"], {241, 242}),
    ("one implicit transaction of two statements",
     [(EVENT % 251).rstrip(";") + " \\; " + EVENT % 252], {251, 252}),
    ("an autocommit INSERT", [EVENT % 261], {261}),
    ("a transaction that errors after its first event, then the session writes again",
     ["BEGIN;", EVENT % 271, err("SELECT 1/0;"),
      "ROLLBACK;", "BEGIN;", EVENT % 272, "COMMIT;"], {272}),
    ("ROLLBACK TO a released savepoint errors: the whole transaction goes",
     ["BEGIN;", "SAVEPOINT a;", EVENT % 281, "RELEASE a;",
      err("ROLLBACK TO a;"), "COMMIT;"], set()),
    ("everything rolled back: no position",
     ["BEGIN;", "SAVEPOINT a;", EVENT % 291, "ROLLBACK TO a;", "COMMIT;",
      "BEGIN;", EVENT % 292, "ROLLBACK;"], set()),
    ("a function with SET zonecast.queued restores the mark at its exit",
     ["CREATE FUNCTION ins_set(v int) RETURNS void LANGUAGE plpgsql"
      " SET zonecast.queued = '' AS $$ BEGIN INSERT INTO changes(zone_id, apex, version,"
      " kind, okey, type, at) VALUES (1, '\\x00', v, 5, '\\x61', 1, 0); END $$;",
      "BEGIN;", "SELECT ins_set(301);", EVENT % 302, "SELECT ins_set(303);", "COMMIT;"],
     {301, 302, 303}),
]


def test_the_mark_follows_savepoints_errors_and_statements(current):
    """Every scenario of SCENARIOS, one after another in ONE session (so a
    mark leaking out of one would show in the next): the versions a
    scenario commits are there, those it rolls back are not, and each
    committed transaction has exactly one position; no transaction whose
    events all rolled back took one."""
    host, db = current
    s = Session(host, db, "scenarios")
    try:
        for name, statements, kept in SCENARIOS:
            run_script(s, statements)
            versions = {int(v[0]) for v in query(host, db, "SELECT DISTINCT version FROM"
                                                           " changes")}
            mine = {v for v in versions if v // 10 == int(min(kept or {0}) // 10)} \
                if kept else set()
            assert mine == kept, (name, sorted(versions))
            problems = seal_problems(host, db)
            assert not problems, (name, problems)
        # The scenarios that roll everything back left no version behind.
        versions = {int(v[0]) for v in query(host, db, "SELECT DISTINCT version FROM changes")}
        assert not versions & {271, 281, 291, 292, 101, 111, 121, 131, 141, 152, 162, 171,
                               191, 202, 222, 231}, sorted(versions)
        # One position per committed transaction, and nothing else.
        assert query(host, db, "SELECT count(DISTINCT xid) FROM changes") == \
            query(host, db, "SELECT count(*) FROM log_commits")
    finally:
        s.close()


def test_the_seal_runs_once_for_many_events(current):
    """A transaction of 300 events (one by one and in one statement)
    calls zc_seal() once at COMMIT: the WHEN queues one seal, not one per
    event; one with a rolled-back first unit calls it once too."""
    host, db = current
    calls = seal_calls(host, db, "counter", ["BEGIN;"] + [EVENT % 1] * 100 + [
        "INSERT INTO changes(zone_id, apex, version, kind, okey, type, at)"
        " SELECT 1, '\\x00', 2, 5, int8send(g), 1, 0 FROM generate_series(1, 200) g;",
        "COMMIT;",
        "BEGIN;", "SAVEPOINT u;", EVENT % 3, "ROLLBACK TO u;", EVENT % 4, EVENT % 4,
        "COMMIT;"])
    assert calls == ["2"], calls
    assert seal_problems(host, db) == []
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["2"]]


def test_a_stale_or_foreign_mark_does_not_turn_sealing_off(current):
    """Marks that are not the running transaction's own id are ignored:
    a session-level SET zonecast.queued (any text, an old xid), the value a
    previous transaction of the session left (set local: gone), a value
    set in another session, ALTER ROLE/DATABASE defaults; each transaction
    after them is sealed."""
    host, db = current
    query(host, "postgres", "ALTER DATABASE \"%s\" SET zonecast.queued = '1'" % db)
    a, b = Session(host, db, "a"), Session(host, db, "b")
    try:
        assert a.run("SHOW zonecast.queued;") == ["1"]
        run_script(a, ["BEGIN;", EVENT % 1, "COMMIT;"])
        # The previous transaction's own id, now at session level.
        old = a.run("SELECT xid FROM changes ORDER BY seq DESC LIMIT 1;")[0]
        run_script(a, ["SET zonecast.queued = '%s';" % old, "BEGIN;", EVENT % 2, "COMMIT;",
                       "SET zonecast.queued = 'true';", "BEGIN;", EVENT % 3, "COMMIT;",
                       "RESET zonecast.queued;"])
        # A mark left by a transaction (set local) is gone after it.
        a.run("BEGIN;")
        a.run(EVENT % 4)
        mark = a.run("SELECT current_setting('zonecast.queued', true);")[0]
        assert mark == a.run("SELECT pg_current_xact_id()::text;")[0]
        a.run("COMMIT;")
        assert a.run("SELECT current_setting('zonecast.queued', true);")[0] != mark
        run_script(a, ["BEGIN;", EVENT % 5, "COMMIT;"])
        # Two sessions interleaved: one's mark is not the other's.
        a.run("BEGIN;")
        b.run("BEGIN;")
        a.run(EVENT % 6)
        b.run(EVENT % 7)
        a.run(EVENT % 6)
        b.run(EVENT % 7)
        b.run("COMMIT;")
        a.run("COMMIT;")
    finally:
        a.close()
        b.close()
    assert seal_problems(host, db) == []
    assert query(host, db, "SELECT count(DISTINCT xid), count(*) FROM changes") == [["7", "9"]]
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["7"]]


def test_copy_into_changes_is_sealed(current):
    """COPY FROM into changes (what a hand-made bulk load would do with the
    trigger on) evaluates the WHEN per row: one position for the copy."""
    host, db = current
    rows = "".join("1\t\\\\x00\t7\t5\t\\\\x%02x\t1\t0\n" % i for i in range(1, 200))
    res = psql(host, db, "-c", "BEGIN", "-c",
               "COPY changes(zone_id, apex, version, kind, okey, type, at) FROM STDIN",
               "-c", "COMMIT", input=rows)
    # psql -c with COPY FROM STDIN reads psql's stdin.
    assert res.returncode == 0, res.stderr
    assert query(host, db, "SELECT count(*), count(DISTINCT xid) FROM changes") == [
        ["199", "1"]]
    assert seal_problems(host, db) == []
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["1"]]


def test_prepare_transaction_cannot_commit_unsealed_events(tmp_path):
    """PREPARE TRANSACTION fires the deferred seal at PREPARE; the seal's
    NOTIFY makes PostgreSQL refuse to prepare, so a two-phase commit can
    never commit events (with or without a position). Needs
    max_prepared_transactions, so on a cluster of its own."""
    with pg.own_cluster("zcseal2pc.") as host:
        query(host, "postgres", "ALTER SYSTEM SET max_prepared_transactions = 4")
        subprocess.run([pg.DEV_PG, "stop", host], check=True, capture_output=True)
        subprocess.run([pg.DEV_PG, "start", host], check=True, capture_output=True)
        db = new_db(host)
        zonecast("zone", "list", "--data-dir", str(bind_dir(tmp_path / "d", host, db)))
        query(host, db, "INSERT INTO zones(id, name, apex, serial, created_on, modified_on)"
              " VALUES (1, 'a.test.', '\\x01610474657374', 0, 0, 0)")
        for extra in ("", "SET CONSTRAINTS ALL IMMEDIATE;", "SAVEPOINT s;"):
            res = psql(host, db, "-c", "BEGIN; %s %s PREPARE TRANSACTION 'p';"
                       % (EVENT % 1, extra))
            assert "cannot PREPARE a transaction that has executed LISTEN, UNLISTEN, or" \
                " NOTIFY" in res.stderr, res.stderr
        assert query(host, db, "SELECT count(*) FROM pg_prepared_xacts") == [["0"]]
        assert query(host, db, "SELECT count(*) FROM changes") == [["0"]]
        assert query(host, db, "SELECT count(*) FROM log_commits") == [["0"]]


# ---------------------------------------------------------------- migration

def test_a_store_at_schema_11_moves_to_13_and_a_second_open_is_a_no_op(pg_cluster, tmp_path):
    """A store loaded at the baseline (schema 11) with events sealed by the
    old per-event trigger: opened by this zonecast it is at 13 with one
    changes_seal, enabled, deferred, with its WHEN; opened again nothing
    changes (same trigger oid, no step logged); old and new transactions
    all have their position, new ones with one zc_seal() call each."""
    host = pg_cluster
    db = new_db(host)
    res = psql(host, db, "-1", "-f", SCHEMA)
    assert res.returncode == 0, res.stderr
    query(host, db, "INSERT INTO zones(id, name, apex, serial, created_on, modified_on)"
          " VALUES (1, 'a.test.', '\\x01610474657374', 0, 0, 0)")
    assert trigger_state(host, db) == ["1", "O", "f", "t"]
    psql(host, db, "-c", "BEGIN; %s %s COMMIT;" % (EVENT % 1, EVENT % 1))
    d = bind_dir(tmp_path / "d", host, db)
    first = zonecast("zone", "list", "--data-dir", str(d))
    assert "schema 11 to 12" in first.stderr and "schema 12 to 13" in first.stderr, first.stderr
    assert query(host, db, "SELECT version FROM schema_version") == [["13"]]
    assert trigger_state(host, db) == ["1", "O", "t", "t"]
    oid = query(host, db, "SELECT oid FROM pg_trigger WHERE tgname = 'changes_seal'")
    again = zonecast("zone", "list", "--data-dir", str(d))
    assert "schema" not in again.stderr, again.stderr
    assert query(host, db, "SELECT oid FROM pg_trigger WHERE tgname = 'changes_seal'") == oid
    assert query(host, db, "SELECT version FROM schema_version") == [["13"]]
    # No helper function of the first version of the change left behind.
    assert query(host, db, "SELECT count(*) FROM pg_proc WHERE proname LIKE 'zc_seal%'") == [
        ["1"]]
    calls = seal_calls(host, db, "after", ["BEGIN;", EVENT % 2, EVENT % 2, EVENT % 2,
                                           "COMMIT;"])
    assert calls == ["1"], calls
    assert seal_problems(host, db) == []
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["2"]]


def test_schema_12_to_13_with_a_writer_in_flight_and_nodes_opening_at_once(pg_cluster,
                                                                           tmp_path):
    """A store at schema 12 (old trigger) with a transaction that has
    queued old-style seals and is still open: four `zonecast zone list`
    opening it at once wait for it (the step's DROP TRIGGER needs the
    table), the writer adds an event and commits, and then exactly one of
    them moves the store to 13; all succeed. The in-flight transaction is
    sealed once, and transactions after it are sealed by the new
    trigger."""
    host = pg_cluster
    db = new_db(host)
    d = bind_dir(tmp_path / "d", host, db)
    zonecast("zone", "list", "--data-dir", str(d))
    query(host, db, "INSERT INTO zones(id, name, apex, serial, created_on, modified_on)"
          " VALUES (1, 'a.test.', '\\x01610474657374', 0, 0, 0)")
    query(host, db, OLD_TRIGGER + " UPDATE schema_version SET version = 12;")
    assert trigger_state(host, db) == ["1", "O", "f", "t"]
    w = Session(host, db, "inflight")
    procs = []
    try:
        run_script(w, ["BEGIN;", EVENT % 1, EVENT % 1])
        procs = [subprocess.Popen([servers.zonecast_bin(), "zone", "list", "--data-dir",
                                   str(d)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(4)]
        servers.wait_for("a migrator waiting for the table lock", lambda: query(
            host, db, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation ="
                      " 'changes'::regclass") != [["0"]], timeout=20)
        time.sleep(0.3)
        assert all(p.poll() is None for p in procs)
        w.run(EVENT % 1)
        w.run("COMMIT;")
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        w.close()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    steps = sum(err.count("schema 12 to 13") for _, err in outs)
    assert steps == 1, [err for _, err in outs]
    assert query(host, db, "SELECT version FROM schema_version") == [["13"]]
    assert trigger_state(host, db) == ["1", "O", "t", "t"]
    psql(host, db, "-c", "BEGIN; %s %s COMMIT;" % (EVENT % 2, EVENT % 2))
    assert seal_problems(host, db) == []
    assert query(host, db, "SELECT count(*), count(DISTINCT xid) FROM changes") == [["5", "2"]]
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["2"]]


def test_migrate_sqlite_postgresql_sqlite_postgresql(pg_cluster, tmp_path):
    """`zonecast migrate` SQLite -> PostgreSQL (COPY with the trigger
    disabled, one log_commits row written by the copy) leaves changes_seal
    enabled WITH its WHEN; writes by API and UPDATE on the moved store are
    sealed, served and verified; back to SQLite and to PostgreSQL again
    (a second database) the same."""
    if servers.RECORDS_BACKEND == "postgresql":
        pytest.skip("the server starts on SQLite here")
    zf = tmp_path / "mig.zone"
    zf.write_text("$ORIGIN mig.test.\n$TTL 300\n@ SOA ns hostmaster 1 7200 900 1209600 300\n"
                  "@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.1\n")
    srv = servers.ZonecastServer(str(tmp_path / "srv"), zones={"mig.test.": str(zf)},
                                 api=True, options=["allow-update=127.0.0.1"])
    srv.start()
    try:
        token = srv.create_token()
        api = srv.client(token)
        zid = api.zone_id("mig.test")
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               {"type": "A", "name": "s0.mig.test", "content": "192.0.2.10"})
        for round_, to in enumerate(("pg", "sqlite", "pg")):
            assert not srv.stop()
            if to == "pg":
                db = new_db(pg_cluster, "mig")
                uri = "postgresql://zc@/%s?host=%s" % (db, pg_cluster)
            else:
                uri = "sqlite"
            cp = srv.run_cli("migrate", "--data-dir", srv.data_dir, "--to", uri, check=False)
            assert cp.returncode == 0, cp.stdout + cp.stderr
            if to == "pg":
                assert trigger_state(pg_cluster, db) == ["1", "O", "t", "t"]
                assert query(pg_cluster, db, "SELECT count(*), min(node) FROM log_commits") == [
                    ["1", "zonecast migrate"]]
                assert seal_problems(pg_cluster, db) == []
            srv.restart()
            for i in range(3):
                api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
                       {"type": "A", "name": "r%d-%d.mig.test" % (round_, i),
                        "content": "192.0.2.%d" % (20 + i)})
            up = dns.update.UpdateMessage("mig.test.")
            up.add("u%d" % round_, 60, "TXT", '"round %d"' % round_)
            assert dns.query.tcp(up, "127.0.0.1", port=srv.port,
                                 timeout=5).rcode() == dns.rcode.NOERROR
            servers.wait_for("the UPDATE served", lambda: answer(
                srv.port, "u%d.mig.test." % round_, "TXT") == ['"round %d"' % round_])
            for r in range(round_ + 1):
                for i in range(3):
                    assert answer(srv.port, "r%d-%d.mig.test." % (r, i)) == [
                        "192.0.2.%d" % (20 + i)]
            assert answer(srv.port, "s0.mig.test.") == ["192.0.2.10"]
            if to == "pg":
                assert seal_problems(pg_cluster, db) == []
                assert int(query(pg_cluster, db, "SELECT count(*) FROM log_commits")[0][0]) >= 5
            servers.verify_clean(srv)
    finally:
        srv.stop()


# ---------------------------------------------------------------- end to end

def answer(port, name, rdtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port, timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


PROBE = """
CREATE FUNCTION zt_probe() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE LOG 'zcprobe % % %', current_database(), pg_current_xact_id(), NEW.seq;
  IF NEW.zone_id = (SELECT id FROM zones WHERE name = 'slow.test.') THEN
    PERFORM pg_sleep(0.25);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER zt_probe BEFORE INSERT ON changes FOR EACH ROW EXECUTE FUNCTION zt_probe();
"""


def probed(host, db):
    """{xid: [seq, ...]} of every event ever inserted (committed or not),
    from the server log (RAISE LOG of the probe trigger)."""
    got = {}
    with open(os.path.join(host, "log"), errors="replace") as f:
        for m in re.finditer(r"zcprobe %s (\d+) (\d+)" % re.escape(db), f.read()):
            got.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return got


def zone_text(zone):
    return ("$ORIGIN %s.\n$TTL 300\n@ SOA ns hostmaster 1 7200 900 1209600 300\n"
            "@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.1\n" % zone)


@pytest.fixture
def pg_node(pg_cluster, tmp_path):
    db = new_db(pg_cluster, "node")
    uri = "postgresql://zc@/%s?host=%s" % (db, pg_cluster)
    srv = pg.serve_node(tmp_path, "n", uri)
    try:
        for zone in ("slow.test", "fast.test"):
            zf = tmp_path / (zone + ".zone")
            zf.write_text(zone_text(zone))
            zonecast("zone", "import", "--data-dir", srv.data_dir, zone + ".", str(zf))
        query(pg_cluster, db, PROBE)
        srv.db = db
        yield srv
    finally:
        srv.stop()


def test_rolled_back_first_units_in_a_group_commit_do_not_lose_the_next_ones(pg_node,
                                                                              pg_cluster):
    """A slow write to slow.test holds the writer; meanwhile a write that
    fails after writing events (an API batch whose second post is refused,
    or an UPDATE adding and deleting the same record: its inner savepoint
    rolls back) and then good writes (API ?wait=live, UPDATE) queue up and
    run as one group commit, the failing unit first. The good writes are
    answered (wait=live would time out if their transaction had no
    position) and served over DNS, `zonecast verify` is clean, every
    committed xid has its position; the server log of a probe trigger
    shows transactions whose FIRST events were rolled back and whose later
    events committed: the case where the mark had to be queued again."""
    srv, host, db = pg_node, pg_cluster, pg_node.db
    api = srv.client()
    slow, fast = api.zone_id("slow.test"), api.zone_id("fast.test")
    results = {}

    def post(key, zid, body, path="dns_records?wait=live"):
        r = api.call("POST", "/zones/%s/%s" % (zid, path), json=body, timeout=60)
        results[key] = (r.status_code, r.text[:300])

    def update(key, build):
        up = dns.update.UpdateMessage("fast.test.")
        build(up)
        results[key] = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20).rcode()

    good_names = []
    for rnd in range(4):
        steps = [threading.Thread(target=post, args=(
            "slow%d" % rnd, slow, {"type": "A", "name": "w%d.slow.test" % rnd,
                                   "content": "192.0.2.9"}))]
        if rnd % 2 == 0:
            # Refused after its first post wrote: a CNAME where the batch
            # just put an A.
            steps.append(threading.Thread(target=post, args=(
                "bad%d" % rnd, fast, {"posts": [
                    {"type": "A", "name": "x%d.fast.test" % rnd, "content": "192.0.2.66"},
                    {"type": "CNAME", "name": "x%d.fast.test" % rnd,
                     "content": "www.fast.test"}]}, "dns_records/batch")))
        else:
            steps.append(threading.Thread(target=update, args=(
                "bad%d" % rnd, lambda up, r=rnd: (
                    up.add("t%d" % r, 60, "A", "192.0.2.77"),
                    up.delete("t%d" % r, "A", "192.0.2.77")))))
        steps.append(threading.Thread(target=post, args=(
            "good%d" % rnd, fast, {"type": "A", "name": "g%d.fast.test" % rnd,
                                   "content": "192.0.2.%d" % (30 + rnd)})))
        steps.append(threading.Thread(target=update, args=(
            "upd%d" % rnd, lambda up, r=rnd: up.add("u%d" % r, 60, "TXT", '"ok %d"' % r))))
        good_names.append(("g%d.fast.test." % rnd, "A", ["192.0.2.%d" % (30 + rnd)]))
        good_names.append(("u%d.fast.test." % rnd, "TXT", ['"ok %d"' % rnd]))
        good_names.append(("w%d.slow.test." % rnd, "A", ["192.0.2.9"]))
        for i, t in enumerate(steps):
            t.start()
            time.sleep(0.12 if i == 0 else 0.04)
        for t in steps:
            t.join(timeout=90)
        assert results["slow%d" % rnd][0] == 200, results
        assert results["good%d" % rnd][0] == 200, results
        assert results["upd%d" % rnd] == dns.rcode.NOERROR, results
        if rnd % 2 == 0:
            assert results["bad%d" % rnd][0] != 200, results
        else:
            assert results["bad%d" % rnd] == dns.rcode.NOERROR, results
    for name, rdtype, want in good_names:
        servers.wait_for("%s served" % name, lambda: answer(srv.port, name, rdtype) == want)
    for rnd in range(4):
        assert answer(srv.port, "x%d.fast.test." % rnd) == []
        assert answer(srv.port, "t%d.fast.test." % rnd) == []
    assert seal_problems(host, db) == []
    servers.verify_clean(srv)
    # The scenario happened: a committed transaction whose first event
    # (smallest seq it inserted) was rolled back.
    committed = {int(x): set(int(s) for s in seqs.split(",")) for x, seqs in query(
        host, db, "SELECT xid, string_agg(seq::text, ',') FROM changes GROUP BY xid")}
    first_lost = [x for x, seqs in probed(host, db).items()
                  if x in committed and min(seqs) not in committed[x]]
    grouped = [x for x, seqs in committed.items() if len(seqs) > 1]
    assert first_lost, "no group commit began with a rolled-back unit; probe %r" % \
        probed(host, db)
    assert grouped


def test_mixed_writers_on_a_postgresql_node(pg_node, pg_cluster):
    """A short burst from 6 threads (API single writes, API batches that are
    refused after writing, UPDATEs with a failing prerequisite, UPDATEs
    that add and delete again, good UPDATEs): every acknowledged write is
    served, none of the refused ones, every committed transaction has its
    position, `zonecast verify` is clean."""
    srv, host, db = pg_node, pg_cluster, pg_node.db
    query(host, db, "DROP TRIGGER zt_probe ON changes")
    api = srv.client()
    fast = api.zone_id("fast.test")
    want, unwanted, errors = {}, set(), []
    lock = threading.Lock()

    def worker(w):
        try:
            for i in range(8):
                kind = (w + i) % 5
                name = "m%d-%d" % (w, i)
                if kind == 0:
                    r = api.call("POST", "/zones/%s/dns_records" % fast, json={
                        "type": "A", "name": name + ".fast.test", "content": "192.0.2.1"})
                    assert r.status_code == 200, r.text
                    with lock:
                        want[name] = ("A", ["192.0.2.1"])
                elif kind == 1:
                    r = api.call("POST", "/zones/%s/dns_records/batch" % fast, json={"posts": [
                        {"type": "A", "name": name + ".fast.test", "content": "192.0.2.2"},
                        {"type": "CNAME", "name": name + ".fast.test",
                         "content": "www.fast.test"}]})
                    assert r.status_code != 200, r.text
                    with lock:
                        unwanted.add(name)
                elif kind == 2:
                    up = dns.update.UpdateMessage("fast.test.")
                    up.present("nothere-%s" % name)
                    up.add(name, 60, "A", "192.0.2.3")
                    rc = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20).rcode()
                    assert rc == dns.rcode.NXDOMAIN, rc
                    with lock:
                        unwanted.add(name)
                elif kind == 3:
                    up = dns.update.UpdateMessage("fast.test.")
                    up.add(name, 60, "A", "192.0.2.4")
                    up.delete(name, "A", "192.0.2.4")
                    rc = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20).rcode()
                    assert rc == dns.rcode.NOERROR, rc
                    with lock:
                        unwanted.add(name)
                else:
                    up = dns.update.UpdateMessage("fast.test.")
                    up.add(name, 60, "TXT", '"%s"' % name)
                    rc = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=20).rcode()
                    assert rc == dns.rcode.NOERROR, rc
                    with lock:
                        want[name] = ("TXT", ['"%s"' % name])
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for name, (rdtype, rdata) in want.items():
        servers.wait_for("%s served" % name, lambda: answer(
            srv.port, name + ".fast.test.", rdtype) == rdata)
    for name in unwanted:
        assert answer(srv.port, name + ".fast.test.") == []
    assert seal_problems(host, db) == []
    servers.verify_clean(srv)
