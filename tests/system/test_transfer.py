"""Zone transfers and NOTIFY (docs/dynamic-updates.md, "Transfers").

AXFR (RFC 5936) checked against the zone files the server imported, with
`dig`, `kdig` and dnspython, signed (TSIG, every message) and by address
(`allow-transfer`); IXFR (RFC 1995) checked version by version: the answer is
one condensed difference that turns the old zone (an AXFR taken at that
version) into the current one, or a whole zone in AXFR form when the journal
cannot serve it (a zone-wide change in between); who may transfer; NOTIFY
(RFC 1996) to a socket of the test; and finally BIND `named` and `knotd` as
real secondaries of zonecast, which must follow a stream of API changes and
UPDATEs by NOTIFY + IXFR and catch up after a restart.
"""

import json
import os
import re
import socket
import struct
import subprocess
import threading
import time

import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.tsig
import dns.update
import dns.xfr
import dns.zone
import pytest

import secondaries
import servers
import test_update as U
from conftest import UPDATE_SOURCE, XFR_SOURCE
from servers import exchange_from, split_tsig, tsig_sign

SYNC_WAIT = 20.0 * servers.TIMEOUT_SCALE  # secondaries must serve the primary's serial within this
EC, NET, SUB = "example.com.", "example.net.", "sub.example.com."


# ------------------------------------------------------------------ helpers

@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


@pytest.fixture
def zone(srv, api, request):
    return U.Zone(srv, api, request.node.name.split("[")[0].replace("test_", "")[:12]
                  .replace("_", "-"))


def rr_key(name, ttl, rd):
    """A comparable form of one RR: owner lowercased, TTL, type, canonical rdata."""
    return (name.canonicalize().to_text(), ttl, dns.rdatatype.to_text(rd.rdtype),
            rd.to_digestable(dns.name.root).hex())


def rr_text(k, zone_rrs):
    return zone_rrs.get(k, str(k))


def rrs_of_zone(z):
    """{rr_key: text} of a dns.zone.Zone (absolute names)."""
    out = {}
    for name, node in z.nodes.items():
        name = name.derelativize(z.origin)
        for rds in node.rdatasets:
            for rd in rds:
                out[rr_key(name, rds.ttl, rd)] = "%s %d %s %s" % (
                    name, rds.ttl, dns.rdatatype.to_text(rd.rdtype), rd.to_text())
    return out


def rrs_of_file(origin, path):
    return rrs_of_zone(dns.zone.from_file(path, origin, relativize=False))


def rr_list(rrsets):
    """[(rr_key, text)] in message order."""
    out = []
    for rrset in rrsets:
        for rd in rrset:
            out.append((rr_key(rrset.name, rrset.ttl, rd),
                        "%s %d %s %s" % (rrset.name, rrset.ttl,
                                         dns.rdatatype.to_text(rd.rdtype), rd.to_text())))
    return out


def is_soa(item):
    return item[0][2] == "SOA"


def soa_serial_of(item, rrsets=None):
    return int(item[1].split()[5])


def assert_same_rrs(got, want, what):
    missing = sorted(want[k] for k in set(want) - set(got))
    extra = sorted(got[k] for k in set(got) - set(want))
    assert not missing and not extra, "%s differs:\nmissing %s\nextra %s" % (
        what, "\n  ".join([""] + missing[:40]), "\n  ".join([""] + extra[:40]))


def xfr_messages(srv, zone, rdtype="AXFR", key=None, source=None, serial=0, port=None):
    """The messages of a transfer, as dnspython reads them (checking each
    one's TSIG when key is given)."""
    kw = {}
    if key is not None:
        kw = dict(keyring=key.keyring, keyname=key.name, keyalgorithm=key.algorithm)
    return list(dns.query.xfr(srv.host, zone, rdtype=rdtype, port=port or srv.port,
                              timeout=5, lifetime=30, relativize=False, source=source,
                              serial=serial, **kw))


def axfr(srv, zone, key=None, source=XFR_SOURCE):
    """(rrs {key: text}, serial, number of messages) of an AXFR, after the
    framing checks (SOA first and last, and nowhere else)."""
    msgs = xfr_messages(srv, zone, key=key, source=None if key else source)
    items = rr_list(r for m in msgs for r in m.answer)
    assert len(items) >= 2 and is_soa(items[0]) and is_soa(items[-1]), \
        "AXFR not framed by SOAs: %s ... %s" % (items[:1], items[-1:])
    assert items[0][0] == items[-1][0]
    assert sum(1 for i in items if is_soa(i)) == 2, "SOA inside the AXFR body"
    body = dict(items[:-1])
    assert len(body) == len(items) - 1, "duplicate RRs in the AXFR"
    if key is not None:
        assert all(m.had_tsig for m in msgs), "an AXFR message without TSIG"
    return body, soa_serial_of(items[0]), len(msgs)


def ixfr_answer(srv, zone, serial, key=None, source=XFR_SOURCE):
    msgs = xfr_messages(srv, zone, rdtype="IXFR", key=key, serial=serial,
                        source=None if key else source)
    return rr_list(r for m in msgs for r in m.answer)


def parse_ixfr(items):
    """'current' (one SOA), ('axfr', rrs) or ('ixfr', [(from, to, dels, adds)])."""
    assert items and is_soa(items[0]), "an IXFR answer starts with the SOA"
    if len(items) == 1:
        return ("current", soa_serial_of(items[0]))
    if not is_soa(items[1]):
        assert is_soa(items[-1]) and items[-1][0] == items[0][0]
        return ("axfr", dict(items[:-1]))
    cur = soa_serial_of(items[0])
    seqs, i = [], 1
    while i < len(items) - 1:
        old = soa_serial_of(items[i])
        i += 1
        dels = []
        while not is_soa(items[i]):
            dels.append(items[i])
            i += 1
        new = soa_serial_of(items[i])
        i += 1
        adds = []
        while not is_soa(items[i]):
            adds.append(items[i])
            i += 1
        seqs.append((old, new, dict(dels), dict(adds)))
    assert i == len(items) - 1 and soa_serial_of(items[-1]) == cur
    return ("ixfr", seqs)


