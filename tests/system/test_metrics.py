"""The metrics endpoint (docs/metrics.md, issue 14): Prometheus text on
metrics-listen, /healthz and /readyz, for `zonecast serve` and `zonecast
edge`.

Counts are checked against traffic the test sends itself (dnspython over
UDP and TCP, an UPDATE, AXFRs, a TSIG-signed request with an unknown key,
a malformed cookie), the exposition is linted by `promtool check
metrics`, and a real Debian `prometheus` scrapes the server and answers
queries through its HTTP API."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import dns.edns
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest

from servers import RECORDS_BACKEND, START_TIMEOUT, ZonecastServer, free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
NATS = shutil.which("nats-server") or "/usr/sbin/nats-server"

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def http_get(port, path, method="GET"):
    """(status, content type, body) of an HTTP request to 127.0.0.1:port."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def parse(text):
    """{(name, frozenset(labels)): value} of a text exposition."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(LABEL_RE.findall(m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def scrape(port):
    status, ctype, body = http_get(port, "/metrics")
    assert status == 200, body
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    return parse(body)


def start_server(tmp_path, **kw):
    port = free_port()
    opts = ["metrics-listen=127.0.0.1:%d" % port] + list(kw.pop("options", ()))
    s = ZonecastServer(str(tmp_path / "zc"), options=opts, **kw).start()
    s.metrics_port = port
    return s


def ask(server, name, rtype, tcp=False, **kw):
    q = dns.message.make_query(name, rtype, **kw)
    send = dns.query.tcp if tcp else dns.query.udp
    return send(q, "127.0.0.1", port=server.port, timeout=5)


@pytest.fixture
def zonecast_metrics(tmp_path):
    s = start_server(tmp_path, options=["allow-update=127.0.0.1",
                                        "allow-transfer=127.0.0.1"])
    yield s
    problems = s.stop()
    assert not problems, problems


def test_counts_follow_the_traffic(zonecast_metrics):
    s = zonecast_metrics
    before = scrape(s.metrics_port)
    for _ in range(5):
        assert ask(s, "www.example.com.", "A").rcode() == dns.rcode.NOERROR
    for _ in range(3):
        r = ask(s, "nope.example.com.", "AAAA", tcp=True)
        assert r.rcode() == dns.rcode.NXDOMAIN
    for _ in range(2):
        assert ask(s, "www.example.org.", "MX").rcode() == dns.rcode.REFUSED
    # RFC 7873 §5.2.2: a COOKIE option of 5 bytes is malformed: FORMERR.
    bad = dns.message.make_query("www.example.com.", "A", use_edns=0,
                                 options=[dns.edns.GenericOption(10, b"\x01" * 5)])
    r = dns.query.udp(bad, "127.0.0.1", port=s.port, timeout=5)
    assert r.rcode() == dns.rcode.FORMERR
    up = dns.update.UpdateMessage("example.com.")
    up.add("metrics-test", 300, "A", "192.0.2.99")
    assert dns.query.tcp(up, "127.0.0.1", port=s.port, timeout=5).rcode() == dns.rcode.NOERROR
    msgs = list(dns.query.xfr("127.0.0.1", "example.com.", port=s.port, timeout=5))
    assert msgs
    ring = dns.tsigkeyring.from_text({"unknown-key.": "c2VjcmV0c2VjcmV0c2VjcmV0"})
    axfr = dns.message.make_query("example.com.", "AXFR")
    axfr.use_tsig(ring, keyname="unknown-key.", algorithm="hmac-sha256")
    with pytest.raises(Exception):
        dns.query.tcp(axfr, "127.0.0.1", port=s.port, timeout=5)

    after = scrape(s.metrics_port)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("zonecast_dns_queries_total", proto="udp", type="A", rcode="NOERROR") == 5
    assert delta("zonecast_dns_queries_total", proto="tcp", type="AAAA", rcode="NXDOMAIN") == 3
    assert delta("zonecast_dns_queries_total", proto="udp", type="MX", rcode="REFUSED") == 2
    assert delta("zonecast_dns_queries_total", proto="udp", type="A", rcode="FORMERR") == 1
    assert delta("zonecast_dns_cookies_total", result="malformed") == 1
    assert delta("zonecast_dns_deferred_total", proto="tcp", kind="update") == 1
    assert delta("zonecast_dns_deferred_total", proto="tcp", kind="transfer") == 2
    assert delta("zonecast_writer_units_total", result="ok") >= 1
    assert delta("zonecast_writer_batches_total") >= 1
    assert delta("zonecast_writer_commit_duration_seconds_count") >= 1
    # The records store's latencies, labelled with its backend (the UPDATE's
    # group commit; the builder's read of the log at each pass).
    backend = {"backend": RECORDS_BACKEND}
    assert delta("zonecast_records_store_write_duration_seconds_count", **backend) >= 1
    assert delta("zonecast_records_store_read_duration_seconds_count", **backend) >= 1
    assert value(after, "zonecast_records_store_up", **backend) == 1
    assert delta("zonecast_transfers_total", result="axfr") == 1
    assert delta("zonecast_transfers_total", result="notauth") == 1
    assert delta("zonecast_tsig_refusals_total", error="BADKEY") == 1
    # The UPDATE's events: one record created (and the SOA's serial).
    assert delta("zonecast_zone_changes_total", zone="example.com.") >= 1
    # Every message answered was timed, over each transport.
    answered = sum(v for (n, l), v in after.items() if n == "zonecast_dns_queries_total"
                   and ("proto", "udp") in l)
    assert value(after, "zonecast_dns_answer_duration_seconds_count", proto="udp") == answered
    assert value(after, "zonecast_dns_answer_duration_seconds_bucket",
                 proto="udp", le="+Inf") == answered
    # The served serial of each zone is the one DNS answers with.
    for zone in s.zones:
        soa = ask(s, zone, "SOA").answer[0][0]
        assert value(after, "zonecast_zone_serial", zone=zone) == soa.serial
    assert value(after, "zonecast_zones") == len(s.zones)
    assert value(after, "zonecast_zones_quarantined") == 0
    assert 0 < value(after, "zonecast_lmdb_map_used_bytes") <= \
        value(after, "zonecast_lmdb_map_size_bytes")
    assert value(after, "zonecast_builder_lag_events") == 0
    assert value(after, "zonecast_builder_stalled") == 0
    assert value(after, "zonecast_dns_workers") == 2 * s.workers


def test_zone_change_counters_outlive_deleted_zones(tmp_path):
    """Counters of deleted zones go from the endpoint's table (zone ids are
    never reused: create/delete cycles grew it for good, outside tester
    33); the zones that stay keep counting, whatever was deleted beside
    them."""
    s = start_server(tmp_path, api=True)
    try:
        api = s.client()
        ids = [api.ok("POST", "/zones", json={"name": "m%d.test" % i})["result"]["id"]
               for i in range(6)]

        made = [0] * 6

        def write(i, n):
            for _ in range(n):
                made[i] += 1
                api.ok("POST", "/zones/%s/dns_records?wait=live" % ids[i],
                       json={"type": "A", "name": "r%d" % made[i], "content": "192.0.2.1"})

        for i in range(6):
            write(i, i + 1)
        first = scrape(s.metrics_port)
        for i in (0, 2, 4):
            api.ok("DELETE", "/zones/%s" % ids[i])
        for _ in range(30):
            if value(scrape(s.metrics_port), "zonecast_zones") == len(s.zones) + 3:
                break
            time.sleep(0.1)
        write(5, 2)
        second = scrape(s.metrics_port)
        for i in (1, 3, 5):
            name = "m%d.test." % i
            grown = 2 if i == 5 else 0
            assert value(second, "zonecast_zone_changes_total", zone=name) == \
                value(first, "zonecast_zone_changes_total", zone=name) + grown, name
        for i in (0, 2, 4):
            assert ("zonecast_zone_changes_total",
                    frozenset([("zone", "m%d.test." % i)])) not in second
    finally:
        problems = s.stop()
        assert not problems, problems


def test_a_zone_not_built_yet_keeps_its_change_count(tmp_path):
    """A zone whose first build has not happened (here: fails) is not
    served, but not deleted either: its count is kept for when it is
    (the pruning of deleted zones' counters dropped it: tester 36)."""
    fault = tmp_path / "fault"
    fault.write_text("late.test.\n")
    s = start_server(tmp_path, api=True, env={"ZONECAST_FAULT_BUILD": str(fault)})
    try:
        api = s.client()
        api.ok("POST", "/zones", json={"name": "late.test"})
        api.ok("POST", "/zones", json={"name": "ontime.test"})
        for _ in range(50):
            if value(scrape(s.metrics_port), "zonecast_zone_changes_total",
                     zone="ontime.test.") > 0:
                break
            time.sleep(0.1)
        fault.write_text("")
        s.run_cli("zone", "retry", "--data-dir", s.data_dir, "late.test")
        for _ in range(100):
            after = scrape(s.metrics_port)
            if ("zonecast_zone_serial", frozenset([("zone", "late.test.")])) in after:
                break
            time.sleep(0.1)
        assert value(after, "zonecast_zone_changes_total", zone="late.test.") == \
            value(after, "zonecast_zone_changes_total", zone="ontime.test.") > 0
    finally:
        problems = s.stop()
        assert not problems, problems


def test_exposition_passes_promtool(zonecast_metrics):
    s = zonecast_metrics
    ask(s, "www.example.com.", "A")
    status, _, body = http_get(s.metrics_port, "/metrics")
    assert status == 200
    cp = subprocess.run([PROMTOOL, "check", "metrics"], input=body, text=True,
                        capture_output=True, timeout=30)
    assert cp.returncode == 0, cp.stdout + cp.stderr


def test_health_endpoints(zonecast_metrics):
    port = zonecast_metrics.metrics_port
    assert http_get(port, "/healthz")[::2] == (200, "ok\n")
    assert http_get(port, "/readyz")[::2] == (200, "ready\n")
    assert http_get(port, "/nope")[0] == 404
    assert http_get(port, "/metrics", method="POST")[0] == 405
    # HEAD answers the headers alone.
    assert http_get(port, "/healthz", method="HEAD")[0] == 200


def test_off_by_default(tmp_path):
    s = ZonecastServer(str(tmp_path / "zc")).start()
    try:
        assert "metrics listening" not in s.log()
    finally:
        assert not s.stop()


class Prometheus:
    """Debian's prometheus on loopback, scraping `targets` every second."""

    def __init__(self, workdir, targets):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.port = free_port()
        conf = os.path.join(workdir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n  - job_name: zonecast\n    static_configs:\n"
                    "      - targets: [%s]\n" % ", ".join('"%s"' % t for t in targets))
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + conf,
             "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path,
                                                    urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        """The instant vector of expr as {labels-as-tuple: float}."""
        data = self.api("query", query=expr)
        return {tuple(sorted(r["metric"].items())): float(r["value"][1])
                for r in data["result"]}

    def wait(self, expr, check, timeout=60):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.query(expr)
                if check(last):
                    return last
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.5)
        with open(self.log.name) as f:
            raise AssertionError("prometheus: %s never passed, last %r\n%s"
                                 % (expr, last, f.read()[-3000:]))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="prometheus is not installed")
