"""Process wrappers for the DNS servers under test, shared by the fixtures.

`KnotServer` runs the reference (knotd, foreground, throw-away config and
storage), `ZonecastServer` runs `zonecast serve` on a data directory filled by
`zonecast zone import`. Both expose the same small client API (`.port`,
`.query()`, `.exchange()`, `.stop()`), so a test does not care which one it
talks to. `stop()` returns a list of problems (sanitizer reports, crashes,
unclean exit) that the fixtures turn into a test failure.

ZONECAST_WRAPPER (a command line, e.g. "valgrind --error-exitcode=99 ...")
runs every zonecast the harness starts (serve and the short CLI commands)
under that wrapper; ZONECAST_TIMEOUT_SCALE multiplies the start and stop
timeouts. Under valgrind the harness adds --log-file=WORKDIR/valgrind.PID.log,
sets ZONECAST_EDGE_MAP_MB=1024 (valgrind cannot reserve the default 64 GiB
LMDB map) and fails a test on any error valgrind reports (see `valgrind_report`).
"""

import glob
import itertools
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import time

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype

HERE = os.path.dirname(os.path.abspath(__file__))
ZONES_DIR = os.path.join(HERE, "zones")
REPO = os.path.dirname(os.path.dirname(HERE))
# The records store's schema version (src/records/schema.c SCHEMA_VERSION):
# what a store opened by this zonecast is moved on to.
RECORDS_SCHEMA_VERSION = 13

# zone name -> file, the default set every server in the suite loads.
DEFAULT_ZONES = {
    "example.com.": os.path.join(ZONES_DIR, "example.com.zone"),
    "sub.example.com.": os.path.join(ZONES_DIR, "sub.example.com.zone"),
    "example.net.": os.path.join(ZONES_DIR, "example.net.zone"),
}

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")
WRAPPER = shlex.split(os.environ.get("ZONECAST_WRAPPER", ""))
VALGRIND = bool(WRAPPER) and os.path.basename(WRAPPER[0]) == "valgrind"
TIMEOUT_SCALE = float(os.environ.get("ZONECAST_TIMEOUT_SCALE", "1"))
START_TIMEOUT = 10.0 * TIMEOUT_SCALE
STOP_TIMEOUT = 10.0 * TIMEOUT_SCALE
# The first line of each error memcheck reports, of a definite leak (at
# exit, with --leak-check=full), and the summary (errors of every kind,
# leaks as --errors-for-leak-kinds says).
VALGRIND_ERROR_RE = re.compile(
    r"^==\d+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised"
    r"|Syscall param|Mismatched free|Source and destination overlap|Jump to the invalid"
    r"|Argument '.*' of function .* has a fishy)", re.M)
VALGRIND_LEAK_RE = re.compile(r"^==\d+== .* are definitely lost in loss record", re.M)
VALGRIND_SUMMARY_RE = re.compile(r"^==\d+== ERROR SUMMARY: (\d+) errors", re.M)


def zonecast_bin():
    return os.path.abspath(os.environ.get("ZONECAST_BIN", os.path.join(REPO, "build", "zonecast")))


def wrapped(argv, logdir):
    """argv under ZONECAST_WRAPPER (unchanged without one); valgrind writes
    its report to logdir/valgrind.PID.log."""
    if not WRAPPER:
        return list(argv)
    extra = ["--log-file=" + os.path.join(logdir, "valgrind.%p.log")] if VALGRIND else []
    return WRAPPER + extra + list(argv)


