"""The records store's PostgreSQL schema in a real cluster (issue 17,
docs/postgresql.md): src/records/schema_pg.sql loads with psql, and its seal
trigger gives each transaction that writes change-log events one position
at COMMIT, in commit order, whatever order the events' sequence numbers
have. Two psql sessions commit out of order; a third listens for the
builder's wake-up. The cluster is the session's `pg_cluster` (dev/pg)."""

import os
import select
import subprocess
import time

import pytest

import servers

SCHEMA = os.path.join(servers.REPO, "src", "records", "schema_pg.sql")
TABLES = {"schema_version", "zones", "records", "changes", "zone_versions", "log_commits",
          "tokens", "tsig_keys", "dnssec_keys", "zone_secondaries", "counters", "leader",
          "nodes"}
EVENT = ("INSERT INTO changes(zone_id, apex, version, kind, okey, type, at)"
         " VALUES (%d, '\\x00', %d, 5, '\\x61', 1, 0) RETURNING seq;")


def psql_bin():
    out = subprocess.run([os.path.join(servers.REPO, "dev", "pg"), "bindir"],
                         capture_output=True, text=True, check=True)
    return os.path.join(out.stdout.strip(), "psql")


def psql(host, db, *args, **kw):
    """Runs psql once (unaligned, tuples only, stop at the first error)."""
    return subprocess.run([psql_bin(), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                           "-h", host, "-U", "zc", "-d", db] + list(args),
                          capture_output=True, text=True, timeout=60, **kw)


def query(host, db, sql):
    res = psql(host, db, "-c", sql)
    assert res.returncode == 0, res.stderr
    return [line.split("|") for line in res.stdout.splitlines() if line]


class Session:
    """An interactive psql: statements go in one at a time, and each call
    waits for its output, so that transactions stay open between calls."""

    def __init__(self, host, db, name):
        self.proc = subprocess.Popen(
            [psql_bin(), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", host, "-U", "zc",
             "-d", db],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=dict(os.environ, PGAPPNAME=name))
        self.marks = 0
        self.pending = b""

    def send(self, sql, mark):
        self.proc.stdin.write(("%s\n\\echo %s\n" % (sql, mark)).encode())
        self.proc.stdin.flush()

    def wait_mark(self, mark, timeout):
        """The lines printed up to `mark`; None if it did not come within
        `timeout` seconds. Reads the pipe itself, without a buffered reader
        that select() would not see."""
        deadline = time.monotonic() + timeout
        while b"\n" + mark.encode() + b"\n" not in b"\n" + self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "psql exited; it printed %r" % self.pending
            self.pending += chunk
        lines = self.pending.decode().split("\n")
        end = lines.index(mark)
        self.pending = "\n".join(lines[end + 1:]).encode()
        return lines[:end]

    def run(self, sql, timeout=30):
        """Sends `sql`, returns the lines it printed (notification lines
        included)."""
        self.marks += 1
        mark = "--mark-%d--" % self.marks
        self.send(sql, mark)
        lines = self.wait_mark(mark, timeout)
        assert lines is not None, "psql did not answer %r; so far %r" % (sql, self.pending)
        return lines

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def store(pg_cluster, request):
    """A fresh database with the baseline schema loaded by psql."""
    db = "t_%d_%s" % (os.getpid(), request.node.name.lower()[:40])
    query(pg_cluster, "postgres", 'CREATE DATABASE "%s"' % db)
    res = psql(pg_cluster, db, "-1", "-f", SCHEMA)
    assert res.returncode == 0, res.stderr
    query(pg_cluster, db, "INSERT INTO zones(id, name, apex, serial, created_on, modified_on)"
          " VALUES (1, 'a.test.', '\\x01610474657374', 0, 0, 0),"
          " (2, 'b.test.', '\\x01620474657374', 0, 0, 0)")
    yield pg_cluster, db
    query(pg_cluster, "postgres", 'DROP DATABASE "%s" WITH (FORCE)' % db)


def test_schema_loads(store):
    host, db = store
    tables = {row[0] for row in query(host, db, "SELECT tablename FROM pg_tables"
                                                " WHERE schemaname = 'public'")}
    assert tables == TABLES
    assert query(host, db, "SELECT version FROM schema_version") == [["11"]]
    assert query(host, db, "SELECT name, value FROM counters ORDER BY name") == [
        ["record_id", "0"], ["secondaries", "0"]]
    # The trigger is deferred to COMMIT; the position sequence has no cache.
    assert query(host, db, "SELECT tgdeferrable, tginitdeferred FROM pg_trigger"
                           " WHERE tgname = 'changes_seal'") == [["t", "t"]]
    assert query(host, db, "SELECT seqcache FROM pg_sequence"
                           " WHERE seqrelid = 'log_pos'::regclass") == [["1"]]


