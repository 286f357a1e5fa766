"""Attacks on commit 38d62bf (db_pg.c begin(): a transaction's BEGIN is
queued in the pipeline and goes with its first statement that waits; a
queued BEGIN that fails severs the transaction, db_pg_pipe.c).

What could go wrong: a statement of the transaction running on its own
(autocommit) after its BEGIN was lost with the session, a write
acknowledged that was not committed, a write answered "nothing was
written" that was, or the first request after the server hung up on an
idle connection failing because the hang-up now shows inside the
transaction instead of at a BEGIN of its own. The attacks:

- every backend of the node killed with pg_terminate_backend() while the
  node is idle, then the first API write, UPDATE, batch, API import, zone
  create, DNSSEC enable and CLI zone import (COPY, through the control
  socket) after it: each answered as success, and present;
- the same with the kill racing the request (no wait for the backends to
  go): success and present, or 503 "nothing was written" and absent;
- pg_terminate_backend() of every backend (writer, builder, pool, LISTEN)
  again and again under concurrent API writes, batches and UPDATEs: every
  acknowledged write present, every "nothing was written" absent, verify
  clean, everything acknowledged served;
- two nodes on one database, one node's backends killed again and again
  while both write: the same, checked on both nodes;
- the session lost exactly between begin() and the transaction's first
  statement that waits: an LD_PRELOAD shim (compiled by the test) holds
  the thread that queues the BEGIN (PQsendQueryParams("BEGIN...")); the
  same on the build before the change, PQexec("BEGIN...")) while the test
  terminates the backends or restarts PostgreSQL. A write (API record,
  batch, UPDATE, zone import by COPY, zone create, DNSSEC enable) held
  there must be answered 503 "nothing was written" (SERVFAIL, or the
  CLI's failure) with nothing of it in the store, and the next one must
  succeed; a builder read held there must not stop the write from going
  live;
- a BEGIN that fails with the session alive (the shim sends a failing
  statement in its place), for a batch of several queued units, a zone
  import, a zone create and a builder read: nothing of them written.

No defect of 38d62bf was found. The last two tests show a defect found on
the way that was not the commit's (the build before it had it too): a
full build whose start met a store error was dropped (builder/pass.c
start_job(); see DEFECT below). Fixed since: the build is queued again.

Each test skips when PostgreSQL is not installed."""

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
import shim
from servers import wait_for

NOTHING = "nothing was written"
IN_DOUBT = "may or may not"


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    with pg.own_cluster("zc-abq.") as pgdir:
        yield pgdir


def backends(host, dbname, app=None):
    where = "datname = '%s' AND pid <> pg_backend_pid()" % dbname
    if app is not None:
        where += " AND application_name = '%s'" % app
    out = pg.psql(host, "SELECT pid FROM pg_stat_activity WHERE " + where)
    return set(int(p) for p in out.split())


def terminate(host, dbname, app=None, wait=True):
    """pg_terminate_backend() of every backend on dbname (of application
    app); with wait, until they are gone (their goodbye in the sockets).
    Returns how many were signalled."""
    pids = backends(host, dbname, app)
    if pids:
        pg.psql(host, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                      " WHERE pid IN (%s)" % ",".join(map(str, pids)))
    if wait:
        gone(host, dbname, pids)
    return len(pids)


def gone(host, dbname, pids):
    """Until none of pids is a backend any more."""
    if pids:
        wait_for("terminated backends to go",
                 lambda: not (pids & backends(host, dbname)), 10)


def answer(port, name, rdtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def listed(api, zid):
    return set(r["name"] for r in api.records(zid) if r["type"] == "A")


def update(srv, zone, name, ttl=60, addr="192.0.2.2", timeout=20):
    up = dns.update.UpdateMessage(zone + ".")
    up.add(name + ".", ttl, "A", addr)
    return dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=timeout).rcode()


