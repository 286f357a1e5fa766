"""One `zonecast serve` per data directory and per address (issue 11 item 6).

- A second `serve` on a data directory that another one serves, however the
  path is spelled (a symlink, a relative path, `dir/.`, a trailing slash),
  exits non-zero at once with "data directory ... is in use by another
  zonecast serve (pid N)", and writes nothing there. Several started
  together on an empty directory: one runs, one demo zone, one demo token.
  Once the first is gone (even by SIGKILL) the directory can be served again.
- A second `serve` on a DNS address another process holds (another zonecast,
  or any socket, even one bound with SO_REUSEPORT as zonecast's and knotd's
  workers are) exits non-zero with "address already in use" for UDP or TCP
  and writes nothing into its data directory; the first answers every query,
  from every source port, with its own data. The same for the API address.
- The administrative commands still write beside a running serve.
"""

import os
import signal
import socket
import sqlite3
import subprocess
import time

import dns.message
import dns.query
import dns.rcode
import pytest

import servers

ZONES = servers.ZONES_DIR
START = 10.0 * servers.TIMEOUT_SCALE


def zonecast(*args, timeout=60, cwd=None):
    return subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                          text=True, timeout=timeout * servers.TIMEOUT_SCALE, cwd=cwd)


def serve_argv(data_dir, port, api_port=None, demo=False):
    argv = [servers.zonecast_bin(), "serve", "--data-dir", data_dir,
            "--listen", "127.0.0.1:%d" % port, "--workers", "2", "-o", "rrl-rate=0",
            "--api-listen", "127.0.0.1:%d" % api_port if api_port else "none"]
    return argv + ([] if demo else ["--no-demo"])


class Serve:
    """A `zonecast serve` started here (not through the fixtures: some of
    them are meant to fail)."""

    def __init__(self, workdir, data_dir, port, api_port=None, demo=False, argv=None):
        self.port, self.data_dir = port, data_dir
        self.log_path = os.path.join(workdir, "serve-%d-%d.log" % (port, time.monotonic_ns()))
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv or serve_argv(data_dir, port, api_port, demo),
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def answers(self, zone="example.com."):
        try:
            m = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1",
                              port=self.port, timeout=0.3)
            return m.rcode() == dns.rcode.NOERROR and bool(m.answer)
        except Exception:
            return False

    def wait_ready(self, zone="example.com."):
        deadline = time.monotonic() + START
        while not self.answers(zone):
            assert self.proc.poll() is None, "exited %s:\n%s" % (self.proc.returncode,
                                                                 self.output())
            assert time.monotonic() < deadline, "not answering:\n" + self.output()
            time.sleep(0.05)
        return self

    def wait_started(self, zone="example.com."):
        """Answering, and every stage up: the control socket and the
        pidfile come after DNS (they may not keep it down), so a listing
        of the data directory taken at the first answer can miss them."""
        self.wait_ready(zone)
        deadline = time.monotonic() + START
        while "serving %s (pid %d)" % (self.data_dir, self.proc.pid) not in self.output():
            assert self.proc.poll() is None, "exited %s:\n%s" % (self.proc.returncode,
                                                                 self.output())
            assert time.monotonic() < deadline, "never fully started:\n" + self.output()
            time.sleep(0.05)
        return self

    def wait_exit(self, timeout=START):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture
def started(tmp_path):
    """Serves started by a test; all stopped at its end, none may have
    crashed or shown a sanitizer report."""
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast binary not found")
    running = []

    def start(data_dir, port=None, **kw):
        s = Serve(str(tmp_path), data_dir, port or servers.free_port(), **kw)
        running.append(s)
        return s
    yield start
    for s in running:
        rc = s.stop()
        out = s.output()
        for marker in servers.SANITIZER_MARKERS:
            assert marker not in out, out
        assert rc not in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS), \
            "serve crashed (%s):\n%s" % (rc, out)


