"""zonecast migrate (docs/postgresql.md, design §1.3): a data directory's
records store moved SQLite -> PostgreSQL -> SQLite with the server stopped
in between. After each move the same `zonecast serve` on the same data
directory (the same edge store) answers as before: every zone exports the
same, IXFR from a serial served before the move is still incremental (the
journal moved with its sequences), `zonecast verify` finds no difference,
a token, a TSIG key and DNSSEC keys made before the move still work, and
new API writes are served. The edge store goes on without a full build
(a quarantined zone is still answered from its last good build), and no
id, even a deleted row's, is handed out twice after either move. A move
is refused, changing nothing, while a serve runs, into a non-empty
database, or when PostgreSQL cannot be reached."""

import glob
import os
import sqlite3
import subprocess

import dns.message
import dns.query
import dns.rcode
import dns.update
import pytest

import servers
import validators
from test_transfer import parse_ixfr, rr_list, xfr_messages

DEV_PG = os.path.join(servers.REPO, "dev", "pg")

pytestmark = pytest.mark.skipif(servers.RECORDS_BACKEND == "postgresql",
                                reason="starts on SQLite and moves the store itself")

ZONES = {
    "mig.test.": "$ORIGIN mig.test.\n$TTL 300\n@ SOA ns hostmaster 1 7200 900 1209600 300\n"
                 "@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.1\n@ MX 10 mail\nmail A 192.0.2.25\n"
                 "txt TXT \"hello\" \"world\"\n*.wild A 192.0.2.9\n",
    "signed.test.": "$ORIGIN signed.test.\n$TTL 300\n@ SOA ns hostmaster 7 7200 900 1209600 300\n"
                    "@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.2\n",
}


def psql(host, sql, db="postgres"):
    bindir = subprocess.run([DEV_PG, "bindir"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", "-A", "-t", "-h", host,
                           "-U", "zc", "-d", db, "-c", sql],
                          capture_output=True, text=True, check=True).stdout


def database(host, name):
    psql(host, "CREATE DATABASE %s" % name)
    return "postgresql://zc@/%s?host=%s" % (name, host)


def table_count(host, db):
    return int(psql(host, "SELECT count(*) FROM information_schema.tables"
                          " WHERE table_schema = 'public'", db).strip())


def start_server(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    files = {}
    for zone, text in ZONES.items():
        path = tmp_path / (zone + "zone")
        path.write_text(text)
        files[zone] = str(path)
    srv = servers.ZonecastServer(str(tmp_path / "srv"), zones=files, api=True)
    srv.start()
    return srv


def migrate(srv, to, check=True):
    cp = srv.run_cli("migrate", "--data-dir", srv.data_dir, "--to", to, check=False)
    if check:
        assert cp.returncode == 0, cp.stdout + cp.stderr
    return cp


def exports(srv):
    return {z: srv.run_cli("zone", "export", "--data-dir", srv.data_dir, z).stdout
            for z in ZONES}


def dir_listing(srv):
    return sorted(os.listdir(srv.data_dir))


def sqlite_tombstones(srv):
    """The records store's zone_tombstones rows, (apex in hex, serial) as text."""
    conn = sqlite3.connect(os.path.join(srv.data_dir, "records.db"))
    try:
        return [(apex.hex(), str(serial)) for apex, serial in
                conn.execute("SELECT apex, serial FROM zone_tombstones ORDER BY apex")]
    finally:
        conn.close()


def serial(srv, zone):
    r = srv.query(zone, "SOA")
    return r.answer[0][0].serial


def answer(srv, name, rdtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=srv.port,
                      timeout=2)
    return sorted(rd.to_text() for rrset in r.answer for rd in rrset
                  if rrset.rdtype == dns.rdatatype.from_text(rdtype))


def wait_answer(srv, name, want, rdtype="A"):
    import time
    deadline = time.monotonic() + 10
    while answer(srv, name, rdtype) != want:
        assert time.monotonic() < deadline, "%s %s: %s, want %s" % (
            name, rdtype, answer(srv, name, rdtype), want)
        time.sleep(0.05)


def tsig_update(srv, key, name, address):
    u = dns.update.UpdateMessage("mig.test.", keyring=key.key, keyalgorithm=key.key.algorithm)
    u.add(name, 300, "A", address)
    r = dns.query.tcp(u, "127.0.0.1", port=srv.port, timeout=5)
    assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())