def settle(api, zid, zone, tag):
    """A record write waited for until live: the builder has applied every
    event before it, full builds included (an idle builder, so that a kill
    that follows cannot meet a full build's start: see
    test_full_build_whose_start_fails_is_not_lost)."""
    name = "settle-%s.%s" % (tag, zone)
    api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
           json={"type": "A", "name": name, "content": "192.0.2.250"}, timeout=60)
    return name


def assert_verify(srv):
    v = srv.verify()
    assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr


# ------------------------------------------------------ idle, then the first of each

def test_first_writes_after_idle_backends_are_terminated(cluster, tmp_path):
    """Every backend of the node killed while it is idle (pg_terminate_
    backend: the FATAL and the EOF wait in each socket), then the first
    write of each kind: begin() checks the connection (ensure_connected()
    and hung_up()) before it queues the BEGIN, so each reconnects and
    succeeds, COPY included (zone import through the control socket)."""
    dbname, uri = pg.fresh_database(cluster, "idle")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "idle.test"})["result"]["id"]
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "warm.idle.test", "content": "192.0.2.1"})
        assert update(srv, "idle.test", "warm-u.idle.test") == dns.rcode.NOERROR
        expected = {"warm.idle.test", "warm-u.idle.test"}
        zfile = tmp_path / "imp.zone"
        zfile.write_text("$ORIGIN imp.test.\n$TTL 300\n@ SOA ns hm 1 7200 900 1209600 300\n"
                         "@ NS ns\nns A 192.0.2.53\n" +
                         "".join("h%d A 10.0.%d.%d\n" % (i, i >> 8, i & 255)
                                 for i in range(300)))

        def api_write(k):
            r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=20,
                         json={"type": "A", "name": "api%d.idle.test" % k,
                               "content": "192.0.2.3"})
            assert r.status_code == 200, ("api write", k, r.status_code, r.text)
            expected.add("api%d.idle.test" % k)

        def upd(k):
            rc = update(srv, "idle.test", "upd%d.idle.test" % k)
            assert rc == dns.rcode.NOERROR, ("update", k, dns.rcode.to_text(rc))
            expected.add("upd%d.idle.test" % k)

        def batch(k):
            names = ["b%d-%d.idle.test" % (k, j) for j in range(5)]
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, timeout=20,
                         json={"posts": [{"type": "A", "name": n, "content": "192.0.2.4"}
                                         for n in names]})
            assert r.status_code == 200, ("batch", k, r.status_code, r.text)
            expected.update(names)

        def api_import(k):
            r = api.call("POST", "/zones/%s/dns_records/import" % zid, timeout=20,
                         data=("imp%d 300 IN A 192.0.2.5\n" % k).encode(),
                         headers={"Content-Type": "text/plain"})
            assert r.status_code == 200, ("import", k, r.status_code, r.text)
            expected.add("imp%d.idle.test" % k)

        def zone_create(k):
            r = api.call("POST", "/zones", json={"name": "z%d.idle-new.test" % k},
                         timeout=20)
            assert r.status_code == 200, ("zone create", k, r.status_code, r.text)

        def dnssec(k):
            z = api.ok("POST", "/zones", json={"name": "s%d.idle-sig.test" % k})["result"]
            expected.add(settle(api, zid, "idle.test", "sig%d" % k))
            assert terminate(cluster, dbname) > 0
            r = api.call("PATCH", "/zones/%s/dnssec" % z["id"], json={"status": "active"},
                         timeout=30)
            assert r.status_code == 200, ("dnssec", k, r.status_code, r.text)
            assert r.json()["result"]["status"] == "active", r.text

        def cli_import(k):
            cp = srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "imp.test.",
                             str(zfile), check=False, timeout=60)
            assert cp.returncode == 0, ("cli import", k, cp.stdout + cp.stderr)

        kinds = [api_write, upd, batch, api_import, zone_create, dnssec, cli_import]
        for k in range(2):
            for kind in kinds:
                expected.add(settle(api, zid, "idle.test", "%s%d" % (kind.__name__, k)))
                if kind is not dnssec:
                    assert terminate(cluster, dbname) > 0
                kind(k)
        # The builder reconnected too: a write waited for until it is live.
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "last.idle.test", "content": "192.0.2.9"})
        expected.add("last.idle.test")
        assert listed(api, zid) == expected
        for name in sorted(expected):
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
        wait_for("imp.test served",
                 lambda: answer(srv.port, "h299.imp.test.") == ["10.0.1.43"], 20)
        assert srv.proc.poll() is None
        assert_verify(srv)
    finally:
        srv.stop()