def imported(tmp_path, name, zone="example.com.", path=None):
    """A data directory holding one zone (the suite's example.com by default)."""
    d = str(tmp_path / name)
    cp = zonecast("zone", "import", "--data-dir", d, "--quiet", zone,
                  path or os.path.join(ZONES, "example.com.zone"))
    assert cp.returncode == 0, cp.stderr
    return d


def other_example_com(tmp_path):
    """example.com with other data: its apex A is 198.51.100.1."""
    p = tmp_path / "other.zone"
    p.write_text("$ORIGIN example.com.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n"
                 "@ NS ns1\nns1 A 198.51.100.53\n@ A 198.51.100.1\n")
    return str(p)


def apex_a_from_many_ports(port, count=300):
    """The apex A of example.com asked `count` times over UDP, each from a
    new socket (a new source port: SO_REUSEPORT spreads by it) and a few
    over TCP; returns the set of answers (None for no answer)."""
    seen = {}
    for i in range(count):
        try:
            m = dns.query.udp(dns.message.make_query("example.com.", "A"), "127.0.0.1",
                              port=port, timeout=1)
            key = tuple(sorted(rd.to_text() for rrset in m.answer for rd in rrset))
        except Exception:
            key = None
        seen[key] = seen.get(key, 0) + 1
    for i in range(20):
        m = dns.query.tcp(dns.message.make_query("example.com.", "A"), "127.0.0.1",
                          port=port, timeout=2)
        key = tuple(sorted(rd.to_text() for rrset in m.answer for rd in rrset))
        seen[key] = seen.get(key, 0) + 1
    return seen


def zone_names(data_dir):
    cp = zonecast("zone", "list", "--data-dir", data_dir)
    assert cp.returncode == 0, cp.stderr
    return sorted(line.split()[0] for line in cp.stdout.splitlines() if line.strip())


def token_count(data_dir):
    db = sqlite3.connect("file:%s/records.db?mode=ro" % data_dir, uri=True)
    try:
        return db.execute("SELECT count(*) FROM tokens").fetchone()[0]
    finally:
        db.close()


# ------------------------------------------------------------------ one data directory

def spellings(tmp_path, data_dir):
    """Other paths to the same directory: (path, cwd) pairs."""
    link = tmp_path / "link-to-data"
    if not link.exists():
        os.symlink(data_dir, link)
    parent, base = os.path.split(data_dir)
    return [(data_dir, None), (str(link), None), (base, parent), ("./" + base, parent),
            (data_dir + "/", None), (data_dir + "/.", None),
            (os.path.join(data_dir, "..", base), None), (str(link) + "/", None)]


def test_second_serve_on_a_data_directory_is_refused(started, tmp_path):
    d = imported(tmp_path, "data")
    first = started(d).wait_started()
    before = (zone_names(d), sorted(os.listdir(d)))
    for path, cwd in spellings(tmp_path, d):
        t0 = time.monotonic()
        cp = subprocess.run(serve_argv(path, servers.free_port(), servers.free_port(), demo=True),
                            capture_output=True, text=True, timeout=30, cwd=cwd)
        assert cp.returncode != 0, (path, cp.stderr)
        assert time.monotonic() - t0 < 5, "refusing took too long"
        real = os.path.realpath(d)
        assert ("data directory %s is in use by another zonecast serve (pid %d)"
                % (real, first.proc.pid)) in cp.stderr, (path, cp.stderr)
        assert first.answers()
    # nothing written: no demo zone, no token file, no new file
    assert (zone_names(d), sorted(os.listdir(d))) == before
    assert "demo-token" not in os.listdir(d)


