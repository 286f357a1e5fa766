"""Attacks on the PostgreSQL writer's commit (an outside tester's cases):
COMMIT queued in libpq's pipeline behind the group committer's queued
statements and the read of the commit's change-log position queued behind
it (db_pg.c pg_commit_then(), db_pg_pipe.c pg_pipe_commit(), txn.c
records_write_commit_seq()); the zone row's lock reading the record count
and the transaction's id (zones.c, counts.c); the zone row's serial and
count delta written by one queued UPDATE at commit.

What must hold (docs/design-postgresql.md): acknowledged = committed;
nothing reported as not written ("nothing was written: retry") is in the
store; each zone's versions are gap-free, one per kept write; every
acknowledged write is served, and a ?wait=live API write or an UPDATE
answers promptly when the system is healthy; zones.record_count is the
real count (`zonecast verify`); zone-max-records is exact.

- writer backends terminated in a loop (pg_terminate_backend) and
  PostgreSQL stopped -m immediate and started again, under API writes,
  batches and UPDATEs on several zones;
- the COMMIT's answer lost after the server committed it, the COMMIT lost
  before the server got it, and the commit's position read failing (an
  LD_PRELOAD shim on the writer thread's libpq calls, compiled here);
- a statement queued at commit (the zone row's UPDATE) failing, and the
  COMMIT itself failing in a deferred trigger: the whole batch is undone
  and every unit of it told so;
- zone-max-records reached by concurrent writers on two nodes, with
  units rolled back inside group commits (duplicates, prerequisites);
- group commits over more than 8 zones (the per-transaction counts table
  holds 8);
- zones deleted and made again while ?wait=live writes and UPDATEs queue;
- ?wait=live writes and UPDATEs answered promptly.

Runs its own PostgreSQL cluster (dev/pg); skips when it is not installed."""

import os
import random
import re
import subprocess
import threading
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.update
import pytest

import pg
import servers

NOERROR, SERVFAIL = dns.rcode.NOERROR, dns.rcode.SERVFAIL
INDOUBT_TEXT = "may or may not"
NOT_WRITTEN_TEXT = "nothing was written"


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(servers.zonecast_bin()):
        pytest.skip("zonecast is not built")
    with pg.own_cluster("zc-pgc.") as pgdir:
        yield pgdir


def sql(cluster, db, text, check=True):
    return pg.psql(cluster, text, db=db, check=check)


def start_node(tmp_path, name, uri, options=(), env=None):
    srv = pg.serve_node(tmp_path, name, uri, options=options, env=env)
    return srv


def stop_clean(*nodes):
    problems = []
    for srv in nodes:
        if srv is not None and srv.proc is not None:
            problems += srv.stop()
    return problems


def pg_ctl(cluster, *args):
    ctl = [os.path.join(pg.bindir(), "pg_ctl"), "-D", os.path.join(cluster, "data")] + list(args)
    if os.geteuid() == 0:
        ctl = ["runuser", "-u", "postgres", "--"] + ctl
    subprocess.run(ctl, check=True, capture_output=True)


def restart_pg(cluster, mode="immediate", down=0.3):
    pg_ctl(cluster, "stop", "-m", mode, "-w")
    time.sleep(down)
    subprocess.run([pg.DEV_PG, "start", cluster], check=True, capture_output=True)


def answer(port, name, rdtype="A", timeout=3):
    r = dns.query.tcp(dns.message.make_query(name, rdtype), "127.0.0.1", port=port,
                      timeout=timeout)
    return r.rcode(), sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def soa_serial(port, zone):
    r = dns.query.tcp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=port, timeout=3)
    return r.answer[0][0].serial if r.answer else None