def test_writes_racing_the_termination_of_idle_backends(cluster, tmp_path):
    """The kill and the first write race (no wait for the backends to go):
    the hang-up may show only inside the transaction, at the queued BEGIN's
    first answer. Each write is then acknowledged and present, or answered
    503 "nothing was written" (SERVFAIL for an UPDATE) and absent (or 503
    in doubt, should the kill meet its COMMIT); once the backends are gone
    the next write succeeds."""
    dbname, uri = pg.fresh_database(cluster, "race")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "race.test"})["result"]["id"]
        acked, refused, upd_acked, failed_upd = set(), set(), set(), set()
        acked.add(settle(api, zid, "race.test", "start"))
        for k in range(12):
            pids = backends(cluster, dbname)
            terminate(cluster, dbname, wait=False)
            name = "r%d.race.test" % k
            if k % 3 == 2:
                rc = update(srv, "race.test", name)
                if rc == dns.rcode.NOERROR:
                    upd_acked.add(name)
                else:
                    assert rc == dns.rcode.SERVFAIL, dns.rcode.to_text(rc)
                    failed_upd.add(name)
            else:
                body = {"type": "A", "name": name, "content": "192.0.2.6"}
                if k % 3 == 1:
                    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, timeout=20,
                                 json={"posts": [body]})
                else:
                    r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=20,
                                 json=body)
                if r.status_code == 200:
                    acked.add(name)
                elif not (r.status_code == 503 and IN_DOUBT in r.text):
                    assert r.status_code == 503 and NOTHING in r.text, (k, r.status_code,
                                                                          r.text)
                    refused.add(name)
            # The next write goes through, whatever the one before met.
            gone(cluster, dbname, pids)
            nxt = "n%d.race.test" % k
            api.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "A", "name": nxt, "content": "192.0.2.7"}, timeout=20)
            acked.add(nxt)
        now = listed(api, zid)
        assert acked | upd_acked <= now, sorted((acked | upd_acked) - now)
        assert not (refused & now), sorted(refused & now)
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "last.race.test", "content": "192.0.2.9"})
        for name in sorted(acked | upd_acked):
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
        assert_verify(srv)
    finally:
        srv.stop()


# ------------------------------------------------------ killed under concurrent writes

class Writers:
    """API single writes, batches and UPDATEs on one or more nodes, each
    outcome recorded: acknowledged, refused with "nothing was written",
    in doubt, or an UPDATE's SERVFAIL."""

    def __init__(self, zone, targets):
        self.zone = zone
        self.targets = targets  # (srv, api, zid)
        self.lock = threading.Lock()
        self.acked, self.refused, self.doubt, self.servfail = set(), set(), set(), set()
        self.bad = []
        self.stop = threading.Event()
        self.threads = []
        for t, target in enumerate(targets):
            for kind in ("api", "batch", "upd"):
                self.threads.append(threading.Thread(target=self.run,
                                                     args=(t, kind, target)))

    def note(self, names, r):
        with self.lock:
            if r.status_code == 200:
                self.acked.update(names)
            elif r.status_code == 503 and NOTHING in r.text:
                self.refused.update(names)
            elif r.status_code == 503 and IN_DOUBT in r.text:
                self.doubt.update(names)
            else:
                self.bad.append((names, r.status_code, r.text[:300]))

    def run(self, t, kind, target):
        srv, api, zid = target
        i = 0
        while not self.stop.is_set():
            i += 1
            base = "%s%d-%d.%s" % (kind, t, i, self.zone)
            try:
                if kind == "api":
                    r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=30,
                                 json={"type": "A", "name": base, "content": "192.0.2.1"})
                    self.note([base], r)
                elif kind == "batch":
                    names = ["x%d.%s" % (j, base) for j in range(4)]
                    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, timeout=30,
                                 json={"posts": [{"type": "A", "name": n,
                                                  "content": "192.0.2.2"} for n in names]})
                    self.note(names, r)
                else:
                    rc = update(srv, self.zone, base, timeout=30)
                    with self.lock:
                        if rc == dns.rcode.NOERROR:
                            self.acked.add(base)
                        elif rc == dns.rcode.SERVFAIL:
                            self.servfail.add(base)
                        else:
                            self.bad.append(([base], dns.rcode.to_text(rc), ""))
            except Exception as e:  # no answer: neither acknowledged nor refused
                with self.lock:
                    self.bad.append(([base], "exception", repr(e)))
                time.sleep(0.05)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=90)