def test_positions_follow_commit_order(store):
    host, db = store
    first, second = Session(host, db, "first"), Session(host, db, "second")
    listener = Session(host, db, "builder")
    try:
        listener.run("LISTEN zonecast_log;")
        # The first session writes first, so its events have the smaller
        # sequence numbers; the second commits first.
        first.run("BEGIN;")
        seq_first = [int(first.run(EVENT % (1, 1))[0]), int(first.run(EVENT % (1, 1))[0])]
        second.run("BEGIN;")
        seq_second = int(second.run(EVENT % (2, 1))[0])
        assert seq_first[1] < seq_second
        # Nothing is sealed before COMMIT: the trigger is deferred.
        assert second.run("SELECT count(*) FROM log_commits;") == ["0"]
        xid_second = second.run("SELECT pg_current_xact_id();")[0]
        second.run("COMMIT;")
        xid_first = first.run("SELECT pg_current_xact_id();")[0]
        # A reader of seq > last has passed the first session's events
        # by now, for good.
        assert query(host, db, "SELECT max(seq) FROM changes") == [[str(seq_second)]]
        first.run("COMMIT;")

        # One position per transaction, in the order of the commits.
        assert query(host, db, "SELECT pos, xid, node FROM log_commits ORDER BY pos") == [
            ["1", xid_second, "second"], ["2", xid_first, "first"]]
        # The reader's query of design §2.2 returns the events by commit.
        rows = query(host, db, "SELECT c.pos, e.seq FROM log_commits c"
                               " JOIN changes e ON e.xid = c.xid ORDER BY c.pos, e.seq")
        assert rows == [["1", str(seq_second)], ["2", str(seq_first[0])],
                        ["2", str(seq_first[1])]]
        # Each sealed commit woke the listener.
        notes = [line for line in listener.run("SELECT 1;") if "zonecast_log" in line]
        assert len(notes) == 2, notes
    finally:
        for s in (first, second, listener):
            s.close()


def test_rolled_back_events_take_no_position(store):
    host, db = store
    # Events only in a rolled-back savepoint, and a transaction rolled back
    # whole: no position. Then a transaction that writes again in the same
    # session is sealed once more.
    session = Session(host, db, "writer")
    try:
        session.run("BEGIN; SAVEPOINT unit;")
        session.run(EVENT % (1, 1))
        session.run("ROLLBACK TO unit; RELEASE unit; COMMIT;")
        session.run("BEGIN;")
        session.run(EVENT % (1, 1))
        session.run("ROLLBACK;")
        assert query(host, db, "SELECT count(*) FROM log_commits") == [["0"]]
        for version in (1, 2):
            session.run("BEGIN;")
            session.run(EVENT % (1, version))
            session.run("COMMIT;")
        assert query(host, db, "SELECT pos FROM log_commits ORDER BY pos") == [["1"], ["2"]]
        assert query(host, db, "SELECT count(DISTINCT xid), count(*) FROM changes") == [
            ["2", "2"]]
    finally:
        session.close()


def test_seal_waits_for_the_previous_commit(store):
    """The position lock is held until the commit is visible: a second
    transaction's COMMIT waits while the first holds it."""
    host, db = store
    holder, waiter = Session(host, db, "holder"), Session(host, db, "waiter")
    try:
        holder.run("BEGIN;")
        holder.run(EVENT % (1, 1))
        # Take the seal's lock now, as the trigger does at COMMIT.
        holder.run("SELECT pg_advisory_xact_lock(2053990243, 1);")
        waiter.run("BEGIN;")
        waiter.run(EVENT % (2, 1))
        waiter.send("COMMIT;", "--committed--")
        assert waiter.wait_mark("--committed--", 1.0) is None, \
            "COMMIT did not wait for the position lock"
        holder.run("COMMIT;")
        assert waiter.wait_mark("--committed--", 30) == []
        assert query(host, db, "SELECT node FROM log_commits ORDER BY pos") == [
            ["holder"], ["waiter"]]
    finally:
        holder.close()
        waiter.close()


GONE = "'\\x04676f6e650474657374'"  # gone.test. in wire form, without the root label
GONE_APEX = GONE[:-1] + "00'"


