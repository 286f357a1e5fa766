"""The control socket and its commands (issue 14; docs/operations.md):
`zonecast status | reload | stop | zone status [ZONE]`, human output and
--json, a socket only the server's user may use (mode 0600, and the peer's
credentials checked), a pidfile; per zone the stored and served serial,
signing, last change, build state (quarantined, and why) and what the
secondaries did last (NOTIFY answered or refused, transfers done or
refused, from a real responder and dnspython's AXFR).
"""

import json
import os
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.zone
import pytest

import servers

WAIT = 10.0 * servers.TIMEOUT_SCALE


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(0.05)


def cli(srv, *args, check=True):
    return srv.run_cli(*args, "--data-dir", srv.data_dir, check=check)


def started(srv, timeout=10):
    """srv once every stage runs: DNS answers a moment before the control
    socket and the pidfile are made, and the zone list logged last at start
    comes after them (a race the tests lost on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while "zone(s)" not in srv.log():
        assert time.monotonic() < deadline, srv.log()
        time.sleep(0.05)
    return srv


def status_json(srv):
    return json.loads(cli(srv, "status", "--json").stdout)


def zones_json(srv, zone=None):
    args = ["zone", "status", "--json"] + ([zone] if zone else [])
    out = json.loads(cli(srv, *args).stdout)
    return {z["name"]: z for z in out["zones"]}


def as_nobody(argv):
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                          + argv, capture_output=True, text=True, timeout=30)


def test_status(zonecast_factory):
    srv = started(zonecast_factory())
    st = status_json(srv)
    assert st["pid"] == srv.proc.pid
    assert st["version"] and st["uptime_s"] >= 0 and st["started"].endswith("Z")
    assert st["listeners"]["dns"] == ["127.0.0.1:%d" % srv.port]
    assert st["listeners"]["control"] == os.path.join(srv.data_dir, "control.sock")
    assert st["listeners"]["workers_per_address"] == 2
    assert st["zones"] == 3
    b = st["builder"]
    assert b["applied_seq"] == b["last_seq"] and b["lag_events"] == 0 and b["lag_ms"] == 0
    assert b["stalled"] is None and b["quarantined_zones"] == 0
    assert set(st["writer"]) == {"queued", "batches", "units", "last_batch",
                                 "cut_batches", "replayed_batches"}
    assert set(st["caches"]["signatures"]) == {"hits", "misses", "hit_rate"}
    assert set(st["rrl"]) == {"dropped", "slipped"}
    assert st["reload"] == {"count": 0, "last": None}
    human = cli(srv, "status").stdout
    for part in ("zonecast ", "pid %d" % srv.proc.pid, "127.0.0.1:%d" % srv.port,
                 "zones            3 (0 quarantined)", "lag 0 events"):
        assert part in human, human


def test_status_counts_signatures_and_writes(zonecast_api_factory):
    """The signature cache's hits show after repeated signed answers; the
    writer's batches after API writes."""
    srv = zonecast_api_factory()
    srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "example.net.")
    wait_for(lambda: zones_json(srv, "example.net.")["example.net."]["signed"], "signed")
    for _ in range(5):
        srv.query("example.net.", "SOA", do=True)
    sig = status_json(srv)["caches"]["signatures"]
    assert sig["hits"] >= 3 and sig["misses"] >= 1 and 0 < sig["hit_rate"] < 1, sig
    api = srv.client()
    zid = api.zone_id("example.com")
    for i in range(3):
        api.ok("POST", "/zones/%s/dns_records" % zid,
               json={"name": "w%d.example.com" % i, "type": "A", "content": "192.0.2.%d" % i})
    w = status_json(srv)["writer"]
    assert w["batches"] >= 3 and w["units"] >= 3 and w["queued"] == 0, w