def check_outcomes(w, nodes):
    assert not w.bad, w.bad[:5]
    assert w.acked, "nothing was acknowledged"
    srv0, api0, zid0 = nodes[0]
    # A write waited for until live on each node: the builders follow again.
    for k, (srv, api, zid) in enumerate(nodes):
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "last%d.%s" % (k, w.zone), "content": "192.0.2.9"},
               timeout=30)
        w.acked.add("last%d.%s" % (k, w.zone))
    now = listed(api0, zid0)
    lost = w.acked - now
    assert not lost, ("acknowledged and not in the store", sorted(lost)[:10])
    made = w.refused & now
    assert not made, ("answered 'nothing was written' and in the store", sorted(made)[:10])
    for srv, api, zid in nodes:
        for name in sorted(w.acked):
            wait_for("%s served on %d" % (name, srv.port),
                     lambda: answer(srv.port, name + ".") != [], 20)
        assert srv.proc.poll() is None
        assert_verify(srv)


def test_backends_terminated_under_concurrent_writes(cluster, tmp_path):
    """pg_terminate_backend() of every backend of the node (writer, builder,
    pool, LISTEN session) five times while API writes, batches and UPDATEs
    run: the writer's transaction loses its session with its BEGIN queued,
    answered, or in the middle."""
    dbname, uri = pg.fresh_database(cluster, "conc")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "conc.test"})["result"]["id"]
        killed = 0
        with Writers("conc.test", [(srv, api, zid)]) as w:
            for _ in range(5):
                time.sleep(0.8)
                killed += terminate(cluster, dbname, wait=False)
            time.sleep(0.8)
        assert killed >= 5
        assert w.refused or w.servfail or w.doubt, "no write met a terminated session"
        check_outcomes(w, [(srv, api, zid)])
    finally:
        srv.stop()


def test_two_nodes_one_nodes_backends_terminated(cluster, tmp_path):
    """Two nodes on one database, both writing to one zone; node a's
    backends terminated again and again (its application_name tells them
    apart). Node b is unaffected; every acknowledged write of either is
    present and served by both."""
    dbname, uri = pg.fresh_database(cluster, "two")
    a = pg.node(tmp_path / "a", uri + "&application_name=nodea")
    b = pg.node(tmp_path / "b", uri + "&application_name=nodeb")
    a.serve()
    try:
        api_a = a.client()
        zid = api_a.ok("POST", "/zones", json={"name": "two.test"})["result"]["id"]
        b.serve()
        api_b = b.client()
        nodes = [(a, api_a, zid), (b, api_b, zid)]
        with Writers("two.test", nodes) as w:
            for _ in range(4):
                time.sleep(0.8)
                assert terminate(cluster, dbname, app="nodea", wait=False) > 0
            time.sleep(0.8)
        check_outcomes(w, nodes)
        # Node b's own writes were never refused: its sessions were left alone.
        of_b = [n for n in w.refused | w.servfail if re.search(r"(api|batch|upd)1-", n)]
        assert not of_b, sorted(of_b)
    finally:
        for srv in (a, b):
            if srv.proc is not None:
                srv.stop()


