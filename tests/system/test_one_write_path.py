"""One write path (issue 12 item 5): the zonecast command's writes (zone
import and delete, tsig, dnssec) go through the server's writer when a
server runs on the data directory, and through a writer of the command's
own, under the data directory's lock, when none does (src/cli/admin.h).

- The race this closes: a served zone whose full build runs in steps (2,000
  nodes each) is held half-way (the test hook ZONECAST_FAULT_PAUSE,
  builder/fault.c) while `zonecast zone import` of a newer version lands.
  When the command built into the edge store itself, the old build's last
  step then moved the served serial back (2000, then 1001). Now: dnspython,
  polling the SOA over the whole sequence, sees the serial only grow
  (1000, 1001, 2000), the command answers once 2000 is served, and the
  edge equals a full build (`zonecast verify`): the new version's names
  are served, the old version's gone.
- Through the server, the zone file is the one the command opened (a
  relative path from another working directory; $INCLUDE relative to the
  file), errors keep their messages and exit codes, and the server logs
  each write.
- With no server: a serve started while a command writes exits at once
  saying which command holds the data directory; two commands take turns.
"""

import json
import os
import subprocess
import threading
import time

import dns.message
import dns.query
import dns.rcode
import pytest

import servers

ZONE = "race.test."
NAMES = 12000          # six steps of 2,000 nodes
WAIT = 30.0 * servers.TIMEOUT_SCALE


def write_zone(path, serial, prefix, names=NAMES, origin=ZONE):
    lines = ["$ORIGIN %s" % origin, "$TTL 300",
             "@ SOA ns1 hostmaster %d 7200 3600 1209600 300" % serial,
             "@ NS ns1", "ns1 A 192.0.2.53"]
    lines += ["%s%d A 192.0.2.%d" % (prefix, i, i % 250 + 1) for i in range(names)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def cli(*args, cwd=None, timeout=120):
    return subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                          text=True, cwd=cwd, timeout=timeout * servers.TIMEOUT_SCALE)


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(0.02)


def served_serial(port, zone=ZONE):
    try:
        r = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=port,
                          timeout=0.5)
    except Exception:
        return None
    return r.answer[0][0].serial if r.rcode() == dns.rcode.NOERROR and r.answer else None


def stored_serial(data_dir, zone=ZONE):
    rows = servers.records_sql(data_dir, "SELECT serial FROM zones WHERE name = '%s'" % zone)
    return int(rows[0][0]) if rows else None


class SerialPoller:
    """Asks for the zone's SOA again and again on a thread; keeps every
    serial served, in order."""

    def __init__(self, port):
        self.port, self.seen, self.stop = port, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            s = served_serial(self.port)
            if s is not None and (not self.seen or self.seen[-1] != s):
                self.seen.append(s)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)


def builder_idle(srv):
    """Whether the server's builder has applied every change (`zonecast
    status --json`: builder.lag_events 0)."""
    cp = cli("status", "--data-dir", srv.data_dir, "--json")
    return cp.returncode == 0 and json.loads(cp.stdout)["builder"]["lag_events"] == 0


def answer(port, name, rtype="A"):
    r = dns.query.udp(dns.message.make_query(name, rtype), "127.0.0.1", port=port, timeout=2)
    return r.rcode(), [rd.to_text() for rrset in r.answer for rd in rrset]