def wait_for(what, fn, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for %s" % what)
        time.sleep(0.05)


def verify_clean(srv):
    v = srv.verify()
    assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr


def new_zone(api, name):
    return api.ok("POST", "/zones", json={"name": name})["result"]["id"]


def zone_serial(api, zid):
    return api.get("/zones/%s" % zid)["serial"]


def counts(cluster, db, zone):
    """(zones.record_count, the real count) of a zone."""
    out = sql(cluster, db, "SELECT record_count, (SELECT count(*) FROM records r WHERE"
                           " r.zone_id = z.id) FROM zones z WHERE name = '%s.'" % zone)
    kept, real = out.strip().split("|")
    return int(kept), int(real)


def store_names(api, zid):
    return [r["name"] for r in api.records(zid)]


def version_index_problems(cluster, dbname, zone):
    """Every version with events indexed at its first event, the versions a
    gap-free run (test_attack_pipeline.py's check)."""
    q = ("WITH z AS (SELECT id FROM zones WHERE name = '%s.'),"
         " firsts AS (SELECT version, min(seq) AS seq FROM changes WHERE"
         " zone_id = (SELECT id FROM z) GROUP BY version)"
         " SELECT 'unindexed ' || f.version || ' ' || f.seq || ' ' || coalesce(zv.seq::text, '-')"
         " FROM firsts f LEFT JOIN zone_versions zv ON zv.zone_id = (SELECT id FROM z)"
         " AND zv.version = f.version WHERE zv.seq IS DISTINCT FROM f.seq"
         " UNION ALL SELECT 'gap ' || v FROM generate_series((SELECT min(version) FROM"
         " firsts), (SELECT max(version) FROM firsts)) v WHERE v NOT IN"
         " (SELECT version FROM firsts)" % zone)
    return sql(cluster, dbname, q).split("\n")[:-1]


def zonecast_backends(cluster, db, writing_only=False):
    cond = (" AND (backend_xid IS NOT NULL OR state LIKE 'idle in transaction%%'"
            " OR query ILIKE 'COMMIT%%')") if writing_only else ""
    out = sql(cluster, "postgres", "SELECT pid FROM pg_stat_activity WHERE datname = '%s'"
                                   " AND pid <> pg_backend_pid()%s" % (db, cond), check=False)
    return [int(x) for x in out.split()]


def terminate(cluster, pids):
    if pids:
        sql(cluster, "postgres", "SELECT pg_terminate_backend(pid) FROM unnest(ARRAY[%s])"
                                 " AS pid" % ",".join(map(str, pids)), check=False)


class Outcomes:
    """What each write was told, by unit: (name prefix, zone, how many
    records, kind, status). kind: "ok" acknowledged; "doubt" in doubt (503
    "may or may not", an UPDATE's SERVFAIL, a lost connection); "no"
    reported as not written. wrong: answers that are wrong whatever the
    store holds; slow: (prefix, status, seconds) of answers past 2 s."""

    def __init__(self):
        self.lock = threading.Lock()
        self.units = []
        self.slow = []
        self.wrong = []

    def add(self, prefix, zone, n, kind, status, elapsed=0.0):
        with self.lock:
            self.units.append((prefix, zone, n, kind, status))
            if elapsed > 2.0:
                self.slow.append((prefix, status, round(elapsed, 2)))

    def bad(self, *what):
        with self.lock:
            self.wrong.append(what)

    def count(self, kind):
        return sum(1 for u in self.units if u[3] == kind)


def api_kind(r):
    if r.status_code == 200:
        return "ok"
    if r.status_code == 202:
        return "ok"  # committed, not live yet
    if r.status_code == 503 and INDOUBT_TEXT in r.text:
        return "doubt"
    return "no"


def check_units(cluster, db, api, zones, out, v0):
    """zones: name -> id. Every acknowledged unit whole in the store, every
    unit reported not written absent, each unit whole or absent; each
    zone's serial = its first serial + the units kept; gap-free versions;
    record_count right. Returns the units kept by zone."""
    kept = {z: 0 for z in zones}
    problems = list(out.wrong)
    names = {z: store_names(api, zid) for z, zid in zones.items()}
    for prefix, zone, n, kind, status in out.units:
        mine = [x for x in names[zone] if x.startswith(prefix)]
        if len(mine) not in (0, n):
            problems.append(("torn", prefix, kind, status, len(mine), n))
        if kind == "ok" and len(mine) != n:
            problems.append(("acknowledged, not stored", prefix, status, len(mine)))
        if kind == "no" and mine:
            problems.append(("reported not written, stored", prefix, status, len(mine)))
        if len(mine) == n:
            kept[zone] += 1
    for z in zones:
        serial = int(sql(cluster, db, "SELECT serial FROM zones WHERE name = '%s.'" % z))
        if serial != v0[z] + kept[z]:
            problems.append(("serial", z, serial, v0[z], kept[z]))
        gaps = version_index_problems(cluster, db, z)
        if gaps:
            problems.append(("versions", z, gaps[:5]))
        kc, real = counts(cluster, db, z)
        if kc != real:
            problems.append(("record_count", z, kc, real))
    assert not problems, problems[:20]
    return kept


def summary(out):
    by = {}
    for u in out.units:
        key = (u[3], u[4][0] if isinstance(u[4], tuple) else str(u[4])[:40])
        by[key] = by.get(key, 0) + 1
    print("outcomes:", sorted(by.items(), key=str), "slow:", out.slow[:10])
    seen = set()
    for u in out.units:
        if u[3] != "ok" and isinstance(u[4], tuple) and (u[3], u[4][1][:60]) not in seen:
            seen.add((u[3], u[4][1][:60]))
            print("  ", u[0], u[3], u[4])


# ------------------------------------------------------------ writers

def api_single_writer(srv, token, zid, zone, tag, out, stop, live=False, limit=None):
    api = servers.ApiClient(srv.api_url, token)
    i = 0
    while not stop.is_set() and (limit is None or i < limit):
        prefix = "%s-%d-" % (tag, i)
        i += 1
        t0 = time.monotonic()
        try:
            r = api.call("POST", "/zones/%s/dns_records%s" % (zid, "?wait=live" if live else ""),
                         json={"type": "A", "name": prefix + "0." + zone,
                               "content": "192.0.2.1"}, timeout=40)
            kind, st = api_kind(r), (r.status_code, r.text[:160])
        except Exception as e:  # noqa: BLE001 - a lost connection is no answer
            kind, st = "doubt", repr(e)[:160]
        out.add(prefix, zone, 1, kind, st, time.monotonic() - t0)


def api_batch_writer(srv, token, zid, zone, tag, out, stop, size=12, bad_every=3):
    """Batches of `size` records; every bad_every-th one has a duplicate in
    the middle (refused, 400/409)."""
    api = servers.ApiClient(srv.api_url, token)
    i = 0
    while not stop.is_set():
        prefix = "%s-%d-" % (tag, i)
        bad = bad_every and i % bad_every == bad_every - 1
        i += 1
        posts = [{"type": "A", "name": "%s%d.%s" % (prefix, j, zone),
                  "content": "192.0.2.%d" % (j + 1)} for j in range(size)]
        if bad:
            posts.insert(size // 2, dict(posts[0]))
        t0 = time.monotonic()
        try:
            r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={"posts": posts},
                         timeout=40)
            kind, st = api_kind(r), (r.status_code, r.text[:160])
        except Exception as e:  # noqa: BLE001
            kind, st = "doubt", repr(e)[:160]
        if bad and kind == "ok":
            out.bad("batch with a duplicate acknowledged", prefix, st)
        out.add(prefix, zone, size, kind, st, time.monotonic() - t0)


def update_writer(srv, zone, tag, out, stop, size=3, bad_every=4):
    """UPDATEs of `size` adds; every bad_every-th one has a prerequisite that
    fails (NXRRSET: nothing written)."""
    i = 0
    while not stop.is_set():
        prefix = "%s-%d-" % (tag, i)
        bad = bad_every and i % bad_every == bad_every - 1
        i += 1
        up = dns.update.UpdateMessage(zone + ".")
        if bad:
            up.present("nowhere-%s.%s." % (prefix.rstrip("-"), zone), "A")
        for j in range(size):
            up.add("%s%d.%s." % (prefix, j, zone), 60, "A", "192.0.2.%d" % (j + 1))
        t0 = time.monotonic()
        try:
            rc = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=40).rcode()
            kind = "ok" if rc == NOERROR else "doubt" if rc == SERVFAIL else "no"
        except Exception as e:  # noqa: BLE001
            rc, kind = repr(e)[:160], "doubt"
        if bad and kind == "ok":
            out.bad("UPDATE with a failing prerequisite acknowledged", prefix)
        out.add(prefix, zone, size, kind, "dns:%s" % rc, time.monotonic() - t0)