def assert_ixfr_from(srv, old, key):
    """IXFR from serial `old` of mig.test. is incremental, up to the current one."""
    msgs = xfr_messages(srv, "mig.test.", rdtype="IXFR", key=key, serial=old)
    kind, val = parse_ixfr(rr_list(r for m in msgs for r in m.answer))
    assert kind == "ixfr", "IXFR from %d answered %s, not incrementally" % (old, kind)
    assert val[0][0] == old and val[-1][1] == serial(srv, "mig.test.")


def assert_validates(srv, anchors, name="www.signed.test."):
    cp = validators.delv(srv.port, anchors, "signed.test.", name, "A")
    first = cp.stdout.splitlines()[0] if cp.stdout else ""
    assert first == "; fully validated", cp.out


def assert_served_as_before(srv, before, old_serial, token, key, anchors, step):
    """The checks after each move, srv serving again."""
    assert exports(srv) == before, "zone export differs after %s" % step
    v = srv.verify()
    assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr
    assert_ixfr_from(srv, old_serial, key)
    if anchors:
        assert_validates(srv, anchors)
    # The token made on the first store authenticates; its writes are served.
    api = srv.client(token)
    zid = api.zone_id("mig.test.")
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"type": "A", "name": "api-%s.mig.test" % step, "content": "192.0.2.77",
                 "ttl": 300})
    wait_answer(srv, "api-%s.mig.test." % step, ["192.0.2.77"])
    # The TSIG key made on the first store signs an UPDATE that is served.
    tsig_update(srv, key, "upd-%s.mig.test." % step, "192.0.2.88")
    wait_answer(srv, "upd-%s.mig.test." % step, ["192.0.2.88"])
    if anchors:
        assert_validates(srv, anchors)
    v = srv.verify()
    assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr


def test_round_trip_sqlite_postgresql_sqlite(pg_cluster, tmp_path):
    if not os.access(validators.delv_bin(), os.X_OK):
        pytest.skip("delv not installed (dev/deps test)")
    srv = start_server(tmp_path)
    try:
        token = srv.create_token()
        key = srv.tsig_create("mig-key.", "mig.test.")
        cp = srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "signed.test")
        ds = validators.parse_ds(cp.stdout)
        assert ds, cp.stdout
        anchors = validators.anchors_file(str(tmp_path / "anchors.conf"), ds)
        wait_answer(srv, "www.signed.test.", ["192.0.2.2"])
        assert_validates(srv, anchors)
        # History in the journal: versions by the API and by UPDATE.
        old_serial = serial(srv, "mig.test.")
        api = srv.client(token)
        zid = api.zone_id("mig.test.")
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "TXT", "name": "note.mig.test", "content": "before the move",
                     "ttl": 300})
        tsig_update(srv, key, "dyn.mig.test.", "192.0.2.44")
        wait_answer(srv, "dyn.mig.test.", ["192.0.2.44"])
        assert_ixfr_from(srv, old_serial, key)
        # A deleted zone's last serial (its tombstone) moves too.
        gone = api.ok("POST", "/zones", json={"name": "gone.test"})["result"]["id"]
        api.ok("DELETE", "/zones/%s" % gone)
        before = exports(srv)
        assert not srv.stop()
        tombstones = sqlite_tombstones(srv)
        assert [apex for apex, _ in tombstones] == ["04676f6e65047465737400"], tombstones

        # SQLite -> PostgreSQL.
        uri = database(pg_cluster, "round")
        cp = migrate(srv, uri)
        assert "zones" in cp.stdout and "total" in cp.stdout, cp.stdout
        assert "postgresql://zc@/round" in cp.stdout
        assert not os.path.exists(os.path.join(srv.data_dir, "records.db"))
        assert len(glob.glob(os.path.join(srv.data_dir, "records.db.migrated-*"))) == 1
        with open(os.path.join(srv.data_dir, "records-store")) as f:
            assert f.read().strip() == uri
        # One commit holds the copied log, at the position of its last event.
        commits = psql(pg_cluster, "SELECT pos, node FROM log_commits", "round").splitlines()
        last = psql(pg_cluster, "SELECT max(seq) FROM changes", "round").strip()
        assert commits == ["%s|zonecast migrate" % last]
        assert psql(pg_cluster, "SELECT tgenabled FROM pg_trigger WHERE tgname ="
                                " 'changes_seal'", "round").strip() == "O"
        assert [tuple(row.split("|")) for row in psql(
            pg_cluster, "SELECT encode(apex, 'hex'), serial FROM zone_tombstones",
            "round").splitlines()] == tombstones
        srv.restart()
        assert_served_as_before(srv, before, old_serial, token, key, anchors, "pg")
        # New writes on PostgreSQL are sealed by the trigger again.
        assert int(psql(pg_cluster, "SELECT count(*) FROM log_commits", "round")) >= 3
        old_serial = serial(srv, "mig.test.")
        api = srv.client(token)
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "TXT", "name": "note2.mig.test", "content": "on postgresql",
                     "ttl": 300})
        wait_answer(srv, "note2.mig.test.", ['"on postgresql"'], "TXT")
        before = exports(srv)
        assert not srv.stop()

        # PostgreSQL -> SQLite.
        cp = migrate(srv, "sqlite")
        assert "SQLite" in cp.stdout, cp.stdout
        assert os.path.exists(os.path.join(srv.data_dir, "records.db"))
        assert not os.path.exists(os.path.join(srv.data_dir, "records-store"))
        assert len(glob.glob(os.path.join(srv.data_dir, "records-store.migrated-*"))) == 1
        assert not os.path.exists(os.path.join(srv.data_dir, "migrate.tmp"))
        assert sqlite_tombstones(srv) == tombstones
        srv.restart()
        assert_served_as_before(srv, before, old_serial, token, key, anchors, "back")
    finally:
        srv.stop()