# ------------------------------------------------------ lost between begin() and its first answer

def restart_pg(cluster, mode="fast"):
    pgctl = [os.path.join(pg.bindir(), "pg_ctl"), "-D", os.path.join(cluster, "data"),
             "stop", "-m", mode, "-w"]
    if os.geteuid() == 0:
        pgctl = ["runuser", "-u", "postgres", "--"] + pgctl
    subprocess.run(pgctl, check=True, capture_output=True)
    subprocess.run([pg.DEV_PG, "start", cluster], check=True, capture_output=True)


def test_session_lost_between_begin_and_its_first_statement(cluster, tmp_path):
    env, base = shim.env(tmp_path)
    dbname, uri = pg.fresh_database(cluster, "held")
    pause = shim.Pause(base)
    srv = pg.node(tmp_path / "node", uri, env=env)
    srv.serve()
    zfile = tmp_path / "held-imp.zone"
    zfile.write_text("$ORIGIN held-imp.test.\n$TTL 300\n@ SOA ns hm 1 7200 900 1209600 300\n"
                     "@ NS ns\nns A 192.0.2.53\n" +
                     "".join("h%d A 10.1.%d.%d\n" % (i, i >> 8, i & 255) for i in range(200)))
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "held.test"})["result"]["id"]
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "warm.held.test", "content": "192.0.2.1"})
        sig = api.ok("POST", "/zones", json={"name": "held-sig.test"})["result"]["id"]
        present = {"warm.held.test"}
        absent = set()

        def api_write(k):
            name = "a%d.held.test" % k
            r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=30,
                         json={"type": "A", "name": name, "content": "192.0.2.3"})
            return r.status_code == 503 and NOTHING in r.text, [name], r

        def batch(k):
            names = ["b%d-%d.held.test" % (k, j) for j in range(5)]
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, timeout=30,
                         json={"posts": [{"type": "A", "name": n, "content": "192.0.2.4"}
                                         for n in names]})
            return r.status_code == 503 and NOTHING in r.text, names, r

        def upd(k):
            name = "u%d.held.test" % k
            rc = update(srv, "held.test", name, timeout=30)
            return rc == dns.rcode.SERVFAIL, [name], dns.rcode.to_text(rc)

        def cli_import(k):
            cp = srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "held-imp.test.",
                             str(zfile), check=False, timeout=60)
            return cp.returncode != 0, [], cp.stdout + cp.stderr

        def zone_create(k):
            r = api.call("POST", "/zones", json={"name": "z%d.held-new.test" % k}, timeout=30)
            return r.status_code == 503 and NOTHING in r.text, [], r

        def dnssec(k):
            r = api.call("PATCH", "/zones/%s/dnssec" % sig, json={"status": "active"},
                         timeout=30)
            return r.status_code == 503 and NOTHING in r.text, [], r

        rounds = [(api_write, "kill"), (batch, "kill"), (upd, "kill"),
                  (cli_import, "kill"), (zone_create, "kill"), (dnssec, "kill"),
                  (batch, "restart")]
        for k, (kind, how) in enumerate(rounds):
            present.add(settle(api, zid, "held.test", str(k)))
            pause.arm("W", 2500 if how == "restart" else 1200)
            result = {}
            t = threading.Thread(target=lambda: result.update(out=kind(k)))
            t.start()
            pause.hit()
            if how == "kill":
                assert terminate(cluster, dbname) > 0
            else:
                restart_pg(cluster)
            t.join(timeout=90)
            assert not t.is_alive()
            refused, names, detail = result["out"]
            # The held transaction was this request's: its session is gone,
            # so it must fail, and say that nothing was written.
            assert refused, (kind.__name__, how, getattr(detail, "status_code", detail),
                             getattr(detail, "text", detail))
            absent.update(names)
            pause.done()
            # The next of the same kind goes through (a new session).
            ok, names, detail = (lambda out: (not out[0], out[1], out[2]))(kind(100 + k))
            assert ok, (kind.__name__, "after", how, getattr(detail, "status_code", detail),
                        getattr(detail, "text", detail))
            present.update(names)
        now = listed(api, zid)
        assert present <= now, sorted(present - now)
        assert not (absent & now), ("refused and written", sorted(absent & now))
        assert api.get("/zones/%s/dnssec" % sig)["status"] == "active"

        # A builder read held at its BEGIN, its session terminated: the
        # write it was to build still goes live.
        for how in ("kill", "restart"):
            pause.arm("R", 1500)
            name = "live-%s.held.test" % how
            result = {}

            def live_write():
                result["r"] = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                                       json={"type": "A", "name": name,
                                             "content": "192.0.2.8"}, timeout=60)
            t = threading.Thread(target=live_write)
            t.start()
            pause.hit()
            if how == "kill":
                terminate(cluster, dbname)
            else:
                restart_pg(cluster)
            t.join(timeout=90)
            r = result["r"]
            assert r.status_code == 200, (how, r.status_code, r.text)
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
            present.add(name)
        pause.disarm()
        for name in sorted(present):
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
        wait_for("held-imp.test served",
                 lambda: answer(srv.port, "h199.held-imp.test.") == ["10.1.0.199"], 20)
        assert srv.proc.poll() is None
        assert_verify(srv)
    finally:
        pause.disarm()
        srv.stop()


