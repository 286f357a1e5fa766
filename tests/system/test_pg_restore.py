"""A records store that goes back to an earlier state while the edge stores
keep what they applied (outside tester 21, finding 1; docs/operations.md
"Restoring a backup"): a PostgreSQL dump restored over the database (as a
point-in-time restore, or a failover to a replica that lost commits), or
an SQLite records.db copied back from a backup. The log's positions then
name other commits than the ones applied; the builder notices (the log
ends before its position, or the commit there is another one), builds
every zone again from the records store, and gives a zone served at a
newer serial a version past it: every write acknowledged after the
restore is served, what the restore took back is not, no serial names two
contents, and `zonecast verify` is clean."""

import contextlib
import os
import shutil
import subprocess
import time

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import pg
import servers

ZONE = "r.test."


def served(srv, name, rdtype="TXT"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1",
                      port=srv.port, timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def serial(srv):
    r = dns.query.udp(dns.message.make_query(ZONE, "SOA"), "127.0.0.1",
                      port=srv.port, timeout=2)
    return r.answer[0][0].serial


def add(api, zid, name, text):
    api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
           {"type": "TXT", "name": name + "." + ZONE.rstrip("."),
            "content": text, "ttl": 60})


def update(srv, name, text):
    up = dns.update.UpdateMessage(ZONE)
    up.add(name + "." + ZONE, 60, "TXT", text)
    r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=10)
    assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())


def import_zone(srv, tmp_path):
    zf = tmp_path / "r.zone"
    zf.write_text("$ORIGIN %s\n$TTL 60\n@ SOA ns hm 100 7200 900 1209600 60\n"
                  "@ NS ns\nns A 192.0.2.53\n" % ZONE)
    srv.import_zone(ZONE, str(zf))


def settle(nodes, names_texts, gone, timeout=10):
    """Until every node serves each (name, text) and none of `gone`."""
    deadline = time.monotonic() + timeout
    while True:
        missing = [(n.port, name) for n in nodes for name, text in names_texts
                   if served(n, name + "." + ZONE) != ['"%s"' % text]]
        kept = [(n.port, name) for n in nodes for name in gone
                if served(n, name + "." + ZONE)]
        if not missing and not kept:
            return
        if time.monotonic() > deadline:
            raise AssertionError("not served: %r; served though restored away: %r"
                                 % (missing[:5], kept[:5]))
        time.sleep(0.05)


def clean(srv):
    cp = srv.verify()
    assert "no differences" in cp.stdout, cp.stdout + cp.stderr


def pg_tool(name, *args):
    subprocess.run([os.path.join(pg.bindir(), name)] + list(args), check=True,
                   capture_output=True, text=True)


def dump_db(host, db, path):
    """pg_dump of db in custom format to path; returns path."""
    pg_tool("pg_dump", "-h", host, "-U", "zc", "-Fc", "-f", path, db)
    return path


def restore_over(host, db, dump):
    """pg_restore --clean in one transaction over the running database (as
    an operator restores under running nodes). Its DROPs take locks the
    nodes' statements hold in another order, so PostgreSQL may end it as
    a deadlock's loser (rolled back whole: nothing restored); it is run
    again then, as an operator would (a CI run under load: 2 of 1,800)."""
    argv = [os.path.join(pg.bindir(), "pg_restore"), "--clean", "--if-exists",
            "--single-transaction", "-h", host, "-U", "zc", "-d", db, dump]
    for attempt in range(5):
        cp = subprocess.run(argv, capture_output=True, text=True)
        if cp.returncode == 0:
            return
        assert "deadlock detected" in cp.stderr and attempt < 4, cp.stderr
        time.sleep(0.2)


def restore(host, db, dump):
    pg.psql(host, "DROP DATABASE %s WITH (FORCE)" % db)
    pg.psql(host, "CREATE DATABASE %s" % db)
    pg_tool("pg_restore", "--single-transaction", "-h", host, "-U", "zc", "-d", db, dump)


