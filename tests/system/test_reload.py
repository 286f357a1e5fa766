"""Reload (issue 14: SIGHUP and `zonecast reload`; docs/operations.md).

A reload reads the config file (and serve's flags) again and applies every
key that can change live, without closing a listener: no query is lost
while the server reloads again and again under load (dnsperf, and a Python
client that asks one query at a time and counts those left unanswered).
Live keys take effect at once (NSID, allow-update, tsig-max-fudge, RRL,
the log); keys that need a restart are named in the log and keep their
running value; a config that does not parse or does not check out is
refused with the old one kept, and the server goes on as before. SIGHUP
also reopens the log files (logrotate).
"""

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

import dns.edns
import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import servers
from servers import tsig_sign, exchange_from

WAIT = 10.0 * servers.TIMEOUT_SCALE
NSID = 3


def write_config(path, **keys):
    """A config file with one `key: value` line per keyword (underscores
    become dashes; a list repeats the key)."""
    lines = ["server:"]
    for key, value in keys.items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            lines.append("    %s: %s" % (key.replace("_", "-"), v))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(0.02)


def reload_cli(srv, check=True):
    return srv.run_cli("reload", "--data-dir", srv.data_dir, check=check)


def sighup_and_wait(srv):
    """SIGHUP, then wait for the reload's outcome in the log."""
    before = srv.log().count("reload")
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: srv.log().count("reload") > before + 1, "the SIGHUP reload in the log")


def nsid_of(srv):
    q = servers.make_query("www.example.com.", "A",
                           options=[dns.edns.GenericOption(NSID, b"")])
    r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)
    for opt in r.options:
        if opt.otype == NSID:
            return opt.to_wire().decode()
    return None


def unsigned_update(srv, name, source="127.0.0.1"):
    u = dns.update.UpdateMessage("example.net.")
    u.add(name, 300, "A", "192.0.2.77")
    return dns.query.tcp(u, "127.0.0.1", port=srv.port, timeout=5, source=source).rcode()


@pytest.fixture
def conf(tmp_path):
    return str(tmp_path / "zonecast.conf")


@pytest.fixture
def srv(zonecast_factory, conf):
    write_config(conf, nsid="first")
    return zonecast_factory(config=conf, nsid=None)