def test_a_failing_begin_fails_its_whole_batch(cluster, tmp_path):
    """A write transaction's BEGIN that fails with the session alive (the
    shim sends a statement that fails in its place): the server has no
    transaction, and db_pg_pipe.c severs the driver's. The writer is held
    at one batch's BEGIN while more requests queue, so that the failing
    BEGIN is the next batch's, with several units in it: none of them may
    be written (no unit's statements run on their own), each is answered
    with an error, and the next write succeeds. The same for a zone
    import (COPY), a zone create, and a builder read whose BEGIN fails."""
    env, base = shim.env(tmp_path)
    dbname, uri = pg.fresh_database(cluster, "fail")
    hold, fail = shim.Pause(base, 1), shim.Pause(base, 2)
    srv = pg.node(tmp_path / "node", uri, env=env)
    srv.serve()
    zfile = tmp_path / "fail-imp.zone"
    zfile.write_text("$ORIGIN fail-imp.test.\n$TTL 300\n@ SOA ns hm 1 7200 900 1209600 300\n"
                     "@ NS ns\nns A 192.0.2.53\n" +
                     "".join("h%d A 10.2.%d.%d\n" % (i, i >> 8, i & 255) for i in range(100)))
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "fail.test"})["result"]["id"]
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "warm.fail.test", "content": "192.0.2.1"})
        present, absent, failed_batch = {"warm.fail.test"}, set(), []
        lock = threading.Lock()

        def api_write(name):
            r = api.call("POST", "/zones/%s/dns_records" % zid, timeout=30,
                         json={"type": "A", "name": name, "content": "192.0.2.3"})
            with lock:
                if r.status_code == 200:
                    present.add(name)
                else:
                    assert r.status_code in (500, 503), (name, r.status_code, r.text)
                    assert IN_DOUBT not in r.text, r.text
                    absent.add(name)
                    failed_batch.append(name)

        def batch_write(names):
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, timeout=30,
                         json={"posts": [{"type": "A", "name": n, "content": "192.0.2.4"}
                                         for n in names]})
            with lock:
                if r.status_code == 200:
                    present.update(names)
                else:
                    assert r.status_code in (500, 503), (names, r.status_code, r.text)
                    absent.update(names)
                    failed_batch.append(names[0])

        def upd_write(name):
            rc = update(srv, "fail.test", name, timeout=30)
            with lock:
                if rc == dns.rcode.NOERROR:
                    present.add(name)
                else:
                    assert rc == dns.rcode.SERVFAIL, dns.rcode.to_text(rc)
                    absent.add(name)
                    failed_batch.append(name)

        for rnd in range(2):
            hold.arm("W", 1500)
            first = threading.Thread(target=api_write, args=("held%d.fail.test" % rnd,))
            first.start()
            hold.hit()
            fail.arm("W", 0, "F")
            queued = [threading.Thread(target=api_write, args=("q%d-%d.fail.test" % (rnd, i),))
                      for i in range(3)]
            queued.append(threading.Thread(target=batch_write,
                                           args=(["qb%d-%d.fail.test" % (rnd, j)
                                                  for j in range(3)],)))
            queued += [threading.Thread(target=upd_write, args=("qu%d-%d.fail.test" % (rnd, i),))
                       for i in range(2)]
            for t in queued:
                t.start()
            for t in [first] + queued:
                t.join(timeout=60)
                assert not t.is_alive()
            assert fail.claimed(), "no write transaction met the failing BEGIN"
            assert "held%d.fail.test" % rnd in present
        assert failed_batch, "no write met the failing BEGIN"
        # The next write goes through.
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "after.fail.test", "content": "192.0.2.5"})
        present.add("after.fail.test")

        # A zone import (its COPY after the BEGIN) and a zone create.
        fail.arm("W", 0, "F")
        cp = srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "fail-imp.test.",
                         str(zfile), check=False, timeout=60)
        assert fail.claimed() and cp.returncode != 0, cp.stdout + cp.stderr
        zones = [z["name"] for z in api.get("/zones")]
        assert "fail-imp.test" not in zones, zones
        fail.arm("W", 0, "F")
        r = api.call("POST", "/zones", json={"name": "fail-new.test"}, timeout=30)
        assert fail.claimed() and r.status_code in (500, 503), (r.status_code, r.text)
        assert "fail-new.test" not in [z["name"] for z in api.get("/zones")]
        srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "fail-imp.test.",
                    str(zfile), timeout=60)
        api.ok("POST", "/zones", json={"name": "fail-new.test"})
        present.add(settle(api, zid, "fail.test", "new"))

        # A builder read whose BEGIN fails: the write still goes live.
        fail.arm("R", 0, "F")
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "A", "name": "live.fail.test", "content": "192.0.2.8"},
               timeout=60)
        present.add("live.fail.test")
        fail.disarm()

        now = listed(api, zid)
        assert present <= now, sorted(present - now)
        assert not (absent & now), ("refused and written", sorted(absent & now))
        for name in sorted(present):
            wait_for("%s served" % name, lambda: answer(srv.port, name + ".") != [], 20)
        wait_for("fail-imp.test served",
                 lambda: answer(srv.port, "h99.fail-imp.test.") == ["10.2.0.99"], 20)
        wait_for("fail-new.test served", lambda: answer(srv.port, "fail-new.test.", "SOA") != [],
                 20)
        assert srv.proc.poll() is None
        assert_verify(srv)
    finally:
        hold.disarm()
        fail.disarm()
        srv.stop()