@contextlib.contextmanager
def two_nodes(pg_cluster, tmp_path, prefix):
    """Nodes a and b on a fresh database holding ZONE: (db, a, b, the API
    client of a, the zone's id); both stopped at the end, then verified."""
    db, uri = pg.fresh_database(pg_cluster, prefix)
    a = pg.serve_node(tmp_path, "a", uri)
    import_zone(a, tmp_path)
    b = pg.serve_node(tmp_path, "b", uri)
    try:
        api = a.client()
        yield db, a, b, api, api.zone_id(ZONE)
    finally:
        a.stop()
        b.stop()
    for n in (a, b):
        clean(n)


def test_pg_restore_while_nodes_run(pg_cluster, tmp_path):
    """Two running nodes; the database is dropped and restored from a dump
    taken before 12 acknowledged writes; writes follow on both nodes."""
    with two_nodes(pg_cluster, tmp_path, "rst") as (db, a, b, api, zid):
        for i in range(3):
            add(api, zid, "pre%d" % i, "pre")
        dump = dump_db(pg_cluster, db, str(tmp_path / "r.dump"))
        for i in range(12):
            add(api, zid, "mid%d" % i, "mid")
        settle((a, b), [("mid11", "mid")], [])
        high = max(serial(a), serial(b))
        restore(pg_cluster, db, dump)
        acked = []
        deadline = time.monotonic() + 20
        i = 0
        while len(acked) < 6:
            # The nodes' sessions were ended by the drop: the first writes
            # may find them reconnecting.
            try:
                if i % 2 == 0:
                    add(api, zid, "post%d" % i, "post")
                else:
                    update(b, "post%d" % i, "post")
                acked.append(("post%d" % i, "post"))
            except (servers.ApiError, AssertionError):
                assert time.monotonic() < deadline, "no write taken after the restore"
                time.sleep(0.2)
            i += 1
        settle((a, b), acked + [("pre0", "pre")], ["mid%d" % j for j in range(12)])
        # No serial names two contents: past every one served before.
        for n in (a, b):
            s = serial(n)
            assert s != high and (s - high) % 2 ** 32 < 2 ** 31, (s, high)
        log = a.log() + b.log()
        assert "the change log is not the one applied here" in log, log[-3000:]


def rrs(msgs):
    """The records of transfer messages, in order, as text lines."""
    return ["%s %s %s" % (rrset.name, dns.rdatatype.to_text(rrset.rdtype), rr.to_text())
            for m in msgs for rrset in m.answer for rr in rrset]


def apply_ixfr(held, lines):
    """What a secondary holding `held` (a set of non-SOA lines) has after
    the IXFR answer `lines`: AXFR form replaces it, each incremental
    sequence (old SOA, deletions, new SOA, additions) applies."""
    soa = [i for i, l in enumerate(lines) if " SOA " in l]
    if len(lines) > 1 and " SOA " not in lines[1]:
        return {l for l in lines if " SOA " not in l}
    out, adding = set(held), False
    for l in lines[1:-1]:
        if " SOA " in l:
            adding = not adding
        elif adding:
            out.add(l)
        else:
            out.discard(l)
    assert soa, lines
    return out