@pytest.mark.zonecast_only
def test_an_import_landing_mid_build_never_moves_the_serial_back(zonecast_api_factory,
                                                                 tmp_path):
    pause = tmp_path / "pause"
    pause.write_text("")
    v1 = write_zone(tmp_path / "v1.zone", 1000, "a")
    v2 = write_zone(tmp_path / "v2.zone", 2000, "b")
    srv = zonecast_api_factory(zones={ZONE: v1}, env={"ZONECAST_FAULT_PAUSE": str(pause)})
    api = srv.client()
    zid = api.zone_id(ZONE)
    assert served_serial(srv.port) == 1000
    with SerialPoller(srv.port) as poll:
        # A settings change: a full build of the served zone, in steps,
        # staged; held after its first step.
        pause.write_text(ZONE + "\n")
        api.ok("PATCH", "/zones/%s" % zid, json={"default_ttl": 600})
        wait_for(lambda: "full build held between two steps" in srv.log(),
                 "the full build to be held half-way")
        # The newer version lands meanwhile.
        imp = subprocess.Popen([servers.zonecast_bin(), "zone", "import", "--data-dir",
                                srv.data_dir, ZONE, v2], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: stored_serial(srv.data_dir) == 2000, "the import's commit")
            try:
                imp.wait(1.0)  # a command that built the zone itself is done by now
            except subprocess.TimeoutExpired:
                pass           # the server builds it: the command waits for that
            pause.write_text("")
            out, err = imp.communicate(timeout=WAIT)
        finally:
            if imp.poll() is None:
                imp.kill()
                imp.communicate()
        assert imp.returncode == 0, err
        assert "zone race.test.: %d records, serial 2000" % (NAMES + 3) in err, err
        # Answered once served: the very next query sees it.
        assert served_serial(srv.port) == 2000
        # Polled on until the builder has applied the whole change log (the
        # held build's last steps come after the command's own build).
        wait_for(lambda: builder_idle(srv), "the builder to apply the whole log")
        wait_for(lambda: poll.seen and poll.seen[-1] == 2000, "the poller to see 2000")
    seen = poll.seen
    assert seen == sorted(seen), "the served serial went back: %s" % seen
    assert seen[0] == 1000 and seen[-1] == 2000, seen
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr
    assert answer(srv.port, "b11999." + ZONE) == (dns.rcode.NOERROR, ["192.0.2.250"])
    assert answer(srv.port, "a5." + ZONE)[0] == dns.rcode.NXDOMAIN
    assert "audit: control accepted command=zone-import subject=race.test." in srv.log()


@pytest.mark.zonecast_only
def test_writes_through_the_server(zonecast_factory, tmp_path):
    """The server reads the file the command opened (its name is relative to
    the command's working directory, not the server's), $INCLUDE relative to
    the file; errors and exit codes as without a server."""
    srv = zonecast_factory()
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    (sub / "hosts.inc").write_text("www A 192.0.2.80\n")
    (sub / "inc.zone").write_text("$ORIGIN inc.test.\n$TTL 300\n"
                                  "@ SOA ns1 hostmaster 5 7200 3600 1209600 300\n"
                                  "@ NS ns1\nns1 A 192.0.2.53\n$INCLUDE hosts.inc\n")
    (sub / "bad.zone").write_text("$ORIGIN bad.test.\n$TTL 300\n"
                                  "@ SOA ns1 hostmaster 5 7200 3600 1209600 300\n"
                                  "@ NS ns1\nx CNAME a\nx A 192.0.2.1\n")
    d = srv.data_dir
    cp = cli("zone", "import", "--data-dir", d, "inc.test", "inc.zone", cwd=str(sub))
    assert cp.returncode == 0, cp.stderr
    assert answer(srv.port, "www.inc.test.") == (dns.rcode.NOERROR, ["192.0.2.80"])
    assert "audit: control accepted command=zone-import subject=inc.test " in srv.log()
    # a bad file: the same messages, exit 1, nothing changed
    cp = cli("zone", "import", "--data-dir", d, "bad.test", "bad.zone", cwd=str(sub))
    assert cp.returncode == 1
    assert "bad.zone:6: error:" in cp.stderr or "bad.zone:5: error:" in cp.stderr, cp.stderr
    assert "zonecast: zone bad.test not imported, nothing changed" in cp.stderr
    assert answer(srv.port, "x.bad.test.")[0] == dns.rcode.REFUSED
    cp = cli("zone", "import", "--data-dir", d, "inc.test", "nosuch.zone", cwd=str(sub))
    assert cp.returncode == 1 and "cannot open nosuch.zone" in cp.stderr, cp.stderr
    # tsig and dnssec through the server
    cp = cli("tsig", "create", "--data-dir", d, "k.inc.test", "--zone", "nosuch.test")
    assert cp.returncode == 1 and "no zone nosuch.test" in cp.stderr, cp.stderr
    cp = cli("tsig", "create", "--data-dir", d, "k.inc.test", "--zone", "inc.test")
    assert cp.returncode == 0 and 'key "k.inc.test"' in cp.stdout, cp.stderr
    cp = cli("tsig", "create", "--data-dir", d, "k.inc.test", "--zone", "inc.test")
    assert cp.returncode == 1 and "zonecast tsig create:" in cp.stderr, cp.stderr
    cp = cli("dnssec", "enable", "--data-dir", d, "inc.test")
    assert cp.returncode == 0 and " IN DS " in cp.stdout, cp.stderr
    r = dns.query.udp(dns.message.make_query("inc.test.", "DNSKEY", want_dnssec=True),
                      "127.0.0.1", port=srv.port, timeout=2)
    assert r.answer, "DNSKEY not served when dnssec enable returned"
    cp = cli("dnssec", "enable", "--data-dir", d, "inc.test")
    assert cp.returncode == 1 and "is signed already" in cp.stderr, cp.stderr
    # delete: off DNS when the command returns
    cp = cli("zone", "delete", "--data-dir", d, "--force", "inc.test")
    assert cp.returncode == 0 and "zone inc.test. deleted" in cp.stdout, cp.stderr
    assert answer(srv.port, "www.inc.test.")[0] == dns.rcode.REFUSED
    cp = cli("tsig", "delete", "--data-dir", d, "k.inc.test")
    assert cp.returncode == 1 and "no key k.inc.test" in cp.stderr, cp.stderr
    cp = srv.verify()
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


