"""DNS Cookies (RFC 7873, server cookies of RFC 9018).

With dig (BIND's client, which checks cookies itself) and dnspython: the
client cookie comes back with a 16-byte version-1 server cookie; a server
cookie we made is accepted (seen from outside through RRL, which it
bypasses), also by another instance sharing `cookie-secret`; malformed
COOKIE options get FORMERR; unknown server cookies get a normal answer and
a new cookie (cookies are never required); `cookies: no` turns them off;
the secret is never logged.
"""

import os
import struct
import subprocess
import time

import dns.edns
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rrset
import pytest

EC = "www.example.com."
SECRET = "00112233445566778899aabbccddeeff"

# Cookie parsing and making is new code on the query path: memcheck it too.
pytestmark = pytest.mark.valgrind


def ask(srv, cookie, tcp=False, name=EC):
    q = dns.message.make_query(name, "A", use_edns=0,
                               options=[dns.edns.GenericOption(10, cookie)])
    if tcp:
        return dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=2)
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)


def cookie_of(r):
    found = [o.data for o in r.options if o.otype == 10]
    return found[0] if found else None


def test_dig_sees_a_good_server_cookie(zonecast):
    out = subprocess.run(["dig", "@127.0.0.1", "-p", str(zonecast.port), EC, "A",
                          "+cookie"], capture_output=True, text=True, timeout=10).stdout
    assert "status: NOERROR" in out
    line = [l for l in out.splitlines() if "COOKIE:" in l]
    assert line and line[0].rstrip().endswith("(good)"), out
    # 8 bytes of client cookie, 16 of server cookie: 48 hex digits.
    assert len(line[0].split()[2]) == 48


@pytest.mark.parametrize("tcp", [False, True])
def test_client_cookie_gets_server_cookie(zonecast, tcp):
    cc = os.urandom(8)
    r = ask(zonecast, cc, tcp=tcp)
    assert r.rcode() == dns.rcode.NOERROR and r.answer
    c = cookie_of(r)
    assert c is not None and len(c) == 24 and c[:8] == cc
    version, _reserved, stamp = struct.unpack("!B3sI", c[8:16])
    assert version == 1
    assert abs(stamp - time.time()) < 60
    # Echoed back: still answered, with a (fresh) cookie for the same client.
    r2 = ask(zonecast, c, tcp=tcp)
    assert r2.rcode() == dns.rcode.NOERROR and cookie_of(r2)[:8] == cc


@pytest.mark.parametrize("length", [1, 7, 9, 15, 41])
def test_malformed_cookie_formerr(zonecast, length):
    r = ask(zonecast, os.urandom(length))
    assert r.rcode() == dns.rcode.FORMERR
    assert cookie_of(r) is None
    assert zonecast.query(EC, "A").answer  # Still serving.


def test_unknown_server_cookie_answered_normally(zonecast):
    cc = os.urandom(8)
    forged = cc + bytes([1, 0, 0, 0]) + struct.pack("!I", int(time.time())) + os.urandom(8)
    r = ask(zonecast, forged)
    assert r.rcode() == dns.rcode.NOERROR and r.answer
    assert cookie_of(r)[:8] == cc and cookie_of(r)[8:] != forged[8:]


def ask_no_question(srv, options, tcp=False):
    """A query with QDCOUNT 0 (RFC 7873 §5.4); the raw response."""
    q = dns.message.Message()
    q.use_edns(0, options=options)
    if tcp:
        return dns.query.tcp(q, "127.0.0.1", port=srv.port, timeout=2)
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)


