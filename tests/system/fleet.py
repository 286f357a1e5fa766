"""A real NATS JetStream fleet for the tests: nats-server processes (alone
or as a three-node cluster), a primary (`zonecast serve --nats`) and edges
(`zonecast edge`), plus helpers that wait for the fleet to settle and
compare every edge store with the primary's (`zonecast fleet digest`), and
for several primaries on one PostgreSQL store, one leading at a time
(test_pg_fleet_leader.py, test_attack_leader.py)."""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request

import dns.message
import dns.query

import pg
from servers import (DnsServer, ZonecastServer, START_TIMEOUT, free_port, wrapped,
                     zonecast_bin)

NATS = shutil.which("nats-server") or "/usr/sbin/nats-server"


class NatsServer:
    """nats-server -js on loopback with a throw-away store; `cluster` is a
    list of the other nodes' cluster ports (a JetStream cluster)."""

    def __init__(self, workdir, name="n1", port=None, cluster_port=None, routes=(),
                 extra_conf=""):
        self.workdir = os.path.join(workdir, "nats-" + name)
        os.makedirs(self.workdir, exist_ok=True)
        self.name = name
        self.port = port or free_port()
        self.http_port = free_port()
        self.cluster_port = cluster_port
        self.routes = list(routes)
        self.extra_conf = extra_conf
        self.proc = None

    @property
    def url(self):
        return "nats://127.0.0.1:%d" % self.port

    def conf(self):
        text = ["server_name: %s" % self.name, "listen: 127.0.0.1:%d" % self.port,
                "http: 127.0.0.1:%d" % self.http_port,
                "jetstream { store_dir: %s }" % json.dumps(os.path.join(self.workdir, "js"))]
        if self.cluster_port:
            routes = ", ".join("nats-route://127.0.0.1:%d" % p for p in self.routes)
            text.append("cluster { name: zc, listen: 127.0.0.1:%d, routes: [%s] }"
                        % (self.cluster_port, routes))
        text.append(self.extra_conf)
        return "\n".join(text) + "\n"

    def start(self):
        path = os.path.join(self.workdir, "nats.conf")
        with open(path, "w") as f:
            f.write(self.conf())
        self._log = open(os.path.join(self.workdir, "nats.log"), "ab")
        self.proc = subprocess.Popen([NATS, "-c", path], stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/healthz?js-enabled-only=true"
                                            % self.http_port, timeout=0.5) as r:
                    if r.status == 200:
                        return self
            except Exception:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("nats-server exited: " + self.log())
            time.sleep(0.05)
        return self  # A cluster node waits for its peers: callers check.

    def log(self):
        try:
            with open(os.path.join(self.workdir, "nats.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def jsz(self):
        """JetStream state from the monitoring port (streams with their state)."""
        with urllib.request.urlopen("http://127.0.0.1:%d/jsz?streams=true" % self.http_port,
                                    timeout=2) as r:
            return json.load(r)

    def stream_state(self, name):
        for acc in self.jsz().get("account_details", []):
            for s in acc.get("stream_detail", []):
                if s["name"] == name:
                    return s["state"]
        return None

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self._log.close()


class EdgeServer(DnsServer):
    """zonecast edge on its own data directory."""

    kind = "zonecast-edge"

    def __init__(self, workdir, name, nats_urls, options=()):
        super().__init__(os.path.join(workdir, "edge-" + name))
        os.makedirs(self.workdir, exist_ok=True)
        self.name = name
        self.nats_urls = nats_urls
        self.options = list(options)
        self.data_dir = os.path.join(self.workdir, "data")
        self.port = None

    def start(self):
        self.port = self.port or free_port()
        argv = [zonecast_bin(), "edge", "--nats", self.nats_urls, "--name", self.name,
                "--data-dir", self.data_dir, "--listen", "127.0.0.1:%d" % self.port,
                "--workers", "1", "-o", "rrl-rate=0", "-o", "audit-refusal-rate=0"]
        for opt in self.options:
            argv += ["-o", opt]
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        self._spawn(wrapped(argv, self.workdir), env=env)
        return self

    def kill9(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
            self._logf.close()
            self._checked = len(self.log())


def digest(data_dir):
    """`zonecast fleet digest` of a data directory (primary's or edge's)."""
    cp = subprocess.run([zonecast_bin(), "fleet", "digest", "--data-dir", data_dir],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def fleet_status(primary):
    return primary.client_.get("/fleet")


def settle(primary, edges, timeout=30):
    """Waits until the primary has published everything and every edge
    store is at the primary's commit with the same digest; returns the
    primary's digest. Fails with each store's state when it does not."""
    deadline = time.monotonic() + timeout
    states = None
    while time.monotonic() < deadline:
        p = digest(primary.data_dir)
        states = [digest(e.data_dir) if os.path.exists(os.path.join(e.data_dir, "edge.mdb"))
                  else None for e in edges]
        if all(s is not None and s["history"] == p["history"] and s["commit"] == p["commit"]
               and s["digest"] == p["digest"] for s in states):
            return p
        time.sleep(0.1)
    raise AssertionError("fleet did not settle: primary %s, edges %s\n%s"
                         % (digest(primary.data_dir), states,
                            "\n".join(e.log()[-3000:] for e in edges)))


def start_primary(workdir, nats_urls, zones=None, options=(), env=None):
    """zonecast serve --nats with the API (the ApiClient is .client_); env:
    extra environment."""
    opts = ["nats=" + nats_urls] + list(options)
    p = ZonecastServer(os.path.join(workdir, "primary"), zones=zones or {}, api=True,
                       options=opts, env=env)
    p.start()
    p.client_ = p.client()
    return p


def start_pg_primary(tmp_path, name, uri, nats_url, env=None):
    """A `zonecast serve --nats` node named name on the PostgreSQL store at
    uri (pg.serve_node; env: extra environment), which may lead the fleet;
    its ApiClient is .client_."""
    srv = pg.serve_node(tmp_path, name, uri, ["nats=%s" % nats_url], env=env)
    srv.name = name
    srv.client_ = srv.client()
    return srv


def start_edge(workdir, name, nats_url):
    """A `zonecast edge` with its metrics on a free port (.metrics_port)."""
    e = EdgeServer(workdir, name, nats_url)
    e.metrics_port = free_port()
    e.options.append("metrics-listen=127.0.0.1:%d" % e.metrics_port)
    return e.start()


def fleet_state(srv, timeout=2):
    """A node's GET /fleet, or None while it does not answer (killed,
    paused, starting)."""
    try:
        return srv.client_.get("/fleet", timeout=timeout)
    except Exception:
        return None


def leading(srv, timeout=2):
    """The node's term while it leads the fleet and reaches NATS, else None."""
    s = fleet_state(srv, timeout)
    return s["term"] if s and s["leading"] and s["connected"] else None


def edge_metric(edge, name):
    """The value of an edge's metric without labels (None when absent)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % edge.metrics_port,
                                timeout=3) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def verify_edge(edge, uri):
    """`zonecast verify` of an edge's store against the records store at uri."""
    cp = subprocess.run([zonecast_bin(), "verify", "--data-dir", edge.data_dir,
                         "--records", uri], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


def txt(port, name):
    """The TXT strings served for name, sorted, or None without an answer."""
    try:
        r = dns.query.udp(dns.message.make_query(name, "TXT"), "127.0.0.1", port=port,
                          timeout=1)
    except Exception:
        return None
    return sorted(rr.to_text() for rrset in r.answer for rr in rrset)


def add_txt(srv, zid, name, value):
    """Adds a TXT record through a node's API."""
    srv.client_.ok("POST", "/zones/%s/dns_records" % zid,
                   json={"type": "TXT", "name": name, "content": value})


def hpub(port, subject, headers, payload=b""):
    """Publishes a message with headers through the NATS text protocol."""
    import json as _json
    import socket
    head = b"NATS/1.0\r\n" + b"".join(b"%s: %s\r\n" % (k.encode(), v.encode())
                                      for k, v in headers.items()) + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        f = s.makefile("rb")
        f.readline()
        s.sendall(b"CONNECT " + _json.dumps({"verbose": True, "headers": True,
                                             "protocol": 1}).encode() + b"\r\n")
        assert f.readline().startswith(b"+OK")
        s.sendall(b"HPUB %s %d %d\r\n%s%s\r\nPING\r\n" % (
            subject.encode(), len(head), len(head) + len(payload), head, payload))
        return f.readline().decode().strip()


def nats_request(port, subject, payload=b"", timeout=5):
    """A NATS request through the text protocol: the reply's payload."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        f = s.makefile("rb")
        f.readline()
        s.sendall(b'CONNECT {"verbose":false,"headers":true,"protocol":1}\r\n'
                  b"SUB _INBOX.zctest 1\r\n")
        s.sendall(b"PUB %s _INBOX.zctest %d\r\n%s\r\n" % (subject.encode(), len(payload),
                                                          payload))
        while True:
            line = f.readline()
            if not line:
                return None
            if line.startswith(b"PING"):
                s.sendall(b"PONG\r\n")
            elif line.startswith(b"MSG "):
                n = int(line.split()[-1])
                return f.read(n + 2)[:-2]
            elif line.startswith(b"HMSG "):
                hl, tl = (int(x) for x in line.split()[-2:])
                return f.read(tl + 2)[:-2][hl:]


def js_api(port, what, body=b""):
    """A JetStream API request ($JS.API.<what>, e.g. STREAM.PURGE.<name>):
    the decoded JSON reply."""
    return json.loads(nats_request(port, "$JS.API." + what, body))


def js_last(port, stream, subject):
    """The data of the last message on subject in a JetStream stream (None
    when there is none)."""
    import base64
    r = json.loads(nats_request(port, "$JS.API.STREAM.MSG.GET." + stream,
                                json.dumps({"last_by_subj": subject}).encode()))
    if "message" not in r:
        return None
    return base64.b64decode(r["message"].get("data", ""))