def test_zone_status(zonecast_api_factory, tmp_path):
    fault = tmp_path / "failing"
    fault.write_text("")
    srv = zonecast_api_factory(env={"ZONECAST_FAULT_BUILD": str(fault)})
    srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "example.net.")
    zones = wait_for(lambda: (lambda z: z if z["example.net."]["signed"] else None)(
        zones_json(srv)), "example.net. signed")
    assert set(zones) == {"example.com.", "sub.example.com.", "example.net."}
    com = zones["example.com."]
    assert com["serial"] == com["served_serial"] == 2024010101, com
    assert com["signed"] is False and com["state"] == "ok" and com["records"] > 10
    assert com["last_change"].endswith("Z") and com["secondaries"] == []
    assert zones["example.net."]["signed"] is True
    one = zones_json(srv, "example.com.")
    assert list(one) == ["example.com."]
    human = cli(srv, "zone", "status").stdout
    assert "example.com." in human and "signed" in human and "unsigned" in human
    cp = cli(srv, "zone", "status", "no-such.zone.", check=False)
    assert cp.returncode == 1 and "no zone no-such.zone." in cp.stderr

    # a quarantined zone: state and reason, served serial the last good one
    fault.write_text("example.com.\n")
    api = srv.client()
    zid = api.zone_id("example.com")
    api.call("POST", "/zones/%s/dns_records" % zid,
             json={"name": "q.example.com", "type": "A", "content": "192.0.2.9"})
    z = wait_for(lambda: (lambda z: z if z["state"] == "quarantined" else None)(
        zones_json(srv, "example.com.")["example.com."]), "quarantine")
    assert z["served_serial"] == 2024010101 and z["serial"] > 2024010101
    assert "injected" in z["quarantine"]["reason"] and z["quarantine"]["attempts"] >= 1
    assert "QUARANTINED since" in cli(srv, "zone", "status", "example.com.").stdout
    assert status_json(srv)["builder"]["quarantined_zones"] == 1