def run_writers(targets, seconds, disrupt=None, period=0.15):
    """Starts the writer threads (callables taking stop), runs disrupt()
    every `period` s for `seconds`, stops and joins them."""
    stop = threading.Event()
    threads = [threading.Thread(target=t, args=(stop,), daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            time.sleep(period)
            if disrupt is not None:
                disrupt()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=90)
    assert not any(t.is_alive() for t in threads), "a writer hung"


# ------------------------------------------------------------ backends killed, PostgreSQL restarted

def writers_on(srv, token, zones, tag, live_zone=None):
    """A writer of each kind on each zone: API singles (?wait=live on
    live_zone), API batches, UPDATEs."""
    targets = []
    for k, (z, zid) in enumerate(sorted(zones.items())):
        live = z == live_zone
        targets.append(lambda stop, z=z, zid=zid, k=k, live=live: api_single_writer(
            srv, token, zid, z, "%ss%d" % (tag, k), OUT[0], stop, live=live))
        targets.append(lambda stop, z=z, zid=zid, k=k: api_batch_writer(
            srv, token, zid, z, "%sb%d" % (tag, k), OUT[0], stop))
        targets.append(lambda stop, z=z, k=k: update_writer(srv, z, "%su%d" % (tag, k),
                                                            OUT[0], stop))
    return targets


OUT = [None]


def setup_zones(api, names):
    zones = {z: new_zone(api, z) for z in names}
    v0 = {z: zone_serial(api, zid) for z, zid in zones.items()}
    return zones, v0


def after_disruption(srv, api, cluster, db, zones, out, v0):
    """The node recovers: a ?wait=live write per zone answers 200 at once,
    then every acknowledged unit is stored, served, and the store agrees."""
    for z, zid in zones.items():
        t0 = time.monotonic()
        r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid, timeout=60,
                     json={"type": "A", "name": "after." + z, "content": "192.0.2.9"})
        assert r.status_code == 200 and r.json()["result"].get("zone_live") is not False, r.text
        assert time.monotonic() - t0 < 5, ("first write after the disruption", z,
                                           time.monotonic() - t0)
    # the extra write is one version per zone
    kept = check_units(cluster, db, api, zones, out, {z: v0[z] + 1 for z in zones})
    for z in zones:
        serial = int(sql(cluster, db, "SELECT serial FROM zones WHERE name = '%s.'" % z))
        wait_for("%s serial %d served" % (z, serial), lambda: soa_serial(srv.port, z) == serial)
    acked = [u for u in out.units if u[3] == "ok"]
    for prefix, z, n, _, _ in acked[::5]:
        rc, got = answer(srv.port, "%s0.%s." % (prefix, z))
        assert got, (prefix, z, rc)
    verify_clean(srv)
    return kept