def test_refused_while_serve_runs(pg_cluster, tmp_path):
    srv = start_server(tmp_path)
    try:
        uri = database(pg_cluster, "busy")
        listing = dir_listing(srv)
        cp = migrate(srv, uri, check=False)
        assert cp.returncode == 1
        assert "in use by zonecast serve" in cp.stderr and "stop it first" in cp.stderr, \
            cp.stderr
        assert dir_listing(srv) == listing
        assert table_count(pg_cluster, "busy") == 0
        assert answer(srv, "www.mig.test.") == ["192.0.2.1"]
    finally:
        assert not srv.stop()


def test_refused_into_a_database_not_empty(pg_cluster, tmp_path):
    first = start_server(tmp_path / "a")
    second = start_server(tmp_path / "b")
    try:
        assert not first.stop()
        assert not second.stop()
        uri = database(pg_cluster, "taken")
        migrate(first, uri)
        zones = psql(pg_cluster, "SELECT id, name, serial FROM zones ORDER BY id", "taken")
        commits = psql(pg_cluster, "SELECT * FROM log_commits", "taken")
        listing = dir_listing(second)
        before = exports(second)
        cp = migrate(second, uri, check=False)
        assert cp.returncode == 1
        assert "is not empty (table zones has rows)" in cp.stderr, cp.stderr
        assert "nothing was changed" in cp.stderr
        assert dir_listing(second) == listing
        assert psql(pg_cluster, "SELECT id, name, serial FROM zones ORDER BY id",
                    "taken") == zones
        assert psql(pg_cluster, "SELECT * FROM log_commits", "taken") == commits
        second.restart()
        assert exports(second) == before
        assert second.verify().returncode == 0
    finally:
        first.stop()
        second.stop()


def test_refused_when_postgresql_unreachable(tmp_path):
    srv = start_server(tmp_path)
    try:
        assert not srv.stop()
        listing = dir_listing(srv)
        cp = migrate(srv, "postgresql://zc@/nowhere?host=%s" % (tmp_path / "no-socket"),
                     check=False)
        assert cp.returncode == 1
        assert "cannot open PostgreSQL" in cp.stderr and "nothing was changed" in cp.stderr, \
            cp.stderr
        assert dir_listing(srv) == listing
        srv.restart()
        assert answer(srv, "www.mig.test.") == ["192.0.2.1"]
    finally:
        srv.stop()