class NotifyResponder(threading.Thread):
    """A secondary's NOTIFY side: answers example.com. NOERROR and any
    other zone REFUSED (dnspython)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                wire, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            q = dns.message.from_wire(wire)
            zone = q.question[0].name.to_text()
            self.seen.append(zone)
            r = dns.message.make_response(q)
            r.set_opcode(dns.opcode.NOTIFY)
            r.set_rcode(dns.rcode.NOERROR if zone == "example.com." else dns.rcode.REFUSED)
            self.sock.sendto(r.to_wire(), addr)


def test_secondaries_notify_and_transfers(zonecast_factory):
    resp = NotifyResponder()
    resp.start()
    try:
        srv = zonecast_factory(options=[("notify", "127.0.0.1:%d" % resp.port),
                                        ("allow-transfer", "127.0.0.1")])
        peer = "127.0.0.1:%d" % resp.port

        def notified():
            z = zones_json(srv)
            ok = [p for p in z["example.com."]["secondaries"] if p["peer"] == peer]
            bad = [p for p in z["example.net."]["secondaries"] if p["peer"] == peer]
            if ok and bad and ok[0]["notify"]["result"] == "answered" and \
                    bad[0]["notify"]["result"].startswith("refused"):
                return z
            return None

        z = wait_for(notified, "NOTIFY answered and refused")
        n = [p for p in z["example.com."]["secondaries"] if p["peer"] == peer][0]["notify"]
        assert n["serial"] == 2024010101 and n["time"].endswith("Z")
        refused = [p for p in z["example.net."]["secondaries"] if p["peer"] == peer][0]
        assert refused["notify"]["result"] == "refused (REFUSED)"
        assert "audit: notify refused zone=example.net. secondary=%s serial=" % peer in srv.log()
        assert "rcode=REFUSED" in srv.log()

        # an AXFR from an allowed address, one from an address that is not
        dns.zone.from_xfr(dns.query.xfr("127.0.0.1", "example.com.", port=srv.port))
        with pytest.raises(Exception):
            dns.zone.from_xfr(dns.query.xfr("127.0.0.1", "sub.example.com.", port=srv.port,
                                            source="127.0.0.3"))
        z = zones_json(srv)
        t = [p for p in z["example.com."]["secondaries"] if p["peer"] == "127.0.0.1"][0]
        assert t["transfer"]["kind"] == "AXFR" and t["transfer"]["result"] == "done"
        assert t["transfer"]["serial"] == 2024010101
        t = [p for p in z["sub.example.com."]["secondaries"] if p["peer"] == "127.0.0.3"][0]
        assert t["transfer"]["result"] == "refused: unsigned, not in allow-transfer"
        human = cli(srv, "zone", "status", "example.com.").stdout
        assert "secondary %s: NOTIFY serial 2024010101 answered" % peer in human, human
        assert "AXFR serial 2024010101 done" in human, human
    finally:
        resp.done.set()


def test_socket_mode_and_pidfile(zonecast_factory):
    srv = started(zonecast_factory())
    sock = os.path.join(srv.data_dir, "control.sock")
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid()
    pidfile = os.path.join(srv.data_dir, "zonecast.pid")
    assert open(pidfile).read() == "%d\n" % srv.proc.pid


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_other_users_refused(zonecast_factory):
    """Another user cannot use the socket: the file's mode refuses the
    connection, and where the mode is opened up the server still refuses
    (SO_PEERCRED)."""
    rundir = tempfile.mkdtemp(prefix="zc-control-", dir="/tmp")
    os.chmod(rundir, 0o755)
    sock = os.path.join(rundir, "c.sock")
    srv = zonecast_factory(options=[("control-socket", sock)])
    argv = [servers.zonecast_bin(), "status", "--socket", sock]
    cp = as_nobody(argv)
    assert cp.returncode == 1 and "Permission denied" in cp.stderr, cp.stderr
    os.chmod(sock, 0o666)
    cp = as_nobody(argv)
    assert cp.returncode == 1 and "permission denied" in cp.stderr, cp.stderr
    assert "control: refused a client of another user" in srv.log()
    # the server's own user still gets its answer
    assert "zonecast " in srv.run_cli("status", "--socket", sock).stdout
    srv.stop()
    assert not os.path.exists(sock)
    os.rmdir(rundir)


def test_stop(zonecast_factory):
    srv = zonecast_factory()
    pid = srv.proc.pid
    out = cli(srv, "stop").stdout
    assert "stopping zonecast (pid %d)" % pid in out
    assert srv.proc.wait(5) == 0  # stop waited for the exit (a zombie here)
    assert not os.path.exists(os.path.join(srv.data_dir, "control.sock"))
    assert not os.path.exists(os.path.join(srv.data_dir, "zonecast.pid"))
    assert "control: stop asked for" in srv.log()


def test_no_server(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    cp = subprocess.run([servers.zonecast_bin(), "status", "--data-dir", str(d)],
                        capture_output=True, text=True)
    assert cp.returncode == 1
    assert "no zonecast answers on %s/control.sock" % d in cp.stderr
    assert "is `zonecast serve` running" in cp.stderr


def test_start_lists_zones(zonecast_factory):
    log = started(zonecast_factory()).log()
    for zone in ("example.com.", "sub.example.com.", "example.net."):
        assert "zone %s: serial " % zone in log
    assert "zone example.com.: serial 2024010101, serving 2024010101" in log
    assert "3 zone(s)" in log


def test_socket_taken_does_not_keep_dns_down(zonecast_factory, tmp_path):
    """A control-socket path another server answers on: the second server
    says so and serves DNS without a socket; the first keeps its own."""
    sock = str(tmp_path / "shared.sock")
    first = zonecast_factory(options=[("control-socket", sock)])
    second = zonecast_factory(options=[("control-socket", sock)])
    # DNS answers before the control socket is tried: wait for its lines.
    deadline = time.monotonic() + 20
    while "serving without a control socket" not in second.log():
        assert time.monotonic() < deadline, second.log()
        time.sleep(0.05)
    assert "another server answers there" in second.log()
    assert second.answers_soa("example.com.")
    st = json.loads(first.run_cli("status", "--socket", sock, "--json").stdout)
    assert st["pid"] == first.proc.pid


def test_files_at_the_socket_and_pidfile_paths_are_left_alone(zonecast_factory, tmp_path):
    """Found by an outside tester: a control-socket path naming a regular
    file (the config file itself) was removed as a stale socket, since
    connect() to it fails as to one; a pidfile path's file was
    overwritten, and removed at exit. Neither is touched now; a stale
    pidfile (a process id and a newline) is still replaced."""
    victim = tmp_path / "victim.conf"
    victim.write_text("server:\n    keep: me\n")
    pvictim = tmp_path / "victim.db"
    pvictim.write_bytes(b"SQLite format 3\x00" + b"\x01" * 100)
    srv = zonecast_factory(options=[("control-socket", str(victim)),
                                    ("pidfile", str(pvictim))])
    wait_for(lambda: "serving without a control socket" in srv.log(), "the socket's refusal")
    log = srv.log()
    assert "a file that is not a socket is there; not removed" in log, log
    assert "a file that is not a pidfile is there; not replaced" in log, log
    assert srv.answers_soa("example.com.")
    assert srv.stop() == []
    assert victim.read_text() == "server:\n    keep: me\n"
    assert pvictim.read_bytes() == b"SQLite format 3\x00" + b"\x01" * 100
    stale = tmp_path / "stale.pid"
    stale.write_text("999999\n")
    srv = started(zonecast_factory(options=[("pidfile", str(stale))]))
    assert stale.read_text() == "%d\n" % srv.proc.pid
    # Another live server's pidfile is not taken (it lost it at our exit);
    # a pid of another program (reused after a crash) is stale.
    second = zonecast_factory(options=[("pidfile", str(stale))])
    wait_for(lambda: "it names another zonecast that runs" in second.log(),
             "the second server's refusal")
    assert second.stop() == []
    assert stale.read_text() == "%d\n" % srv.proc.pid
    assert srv.stop() == []
    stale.write_text("%d\n" % os.getpid())         # pytest's: not a zonecast
    third = started(zonecast_factory(options=[("pidfile", str(stale))]))
    assert stale.read_text() == "%d\n" % third.proc.pid


def test_a_killed_server_not_reaped_yet_does_not_hold_its_pidfile(zonecast_factory):
    """Found by an outside tester: the pid of a SIGKILLed server its
    parent had not reaped yet (a zombie, whose /proc/PID/comm still says
    zonecast) counted as a server that runs, and the restarted server
    kept away from the pidfile."""
    killed = started(zonecast_factory())
    pidfile = os.path.join(killed.data_dir, "zonecast.pid")
    os.kill(killed.proc.pid, signal.SIGKILL)
    with open("/proc/%d/stat" % killed.proc.pid) as f:
        wait_for(lambda: f.seek(0) == 0 and f.read().rsplit(")", 1)[1].split()[0] == "Z",
                 "the killed server to be a zombie")
    assert open(pidfile).read() == "%d\n" % killed.proc.pid
    after = started(zonecast_factory(options=[("pidfile", pidfile)]))
    assert open(pidfile).read() == "%d\n" % after.proc.pid
    assert "not replaced (pidfile)" not in after.log()
    killed.kill9()                  # reaps it


def test_a_slow_client_holds_the_socket_5_s_at_most(zonecast_factory):
    """A client sending a byte a second, never a line, held the socket
    (served one connection at a time; 5 s per read, not per request):
    status waited for as long as it dripped. It gets 5 s in all now."""
    srv = started(zonecast_factory())
    sock = os.path.join(srv.data_dir, "control.sock")
    drip = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    drip.connect(sock)
    done = threading.Event()

    def dripping():
        try:
            for _ in range(60):
                if done.wait(1.0):
                    return
                drip.send(b" ")
        except OSError:
            return              # the server closed it

    t = threading.Thread(target=dripping, daemon=True)
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    out = json.loads(cli(srv, "status", "--json").stdout)
    elapsed = time.monotonic() - t0
    done.set()
    t.join(5)
    drip.close()
    assert out["pid"] == srv.proc.pid
    assert elapsed < 5 + 4 * servers.TIMEOUT_SCALE, elapsed


def test_writes_of_the_command_are_audited(zonecast_factory):
    """Writes of the zonecast command through the running server (tsig
    create, zone import, ...) had no audit line, only "control: ... done":
    one line each now, accepted or refused, with who asked."""
    srv = started(zonecast_factory())
    cli(srv, "tsig", "create", "audited-key", "--zone", "example.com")
    cp = cli(srv, "tsig", "delete", "no-such-key", check=False)
    assert cp.returncode != 0
    cli(srv, "tsig", "delete", "audited-key")
    # token create and revoke, and secondaries, wrote the store beside the
    # server and left no line at all (an outside tester's): through the
    # server now, each audited; the secret never in the log
    secret = cli(srv, "token", "create", "--name", "audited-token").stdout.strip()
    assert secret.startswith("zc_")
    cli(srv, "token", "revoke", "audited-token")
    cli(srv, "secondaries", "example.com", "--allow-transfer", "192.0.2.99")
    out = cli(srv, "secondaries", "example.com").stdout
    assert "allow-transfer\t192.0.2.99" in out, out
    log = srv.log()
    assert secret not in log
    for want in ("command=token-create subject=audited-token",
                 "command=token-revoke subject=audited-token",
                 "command=secondaries-set subject=example.com"):
        assert "audit: control accepted " + want in log, (want, log[-2000:])
    lines = [l for l in log.splitlines() if "audit: control" in l][:3]
    assert len(lines) == 3, lines
    assert "audit: control accepted command=tsig-create subject=audited-key" in lines[0]
    assert "audit: control refused command=tsig-delete" in lines[1]
    assert "reason=" in lines[1]
    assert "audit: control accepted command=tsig-delete" in lines[2]
    for l in lines:
        assert 'client="uid=%d pid=' % os.geteuid() in l, l
    # a long subject is shortened by the audit line with its full length:
    # it was cut to 1035 octets before the audit saw it, which then said
    # "…(1035 octets)" of a 10,015-octet name (an outside tester's)
    name = "\u00e9" * 5000 + " x"
    cp = cli(srv, "token", "revoke", name, check=False)
    assert cp.returncode != 0
    line = [l for l in srv.log().splitlines() if "command=token-revoke" in l][-1]
    assert "(%d octets)" % len(name.encode()) in line, line[-200:]


def ask_socket(srv, line):
    """One raw request line on the control socket; the answer, parsed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(srv.data_dir, "control.sock"))
    s.sendall(line)
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)


