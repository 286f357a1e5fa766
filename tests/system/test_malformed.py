"""Malformed input, hostile clients and limits, in one file (issue 6).

Each case sends bad input with a raw socket (or a real client where one
writes it) and asserts the documented answer: FORMERR and what it echoes,
REFUSED, NOTIMP, NOTAUTH with the TSIG error, a dropped message, an HTTP
4xx whose JSON message names the field, or a closed connection; then
`assert_alive()` checks that the server still answers a normal query (and
the API a normal request). Where the documentation says nothing, the
expectation is what knotd 3.2 does (the reference of test_differential.py;
the explore notes are in the case comments), or BIND where Knot has no
such feature.

Where the documented behaviour is in docs/: FORMERR/NOTIMP/REFUSED and the
differences from Knot in docs/differences.md and docs/security.md; UPDATE
and TSIG in docs/dynamic-updates.md; the API envelope and limits in
docs/api.md; the limits' keys in docs/configuration.md.
"""

import os
import random
import socket
import struct
import subprocess
import time

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.tsig
import pytest

import servers
from conftest import UPDATE_SOURCE
from servers import (exchange_from, make_query, rr_wire, split_tsig, tsig_mac_valid, tsig_sign,
                     update_wire)

BADSIG, BADKEY, BADTIME, BADTRUNC = 16, 17, 18, 22
QUIET = 0.4             # how long "no answer" is waited for over UDP
UPDATE_MAX = 2048       # update-max-size of the module's server
API_MAX_BODY = 65536    # api-max-body of the module's server
ZONE = "example.net."   # a default zone the UPDATE cases may touch (they change nothing)


# ------------------------------------------------------------------ fixtures and helpers

@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    """zonecast with its API, unsigned UPDATEs from 127.0.0.2, small limits."""
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast binary not found at %s" % servers.zonecast_bin())
    d = str(tmp_path_factory.mktemp("malformed"))
    s = servers.ZonecastServer(d, api=True, options=[
        ("allow-update", UPDATE_SOURCE), ("update-max-size", str(UPDATE_MAX)),
        ("api-max-body", str(API_MAX_BODY)), ("api-timeout", "2"),
        ("tcp-idle-timeout", "2")])
    s.start()
    yield s
    problems = s.stop()
    assert not problems, "%s\n%s" % (problems, s.log()[-4000:])


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def alive(s):
    """The server answers a normal query over UDP and TCP (and its API)."""
    for tcp in (False, True):
        m = s.query("www.example.com.", "A", tcp=tcp, timeout=3)
        assert m.rcode() == dns.rcode.NOERROR and m.flags & dns.flags.AA, m.to_text()
        assert [rd.address for rrset in m.answer for rd in rrset] == ["192.0.2.80"], m.to_text()
    if s.api_port:
        import requests
        r = requests.get(s.api_url + "/zones", timeout=5,
                         headers={"Authorization": "Bearer " + _token(s)})
        assert r.status_code == 200 and r.json()["success"], r.text


_tokens = {}


def _token(s):
    if s.data_dir not in _tokens:
        _tokens[s.data_dir] = s.create_token()
    return _tokens[s.data_dir]


@pytest.fixture
def assert_alive(srv):
    return lambda: alive(srv)


def hdr(ident=0x1234, flags=0x0100, qd=1, an=0, ns=0, ar=0):
    """A header; flags 0x0100 is RD, so the echo of RD can be checked."""
    return struct.pack("!6H", ident, flags, qd, an, ns, ar)


QNAME = b"\x03www\x07example\x03com\x00"
QUESTION = QNAME + struct.pack("!HH", 1, 1)        # www.example.com. A IN, at offset 12
A_RDATA = struct.pack("!HHIH", 1, 1, 0, 4) + b"\xc0\x00\x02\x01"
FOLLOWER = b"\x03www\x00" + A_RDATA      # an RR a forward pointer may point at
LONG_NAME = b"".join(b"\x3f" + b"a" * 63 for _ in range(4)) + b"\x00"   # 257 octets


def opt_rr(options=b"", owner=b"\x00", version=0, payload=1232):
    return owner + struct.pack("!HHBBHH", 41, payload, 0, version, 0, len(options)) + options


def option(code, data):
    return struct.pack("!HH", code, len(data)) + data


def udp(s, wire, timeout=QUIET):
    return s.exchange(wire, tcp=False, timeout=timeout)


def tcp_send(s, payload, timeout=2.0):
    """Send raw bytes (length prefixes included) on a new TCP connection; return
    (messages received, closed) once the server closed or went quiet."""
    with socket.create_connection((s.host, s.port), timeout=timeout) as c:
        c.sendall(payload)
        return _read_all(c, timeout)


def _read_all(c, timeout):
    data, closed = b"", False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        c.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = c.recv(70000)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
        if _complete(data):
            break
    msgs = []
    while len(data) >= 2 and len(data) >= 2 + struct.unpack("!H", data[:2])[0]:
        (n,) = struct.unpack("!H", data[:2])
        msgs.append(data[2:2 + n])
        data = data[2 + n:]
    return msgs, closed


def _complete(data):
    return len(data) >= 2 and len(data) >= 2 + struct.unpack("!H", data[:2])[0]


def tcp_query(s, wire, timeout=2.0):
    msgs, closed = tcp_send(s, struct.pack("!H", len(wire)) + wire, timeout)
    return (msgs[0] if msgs else None), closed


