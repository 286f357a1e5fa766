"""zonecast's PostgreSQL sessions set what they depend on (outside tester 21,
findings 2 and 4; docs/postgresql.md "Connections"): settings of the role or
the database (ALTER ROLE ... SET statement_timeout, idle_session_timeout)
do not cancel an import or end an idle pooled connection; and a write
transaction left idle by a paused node (SIGSTOP) is ended by the server
after idle_in_transaction_session_timeout, so the zone's row it locked
does not hold the other nodes' writes for ever."""

import os
import signal
import subprocess
import threading
import time

import dns.message
import dns.query
import dns.rcode
import dns.update

import pg
import servers


def update(srv, zone, name, text, timeout=10):
    up = dns.update.UpdateMessage(zone)
    up.add(name, 60, "TXT", text)
    r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=timeout)
    return dns.rcode.to_text(r.rcode())


def served(srv, name):
    r = dns.query.udp(dns.message.make_query(name, "TXT"), "127.0.0.1",
                      port=srv.port, timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def test_role_settings_do_not_cancel_or_end_sessions(pg_cluster, tmp_path):
    db, uri = pg.fresh_database(pg_cluster, "role")
    pg.psql(pg_cluster, "ALTER ROLE zc IN DATABASE %s SET statement_timeout = 5" % db)
    pg.psql(pg_cluster, "ALTER ROLE zc IN DATABASE %s SET idle_session_timeout = 400" % db)
    srv = pg.serve_node(tmp_path, "a", uri)
    try:
        zf = tmp_path / "big.zone"
        lines = ["$ORIGIN big.test.", "$TTL 60", "@ SOA ns hm 1 7200 900 1209600 60",
                 "@ NS ns", "ns A 192.0.2.53"]
        lines += ["h%d A 10.%d.%d.%d" % (i, i >> 16, (i >> 8) & 255, i & 255)
                  for i in range(30000)]
        zf.write_text("\n".join(lines) + "\n")
        cp = srv.import_zone("big.test.", str(zf), check=False)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        # Idle past the role's idle_session_timeout: the pooled writer
        # and the commit signal's connection stay.
        time.sleep(1.0)
        for i in range(3):
            assert update(srv, "big.test.", "u%d.big.test." % i, '"u"') == "NOERROR"
            time.sleep(0.5)
        assert served(srv, "u2.big.test.") == ['"u"']
        assert "commit signal" not in srv.log(), srv.log()[-2000:]
    finally:
        srv.stop()
    cp = srv.verify()
    assert "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_paused_writer_does_not_hold_a_zone_for_ever(pg_cluster, tmp_path):
    db, uri = pg.fresh_database(pg_cluster, "frz")
    env = {"ZONECAST_PG_IDLE_IN_TRANSACTION_MS": "1500"}
    a = pg.serve_node(tmp_path, "a", uri, env=env)
    b = pg.serve_node(tmp_path, "b", uri, env=env)
    stopped = False
    try:
        api_a = a.client()
        api_b = servers.ApiClient(b.api_url, api_a.token)
        zid = api_a.ok("POST", "/zones", {"name": "f.test"})["result"]["id"]
        answer = {}

        def batch(posts):
            try:
                answer["r"] = api_b.call("POST", "/zones/%s/dns_records/batch" % zid,
                                         {"posts": posts}, timeout=120)
            except Exception as e:  # noqa: BLE001 - reported below
                answer["r"] = e

        # Pause b while its session holds a transaction (f.test's row)
        # and sits idle in it. Paused while PostgreSQL was still sending
        # it a result (state active, the socket full), no server timeout
        # applies (docs/postgresql.md): then b goes on a moment and is
        # paused again; a batch that ends before that is followed by
        # another (a loaded machine).
        writing = ("SELECT %s FROM pg_stat_activity WHERE datname = '" + db +
                   "' AND xact_start IS NOT NULL AND backend_xid IS NOT NULL"
                   " AND pid <> pg_backend_pid()")
        taken = 0          # records of batches b committed before the pause
        for attempt in range(4):
            if stopped:
                break
            if attempt > 0:
                r = answer.get("r")
                taken += 5000 if not isinstance(r, Exception) and r.status_code == 200 else 0
            answer.clear()
            posts = [{"type": "TXT", "name": "big%d-%d.f.test" % (attempt, i),
                      "content": "x%d" % i} for i in range(5000)]
            th = threading.Thread(target=batch, args=(posts,), daemon=True)
            th.start()
            while th.is_alive() and not stopped:
                busy = pg.psql(pg_cluster, writing % "count(*)", check=False).strip()
                if busy in ("", "0"):
                    time.sleep(0.002)
                    continue
                b.proc.send_signal(signal.SIGSTOP)
                stopped = True
                t1 = time.monotonic()
                state = ""
                while time.monotonic() - t1 < 1.0:
                    state = pg.psql(pg_cluster, writing % "state", check=False).strip()
                    if state == "idle in transaction":
                        break
                    time.sleep(0.02)
                if state != "idle in transaction":
                    b.proc.send_signal(signal.SIGCONT)
                    stopped = False
                    time.sleep(0.01)
            if not stopped:
                th.join(120)
        assert stopped, "b's batch never sat idle in a transaction"
        t1 = time.monotonic()
        rc = update(a, "f.test.", "a.f.test.", '"a"', timeout=30)
        took = time.monotonic() - t1
        assert rc == "NOERROR" and took < 8, (rc, took)
        api_a.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
                 {"type": "TXT", "name": "a2.f.test", "content": "a2"})
        b.proc.send_signal(signal.SIGCONT)
        stopped = False
        th.join(60)
        r = answer.get("r")
        # b's batch, resumed: acknowledged only if it committed.
        n = int(pg.psql(pg_cluster, "SELECT count(*) FROM records WHERE type = 16"
                        " AND zone_id = (SELECT id FROM zones WHERE name = 'f.test.')",
                        db=db).strip())
        if isinstance(r, Exception) or r.status_code != 200:
            assert n == 2 + taken, (n, taken, r)
        else:
            assert n == 5002 + taken, (n, taken, r.status_code)
        # A session PostgreSQL ended for idling is not called "PostgreSQL
        # down" (outside tester 23, finding 3). Whether b hears the FATAL
        # message or only finds the connection gone depends on timing:
        # either is said as the idle bound, never as a FATAL "unavailable".
        assert "unavailable: FATAL:  terminating connection due to idle" not in b.log()
        assert served(a, "a2.f.test.") == ['"a2"']
    finally:
        if stopped:
            b.proc.send_signal(signal.SIGCONT)
        a.stop()
        b.stop()
    for n in (a, b):
        cp = n.verify()
        assert "no differences" in cp.stdout, cp.stdout + cp.stderr