def test_refused_to_the_engine_already_in_use(tmp_path):
    srv = start_server(tmp_path)
    try:
        assert not srv.stop()
        listing = dir_listing(srv)
        cp = migrate(srv, "sqlite", check=False)
        assert cp.returncode == 1 and "already keeps its records in SQLite" in cp.stderr
        assert dir_listing(srv) == listing
    finally:
        srv.stop()


def test_progress_line_on_a_terminal(pg_cluster, tmp_path):
    """On a terminal the copy draws a progress line on stderr; the summary
    goes to stdout either way."""
    import pty
    srv = start_server(tmp_path)
    try:
        assert not srv.stop()
        uri = database(pg_cluster, "progress")
        master, slave = pty.openpty()
        try:
            cp = subprocess.run([servers.zonecast_bin(), "migrate", "--data-dir", srv.data_dir,
                                 "--to", uri], stdout=subprocess.PIPE, stderr=slave,
                                text=True, timeout=120, env=srv.env())
            os.close(slave)
            slave = None
            drawn = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                drawn += chunk
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        assert cp.returncode == 0, drawn
        assert b"copying: " in drawn and b" rows" in drawn and b" in " in drawn, drawn
        assert "total" in cp.stdout and " rows in " in cp.stdout, cp.stdout
    finally:
        srv.stop()


def test_crash_between_binding_and_putting_aside(pg_cluster, tmp_path):
    """migrate to PostgreSQL writes the binding before it puts records.db
    aside: a crash in between leaves both files, and the binding wins, so
    the directory is on the store the copy went to (the one with every
    change), never on an empty new SQLite file. Simulated by putting
    records.db back after a migrate; a write made through PostgreSQL then
    shows that the server opened PostgreSQL, not the old file."""
    srv = start_server(tmp_path)
    assert not srv.stop()
    uri = database(pg_cluster, "crashwin")
    before = exports(srv)
    migrate(srv, uri)
    aside = [f for f in dir_listing(srv) if f.startswith("records.db.migrated-")]
    assert len(aside) == 1, dir_listing(srv)
    os.rename(os.path.join(srv.data_dir, aside[0]), os.path.join(srv.data_dir, "records.db"))
    assert "records-store" in dir_listing(srv)
    assert exports(srv) == before
    srv.restart()
    try:
        assert srv.verify().returncode == 0
        assert answer(srv, "www.mig.test.") == ["192.0.2.1"]
        api = srv.client()
        zid = api.zone_id("mig.test")
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "new.mig.test", "content": "192.0.2.99"})
        assert answer(srv, "new.mig.test.") == ["192.0.2.99"]
        rows = psql(pg_cluster, "SELECT count(*) FROM records WHERE type = 1 AND "
                    "rdata = '\\xc0000263'::bytea", "crashwin")
        assert int(rows) == 1
    finally:
        srv.stop()


def test_an_older_sqlite_store_moves_on(tmp_path):
    """A SQLite store at version 11 (without zone_tombstones) opened by
    zonecast moves to the current schema in place: the tombstones come from
    the change log's last ZONE_DELETED event per apex, and a zone made again
    under a deleted name starts after its last serial."""
    data = tmp_path / "data"
    zone_file = tmp_path / "gone.zone"
    zone_file.write_text("$ORIGIN gone.test.\n@ 300 SOA ns hostmaster 1 7200 900 1209600 300\n"
                         "@ 300 NS ns\nns 300 A 192.0.2.53\n")
    run = lambda *args: subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                                       text=True, timeout=120)
    cp = run("zone", "import", "--data-dir", str(data), "gone.test", str(zone_file))
    assert cp.returncode == 0, cp.stderr
    conn = sqlite3.connect(str(data / "records.db"))
    conn.executescript(
        "DELETE FROM records; DELETE FROM zones; DROP TABLE zone_tombstones;"
        "INSERT INTO changes(zone_id, apex, version, kind, at) VALUES"
        " (9, x'04676f6e65047465737400', 7, 2, 0),"
        " (9, x'04676f6e65047465737400', 2000000000, 2, 0),"
        " (8, x'0161047465737400', 9, 2, 0);"
        "PRAGMA user_version = 11;")
    conn.close()
    cp = run("zone", "import", "--data-dir", str(data), "gone.test", str(zone_file))
    assert cp.returncode == 0, cp.stderr
    conn = sqlite3.connect(str(data / "records.db"))
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == servers.RECORDS_SCHEMA_VERSION
        assert [(a.hex(), s) for a, s in conn.execute(
            "SELECT apex, serial FROM zone_tombstones ORDER BY apex")] == [
            ("0161047465737400", 9), ("04676f6e65047465737400", 2000000000)]
        assert conn.execute("SELECT serial FROM zones WHERE name = 'gone.test.'").fetchone() == (
            2000000001,)
    finally:
        conn.close()