def header(resp):
    ident, flags, qd, an, ns, ar = struct.unpack("!6H", resp[:12])
    return {"id": ident, "qr": bool(flags & 0x8000), "opcode": (flags >> 11) & 15,
            "aa": bool(flags & 0x0400), "rd": bool(flags & 0x0100), "rcode": flags & 15,
            "counts": (qd, an, ns, ar)}


def assert_error_reply(resp, query, rcode, question=True):
    """An error response (RFC 1035 4.1.1, as Knot sends them): QR set, the
    query's ID, opcode and RD echoed, AA clear, the rcode, and the question
    echoed when one could be read (question=False: a header only)."""
    assert resp is not None, "no response, expected %s" % dns.rcode.to_text(rcode)
    h, qh = header(resp), header(query)
    assert h["qr"] and h["id"] == qh["id"] and h["opcode"] == qh["opcode"], h
    assert h["rd"] == qh["rd"] and not h["aa"], h
    assert h["rcode"] == rcode, "rcode %d, expected %d" % (h["rcode"], rcode)
    if question:
        assert h["counts"] == (1, 0, 0, 0), h
        assert resp[12:] == query[12:len(resp)], "question not echoed"
    else:
        assert h["counts"] == (0, 0, 0, 0) and len(resp) == 12, (h, len(resp))


def both(s, wire, check):
    """Run check(response) for the message over UDP and over TCP."""
    check(udp(s, wire, timeout=2.0), "udp")
    resp, _closed = tcp_query(s, wire)
    check(resp, "tcp")


# ------------------------------------------------------------------ headers and counts

@pytest.mark.parametrize("n", range(12))
def test_truncated_header_is_dropped(srv, assert_alive, n):
    """Shorter than a header: no answer over UDP; over TCP no answer and the
    connection is closed (RFC 1035 4.1.1 has nothing to echo; as Knot)."""
    wire = hdr()[:n]
    assert udp(srv, wire) is None
    msgs, closed = tcp_send(srv, struct.pack("!H", n) + wire)
    assert msgs == [] and closed
    assert_alive()


def test_lying_counts(srv, assert_alive):
    # QDCOUNT 2 with one question: FORMERR, header only (RFC 9619; knotd drops it,
    # docs/differences.md)
    w = hdr(qd=2) + QUESTION
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR, question=False))
    # QDCOUNT 0: FORMERR, header only
    w = hdr(qd=0)
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR, question=False))
    # ANCOUNT / NSCOUNT / ARCOUNT claim records that are not there: FORMERR, question echoed
    for counts in ({"an": 1}, {"ns": 3}, {"ar": 1}, {"an": 65535, "ar": 65535}):
        w = hdr(**counts) + QUESTION
        both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR))
    # QDCOUNT 1 and no question at all: nothing to echo, dropped (as Knot)
    assert udp(srv, hdr()) is None
    # an RR whose RDLENGTH runs past the end
    w = hdr(ar=1) + QUESTION + b"\x00" + struct.pack("!HHIH", 1, 1, 0, 40) + b"\x01\x02"
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR))
    # trailing bytes after the last record
    w = hdr() + QUESTION + b"xx"
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR))
    assert_alive()


# ------------------------------------------------------------------ names

BAD_NAMES = {
    "pointer_to_itself": lambda at: struct.pack("!H", 0xc000 | at),
    "two_pointers_to_each_other": lambda at: b"\x01a" + struct.pack("!H", 0xc000 | (at + 4))
    + struct.pack("!H", 0xc000 | at),
    # to the owner of the record that follows (at + 2 + 14, see FOLLOWER)
    "forward_pointer": lambda at: struct.pack("!H", 0xc000 | (at + 16)),
    "pointer_past_the_end": lambda at: b"\x03www" + struct.pack("!H", 0xc000 | 0x3fff),
    "label_of_64": lambda at: b"\x40" + b"a" * 64 + b"\x00",
    "extended_label_type": lambda at: b"\x41" + b"a" * 65 + b"\x00",
    "name_of_257_octets": lambda at: LONG_NAME,
    "no_terminating_label": lambda at: b"\x03www",
}


@pytest.mark.parametrize("kind", sorted(BAD_NAMES))
def test_bad_name_in_question_is_dropped(srv, assert_alive, kind):
    """A question that cannot be read: no answer over UDP or TCP (as Knot;
    there is no question to echo)."""
    name = BAD_NAMES[kind](12)
    w = hdr() + name + struct.pack("!HH", 1, 1)
    if kind == "forward_pointer":   # 12 + 2 + 4 = 18: the follower's owner
        w = hdr(ar=1) + struct.pack("!H", 0xc000 | 18) + struct.pack("!HH", 1, 1) + FOLLOWER
    assert udp(srv, w) is None
    msg, _closed = tcp_query(srv, w, timeout=1.0)
    assert msg is None
    assert_alive()


@pytest.mark.parametrize("kind", sorted(BAD_NAMES))
def test_bad_name_in_additional_is_formerr(srv, assert_alive, kind):
    """A readable question, a bad owner name further on: FORMERR with the
    question echoed (as Knot)."""
    at = 12 + len(QUESTION)
    name = BAD_NAMES[kind](at)
    w = hdr(ar=1) + QUESTION + name + A_RDATA
    if kind == "forward_pointer":
        w = hdr(ar=2) + QUESTION + name + A_RDATA + FOLLOWER
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR))
    assert_alive()


# ------------------------------------------------------------------ EDNS