def valgrind_report(path, final, start=0):
    """(report, end): the errors valgrind logged in path after offset start
    ("" when none) and the offset up to which the log was read: an error
    (VALGRIND_ERROR_RE), a definite leak, or final (the process has exited)
    and an ERROR SUMMARY of errors none of which was reported before start.
    A log cut short (SIGKILL) has no summary: the exit status tells."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return "", start
    new = text[start:]
    m = VALGRIND_SUMMARY_RE.search(new)
    if (VALGRIND_ERROR_RE.search(new) or VALGRIND_LEAK_RE.search(new)
            or (final and start == 0 and m and int(m.group(1)) > 0)):
        return "--- %s ---\n%s" % (path, new[-20000:]), len(text)
    return "", start


def knotd_bin():
    return os.environ.get("KNOTD_BIN", shutil.which("knotd") or "/usr/sbin/knotd")


# every port free_port() handed out in this process: a port is chosen
# before its server binds it (often after other servers were started), so
# without this two servers of one test could be given the same port. BIND
# then serves UDP and leaves TCP to whichever listener had it first (a CI
# failure: an AXFR from the secondary went to zonecast's HTTP port and timed
# out)
_given = set()


def _server_ports():
    """The ports servers are given: outside the kernel's ephemeral range
    (ip_local_port_range), from which every outgoing connection takes its
    local port. A server port from that range can be taken meanwhile by a
    client socket of anything on the machine (a kept-alive HTTP session, a
    transfer), and a server restarted on it then fails to bind (a CI
    failure: knotd restarted by test_transfer.py, "cannot bind address
    ... TCP (address already in use)"). ZONECAST_TEST_PORTS=LOW-HIGH
    narrows them, so that two suites run on one machine at once (a
    developer's and a CI clone's) never give the same port."""
    given = os.environ.get("ZONECAST_TEST_PORTS", "")
    if given:
        low, _, high = given.partition("-")
        return range(int(low), int(high) + 1)
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return None
    if low - 10000 >= 4096:
        return range(10000, low)
    if 65535 - high >= 4096:
        return range(high + 1, 65536)
    return None


_ports = _server_ports()


def _worker_share(ports):
    """Under pytest-xdist (dev/test runs the system tests on several
    workers, each a process of its own) each worker takes its own residue
    class of the ports: _given keeps one process from giving a port twice,
    and this keeps two workers from giving the same port at once (free
    then, bound by the first worker's server a moment later)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if ports is None or not worker.startswith("gw") or count < 2:
        return ports
    index = int(worker[2:])
    return [p for p in ports if p % count == index]


_ports = _worker_share(_ports)


def free_port():
    """A port that is free on 127.0.0.1 for both UDP and TCP, outside the
    ephemeral range (_server_ports()), and that no earlier call of this
    process returned (still racy against other processes)."""
    for _ in range(1000):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            u.bind(("127.0.0.1", random.choice(_ports) if _ports else 0))
            port = u.getsockname()[1]
            if port in _given:
                continue
            t.bind(("127.0.0.1", port))
            _given.add(port)
            return port
        except OSError:
            continue
        finally:
            t.close()
            u.close()
    raise RuntimeError("no free UDP+TCP port found")


def hold_records_store(srv):
    """Takes the records store's write lock from outside (SQLite: an
    exclusive transaction on records.db; PostgreSQL: the zones' rows locked
    FOR UPDATE), so that the server's writer waits for it: returns the
    function that gives it back."""
    if srv.records_uri is None:
        db = sqlite3.connect(os.path.join(srv.data_dir, "records.db"), isolation_level=None,
                             check_same_thread=False)
        db.execute("BEGIN EXCLUSIVE")
        return lambda: (db.execute("ROLLBACK"), db.close())
    psql = os.path.join(subprocess.run([os.path.join(REPO, "dev", "pg"), "bindir"],
                                       capture_output=True, text=True,
                                       check=True).stdout.strip(), "psql")
    p = subprocess.Popen([psql, "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", srv.records_uri],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write("BEGIN; SELECT 'held', count(*) FROM (SELECT 1 FROM zones FOR UPDATE) z;\n")
    p.stdin.flush()
    assert "held" in p.stdout.readline()

    def give_back():
        p.stdin.write("ROLLBACK;\n")
        p.stdin.close()
        p.wait(10)
    return give_back


def verify_clean(srv):
    """`zonecast verify` of srv finds the edge store equal to a full build."""
    v = srv.verify()
    assert v.returncode == 0 and "no differences" in v.stdout, v.stdout + v.stderr


def wait_for(what, cond, timeout=20, step=0.02):
    """Calls cond every step seconds until it returns something true, and
    returns that; fails the test, naming what it waited for, after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(step)


def make_query(name, rdtype="A", rdclass="IN", edns=0, payload=1232, do=False,
               rd=False, options=None, id=None):
    """Build a query; edns=None means no OPT record (plain RFC 1035)."""
    if isinstance(name, str):
        name = dns.name.from_text(name)
    q = dns.message.make_query(name, rdtype, rdclass,
                               flags=dns.flags.RD if rd else 0)
    if edns is None:
        q.use_edns(False)
    else:
        q.use_edns(edns, ednsflags=dns.flags.DO if do else 0, payload=payload,
                   options=options or [])
    if id is not None:
        q.id = id
    return q


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("TCP connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def query_many(port, names, rdtype="A", attempts=5, window=128, host="127.0.0.1"):
    """Asks (name, rdtype) for many names over UDP, `window` queries in
    flight at a time (TCP for a truncated answer). Returns
    ({name: (rcode, {rdata text})}, [names that got no answer])."""
    rdtype = dns.rdatatype.from_text(rdtype) if isinstance(rdtype, str) else rdtype
    out, todo = {}, list(names)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, port))
        s.settimeout(0.5)
        for _ in range(attempts):
            for i in range(0, len(todo), window):
                sent = {}
                for name in todo[i:i + window]:
                    q = dns.message.make_query(name, rdtype, use_edns=0, payload=4096)
                    sent[q.id] = (name, q.question[0].name)
                    s.send(q.to_wire())
                while sent:
                    try:
                        r = dns.message.from_wire(s.recv(65535))
                    except (socket.timeout, ConnectionRefusedError):
                        break
                    name, qname = sent.pop(r.id, (None, None))
                    if name is None or not r.question or r.question[0].name != qname:
                        continue
                    if r.flags & dns.flags.TC:
                        r = dns.query.tcp(dns.message.make_query(name, rdtype), host,
                                          port=port, timeout=2.0)
                    out[name] = (r.rcode(), {rd.to_text() for rrset in r.answer
                                             if rrset.rdtype == rdtype for rd in rrset})
            todo = [n for n in todo if n not in out]
            if not todo:
                break
    return out, todo


class DnsServer:
    """Common client side: query helpers against 127.0.0.1:port."""

    kind = "?"
    host = "127.0.0.1"

    def __init__(self, workdir):
        self.workdir = workdir
        self.port = None
        self.proc = None
        self.log_path = os.path.join(workdir, "server.log")

    # -- client helpers -------------------------------------------------
    def exchange(self, wire, tcp=False, timeout=2.0):
        """Send raw wire bytes, return raw response bytes or None on timeout."""
        return exchange_from(self.host, self.port, wire, tcp=tcp, timeout=timeout)

    def query(self, name, rdtype="A", tcp=False, timeout=2.0, **opts):
        """Query (name, type); opts go to make_query (edns, payload, do, ...)."""
        q = make_query(name, rdtype, **opts)
        if tcp:
            return dns.query.tcp(q, self.host, port=self.port, timeout=timeout)
        return dns.query.udp(q, self.host, port=self.port, timeout=timeout,
                             ignore_trailing=False)

    def answers_soa(self, zone):
        try:
            r = self.query(zone, "SOA", timeout=0.2)
        except Exception:
            return False
        return r.rcode() == dns.rcode.NOERROR and bool(r.flags & dns.flags.AA) and bool(r.answer)

    def wait_ready(self, zones, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        pending = list(zones)
        while pending:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s during startup:\n%s"
                                   % (self.kind, self.proc.returncode, self.log()))
            if self.answers_soa(pending[0]):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("%s did not answer SOA %s within %.0fs:\n%s"
                                   % (self.kind, pending[0], timeout, self.log()))
            time.sleep(0.05)

    # -- process helpers ------------------------------------------------
    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _spawn(self, argv, env=None):
        self._logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._logf,
                                     stderr=subprocess.STDOUT, env=env, cwd=self.workdir)

    def check(self):
        """Problems that appeared since the last check: sanitizer reports, unexpected exit."""
        problems = []
        text = self.log()
        new, self._checked = text[getattr(self, "_checked", 0):], len(text)
        for marker in SANITIZER_MARKERS:
            if marker in new:
                problems.append("stderr contains %r" % marker)
        if self.proc is not None and self.proc.poll() is not None:
            problems.append("exited unexpectedly with status %s" % self.proc.returncode)
        return problems + self.valgrind_problems(final=self.proc is None)

    def valgrind_problems(self, final):
        """Errors in this server's valgrind logs not reported yet."""
        if not VALGRIND:
            return []
        seen = self.__dict__.setdefault("_valgrind_seen", {})
        problems = []
        for path in sorted(glob.glob(os.path.join(self.workdir, "valgrind.*.log"))):
            report, seen[path] = valgrind_report(path, final, seen.get(path, 0))
            if report:
                problems.append("valgrind reported errors:\n" + report)
        return problems

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait, and return a list of problems found (empty = clean)."""
        problems = []
        if self.proc is None:
            return problems
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append("did not exit within %.0fs of SIGTERM" % timeout)
        rc = self.proc.returncode
        if rc < 0 and rc != -signal.SIGTERM:
            problems.append("killed by signal %d" % -rc)
        elif rc > 0:
            problems.append("exit status %d" % rc)
        self.proc = None
        self._logf.close()
        return self.check() + problems


class KnotServer(DnsServer):
    """knotd as the reference implementation."""

    kind = "knotd"

    def __init__(self, workdir, zones=None, nsid="knot-reference"):
        super().__init__(workdir)
        self.zones = dict(zones or DEFAULT_ZONES)
        self.nsid = nsid

    def config_text(self):
        d = self.workdir
        lines = [
            "server:",
            "    rundir: %s" % os.path.join(d, "run"),
            "    user: root:root",
            "    listen: 127.0.0.1@%d" % self.port,
            "    udp-workers: 2",
            "    tcp-workers: 2",
            "    background-workers: 1",
            '    identity: ""',
            '    version: ""',
        ]
        if self.nsid:
            lines.append('    nsid: "%s"' % self.nsid)
        lines += [
            "log:",
            "  - target: stderr",
            "    any: info",
            "database:",
            "    storage: %s" % os.path.join(d, "db"),
            "template:",
            "  - id: default",
            "    storage: %s" % os.path.join(d, "zones"),
            "    zonefile-sync: -1",
            "    zonefile-load: whole",
            "    journal-content: none",
            "    semantic-checks: off",
            "zone:",
        ]
        for name, path in self.zones.items():
            lines += ["  - domain: %s" % name, "    file: %s" % os.path.abspath(path)]
        return "\n".join(lines) + "\n"

    def start(self):
        for sub in ("run", "db", "zones"):
            os.makedirs(os.path.join(self.workdir, sub), exist_ok=True)
        self.port = free_port()
        conf = os.path.join(self.workdir, "knot.conf")
        with open(conf, "w") as f:
            f.write(self.config_text())
        self._spawn([knotd_bin(), "-c", conf])
        self.wait_ready(self.zones)
        return self


# The records store of the zonecast servers started here: "sqlite" (the data
# directory's records.db) or "postgresql" (a database of its own per server
# on the session's cluster, conftest.py records_backend).
RECORDS_BACKEND = os.environ.get("ZONECAST_TEST_RECORDS", "sqlite")
_pg_databases = itertools.count()


def records_sql(data_dir, sql):
    """Runs one read-only SQL query on data_dir's records store, behind the
    server's back (SQLite's records.db, or the PostgreSQL database its
    records-store file names): the rows, as tuples of strings."""
    bound = os.path.join(data_dir, "records-store")
    if not os.path.exists(bound):
        import sqlite3
        db = sqlite3.connect("file:%s/records.db?mode=ro" % data_dir, uri=True, timeout=5)
        try:
            return [tuple(str(v) for v in row) for row in db.execute(sql).fetchall()]
        finally:
            db.close()
    with open(bound) as f:
        uri = f.read().strip()
    psql = os.path.join(subprocess.run([os.path.join(REPO, "dev", "pg"), "bindir"],
                                       capture_output=True, text=True,
                                       check=True).stdout.strip(), "psql")
    out = subprocess.run([psql, "-X", "-q", "-A", "-t", "-F", "\t", "-d", uri, "-c", sql],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


def bind_pg_records(data_dir):
    """Makes a fresh PostgreSQL database and binds data_dir to it as
    `serve --records` does (DATA_DIR/records-store, docs/postgresql.md), so
    every command given the data directory uses it. Returns the URI."""
    host = os.environ["ZONECAST_TEST_PGHOST"]
    name = "t%d_%d" % (os.getpid(), next(_pg_databases))
    psql = os.path.join(subprocess.run([os.path.join(REPO, "dev", "pg"), "bindir"],
                                       capture_output=True, text=True,
                                       check=True).stdout.strip(), "psql")
    subprocess.run([psql, "-X", "-q", "-h", host, "-U", "zc", "-d", "postgres",
                    "-c", "CREATE DATABASE %s" % name], check=True, capture_output=True)
    uri = "postgresql://zc@/%s?host=%s" % (name, host)
    path = os.path.join(data_dir, "records-store")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(uri + "\n")
    return uri


class ZonecastServer(DnsServer):
    """zonecast serve on its own data directory."""

    kind = "zonecast"

    def __init__(self, workdir, zones=None, workers=2, nsid="zonecast-test", api=False,
                 options=(), port=None, env=None, config=None):
        super().__init__(workdir)
        # config: a config file given as `serve -c FILE` (flags and options
        # still override it; a reload reads it again: test_reload.py).
        self.config = config
        # env: extra environment for serve and the CLI (e.g. the build-failure
        # hook ZONECAST_FAULT_BUILD, test_quarantine.py).
        self.extra_env = dict(env or {})
        self.zones = dict(zones or DEFAULT_ZONES)
        self.workers = workers
        self.nsid = nsid
        # options: config keys given as `serve -o KEY=VALUE`, a list of
        # (key, value) pairs or "key=value" strings (keys may repeat);
        # port: a DNS port chosen beforehand (e.g. one already given to
        # secondaries), else a free one at start().
        self.options = [o if isinstance(o, str) else "%s=%s" % o for o in options]
        self.fixed_port = port
        self.data_dir = os.path.join(workdir, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.records_uri = None
        if RECORDS_BACKEND == "postgresql" and not os.path.exists(
                os.path.join(self.data_dir, "records.db")):
            self.records_uri = bind_pg_records(self.data_dir)
        # api=True: the HTTP API on a free port of its own (see ApiClient);
        # otherwise no API at all, so servers never fight over the default
        # API port 8053.
        self.api = api
        self.api_port = None

    def env(self):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        if VALGRIND:
            env.setdefault("ZONECAST_EDGE_MAP_MB", "1024")
        env.update(self.extra_env)
        return env

    def _run(self, args, timeout):
        """Run `zonecast ARGS...` to completion (under ZONECAST_WRAPPER, whose
        errors fail the caller at once); returns the CompletedProcess."""
        logdir = os.path.join(self.workdir, "valgrind-cli")
        if VALGRIND:
            os.makedirs(logdir, exist_ok=True)
        argv = [zonecast_bin()] + list(args)
        with subprocess.Popen(wrapped(argv, logdir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=self.env()) as p:
            try:
                out, err = p.communicate(timeout=timeout * TIMEOUT_SCALE)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                raise
        if VALGRIND:
            log = os.path.join(logdir, "valgrind.%d.log" % p.pid)
            report, _ = valgrind_report(log, final=True)
            if report:
                raise AssertionError("valgrind reported errors in `zonecast %s`:\n%s"
                                     % (" ".join(args), report))
            os.unlink(log)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def import_zone(self, zone, path, check=True):
        """Run `zonecast zone import`; returns the CompletedProcess."""
        cp = self._run(["zone", "import", "--data-dir", self.data_dir, zone, path], 60)
        if check and cp.returncode != 0:
            raise RuntimeError("zonecast zone import %s %s failed (%d):\n%s"
                               % (zone, path, cp.returncode, cp.stderr))
        return cp

    def start(self):
        for zone, path in self.zones.items():
            self.import_zone(zone, path)
        self.port = self.fixed_port or free_port()
        if self.api:
            self.api_port = free_port()
        self.serve()
        return self

    def serve(self):
        """Run `zonecast serve` on the data directory (already filled) and wait
        until it answers (DNS, and the API when there is one)."""
        argv = [zonecast_bin(), "serve"] + (["-c", self.config] if self.config else [])
        argv += ["--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % self.port,
                "--workers", str(self.workers), "--no-demo"]
        if self.api_port:
            argv += ["--api-listen", "127.0.0.1:%d" % self.api_port]
        elif serve_has_option("--api-listen"):
            argv += ["--api-listen", "none"]
        # Every test client is 127.0.0.1, so response rate limiting
        # (on by default) would cut the tests' own query bursts: off unless
        # a test sets any rrl- key (test_rrl.py).
        if not any(o.startswith("rrl-") for o in self.options):
            argv += ["-o", "rrl-rate=0"]
        # Refusal audit lines are limited to 50 a second by default, and a
        # module's tests make more than that on one server: every line is
        # written unless a test sets the key (test_audit.py).
        if not any(o.startswith("audit-refusal-rate=") for o in self.options) and not (
                self.config and "audit-refusal-rate" in open(self.config).read()):
            argv += ["-o", "audit-refusal-rate=0"]
        for opt in self.options:
            argv += ["-o", opt]
        argv += ["--nsid", self.nsid] if self.nsid else []
        log_from = len(self.log())
        self._spawn(wrapped(argv, self.workdir), env=self.env())
        self.wait_ready(self.zones)
        if self.api_port:
            self.wait_api()
        self.wait_serving(log_from)
        return self

    def wait_serving(self, log_from, timeout=START_TIMEOUT):
        """Start's last steps (the control socket, the pidfile) come after
        DNS answers: its "zonecast V serving DIR (pid N)" line says they are
        done (a test that reloaded at once found no control socket). Not
        when the log goes elsewhere (log-target) or leaves info out."""
        config = open(self.config).read() if self.config else ""
        if any(o.startswith("log-target=") or o.startswith("log-level=") and
               o not in ("log-level=info", "log-level=debug") for o in self.options) or \
                "log-target" in config or re.search(r"log-level:\s*(warning|error)", config):
            return
        deadline = time.monotonic() + timeout
        while not re.search(r"zonecast \S+ serving .* \(pid \d+\)", self.log()[log_from:]):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("%s did not finish starting within %.0fs:\n%s"
                                   % (self.kind, timeout, self.log()[-4000:]))
            time.sleep(0.02)

    # -- API side (api=True) ----------------------------------------------
    @property
    def api_url(self):
        return "http://127.0.0.1:%d/client/v4" % self.api_port

    def wait_api(self, timeout=START_TIMEOUT):
        """Until the API port accepts connections (any HTTP answer will do)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.api_port), timeout=0.5):
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("zonecast API on port %d not up:\n%s"
                                   % (self.api_port, self.log()))
            time.sleep(0.02)

    def run_cli(self, *args, timeout=60, check=True):
        """Run `zonecast ARGS...`; returns the CompletedProcess."""
        cp = self._run(args, timeout)
        if check and cp.returncode != 0:
            raise RuntimeError("zonecast %s failed (%d):\n%s%s"
                               % (" ".join(args), cp.returncode, cp.stdout, cp.stderr))
        return cp

    def create_token(self, read_only=False, zone=None):
        """`zonecast token create` on this data directory; returns the token."""
        args = ["token", "create", "--data-dir", self.data_dir]
        if read_only:
            args.append("--read-only")
        if zone:
            args += ["--zone", zone]
        token = self.run_cli(*args).stdout.strip()
        assert token and "\n" not in token, "token create printed %r" % token
        return token

    def client(self, token=None):
        """An ApiClient for this server (default: a new read-write token)."""
        return ApiClient(self.api_url, self.create_token() if token is None else token)

    # -- TSIG keys (docs/dynamic-updates.md) ------------------------------
    def tsig_create(self, name, zone, algorithm=None, grants=(), transfer=True, check=True,
                    fmt=None):
        """`zonecast tsig create`; returns the printed key as a TsigKey (or, with
        check=False, the CompletedProcess). fmt: --format bind|knot."""
        args = ["tsig", "create", "--data-dir", self.data_dir, name, "--zone", zone]
        if fmt:
            args += ["--format", fmt]
        if algorithm:
            args += ["--algorithm", algorithm]
        for g in grants:
            args += ["--grant", g]
        if not transfer:
            args.append("--no-transfer")
        cp = self.run_cli(*args, check=check)
        if not check:
            return cp
        return TsigKey.parse(cp.stdout, workdir=self.workdir)

    def tsig_list(self, zone=None, check=True):
        args = ["tsig", "list", "--data-dir", self.data_dir] + (["--zone", zone] if zone else [])
        return self.run_cli(*args, check=check)

    def tsig_delete(self, name, check=True):
        return self.run_cli("tsig", "delete", "--data-dir", self.data_dir, name, check=check)

    def verify(self, zone=None):
        """`zonecast verify`; returns the CompletedProcess (not checked)."""
        return self.run_cli("verify", "--data-dir", self.data_dir, *([zone] if zone else []),
                            check=False)

    def status(self):
        """`zonecast status --json` of the running server, parsed."""
        return json.loads(self.run_cli("status", "--json", "--data-dir", self.data_dir).stdout)

    def kill9(self):
        """SIGKILL the server (a crash); the data directory stays as it was."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
            self._logf.close()
            self._checked = len(self.log())

    def restart(self):
        """Serve the same data directory again, on the same ports."""
        assert self.proc is None, "stop() or kill9() first"
        return self.serve()


_key_files = itertools.count(1)


class TsigKey:
    """A TSIG key as `zonecast tsig create` prints it (BIND key-file syntax:
    `key "NAME" { algorithm ALG; secret "B64"; };`), which nsupdate -k,
    knsupdate -k, dig -k and kdig -k read. `.path` is that text written to a
    file; `.key`/`.keyring` are the dnspython forms."""

    _RE = re.compile(r'key\s+"?([^"\s{]+)"?\s*\{\s*algorithm\s+"?([A-Za-z0-9-]+)"?\s*;'
                     r'\s*secret\s+"([A-Za-z0-9+/=]+)"\s*;\s*\}\s*;', re.S)

    def __init__(self, name, algorithm, secret, text=None, workdir=None):
        self.name = name.rstrip(".")
        self.algorithm = algorithm.lower()
        self.secret = secret
        self.text = text or 'key "%s" {\n\talgorithm %s;\n\tsecret "%s";\n};\n' % (
            self.name, self.algorithm, secret)
        self.path = None
        if workdir:
            self.path = os.path.join(workdir, "%s.%d.key" % (self.name, next(_key_files)))
            with open(self.path, "w") as f:
                f.write(self.text)

    _KNOT_RE = re.compile(r"^\s*(hmac-[a-z0-9]+):([^:\s]+):([A-Za-z0-9+/=]+)\s*$")

    @classmethod
    def parse(cls, text, workdir=None):
        """BIND's key file, or Knot's one-line ALG:NAME:SECRET (--format knot)."""
        m = cls._RE.search(text)
        if m:
            return cls(m.group(1), m.group(2), m.group(3), text=text, workdir=workdir)
        m = cls._KNOT_RE.match(text)
        assert m, "not a key file: %r" % text
        return cls(m.group(2), m.group(1), m.group(3), text=text, workdir=workdir)

    @property
    def y(self):
        """The `ALG:NAME:SECRET` form of dig -y, kdig -y and knsupdate -y
        (Knot 3.2's -k reads only this form, not BIND's key file)."""
        return "%s:%s:%s" % (self.algorithm, self.name, self.secret)

    @property
    def dns_algorithm(self):
        """The algorithm as dnspython names it (HMAC-MD5 has a name of its
        own in TSIG RRs: HMAC-MD5.SIG-ALG.REG.INT, RFC 8945 §6)."""
        import dns.tsig
        return dns.tsig.HMAC_MD5 if self.algorithm == "hmac-md5" else \
            dns.name.from_text(self.algorithm)

    @property
    def key(self):
        import dns.tsig
        return dns.tsig.Key(self.name + ".", self.secret, self.dns_algorithm)

    @property
    def keyring(self):
        return {dns.name.from_text(self.name): self.key}

    def with_secret(self, secret, workdir=None):
        """The same key name and algorithm with another secret (a wrong key)."""
        return TsigKey(self.name, self.algorithm, secret, workdir=workdir)


_SERVE_HELP = {}


def serve_has_option(opt):
    """Whether `zonecast serve --help` mentions opt (the harness's stand-in
    binary, fake_zonecast.py, has no API options)."""
    binary = zonecast_bin()
    if binary not in _SERVE_HELP:
        try:
            cp = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                                timeout=10)
            _SERVE_HELP[binary] = cp.stdout + cp.stderr
        except (OSError, subprocess.SubprocessError):
            _SERVE_HELP[binary] = ""
    return opt in _SERVE_HELP[binary]


class ApiError(AssertionError):
    pass


class ApiClient:
    """Minimal client of zonecast's Cloudflare-shaped API (python3-requests).

    `call()` returns the requests.Response as it is; `ok()` asserts an HTTP
    2xx with success=true and returns the parsed envelope."""

    def __init__(self, base_url, token):
        import requests  # only the API tests need it
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.session = requests.Session()

    def call(self, method, path, json=None, token=..., headers=None, timeout=30, **kw):
        h = dict(headers or {})
        token = self.token if token is ... else token
        if token is not None:
            h["Authorization"] = "Bearer " + token
        return self.session.request(method, self.base_url + path, json=json, headers=h,
                                    timeout=timeout, **kw)

    def ok(self, method, path, json=None, **kw):
        r = self.call(method, path, json=json, **kw)
        try:
            body = r.json()
        except ValueError:
            body = None
        if not (200 <= r.status_code < 300 and isinstance(body, dict) and body.get("success")):
            raise ApiError("%s %s %r -> HTTP %d %s" % (method, path, json, r.status_code, r.text[:2000]))
        return body

    # shorthands returning `result`
    def get(self, path, **kw):
        return self.ok("GET", path, **kw)["result"]

    def zone_id(self, name):
        zones = self.get("/zones", params={"name": name.rstrip(".")})
        assert len(zones) == 1, zones
        return zones[0]["id"]

    def records(self, zone_id, per_page=1000, **params):
        """Every record of the zone (all pages), filtered by params."""
        out, page = [], 1
        while True:
            body = self.ok("GET", "/zones/%s/dns_records" % zone_id,
                           params=dict(params, page=page, per_page=per_page))
            out += body["result"]
            if page >= body["result_info"]["total_pages"]:
                return out
            page += 1


# ---------------------------------------------------------------- dynamic updates,
# TSIG and transfers (test_update.py, test_transfer.py): raw exchanges from a
# chosen source address, hand-built UPDATE messages (for the malformed ones
# dnspython will not write) and hand-made TSIG signatures (for a shifted time).

def exchange_from(host, port, wire, tcp=True, source=None, timeout=3.0):
    """Send raw wire bytes from `source` (an address on lo, e.g. 127.0.0.2),
    return the raw response, or None when none came within timeout."""
    fam = socket.AF_INET
    if tcp:
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            if source:
                s.bind((source, 0))
            s.connect((host, port))
            s.sendall(struct.pack("!H", len(wire)) + wire)
            try:
                (ln,) = struct.unpack("!H", recv_exact(s, 2))
                return recv_exact(s, ln)
            except (socket.timeout, ConnectionError):
                return None
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        if source:
            s.bind((source, 0))
        s.connect((host, port))
        s.send(wire)
        try:
            return s.recv(65535)
        except (socket.timeout, ConnectionRefusedError):
            return None


def rr_wire(name, rtype, rclass, ttl, rdata=b""):
    """One resource record in wire form (name uncompressed); rtype/rclass as
    text or int, rdata as bytes or as text of that type."""
    import dns.rdata
    if isinstance(name, str):
        name = dns.name.from_text(name)
    rtype = dns.rdatatype.from_text(rtype) if isinstance(rtype, str) else rtype
    rclass = dns.rdataclass.from_text(rclass) if isinstance(rclass, str) else rclass
    if isinstance(rdata, str):
        rdata = dns.rdata.from_text(dns.rdataclass.IN, rtype, rdata).to_wire()
    return name.to_wire() + struct.pack("!HHIH", rtype, rclass, ttl, len(rdata)) + rdata


def update_wire(zone, prereqs=(), updates=(), additional=(), id=4242, zone_questions=None):
    """An UPDATE message built by hand: zone section `zone SOA IN` (or the
    (name, type, class) tuples of zone_questions), then the given
    prerequisite and update RRs (bytes from rr_wire)."""
    if zone_questions is None:
        zone_questions = [(zone, "SOA", "IN")]
    out = struct.pack("!6H", id, 5 << 11, len(zone_questions), len(prereqs), len(updates),
                      len(additional))
    for (qn, qt, qc) in zone_questions:
        qt = dns.rdatatype.from_text(qt) if isinstance(qt, str) else qt
        qc = dns.rdataclass.from_text(qc) if isinstance(qc, str) else qc
        out += dns.name.from_text(qn).to_wire() + struct.pack("!HH", qt, qc)
    return out + b"".join(prereqs) + b"".join(updates) + b"".join(additional)


def tsig_sign(wire, key, time_signed=None, fudge=300, request_mac=None):
    """Append a TSIG RR (RFC 8945) to an unsigned message, signed with the
    dns.tsig.Key `key` at time_signed (default now). Returns (wire, mac)."""
    import dns.rdtypes.ANY.TSIG
    import dns.tsig
    msg_id = struct.unpack("!H", wire[:2])[0]
    rd = dns.rdtypes.ANY.TSIG.TSIG(dns.rdataclass.ANY, dns.rdatatype.TSIG, key.algorithm,
                                   0, fudge, b"", msg_id, 0, b"")
    t = int(time.time() if time_signed is None else time_signed)
    rd, _ = dns.tsig.sign(wire, key, rd, t, request_mac)
    rdata = rd.to_digestable()
    tsig_rr = (key.name.to_wire() + struct.pack("!HHIH", dns.rdatatype.TSIG, dns.rdataclass.ANY,
                                                0, len(rdata)) + rdata)
    (arcount,) = struct.unpack("!H", wire[10:12])
    return wire[:10] + struct.pack("!H", arcount + 1) + wire[12:] + tsig_rr, rd.mac


def split_tsig(wire):
    """(message, tsig_owner, tsig_rdata, tsig_start) of a response; the
    message is parsed without its TSIG RR (so without validating it), owner
    and rdata are None when there is no TSIG."""
    import dns.rdata
    import dns.wire
    (qd, an, ns, ar) = struct.unpack("!4H", wire[4:12])
    p = dns.wire.Parser(wire, 12)
    for _ in range(qd):
        p.get_name()
        p.get_struct("!HH")
    total = an + ns + ar
    for i in range(total):
        start = p.current
        owner = p.get_name()
        (rtype, _rclass, _ttl, rdlen) = p.get_struct("!HHIH")
        if rtype == dns.rdatatype.TSIG and i == total - 1:
            with p.restrict_to(rdlen):
                rd = dns.rdata.from_wire_parser(dns.rdataclass.ANY, dns.rdatatype.TSIG, p)
            stripped = wire[:10] + struct.pack("!H", ar - 1) + wire[12:start]
            return dns.message.from_wire(stripped), owner, rd, start
        p.seek(p.current + rdlen)
    return dns.message.from_wire(wire), None, None, None


def tsig_mac_valid(wire, key, request_mac):
    """Whether the response's TSIG MAC is right for key (whatever its error
    field says: dnspython itself refuses to look at a MAC with an error)."""
    import dns.tsig
    _msg, owner, rd, start = split_tsig(wire)
    if rd is None or not rd.mac:
        return False
    (ar,) = struct.unpack("!H", wire[10:12])
    unsigned = wire[:10] + struct.pack("!H", ar - 1) + wire[12:start]
    ctx = dns.tsig._digest(unsigned, key, rd, None, request_mac, None, False)
    try:
        ctx.verify(rd.mac)
        return owner == key.name
    except dns.tsig.BadSignature:
        return False
