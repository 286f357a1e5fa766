"""The fleet's leader among zonecast serve nodes sharing a PostgreSQL
records store (issue 17, docs/postgresql.md "The fleet's leader"): one node
at a time publishes to the fleet (NATS JetStream), the others wait and take
over when it dies or stops answering; each leader's term fences the older
ones at JetStream and at every edge. Real PostgreSQL, real nats-server,
real `zonecast edge` processes."""

import json
import os
import signal
import threading
import time

import pytest

import fleet
import pg
from fleet import add_txt, edge_metric, leading, start_pg_primary, txt, verify_edge
from servers import wait_for
from test_attack_leader import SerialWatch, backwards, head_manifest

ZONE = "lead.test."


# Every node and edge started here (node(), start_edge()): the world
# fixture stops those still running, even when a test fails half-way.
_started = []


@pytest.fixture
def world(tmp_path):
    with pg.own_cluster("zonecast-pgl.") as pgdir:
        uri = pg.database(pgdir, "lead")
        nats = fleet.NatsServer(str(tmp_path))
        nats.start()
        problems = []
        try:
            yield uri, nats
        finally:
            for s in _started:
                if s.proc is not None:
                    os.kill(s.proc.pid, signal.SIGCONT)
                    problems += ["%s: %s" % (s.workdir, p) for p in s.stop()]
            _started.clear()
            nats.stop()
        assert not problems, problems


def node(tmp_path, name, uri, nats, env=None):
    """A serve node that may lead (fleet.start_pg_primary), stopped by the
    world fixture."""
    srv = start_pg_primary(tmp_path, name, uri, nats.url, env=env)
    _started.append(srv)
    return srv


def start_edge(tmp_path, nats, name="e1"):
    """An edge (fleet.start_edge), stopped by the world fixture."""
    e = fleet.start_edge(str(tmp_path), name, nats.url)
    _started.append(e)
    return e


def test_leader_killed_under_writes_another_takes_over(world, tmp_path):
    """SIGKILL of the leader while it takes writes: the other node leads
    within seconds (the measured takeover is printed), the edge follows the
    new leader's history, and it ends up serving every acknowledged write,
    to either node, and nothing else (zonecast verify of the edge's store
    against PostgreSQL)."""
    uri, nats = world
    a = node(tmp_path, "a", uri, nats)
    first_term = wait_for("a to lead", lambda: leading(a))
    b = node(tmp_path, "b", uri, nats)
    time.sleep(0.5)
    assert fleet.fleet_status(b)["leading"] is False
    edge = start_edge(tmp_path, nats)
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
    a = node(tmp_path, "a", uri, nats)
    old = wait_for("a to lead", lambda: leading(a))
    b = node(tmp_path, "b", uri, nats)
    edge = start_edge(tmp_path, nats)
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


# -- a leader's own build against the records store (fleet.h "Catching up") --

BIG = 2500  # nodes: a full build of the zone runs in two steps (2,000 each)


def manifest_id(nats):
    """The id of the newest snapshot manifest (None: none, or unreadable)."""
    try:
        return (head_manifest(nats) or {}).get("id")
    except ValueError:
        return None


def epoch(uri):
    """leader.epoch: the last term taken by any node."""
    host = uri.split("host=")[1]
    return int(pg.psql(host, "SELECT epoch FROM leader", db=uri.split("/")[3].split("?")[0]))


def big_zone(srv, edge, others=()):
    """A zone of BIG nodes, served by the edge and by the nodes in others;
    its id."""
    zid = srv.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    posts = [{"type": "TXT", "name": "n%d.%s" % (i, ZONE), "content": "v"}
             for i in range(BIG)]
    srv.client_.ok("POST", "/zones/%s/dns_records/batch" % zid, json={"posts": posts})
    last = "n%d.%s" % (BIG - 1, ZONE)
    for s in (edge,) + tuple(others):
        wait_for("%s to serve the zone" % s.port, lambda: txt(s.port, last), timeout=60)
    return zid