def test_same_directory_and_same_address(started, tmp_path):
    """Everything the same: the data directory is named (checked first)."""
    d = imported(tmp_path, "data")
    first = started(d).wait_ready()
    cp = subprocess.run(serve_argv(d, first.port), capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0
    assert "is in use by another zonecast serve" in cp.stderr, cp.stderr
    assert apex_a_from_many_ports(first.port, 50) == {("192.0.2.1",): 70}


@pytest.mark.parametrize("round_", range(6))
def test_serves_started_together_on_an_empty_directory(started, tmp_path, round_):
    """Three serves of one empty directory started at once (the demo zone
    and the demo token on): one runs, the others exit with the message; one
    demo zone and exactly one token."""
    d = str(tmp_path / "empty")
    group = [started(d, demo=True, api_port=servers.free_port()) for _ in range(3)]
    deadline = time.monotonic() + START
    while sum(s.proc.poll() is None for s in group) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    alive = [s for s in group if s.proc.poll() is None]
    assert len(alive) == 1, [(s.proc.returncode, s.output()) for s in group]
    winner = alive[0].wait_ready("example.test.")
    for s in group:
        if s is not winner:
            assert s.proc.returncode != 0
            assert "is in use by another zonecast serve (pid %d)" % winner.proc.pid \
                in s.output(), s.output()
    assert zone_names(d) == ["example.test."]
    assert token_count(d) == 1
    assert "demo API token" in winner.output()


def test_a_killed_serve_leaves_no_lock_behind(started, tmp_path):
    """The lock is the kernel's: SIGKILL releases it; the next serve starts."""
    d = imported(tmp_path, "data")
    first = started(d).wait_ready()
    first.proc.kill()
    first.proc.wait()
    assert os.path.exists(os.path.join(d, "serve.lock"))
    second = started(d).wait_ready()
    assert apex_a_from_many_ports(second.port, 20) == {("192.0.2.1",): 40}


def test_the_cli_still_writes_beside_a_running_serve(started, tmp_path):
    """zone import, tsig, dnssec and token commands on a served directory
    work and the server serves what they wrote."""
    d = imported(tmp_path, "data")
    first = started(d).wait_ready()
    p = tmp_path / "more.zone"
    p.write_text("$ORIGIN more.test.\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n"
                 "@ NS ns1\nns1 A 192.0.2.53\n")
    for args in (("zone", "import", "--data-dir", d, "more.test.", str(p)),
                 ("tsig", "create", "--data-dir", d, "k.more.test", "--zone", "more.test"),
                 ("token", "create", "--data-dir", d),
                 ("dnssec", "enable", "--data-dir", d, "more.test")):
        cp = zonecast(*args)
        assert cp.returncode == 0, (args, cp.stderr)
    first.wait_ready("more.test.")


# ------------------------------------------------------------------ one address

def test_second_serve_on_an_address_is_refused(started, tmp_path):
    """Another data directory, whose example.com says 198.51.100.1, on the
    address of a running serve: refused before its data directory is
    touched; the first answers every query (300 source ports, and TCP)
    from its own data."""
    first = started(imported(tmp_path, "first")).wait_ready()
    other = imported(tmp_path, "second", path=other_example_com(tmp_path))
    listing = sorted(os.listdir(other))
    fresh = str(tmp_path / "fresh")
    for d in (other, fresh):
        cp = subprocess.run(serve_argv(d, first.port, demo=True), capture_output=True,
                            text=True, timeout=30)
        assert cp.returncode != 0, cp.stderr
        assert "address already in use" in cp.stderr.lower(), cp.stderr
        assert "127.0.0.1:%d" % first.port in cp.stderr, cp.stderr
    # the lock, taken before the addresses, is all a refused serve leaves
    # (the import took it too: it is there already)
    assert "serve.lock" in listing
    assert sorted(os.listdir(other)) == listing
    assert sorted(os.listdir(fresh)) == ["serve.lock"], "the refused serve wrote a store"
    assert zone_names(other) == ["example.com."]
    assert apex_a_from_many_ports(first.port) == {("192.0.2.1",): 320}


def test_serves_on_one_address_started_together(started, tmp_path):
    """Two serves of two directories on one address, started at once, five
    times: one runs, the other says the address is in use."""
    a = imported(tmp_path, "a")
    b = imported(tmp_path, "b", path=other_example_com(tmp_path))
    for _ in range(5):
        port = servers.free_port()
        pair = [started(a, port=port), started(b, port=port)]
        deadline = time.monotonic() + START
        while all(s.proc.poll() is None for s in pair) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        alive = [s for s in pair if s.proc.poll() is None]
        assert len(alive) == 1, [s.output() for s in pair]
        loser = pair[1 - pair.index(alive[0])]
        assert "address already in use" in loser.output(), loser.output()
        alive[0].wait_ready()
        answers = apex_a_from_many_ports(port, 100)
        assert len(answers) == 1 and None not in answers, answers
        assert alive[0].stop() == 0


@pytest.mark.parametrize("listen", ["0.0.0.0", "127.0.0.1"])
def test_overlapping_addresses(started, tmp_path, listen):
    """0.0.0.0:P and 127.0.0.1:P overlap: whichever comes second is refused."""
    port = servers.free_port()
    d = imported(tmp_path, "first")
    first = started(d, port=port, argv=[
        servers.zonecast_bin(), "serve", "--data-dir", d, "--listen", "%s:%d" % (listen, port),
        "--workers", "2", "--api-listen", "none", "--no-demo", "-o", "rrl-rate=0"])
    first.wait_ready()
    second = "127.0.0.1" if listen == "0.0.0.0" else "0.0.0.0"
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", str(tmp_path / "x"),
                         "--listen", "%s:%d" % (second, port), "--api-listen", "none"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0
    assert "address already in use" in cp.stderr.lower(), cp.stderr
    assert apex_a_from_many_ports(port, 50) == {("192.0.2.1",): 70}


@pytest.mark.parametrize("kind", ["udp", "tcp"])
def test_a_foreign_socket_with_so_reuseport(started, tmp_path, kind):
    """Another program holding the port with SO_REUSEPORT (as knotd's and
    zonecast's workers do) on UDP only or TCP only: zonecast does not join
    it; it says which protocol is in use."""
    port = servers.free_port()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if kind == "udp" else
                         socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    if kind == "tcp":
        sock.listen(8)
    try:
        d = str(tmp_path / "d")
        cp = subprocess.run(serve_argv(d, port, demo=True), capture_output=True, text=True,
                            timeout=30)
        assert cp.returncode != 0
        assert ("cannot bind %s 127.0.0.1:%d: address already in use"
                % (kind.upper(), port)) in cp.stderr, cp.stderr
        assert not os.path.exists(os.path.join(d, "records.db"))
    finally:
        sock.close()
    # once it is gone, the address is free
    started(imported(tmp_path, "later"), port=port).wait_ready()


def test_a_knotd_on_the_address(started, tmp_path, knotd_factory):
    """The reference server on the port (its workers bind with SO_REUSEPORT
    when it has several): zonecast refuses to share it."""
    knot = knotd_factory()
    cp = subprocess.run(serve_argv(str(tmp_path / "d"), knot.port), capture_output=True,
                        text=True, timeout=30)
    assert cp.returncode != 0
    assert "address already in use" in cp.stderr.lower(), cp.stderr
    assert apex_a_from_many_ports(knot.port, 50) == {("192.0.2.1",): 70}


def test_a_restart_on_the_same_address_is_not_kept_out(started, tmp_path):
    """A serve stopped (or killed) while TCP clients were connected leaves
    connections in TIME_WAIT on its port: the next serve starts all the
    same (the probe does not mistake them for a listener)."""
    d = imported(tmp_path, "data")
    first = started(d).wait_ready()
    for _ in range(10):
        dns.query.tcp(dns.message.make_query("example.com.", "A"), "127.0.0.1",
                      port=first.port, timeout=2)
    first.proc.kill()
    first.proc.wait()
    started(d, port=first.port).wait_ready()


def test_the_api_address_in_use(started, tmp_path):
    """The API address of another serve: refused before the data directory
    is touched, with the address named."""
    api_port = servers.free_port()
    first = started(imported(tmp_path, "first"), api_port=api_port).wait_ready()
    d = str(tmp_path / "second")
    cp = subprocess.run(serve_argv(d, servers.free_port(), api_port=api_port, demo=True),
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0
    assert "api: cannot listen on 127.0.0.1:%d: address already in use" % api_port \
        in cp.stderr, cp.stderr
    assert not os.path.exists(os.path.join(d, "records.db"))
    assert first.answers()
