"""An outside tester's forgeries on the fleet's subjects (docs/fleet.md:
messages on NATS are not authenticated, NATS permissions are the defence):
whatever a forger sends may disturb the fleet while it lasts, but nothing
stays broken once it stops.

- A snapshot copied under a new id and republished with a higher leader
  term: edges load it and keep that term, dropping the real leader's
  lower-term messages for good. The leader, told by the edges' reports,
  takes a term above it (kept across its restarts) with a new history.
- A forged first part of the next commit that never gets its next part:
  the edge's LMDB write transaction stayed open for ever, `fleet digest`
  hung on the writer lock, and the follower's idle checks were skipped
  (a NATS storage loss went unnoticed). The commit is now abandoned after
  5 s, the checks run while a commit is open, and the read-only tools
  never take the writer lock."""

import json
import os
import shutil
import struct
import subprocess
import time

import pytest

import servers
from fleet import NatsServer, digest, hpub, js_last, settle
from test_fleet import Fleet, answers, create_zone

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/nats-server"),
                                reason="nats-server is not installed")


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("%s: not within %ss" % (what, timeout))


def add_a(f, zid, name, addr="192.0.2.7"):
    f.api.ok("POST", "/zones/%s/dns_records" % zid,
             json={"type": "A", "name": name, "content": addr})


def served_everywhere(f, name):
    want = answers(f.primary, name, "A")
    return want[1] and all(answers(e, name, "A") == want for e in f.edges)


def forge_manifest(port, fid, seconds, interval=0.05, **changes):
    """The newest snapshot's parts copied under the id fid, and a manifest
    naming them with `changes` (its other fields the real one's),
    published again and again (racing the leader's repair of the head)
    for `seconds`: the real manifest."""
    m = json.loads(js_last(port, "zonecast-snap", "zonecast.snap.head"))
    for i in range(m["parts"]):
        part = js_last(port, "zonecast-snap", "zonecast.snap.data.%s.%d" % (m["id"], i))
        hpub(port, "zonecast.snap.data.%s.%d" % (fid, i), {"X": "1"}, part)
    forged = dict(m, id=fid, **changes)
    t0 = time.monotonic()
    while True:
        hpub(port, "zonecast.snap.head", {"X": "1"}, json.dumps(forged).encode())
        if time.monotonic() - t0 >= seconds:
            return m
        time.sleep(interval)


def forge_higher_term(port, term, seconds):
    """A manifest of a higher term and a new history (the newest
    snapshot's parts under a new id), published for `seconds`."""
    m = json.loads(js_last(port, "zonecast-snap", "zonecast.snap.head"))
    fid = "%s-%d-%d" % ("00000000deadbee2", m["commit"], term)
    return fid, forge_manifest(port, fid, seconds, epoch="00000000deadbee2", term=term)


def test_forged_higher_term_snapshot_does_not_fence_edges_for_good(tmp_path):
    """A forged term-7 snapshot, republished every 50 ms for 6 s: edges
    load it. Once the forger stops, the primary's new writes reach every
    edge again (it took a term above 7), also after a restart of the
    primary, which keeps its term and history."""
    f = Fleet(tmp_path, edges=2)
    try:
        zid = create_zone(f.api, "forged-term.fleet.test")
        add_a(f, zid, "before.forged-term.fleet.test")
        settle(f.primary, f.edges)
        fid, _ = forge_higher_term(f.nats[0].port, 7, 6)
        time.sleep(1)
        assert any("loaded snapshot %s" % fid in e.log() for e in f.edges), \
            "no edge loaded the forged snapshot: the attack did not happen"
        add_a(f, zid, "after.forged-term.fleet.test")
        wait_for("the write after the forgery at every edge",
                 lambda: served_everywhere(f, "after.forged-term.fleet.test."), 30)
        term = f.api.get("/fleet")["term"]
        assert term > 7, term
        assert "taking term %d" % term in f.primary.log(), f.primary.log()[-3000:]
        # GET /fleet shows each edge's term and history once they follow
        wait_for("every edge reported on the leader's term and history",
                 lambda: all(e["term"] == term and e["same_history"]
                             for e in f.api.get("/fleet")["edges"])
                 and len(f.api.get("/fleet")["edges"]) == 2, 30)
        settle(f.primary, f.edges, timeout=30)
        history = digest(f.primary.data_dir)["history"]
        f.primary.stop()
        f.primary.serve()
        f.primary.client_ = f.api = f.primary.client()
        add_a(f, zid, "restart.forged-term.fleet.test")
        wait_for("the write after a restart at every edge",
                 lambda: served_everywhere(f, "restart.forged-term.fleet.test."), 30)
        assert f.api.get("/fleet")["term"] == term
        settle(f.primary, f.edges, timeout=30)
        assert digest(f.primary.data_dir)["history"] == history
    finally:
        problems = f.stop()
    assert not problems, problems


