"""EDNS on every path (RFC 6891): transfers, TSIG-signed queries and the
query path's edge cases, against what BIND and knotd answer (outside
tester 35). A transfer of EDNS version 1 is BADVERS and one with a
malformed COOKIE FORMERR (it was sent whole); transfer messages and
signed queries carry NSID and the server cookie when asked (they carried
neither); EXPIRE (RFC 7314) gives the zone's SOA EXPIRE; a long NSID is
left out rather than the answer failing (it was SERVFAIL), and no answer
to a UDP query is larger than its payload (a NOTIFY's was 561 octets for
512).
"""
import socket
import struct
import time

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig
import pytest

import servers
from conftest import XFR_SOURCE, _Running
from servers import exchange_from, recv_exact

NSID = "edns-test-node"
ZONE = "example.com."
EXPIRE_CODE = 9


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    run = _Running(tmp_path_factory)
    yield run.start(servers.ZonecastServer, api=True, nsid=NSID,
                    options=[("allow-transfer", XFR_SOURCE)])
    run.stop_all()


def soa_expire(srv, zone=ZONE):
    r = dns.query.tcp(dns.message.make_query(zone, "SOA"), srv.host, port=srv.port, timeout=5)
    return r.answer[0][0].expire


def transfer(srv, q, source=XFR_SOURCE):
    """The raw messages answering a transfer request, up to its closing
    SOA or its first error."""
    wire = q.to_wire()
    out = []
    with socket.create_connection((srv.host, srv.port), timeout=10,
                                  source_address=(source, 0)) as s:
        s.sendall(struct.pack("!H", len(wire)) + wire)
        soas = 0
        while True:
            (ln,) = struct.unpack("!H", recv_exact(s, 2))
            m = recv_exact(s, ln)
            out.append(m)
            parsed = dns.message.from_wire(m, one_rr_per_rrset=True)
            if parsed.rcode() != dns.rcode.NOERROR or len(out) > 1000:
                return out   # an error (or a runaway stream)
            soas += sum(1 for r in parsed.answer if r.rdtype == dns.rdatatype.SOA)
            if soas >= 2 or (q.question[0].rdtype == dns.rdatatype.IXFR and soas == 1
                             and len(out) == 1 and len(parsed.answer) == 1):
                return out   # the closing SOA, or an IXFR's up-to-date SOA


def options_of(msg):
    return {o.otype: o for o in msg.options}


def cookie_option(client=b"\x01\x02\x03\x04\x05\x06\x07\x08"):
    return dns.edns.GenericOption(dns.edns.COOKIE, client)


# --------------------------------------------------------- transfers' EDNS

@pytest.mark.parametrize("rdtype", ["AXFR", "IXFR"])
def test_a_transfer_of_edns_version_1_is_badvers(srv, rdtype):
    q = dns.message.make_query(ZONE, rdtype, use_edns=0)
    if rdtype == "IXFR":
        q.authority.append(dns.rrset.from_text(ZONE, 0, "IN", "SOA",
                                               ". . 1 1 1 1 1"))
    q.use_edns(1)
    msgs = transfer(srv, q)
    assert len(msgs) == 1, "the zone was sent: %d messages" % len(msgs)
    r = dns.message.from_wire(msgs[0])
    assert r.rcode() == dns.rcode.BADVERS, dns.rcode.to_text(r.rcode())
    assert r.edns == 0 and not r.answer


@pytest.mark.parametrize("length", [3, 5, 41])
def test_a_transfer_with_a_malformed_cookie_is_formerr(srv, length):
    q = dns.message.make_query(ZONE, "AXFR", use_edns=0,
                               options=[cookie_option(b"c" * length)])
    msgs = transfer(srv, q)
    assert len(msgs) == 1, "the zone was sent: %d messages" % len(msgs)
    r = dns.message.from_wire(msgs[0])
    assert r.rcode() == dns.rcode.FORMERR and not r.answer