class QueryLoop(threading.Thread):
    """Asks www.example.com. A over UDP, one query at a time, each with a
    fresh id, and counts the queries no answer came for within 2 s."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.sent, self.lost, self.wrong = port, 0, 0, 0
        self.stop_flag = threading.Event()

    def run(self):
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("127.0.0.1", self.port))
            s.settimeout(2.0)
            while not self.stop_flag.is_set():
                q = servers.make_query("www.example.com.", "A")
                s.send(q.to_wire())
                self.sent += 1
                try:
                    while True:
                        r = dns.message.from_wire(s.recv(65535))
                        if r.id == q.id:
                            break
                    if r.rcode() != dns.rcode.NOERROR or not r.answer:
                        self.wrong += 1
                except socket.timeout:
                    self.lost += 1


def test_no_query_lost_while_reloading(srv, conf, tmp_path):
    """dnsperf and a one-at-a-time client run while the server reloads 20
    times (SIGHUP and `zonecast reload`, alternately), each reload changing
    live settings (NSID, allow-update, TCP limits, log level): no query is
    lost, every answer is right, and the last NSID is the one served."""
    if shutil.which("dnsperf") is None:
        pytest.skip("dnsperf not installed")
    qfile = tmp_path / "queries"
    qfile.write_text("".join("%s A\n" % n for n in
                             ("www.example.com.", "mail.example.com.", "example.com.",
                              "ns1.example.com.", "nx.example.com.")))
    perf = subprocess.Popen(["dnsperf", "-s", "127.0.0.1", "-p", str(srv.port),
                             "-d", str(qfile), "-l", "8", "-c", "4", "-Q", "3000",
                             "-t", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    loop = QueryLoop(srv.port)
    loop.start()
    time.sleep(0.5)
    for i in range(20):
        write_config(conf, nsid="gen%d" % i,
                     allow_update="127.0.0.1" if i % 2 else "127.0.0.9",
                     tcp_max_clients=500 + i, log_level="info" if i % 2 else "debug")
        if i % 2:
            sighup_and_wait(srv)
        else:
            assert "reloaded" in reload_cli(srv).stdout
        time.sleep(0.2)
    out, _ = perf.communicate(timeout=60)
    loop.stop_flag.set()
    loop.join(10)
    lost = re.search(r"Queries lost:\s+(\d+)", out)
    completed = re.search(r"Queries completed:\s+(\d+)", out)
    assert lost and completed, out
    assert int(lost.group(1)) == 0, out
    assert int(completed.group(1)) > 1000, out
    assert loop.sent > 100 and loop.lost == 0 and loop.wrong == 0, vars(loop)
    assert nsid_of(srv) == "gen19"
    assert srv.log().count("reloaded: applied") == 20


def test_live_keys_apply(srv, conf):
    """allow-update and NSID change with a reload: an UPDATE refused before
    is accepted after, and refused again after the next reload."""
    assert nsid_of(srv) == "first"
    assert unsigned_update(srv, "r1.example.net.") == dns.rcode.REFUSED
    write_config(conf, nsid="second", allow_update="127.0.0.1")
    out = reload_cli(srv).stdout
    assert "applied nsid, allow-update" in out, out
    assert nsid_of(srv) == "second"
    assert unsigned_update(srv, "r2.example.net.") == dns.rcode.NOERROR
    write_config(conf, nsid="second")
    reload_cli(srv)
    assert unsigned_update(srv, "r3.example.net.") == dns.rcode.REFUSED


def test_restart_keys_named(srv, conf):
    """Keys that need a restart (transfer-max-concurrent, signature-cache)
    are named in the answer and the log, with the live ones applied."""
    write_config(conf, nsid="changed", transfer_max_concurrent=3,
                 signature_cache=1000)
    out = reload_cli(srv).stdout
    assert "applied nsid" in out, out
    assert "needs a restart (running value kept): transfer-max-concurrent, " \
           "signature-cache" in out, out
    assert "applied only at the next start: transfer-max-concurrent, " \
           "signature-cache" in srv.log()
    assert nsid_of(srv) == "changed"


def test_invalid_config_refused(srv, conf):
    """A config with an unknown key, one with a bad value and one that
    parses but cannot work (a log file in a missing directory, a missing
    user) are each refused: `zonecast reload` exits 1 naming the problem,
    SIGHUP logs it, and the old settings stay in force."""
    write_config(conf, nsid="kept", allow_update="127.0.0.1")
    reload_cli(srv)
    bad = [
        ("nsid: x\n    no-such-key: 1", "unknown setting 'no-such-key'"),
        ("nsid: x\n    tcp-max-clients: many", "invalid value 'many' for 'tcp-max-clients'"),
        ("nsid: x\n    log-target: /nonexistent/dir/zonecast.log", "no directory /nonexistent/dir"),
        ("nsid: x\n    user: no-such-user-here", "no user 'no-such-user-here'"),
    ]
    for text, why in bad:
        with open(conf, "w") as f:
            f.write("server:\n    " + text + "\n")
        cp = reload_cli(srv, check=False)
        assert cp.returncode == 1, (cp.stdout, cp.stderr)
        assert "reload refused" in cp.stderr and why in cp.stderr, cp.stderr
        assert nsid_of(srv) == "kept"
        assert unsigned_update(srv, "kept.example.net.") == dns.rcode.NOERROR
    # SIGHUP with a broken file: refused in the log, the server runs on.
    with open(conf, "w") as f:
        f.write("server:\n    nsid: x\n    no-such-key: 1\n")
    before = srv.log().count("reload refused")
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: srv.log().count("reload refused") > before, "the refusal in the log")
    assert srv.proc.poll() is None
    assert nsid_of(srv) == "kept"
    status = srv.run_cli("status", "--data-dir", srv.data_dir, "--json").stdout
    assert '"ok": false' in status and "no-such-key" in status


def test_tsig_max_fudge_live(zonecast_factory, conf):
    """tsig-max-fudge changes live: an UPDATE signed 100 s ago is accepted
    under the default window (300 s), refused with BADTIME once a reload
    sets 30 s; after the next, one signed 80 s ago is accepted again, and
    one signed 100 s ago is not: the replay cache may have forgotten what
    it took under 30 s (and its 60 s of grace), and a captured message
    replayed would pass the wider window (outside tester 43)."""
    write_config(conf, nsid="f")
    srv = zonecast_factory(config=conf, nsid=None, api=True)
    key = srv.tsig_create("fudge.key.", "example.net.")

    def signed_update(name, ago=100):
        u = dns.update.UpdateMessage("example.net.")
        u.add(name, 300, "A", "192.0.2.5")
        wire, _ = tsig_sign(u.to_wire(), key.key, time_signed=int(time.time()) - ago)
        resp = exchange_from("127.0.0.1", srv.port, wire, tcp=True)
        return resp[3] & 0x0f if resp else None

    assert signed_update("f1.example.net.") == dns.rcode.NOERROR
    write_config(conf, nsid="f", tsig_max_fudge=30)
    reload_cli(srv)
    assert signed_update("f2.example.net.") == dns.rcode.NOTAUTH
    assert "tsig_error=BADTIME" in srv.log()
    write_config(conf, nsid="f")
    reload_cli(srv)
    assert signed_update("f3.example.net.", ago=80) == dns.rcode.NOERROR
    assert signed_update("f4.example.net.", ago=100) == dns.rcode.NOTAUTH


def test_a_message_taken_under_a_narrow_window_stays_a_replay_once_it_widens(
        zonecast_factory, conf):
    """Found by outside testers: tsig-max-fudge 5; an UPDATE (fudge 300,
    as nsupdate signs) is taken, and a second deletes what it added; a
    reload raises tsig-max-fudge to 300; the first, captured and sent
    again once its 5 s had passed, passed the wider window and was taken
    as fresh: the record came back. It stays a replay (BADTIME)."""
    write_config(conf, nsid="w", tsig_max_fudge=5)
    srv = zonecast_factory(config=conf, nsid=None, api=True)
    key = srv.tsig_create("widen.key.", "example.net.")

    def signed(build):
        u = dns.update.UpdateMessage("example.net.")
        build(u)
        return tsig_sign(u.to_wire(), key.key, fudge=300)[0]

    add = signed(lambda u: u.add("victim.example.net.", 300, "A", "192.0.2.66"))
    t0 = time.monotonic()
    for wire in (add, signed(lambda u: u.delete("victim.example.net.", "A"))):
        resp = exchange_from("127.0.0.1", srv.port, wire, tcp=True)
        assert resp is not None and resp[3] & 0x0f == dns.rcode.NOERROR
    write_config(conf, nsid="w", tsig_max_fudge=300)
    reload_cli(srv)
    time.sleep(max(0.0, 7 - (time.monotonic() - t0)))   # past the 5 s window
    for tcp in (False, True):
        resp = exchange_from("127.0.0.1", srv.port, add, tcp=tcp)
        assert resp is not None and resp[3] & 0x0f == dns.rcode.NOTAUTH, resp
    r = srv.query("victim.example.net.", "A")
    assert r.rcode() == dns.rcode.NXDOMAIN and not r.answer, r


def test_rrl_turned_on_and_off_live(zonecast_factory, conf):
    """Response rate limiting starts with a reload (rrl-rate 0 -> 5) and
    stops with the next: a burst of 100 queries is cut, then all answered."""
    write_config(conf, rrl_rate=0)
    srv = zonecast_factory(config=conf, nsid=None, options=["rrl-slip=0"])
    names = ["www.example.com."] * 100

    def answered():
        import socket
        got = 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("127.0.0.1", srv.port))
            s.settimeout(0.3)
            for n in names:
                s.send(servers.make_query(n, "A").to_wire())
            try:
                while True:
                    s.recv(65535)
                    got += 1
            except socket.timeout:
                pass
        return got

    assert answered() == 100
    write_config(conf, rrl_rate=5)
    reload_cli(srv)
    assert answered() <= 10
    write_config(conf, rrl_rate=0)
    reload_cli(srv)
    assert answered() == 100


def test_sighup_reopens_log_file(zonecast_factory, conf, tmp_path):
    """With a log file target, a logrotate-style move and SIGHUP: the old
    file keeps what came before, a new file at the path gets what comes
    after."""
    log = tmp_path / "zonecast.log"
    write_config(conf, log_target=str(log))
    srv = zonecast_factory(config=conf, nsid=None)
    wait_for(lambda: log.exists() and "serving" in log.read_text(), "the log file")
    rotated = tmp_path / "zonecast.log.1"
    os.rename(log, rotated)
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: log.exists() and "reloaded" in log.read_text(), "a new log file")
    assert "serving" in rotated.read_text()
    assert "serving" not in log.read_text()
    srv.run_cli("reload", "--data-dir", srv.data_dir)
    assert "control: reload asked for" in log.read_text()



def test_refused_reload_reopens_log_file(zonecast_factory, conf, tmp_path):
    """logrotate moves the file and sends SIGHUP while the config has a
    mistake: the reload is refused, and the file is reopened all the same
    (with the targets in force). Every later line went to the moved file."""
    log = tmp_path / "zonecast.log"
    write_config(conf, log_target=str(log), nsid="kept")
    srv = zonecast_factory(config=conf, nsid=None)
    wait_for(lambda: log.exists() and "serving" in log.read_text(), "the log file")
    with open(conf, "a") as f:
        f.write("    typo-key: 1\n")
    rotated = tmp_path / "zonecast.log.1"
    os.rename(log, rotated)
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: log.exists() and "reload refused" in log.read_text(), "a new log file")
    assert "reload refused" not in rotated.read_text()
    cp = reload_cli(srv, check=False)    # `zonecast reload` too
    assert cp.returncode == 1
    os.rename(log, rotated)
    cp = reload_cli(srv, check=False)
    assert cp.returncode == 1
    wait_for(lambda: log.exists() and "reload refused" in log.read_text(), "another new file")
    assert nsid_of(srv) == "kept"


def vm_size_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def test_restart_key_not_allocated_at_reload(zonecast_factory, conf):
    """A bigger rrl-table-size needs a restart, and the reload said so; but
    a reload that also turned RRL on built the table at the new size (+590
    MB with 67108864): the stages are given the running value."""
    write_config(conf, rrl_rate=0)
    srv = zonecast_factory(config=conf, nsid=None, options=["rrl-slip=2"])
    before = vm_size_kb(srv.proc.pid)
    write_config(conf, rrl_rate=100, rrl_table_size=67108864)
    out = reload_cli(srv).stdout
    assert "needs a restart (running value kept): rrl-table-size" in out, out
    grown = vm_size_kb(srv.proc.pid) - before
    assert grown < 100 * 1024, "VmSize grew by %d kB" % grown


def test_notify_list_and_limits_live(zonecast_factory, conf):
    """A notify target added by a reload gets a NOTIFY for every zone (a
    new sender, as at start); update-max-size lowered by a reload refuses
    a larger UPDATE at once, with an audit line saying why."""
    import socket
    resp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    resp.bind(("127.0.0.1", 0))
    resp.settimeout(0.5)
    write_config(conf, nsid="n", allow_update="127.0.0.1")
    srv = zonecast_factory(config=conf, nsid=None)
    try:
        write_config(conf, nsid="n", allow_update="127.0.0.1",
                     notify="127.0.0.1:%d" % resp.getsockname()[1],
                     update_max_size=200)
        out = reload_cli(srv).stdout
        assert "notify" in out and "update-max-size" in out, out
        seen = set()
        deadline = time.monotonic() + WAIT
        while len(seen) < 3 and time.monotonic() < deadline:
            try:
                wire, addr = resp.recvfrom(65535)
            except socket.timeout:
                continue
            q = dns.message.from_wire(wire)
            seen.add(q.question[0].name.to_text())
            r = dns.message.make_response(q)
            resp.sendto(r.to_wire(), addr)
        assert seen == {"example.com.", "sub.example.com.", "example.net."}, seen
        u = dns.update.UpdateMessage("example.net.")
        for i in range(10):
            u.add("big%d.example.net." % i, 300, "TXT", "x" * 40)
        assert len(u.to_wire()) > 200
        assert dns.query.tcp(u, "127.0.0.1", port=srv.port, timeout=5).rcode() == \
            dns.rcode.REFUSED
        assert "reason=\"larger than update-max-size\"" in srv.log()
        assert unsigned_update(srv, "small.example.net.") == dns.rcode.NOERROR
    finally:
        resp.close()


def test_journal_retention_reaches_the_signed_journal(zonecast_factory, conf):
    """A signed zone's IXFR journal (signed.db) keeps to journal-retention
    as the change log does: trimmed every retention seconds when that is
    under a minute, and a reload's value applies to it (it was trimmed
    hourly, with the retention of the start: outside tester 33)."""
    write_config(conf, nsid="j")
    srv = zonecast_factory(config=conf, nsid=None, api=True)
    api = srv.client()
    zid = api.ok("POST", "/zones", json={"name": "trim-signed.test"})["result"]["id"]
    srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "trim-signed.test")
    path = "/zones/%s/dns_records" % zid
    db = os.path.join(srv.data_dir, "signed.db")

    def journal_ages():
        """(entries, age in s of the oldest) of the zone's signed journal."""
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        try:
            n, oldest = con.execute("SELECT count(*), min(at) FROM vjournal").fetchone()
        finally:
            con.close()
        return n, (time.time() * 1000 - oldest) / 1000 if oldest else 0

    # versions the view journals (several writes may make one of its
    # versions: it follows the builder's passes)
    for i in range(10):
        api.ok("POST", path + "?wait=live", json={"type": "A", "name": "t%d" % i,
                                                  "content": "192.0.2.%d" % (i + 1)})
        time.sleep(0.2)
    wait_for(lambda: journal_ages()[0] >= 2, "the signed journal's entries",
             timeout=30 * servers.TIMEOUT_SCALE)
    time.sleep(7)   # the oldest entry is past 2 + 2 + 1 s
    assert journal_ages()[1] > 2 + 2 + 1
    write_config(conf, nsid="j", journal_retention=2)
    reload_cli(srv)
    api.ok("POST", path + "?wait=live", json={"type": "A", "name": "late", "content": "192.0.2.99"})
    # within the retention plus its trim interval (2 + 2 s), and the view's
    # tick (5 s): the old entries trimmed
    wait_for(lambda: journal_ages()[1] < 2 + 2 + 1,
             "the signed journal trimmed to a 2 s retention", timeout=20 * servers.TIMEOUT_SCALE)


