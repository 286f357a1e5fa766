"""Operating several zonecast serve nodes on one PostgreSQL records store
(issue 17, docs/postgresql.md "Nodes and their heartbeats", docs/metrics.md):
`zonecast status` on any node shows the store, the leader and every node
with its applied position; a node killed with SIGKILL shows as down within
seconds and up again once restarted; a clean stop takes its row away. The
metrics endpoint gives the records store's write and read latencies by
backend and zonecast_records_store_up, which goes to 0 while PostgreSQL is
stopped and back to 1 when it returns (scraped over HTTP, checked by
promtool, and by Debian's prometheus when installed)."""

import json
import os
import socket
import subprocess
import time

import dns.message
import dns.query
import pytest

import pg
import servers
from servers import wait_for
from test_metrics import PROMETHEUS, PROMTOOL, Prometheus, http_get, scrape, value


@pytest.fixture
def cluster():
    with pg.own_cluster("zonecast-pgst.") as pgdir:
        yield pgdir


def zonecast(*args, check=True):
    cp = subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                        text=True, timeout=60)
    if check:
        assert cp.returncode == 0, cp.stdout + cp.stderr
    return cp


def status(srv):
    """`zonecast status --json` of a node (once its control socket, which
    opens after DNS, answers)."""
    def ask():
        cp = zonecast("status", "--data-dir", srv.data_dir, "--json", check=False)
        return cp.returncode == 0 and json.loads(cp.stdout)
    return wait_for("the control socket of %s" % srv.data_dir, ask)


def status_text(srv):
    return zonecast("status", "--data-dir", srv.data_dir).stdout


def node_name(srv):
    """node-name's default: HOST:DATA_DIR (the data directory absolute)."""
    return "%s:%s" % (socket.gethostname(), os.path.abspath(srv.data_dir))


def nodes_of(srv):
    """{name: node} of the nodes `status` on srv lists."""
    return {n["name"]: n for n in status(srv)["records_store"]["nodes"]}


def import_zone(tmp_path, srv, zone="st.test."):
    path = tmp_path / "st.zone"
    path.write_text("$ORIGIN %s\n$TTL 60\n@ SOA ns hm 1 7200 900 1209600 60\n"
                    "@ NS ns\nns A 192.0.2.53\n" % zone)
    zonecast("zone", "import", "--data-dir", srv.data_dir, zone, str(path))


def write(api, zid, i):
    api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
           {"type": "A", "name": "w%d.st.test" % i, "content": "192.0.2.%d" % (i % 250 + 1),
            "ttl": 60})


def test_status_lists_the_nodes_and_sees_one_killed(cluster, tmp_path):
    uri = pg.database(cluster, "status")
    a = pg.serve_node(tmp_path, "a", uri)
    b = None
    try:
        import_zone(tmp_path, a)
        b = pg.serve_node(tmp_path, "b", uri)
        api = a.client(a.create_token())
        zid = api.zone_id("st.test")
        for i in range(5):
            write(api, zid, i)
        pids = {node_name(a): status(a)["pid"], node_name(b): status(b)["pid"]}

        # Both nodes, each caught up with the log, from either node.
        def caught_up(srv):
            st = status(srv)
            nodes = {n["name"]: n for n in st["records_store"]["nodes"]}
            last = st["builder"]["last_seq"]
            return set(nodes) == set(pids) and all(
                n["up"] and n["applied_seq"] == last and n["lag_events"] == 0
                for n in nodes.values()) and st
        st = wait_for("both nodes caught up, as a sees them", lambda: caught_up(a))
        wait_for("both nodes caught up, as b sees them", lambda: caught_up(b))
        store = st["records_store"]
        assert store["backend"] == "postgresql"
        assert store["node"] == node_name(a)
        assert store["leader"] is None
        for name, n in ((n["name"], n) for n in store["nodes"]):
            assert n["pid"] == pids[name]
            assert n["role"] == "serve" and n["version"] == st["version"]
            assert n["self"] == (name == node_name(a))
            # Beats every second; under a loaded machine one may come late.
            assert 0 <= n["seen_ago_ms"] < 5000, n
            assert n["stalled"] is None
        assert st["builder"]["last_seq"] >> 24 >= 6  # The import and 5 writes.
        text = status_text(a)
        assert "this node        %s\n" % node_name(a) in text, text
        assert "leader           none\n" in text
        assert "nodes            2, 2 up\n" in text
        assert "  %s (this node): up, serve, pid %d," % (node_name(a), pids[node_name(a)]) \
            in text, text
        assert "  %s: up, serve, pid %d," % (node_name(b), pids[node_name(b)]) in text
        # Positions as an operator reads them: commit positions, not the
        # packed (commit << 24 | rank) numbers of the _seq fields.
        last = st["builder"]["last_seq"]
        commit = str(last >> 24)
        assert last & 0xFFFFFF == 0xFFFFFF, last  # A commit read whole.
        assert st["builder"]["last_position"] == commit, st["builder"]
        assert st["builder"]["applied_position"] == commit, st["builder"]
        assert all(n["applied_position"] == commit for n in store["nodes"]), store
        assert "applied position %s, lag 0 events" % commit in text, text
        assert "builder          applied position %s of %s, lag 0 events" \
            % (commit, commit) in text, text

        # The leader row, as the leader election writes it, read back.
        pg.psql(cluster, "UPDATE leader SET epoch = epoch + 1, node = '%s', since = now()"
                % node_name(b), "status")
        leader = status(a)["records_store"]["leader"]
        assert leader["node"] == node_name(b) and leader["epoch"] == 1, leader
        assert leader["up"] is True
        text = status_text(a)
        assert "leader           %s (epoch 1, since " % node_name(b) in text
        assert "DOWN" not in text

        # b is killed: a sees it down within seconds, its row kept.
        b.kill9()
        killed = time.monotonic()
        wait_for("b down", lambda: not nodes_of(a)[node_name(b)]["up"], timeout=10)
        took = time.monotonic() - killed
        print("a killed node shows down %.1f s after SIGKILL" % took)
        assert took <= 8
        down = nodes_of(a)[node_name(b)]
        assert down["seen_ago_ms"] > 5000 and down["pid"] == pids[node_name(b)]
        text = status_text(a)
        assert "nodes            2, 1 up\n" in text
        # The leader row still names it (until another node takes over).
        assert status(a)["records_store"]["leader"]["up"] is False
        assert "leader           %s (epoch 1, since " % node_name(b) in text
        assert "Z, DOWN)\n" in text, text
        assert "  %s: DOWN, serve, pid %d," % (node_name(b), pids[node_name(b)]) \
            in status_text(a)
        # Writes go on; the dead node's lag grows.
        write(api, zid, 99)
        assert nodes_of(a)[node_name(b)]["lag_events"] >= 1

        # Restarted under the same name: its row is its own again, and it
        # catches up.
        b.restart()
        new_pid = status(b)["pid"]
        wait_for("b up again", lambda: (lambda n: n["up"] and n["pid"] == new_pid
                                        and n["lag_events"] == 0)(nodes_of(a)[node_name(b)]))

        # A clean stop takes the row away.
        problems = b.stop()
        assert not problems, problems
        assert set(nodes_of(a)) == {node_name(a)}
    finally:
        problems = a.stop() + (b.stop() if b is not None else [])
    assert not problems, problems