def test_transfer_messages_carry_nsid_cookie_and_expire(srv):
    """Every message of a multi-message AXFR: NSID, the server cookie for
    the client's and EXPIRE, DO copied; without the options, none."""
    api = srv.client()
    zid = api.ok("POST", "/zones", json={"name": "big-edns.test"})["result"]["id"]
    recs = [{"type": "TXT", "name": "t%03d.big-edns.test" % i, "content": "x" * 200}
            for i in range(600)]
    api.ok("POST", "/zones/%s/dns_records/batch?wait=live" % zid, json={"posts": recs})
    expire = soa_expire(srv, "big-edns.test.")
    q = dns.message.make_query("big-edns.test.", "AXFR", use_edns=0, want_dnssec=True,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b""),
                                        cookie_option(),
                                        dns.edns.GenericOption(EXPIRE_CODE, b"")])
    msgs = [dns.message.from_wire(m) for m in transfer(srv, q)]
    assert len(msgs) >= 2, "expected a multi-message AXFR"
    assert sum(len(m.answer) for m in msgs) >= 600
    for m in msgs:
        opts = options_of(m)
        assert opts[dns.edns.NSID].data == NSID.encode(), m.options
        cookie = opts[dns.edns.COOKIE].data
        assert cookie[:8] == b"\x01\x02\x03\x04\x05\x06\x07\x08" and len(cookie) in (24, 40)
        assert struct.unpack("!I", opts[EXPIRE_CODE].data)[0] == expire
        assert m.ednsflags & dns.flags.DO
    plain = [dns.message.from_wire(m)
             for m in transfer(srv, dns.message.make_query("big-edns.test.", "AXFR",
                                                           use_edns=0))]
    assert all(m.edns == 0 and m.options == () for m in plain)
    assert sum(len(m.answer) for m in plain) == sum(len(m.answer) for m in msgs)
    # A refused transfer's error carries them too (NOTAUTH for a name
    # that is no zone here).
    q = dns.message.make_query("not-a-zone.test.", "AXFR", use_edns=0,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b"")])
    r = dns.message.from_wire(transfer(srv, q)[0])
    assert r.rcode() == dns.rcode.NOTAUTH
    assert options_of(r)[dns.edns.NSID].data == NSID.encode()


# ------------------------------------------------------ TSIG-signed queries

@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_a_signed_query_gets_nsid_and_a_server_cookie(srv, tcp):
    key = srv.tsig_create("edns-q-%s" % ("tcp" if tcp else "udp"), "example.com")
    q = dns.message.make_query(ZONE, "SOA", use_edns=0,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b""),
                                        cookie_option()])
    q.use_tsig(key.keyring, keyname=key.name, algorithm=key.algorithm)
    send = dns.query.tcp if tcp else dns.query.udp
    r = send(q, srv.host, port=srv.port, timeout=5)   # checks the answer's TSIG
    assert r.rcode() == dns.rcode.NOERROR and r.had_tsig
    opts = options_of(r)
    assert opts[dns.edns.NSID].data == NSID.encode(), r.options
    assert len(opts[dns.edns.COOKIE].data) in (24, 40)
    # The server cookie it gave is one the server takes back as valid: a
    # query carrying it gets the same server cookie's kind (no BADCOOKIE).
    q2 = dns.message.make_query(ZONE, "SOA", use_edns=0,
                                options=[dns.edns.GenericOption(dns.edns.COOKIE,
                                                                opts[dns.edns.COOKIE].data)])
    r2 = dns.query.udp(q2, srv.host, port=srv.port, timeout=5)
    assert r2.rcode() == dns.rcode.NOERROR


# ---------------------------------------------------------------- EXPIRE