@pytest.mark.parametrize("tcp", [False, True])
def test_querying_for_a_server_cookie_without_a_question(zonecast, tcp):
    """RFC 7873 §5.4: no question and a client cookie gets NOERROR with the
    server cookie, as BIND answers (it was FORMERR without OPT, outside
    tester 27); with our server cookie echoed, still NOERROR; a malformed
    cookie FORMERR; no cookie at all, FORMERR (RFC 9619)."""
    cc = os.urandom(8)
    r = ask_no_question(zonecast, [dns.edns.GenericOption(10, cc)], tcp=tcp)
    assert r.rcode() == dns.rcode.NOERROR and not r.question and not r.answer, r
    c = cookie_of(r)
    assert c is not None and len(c) == 24 and c[:8] == cc, c
    r = ask_no_question(zonecast, [dns.edns.GenericOption(10, c)], tcp=tcp)
    assert r.rcode() == dns.rcode.NOERROR and cookie_of(r)[:8] == cc
    r = ask_no_question(zonecast, [dns.edns.GenericOption(10, os.urandom(5))], tcp=tcp)
    assert r.rcode() == dns.rcode.FORMERR
    r = ask_no_question(zonecast, [], tcp=tcp)
    assert r.rcode() == dns.rcode.FORMERR and r.edns == 0, r  # with its OPT
    # records where a cookie query has none: FORMERR, as BIND and knotd
    q = dns.message.Message()
    q.use_edns(0, options=[dns.edns.GenericOption(10, cc)])
    q.answer.append(dns.rrset.from_text("x.", 60, "IN", "A", "192.0.2.1"))
    r = (dns.query.tcp if tcp else dns.query.udp)(q, "127.0.0.1", port=zonecast.port, timeout=2)
    assert r.rcode() == dns.rcode.FORMERR, r
    q = dns.message.Message()
    q.use_edns(0, options=[dns.edns.GenericOption(10, cc)])
    q.additional.append(dns.rrset.from_text("x.", 60, "IN", "A", "192.0.2.1"))
    r = (dns.query.tcp if tcp else dns.query.udp)(q, "127.0.0.1", port=zonecast.port, timeout=2)
    assert r.rcode() == dns.rcode.FORMERR, r
    assert zonecast.query(EC, "A").answer  # Still serving.


def test_cookies_off_no_question_is_formerr(zonecast_factory):
    srv = zonecast_factory(options=["cookies=no"])
    r = ask_no_question(srv, [dns.edns.GenericOption(10, os.urandom(8))])
    assert r.rcode() == dns.rcode.FORMERR and cookie_of(r) is None


def limited_answers(srv, cookie, n=30):
    """Full answers out of n with rrl-rate=1 and slip 1: a valid server
    cookie skips the limiter, any other gets TC=1 after the first."""
    full = 0
    for _ in range(n):
        full += not ask(srv, cookie).flags & dns.flags.TC
    return full


def test_shared_secret_cookies_valid_on_every_instance(zonecast_factory):
    opts = ["rrl-rate=1", "rrl-slip=1", "cookie-secret=" + SECRET]
    a = zonecast_factory(options=opts)
    b = zonecast_factory(options=opts)
    c = zonecast_factory(options=["rrl-rate=1", "rrl-slip=1",
                                  "cookie-secret=ffeeddccbbaa99887766554433221100"])
    cc = os.urandom(8)
    cookie = cookie_of(ask(a, cc))
    assert limited_answers(a, cookie) == 30
    assert limited_answers(b, cookie) == 30  # Same secret: an anycast peer.
    assert limited_answers(c, cookie) <= 1   # Other secret: not ours.
    for srv in (a, b, c):
        assert SECRET not in srv.log()


def test_cookies_off(zonecast_factory):
    srv = zonecast_factory(options=["cookies=no"])
    r = ask(srv, os.urandom(8))
    assert r.rcode() == dns.rcode.NOERROR and cookie_of(r) is None


def test_bad_secret_refused_and_not_echoed(tmp_path):
    import servers
    bad = "zz112233445566778899aabbccddeeff"
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", str(tmp_path),
                         "--listen", "127.0.0.1:%d" % servers.free_port(),
                         "--api-listen", "none", "--no-demo", "-o", "cookie-secret=" + bad],
                        capture_output=True, text=True, timeout=20)
    assert cp.returncode != 0
    assert "cookie-secret" in cp.stderr and bad not in cp.stderr