def test_prometheus_scrapes_and_queries(zonecast_metrics, tmp_path):
    s = zonecast_metrics
    for _ in range(20):
        ask(s, "www.example.com.", "A")
        ask(s, "www.example.com.", "AAAA", tcp=True)
    prom = Prometheus(str(tmp_path / "prometheus"), ["127.0.0.1:%d" % s.metrics_port])
    try:
        prom.wait('up{job="zonecast"}', lambda r: list(r.values()) == [1.0])
        got = prom.wait('zonecast_dns_queries_total{type="A",rcode="NOERROR",proto="udp"}',
                        lambda r: r and list(r.values())[0] >= 20)
        assert list(got.values())[0] >= 20
        prom.wait('zonecast_dns_queries_total{type="AAAA",proto="tcp"}',
                  lambda r: r and list(r.values())[0] >= 20)
        soa = ask(s, "example.com.", "SOA").answer[0][0]
        prom.wait('zonecast_zone_serial{zone="example.com."}',
                  lambda r: list(r.values()) == [float(soa.serial)])
        # A histogram Prometheus can take a quantile of.
        q = prom.wait('histogram_quantile(0.5, sum by (le) '
                      '(zonecast_dns_answer_duration_seconds_bucket{proto="udp"}))',
                      lambda r: r and 0 < list(r.values())[0] < 1)
        assert 0 < list(q.values())[0] < 1
        # The metadata Prometheus took from HELP and TYPE.
        meta = prom.api("metadata", metric="zonecast_writer_commit_duration_seconds")
        assert meta["zonecast_writer_commit_duration_seconds"][0]["type"] == "histogram"
    finally:
        prom.stop()