# ------------------------------------------------------ a defect found on the way (not 38d62bf's)

# DEFECT, fixed (src/builder/pass.c start_job(); the build before 38d62bf
# had it too): start_job() took a queued full build off the queue before
# builder_full_begin(), and when that fails (its read transaction meets a
# store-wide error: the session terminated or PostgreSQL restarted at that
# moment, a lock timeout) it returns the error without queueing the build
# again, unlike full_failed(), which queues a store-wide failure again
# (pass_queue_full(st, apex, UINT64_MAX)). The next pass finds nothing
# queued, busy is false, and applied_seq moves past the zone-level event:
# the zone is never built. An acknowledged zone create is never served
# (`zonecast verify`: "zone missing at the edge"), an acknowledged zone
# import keeps the old records served ("differs"), until another zone-level
# event or a rebuild. The two tests below failed on 38d62bf and 5c904c6;
# start_job() now queues the build again, as full_failed() does.

def test_full_build_whose_start_fails_is_not_lost(cluster, tmp_path):
    """Deterministic: the shim lets the builder's change-log read through
    (trigger 1) and fails the next read transaction's BEGIN (trigger 2),
    the full build's (records_scan_begin()), after a zone import that the
    CLI saw succeed. The imported records must be served, and verify
    clean. Failed before the fix: the old records stayed served (see
    DEFECT above)."""
    env, base = shim.env(tmp_path)
    dbname, uri = pg.fresh_database(cluster, "fullb")
    first, second = shim.Pause(base, 1), shim.Pause(base, 2)
    srv = pg.node(tmp_path / "node", uri, env=env)
    srv.serve()

    def zone_file(v):
        f = tmp_path / ("imp%d.zone" % v)
        f.write_text("$ORIGIN fullb.test.\n$TTL 300\n@ SOA ns hm %d 7200 900 1209600 300\n"
                     "@ NS ns\nns A 192.0.2.53\nwww A 10.3.0.%d\n" % (v, v))
        return str(f)

    try:
        srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "fullb.test.", zone_file(1))
        wait_for("fullb.test served", lambda: answer(srv.port, "www.fullb.test.") ==
                 ["10.3.0.1"], 20)
        for v in range(2, 6):
            first.arm("R", 0, "P")
            second.arm("R", 0, "F")
            srv.run_cli("zone", "import", "--data-dir", srv.data_dir, "fullb.test.",
                        zone_file(v))
            try:
                wait_for("import %d served" % v, lambda: answer(srv.port, "www.fullb.test.")
                         == ["10.3.0.%d" % v], 10)
            finally:
                first.disarm()
                second.disarm()
        assert_verify(srv)
    finally:
        first.disarm()
        second.disarm()
        srv.stop()