def zone_line(srv, zone):
    out = srv.run_cli("zone", "list", "--data-dir", srv.data_dir).stdout
    return next(l for l in out.splitlines() if l.startswith(zone))


def assert_quarantined_as_before(srv, zid, quarantine, good_serial, logged, step):
    """mig.test. after a move: still answered from its last good build,
    still in quarantine (the same entry), the other zones served."""
    api = srv.client()
    assert serial(srv, "mig.test.") == good_serial, step
    assert answer(srv, "good.mig.test.") == ["192.0.2.31"], step
    r = dns.query.udp(dns.message.make_query("bad.mig.test.", "A"), "127.0.0.1",
                      port=srv.port, timeout=2)
    assert r.rcode() == dns.rcode.NXDOMAIN, step
    z = api.get("/zones/%s" % zid)
    assert z["status"] == "quarantined", (step, z)
    q = z["quarantine"]
    assert q["serving_serial"] == good_serial and "injected" in q["reason"], (step, q)
    assert q["since"] == quarantine["since"], (step, q, quarantine)
    line = zone_line(srv, "mig.test.")
    assert "QUARANTINED" in line and str(good_serial) in line, (step, line)
    assert answer(srv, "www.signed.test.") == ["192.0.2.2"], step
    # Not built again from the records store: the edge store went on.
    log = srv.log()[logged:]
    assert "building its" not in log and "again from the records" not in log, (step, log)
    # The other zones take writes, served at once.
    sid = api.zone_id("signed.test.")
    api.ok("POST", "/zones/%s/dns_records?wait=live" % sid,
           json={"type": "A", "name": "w-%s.signed.test" % step, "content": "192.0.2.41"})
    assert answer(srv, "w-%s.signed.test." % step) == ["192.0.2.41"], step


def test_quarantined_zone_served_across_both_moves(pg_cluster, tmp_path):
    """A zone quarantined (its builds fail: ZONECAST_FAULT_BUILD) is still
    answered from its last good build after a migrate to PostgreSQL and
    after the one back, in the same quarantine, as after a restart: the
    edge store is carried over, not built again; once the cause is gone
    the zone heals on the new store."""
    tmp_path.mkdir(exist_ok=True)
    fault = tmp_path / "fault"
    fault.write_text("")
    files = {}
    for zone, text in ZONES.items():
        path = tmp_path / (zone + "zone")
        path.write_text(text)
        files[zone] = str(path)
    srv = servers.ZonecastServer(str(tmp_path / "srv"), zones=files, api=True,
                                 env={"ZONECAST_FAULT_BUILD": str(fault)})
    srv.start()
    try:
        api = srv.client()
        zid = api.zone_id("mig.test.")
        r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                     json={"type": "A", "name": "good.mig.test", "content": "192.0.2.31"})
        assert r.status_code == 200, r.text
        good_serial = serial(srv, "mig.test.")
        fault.write_text("mig.test.\n")
        r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                     json={"type": "A", "name": "bad.mig.test", "content": "192.0.2.32"})
        assert r.status_code == 202, r.text
        quarantine = api.get("/zones/%s" % zid)["quarantine"]
        assert quarantine is not None and quarantine["serving_serial"] == good_serial
        assert not srv.stop()

        # SQLite -> PostgreSQL: a restart as any other.
        cp = migrate(srv, database(pg_cluster, "quar"))
        assert "the edge store goes on" in cp.stdout, cp.stdout
        logged = len(srv.log())
        srv.restart()
        assert_quarantined_as_before(srv, zid, quarantine, good_serial, logged, "pg")
        assert not srv.stop()

        # PostgreSQL -> SQLite.
        cp = migrate(srv, "sqlite")
        assert "the edge store goes on" in cp.stdout, cp.stdout
        logged = len(srv.log())
        srv.restart()
        assert_quarantined_as_before(srv, zid, quarantine, good_serial, logged, "back")

        # The cause gone, the zone heals on the new store and takes writes.
        fault.write_text("")
        srv.run_cli("zone", "retry", "--data-dir", srv.data_dir, "mig.test.")
        wait_answer(srv, "bad.mig.test.", ["192.0.2.32"])
        assert serial(srv, "mig.test.") > good_serial
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "after.mig.test", "content": "192.0.2.33"})
        assert answer(srv, "after.mig.test.") == ["192.0.2.33"]
        v = srv.verify()
        assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr
    finally:
        srv.stop()