def test_requests_with_a_key_twice_are_refused(zonecast_factory):
    """{"command": "status", "command": "stop"} stopped the server (the
    last key won); a request with a key twice is refused now, as is
    anything that is not one JSON object with a known command."""
    srv = started(zonecast_factory())
    r = ask_socket(srv, b'{"command": "status", "command": "stop"}\n')
    assert r["ok"] is False and "duplicate" in r["error"], r
    for line in (b"garbage\n", b"[]\n", b"{}\n", b'{"command": 5}\n',
                 b'{"command": "nope"}\n'):
        r = ask_socket(srv, line)
        assert r["ok"] is False and r["error"], (line, r)
    time.sleep(0.3)
    assert srv.proc.poll() is None
    assert status_json(srv)["pid"] == srv.proc.pid


def test_requests_hold_only_their_commands_members(zonecast_factory):
    """The control socket took members a command does not have, members
    of another type (read as absent: {"command": "token-create", "zone":
    5} made a token for every zone) and text after the JSON object; each
    is refused now, naming the member, and nothing is written."""
    srv = started(zonecast_factory())
    before = cli(srv, "token", "list").stdout
    cases = [
        (b'{"command": "token-create", "name": "t1", "zone": 5}\n', "zone"),
        (b'{"command": "token-create", "name": "t1", "zone": null}\n', "zone"),
        (b'{"command": "token-create", "name": "t1", "zonee": "x.test"}\n',
         "zonee"),
        (b'{"command": "token-create", "name": "t1", "read_only": "yes"}\n',
         "read_only"),
        (b'{"command": "token-create", "name": "t1", "expires_on": -5}\n',
         "expires_on"),
        (b'{"command": "secondaries-set", "zone": "x", "notify": [1]}\n',
         "notify"),
        (b'{"command": "status", "verbose": true}\n', "verbose"),
        (b'{"command": "stop", "now": 1}\n', "now"),
        (b'{"command": "status"} {"command": "stop"}\n', "one JSON object"),
        (b'{"command": "status"}\n{"command": "stop"}\n', "one JSON object"),
        (b'{"command": "status"}\x00{"command": "stop"}\n', "one JSON object"),
    ]
    for line, named in cases:
        r = ask_socket(srv, line)
        assert r["ok"] is False and named in r["error"], (line, r)
    time.sleep(0.3)
    assert srv.proc.poll() is None
    assert cli(srv, "token", "list").stdout == before
    # The requests the command sends still work.
    cli(srv, "token", "create", "--name", "t2", "--read-only")
    assert "t2" in cli(srv, "token", "list").stdout
    r = ask_socket(srv, b'{"command": "status"}\n')
    assert r["ok"] is True, r