def test_zones_created_while_backends_are_terminated_are_served(cluster, tmp_path):
    """Real clients only: zones created one after another while every
    backend of the node is terminated every 0.15 s. Every zone whose
    creation was acknowledged must be served once the builder has caught
    up, and verify clean. Failed before the fix in most runs (a few of
    some 500 zones): a kill that met the start of a new zone's full build
    lost it (see DEFECT above)."""
    dbname, uri = pg.fresh_database(cluster, "zkill")
    srv = pg.node(tmp_path, uri)
    srv.serve()
    stop = threading.Event()
    acked, bad = [], []
    try:
        api = srv.client()
        zid = api.ok("POST", "/zones", json={"name": "zkill.test"})["result"]["id"]
        settle(api, zid, "zkill.test", "start")

        def creator():
            k = 0
            while not stop.is_set():
                k += 1
                name = "c%d.zkill-new.test" % k
                try:
                    r = api.call("POST", "/zones", json={"name": name}, timeout=30)
                except Exception as e:  # no answer: not acknowledged
                    bad.append(repr(e))
                    continue
                if r.status_code == 200:
                    acked.append(name)
                elif r.status_code != 503:
                    bad.append((name, r.status_code, r.text[:200]))

        th = threading.Thread(target=creator)
        th.start()
        try:
            for _ in range(30):
                time.sleep(0.15)
                pids = backends(cluster, dbname)
                terminate(cluster, dbname, wait=False)
        finally:
            stop.set()
            th.join(timeout=60)
        gone(cluster, dbname, pids)
        assert not bad, bad[:5]
        assert acked
        # Caught up: applied is past every creation.
        settle(api, zid, "zkill.test", "end")
        missing = [z for z in acked if answer(srv.port, z + ".", "SOA") == []]
        assert not missing, ("acknowledged zone creations never served", len(acked), missing)
        assert_verify(srv)
    finally:
        stop.set()
        srv.stop()