def query_rcode(srv, zone, rdtype, key=None, source=None, tcp=True, serial=None):
    """Send one transfer query; returns (rcode, tsig rdata or None, message)."""
    q = dns.message.make_query(zone, rdtype)
    if serial is not None:
        q.authority.append(dns.rrset.from_text(zone, 0, "IN", "SOA",
                                               ". . %d 0 0 0 0" % serial))
    wire = q.to_wire()
    if key is not None:
        wire, _ = tsig_sign(wire, key)
    r = exchange_from(srv.host, srv.port, wire, tcp=tcp, source=source)
    assert r is not None, "no answer to %s %s" % (zone, rdtype)
    m, _owner, rd, _ = split_tsig(r)
    return m.rcode(), rd, m


def update(z, *ops, key=None):
    u = U.signed_update(z, key) if key else U.unsigned_update(z)
    for op, args in ops:
        getattr(u, op)(*args)
    if key:
        U.do_ok(z, u)
    else:
        U.ok_unsigned(z, u)
    return z.settle()


# ------------------------------------------------------------------ AXFR

@pytest.mark.valgrind
@pytest.mark.parametrize("origin", [EC, SUB, NET])
def test_axfr_by_address_equals_zone_file(srv, origin):
    """An unsigned AXFR from the allow-transfer address: exactly the file."""
    got, serial, _ = axfr(srv, origin)
    want = rrs_of_file(origin, servers.DEFAULT_ZONES[origin])
    assert_same_rrs(got, want, "AXFR of %s vs its zone file" % origin)
    assert serial == U.soa_serial(srv, origin)


def _dig_rrs(out):
    """RRs of dig/kdig zone-transfer output (TSIG lines and comments dropped)."""
    import dns.rdata
    rrs = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        name, ttl, cls, rtype, rdata = line.split(None, 4)
        if rtype == "TSIG":
            continue
        rd = dns.rdata.from_text(cls, rtype, rdata, origin=dns.name.root, relativize=False)
        n = dns.name.from_text(name)
        rrs[rr_key(n, int(ttl), rd)] = line
    return rrs


@pytest.mark.valgrind
@pytest.mark.parametrize("tool", ["dig", "kdig"])
def test_axfr_with_tsig_by_dig_and_kdig(srv, tool):
    key = srv.tsig_create("xfr-%s" % tool, NET.rstrip("."), algorithm="hmac-sha512")
    if tool == "dig":
        argv = ["dig", "@127.0.0.1", "-p", str(srv.port), "-k", key.path, "AXFR", NET,
                "+nocmd", "+nostats", "+nocomments"]
    else:
        argv = ["kdig", "@127.0.0.1", "-p", str(srv.port), "-y", key.y, "AXFR", NET,
                "+nostats", "+nocomments"]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 0, out
    comments = "\n".join(l for l in out.splitlines() if l.startswith(";"))
    for bad in ("failed", "tsig verify failure", "Couldn't verify", "ERROR", "WARNING"):
        assert bad not in comments, out
    assert re.search(r"\sTSIG\s", cp.stdout), "the transfer was not signed:\n" + out
    got = _dig_rrs(cp.stdout)
    want = rrs_of_file(NET, servers.DEFAULT_ZONES[NET])
    assert_same_rrs(got, want, "%s AXFR of %s" % (tool, NET))


@pytest.mark.valgrind
def test_axfr_tsig_every_message_signed(srv, zone):
    """A zone too big for one message: every message signed, dnspython
    checks each MAC (RFC 8945 5.3.1)."""
    z = zone
    key = srv.tsig_create("big-xfr." + z.name, z.name)
    for part in range(2):
        u = U.signed_update(z, key)
        for i in range(250):
            u.add(z.n("t%d-%03d" % (part, i)), 300, "TXT", "x" * 180)
        U.do_ok(z, u)
    z.settle()
    got, serial, nmsgs = axfr(srv, z.origin, key=key)
    assert nmsgs >= 2, "expected a multi-message AXFR"
    assert sum(1 for k in got if k[2] == "TXT") == 500
    assert serial == z.serial()
    by_addr, _, _ = axfr(srv, z.origin)
    assert_same_rrs(got, by_addr, "signed vs unsigned AXFR")


@pytest.mark.valgrind
def test_axfr_over_udp_formerr(srv):
    for source, key in ((XFR_SOURCE, None), ("127.0.0.1", "key")):
        k = srv.tsig_create("udp-axfr", "example.net").key if key else None
        rcode, _rd, m = query_rcode(srv, NET, "AXFR", key=k, source=source, tcp=False)
        assert rcode == dns.rcode.FORMERR, dns.rcode.to_text(rcode)
        assert not m.answer


@pytest.mark.valgrind
def test_transfer_refused_without_authority(srv, api, zone):
    z = zone
    no_xfr = srv.tsig_create("no-xfr." + z.name, z.name, transfer=False)
    other = U.Zone(srv, api, "xfr-other")
    foreign = srv.tsig_create("foreign-xfr." + other.name, other.name)
    good = srv.tsig_create("good-xfr." + z.name, z.name)
    s = z.serial()
    for rdtype in ("AXFR", "IXFR"):
        serial = s - 1 if rdtype == "IXFR" else None
        for what, key, source in (("unsigned from 127.0.0.1", None, "127.0.0.1"),
                                  ("unsigned from the update source", None, UPDATE_SOURCE),
                                  ("--no-transfer key", no_xfr.key, "127.0.0.1"),
                                  ("key of another zone", foreign.key, "127.0.0.1")):
            rcode, _rd, m = query_rcode(srv, z.origin, rdtype, key=key, source=source,
                                        serial=serial)
            assert rcode == dns.rcode.REFUSED, "%s %s: %s" % (
                rdtype, what, dns.rcode.to_text(rcode))
            assert not m.answer, "%s %s leaked data" % (rdtype, what)
    # the --no-transfer key still updates; a key with transfer rights transfers
    u = U.signed_update(z, no_xfr)
    u.add(z.n("still-updates"), 300, "A", "192.0.2.1")
    U.do_ok(z, u)
    z.settle()
    got, _, _ = axfr(srv, z.origin, key=good)
    assert any(k[0] == "still-updates." + z.origin for k in got)
    # dig says so too
    cp = subprocess.run(["dig", "@127.0.0.1", "-p", str(srv.port), "-k", no_xfr.path,
                         "AXFR", z.origin], capture_output=True, text=True, timeout=20)
    assert "Transfer failed" in cp.stdout + cp.stderr, cp.stdout


