"""The change log's trim on a PostgreSQL store that several `zonecast
serve` nodes share (docs/postgresql.md "Several nodes"): it keeps every
event that a live node (its heartbeat at most 5 s old, as `zonecast status`
says up) has not applied, whoever trims; a node down longer than that holds
nothing back, and when it runs again it builds every zone from the records.
Two nodes with journal-retention=1 (their writers trim every second), real
PostgreSQL; `zonecast verify` of each node's edge store against it."""

import itertools
import json
import os
import signal
import time

import dns.message
import dns.query
import dns.rcode
import pytest

import pg
from fleet import add_txt, txt
from servers import wait_for

BIG = "big.test."    # full builds of it run in steps of 2,000 nodes
NAMES = 5000
ZONE = "w.test."
LIVE_WINDOW = 5.0    # RECORDS_NODE_DOWN_MS


class World:
    """One test's database (read behind the nodes' backs with psql) and its
    nodes, each with journal-retention=1."""

    def __init__(self, tmp_path, pgdir, db):
        self.tmp, self.pgdir, self.db = tmp_path, pgdir, db
        self.uri = pg.database(pgdir, db)
        self.nodes = []

    def node(self, name, env=None):
        srv = pg.serve_node(self.tmp, name, self.uri,
                            ["node-name=%s" % name, "journal-retention=1"], env=env)
        srv.client_ = srv.client()
        self.nodes.append(srv)
        return srv

    def one(self, sql):
        return int(pg.psql(self.pgdir, sql, db=self.db).strip() or 0)

    def trimmed(self):
        """Where the change log now starts (the trim mark, a position)."""
        return self.one("SELECT coalesce(max(value), 0) FROM counters"
                        " WHERE name = 'trimmed_seq'")

    def applied(self, node):
        """The applied position the node's heartbeat last wrote."""
        return self.one("SELECT applied_pos FROM nodes WHERE name = '%s'" % node)

    def newest(self):
        """The newest position: the end of the newest commit."""
        return self.one("SELECT coalesce(max(pos), 0) FROM log_commits") << 24 | 0xFFFFFF

    def old_commits_after(self, position, age_s):
        """Commits past position that are older than age_s seconds."""
        return self.one("SELECT count(*) FROM log_commits WHERE pos > %d AND"
                        " at < (extract(epoch FROM now()) - %g) * 1000"
                        % (position >> 24, age_s))


@pytest.fixture(scope="module")
def cluster():
    with pg.own_cluster("zonecast-trim.") as pgdir:
        yield pgdir


_databases = itertools.count(1)


@pytest.fixture
def world(cluster, tmp_path):
    w = World(tmp_path, cluster, "trim%d" % next(_databases))
    try:
        yield w
    finally:
        problems = []
        for srv in w.nodes:
            if srv.proc is not None:
                os.kill(srv.proc.pid, signal.SIGCONT)
                problems += ["%s: %s" % (srv.workdir, p) for p in srv.stop()]
        assert not problems, problems


def node_status(srv, name):
    """The node `name` as `zonecast status --json` on srv lists it."""
    cp = srv.run_cli("status", "--data-dir", srv.data_dir, "--json", check=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    nodes = json.loads(cp.stdout)["records_store"]["nodes"]
    return next(n for n in nodes if n["name"] == name)


def soa(port, zone):
    r = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=port,
                      timeout=2)
    return r.answer[0][0].serial if r.rcode() == dns.rcode.NOERROR and r.answer else None


def verified(srv):
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


class Writer:
    """Writes TXT records to ZONE through a node's API, one every 20 ms."""

    def __init__(self, srv, zid):
        self.srv, self.zid, self.names = srv, zid, []

    def write(self):
        name = "w%d.%s" % (len(self.names), ZONE)
        add_txt(self.srv, self.zid, name, "v%d" % len(self.names))
        self.names.append(name)
        time.sleep(0.02)

    def served_by(self, srv):
        return all(txt(srv.port, name) == ['"v%d"' % i] for i, name in enumerate(self.names))