def test_bad_opt_records(srv, assert_alive):
    bad = {
        "two OPT RRs (RFC 6891 6.1.1)": hdr(ar=2) + QUESTION + opt_rr() + opt_rr(),
        "OPT in the answer section": hdr(an=1) + QUESTION + opt_rr(),
        "OPT in the authority section": hdr(ns=1) + QUESTION + opt_rr(),
        "option longer than the OPT rdata": hdr(ar=1) + QUESTION + opt_rr(
            struct.pack("!HH", 65001, 10) + b"ab"),
        "option header cut short": hdr(ar=1) + QUESTION + opt_rr(b"\x00\x0a\x00"),
    }
    for what, w in bad.items():
        both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.FORMERR))
    assert_alive()


def test_opt_owner_other_than_root_is_read_as_opt(srv):
    """RFC 6891 6.1.2 says the owner MUST be root but names no error; knotd
    answers as if it were root, and so does zonecast (BIND: FORMERR)."""
    w = hdr(ar=1) + QUESTION + opt_rr(owner=b"\x01a\x00")
    resp = udp(srv, w, timeout=2.0)
    m = dns.message.from_wire(resp)
    assert m.rcode() == dns.rcode.NOERROR and m.edns == 0 and len(m.answer) == 1


@pytest.mark.parametrize("tcp", [False, True])
def test_edns_version_1_is_badvers(srv, tcp):
    """RFC 6891 6.1.3: BADVERS, an OPT of version 0, no answer data."""
    w = hdr(ar=1) + QUESTION + opt_rr(version=1)
    resp = tcp_query(srv, w)[0] if tcp else udp(srv, w, timeout=2.0)
    m = dns.message.from_wire(resp)
    assert m.rcode() == dns.rcode.BADVERS and m.edns == 0 and not m.answer
    assert m.id == 0x1234


def test_oversized_options(srv, assert_alive):
    # an unknown option of 4,000 bytes over UDP, of 60,000 over TCP: ignored (RFC 6891 6.1.2)
    for size, tcp in ((4000, False), (60000, True)):
        w = hdr(ar=1) + QUESTION + opt_rr(option(65001, b"x" * size))
        resp = tcp_query(srv, w)[0] if tcp else udp(srv, w, timeout=2.0)
        m = dns.message.from_wire(resp)
        assert m.rcode() == dns.rcode.NOERROR and len(m.answer) == 1, (size, m.to_text())
    # a UDP query over 4096 bytes is not a query zonecast serves: dropped
    # (knotd answers it; src/server/udp.c QUERY_MAX)
    w = hdr(ar=1) + QUESTION + opt_rr(option(65001, b"x" * 5000))
    assert udp(srv, w) is None
    assert_alive()


@pytest.mark.parametrize("length", [5, 9, 41])
def test_cookie_of_bad_length_is_formerr(srv, length):
    """RFC 7873 5.2.2: a COOKIE option that cannot hold a client cookie (8) or a
    client cookie and a server cookie (8 to 32) gets FORMERR."""
    w = hdr(ar=1) + QUESTION + opt_rr(option(10, b"c" * length))
    resp = udp(srv, w, timeout=2.0)
    assert resp is not None and header(resp)["rcode"] == dns.rcode.FORMERR


# ------------------------------------------------------------------ opcode, QR, class

@pytest.mark.parametrize("opcode", [1, 3, 6, 15])
def test_unknown_opcode_is_notimp(srv, opcode):
    """NOTIMP (RFC 1035 4.1.1), opcode and question echoed (as Knot)."""
    w = hdr(flags=opcode << 11 | 0x0100) + QUESTION
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.NOTIMP))


@pytest.mark.parametrize("opcode", [1, 2, 4])
def test_notimp_and_notauth_keep_the_opt(srv, opcode):
    """RFC 6891 §7: a query with an OPT gets one back, errors too (as
    BIND and knotd answer them; zonecast sent NOTIMP, and NOTAUTH to a
    NOTIFY, with none: outside tester 28)."""
    q = dns.message.make_query("example.com.", "SOA", use_edns=0)
    q.set_opcode(opcode)
    r = dns.message.from_wire(udp(srv, q.to_wire(), timeout=2.0))
    want = dns.rcode.NOTAUTH if opcode == 4 else dns.rcode.NOTIMP
    assert r.rcode() == want and r.edns == 0 and r.opcode() == opcode, r
    # a NOTIFY without its question is malformed (FORMERR, as BIND and knotd)
    if opcode == 4:
        n = dns.message.Message()
        n.set_opcode(4)
        n.use_edns(0)
        r = dns.message.from_wire(udp(srv, n.to_wire(), timeout=2.0))
        assert r.rcode() == dns.rcode.FORMERR and r.edns == 0, r


def test_responses_are_dropped(srv, assert_alive):
    """QR=1: a response is never answered (no reflection loops)."""
    for flags in (0x8000, 0x8000 | 5 << 11, 0x8000 | 4 << 11):
        w = hdr(flags=flags) + QUESTION
        assert udp(srv, w) is None
        assert tcp_query(srv, w, timeout=QUIET)[0] is None
    assert_alive()


@pytest.mark.parametrize("qclass", [3, 4, 254, 1234])
def test_other_classes_are_refused(srv, qclass):
    """CH, HS, NONE, an unknown class: REFUSED for a name of our zones (not
    our data, as Knot). version.bind TXT is answered in class CH only (RFC
    4892, test_chaos.py), REFUSED in the others."""
    w = hdr() + QNAME + struct.pack("!HH", 1, qclass)
    both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.REFUSED))
    w = hdr() + b"\x07version\x04bind\x00" + struct.pack("!HH", 16, qclass)
    if qclass == 3:
        m = dns.message.from_wire(udp(srv, w, timeout=2.0))
        assert m.rcode() == dns.rcode.NOERROR and m.answer, m
    else:
        both(srv, w, lambda r, t: assert_error_reply(r, w, dns.rcode.REFUSED))