def test_transfer_answers_carry_opt_when_asked_with_edns(srv, zone):
    """RFC 6891 §7: a request with an OPT gets one in its response. Transfer
    answers had none, refused or served, signed or not (knotd adds it)."""
    import socket
    import struct
    z = zone
    good = srv.tsig_create("opt-xfr." + z.name, z.name)

    def first_message(source, edns, key=None, rdtype="AXFR"):
        q = dns.message.make_query(z.origin, rdtype, use_edns=0 if edns else None)
        if key is not None:
            q.use_tsig(key.keyring, keyname=key.name, algorithm=key.algorithm)
        wire = q.to_wire()
        with socket.socket() as s:
            s.bind((source, 0))
            s.settimeout(5)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(struct.pack("!H", len(wire)) + wire)
            head = b""
            while len(head) < 2:
                head += s.recv(2 - len(head))
            (n,) = struct.unpack("!H", head)
            data = b""
            while len(data) < n:
                data += s.recv(n - len(data))
        m, _owner, rd, _start = split_tsig(data)
        return m, rd

    for source, key, rcode in ((XFR_SOURCE, None, dns.rcode.NOERROR),
                               ("127.0.0.1", good, dns.rcode.NOERROR),
                               ("127.0.0.1", None, dns.rcode.REFUSED)):
        for edns in (True, False):
            m, rd = first_message(source, edns, key)
            assert m.rcode() == rcode, (source, edns, dns.rcode.to_text(m.rcode()))
            assert (m.edns == 0) == edns, (source, key, edns, m.edns)
            assert (rd is not None) == (key is not None)
    # a served transfer still reads whole, signed, with EDNS on
    got, _, _ = axfr(srv, z.origin, key=good)
    assert got


@pytest.mark.valgrind
def test_transfer_tsig_failures(srv, zone):
    z = zone
    key = srv.tsig_create("xfr-bad." + z.name, z.name)
    wrong = dns.tsig.Key(key.name + ".", "d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldCB3cm9uZw==",
                         key.algorithm + ".")
    unknown = dns.tsig.Key("nobody.", key.secret, key.algorithm + ".")
    for k, err in ((wrong, U.BADSIG), (unknown, U.BADKEY)):
        rcode, rd, m = query_rcode(srv, z.origin, "AXFR", key=k, source="127.0.0.1")
        assert rcode == dns.rcode.NOTAUTH and rd is not None and rd.error == err, (
            dns.rcode.to_text(rcode), rd)
        assert not m.answer
    # an audit line at info with the key, the client and why
    for name, why in ((key.name, "BADSIG: the MAC does not verify"),
                      ("nobody", "BADKEY: no key of that name")):
        assert re.search(r"info: audit: transfer refused zone=%s kind=AXFR key=%s\. "
                         r"client=127\.0\.0\.1#\d+ rcode=NOTAUTH tsig_error=\w+ "
                         r'reason="%s' % (re.escape(z.origin), re.escape(name), why),
                         srv.log()), srv.log()[-2000:]