def test_expire_gives_the_zones_soa_expire(srv):
    expire = soa_expire(srv)
    for qtype in ("SOA", "A", "IXFR"):
        q = dns.message.make_query(ZONE, qtype, use_edns=0,
                                   options=[dns.edns.GenericOption(EXPIRE_CODE, b"")])
        if qtype == "IXFR":
            q.authority.append(dns.rrset.from_text(ZONE, 0, "IN", "SOA", ". . 1 1 1 1 1"))
        r = dns.query.udp(q, srv.host, port=srv.port, timeout=5)
        got = options_of(r).get(EXPIRE_CODE)
        assert got is not None and struct.unpack("!I", got.data)[0] == expire, (qtype, r)
    # not asked: not given; not our zone: none either
    r = dns.query.udp(dns.message.make_query(ZONE, "SOA", use_edns=0), srv.host,
                      port=srv.port, timeout=5)
    assert EXPIRE_CODE not in options_of(r)
    q = dns.message.make_query("elsewhere.invalid.", "SOA", use_edns=0,
                               options=[dns.edns.GenericOption(EXPIRE_CODE, b"")])
    r = dns.query.udp(q, srv.host, port=srv.port, timeout=5)
    assert r.rcode() == dns.rcode.REFUSED and EXPIRE_CODE not in options_of(r)


# ------------------------------------------------------------ a long NSID

@pytest.fixture(scope="module")
def long_nsid(tmp_path_factory):
    run = _Running(tmp_path_factory)
    yield run.start(servers.ZonecastServer, nsid="n" * 255)
    run.stop_all()


def long_name(zone=ZONE, total=250):
    labels = []
    name = zone
    while len(name) + 64 <= total:
        labels.append("a" * 63)
        name = "a" * 63 + "." + name
    rest = total - len(name) - 1
    if rest > 0:
        name = "b" * rest + "." + name
    return name


@pytest.mark.parametrize("opcode", ["QUERY", "NOTIFY", "STATUS"])
def test_a_long_nsid_is_left_out_rather_than_the_answer(long_nsid, opcode):
    """A 255-octet NSID, a 250-octet question and a payload of 512: the
    answer comes, NSID left out where it does not fit (named's minimal
    answer, RFC 6891 section 7), never over 512 octets."""
    name = long_name()
    q = dns.message.make_query(name, "A", use_edns=0, payload=512,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b""),
                                        cookie_option()])
    q.set_opcode(dns.opcode.from_text(opcode))
    wire = exchange_from(long_nsid.host, long_nsid.port, q.to_wire(), tcp=False)
    assert wire is not None and len(wire) <= 512, len(wire or b"")
    r = dns.message.from_wire(wire)
    want = {"QUERY": dns.rcode.NXDOMAIN, "NOTIFY": dns.rcode.NOTAUTH,
            "STATUS": dns.rcode.NOTIMP}[opcode]
    assert r.rcode() == want, dns.rcode.to_text(r.rcode())
    assert dns.edns.COOKIE in options_of(r)
    # with room (a short name, or TCP), NSID is given
    q = dns.message.make_query("www." + ZONE, "A", use_edns=0, payload=512,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b"")])
    r = dns.query.udp(q, long_nsid.host, port=long_nsid.port, timeout=5)
    assert options_of(r)[dns.edns.NSID].data == b"n" * 255


@pytest.mark.parametrize("payload", [None, 512, 1232])
def test_a_signed_udp_answer_keeps_room_for_its_tsig(srv, payload):
    """A TSIG-signed query over UDP gets an answer that is signed and,
    with its TSIG, within the requester's payload (RFC 8945 section 5.3,
    RFC 6891 section 6.2.5; TC when the data does not fit): the answer
    was made to the payload and the TSIG put on top (521 octets for 512),
    and near 1,232 it went out unsigned (outside tester 36)."""
    api = srv.client()
    zid = api.zone_id(ZONE)
    name = "sized-%s.%s" % (payload, ZONE)
    # answers of every size around the limits: TXT records of 100 octets
    for i in range(14):
        api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
               json={"type": "TXT", "name": name, "content": "%02d" % i + "y" * 98})
    key = srv.tsig_create("udp-size-%s" % payload, "example.com")
    limit = payload or 512
    for count in (3, 4, 5, 9, 10, 11, 12, 13, 14):
        if count < 14:
            api_name = "c%d.%s" % (count, name)
            for i in range(count):
                api.ok("POST", "/zones/%s/dns_records?wait=live" % zid,
                       json={"type": "TXT", "name": api_name,
                             "content": "%02d" % i + "z" * 98})
        else:
            api_name = name
        q = dns.message.make_query(api_name, "TXT", use_edns=payload is not None,
                                   payload=payload or 512,
                                   options=[dns.edns.GenericOption(dns.edns.NSID, b""),
                                            cookie_option()] if payload else None)
        q.use_tsig(key.keyring, keyname=key.name, algorithm=key.algorithm)
        wire = exchange_from(srv.host, srv.port, q.to_wire(), tcp=False)
        assert wire is not None
        assert len(wire) <= limit, (count, len(wire), limit)
        r = dns.message.from_wire(wire, keyring=key.keyring, request_mac=q.mac)
        assert r.had_tsig, count   # and from_wire checked its MAC
        assert r.rcode() == dns.rcode.NOERROR
        assert r.flags & dns.flags.TC or len(r.answer[0]) == count, (count, r.flags)