def test_class_any_is_answered_as_in(srv):
    w = hdr() + QNAME + struct.pack("!HH", 1, 255)
    m = dns.message.from_wire(udp(srv, w, timeout=2.0))
    assert m.rcode() == dns.rcode.NOERROR and m.flags & dns.flags.AA
    assert [rd.address for rrset in m.answer for rd in rrset] == ["192.0.2.80"]


# ------------------------------------------------------------------ TCP framing and clients

def test_tcp_length_65535_of_garbage(srv, assert_alive):
    # a header, a question, then garbage up to 65535 bytes: FORMERR with the question
    w = hdr() + QUESTION
    w += bytes(random.Random(6).getrandbits(8) for _ in range(65535 - len(w)))
    msgs, closed = tcp_send(srv, struct.pack("!H", 65535) + w, timeout=3)
    assert len(msgs) == 1, (msgs, closed)
    assert_error_reply(msgs[0], w, dns.rcode.FORMERR)
    # 65535 zero bytes: a QDCOUNT of 0, FORMERR with a header only; the
    # connection stays usable (RFC 7766 allows closing too: knotd closes)
    z = bytes(65535)
    q = make_query("www.example.com.", "A").to_wire()
    with socket.create_connection((srv.host, srv.port), timeout=3) as c:
        c.sendall(struct.pack("!H", 65535) + z)
        msgs, closed = _read_all(c, 3)
        assert len(msgs) == 1 and header(msgs[0])["rcode"] == dns.rcode.FORMERR
        assert header(msgs[0])["counts"] == (0, 0, 0, 0)
        if not closed:
            c.sendall(struct.pack("!H", len(q)) + q)
            msgs, _ = _read_all(c, 3)
            assert len(msgs) == 1 and header(msgs[0])["rcode"] == dns.rcode.NOERROR
    assert_alive()


def test_tcp_length_prefix_announcing_more_than_sent(srv, assert_alive):
    # client closes mid-message: nothing to answer, the server must not mind
    for sent in (0, 1, 100, 65534):
        with socket.create_connection((srv.host, srv.port), timeout=3) as c:
            c.sendall(struct.pack("!H", 65535) + b"\x12" * sent)
    # client half-closes mid-message: the server closes without an answer
    with socket.create_connection((srv.host, srv.port), timeout=3) as c:
        c.sendall(struct.pack("!H", 1000) + b"\x12" * 100)
        c.shutdown(socket.SHUT_WR)
        msgs, closed = _read_all(c, 3)
        assert msgs == [] and closed
    # a zero length: closed at once without an answer
    msgs, closed = tcp_send(srv, struct.pack("!H", 0))
    assert msgs == [] and closed
    assert_alive()


def test_tcp_idle_connection_is_closed(srv, assert_alive):
    """tcp-idle-timeout 2: a connection that sends nothing is closed after ~2 s."""
    with socket.create_connection((srv.host, srv.port), timeout=6) as c:
        start = time.monotonic()
        assert c.recv(10) == b""
        took = time.monotonic() - start
    assert 1.5 <= took <= 4.5, took
    assert_alive()


def test_tcp_slow_drip_is_closed(srv, assert_alive):
    """Partial input is no activity: a message must be complete within
    tcp-idle-timeout (2 s) of the connection's last complete message or reply.
    One byte each 0.5 s: closed within ~4 s, before the query is complete."""
    q = make_query("www.example.com.", "A").to_wire()
    data = struct.pack("!H", len(q)) + q
    closed_at = None
    with socket.create_connection((srv.host, srv.port), timeout=1) as c:
        start = time.monotonic()
        for i in range(len(data)):
            if time.monotonic() - start > 6:
                break
            try:
                c.sendall(data[i:i + 1])
                c.settimeout(0.5)
                if c.recv(100) == b"":
                    closed_at = time.monotonic() - start
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed_at = time.monotonic() - start
                break
    assert closed_at is not None and closed_at <= 4.5, closed_at
    assert_alive()


def test_tcp_max_clients_per_worker(zonecast_factory):
    """tcp-max-clients: open connections per worker and address; more are
    closed at once (docs/configuration.md). One worker, a limit of 4."""
    s = zonecast_factory(workers=1, options=[("tcp-max-clients", "4")])
    q = make_query("www.example.com.", "A").to_wire()
    framed = struct.pack("!H", len(q)) + q
    conns = [socket.create_connection((s.host, s.port), timeout=3) for _ in range(4)]
    try:
        for c in conns:      # each of the four is served
            c.sendall(framed)
            msgs, closed = _read_all(c, 3)
            assert len(msgs) == 1 and header(msgs[0])["rcode"] == dns.rcode.NOERROR
        with socket.create_connection((s.host, s.port), timeout=3) as extra:
            try:
                extra.sendall(framed)
            except (BrokenPipeError, ConnectionResetError):
                pass
            msgs, closed = _read_all(extra, 3)
            assert msgs == [] and closed, "a fifth connection was served"
        conns[0].sendall(framed)  # the four stay usable
        msgs, _ = _read_all(conns[0], 3)
        assert len(msgs) == 1
    finally:
        for c in conns:
            c.close()
    time.sleep(0.3)
    alive(s)