def served(port, name):
    r = dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=2)
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def test_metrics_give_the_store_latencies_and_whether_it_is_up(cluster, tmp_path):
    uri = pg.database(cluster, "metrics")
    mport = servers.free_port()
    a = pg.serve_node(tmp_path, "a", uri, ["metrics-listen=127.0.0.1:%d" % mport])
    prom = None
    try:
        import_zone(tmp_path, a)
        api = a.client(a.create_token())
        zid = api.zone_id("st.test")
        before = scrape(mport)
        for i in range(5):
            write(api, zid, i)
        after = scrape(mport)
        labels = {"backend": "postgresql"}

        def delta(name):
            return value(after, name, **labels) - value(before, name, **labels)

        # Each write is one group commit here (?wait=live, one at a time).
        assert delta("zonecast_records_store_write_duration_seconds_count") >= 5
        assert delta("zonecast_records_store_write_duration_seconds_sum") > 0
        assert value(after, "zonecast_records_store_write_duration_seconds_bucket",
                     le="+Inf", **labels) == \
            value(after, "zonecast_records_store_write_duration_seconds_count", **labels)
        assert delta("zonecast_records_store_read_duration_seconds_count") >= 1
        assert value(after, "zonecast_records_store_read_duration_seconds_sum", **labels) > 0
        assert value(after, "zonecast_records_store_up", **labels) == 1
        assert not [k for k in after if k[0].startswith("zonecast_records_store")
                    and ("backend", "sqlite") in k[1]]
        status_code, _, body = http_get(mport, "/metrics")
        cp = subprocess.run([PROMTOOL, "check", "metrics"], input=body, text=True,
                            capture_output=True, timeout=30)
        assert cp.returncode == 0, cp.stdout + cp.stderr

        if os.path.exists(PROMETHEUS):
            prom = Prometheus(str(tmp_path / "prometheus"), ["127.0.0.1:%d" % mport])
            prom.wait('zonecast_records_store_up{backend="postgresql"}',
                      lambda r: list(r.values()) == [1.0])
            q = prom.wait('histogram_quantile(0.5, sum by (le) (zonecast_records_store_'
                          'write_duration_seconds_bucket{backend="postgresql"}))',
                          lambda r: r and 0 < list(r.values())[0] < 1)
            print("median write (BEGIN to COMMIT) per Prometheus: %.2f ms"
                  % (1000 * list(q.values())[0]))

        # PostgreSQL stopped: the gauge says so within a few seconds; DNS
        # still answers from the edge store.
        subprocess.run([pg.DEV_PG, "stop", cluster], check=True, capture_output=True)
        stopped = time.monotonic()
        wait_for("store down", lambda: value(scrape(mport), "zonecast_records_store_up",
                                             **labels) == 0, timeout=10)
        print("zonecast_records_store_up 0 %.1f s after PostgreSQL stopped"
              % (time.monotonic() - stopped))
        assert served(a.port, "w1.st.test.") == ["192.0.2.2"]
        if prom is not None:
            prom.wait('zonecast_records_store_up{backend="postgresql"}',
                      lambda r: list(r.values()) == [0.0])
        subprocess.run([pg.DEV_PG, "start", cluster], check=True, capture_output=True)
        wait_for("store up again", lambda: value(scrape(mport), "zonecast_records_store_up",
                                                 **labels) == 1, timeout=15)
        assert "heartbeat: the records store answers again" in a.log()
    finally:
        if prom is not None:
            prom.stop()
        problems = a.stop()
    assert not problems, problems