@pytest.mark.parametrize("gap", [0, 0.15])
def test_writes_right_after_a_restore_leave_no_serial_with_two_contents(pg_cluster, tmp_path,
                                                                        gap):
    """A restore under a running node, then two writes at once (`gap` apart):
    before the first builder pass after the restore checked the log, the
    second write took the store's serial past the one served, and the
    zone got no version past it, so an IXFR from the served serial gave a
    secondary the new history's change on top of the old content (outside
    tester 29): a serial with two contents for good. Whatever the timing,
    a secondary at the old serial ends with what the node serves."""
    db, uri = pg.fresh_database(pg_cluster, "gap")
    a = pg.serve_node(tmp_path, "a", uri, ["allow-transfer=127.0.0.1"])
    import_zone(a, tmp_path)
    try:
        api = a.client()
        zid = api.zone_id(ZONE)
        other = api.ok("POST", "/zones", {"name": "other-r.test"})["result"]["id"]
        add(api, zid, "base", "base")
        dump = dump_db(pg_cluster, db, str(tmp_path / "g.dump"))
        add(api, zid, "lost", "lost")
        for i in range(20):  # positions well past the zone's own
            api.ok("POST", "/zones/%s/dns_records?wait=live" % other,
                   {"type": "TXT", "name": "o%d.other-r.test" % i, "content": "o"})
        old = serial(a)
        held = {l for l in rrs(dns.query.xfr("127.0.0.1", ZONE, port=a.port, lifetime=10))
                if " SOA " not in l}
        assert any("lost" in l for l in held), held
        restore_over(pg_cluster, db, dump)
        for name in ("newa", "newb"):
            deadline = time.monotonic() + 20
            while True:  # the node's sessions may be reconnecting
                try:
                    api.ok("POST", "/zones/%s/dns_records" % zid,
                           {"type": "TXT", "name": name + "." + ZONE.rstrip("."),
                            "content": "new", "ttl": 60})
                    break
                except servers.ApiError:
                    assert time.monotonic() < deadline, "no write taken after the restore"
                    time.sleep(0.1)
            time.sleep(gap)
        settle((a,), [("newa", "new"), ("newb", "new")], ["lost"])
        now = {l for l in rrs(dns.query.xfr("127.0.0.1", ZONE, port=a.port, lifetime=10))
               if " SOA " not in l}
        got = apply_ixfr(held, rrs(dns.query.xfr("127.0.0.1", ZONE, port=a.port,
                                                 rdtype=dns.rdatatype.IXFR, serial=old,
                                                 lifetime=10)))
        assert got == now, ("a secondary at serial %d would hold %s, the node serves %s"
                            % (old, sorted(got - now), sorted(now - got)))
        s = serial(a)
        assert s != old and (s - old) % 2 ** 32 < 2 ** 31, (s, old)
    finally:
        a.stop()
    clean(a)


def test_record_ids_after_a_restore_are_not_given_twice(pg_cluster, tmp_path):
    """A node kept the record ids it had drawn from the sequence record_ids
    across transactions; a restore put the sequence back below them, the
    node handed them out, then the sequence gave them again: writes failed
    with 409 "already exists" (outside tester 29: 13 of 60). Every write
    after the restore is taken."""
    db, uri = pg.fresh_database(pg_cluster, "ids")
    a = pg.serve_node(tmp_path, "a", uri)
    import_zone(a, tmp_path)
    try:
        api = a.client()
        zid = api.zone_id(ZONE)
        for i in range(3):
            add(api, zid, "pre%d" % i, "pre")
        dump = dump_db(pg_cluster, db, str(tmp_path / "ids.dump"))
        for i in range(30):
            add(api, zid, "mid%d" % i, "mid")
        restore_over(pg_cluster, db, dump)
        refused = []
        for i in range(60):
            deadline = time.monotonic() + 20
            while True:
                r = api.call("POST", "/zones/%s/dns_records" % zid,
                             json={"type": "TXT", "name": "post%d.%s" % (i, ZONE.rstrip(".")),
                                   "content": "post", "ttl": 60})
                if r.status_code != 503 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)  # the node's sessions reconnecting
            if r.status_code != 200:
                refused.append((i, r.status_code, r.text[:200]))
        assert not refused, refused
        settle((a,), [("post59", "post"), ("pre0", "pre")], ["mid0"])
    finally:
        a.stop()
    clean(a)