def test_arguments_that_are_not_utf8(zonecast_factory):
    """An argument that is not UTF-8 text has no JSON string: jansson gave
    NULL and the member went missing unsaid. `token create --zone` with a
    raw 0xE9 made a read-write token for EVERY zone (an outside tester's);
    others ended with no message. A name's other octets now go as \\DDD
    (the same name), other text is refused with a message; with a server
    running and without."""
    srv = started(zonecast_factory())
    raw = os.fsdecode(b"typo\xe9.test")
    for running in (True, False):
        if not running:
            assert srv.stop() == []
        cp = cli(srv, "token", "create", "--zone", raw, check=False)
        assert cp.returncode == 1 and "no zone typo\\233.test" in cp.stderr, cp
        assert not cp.stdout
        listed = cli(srv, "token", "list").stdout
        assert " * " not in listed.split("\n", 1)[1], listed   # no token for every zone
        cp = cli(srv, "token", "create", "--name", os.fsdecode(b"n\xff"), check=False)
        assert cp.returncode == 2 and "not UTF-8 text" in cp.stderr, cp
        cp = cli(srv, "token", "revoke", os.fsdecode(b"n\xff"), check=False)
        assert cp.returncode == 2 and "not UTF-8 text" in cp.stderr, cp
        cp = cli(srv, "tsig", "create", "k" + str(running), "--zone", raw, check=False)
        assert cp.returncode == 1 and "no zone" in cp.stderr, cp
        cp = cli(srv, "secondaries", raw, "--notify", "192.0.2.1", check=False)
        assert cp.returncode == 1 and "no zone" in cp.stderr, cp
    # a zone whose name has such an octet is named by it, raw or as \DDD
    srv.serve()
    started(srv)
    zone = os.fsdecode(b"\xe9x.test")
    zfile = os.path.join(srv.workdir, "raw.zone")
    with open(zfile, "w") as f:
        f.write("@ 300 IN SOA ns1 h 1 2 3 4 5\n@ 300 IN NS ns1\nns1 300 IN A 192.0.2.1\n")
    cli(srv, "zone", "import", zone, zfile)
    secret = cli(srv, "token", "create", "--zone", zone).stdout.strip()
    assert secret.startswith("zc_")
    zones = [l.split()[3] for l in cli(srv, "token", "list").stdout.splitlines()[1:]]
    assert zones.count("\\233x.test.") == 1, zones
    # a backslash before the raw octet escapes it: the same name, not a
    # backslash then "233" (another zone, which exists here as a decoy)
    decoy = os.path.join(srv.workdir, "decoy.zone")
    with open(decoy, "w") as f:
        f.write("@ 300 IN SOA ns1 h 1 2 3 4 5\n@ 300 IN NS ns1\nns1 300 IN A 192.0.2.1\n")
    cli(srv, "zone", "import", "\\\\233x.test", decoy)
    cli(srv, "token", "create", "--zone", os.fsdecode(b"\\\xe9x.test"))
    zones = [l.split()[3] for l in cli(srv, "token", "list").stdout.splitlines()[1:]]
    assert zones.count("\\233x.test.") == 2 and "\\\\233x.test." not in zones, zones
    cli(srv, "secondaries", zone, "--allow-transfer", "192.0.2.7")
    assert "192.0.2.7" in cli(srv, "secondaries", "\\233x.test").stdout