@pytest.mark.valgrind
def test_axfr_snapshot_is_consistent_under_updates(srv, zone):
    """Every UPDATE sets x and y to the same address in one transaction:
    no AXFR taken meanwhile may show them different (one snapshot)."""
    z = zone
    update(z, ("add", (z.n("x"), 300, "A", "10.0.0.0")), ("add", (z.n("y"), 300, "A", "10.0.0.0")))
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        while not stop.is_set():
            i += 1
            u = U.unsigned_update(z)
            for n in ("x", "y"):
                u.delete(z.n(n), "A")
                u.add(z.n(n), 300, "A", "10.0.%d.%d" % (i // 250 % 250, i % 250))
            try:
                r = dns.message.from_wire(U.send(z, u, source=UPDATE_SOURCE))
                if r.rcode() != dns.rcode.NOERROR:
                    errors.append(dns.rcode.to_text(r.rcode()))
            except Exception as e:   # noqa: BLE001
                errors.append(repr(e))
    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(15):
            got, _serial, _ = axfr(srv, z.origin)
            xs = sorted(k[3] for k in got if k[0] == "x." + z.origin and k[2] == "A")
            ys = sorted(k[3] for k in got if k[0] == "y." + z.origin and k[2] == "A")
            assert len(xs) == 1 and xs == ys, "inconsistent AXFR: x %s y %s" % (xs, ys)
    finally:
        stop.set()
        t.join()
    assert not errors, errors[:5]


# ------------------------------------------------------------------ IXFR

def _versions(srv, z, key):
    """Make a history of changes through UPDATE and the API; return
    {serial: rrs} with an AXFR of every version."""
    snaps = {}

    def snap():
        s = z.settle()
        got, serial, _ = axfr(srv, z.origin, key=key)
        assert serial == s
        snaps[s] = got
    snap()
    update(z, ("add", (z.n("a"), 300, "A", "192.0.2.1")),
           ("add", (z.n("a"), 300, "A", "192.0.2.2")), ("add", (z.n("gone"), 300, "TXT", "tmp")))
    snap()
    rec = z.add_api(z.n("api"), "TXT", "one")
    snap()
    update(z, ("delete", (z.n("gone"),)), ("delete", (z.n("a"), "A", "192.0.2.1")),
           ("add", (z.n("c"), 60, "CNAME", z.n("a"))))
    snap()
    z.api.ok("PATCH", "/zones/%s/dns_records/%s" % (z.id, rec["id"]),
             json={"content": "two", "ttl": 900})
    snap()
    update(z, ("add", (z.n("a"), 120, "A", "192.0.2.3")))      # new TTL for the RRset
    snap()
    z.api.ok("DELETE", "/zones/%s/dns_records/%s" % (z.id, rec["id"]))
    update(z, ("add", (z.n("mx"), 300, "MX", "10 a." + z.origin)))
    snap()
    return snaps


@pytest.mark.valgrind
def test_ixfr_from_every_version_is_the_condensed_difference(srv, zone):
    z = zone
    key = srv.tsig_create("ixfr." + z.name, z.name)
    snaps = _versions(srv, z, key)
    serials = sorted(snaps)
    cur = serials[-1]
    assert len(serials) >= 6
    for old in serials[:-1]:
        kind, val = parse_ixfr(ixfr_answer(srv, z.origin, old, key=key))
        assert kind == "ixfr", "IXFR from %d: got %s, expected an incremental answer" % (old, kind)
        assert len(val) == 1, "IXFR from %d: %d difference sequences, expected one (condensed)" % (
            old, len(val))
        (frm, to, dels, adds) = val[0]
        assert (frm, to) == (old, cur)
        before = {k: v for k, v in snaps[old].items() if k[2] != "SOA"}
        after = {k: v for k, v in snaps[cur].items() if k[2] != "SOA"}
        assert not set(dels) & set(adds), "an RR both deleted and added"
        assert set(dels) <= set(before), "deleted RRs that version %d did not have: %s" % (
            old, [dels[k] for k in set(dels) - set(before)])
        assert not set(adds) & set(before), "added RRs version %d already had" % old
        applied = {k: v for k, v in before.items() if k not in dels}
        applied.update(adds)
        assert_same_rrs(applied, after, "version %d + IXFR" % old)
    # the temporary TXT never shows in a difference that spans its whole life
    (_, _, dels, adds) = parse_ixfr(ixfr_answer(srv, z.origin, serials[0], key=key))[1][0]
    assert not any(k[0] == "gone." + z.origin for k in list(dels) + list(adds))

    # dnspython's own IXFR client applies it to the zone it had
    old_zone = dns.zone.Zone(z.origin, relativize=False)
    with old_zone.writer() as txn:
        for text in snaps[serials[0]].values():
            name, ttl, rtype, rdata = text.split(None, 3)
            txn.add(dns.rrset.from_text(name, int(ttl), "IN", rtype, rdata))
    q, _ = dns.xfr.make_query(old_zone, keyring=key.keyring, keyname=key.name,
                              keyalgorithm=key.algorithm)
    dns.query.inbound_xfr(srv.host, old_zone, q, port=srv.port, timeout=5, lifetime=30)
    assert_same_rrs(rrs_of_zone(old_zone), snaps[cur], "dnspython zone after inbound IXFR")

    # the same by address
    kind, val = parse_ixfr(ixfr_answer(srv, z.origin, serials[0]))
    assert kind == "ixfr" and len(val) == 1


@pytest.mark.valgrind
def test_ixfr_up_to_date_newer_and_udp(srv, zone):
    z = zone
    s0 = update(z, ("add", (z.n("u"), 300, "A", "192.0.2.1")))
    # the client already has the current version, or a newer one: one SOA
    for serial in (s0, s0 + 1000):
        items = ixfr_answer(srv, z.origin, serial)
        assert len(items) == 1 and is_soa(items[0]) and soa_serial_of(items[0]) == s0, items
    # over UDP: the SOA only (RFC 1995 2: the client then tries TCP)
    s1 = update(z, ("add", (z.n("v"), 300, "A", "192.0.2.2")))
    rcode, _rd, m = query_rcode(srv, z.origin, "IXFR", source=XFR_SOURCE, tcp=False, serial=s0)
    assert rcode == dns.rcode.NOERROR
    items = rr_list(m.answer)
    assert len(items) == 1 and is_soa(items[0]) and soa_serial_of(items[0]) == s1, items
    # a name that is no zone here, over UDP: NOTAUTH as over TCP (it was
    # answered as an SOA query at that name: a CNAME chain, a NODATA)
    for name in (z.n("u"), z.n("nothing"), "no-such-zone.test."):
        for tcp in (False, True):
            rcode, _rd, m = query_rcode(srv, name, "IXFR", source=XFR_SOURCE, tcp=tcp,
                                        serial=s0)
            assert rcode == dns.rcode.NOTAUTH and not m.answer, (name, tcp, rcode)


def test_ixfr_with_another_zones_soa_is_formerr(srv, zone):
    """The IXFR's authority SOA must be the zone's own, of its class (RFC
    1995 §3): another owner's was taken and its serial read as the
    client's (BIND and Knot answer FORMERR)."""
    z = zone
    s0 = update(z, ("add", (z.n("f"), 300, "A", "192.0.2.1")))
    for owner, rdclass in (("other.test.", "IN"), (z.origin, "CH"), (z.n("f"), "IN")):
        q = dns.message.make_query(z.origin, "IXFR")
        q.authority.append(dns.rrset.from_text(owner, 0, rdclass, "SOA",
                                               ". . %d 0 0 0 0" % (s0 - 1)))
        r = exchange_from(srv.host, srv.port, q.to_wire(), tcp=True, source=XFR_SOURCE)
        m = dns.message.from_wire(r)
        assert m.rcode() == dns.rcode.FORMERR and not m.answer, (owner, rdclass, m)
    # the zone's own, in any case, is taken
    q = dns.message.make_query(z.origin, "IXFR")
    q.authority.append(dns.rrset.from_text(z.origin.upper(), 0, "IN", "SOA",
                                           ". . %d 0 0 0 0" % s0))
    m = dns.message.from_wire(exchange_from(srv.host, srv.port, q.to_wire(), tcp=True,
                                            source=XFR_SOURCE))
    assert m.rcode() == dns.rcode.NOERROR and len(m.answer) == 1, m


def test_ixfr_from_a_serial_never_issued_is_axfr_form(srv, zone):
    """A serial inside a gap (the unixtime policy skips serials; a
    secondary restored from elsewhere may hold one) was answered with the
    events after it, an incremental answer from a version that never was:
    a Knot secondary applied it and kept, at the primary's serial, a
    record the primary never had. Only a version the journal holds gets
    differences; any other serial the whole zone (RFC 1995 §4), also one
    exactly 2^31 away (neither before nor after: it was "up to date")."""
    z = zone
    z.api.ok("PATCH", "/zones/%s" % z.id, json={"serial_policy": "unixtime"})
    a = update(z, ("add", (z.n("g1"), 300, "A", "192.0.2.1")))
    assert a <= time.time() + 5, a    # a serial of the time now
    while int(time.time()) < a + 2:   # the next version is the time then
        time.sleep(0.2)
    b = update(z, ("add", (z.n("g2"), 300, "A", "192.0.2.2")))
    assert b - a >= 2, (a, b)
    kind, val = parse_ixfr(ixfr_answer(srv, z.origin, a))
    assert kind == "ixfr" and val[0][:2] == (a, b), (kind, val)
    for never in (a + 1, b - 1, (b + 2 ** 31) % 2 ** 32):
        kind, _val = parse_ixfr(ixfr_answer(srv, z.origin, never))
        assert kind == "axfr", "IXFR from %d (never issued): %s" % (never, kind)


@pytest.mark.valgrind
@pytest.mark.parametrize("change", ["soa-settings", "zone-import"])
def test_ixfr_across_zone_wide_change_is_axfr_form(srv, zone, change):
    z = zone
    key = srv.tsig_create("ixfr-wide." + z.name, z.name)
    s0 = update(z, ("add", (z.n("before"), 300, "A", "192.0.2.1")))
    s1 = update(z, ("add", (z.n("before2"), 300, "A", "192.0.2.2")))
    if change == "soa-settings":
        z.api.ok("PATCH", "/zones/%s" % z.id, json={"soa": {"refresh": 7300}})
    else:
        text = srv.run_cli("zone", "export", "--data-dir", srv.data_dir, z.name).stdout
        path = os.path.join(srv.workdir, "%s.reimport" % z.name)
        with open(path, "w") as f:
            f.write(text + "\nimported.%s 300 IN TXT \"zone-wide\"\n" % z.origin)
        srv.import_zone(z.name, path)
    s2 = z.settle()
    assert s2 > s1
    s3 = update(z, ("add", (z.n("after"), 300, "A", "192.0.2.3")))
    now, serial, _ = axfr(srv, z.origin, key=key)
    assert serial == s3
    for old in (s0, s1):
        kind, val = parse_ixfr(ixfr_answer(srv, z.origin, old, key=key))
        assert kind == "axfr", "IXFR from %d across a %s: %s, expected the AXFR form" % (
            old, change, kind)
        assert_same_rrs(val, now, "AXFR-form IXFR from %d" % old)
    # from the zone-wide version on, the journal serves differences again
    kind, val = parse_ixfr(ixfr_answer(srv, z.origin, s2, key=key))
    assert kind == "ixfr" and len(val) == 1 and list(val[0][3]) and not val[0][2], (kind, val)
    assert [k[0] for k in val[0][3]] == ["after." + z.origin]
    # a serial the zone never had (older than the zone): AXFR form
    kind, val = parse_ixfr(ixfr_answer(srv, z.origin, (s0 - 100000) % 2**32, key=key))
    assert kind == "axfr"
    assert_same_rrs(val, now, "AXFR-form IXFR from an unknown serial")


def test_an_update_bumping_only_the_soa_serial_keeps_ixfr(srv, zone):
    """An UPDATE that replaces the SOA with its serial alone moved (a
    script bumping it, RFC 2136 section 3.6) is a version like any other:
    IXFR from before it is a difference (it was the whole zone, for every
    secondary: outside tester 32), the SOA served carries the new serial;
    one that changes another field is still zone-wide."""
    z = zone
    key = srv.tsig_create("soa-bump." + z.name, z.name)
    s0 = update(z, ("add", (z.n("before"), 300, "A", "192.0.2.1")))
    soa = dns.query.tcp(dns.message.make_query(z.origin, "SOA"), srv.host, port=srv.port,
                        timeout=5).answer[0]
    bumped = soa[0].replace(serial=(soa[0].serial + 5) % 2 ** 32)
    s1 = update(z, ("replace", (z.origin, soa.ttl, bumped)))
    assert s1 == bumped.serial, (s1, bumped.serial)
    s2 = update(z, ("add", (z.n("after"), 300, "A", "192.0.2.2")))
    now, serial, _ = axfr(srv, z.origin, key=key)
    assert serial == s2
    kind, val = parse_ixfr(ixfr_answer(srv, z.origin, s0, key=key))
    assert kind == "ixfr", "IXFR across a serial-only SOA UPDATE: %s" % kind
    assert [(a, b) for a, b, _d, _a in val] in ([(s0, s1), (s1, s2)], [(s0, s2)]), val
    added = [k[0] for seq in val for k in seq[3]]
    assert added == ["after." + z.origin], val
    # another field: zone-wide, as a settings change is
    other = bumped.replace(serial=(s2 + 1) % 2 ** 32, refresh=bumped.refresh + 1)
    s3 = update(z, ("replace", (z.origin, soa.ttl, other)))
    kind, _val = parse_ixfr(ixfr_answer(srv, z.origin, s2, key=key))
    assert kind == "axfr", "IXFR across an SOA UPDATE changing refresh: %s" % kind
    assert dns.query.tcp(dns.message.make_query(z.origin, "SOA"), srv.host, port=srv.port,
                         timeout=5).answer[0][0].refresh == bumped.refresh + 1
    assert s3 == other.serial


def test_a_client_that_reads_no_transfer_does_not_hold_the_stop(zonecast_api_factory):
    """A transfer whose client takes nothing ends at a stop within 100 ms
    of waiting, not at the idle timeout (here 60 s): one such client held
    every stop for it, UPDATEs refused meanwhile (outside tester 37)."""
    srv = zonecast_api_factory(options=[("allow-transfer", "127.0.0.1"),
                                        ("tcp-idle-timeout", "60")])
    # 5 MB: more than the sockets' buffers take
    path = os.path.join(srv.workdir, "stall.zone")
    with open(path, "w") as f:
        f.write("$ORIGIN stall.test.\n$TTL 300\n@ SOA ns1 h 1 7200 3600 1209600 300\n"
                "@ NS ns1\nns1 A 192.0.2.1\n")
        for i in range(20000):
            f.write("t%05d TXT \"%s\"\n" % (i, "x" * 250))
    srv.import_zone("stall.test", path)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((srv.host, srv.port))
    wire = dns.message.make_query("stall.test.", "AXFR").to_wire()
    s.sendall(struct.pack("!H", len(wire)) + wire)
    try:
        time.sleep(1.0)   # the transfer waits for the client now
        start = time.monotonic()
        problems = srv.stop(timeout=30 * servers.TIMEOUT_SCALE)
        took = time.monotonic() - start
    finally:
        s.close()
    assert not problems, problems
    assert took < 10 * servers.TIMEOUT_SCALE, "the stop took %.1f s" % took


# ------------------------------------------------------------------ NOTIFY

class NotifyListener:
    """UDP and TCP sockets on one port that record the NOTIFYs they get
    (RFC 1996 allows either transport) and answer them only when told to.

    A NOTIFY that is not this test's may reach the port: another zonecast
    (a concurrent run) whose target once had this port number, or a resend
    of an earlier episode of this test's own server (its start, a zone's
    creation). So tests count only what they can tell is theirs: NOTIFYs of
    a zone made for the test alone (NotifySetup), with the serials the test
    made, from the source the server sends its NOTIFYs from (`source`, set
    once a NOTIFY of such a zone came)."""

    def __init__(self, port=None):
        """On port (default: a free one)."""
        self.port = port or servers.free_port()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", self.port))
        self.tsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tsock.bind(("127.0.0.1", self.port))
        self.tsock.listen(16)
        self.got = []               # (time, message, peer)
        self.answer = True
        self.source = None          # (addr, port): only NOTIFYs from there count
        self._stop = False
        self._threads = [threading.Thread(target=self._run, daemon=True),
                         threading.Thread(target=self._run_tcp, daemon=True)]
        for t in self._threads:
            t.start()

    def _record(self, data, peer):
        try:
            m = dns.message.from_wire(data)
        except Exception:   # noqa: BLE001 - a malformed NOTIFY is recorded as such
            m = None
        self.got.append((time.monotonic(), m, peer))
        if m is None or not self.answer:
            return None
        r = dns.message.make_response(m)
        r.flags |= dns.flags.AA
        return r.to_wire()

    def _run(self):
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                data, peer = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            r = self._record(data, peer)
            if r is not None:
                self.sock.sendto(r, peer)

    def _run_tcp(self):
        self.tsock.settimeout(0.1)
        while not self._stop:
            try:
                conn, peer = self.tsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    while True:
                        (ln,) = struct.unpack("!H", servers.recv_exact(conn, 2))
                        r = self._record(servers.recv_exact(conn, ln), peer)
                        if r is None:
                            break   # unanswered: drop the connection
                        conn.sendall(struct.pack("!H", len(r)) + r)
                except (OSError, ConnectionError):
                    pass

    def notifies(self, zone=None, since=0.0, serials=None):
        """(time, message) of the NOTIFYs got from `source` (once known), of
        zone, at or after since, announcing one of serials (or no SOA)."""
        out = []
        for t, m, peer in list(self.got):
            if self.source is not None and peer != self.source:
                continue
            assert m is not None, "a NOTIFY dnspython cannot parse"
            if t < since or (zone is not None and
                             m.question[0].name != dns.name.from_text(zone)):
                continue
            if serials is None or LS(m) is None or LS(m) in serials:
                out.append((t, m))
        return out

    def wait_serial(self, zone, serial, since, timeout=5.0):
        """Until a NOTIFY for zone announces serial (or, carrying no SOA --
        RFC 1996 3.7 makes it optional -- any NOTIFY after `since`)."""
        self.wait(lambda: self.notifies(zone, since, {serial}),
                  "NOTIFY %s serial %d" % (zone, serial), timeout=timeout)
        return self.notifies(zone, since, {serial})[0][1]

    @staticmethod
    def serial_of(m):
        soas = [r for r in m.answer if r.rdtype == dns.rdatatype.SOA]
        return soas[0][0].serial if soas else None

    def wait(self, cond, what, timeout=5.0):
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                pytest.fail("NOTIFY: timed out waiting for %s; got %s" % (
                    what, [(round(t, 3), peer, m and m.question[0].name.to_text(),
                            m and self.serial_of(m)) for t, m, peer in list(self.got)]))
            time.sleep(0.01)

    def close(self):
        self._stop = True
        for t in self._threads:
            t.join()
        self.sock.close()
        self.tsock.close()


class NotifySetup:
    """A zonecast notifying two listeners, a and b, and two zones made for
    this test alone (z1, z2: named after this process and the server's
    port, so no other server has them), whose first NOTIFY both listeners
    answered. The listeners' `source` is where that NOTIFY came from."""

    def __init__(self, factory, timeout_ms):
        self.a, self.b = NotifyListener(), NotifyListener()
        self.srv = factory(options=[("notify", "127.0.0.1:%d" % self.a.port),
                                    ("notify", "127.0.0.1:%d" % self.b.port),
                                    ("notify-timeout", str(timeout_ms)),
                                    ("notify-retries", "2"),
                                    ("allow-update", "127.0.0.1")])
        api = self.srv.client()
        prefix = "nt%d-%d-" % (os.getpid(), self.srv.port)
        self.z1, self.z2 = U.Zone(self.srv, api, prefix), U.Zone(self.srv, api, prefix)
        for z in (self.z1, self.z2):
            z.created = z.settle()
        for lst in (self.a, self.b):
            for z in (self.z1, self.z2):
                lst.wait_serial(z.origin, z.created, 0.0)
            firsts = {(dns.name.from_text(z.origin), z.created) for z in (self.z1, self.z2)}
            peers = {peer for _, m, peer in list(lst.got)
                     if m is not None and (m.question[0].name, LS(m)) in firsts}
            assert len(peers) == 1, "NOTIFYs of one zone from several sources: %s" % peers
            lst.source = peers.pop()

    def close(self):
        self.a.close()
        self.b.close()


@pytest.fixture
def notify_setup(zonecast_api_factory):
    """notify-timeout 200 ms, notify-retries 2."""
    s = NotifySetup(zonecast_api_factory, 200)
    yield s
    s.close()


def _update_from_localhost(srv, zone, name, addr):
    u = dns.update.UpdateMessage(zone)
    u.add(name, 300, "A", addr)
    r = dns.query.tcp(u, srv.host, port=srv.port, timeout=3)
    assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
    deadline = time.monotonic() + U.DNS_WAIT
    while True:
        m = srv.query(name, "A")
        if any(rd.to_text() == addr for rr in m.answer for rd in rr):
            # read after the record shows: the serial that carries it
            return U.soa_serial(srv, zone)
        assert time.monotonic() < deadline, "update not served"
        time.sleep(0.01)


def _notify_state(srv, zone, lst):
    """What the server noted of its last NOTIFY of zone to lst (`zonecast
    zone status`): {"serial", "result", "tries", ...} or None."""
    out = json.loads(srv.run_cli("zone", "status", "--json", "--data-dir", srv.data_dir,
                                 zone).stdout)
    for p in out["zones"][0]["secondaries"]:
        if p["peer"] == "127.0.0.1:%d" % lst.port:
            return p["notify"]
    return None


def _wait_answered(srv, zone, lst, serial):
    """Until the server has taken lst's answer to the NOTIFY of serial: from
    then on nothing may resend it. Returns the tries it took."""
    def answered():
        st = _notify_state(srv, zone, lst)
        return st if st and st["serial"] == serial and st["result"] == "answered" else None
    return U.wait_for(answered, "%s: the answer to NOTIFY serial %d taken" % (zone, serial))["tries"]


def test_notify_on_every_new_serial(notify_setup):
    srv, a, b, z1, z2 = (notify_setup.srv, notify_setup.a, notify_setup.b,
                         notify_setup.z1, notify_setup.z2)
    before = {z: U.soa_serial(srv, z) for z in (EC, NET, SUB, z2.origin)}
    t0 = time.monotonic()
    s = _update_from_localhost(srv, z1.origin, "n1." + z1.origin, "192.0.2.1")
    for lst in (a, b):
        m = lst.wait_serial(z1.origin, s, t0)
        assert m.opcode() == dns.opcode.NOTIFY and not m.flags & dns.flags.QR
        assert m.flags & dns.flags.AA
        assert (m.question[0].rdtype, m.question[0].rdclass) == (dns.rdatatype.SOA,
                                                                  dns.rdataclass.IN)
    # only the changed zone is announced: any other zone's NOTIFY (a resend
    # of its first one, on a slow run) carries the serial it had before
    for _, m in a.notifies(since=t0) + b.notifies(since=t0):
        name = m.question[0].name.to_text()
        if name != z1.origin:
            assert name in before and LS(m) in (None, before[name]), \
                "%s announced serial %s without a change" % (name, LS(m))
    # answered: not resent (notify-timeout is 200 ms) once the server took
    # the answer
    tries = _wait_answered(srv, z1.origin, a, s)
    n = len(a.notifies(z1.origin, t0, {s}))
    assert n == tries, "%d NOTIFYs of serial %d, the server noted %d tries" % (n, s, tries)
    time.sleep(1.0)
    assert len(a.notifies(z1.origin, t0, {s})) == n, "an answered NOTIFY was resent"
    t1 = time.monotonic()
    s2 = _update_from_localhost(srv, z2.origin, "n2." + z2.origin, "192.0.2.2")
    a.wait_serial(z2.origin, s2, t1)
    b.wait_serial(z2.origin, s2, t1)


def LS(m):
    return NotifyListener.serial_of(m)


def test_unanswered_notify_is_retried_then_given_up(notify_setup):
    srv, a, b, z = notify_setup.srv, notify_setup.a, notify_setup.b, notify_setup.z1
    a.answer = False
    t0 = time.monotonic()
    s = _update_from_localhost(srv, z.origin, "r1." + z.origin, "192.0.2.1")
    # notify-timeout 200 ms doubling, notify-retries 2: sent 3 times in ~0.6 s
    mine = lambda: a.notifies(z.origin, t0, {s})  # noqa: E731
    a.wait(lambda: len(mine()) >= 3, "3 NOTIFYs (1 + 2 retries)")
    times = [t for t, _ in mine()]
    assert times[1] - times[0] >= 0.15, "resent before notify-timeout: %s" % times
    assert len({m.id for _, m in mine()}) == 1, "a resend is not the same NOTIFY (id)"
    time.sleep(2.0)
    assert len(mine()) == 3, "not 1 + notify-retries sends: %d" % len(mine())
    # the answering secondary: nothing after the server took its answer
    tries = _wait_answered(srv, z.origin, b, s)
    assert len(b.notifies(z.origin, t0, {s})) == tries == 1, \
        "the answering secondary got resends: %d" % len(b.notifies(z.origin, t0, {s}))


# Coalescing holds while the first NOTIFY waits for its answer, up to its
# first timeout; this test's updates must all land within it.
COALESCE_TIMEOUT_MS = 2000


@pytest.fixture
def notify_setup_slow(zonecast_api_factory):
    """notify-timeout COALESCE_TIMEOUT_MS, notify-retries 2."""
    s = NotifySetup(zonecast_api_factory, COALESCE_TIMEOUT_MS)
    yield s
    s.close()


def test_notify_coalesces_serials_while_one_is_in_flight(notify_setup_slow):
    srv, a, z = notify_setup_slow.srv, notify_setup_slow.a, notify_setup_slow.z1
    a.answer = False
    t0 = time.monotonic()   # before the first NOTIFY is sent: its timeout ends later
    # late NOTIFYs from elsewhere (another server that once had a's port)
    # with the serials this test is about to make: not counted
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.bind(("127.0.0.1", 0))
        for serial in range(z.created + 1, z.created + 7):
            decoy = dns.message.make_query(z.origin, "SOA")
            decoy.set_opcode(dns.opcode.NOTIFY)
            decoy.answer.append(dns.rrset.from_text(
                z.origin, 300, "IN", "SOA", "ns1.%s h.%s %d 1 1 1 1" % (z.origin, z.origin, serial)))
            other.sendto(decoy.to_wire(), ("127.0.0.1", a.port))
        src = other.getsockname()
        a.wait(lambda: sum(peer == src for _, _, peer in list(a.got)) == 6, "the decoys")
    s1 = _update_from_localhost(srv, z.origin, "c0." + z.origin, "192.0.2.1")
    a.wait_serial(z.origin, s1, t0)
    mids = [_update_from_localhost(srv, z.origin, "c%d.%s" % (i, z.origin),
                                   "192.0.2.%d" % (i + 1)) for i in range(1, 6)]
    a.answer = True
    within = time.monotonic() - t0 < COALESCE_TIMEOUT_MS / 1000.0
    last = mids[-1]
    a.wait_serial(z.origin, last, t0, timeout=3 * COALESCE_TIMEOUT_MS / 1000.0)
    got = a.notifies(z.origin, t0, set([s1] + mids))
    if not within:
        # the first NOTIFY timed out before the last update: from there on
        # a new serial goes out at once (the secondary does not answer)
        return
    # 6 serials while the first NOTIFY was in flight: the newest one rides
    # on its resend (same id), never one NOTIFY per serial
    seen = {LS(m) for _, m in got}
    assert seen - {None} <= {s1, last}, "intermediate serials notified one by one: %s" % seen
    assert len({m.id for _, m in got}) == 1, \
        "serials notified as new NOTIFYs while one was in flight: %s" % [
            (m.id, LS(m)) for _, m in got]
    assert len(got) <= 3, "%d NOTIFYs for 6 serials while one was in flight" % len(got)


# ------------------------------------------------------------------ real secondaries

SEC_ZONE = "sec.test."
SEC_FILE = """$ORIGIN sec.test.
$TTL 300
@       SOA ns1 hostmaster 1000 7200 3600 1209600 300
@       NS  ns1
@       NS  ns2
@       MX  10 mail
ns1     A   192.0.2.53
ns2     A   192.0.2.54
mail    A   192.0.2.25
www     A   192.0.2.80
www     AAAA 2001:db8::80
txt     TXT "one" "two"
"""


@pytest.fixture
def secondary_factory(tmp_path_factory):
    """make(cls, primary_port, zones, key=None, **kw) -> a secondary not
    started yet (its port is known); stopped and checked at teardown. kw go
    to the secondary's class (notify_key=True)."""
    import tempfile
    from conftest import _Running
    for b in (secondaries.named_bin(), servers.knotd_bin(), secondaries.nsd_bin()):
        if not os.access(b, os.X_OK):
            pytest.skip("%s not installed" % b)
    run = _Running(tmp_path_factory)

    def make(cls, primary_port, zones, key=None, **kw):
        workdir = tempfile.mkdtemp(prefix=cls.kind + "-", dir=tmp_path_factory.getbasetemp())
        sec = cls(workdir, primary_port, zones, key=key, **kw)
        run.started.append(sec)
        return sec
    yield make
    run.stop_all()


def _wait_synced(primary, secs, zone, timeout=SYNC_WAIT):
    want = U.soa_serial(primary, zone)
    for sec in secs:
        got = sec.wait_serial(zone, want, timeout=timeout)
        assert got == want, "%s serves serial %s, zonecast %s after %.0fs\n--- log tail ---\n%s" % (
            sec.kind, got, want, timeout, "\n".join(sec.xfr_log()[-15:]))
    return want


def _assert_same_data(primary, secs, zone, key):
    mine, serial, _ = axfr(primary, zone, key=key, source="127.0.0.1")
    for sec in secs:
        theirs = rrs_of_zone(sec.axfr(zone))
        assert_same_rrs(theirs, mine, "%s vs zonecast" % sec.kind)


@pytest.mark.parametrize("auth", [pytest.param("tsig", marks=pytest.mark.valgrind), "address"])
def test_bind_and_knot_secondaries_follow_by_ixfr(zonecast_api_factory, secondary_factory,
                                                  tmp_path, auth):
    zfile = tmp_path / "sec.test.zone"
    zfile.write_text(SEC_FILE)
    pport = servers.free_port()
    # keys are made on the data directory before the secondaries need them
    bind_key = knot_key = None
    bind = secondary_factory(secondaries.BindSecondary, pport, [SEC_ZONE])
    knot = secondary_factory(secondaries.KnotSecondary, pport, [SEC_ZONE])
    options = [("notify", "127.0.0.1:%d" % bind.port), ("notify", "127.0.0.1:%d" % knot.port),
               ("allow-update", "127.0.0.1")]
    if auth == "address":
        options.append(("allow-transfer", "127.0.0.1"))
    srv = zonecast_api_factory(zones={SEC_ZONE: str(zfile)}, port=pport, options=options)
    api = srv.client()
    zid = api.zone_id(SEC_ZONE)
    if auth == "tsig":
        bind_key = srv.tsig_create("bind-xfr", "sec.test")
        knot_key = srv.tsig_create("knot-xfr", "sec.test", algorithm="hmac-sha512")
        bind.key, knot.key = bind_key, knot_key
    key = bind_key
    bind.start()
    knot.start()
    secs = [bind, knot]
    _wait_synced(srv, secs, SEC_ZONE)
    _assert_same_data(srv, secs, SEC_ZONE, key)
    initial_axfrs = {s.kind: s.axfr_count() for s in secs}
    assert all(v == 1 for v in initial_axfrs.values()), initial_axfrs

    z = U.Zone.__new__(U.Zone)          # the test's view of sec.test (no new zone)
    z.srv, z.api, z.name, z.origin, z.id = srv, api, "sec.test", SEC_ZONE, zid

    def stream(tag, n):
        recs = []
        for i in range(n):
            r = api.ok("POST", "/zones/%s/dns_records" % zid,
                       json={"name": "api-%s-%d.sec.test" % (tag, i), "type": "A",
                             "content": "198.51.100.%d" % (i + 1), "ttl": 300})["result"]
            recs.append(r)
            u = dns.update.UpdateMessage(SEC_ZONE)
            u.add("upd-%s-%d.%s" % (tag, i, SEC_ZONE), 300, "TXT", "update %d" % i)
            u.add("upd-%s-%d.%s" % (tag, i, SEC_ZONE), 300, "AAAA", "2001:db8::%x" % (i + 1))
            if i % 3 == 1:
                u.delete("upd-%s-%d.%s" % (tag, i - 1, SEC_ZONE), "TXT")
                u.delete("www." + SEC_ZONE, "A")
                u.add("www." + SEC_ZONE, 60, "A", "192.0.2.%d" % (100 + i))
            r = dns.query.tcp(u, srv.host, port=srv.port, timeout=3)
            assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
            if i % 4 == 3:
                api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, recs[i - 1]["id"]),
                       json={"content": "203.0.113.%d" % i})
                api.ok("DELETE", "/zones/%s/dns_records/%s" % (zid, recs[i - 2]["id"]))
        z.settle()

    stream("a", 12)
    _wait_synced(srv, secs, SEC_ZONE)
    _assert_same_data(srv, secs, SEC_ZONE, key)
    for s in secs:
        assert s.ixfr_count() >= 1, "%s never did an IXFR:\n%s" % (s.kind, "\n".join(s.xfr_log()))
        assert s.axfr_count() == 1, "%s fell back to AXFR:\n%s" % (
            s.kind, "\n".join(s.xfr_log()))
    if auth == "tsig":
        assert "TSIG bind-xfr" in bind.log(), "BIND did not use the key"

    # both secondaries down while the zone changes; they catch up by IXFR
    before = {s.kind: s.ixfr_count() for s in secs}
    for s in secs:
        assert s.stop() == []
    stream("b", 6)
    for s in secs:
        s.restart()
    _wait_synced(srv, secs, SEC_ZONE)
    _assert_same_data(srv, secs, SEC_ZONE, key)
    for s in secs:
        assert s.ixfr_count() > before[s.kind], "%s did not catch up by IXFR:\n%s" % (
            s.kind, "\n".join(s.xfr_log()[-20:]))
        assert s.axfr_count() == 1, "%s caught up by AXFR:\n%s" % (
            s.kind, "\n".join(s.xfr_log()[-20:]))
    assert srv.verify().returncode == 0