def hold_full_build(pause, srv, zid, held):
    """A settings change (a full build, in steps) through srv, held half-way
    on the node `held`, whose ZONECAST_FAULT_PAUSE file is pause."""
    pause.write_text(ZONE + "\n")
    srv.client_.ok("PATCH", "/zones/%s" % zid, json={"default_ttl": 600})
    wait_for("the full build to be held on the lagging node",
             lambda: "full build held between two steps" in held.log(), timeout=30)


def test_new_leader_waits_for_its_own_build(world, tmp_path):
    """The waiting node's build lags (a full build of the zone held half-way,
    ZONECAST_FAULT_PAUSE) while the leader builds and publishes newer
    versions; the leader is killed. The waiting node takes the lock but
    begins its history only once its own build has applied everything the
    records store held when it took over: the edge never loads a snapshot
    older than what it served (SOA serial watched all along)."""
    uri, nats = world
    pause = tmp_path / "pause"
    pause.write_text("")
    a = node(tmp_path, "a", uri, nats)
    wait_for("a to lead", lambda: leading(a))
    b = node(tmp_path, "b", uri, nats, env={"ZONECAST_FAULT_PAUSE": str(pause)})
    edge = start_edge(tmp_path, nats)
    zid = big_zone(a, edge, (b,))
    hold_full_build(pause, a, zid, b)
    for i in range(3):
        add_txt(a, zid, "late%d.%s" % (i, ZONE), "x")
    wait_for("edge to serve the late writes", lambda: txt(edge.port, "late2." + ZONE))
    watch = SerialWatch(edge, ZONE)
    time.sleep(0.2)
    a.kill9()
    killed = time.monotonic()
    wait_for("b to take the lock", lambda: "fleet leadership taken by" in b.log(), timeout=30)
    time.sleep(1.0)
    seen = list(watch.seen)
    assert not backwards(seen), "the edge went back: %s" % seen
    assert not leading(b), "b leads while its build is held"
    pause.write_text("")
    term = wait_for("b to lead", lambda: leading(b), timeout=30)
    print("b led %.3f s after the kill (its build held for about 1 s of it)"
          % (time.monotonic() - killed))
    assert "build reached the records store's head" in b.log()
    add_txt(b, zid, "after." + ZONE, "two")
    wait_for("edge to serve b's write", lambda: txt(edge.port, "after." + ZONE), timeout=30)
    wait_for("edge at b's term", lambda: edge_metric(edge, "zonecast_fleet_term") == term)
    seen = watch.stop()
    assert seen and not backwards(seen), seen
    assert txt(edge.port, "late2." + ZONE) == ['"x"']
    verify_edge(edge, uri)
    b.verify()


def test_new_leader_that_cannot_catch_up_gives_the_lead_back(world, tmp_path):
    """As above, but the lagging node's build stays held past the 3 s it
    may wait: it gives the lead back, says why, and takes no other term
    while its build is behind; a node whose build is current leads. Once
    its build goes on the lagging node may lead again, and does when the
    other dies. The edge never goes back."""
    uri, nats = world
    pause = tmp_path / "pause"
    pause.write_text("")
    a = node(tmp_path, "a", uri, nats)
    wait_for("a to lead", lambda: leading(a))
    b = node(tmp_path, "b", uri, nats, env={"ZONECAST_FAULT_PAUSE": str(pause)})
    edge = start_edge(tmp_path, nats)
    zid = big_zone(a, edge, (b,))
    hold_full_build(pause, a, zid, b)
    add_txt(a, zid, "late." + ZONE, "x")
    wait_for("edge to serve the late write", lambda: txt(edge.port, "late." + ZONE))
    watch = SerialWatch(edge, ZONE)
    a.kill9()
    wait_for("b to give the lead back", lambda: "giving the lead back" in b.log(),
             timeout=30)
    taken = epoch(uri)
    time.sleep(2.5)
    assert epoch(uri) == taken, "b took terms while its build was behind"
    assert not leading(b)
    c = node(tmp_path, "c", uri, nats)
    term = wait_for("c to lead", lambda: leading(c), timeout=30)
    add_txt(c, zid, "c." + ZONE, "c")
    wait_for("edge to serve c's write", lambda: txt(edge.port, "c." + ZONE), timeout=30)
    pause.write_text("")
    wait_for("b's build to catch up", lambda: "it may lead again" in b.log(), timeout=30)
    assert leading(c) == term
    c.kill9()
    newer = wait_for("b to lead", lambda: leading(b), timeout=30)
    assert newer > term
    add_txt(b, zid, "b." + ZONE, "b")
    wait_for("edge to serve b's write", lambda: txt(edge.port, "b." + ZONE), timeout=30)
    seen = watch.stop()
    assert seen and not backwards(seen), seen
    verify_edge(edge, uri)