@pytest.mark.zonecast_only
def test_no_server_starts_while_a_command_writes(tmp_path):
    """A command writing with no server holds the data directory: a serve
    started meanwhile exits at once naming it; a second command waits its
    turn; both imports land."""
    d = str(tmp_path / "data")
    big = write_zone(tmp_path / "big.zone", 7, "n", names=150000)
    small = write_zone(tmp_path / "small.zone", 9, "s", names=10, origin="other.test.")
    first = subprocess.Popen([servers.zonecast_bin(), "zone", "import", "--data-dir", d,
                              ZONE, big], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        lock = os.path.join(d, "serve.lock")
        wait_for(lambda: os.path.exists(lock) and "zone import" in open(lock).read(),
                 "the import to take the lock")
        port = servers.free_port()
        serve = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", d, "--listen",
                                "127.0.0.1:%d" % port, "--api-listen", "none", "--no-demo"],
                               capture_output=True, text=True, timeout=30)
        assert serve.returncode != 0
        assert ("is in use by `zonecast zone import` (pid %d)" % first.pid) in serve.stderr, \
            serve.stderr
        out, err = first.communicate(timeout=WAIT)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    cp = cli("zone", "import", "--data-dir", d, "other.test", small)
    assert cp.returncode == 0, cp.stderr
    cp = cli("verify", "--data-dir", d)
    assert cp.returncode == 0 and "no differences" in cp.stdout, cp.stdout + cp.stderr


@pytest.mark.zonecast_only
def test_commands_take_turns(tmp_path):
    """Two commands at once on a directory no server runs on: the second
    waits for the first (its zone exists only once the first is done),
    then runs; both changes land."""
    d = str(tmp_path / "data")
    big = write_zone(tmp_path / "big.zone", 7, "n", names=150000)
    first = subprocess.Popen([servers.zonecast_bin(), "zone", "import", "--data-dir", d,
                              ZONE, big], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        lock = os.path.join(d, "serve.lock")
        wait_for(lambda: os.path.exists(lock) and "zone import" in open(lock).read(),
                 "the import to take the lock")
        cp = cli("tsig", "create", "--data-dir", d, "k.race.test", "--zone", ZONE)
        assert cp.returncode == 0, cp.stderr
        out, err = first.communicate(timeout=WAIT)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert "k.race.test" in cli("tsig", "list", "--data-dir", d).stdout


@pytest.mark.zonecast_only
def test_the_command_finds_the_control_socket_in_the_lock_file(zonecast_factory, tmp_path):
    """A control socket elsewhere (control-socket): the command finds it in
    the lock file; a server without one (control-socket none) is said to
    take no writes, and nothing is written beside it."""
    sock = str(tmp_path / "ctl.sock")
    srv = zonecast_factory(options=[("control-socket", sock)])
    # DNS answers before the control socket is bound and named in the lock
    # file: wait for that line.
    deadline = time.monotonic() + 20
    while True:
        lock = open(os.path.join(srv.data_dir, "serve.lock")).read().splitlines()
        if len(lock) > 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert lock[1:] == ["zonecast serve", "control " + sock], lock
    cp = cli("tsig", "create", "--data-dir", srv.data_dir, "k.example.com", "--zone",
             "example.com")
    assert cp.returncode == 0 and 'key "k.example.com"' in cp.stdout, cp.stderr
    assert "audit: control accepted command=tsig-create subject=k.example.com " in srv.log()
    assert srv.stop() == []
    srv.options = [o for o in srv.options if not o.startswith("control-socket=")]
    srv.options.append("control-socket=none")
    srv.restart()
    cp = cli("tsig", "create", "--data-dir", srv.data_dir, "k2.example.com", "--zone",
             "example.com")
    assert cp.returncode == 1, cp.stdout
    assert "without a control socket (control-socket: none)" in cp.stderr, cp.stderr
    assert "k2.example.com" not in cli("tsig", "list", "--data-dir", srv.data_dir).stdout
