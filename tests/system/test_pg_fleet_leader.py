"""The fleet's leader among zonecast serve nodes sharing a PostgreSQL
records store (issue 17, docs/postgresql.md "The fleet's leader"): one node
at a time publishes to the fleet (NATS JetStream), the others wait and take
over when it dies or stops answering; each leader's term fences the older
ones at JetStream and at every edge. Real PostgreSQL, real nats-server,
real `zonecast edge` processes."""

import json
import signal
import threading
import time

import pytest

import fleet
import pg
from fleet import (add_txt, edge_metric, leading, start_edge, start_pg_primary, txt,
                   verify_edge)
from servers import wait_for

ZONE = "lead.test."


@pytest.fixture
def world(tmp_path):
    with pg.own_cluster("zonecast-pgl.") as pgdir:
        uri = pg.database(pgdir, "lead")
        nats = fleet.NatsServer(str(tmp_path))
        nats.start()
        try:
            yield uri, nats
        finally:
            nats.stop()


def test_leader_killed_under_writes_another_takes_over(world, tmp_path):
    """SIGKILL of the leader while it takes writes: the other node leads
    within seconds (the measured takeover is printed), the edge follows the
    new leader's history, and it ends up serving every acknowledged write,
    to either node, and nothing else (zonecast verify of the edge's store
    against PostgreSQL)."""
    uri, nats = world
    a = start_pg_primary(tmp_path, "a", uri, nats.url)
    first_term = wait_for("a to lead", lambda: leading(a))
    b = start_pg_primary(tmp_path, "b", uri, nats.url)
    time.sleep(0.5)
    assert fleet.fleet_status(b)["leading"] is False
    edge = start_edge(str(tmp_path), "e1", nats.url)
    zid = a.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    add_txt(a, zid, "first." + ZONE, "one")
    wait_for("edge to serve the first write", lambda: txt(edge.port, "first." + ZONE))

    acked, stop = [], threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            name = "w%d.%s" % (i, ZONE)
            try:
                add_txt(a, zid, name, "v%d" % i)
            except Exception:
                return  # a is gone: whatever it did not answer is not acked.
            acked.append(name)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(1.0)
    a.kill9()
    killed = time.monotonic()
    stop.set()
    t.join(30)
    term = wait_for("b to lead", lambda: leading(b), timeout=30)
    took_over = time.monotonic() - killed
    assert term > first_term
    add_txt(b, zid, "after." + ZONE, "two")
    wait_for("edge to serve a write taken by the new leader",
             lambda: txt(edge.port, "after." + ZONE), timeout=30)
    served = time.monotonic() - killed
    print("takeover %.3f s after SIGKILL; the edge served the new leader's write %.3f s "
          "after it" % (took_over, served))
    assert took_over < 10  # The target is 2 s: bench/failover measures it.
    assert len(acked) > 10
    for name in ["first." + ZONE, "after." + ZONE] + acked:
        got = wait_for("edge to serve " + name, lambda: txt(edge.port, name), timeout=10)
        assert len(got) == 1, (name, got)
    wait_for("edge at term %d" % term,
             lambda: edge_metric(edge, "zonecast_fleet_term") == term)
    verify_edge(edge, uri)
    b.verify()
    edge.stop()
    b.stop()


def test_paused_leader_is_fenced(world, tmp_path):
    """A leader paused (SIGSTOP) loses its session and its leadership; the
    other node takes over with a newer term. When the old one wakes up it
    steps down and publishes nothing: its writes still reach the edge,
    through the new leader. A message and a snapshot manifest sent with
    the old term (as a late leader would) are dropped by the edge."""
    uri, nats = world
    a = start_pg_primary(tmp_path, "a", uri, nats.url)
    old = wait_for("a to lead", lambda: leading(a))
    b = start_pg_primary(tmp_path, "b", uri, nats.url)
    edge = start_edge(str(tmp_path), "e1", nats.url)
    zid = a.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    add_txt(a, zid, "before." + ZONE, "one")
    wait_for("edge to serve", lambda: txt(edge.port, "before." + ZONE))
    a.proc.send_signal(signal.SIGSTOP)
    try:
        term = wait_for("b to lead", lambda: leading(b), timeout=30)
        assert term > old
        add_txt(b, zid, "during." + ZONE, "two")
        wait_for("edge to serve b's write", lambda: txt(edge.port, "during." + ZONE),
                 timeout=30)
    finally:
        a.proc.send_signal(signal.SIGCONT)
    wait_for("a to step down", lambda: fleet.fleet_status(a)["leading"] is False, timeout=10)
    add_txt(a, zid, "after." + ZONE, "three")  # a still takes writes: b publishes them.
    wait_for("edge to serve a's write", lambda: txt(edge.port, "after." + ZONE), timeout=30)
    assert leading(b) == term

    # What a late leader would send: a commit and a manifest of its term.
    wait_for("edge at the new term",
             lambda: edge_metric(edge, "zonecast_fleet_term") == term)
    fenced = edge_metric(edge, "zonecast_fleet_fenced_total")
    history = fleet.fleet_status(b)["history"]
    fleet.hpub(nats.port, "zonecast.txn",
               {"Zc-Epoch": history, "Zc-Term": str(old), "Zc-Commit": "999999",
                "Zc-Part": "0", "Zc-Flags": "1"}, b"junk")
    manifest = {"epoch": "%016x" % 0xfeed, "term": old, "commit": 1, "parts": 1,
                "txn_seq": 1, "id": "%016x-1" % 0xfeed}
    fleet.hpub(nats.port, "zonecast.snap.head", {}, json.dumps(manifest).encode())
    wait_for("edge to drop the old term's message",
             lambda: edge_metric(edge, "zonecast_fleet_fenced_total") > fenced)
    time.sleep(2.5)  # The edge looks at the manifest when idle (2 s).
    # Forged newer terms (anyone who may publish could send them) do not
    # capture the edge: a term rises only with a snapshot that loads.
    fleet.hpub(nats.port, "zonecast.txn",
               {"Zc-Epoch": history, "Zc-Term": str(2 ** 62), "Zc-Commit": "999999",
                "Zc-Part": "0", "Zc-Flags": "1"}, b"junk")
    manifest.update(term=2 ** 62)
    fleet.hpub(nats.port, "zonecast.snap.head", {}, json.dumps(manifest).encode())
    time.sleep(2.5)
    assert edge_metric(edge, "zonecast_fleet_term") == term
    add_txt(b, zid, "last." + ZONE, "four")
    wait_for("edge to serve", lambda: txt(edge.port, "last." + ZONE), timeout=30)
    assert txt(edge.port, "before." + ZONE) == ['"one"']
    verify_edge(edge, uri)
    edge.stop()
    a.stop()
    b.stop()