def sqlite_marks(srv):
    conn = sqlite3.connect(os.path.join(srv.data_dir, "records.db"))
    try:
        return dict(conn.execute("SELECT name, seq FROM sqlite_sequence"))
    finally:
        conn.close()


def store_max_id(srv, table, host=None, db=None):
    """The highest id in table of the data directory's store."""
    if host is not None:
        return int(psql(host, "SELECT coalesce(max(id), 0) FROM %s" % table, db))
    conn = sqlite3.connect(os.path.join(srv.data_dir, "records.db"))
    try:
        return conn.execute("SELECT coalesce(max(id), 0) FROM %s" % table).fetchone()[0]
    finally:
        conn.close()


def test_no_id_handed_out_twice_across_both_moves(pg_cluster, tmp_path):
    """Ids of deleted zones, TSIG keys, tokens and DNSSEC keys are never
    handed out again: each table's high-water mark moves with the store
    (sqlite_sequence -> the identity sequences -> sqlite_sequence)."""
    srv = start_server(tmp_path)
    try:
        api = srv.client()
        issued = {}

        def make(step):
            """A zone, a TSIG key, a token and DNSSEC keys; the ids drawn
            are each greater than any drawn before."""
            zone = api.ok("POST", "/zones", json={"name": "z-%s.test" % step})["result"]["id"]
            key = api.ok("POST", "/zones/%s/tsig_keys" % zone,
                         json={"name": "k-%s" % step, "algorithm": "hmac-sha256"})["result"]["id"]
            srv.create_token()
            cp = srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "z-%s.test" % step)
            assert cp.returncode == 0, cp.stderr
            ids = {"zones": int(zone, 16), "tsig_keys": int(key, 16)}
            for table in ("tokens", "dnssec_keys"):
                ids[table] = (store_max_id(srv, table, *srv.pg) if srv.pg else
                              store_max_id(srv, table))
            for table, new in ids.items():
                assert new > issued.get(table, 0), (step, table, new, issued)
                issued[table] = new
            return zone, key

        srv.pg = None
        make("a")
        b_zone, b_key = make("b")
        api.ok("DELETE", "/zones/%s/tsig_keys/%s" % (b_zone, b_key))
        api.ok("DELETE", "/zones/%s" % b_zone)
        assert not srv.stop()
        # The newest token goes too (the API client's is older).
        conn = sqlite3.connect(os.path.join(srv.data_dir, "records.db"))
        with conn:
            conn.execute("DELETE FROM tokens WHERE id = (SELECT max(id) FROM tokens)")
        conn.close()
        assert store_max_id(srv, "zones") < issued["zones"]
        assert store_max_id(srv, "tsig_keys") < issued["tsig_keys"]
        assert store_max_id(srv, "tokens") < issued["tokens"]
        assert store_max_id(srv, "dnssec_keys") < issued["dnssec_keys"]
        marks = sqlite_marks(srv)
        assert all(marks[t] == issued[t] for t in issued), (marks, issued)

        srv.pg = (pg_cluster, "ids")
        migrate(srv, database(pg_cluster, "ids"))
        for table, mark in issued.items():
            assert int(psql(pg_cluster, "SELECT CASE WHEN is_called THEN last_value ELSE"
                                        " last_value - 1 END FROM %s_id_seq" % table,
                            "ids")) == mark, table
        srv.restart()
        api = srv.client()
        make("pg")
        assert not srv.stop()

        srv.pg = None
        migrate(srv, "sqlite")
        marks = sqlite_marks(srv)
        assert all(marks[t] == issued[t] for t in issued), (marks, issued)
        srv.restart()
        api = srv.client()
        make("back")
    finally:
        srv.stop()
