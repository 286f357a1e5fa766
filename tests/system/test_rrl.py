"""Response rate limiting (UDP) under a spoofed-source flood.

The "victim" is 127.0.0.99: every loopback address is ours, so a socket
bound there stands for a spoofed source without raw sockets. The flood asks
for a large TXT RRset (an amplification factor of about 25 without RRL);
the bytes that reach the victim per byte the attacker sends must stay about
1 with RRL, while a client in another /24 keeps getting every answer and a
client in the victim's /24 gets truncated answers and succeeds over TCP.
Also: valid DNS cookies and rrl-exempt skip the limiter; bad settings are
refused at start.
"""

import os
import socket
import subprocess
import threading
import time

import dns.edns
import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import pytest

import servers

ZONE = "amp.test."
VICTIM = "127.0.0.99"


def amp_zone(tmp_path):
    lines = ["$TTL 300",
             "@ SOA ns hostmaster 1 7200 900 1209600 60",
             "@ NS ns", "ns A 192.0.2.1", "www A 192.0.2.80"]
    lines += ['big TXT "%02d-%s"' % (i, "x" * 96) for i in range(10)]
    path = tmp_path / "amp.test.zone"
    path.write_text("\n".join(lines) + "\n")
    return {ZONE: str(path)}


def flood(port, name, count, source=VICTIM, rdtype="TXT"):
    """Send count queries from source as fast as possible; return
    (bytes sent, bytes received, responses, truncated responses)."""
    wire = dns.message.make_query(name, rdtype, use_edns=0, payload=1232).to_wire()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((source, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setblocking(False)
    got = [0, 0, 0]

    def drain():
        try:
            while True:
                d = s.recv(65535)
                got[0] += len(d)
                got[1] += 1
                got[2] += bool(d[2] & 0x02)
        except BlockingIOError:
            pass

    for i in range(count):
        try:
            s.sendto(wire, ("127.0.0.1", port))
        except BlockingIOError:
            time.sleep(0.001)
        if i % 64 == 0:
            drain()
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        drain()
        time.sleep(0.02)
    s.close()
    return count * len(wire), got[0], got[1], got[2]


@pytest.fixture
def amp_server(zonecast_factory, tmp_path):
    def start(*options):
        return zonecast_factory(zones=amp_zone(tmp_path), options=list(options))
    return start


def test_flood_is_not_amplified(amp_server):
    # Default limits (200/s per bucket, slip 2): the rrl- key only tells the
    # harness to leave RRL on.
    srv = amp_server("rrl-slip=2")
    sent, received, answers, truncated = flood(srv.port, "big." + ZONE, 6000)
    ratio = received / sent
    assert answers > 0
    assert truncated > 0, "over the rate, every 2nd answer slips as TC=1"
    # Full answers are about 25x the query; within one second of flood at
    # most a burst of 200 of them goes out, the rest are drops and slips.
    assert ratio < 2.0, "bytes out per byte in: %.2f (%d answers, %d TC)" % (
        ratio, answers, truncated)
    assert "rrl: limiting responses to 127.0.0.0/24" in srv.log()


def test_flood_without_rrl_is_amplified(amp_server):
    """The measurement above means something: without RRL the same flood
    comes back about 25 times larger."""
    srv = amp_server("rrl-rate=0")
    sent, received, answers, _ = flood(srv.port, "big." + ZONE, 3000)
    assert received / sent > 10, (sent, received, answers)


def test_legitimate_clients_answered_during_flood(amp_server):
    srv = amp_server("rrl-slip=2")
    stop = threading.Event()

    def attacker():
        while not stop.is_set():
            flood(srv.port, "big." + ZONE, 2000)

    t = threading.Thread(target=attacker, daemon=True)
    t.start()
    try:
        time.sleep(0.3)
        # Another /24: its own buckets, every answer whole.
        for i in range(50):
            q = dns.message.make_query("big." + ZONE, "TXT", use_edns=0, payload=1232)
            r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2, source="127.0.1.1")
            assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.TC
            assert len(r.answer[0]) == 10
        # The victim's own /24: limited, but a truncated answer sends a
        # real client to TCP, where there is no limit.
        ok = 0
        for i in range(20):
            q = dns.message.make_query("big." + ZONE, "TXT", use_edns=0, payload=1232)
            try:
                r, _ = dns.query.udp_with_fallback(q, "127.0.0.1", port=srv.port,
                                                   timeout=0.5, source="127.0.0.98")
                ok += len(r.answer) == 1 and len(r.answer[0]) == 10
            except dns.exception.Timeout:
                pass  # Dropped (no slip for this one): a client retries.
        assert ok >= 5, "only %d of 20 victim-prefix queries answered" % ok
    finally:
        stop.set()
        t.join()
    assert srv.query("www." + ZONE, "A").answer


def test_valid_cookie_is_not_limited(amp_server):
    srv = amp_server("rrl-rate=1", "rrl-slip=1")
    cc = os.urandom(8)
    q = dns.message.make_query("big." + ZONE, "TXT", use_edns=0, payload=1232,
                               options=[dns.edns.GenericOption(10, cc)])
    r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)
    cookie = [o for o in r.options if o.otype == 10][0].data
    assert cookie[:8] == cc and len(cookie) == 24
    full = 0
    for i in range(100):
        q = dns.message.make_query("big." + ZONE, "TXT", use_edns=0, payload=1232,
                                   options=[dns.edns.GenericOption(10, cookie)])
        r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)
        full += not r.flags & dns.flags.TC and len(r.answer) == 1
    assert full == 100
    # Without the server cookie the same client is limited at once (rate 1,
    # every limited answer slipped).
    tc = 0
    for i in range(20):
        q = dns.message.make_query("big." + ZONE, "TXT", use_edns=0, payload=1232)
        r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)
        tc += bool(r.flags & dns.flags.TC)
    assert tc >= 19


def test_exempt_prefix_is_not_limited(amp_server):
    srv = amp_server("rrl-rate=1", "rrl-slip=1", "rrl-exempt=127.0.0.0/24")
    sent, received, answers, truncated = flood(srv.port, "big." + ZONE, 500,
                                               source="127.0.0.7")
    assert truncated == 0 and answers >= 450, (answers, truncated)
    # Another prefix is limited.
    _, _, answers, truncated = flood(srv.port, "big." + ZONE, 200, source="127.0.2.7")
    assert truncated >= 150, (answers, truncated)


@pytest.mark.parametrize("option", ["rrl-ipv4-prefix=33", "rrl-ipv6-prefix=129",
                                    "rrl-rate=-1", "rrl-exempt=not-an-address",
                                    "rrl-slip=x"])
def test_bad_settings_refused(tmp_path, option):
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", str(tmp_path),
                         "--listen", "127.0.0.1:%d" % servers.free_port(),
                         "--api-listen", "none", "--no-demo", "-o", option],
                        capture_output=True, text=True, timeout=20)
    assert cp.returncode != 0
    key = option.split("=")[0]
    assert "'%s'" % key in cp.stderr, cp.stderr