@pytest.mark.skipif(not os.path.exists(NATS), reason="nats-server is not installed")
def test_fleet_positions_and_edge_metrics(tmp_path):
    from fleet import EdgeServer, NatsServer, settle, start_primary
    nats = NatsServer(str(tmp_path)).start()
    pport, eport = free_port(), free_port()
    primary = edge = None
    try:
        primary = start_primary(str(tmp_path), nats.url,
                                options=["metrics-listen=127.0.0.1:%d" % pport,
                                         "fleet-edge-timeout=1500"])
        api = primary.client_
        zid = api.ok("POST", "/zones", json={"name": "fleet-metrics.test"})["result"]["id"]
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"type": "A", "name": "www.fleet-metrics.test", "content": "192.0.2.7"})
        edge = EdgeServer(str(tmp_path), "edge1", nats.url,
                          options=["metrics-listen=127.0.0.1:%d" % eport]).start()
        settle(primary, [edge])
        deadline = time.monotonic() + 20
        while True:
            p, e = scrape(pport), scrape(eport)
            if (value(p, "zonecast_fleet_edge_up", edge="edge1") == 1
                    and value(p, "zonecast_fleet_edge_lag_commits", edge="edge1") == 0
                    and value(e, "zonecast_fleet_applied_commit")
                    == value(p, "zonecast_fleet_commit") > 0):
                break
            assert time.monotonic() < deadline, (
                {k: v for k, v in p.items() if "fleet" in k[0]},
                {k: v for k, v in e.items() if "fleet" in k[0]})
            time.sleep(0.2)
        assert value(p, "zonecast_fleet_connected") == 1
        assert value(e, "zonecast_fleet_connected") == 1
        assert value(e, "zonecast_zone_serial", zone="fleet-metrics.test.") == \
            value(p, "zonecast_zone_serial", zone="fleet-metrics.test.") > 0
        assert ("zonecast_build_info", frozenset({("version", "0.1.0"), ("role", "edge")})) in e
        assert http_get(eport, "/readyz")[0] == 200
        # The edge answers queries and counts them.
        r = dns.query.udp(dns.message.make_query("www.fleet-metrics.test.", "A"),
                          "127.0.0.1", port=edge.port, timeout=5)
        assert r.rcode() == dns.rcode.NOERROR
        e = scrape(eport)
        assert value(e, "zonecast_dns_queries_total", proto="udp", type="A",
                     rcode="NOERROR") == 1
        # The primary reads its edges' reports; with NATS gone it cannot,
        # and says so rather than leave edge_up standing.
        assert value(scrape(pport), "zonecast_fleet_edges_seen") == 1
        nats.stop()
        deadline = time.monotonic() + 10
        while value(scrape(pport), "zonecast_fleet_edges_seen") != 0:
            assert time.monotonic() < deadline, "edges_seen stayed 1 without NATS"
            time.sleep(0.2)
    finally:
        problems = []
        for srv in (edge, primary):
            if srv is not None:
                problems += srv.stop()
        nats.stop()
    assert not problems, problems