# ------------------------------------------------------------------ TSIG

@pytest.fixture(scope="module")
def key(srv):
    return srv.tsig_create("malformed-key." + ZONE.rstrip("."), ZONE)


def _update(ident=77):
    return update_wire(ZONE, updates=[rr_wire("tsig." + ZONE, "A", "IN", 300, "192.0.2.1")],
                       id=ident)


def _tsig_rr(key, mac, ident=77, time_signed=None, fudge=300):
    t = int(time.time()) if time_signed is None else time_signed
    rd = (key.algorithm.to_wire() + struct.pack("!HIH", t >> 32, t & 0xffffffff, fudge)
          + struct.pack("!H", len(mac)) + mac + struct.pack("!HHH", ident, 0, 0))
    return key.name.to_wire() + struct.pack("!HHIH", 250, 255, 0, len(rd)) + rd


def _add_ar(wire, extra, n=1):
    (ar,) = struct.unpack("!H", wire[10:12])
    return wire[:10] + struct.pack("!H", ar + n) + wire[12:] + extra


def _soa_serial(s):
    m = s.query(ZONE, "SOA", tcp=True)
    return m.answer[0][0].serial


def _tsig_error(resp):
    _msg, owner, rd, _ = split_tsig(resp)
    return owner, rd


def test_tsig_malformed_and_failing(srv, key, assert_alive):
    k = key.key
    serial = _soa_serial(srv)
    signed, mac = tsig_sign(_update(), k)
    a_rr = rr_wire("x." + ZONE, "A", "IN", 0, "192.0.2.9")

    def send(wire):
        return exchange_from(srv.host, srv.port, wire, tcp=True, source="127.0.0.1")

    # RFC 8945 5.1: a TSIG that is not the last record, or two of them: FORMERR
    for w in (_add_ar(signed, a_rr), _add_ar(signed, signed[len(_update()):])):
        r = send(w)
        assert_error_reply(r, w, dns.rcode.FORMERR)
        assert _tsig_error(r)[1] is None, "a FORMERR answer is unsigned"
    # 5.2.2.1: MAC longer than the hash, shorter than max(10, half), empty: FORMERR
    for bad_mac in (mac + b"x" * 8, mac[:8], b""):
        w = _add_ar(_update(), _tsig_rr(k, bad_mac))
        r = send(w)
        assert_error_reply(r, w, dns.rcode.FORMERR)
        assert _tsig_error(r)[1] is None
    # a truncated MAC of an allowed size: NOTAUTH, BADTRUNC, unsigned
    r = send(_add_ar(_update(), _tsig_rr(k, mac[:16])))
    assert header(r)["rcode"] == dns.rcode.NOTAUTH
    owner, rd = _tsig_error(r)
    assert rd.error == BADTRUNC and rd.mac == b"" and owner == k.name
    # 5.2.1 unknown key: BADKEY; 5.2.2 wrong MAC: BADSIG (both unsigned);
    # 5.2.3 time outside the fudge: BADTIME, signed
    unknown = dns.tsig.Key("unknown-key.", key.secret, "hmac-sha256.")
    wrong = dns.tsig.Key(k.name, "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZw==", k.algorithm)
    for signer, err, when in ((unknown, BADKEY, None), (wrong, BADSIG, None),
                              (k, BADTIME, time.time() - 1000)):
        w, m = tsig_sign(_update(), signer, time_signed=when)
        r = send(w)
        assert header(r)["rcode"] == dns.rcode.NOTAUTH
        owner, rd = _tsig_error(r)
        assert rd.error == err and rd.original_id == 77 and owner == signer.name
        if err == BADTIME:
            assert tsig_mac_valid(r, k, m)
        else:
            assert rd.mac == b""
    assert _soa_serial(srv) == serial, "a refused UPDATE changed the zone"
    # a signed query (not an UPDATE) gets the same checks
    q = make_query("www.example.com.", "A", edns=None, id=78).to_wire()
    for tcp in (False, True):
        w, _ = tsig_sign(q, unknown)
        r = exchange_from(srv.host, srv.port, w, tcp=tcp)
        assert header(r)["rcode"] == dns.rcode.NOTAUTH and _tsig_error(r)[1].error == BADKEY
        w = _add_ar(tsig_sign(q, k)[0], a_rr)
        r = exchange_from(srv.host, srv.port, w, tcp=tcp)
        assert_error_reply(r, w, dns.rcode.FORMERR)
        w = _add_ar(q, _tsig_rr(k, b"", ident=78))
        r = exchange_from(srv.host, srv.port, w, tcp=tcp)
        assert_error_reply(r, w, dns.rcode.FORMERR)
    assert_alive()


# ------------------------------------------------------------------ UPDATE