def test_forged_term_loaded_while_the_primary_was_away(tmp_path):
    """The primary is stopped; a forged term-7 snapshot is loaded by the
    edges and the head manifest is put back as it was (the primary's own):
    the primary, started again, sees nothing odd at the head, but its edges
    report term 7: it rises above it and its writes reach them."""
    f = Fleet(tmp_path, edges=2)
    try:
        zid = create_zone(f.api, "away.fleet.test")
        settle(f.primary, f.edges)
        f.primary.stop()
        port = f.nats[0].port
        fid, real = forge_higher_term(port, 7, 0)
        wait_for("edges to load the forged snapshot",
                 lambda: all("loaded snapshot %s" % fid in e.log() for e in f.edges), 20)
        hpub(port, "zonecast.snap.head", {"X": "1"}, json.dumps(real).encode())
        f.primary.serve()
        f.primary.client_ = f.api = f.primary.client()
        add_a(f, zid, "back.away.fleet.test")
        wait_for("the primary's write at every edge",
                 lambda: served_everywhere(f, "back.away.fleet.test."), 30)
        assert f.api.get("/fleet")["term"] > 7
        settle(f.primary, f.edges, timeout=30)
    finally:
        problems = f.stop()
    assert not problems, problems


def test_a_forged_newer_manifest_is_not_loaded_by_idle_edges(tmp_path):
    """Outside tester 46, against a first cut of the stream-flapping fix
    (an idle edge loaded any manifest of its history at a newer commit
    than its own): one forged manifest, the primary's own history and
    term, a commit above the edges', its parts the real snapshot's copied
    under a new id, sent for 3 s: idle edges loaded it and then skipped
    the real commits it claimed, wrong for good. Idle edges load a
    snapshot for a new history, a stream made again or purged past them,
    or a gap, not for a manifest alone; the real writes after it reach
    every edge, and every edge store equals the primary's."""
    f = Fleet(tmp_path, edges=2)
    try:
        zid = create_zone(f.api, "forged-newer.fleet.test")
        add_a(f, zid, "before.forged-newer.fleet.test")
        settle(f.primary, f.edges)
        port = f.nats[0].port
        m = json.loads(js_last(port, "zonecast-snap", "zonecast.snap.head"))
        fid = "%s-%d-%d-deadbeef" % (m["epoch"], m["commit"] + 3, m["term"])
        forge_manifest(port, fid, 3, interval=0.1, commit=m["commit"] + 3)
        for e in f.edges:
            assert "loaded snapshot %s" % fid not in e.log(), e.log()[-3000:]
        for i in range(5):
            add_a(f, zid, "after%d.forged-newer.fleet.test" % i)
        wait_for("the writes after the forgery at every edge",
                 lambda: served_everywhere(f, "after4.forged-newer.fleet.test."), 30)
        settle(f.primary, f.edges, timeout=30)
    finally:
        problems = f.stop()
    assert not problems, problems


def forge_open_commit(port, state):
    """Part 0 (not final) of the commit after `state`'s, never finished."""
    key = struct.pack(">Q", 1) + b"zz\x00"
    op = struct.pack(">BBHI", 2, 1, len(key), 0) + key
    return hpub(port, "zonecast.txn",
                {"Zc-Epoch": state["history"], "Zc-Term": "0",
                 "Zc-Commit": str(state["commit"] + 1), "Zc-Part": "0",
                 "Zc-Flags": "0"}, op)


def quick_digest(data_dir):
    t0 = time.monotonic()
    cp = subprocess.run([servers.zonecast_bin(), "fleet", "digest", "--data-dir", data_dir],
                        capture_output=True, text=True, timeout=30)
    return cp, time.monotonic() - t0


def test_forged_open_commit_is_abandoned_and_locks_nothing(tmp_path):
    """A forged first part of the next commit: `fleet digest` of the edge
    answers at once (it waited for the writer lock for ever), the edge
    abandons the commit after 5 s (logged), and follows the primary."""
    f = Fleet(tmp_path, edges=1)
    try:
        e = f.edges[0]
        zid = create_zone(f.api, "open.fleet.test")
        settle(f.primary, f.edges)
        assert forge_open_commit(f.nats[0].port, digest(e.data_dir)) == "+OK"
        time.sleep(1)
        cp, took = quick_digest(e.data_dir)
        assert cp.returncode == 0 and took < 3, (cp, took)
        wait_for("the open commit to be abandoned",
                 lambda: "abandoned" in e.log(), 20)
        add_a(f, zid, "after.open.fleet.test")
        settle(f.primary, f.edges, timeout=30)
        assert served_everywhere(f, "after.open.fleet.test.")
    finally:
        problems = f.stop()
    assert not problems, problems


def test_forged_open_commit_then_nats_storage_lost(tmp_path):
    """A forged, never finished first part, then NATS loses its storage:
    the edge notices the recreated stream (its checks ran not while a
    commit was open) and serves the primary's writes after it."""
    f = Fleet(tmp_path, edges=2)
    try:
        zid = create_zone(f.api, "wipe.fleet.test")
        settle(f.primary, f.edges)
        assert forge_open_commit(f.nats[0].port, digest(f.edges[0].data_dir)) == "+OK"
        time.sleep(1)
        n = f.nats[0]
        n.stop()
        shutil.rmtree(os.path.join(n.workdir, "js"))
        n.start()
        for i in range(3):
            add_a(f, zid, "w%d.wipe.fleet.test" % i, "192.0.2.%d" % (60 + i))
        wait_for("the writes after the loss at every edge",
                 lambda: served_everywhere(f, "w2.wipe.fleet.test."), 30)
        settle(f.primary, f.edges, timeout=30)
    finally:
        problems = f.stop()
    assert not problems, problems