def test_writer_backends_terminated_in_a_loop(cluster, tmp_path):
    db, uri = pg.fresh_database(cluster, "kill")
    srv = start_node(tmp_path, "n", uri)
    try:
        token = srv.create_token()
        api = servers.ApiClient(srv.api_url, token)
        zones, v0 = setup_zones(api, ["k1.test", "k2.test"])
        OUT[0] = out = Outcomes()
        rnd = random.Random(7)
        killed = []

        def disrupt():
            pids = zonecast_backends(cluster, db, writing_only=rnd.random() < 0.7)
            if pids:
                pick = pids if rnd.random() < 0.3 else [rnd.choice(pids)]
                terminate(cluster, pick)
                killed.extend(pick)

        run_writers(writers_on(srv, token, zones, "t", live_zone="k1.test"), 10, disrupt,
                    period=0.12)
        summary(out)
        assert killed
        assert out.count("ok") > 20 and out.count("doubt") + out.count("no") > 0
        after_disruption(srv, api, cluster, db, zones, out, v0)
        assert srv.proc.poll() is None
    finally:
        problems = stop_clean(srv)
    assert not problems, problems


def test_postgresql_stopped_immediate_and_started_under_writes(cluster, tmp_path):
    db, uri = pg.fresh_database(cluster, "rst")
    srv = start_node(tmp_path, "n", uri)
    try:
        token = srv.create_token()
        api = servers.ApiClient(srv.api_url, token)
        zones, v0 = setup_zones(api, ["r1.test", "r2.test"])
        OUT[0] = out = Outcomes()
        rounds = []

        def disrupt():
            restart_pg(cluster, "immediate", down=0.5)
            rounds.append(1)

        run_writers(writers_on(srv, token, zones, "r", live_zone="r2.test"), 9, disrupt,
                    period=2.5)
        summary(out)
        assert len(rounds) >= 3
        assert out.count("ok") > 20 and out.count("doubt") + out.count("no") > 0
        after_disruption(srv, api, cluster, db, zones, out, v0)
        assert srv.proc.poll() is None
    finally:
        problems = stop_clean(srv)
    assert not problems, problems