def test_a_read_transaction_is_not_ended_by_the_idle_bound(pg_cluster, tmp_path):
    """`zone export` piped to a slow reader (a pager) holds its read
    transaction idle between pages: the bound for paused writers does not
    end it (outside tester 23, finding 3: a truncated export and "PostgreSQL
    down")."""
    db, uri = pg.fresh_database(pg_cluster, "slow")
    a = pg.serve_node(tmp_path, "a", uri)
    try:
        zf = tmp_path / "slow.zone"
        lines = ["$ORIGIN slow.test.", "$TTL 60", "@ SOA ns hm 1 7200 900 1209600 60",
                 "@ NS ns", "ns A 192.0.2.53"]
        lines += ['r%d TXT "%s"' % (i, "x" * 40) for i in range(30000)]
        zf.write_text("\n".join(lines) + "\n")
        cp = a.import_zone("slow.test.", str(zf), check=False)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        env = dict(os.environ, ZONECAST_PG_IDLE_IN_TRANSACTION_MS="500")
        p = subprocess.Popen([servers.zonecast_bin(), "zone", "export", "--data-dir",
                              a.data_dir, "slow.test."], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = p.stdout.read(1000)     # the pager's first screen...
        time.sleep(2.0)                 # ...read by the operator
        rest = p.stdout.read()
        err = p.stderr.read().decode()
        assert p.wait(30) == 0, err
        assert (first + rest).count(b"TXT") == 30000, err
    finally:
        a.stop()


def test_a_read_only_store_is_named_as_such(pg_cluster, tmp_path):
    """A read-only PostgreSQL (a standby after a failover, or
    default_transaction_read_only set) was answered 503 "data directory:
    read-only file system" (outside tester 21): the records store is
    named now; and a read while the database is away is not told that
    "nothing was written"."""
    db, uri = pg.fresh_database(pg_cluster, "ro")
    srv = pg.serve_node(tmp_path, "a", uri)
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", {"name": "ro.test"})["result"]["id"]
        path = "/zones/%s/dns_records" % zid
        pg.psql(pg_cluster, "ALTER ROLE zc IN DATABASE %s SET"
                " default_transaction_read_only = on" % db)
        pg.psql(pg_cluster, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = '%s'" % db)
        deadline = time.monotonic() + 20
        while True:
            r = api.call("POST", path, {"type": "TXT", "name": "x.ro.test", "content": "x"})
            msg = r.json()["errors"][0]["message"] if r.status_code != 200 else ""
            if "read-only" in msg:
                break
            assert r.status_code == 503 and time.monotonic() < deadline, (r.status_code, r.text)
            time.sleep(0.2)
        assert r.status_code == 503, r.text
        assert msg.startswith("records store (PostgreSQL): read-only") and \
            msg.endswith("nothing was written"), msg
        assert "data directory" not in msg, msg
        pg.psql(pg_cluster, "ALTER ROLE zc IN DATABASE %s RESET"
                " default_transaction_read_only" % db)
        pg.psql(pg_cluster, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = '%s'" % db)
        deadline = time.monotonic() + 20
        while api.call("POST", path, {"type": "TXT", "name": "y.ro.test",
                                      "content": "y"}).status_code != 200:
            assert time.monotonic() < deadline, "writes never came back"
            time.sleep(0.2)
        # The database away: a read is told it is unavailable, not that
        # nothing was written.
        pg.psql(pg_cluster, "ALTER DATABASE %s ALLOW_CONNECTIONS false" % db)
        pg.psql(pg_cluster, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = '%s'" % db)
        deadline = time.monotonic() + 20
        while True:
            r = api.call("GET", path)
            if r.status_code == 503:
                break
            assert time.monotonic() < deadline, (r.status_code, r.text)
            time.sleep(0.2)
        msg = r.json()["errors"][0]["message"]
        assert "unavailable" in msg and "nothing was written" not in msg, msg
    finally:
        pg.psql(pg_cluster, "ALTER DATABASE %s ALLOW_CONNECTIONS true" % db, check=False)
        srv.stop()