def test_pg_restore_past_a_stopped_nodes_position(pg_cluster, tmp_path):
    """Node b is stopped; the store is restored and node a writes more
    commits than went back, so b's position exists again in the new log,
    as another commit: b, started, finds it by the commit's identity."""
    with two_nodes(pg_cluster, tmp_path, "rsp") as (db, a, b, api, zid):
        dump = dump_db(pg_cluster, db, str(tmp_path / "r.dump"))
        for i in range(5):
            add(api, zid, "mid%d" % i, "mid")
        settle((b,), [("mid4", "mid")], [])
        b.stop()
        a.stop()
        restore(pg_cluster, db, dump)
        a.serve()
        acked = [("post%d" % i, "post") for i in range(15)]
        for name, text in acked:
            update(a, name, text)
        b.restart()
        settle((a, b), acked, ["mid%d" % j for j in range(5)])
        assert "is another one than the one applied here" in b.log(), b.log()[-3000:]


def test_failover_whose_log_resumes_past_a_stopped_nodes_position(pg_cluster, tmp_path):
    """A failover to an asynchronous replica (or a physical restore, a
    PITR) that lost commits: PostgreSQL's log_pos sequence resumes past
    values WAL-logged ahead of use, so the new commits take positions past
    a gap and the position node b applied holds no commit at all, with the
    log's head past it (outside tester 23, finding 1: b kept serving what
    the failover lost). Made here by a dump restored and log_pos set past
    b's position, as promotion leaves it."""
    with two_nodes(pg_cluster, tmp_path, "rfo") as (db, a, b, api, zid):
        add(api, zid, "pre0", "pre")
        dump = dump_db(pg_cluster, db, str(tmp_path / "r.dump"))
        for i in range(3):
            add(api, zid, "mid%d" % i, "mid")
        settle((b,), [("mid2", "mid")], [])
        applied = int(pg.psql(pg_cluster, "SELECT max(pos) FROM log_commits", db=db).strip())
        b.stop()
        a.stop()
        restore(pg_cluster, db, dump)
        pg.psql(pg_cluster, "SELECT setval('log_pos', %d)" % (applied + 30), db=db)
        a.serve()
        acked = [("post%d" % i, "post") for i in range(3)]
        for name, text in acked:
            update(a, name, text)
        head = int(pg.psql(pg_cluster, "SELECT max(pos) FROM log_commits", db=db).strip())
        held = pg.psql(pg_cluster, "SELECT count(*) FROM log_commits WHERE pos = %d"
                       % applied, db=db).strip()
        assert head > applied and held == "0", (head, applied, held)
        b.restart()
        settle((a, b), acked + [("pre0", "pre")], ["mid%d" % j for j in range(3)])
        assert "no commit holds position" in b.log(), b.log()[-3000:]
        # a, started before the new writes, found the log ending before it
        assert "not the one it applied (it ends at" in a.log(), a.log()[-3000:]


def test_sqlite_records_db_restored_from_a_backup(tmp_path):
    """SQLite: records.db copied away with the server stopped, writes,
    stopped, copied back (edge.mdb stays), started."""
    srv = pg.serve_node(tmp_path, "s", None)  # on its own SQLite file
    import_zone(srv, tmp_path)
    try:
        api = srv.client()
        zid = api.zone_id(ZONE)
        add(api, zid, "pre0", "pre")
        srv.stop()
        db = os.path.join(srv.data_dir, "records.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                shutil.copy2(db + suffix, str(tmp_path / ("backup" + suffix)))
        srv.restart()
        for i in range(8):
            add(api, zid, "mid%d" % i, "mid")
        high = serial(srv)
        srv.stop()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
            if os.path.exists(str(tmp_path / ("backup" + suffix))):
                shutil.copy2(str(tmp_path / ("backup" + suffix)), db + suffix)
        srv.restart()
        acked = []
        for i in range(4):
            add(api, zid, "post%d" % i, "post")
            acked.append(("post%d" % i, "post"))
        settle((srv,), acked + [("pre0", "pre")], ["mid%d" % j for j in range(8)])
        s = serial(srv)
        assert s != high and (s - high) % 2 ** 32 < 2 ** 31, (s, high)
        assert "the change log is not the one it applied" in srv.log(), srv.log()[-3000:]
    finally:
        srv.stop()
    clean(srv)