def test_update_malformed(srv, assert_alive):
    serial = _soa_serial(srv)
    add = [rr_wire("u." + ZONE, "A", "IN", 300, "192.0.2.7")]

    def send(wire, tcp=True, timeout=3.0):
        return exchange_from(srv.host, srv.port, wire, tcp=tcp, source=UPDATE_SOURCE,
                             timeout=timeout)

    # zone section count other than 1: FORMERR, header only (RFC 2136 3.1.1)
    for qs in ([], [(ZONE, "SOA", "IN")] * 2):
        w = update_wire(ZONE, updates=add, zone_questions=qs)
        for tcp in (False, True):
            assert_error_reply(send(w, tcp), w, dns.rcode.FORMERR, question=False)
    # a prerequisite of a class that is none of ANY, NONE, the zone's (3.2.5)
    w = update_wire(ZONE, prereqs=[rr_wire("u." + ZONE, "A", "CH", 0)], updates=add)
    assert_error_reply(send(w), w, dns.rcode.FORMERR)
    # an update RR that runs past the end of the message
    w = update_wire(ZONE, updates=[rr_wire("u." + ZONE, "A", "IN", 300, "192.0.2.7")[:-2]])
    assert header(send(w))["rcode"] == dns.rcode.FORMERR
    # larger than update-max-size: REFUSED (docs/configuration.md), with its
    # zone section (RFC 2136 §3.8; a signed one's answer is signed too:
    # test_update.py)
    big = update_wire(ZONE, updates=[rr_wire("big%d.%s" % (i, ZONE), "TXT", "IN", 300,
                                             '"%s"' % ("x" * 200)) for i in range(12)])
    assert len(big) > UPDATE_MAX
    for tcp in (False, True):
        assert_error_reply(send(big, tcp), big, dns.rcode.REFUSED)
    # QR=1: dropped
    w = update_wire(ZONE, updates=add)
    w = w[:2] + bytes([w[2] | 0x80]) + w[3:]
    assert send(w, tcp=False, timeout=QUIET) is None
    assert _soa_serial(srv) == serial, "a malformed UPDATE changed the zone"
    assert_alive()


# ------------------------------------------------------------------ HTTP API

def assert_api_error(r, status, field):
    """HTTP status, the Cloudflare envelope, a message that starts with field."""
    assert r.status_code == status, "HTTP %d %s" % (r.status_code, r.text[:500])
    body = r.json()
    assert body["success"] is False and body["errors"], body
    msg = body["errors"][0]["message"]
    assert msg.startswith(field + ":"), "message %r does not start with %r" % (msg, field)


@pytest.fixture(scope="module")
def zone_id(api):
    return api.ok("POST", "/zones", json={"name": "malformed.test"})["result"]["id"]


GOOD = {"name": "x.malformed.test", "type": "A", "content": "192.0.2.1", "ttl": 300}

WRONG_TYPES = [
    ("name", [123, None, [], {}, True, ""]),
    ("type", [5, None, [], {}, ""]),
    ("content", [5, None, [], {}]),
    ("ttl", ["300", 1.5, None, [], True, 2 ** 40, 2 ** 31, -1]),
    ("proxied", ["yes", 1, [], True]),
    # (a null priority is none, as a null comment: clients send it for
    # types without one; test_attack_api_members.py)
    ("priority", ["high", -1, 70000, 1.5, []]),
    ("comment", [5, [], "c" * 501]),
    ("tags", [5, "tag", {}]),
]


def test_api_record_fields_of_wrong_type(srv, api, zone_id, assert_alive):
    path = "/zones/%s/dns_records" % zone_id
    before = api.records(zone_id)
    problems = []
    for field, values in WRONG_TYPES:
        for v in values:
            r = api.call("POST", path, json=dict(GOOD, **{field: v}))
            try:
                assert_api_error(r, 400, field)
            except AssertionError as e:
                problems.append("%s=%r: %s" % (field, v, e))
    for field in ("name", "type", "content"):
        body = dict(GOOD)
        del body[field]
        r = api.call("POST", path, json=body)
        try:
            assert_api_error(r, 400, field)
        except AssertionError as e:
            problems.append("missing %s: %s" % (field, e))
    assert not problems, "\n".join(problems)
    assert api.records(zone_id) == before
    assert_alive()