def test_leader_whose_build_stalls_steps_down(world, tmp_path):
    """The leader's own build stops (a full build held half-way) while the
    records store moves on: it publishes nothing new, so after 3 s it steps
    down and the other node, whose build is current, leads and publishes
    the writes taken meanwhile. The stalled node does not take the lead
    back while its build is behind; once it has caught up it leads again
    when the other dies."""
    uri, nats = world
    pause = tmp_path / "pause"
    pause.write_text("")
    a = node(tmp_path, "a", uri, nats, env={"ZONECAST_FAULT_PAUSE": str(pause)})
    first = wait_for("a to lead", lambda: leading(a))
    b = node(tmp_path, "b", uri, nats)
    edge = start_edge(tmp_path, nats)
    zid = big_zone(b, edge, (a, b))
    watch = SerialWatch(edge, ZONE)
    hold_full_build(pause, b, zid, a)
    held = time.monotonic()
    add_txt(b, zid, "during." + ZONE, "x")
    term = wait_for("b to lead", lambda: leading(b), timeout=30)
    took = time.monotonic() - held
    print("b led %.3f s after a's build stopped" % took)
    assert term > first
    assert "build has not moved" in a.log()
    wait_for("edge to serve the write taken meanwhile",
             lambda: txt(edge.port, "during." + ZONE), timeout=30)
    time.sleep(2)
    assert leading(b) == term and epoch(uri) == term, "a took the lead back"
    pause.write_text("")
    wait_for("a's build to catch up", lambda: "it may lead again" in a.log(), timeout=30)
    b.kill9()
    newer = wait_for("a to lead", lambda: leading(a), timeout=30)
    assert newer > term
    add_txt(a, zid, "after." + ZONE, "y")
    wait_for("edge to serve a's write", lambda: txt(edge.port, "after." + ZONE), timeout=30)
    seen = watch.stop()
    assert seen and not backwards(seen), seen
    verify_edge(edge, uri)


def test_forged_manifest_is_replaced_by_the_leader(world, tmp_path):
    """Someone allowed to publish puts a manifest of their own at the head
    of the snapshot stream (readable, naming parts that do not exist; then
    one that cannot be read), and no takeover follows. The leader sees a
    manifest that is not its own at the head and publishes its own again,
    so a fresh edge bootstraps within seconds, not at the next snapshot
    (fleet-snapshot-mib of changes later)."""
    uri, nats = world
    a = node(tmp_path, "a", uri, nats)
    term = wait_for("a to lead", lambda: leading(a))
    e1 = start_edge(tmp_path, nats)
    zid = a.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    add_txt(a, zid, "first." + ZONE, "one")
    wait_for("e1 to serve", lambda: txt(e1.port, "first." + ZONE))
    own = head_manifest(nats)
    assert own["term"] == term
    forged = {"epoch": "%016x" % 0xfeed, "term": term + 5, "commit": 1, "parts": 3,
              "txn_seq": 1, "id": "%016x-1-%d" % (0xfeed, term + 5)}
    edges = [e1]
    for i, body in enumerate((json.dumps(forged).encode(), b"{not json")):
        fleet.hpub(nats.port, "zonecast.snap.head", {}, body)
        edges.append(start_edge(tmp_path, nats, name="fresh%d" % i))
        wait_for("a fresh edge to serve, after a forged manifest",
                 lambda: txt(edges[-1].port, "first." + ZONE), timeout=15)
        assert manifest_id(nats) == own["id"]
    assert "not this leader's" in a.log()
    add_txt(a, zid, "second." + ZONE, "two")
    for e in edges:
        wait_for("%s to serve the write" % e.name, lambda: txt(e.port, "second." + ZONE),
                 timeout=10)
    assert leading(a) == term
    for e in edges:
        verify_edge(e, uri)