def test_a_live_node_behind_holds_the_log(world, tmp_path):
    """b's builder is held half-way through a full build (the test hook
    ZONECAST_FAULT_PAUSE) for longer than the liveness window, while its
    heartbeat goes on: a writes and trims every second meanwhile, removing
    what b had applied and nothing past it, though a's own events are old
    enough. Released, b follows the log on (no zone built again) and ends
    up equal to a full build; then a's trims move on past the old mark."""
    pause = tmp_path / "pause"
    pause.write_text("")
    a = world.node("a")
    b = world.node("b", env={"ZONECAST_FAULT_PAUSE": str(pause)})
    big = tmp_path / "big.zone"
    big.write_text("$ORIGIN %s\n$TTL 300\n@ SOA ns hm 1 7200 900 1209600 300\n@ NS ns\n"
                   "ns A 192.0.2.53\n" % BIG +
                   "".join("n%d A 192.0.2.%d\n" % (i, i % 250 + 1) for i in range(NAMES)))
    a.run_cli("zone", "import", "--data-dir", a.data_dir, BIG, str(big))
    zid = a.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    w = Writer(a, zid)
    w.write()
    wait_for("b to serve both zones", lambda: w.served_by(b) and soa(b.port, BIG) == 1)

    # A settings change: a full build of BIG on every node, b's held after
    # its first step (held at most 60 s: the hook's limit).
    pause.write_text(BIG + "\n")
    try:
        a.client_.ok("PATCH", "/zones/%s" % a.client_.zone_id(BIG), json={"default_ttl": 600})
        wait_for("b's full build to be held",
                 lambda: "full build held between two steps" in b.log())
        held_at = time.monotonic()
        time.sleep(1.5)  # a heartbeat after the hold began
        b_applied = world.applied("b")
        assert 0 < b_applied < world.newest()

        while time.monotonic() - held_at < LIVE_WINDOW + 3:
            w.write()
        assert node_status(a, "b")["up"], "b's heartbeat stopped while its builder was held"
        assert world.applied("b") == b_applied
        mark = world.trimmed()
        assert 0 < mark <= b_applied, (mark, b_applied)
        assert world.old_commits_after(b_applied, 2) > 0, "nothing old enough to trim was kept"
    finally:
        pause.write_text("")
    wait_for("b to apply the whole log", lambda: world.applied("b") >= world.newest())
    assert w.served_by(b)
    assert "building every zone again" not in b.log(), b.log()[-3000:]
    verified(b)
    verified(a)
    # b no longer holds the log back: a's next trims go past the old mark.
    wait_for("a's trims to go past what b held",
             lambda: w.write() or world.trimmed() > b_applied)


def test_a_node_down_longer_than_the_liveness_window_holds_nothing_back(world):
    """b is stopped (SIGSTOP) while a writes: once b's heartbeat is older
    than the liveness window, a trims past what b applied, a zone deleted
    meanwhile included. Resumed (SIGCONT), b finds the log trimmed past its
    position and builds every zone again in place, without stalling: it
    serves every write and not the deleted zone, and equals a full build."""
    a = world.node("a")
    b = world.node("b")
    zid = a.client_.ok("POST", "/zones", json={"name": ZONE.rstrip(".")})["result"]["id"]
    gone = a.client_.ok("POST", "/zones", json={"name": "gone.test"})["result"]["id"]
    w = Writer(a, zid)
    w.write()
    wait_for("b to serve both zones",
             lambda: w.served_by(b) and soa(b.port, "gone.test.") is not None)
    time.sleep(1.5)  # a heartbeat with what b applied
    b.proc.send_signal(signal.SIGSTOP)
    try:
        stopped_at = time.monotonic()
        time.sleep(0.2)  # a beat b sent just before: committed
        b_applied = world.applied("b")
        a.client_.ok("DELETE", "/zones/%s" % gone)
        wait_for("a's trims to go past what b applied",
                 lambda: w.write() or world.trimmed() > b_applied, timeout=30)
        took = time.monotonic() - stopped_at
        # b's last beat was at most a second before the stop.
        assert took > LIVE_WINDOW - 1.5, "trimmed past a live node after %.1f s" % took
        assert not node_status(a, "b")["up"]
        w.write()
    finally:
        b.proc.send_signal(signal.SIGCONT)
    print("a trimmed past b %.1f s after b stopped" % took)
    wait_for("b to build every zone again", lambda: "every zone built again" in b.log(),
             timeout=30)
    wait_for("b to serve every write", lambda: w.served_by(b))
    assert soa(b.port, "gone.test.") is None
    wait_for("b to apply the whole log", lambda: world.applied("b") >= world.newest())
    assert node_status(a, "b")["stalled"] is None
    verified(b)
    verified(a)