def test_api_bad_bodies(srv, api, zone_id, assert_alive):
    path = "/zones/%s/dns_records" % zone_id
    js = {"Content-Type": "application/json"}
    for raw in ('{"name": "x.malformed.test", "type": "A", "content": "192.0.2.1"', "{bad", "",
                "[]", "null", "\x00\x01", '{"name": "\udc80"}'.encode("utf-8", "surrogatepass")):
        assert_api_error(api.call("POST", path, data=raw, headers=js), 400, "body")
    # not JSON: 415 naming the header; no Content-Type at all is read as JSON
    for ctype in ("text/plain", "multipart/form-data; boundary=xyz",
                  "application/x-www-form-urlencoded", "application/jsonx"):
        r = api.call("POST", path, data='{"name": "ct.malformed.test", "type": "A", '
                     '"content": "192.0.2.1"}', headers={"Content-Type": ctype})
        assert_api_error(r, 415, "Content-Type")
    r = api.call("POST", path, json=dict(GOOD, name="ct.malformed.test"),
                 headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200, r.text
    api.ok("DELETE", "%s/%s" % (path, r.json()["result"]["id"]))
    # over api-max-body: 413 before the body is read (Content-Length) ...
    big = '{"name": "big.malformed.test", "type": "TXT", "content": "%s"}' % ("x" * API_MAX_BODY)
    assert_api_error(api.call("POST", path, data=big, headers=js), 413, "body")
    # ... or once it is read (chunked, no Content-Length)
    def chunks():
        for i in range(0, len(big), 4096):
            yield big[i:i + 4096].encode()
    assert_api_error(api.call("POST", path, data=chunks(), headers=js), 413, "body")
    # a chunked body going on far past the limit: the connection is cut
    import requests

    def endless():
        for _ in range(1000):
            yield b"x" * 65536
    with pytest.raises(requests.exceptions.ConnectionError):
        r = api.call("POST", path, data=endless(), headers=js)
        # (a 413 read before the client noticed the close is fine too)
        if r.status_code == 413:
            raise requests.exceptions.ConnectionError()
    assert_alive()


def test_api_query_strings(srv, api, zone_id, assert_alive):
    path = "/zones/%s/dns_records" % zone_id
    for qs, field in (("page=99999999999999999999", "page"), ("page=-1", "page"),
                      ("page=0", "page"), ("page=1x", "page"), ("page=", "page"),
                      ("per_page=-1", "per_page"), ("per_page=0", "per_page"),
                      ("per_page=50001", "per_page"), ("per_page=1e3", "per_page"),
                      ("type=%ff", "type"), ("type=%41%41", "type")):
        assert_api_error(api.call("GET", path + "?" + qs), 400, field)
    # a page far past the end is an empty page
    b = api.ok("GET", path + "?page=100000000&per_page=50000")
    assert b["result"] == [] and b["result_info"]["page"] == 100000000
    # bad percent-encoding is taken literally: a name no record has
    for qs in ("name=%zz", "name=%", "name=%%%"):
        assert api.ok("GET", path + "?" + qs)["result"] == []
    assert api.ok("GET", "/zones?name=%zz")["result"] == []
    # propagation: version and wait are checked (wait=nan waited for ever)
    for qs, field in (("version=x", "version"), ("version=", "version"),
                      ("version=-1", "version"), ("version=4294967296", "version"),
                      ("version=1&wait=nan", "wait"), ("version=1&wait=inf", "wait"),
                      ("version=1&wait=-1", "wait"), ("version=1&wait=61", "wait")):
        r = api.call("GET", "/zones/%s/propagation?%s" % (zone_id, qs), timeout=10)
        assert_api_error(r, 400, field)
    assert_alive()


def test_api_paths_and_methods(srv, api, zone_id, assert_alive):
    for path in ("/nothing", "/zones/%s/nothing" % zone_id, "/zones/%s/dns_records/%s/x"
                 % (zone_id, "f" * 32), "/../../etc/passwd", "/zones/%2e%2e"):
        r = api.call("GET", path)
        assert r.status_code == 404, (path, r.status_code, r.text)
        assert r.json()["success"] is False
    import requests
    r = requests.get("http://127.0.0.1:%d/other" % srv.api_port, timeout=5,
                     headers={"Authorization": "Bearer " + api.token})
    assert_api_error(r, 404, "url")
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"):
        assert_api_error(api.call(method, "/zones"), 405, "method")
    assert_api_error(api.call("POST", "/zones/%s" % zone_id, json={}), 405, "method")
    assert_alive()


def test_api_header_flood_and_long_url(srv, api, assert_alive):
    """libmicrohttpd's 32 KiB connection buffer: a longer request line gets
    414, more header data 431 (its own HTML body, not the envelope)."""
    assert api.call("GET", "/zones/" + "a" * 100000).status_code == 414
    assert api.call("GET", "/zones", headers={"X-H%d" % i: "v" * 100
                                              for i in range(1000)}).status_code == 431
    assert api.call("GET", "/zones", headers={"X-Big": "v" * 60000}).status_code == 431
    # a path within MHD's buffer but over the router's 1023 octets: 414 too,
    # with the envelope (it was cut there and served as the shorter path)
    r = api.call("GET", "/zones/" + "a" * 5000)
    assert r.status_code == 414 and r.json()["success"] is False
    assert_alive()


def _closed_within(port, payload, limit):
    with socket.create_connection(("127.0.0.1", port), timeout=limit + 3) as c:
        if payload:
            c.sendall(payload)
        start = time.monotonic()
        data = b""
        try:
            while True:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        return time.monotonic() - start, data


@pytest.mark.parametrize("payload", [b"", b"GET /client/v4/zones HTTP/1.1\r\nHost: x\r\n",
                                     b"POST /client/v4/zones HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Length: 100\r\n\r\n{\"na"],
                         ids=["nothing", "mid_headers", "mid_body"])
def test_api_slow_client_is_closed(srv, payload, assert_alive):
    """api-timeout 2: a client that sends nothing, or stops mid-headers or
    mid-body, is closed after ~2 s (without a response)."""
    took, data = _closed_within(srv.api_port, payload, 2)
    assert 1.5 <= took <= 4.5, took
    assert data == b"", data[:200]
    assert_alive()


def test_api_connection_limits(zonecast_api_factory):
    """api-max-clients-per-ip and api-max-clients: connections past the
    limit are closed at once, without a response; the others are served."""
    import requests
    s = zonecast_api_factory(options=[("api-max-clients-per-ip", "3"), ("api-max-clients", "5")])
    token = _token(s)
    req = ("GET /client/v4/zones HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
           % token).encode()

    def served(c):
        c.sendall(req)
        c.settimeout(3)
        try:
            return c.recv(100).startswith(b"HTTP/1.1 200")
        except (ConnectionResetError, socket.timeout):
            return False

    conns = [socket.create_connection(("127.0.0.1", s.api_port), timeout=3) for _ in range(3)]
    try:
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", s.api_port), timeout=3) as extra:
            assert not served(extra), "a fourth connection from one address was served"
        assert all(served(c) for c in conns)
        # from other addresses up to the total of 5
        others = []
        for src in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
            o = socket.socket()
            o.bind((src, 0))
            o.connect(("127.0.0.1", s.api_port))
            others.append(o)
        time.sleep(0.2)
        assert [served(o) for o in others].count(True) == 2
        for o in others:
            o.close()
    finally:
        for c in conns:
            c.close()
    time.sleep(0.5)
    r = requests.get(s.api_url + "/zones", headers={"Authorization": "Bearer " + token}, timeout=5)
    assert r.status_code == 200
    alive(s)


# ------------------------------------------------------------------ zone-max-records

def test_zone_max_records(zonecast_api_factory):
    """zone-max-records 6: a zone made by the API holds SOA and 2 NS; 3 more
    records fit, the 4th does not: API 400 naming dns_records, UPDATE
    SERVFAIL (as BIND's max-records), nothing written either way."""
    s = zonecast_api_factory(options=[("zone-max-records", "6"), ("allow-update", UPDATE_SOURCE)])
    api = s.client(_token(s))
    zid = api.ok("POST", "/zones", json={"name": "full.test"})["result"]["id"]
    path = "/zones/%s/dns_records" % zid
    ids = [api.ok("POST", path, json={"name": "r%d.full.test" % i, "type": "A",
                                      "content": "192.0.2.%d" % i})["result"]["id"]
           for i in range(3)]
    before = sorted(r["id"] for r in api.records(zid))
    assert_api_error(api.call("POST", path, json={"name": "r9.full.test", "type": "A",
                                                  "content": "192.0.2.9"}), 400, "dns_records")
    r = api.call("POST", path + "/batch", json={"posts": [
        {"name": "b%d.full.test" % i, "type": "A", "content": "192.0.2.%d" % i}
        for i in range(5)]})
    assert r.status_code == 400 and r.json()["success"] is False, r.text
    serial = s.query("full.test.", "SOA", tcp=True).answer[0][0].serial
    w = update_wire("full.test.", updates=[rr_wire("u.full.test.", "A", "IN", 300, "192.0.2.50")])
    r = exchange_from(s.host, s.port, w, tcp=True, source=UPDATE_SOURCE)
    assert header(r)["rcode"] == dns.rcode.SERVFAIL
    assert sorted(r["id"] for r in api.records(zid)) == before
    assert s.query("full.test.", "SOA", tcp=True).answer[0][0].serial == serial
    # a replacement (delete one, add one) fits; so does an add after a delete
    w = update_wire("full.test.", updates=[
        rr_wire("r0.full.test.", "A", "NONE", 0, "192.0.2.0"),
        rr_wire("u.full.test.", "A", "IN", 300, "192.0.2.50")])
    r = exchange_from(s.host, s.port, w, tcp=True, source=UPDATE_SOURCE)
    assert header(r)["rcode"] == dns.rcode.NOERROR
    api.ok("DELETE", "%s/%s" % (path, ids[1]))
    api.ok("POST", path, json={"name": "r9.full.test", "type": "A", "content": "192.0.2.9"})
    assert len(api.records(zid)) == 6
    alive(s)


# ------------------------------------------------------------------ zone files

HEAD = ("$ORIGIN imp.test.\n$TTL 300\n@ SOA ns1 hostmaster 7 7200 3600 1209600 300\n"
        "@ NS ns1\nns1 A 192.0.2.1\n")


def _import(data_dir, path, config=None):
    argv = [servers.zonecast_bin(), "zone", "import", "--data-dir", data_dir, "imp.test", path]
    if config:
        argv[3:3] = ["--config", config]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _listing(data_dir):
    cp = subprocess.run([servers.zonecast_bin(), "zone", "list", "--data-dir", data_dir],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


@pytest.mark.parametrize("what", ["txt_70000", "name_over_255", "garbage_1e6_lines",
                                  "over_zone_max_records"])
def test_bad_zone_file_imports_nothing(tmp_path, what):
    """zonecast zone import: a clear error naming file and line, exit 1,
    nothing imported; a zone already there keeps what it had."""
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast binary not found")
    data = str(tmp_path / "data")
    good = tmp_path / "good.zone"
    good.write_text(HEAD + "www A 192.0.2.2\n")
    assert _import(data, str(good)).returncode == 0
    before = _listing(data)
    bad = tmp_path / "bad.zone"
    config = None
    if what == "txt_70000":
        bad.write_text(HEAD + "t TXT " + " ".join('"%s"' % ("a" * 255) for _ in range(275))
                       + "\n")
        line, text = 6, "too long"
    elif what == "name_over_255":
        bad.write_text(HEAD + ".".join(["a" * 63] * 4) + " A 192.0.2.1\n")
        line, text = 6, "name"
    elif what == "garbage_1e6_lines":
        with open(bad, "w") as f:
            f.write(HEAD)
            for i in range(1000000):
                f.write("garbage line %d !!! ###\n" % i)
        line, text = 6, "error"
    else:
        bad.write_text(HEAD + "".join("h%d A 192.0.2.3\n" % i for i in range(30)))
        config = str(tmp_path / "zonecast.conf")
        with open(config, "w") as f:
            f.write("server:\n    zone-max-records: 10\n")
        line, text = 13, "zone-max-records"    # the 11th record
    start = time.monotonic()
    cp = _import(data, str(bad), config)
    assert cp.returncode == 1, cp.stderr
    assert not any(m in cp.stderr for m in servers.SANITIZER_MARKERS), cp.stderr[-4000:]
    assert time.monotonic() - start < 60
    first = cp.stderr.splitlines()[0]
    assert first.startswith("%s:%d: error:" % (bad, line)) and text in first, cp.stderr[:500]
    assert "not imported, nothing changed" in cp.stderr
    assert len(cp.stderr) < 20000, "one error per garbage line"
    assert _listing(data) == before