@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_a_signed_query_for_a_server_cookie_alone(srv, tcp):
    """RFC 7873 section 5.4 with TSIG: no question, a COOKIE, signed: NOERROR
    with the server cookie, signed, as unsigned (it was FORMERR: the
    parse takes the TSIG out of ARCOUNT; outside tester 38)."""
    key = srv.tsig_create("noq-cookie-%s" % ("tcp" if tcp else "udp"), "example.com")
    m = dns.message.Message()
    m.use_edns(0, options=[cookie_option()])
    m.use_tsig(key.keyring, keyname=key.name, algorithm=key.algorithm)
    wire = exchange_from(srv.host, srv.port, m.to_wire(), tcp=tcp)
    assert wire is not None
    r = dns.message.from_wire(wire, keyring=key.keyring, request_mac=m.mac)
    assert r.had_tsig
    assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
    assert len(options_of(r)[dns.edns.COOKIE].data) in (24, 40)


def test_a_signed_udp_answer_with_no_room_left_is_cut_not_failed(srv):
    """A TSIG of a 250-octet key name and HMAC-SHA512 leaves, at a payload
    of 512 and with a 200-octet question, no room for the OPT: the answer
    comes (TC where its data does not fit), signed, not SERVFAIL (outside
    tester 38)."""
    keyname = ".".join(["k" * 61] * 4)
    key = srv.tsig_create(keyname, "example.com", algorithm="hmac-sha512")
    qname = ".".join(["q" * 60] * 3) + "." + ZONE
    q = dns.message.make_query(qname, "A", use_edns=0, payload=512,
                               options=[cookie_option()])
    q.use_tsig(key.keyring, keyname=key.name, algorithm=key.algorithm)
    wire = exchange_from(srv.host, srv.port, q.to_wire(max_size=65535), tcp=False)
    assert wire is not None
    r = dns.message.from_wire(wire, keyring=key.keyring, request_mac=q.mac)
    assert r.had_tsig
    assert r.rcode() in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN), dns.rcode.to_text(r.rcode())
    assert r.edns == 0 and dns.edns.COOKIE in options_of(r)


def test_a_tsig_error_over_udp_keeps_to_the_payload(long_nsid):
    """A BADTIME answer over UDP to a query asking for NSID at a payload of
    512, under a 255-octet NSID: within 512 octets, the NSID and cookie
    left out where they do not fit (it was 522 octets: outside tester
    38)."""
    key = long_nsid.tsig_create("badtime-udp", "example.com")
    qname = ".".join(["q" * 60, "r" * 60]) + "." + ZONE
    q = dns.message.make_query(qname, "A", use_edns=0, payload=512,
                               options=[dns.edns.GenericOption(dns.edns.NSID, b""),
                                        cookie_option()])
    wire, _ = servers.tsig_sign(q.to_wire(), key.key, time_signed=int(time.time()) - 3600)
    resp = exchange_from(long_nsid.host, long_nsid.port, wire, tcp=False)
    assert resp is not None and len(resp) <= 512, len(resp or b"")
    assert resp[3] & 0x0F == dns.rcode.NOTAUTH