def test_concurrent_writes_of_the_command_wait_their_turn(zonecast_factory):
    """The server runs 8 writes of the command at once; the 9th and later
    were refused ("too many writes at once: try again"), where a writing
    command waits its turn (40 concurrent token creates: 24 failed). The
    command now waits and asks again."""
    srv = started(zonecast_factory())
    before = len(cli(srv, "token", "list").stdout.splitlines())
    procs = [subprocess.Popen([servers.zonecast_bin(), "token", "create", "--data-dir",
                               srv.data_dir, "--name", "c%d" % i],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(30)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 30, [o[1] for o in outs if o[1]]
    assert all(o[0].strip().startswith("zc_") for o in outs)
    assert len(cli(srv, "token", "list").stdout.splitlines()) == before + 30


def test_token_expiry_on_the_socket_is_checked(zonecast_factory):
    """The command refuses a past --expires; a request on the control
    socket made a token born expired (expires_on 1) or one expiring in the
    year 292278994. Refused, nothing made."""
    srv = started(zonecast_factory())
    before = cli(srv, "token", "list").stdout
    for value in (1, int(time.time() * 1000) - 1000, 253402300800000, 9223372036854775807):
        line = b'{"command": "token-create", "name": "x", "expires_on": %d}\n' % value
        r = ask_socket(srv, line)
        assert r["ok"] is False, (value, r)
    assert cli(srv, "token", "list").stdout == before
    r = ask_socket(srv, b'{"command": "token-create", "name": "ok1", "expires_on": %d}\n'
                   % int((time.time() + 3600) * 1000))
    assert r["ok"] is True, r