def test_an_older_store_moves_on_to_this_schema(store, tmp_path):
    """A store at the baseline (version 11, loaded by psql with rows in
    it) opened by zonecast moves to the current schema in place (schema.c):
    the tombstones come from the change log's last ZONE_DELETED event per
    apex, the records lose their foreign key to zones (a zone's delete
    removes them itself), and a zone made again under a deleted name
    starts after the deleted zone's serial."""
    host, db = store
    # The fixture gave the zones their ids: new ones come after them.
    query(host, db, "SELECT setval(pg_get_serial_sequence('zones', 'id'), 2)")
    query(host, db, "INSERT INTO records(id, zone_id, okey, owner, type, ttl, rdata,"
                    " created_on, modified_on) VALUES"
                    " (900000, 1, '\\x', '\\x01610474657374', 1, 300, '\\xc0000201', 0, 0)")
    # Two deletions of gone.test., the later one (larger seq) at a larger
    # serial; and a deletion of another name.
    for version, apex in ((7, GONE_APEX), (2000000000, GONE_APEX),
                          (9, "'\\x0161047465737400'")):
        query(host, db, "INSERT INTO changes(zone_id, apex, version, kind, at)"
                        " VALUES (9, %s, %d, 2, 0)" % (apex, version))
    data = tmp_path / "data"
    data.mkdir()
    (data / "records-store").write_text("postgresql://zc@/%s?host=%s\n" % (db, host))
    run = lambda *args: subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                                       text=True, timeout=120)
    listed = run("zone", "list", "--data-dir", str(data))
    assert listed.returncode == 0, listed.stderr
    assert "a.test" in listed.stdout and "b.test" in listed.stdout
    assert query(host, db, "SELECT version FROM schema_version") == [
        [str(servers.RECORDS_SCHEMA_VERSION)]]
    assert query(host, db, "SELECT encode(apex, 'hex'), serial FROM zone_tombstones"
                           " ORDER BY apex") == [["0161047465737400", "9"],
                                                 ["04676f6e65047465737400", "2000000000"]]
    assert query(host, db, "SELECT count(*) FROM pg_constraint"
                           " WHERE conrelid = 'records'::regclass AND contype = 'f'") == [["0"]]
    # Opened again: nothing more to do.
    assert run("zone", "list", "--data-dir", str(data)).returncode == 0
    assert query(host, db, "SELECT version FROM schema_version") == [
        [str(servers.RECORDS_SCHEMA_VERSION)]]

    # gone.test. imported with serial 1 starts after the deleted zone's.
    zone_file = tmp_path / "gone.zone"
    zone_file.write_text("$ORIGIN gone.test.\n@ 300 SOA ns hostmaster 1 7200 900 1209600 300\n"
                         "@ 300 NS ns\nns 300 A 192.0.2.53\n")
    imported = run("zone", "import", "--data-dir", str(data), "gone.test", str(zone_file))
    assert imported.returncode == 0, imported.stderr
    assert query(host, db, "SELECT serial FROM zones WHERE name = 'gone.test.'") == [
        ["2000000001"]]

    # A delete removes the zone's records itself and keeps its serial.
    zone_id = query(host, db, "SELECT id FROM zones WHERE name = 'gone.test.'")[0][0]
    assert query(host, db, "SELECT count(*) FROM records WHERE zone_id = %s" % zone_id) == [["3"]]
    query(host, db, "UPDATE zones SET serial = 2000000077 WHERE id = %s" % zone_id)
    deleted = run("zone", "delete", "--force", "--data-dir", str(data), "gone.test")
    assert deleted.returncode == 0, deleted.stderr
    assert query(host, db, "SELECT count(*) FROM records WHERE zone_id = %s" % zone_id) == [["0"]]
    assert query(host, db, "SELECT serial FROM zone_tombstones WHERE apex = %s" % GONE_APEX) == [
        ["2000000077"]]


def test_the_seal_is_queued_once_per_transaction(store, tmp_path):
    """Schema step 13 (src/records/schema_pg_seal.h): changes_seal is
    queued for a transaction's first event only, so COMMIT runs zc_seal()
    once, not once per event; an event whose savepoint rolled back takes
    its mark with it, and the next event queues the seal again."""
    host, db = store
    data = tmp_path / "data"
    data.mkdir()
    (data / "records-store").write_text("postgresql://zc@/%s?host=%s\n" % (db, host))
    listed = subprocess.run([servers.zonecast_bin(), "zone", "list", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert query(host, db, "SELECT tgqual IS NOT NULL, tgdeferrable, tginitdeferred"
                           " FROM pg_trigger WHERE tgname = 'changes_seal'") == [
        ["t", "t", "t"]]
    s = Session(host, db, "sealer")
    try:
        s.run("SET track_functions = 'pl';")
        for sql in ("BEGIN;", EVENT % (1, 1), EVENT % (1, 1), EVENT % (2, 1), "COMMIT;",
                    # the first event's savepoint rolls back: the second queues the seal
                    "BEGIN;", "SAVEPOINT u;", EVENT % (1, 2), "ROLLBACK TO u;", "RELEASE u;",
                    "SAVEPOINT u;", EVENT % (2, 2), "RELEASE u;", "COMMIT;",
                    # everything rolls back: no position
                    "BEGIN;", "SAVEPOINT u;", EVENT % (1, 3), "ROLLBACK TO u;", "COMMIT;",
                    "SELECT pg_stat_force_next_flush();"):
            s.run(sql)
        calls = s.run("SELECT calls FROM pg_stat_user_functions WHERE funcname = 'zc_seal';")
    finally:
        s.close()
    assert calls == ["2"], calls
    assert query(host, db, "SELECT count(*) FROM log_commits") == [["2"]]
    # Every committed event has its transaction's position.
    assert query(host, db, "SELECT count(*), count(l.pos) FROM changes c"
                           " LEFT JOIN log_commits l ON l.xid = c.xid") == [["4", "4"]]