def test_edge_without_nats_is_alive_not_ready(tmp_path):
    from fleet import EdgeServer
    port = free_port()
    dead = "nats://127.0.0.1:%d" % free_port()
    edge = EdgeServer(str(tmp_path), "lonely", dead,
                      options=["metrics-listen=127.0.0.1:%d" % port]).start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                status, _, body = http_get(port, "/healthz")
                break
            except (OSError, urllib.error.URLError):
                assert time.monotonic() < deadline, edge.log()
                time.sleep(0.05)
        assert (status, body) == (200, "ok\n")
        status, _, body = http_get(port, "/readyz")
        assert status == 503
        assert "no data from the fleet yet" in body and "not connected to NATS" in body
    finally:
        problems = edge.stop()
    assert not problems, problems


def test_rrl_verdicts_are_counted(tmp_path):
    """Every UDP response over rrl-rate is counted as dropped or slipped,
    exactly as the client sees it (loopback loses nothing)."""
    import socket
    s = start_server(tmp_path, options=["rrl-rate=5", "rrl-slip=2"])
    try:
        before = scrape(s.metrics_port)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.settimeout(1.0)
        sent = 200
        for i in range(sent):
            q = dns.message.make_query("www.example.com.", "A", use_edns=False)
            q.id = i
            sock.sendto(q.to_wire(), ("127.0.0.1", s.port))
        received = truncated = 0
        try:
            while True:
                r = dns.message.from_wire(sock.recv(4096))
                received += 1
                truncated += bool(r.flags & dns.flags.TC)
        except socket.timeout:
            pass
        sock.close()
        after = scrape(s.metrics_port)

        def delta(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)

        assert truncated > 0 and received < sent, (received, truncated)
        assert delta("zonecast_rrl_limited_total", action="slip") == truncated
        assert delta("zonecast_rrl_limited_total", action="drop") == sent - received
        # Each is still counted as a query answered (by its type and RCODE).
        assert delta("zonecast_dns_queries_total", proto="udp", type="A",
                     rcode="NOERROR") == sent
    finally:
        assert not s.stop()