def sig_blocked(pid, sig):
    """Whether the process blocks sig (/proc/PID/status SigBlk)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except OSError:
        pass
    return False


def test_a_sighup_right_after_the_start_does_not_kill(tmp_path):
    """`zonecast serve` blocks SIGHUP (and SIGTERM, SIGINT) before it reads
    anything (here: before it opens its log file), so that a reload or
    logrotate right after a start is held for its loop: a SIGHUP in its
    first 20-40 ms killed it, with not a line logged (outside tester 37).
    What comes before main() (the dynamic loader, about 10 ms) no program
    can guard; the pidfile is written only once serve runs its loop."""
    for run in range(3):
        data, logfile = tmp_path / ("data%d" % run), tmp_path / ("serve%d.log" % run)
        port = servers.free_port()
        p = subprocess.Popen([servers.zonecast_bin(), "serve", "--data-dir", str(data),
                              "--listen", "127.0.0.1:%d" % port, "--api-listen", "none",
                              "--no-demo", "-o", "log-target=%s" % logfile],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not logfile.exists() and p.poll() is None:
                pass
            assert sig_blocked(p.pid, signal.SIGHUP), "its log opened with SIGHUP not blocked"
            for _ in range(5):
                os.kill(p.pid, signal.SIGHUP)
                time.sleep(0.003)
            q = dns.message.make_query("nothing.test.", "SOA")

            def answered():
                try:
                    return dns.query.udp(q, "127.0.0.1", port=port, timeout=1) is not None
                except (dns.exception.Timeout, OSError):
                    return False   # not answering yet (a loaded CI machine, ASan)
            wait_for(lambda: p.poll() is not None or answered(), "an answer")
            assert p.poll() is None, "serve died: %s\n%s" % (p.returncode, logfile.read_text())
            wait_for(lambda: "SIGHUP: reloading" in logfile.read_text(), "the SIGHUP's reload")
        finally:
            p.terminate()
            assert p.wait(timeout=10 * servers.TIMEOUT_SCALE) == 0


def test_a_stop_does_not_wait_for_a_signing_pass(zonecast_factory, tmp_path):
    """SIGTERM while the signed view's first full pass of a large zone runs:
    the pass is given up (rolled back, done again at the next start) and
    the server stops at once; it waited for the whole pass (25 s for
    400,000 signatures: outside tester 37). The next start signs it."""
    path = tmp_path / "big-signed.zone"
    with open(path, "w") as f:
        f.write("$ORIGIN big-signed.test.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n"
                "@ NS ns1\nns1 A 192.0.2.1\n")
        for i in range(40000):
            f.write("n%05d A 192.0.2.%d\n" % (i, i % 250 + 1))
    srv = zonecast_factory()
    # a signed zone the view lists after the big one: the stop must leave
    # its view as it is (it was dropped, as if deleted: tester 38)
    small = tmp_path / "zz-after.zone"
    small.write_text("$ORIGIN zz-after.test.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n"
                     "@ NS ns1\nns1 A 192.0.2.1\n")
    srv.import_zone("zz-after.test", str(small))
    srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "zz-after.test")
    wait_for(lambda: re.search(r"zz-after\.test\. serial \d+ -> \d+ \(full pass\)", srv.log()),
             "the small zone's view", timeout=30 * servers.TIMEOUT_SCALE)

    def views():
        con = sqlite3.connect("file:%s?mode=ro" % os.path.join(srv.data_dir, "signed.db"),
                              uri=True, timeout=5)
        try:
            return {bytes(a) for (a,) in con.execute("SELECT apex FROM vzones")}
        finally:
            con.close()

    assert b"\x08zz-after\x04test\x00" in views()
    srv.import_zone("big-signed.test", str(path))
    srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "big-signed.test")
    wait_for(lambda: "big-signed.test.: full pass to serial" in srv.log(),
             "the view's full pass", timeout=30 * servers.TIMEOUT_SCALE)
    time.sleep(0.3)
    start = time.monotonic()
    problems = srv.stop(timeout=60 * servers.TIMEOUT_SCALE)
    took = time.monotonic() - start
    assert not problems, problems
    log = srv.log()
    assert "big-signed.test.: its pass given up for the stop" in log, log[-3000:]
    assert took < 5 * servers.TIMEOUT_SCALE, "the stop took %.1f s" % took
    assert b"\x08zz-after\x04test\x00" in views(), "the small zone's view went"
    # the next start does the pass again, whole
    srv.serve()
    q = dns.message.make_query("n00007.big-signed.test.", "A", want_dnssec=True)
    wait_for(lambda: "full pass" in srv.log()[len(log):], "the pass done again",
             timeout=120 * servers.TIMEOUT_SCALE)
    r = dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=5)
    assert any(rr.rdtype == dns.rdatatype.RRSIG for rr in r.answer), r
    assert "zz-after.test. serial 0 ->" not in srv.log()[len(log):], "signed again from 0"
