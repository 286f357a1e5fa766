#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the seed corpora under fuzz/corpus/ (deterministic; rerun after
changing a format). Queries come from dnspython, edge values follow the
format documented in src/edge/codec.h, zone files cover the directives."""
import os
import struct

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.rdatatype

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def queries():
    names = ["example.", "www.example.", "x.wild.example.", "b.ent.example.",
             "deep.sub.example.", "x.dn.example.", "loop1.example.",
             "big.example.", "nope.example.", "example.org.", "EXAMPLE."]
    types = ["A", "AAAA", "MX", "ANY", "DS", "NS", "TXT", "SOA", "CNAME",
             "DNAME", "SRV", "AXFR"]
    n = 0
    for name in names:
        for t in types:
            q = dns.message.make_query(name, t, use_edns=(n % 3 != 0),
                                       payload=512 + 100 * (n % 9),
                                       want_dnssec=(n % 2 == 0))
            write("query", "q%03d" % n, q.to_wire())
            n += 1
    q = dns.message.make_query("example.", "A", use_edns=0,
                               options=[dns.edns.GenericOption(3, b"")])
    write("query", "nsid", q.to_wire())
    q = dns.message.make_query("example.", "A")
    q.set_opcode(dns.opcode.NOTIFY)
    write("query", "notify", q.to_wire())
    wire = dns.message.make_query("example.", "A").to_wire()
    write("query", "trailing", wire + b"\x00\x01")
    write("query", "short", wire[:15])
    write("query", "compression_loop",
          wire[:12] + b"\xc0\x0c\x00\x01\x00\x01")


def node(flags, seq, rrsets):
    out = struct.pack(">BBQH", 1, flags, seq, len(rrsets))
    for rtype, ttl, rdatas in rrsets:
        out += struct.pack(">HIH", rtype, ttl, len(rdatas))
        for rd in rdatas:
            out += struct.pack(">H", len(rd)) + rd
    return out


def edge_values():
    write("edge_decode", "a", node(0, 5, [(1, 300, [b"\xc0\x00\x02\x01"])]))
    write("edge_decode", "multi", node(1, 9, [
        (1, 60, [b"\x01\x02\x03\x04", b"\x01\x02\x03\x05"]),
        (2, 60, [b"\x02ns\x00"]), (16, 5, [b"\x03abc"])]))
    write("edge_decode", "empty", node(0, 0, []))
    soa = b"\x02ns\x00\x04host\x00" + struct.pack(">IIIII", 1, 2, 3, 4, 5)
    apex = b"\x07example\x00"
    zone = struct.pack(">BBQQIB", 1, 0, 1, 2, 3, len(apex)) + apex
    zone += struct.pack(">IH", 3600, len(soa)) + soa
    write("edge_decode", "zone", zone)


def zonefiles():
    write("zonefile", "basic", b"$ORIGIN example.\n$TTL 300\n"
          b"@ IN SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n"
          b"www CNAME @\n*.w TXT \"a\" \"b\"\n")
    write("zonefile", "types", b"$TTL 60\n@ SOA ns h 1 2 3 4 5\n"
          b"a HTTPS 1 . alpn=h2 port=8443\nb SVCB 0 other.\n"
          b"c CAA 0 issue \"ca.example\"\n"
          b"_443._tcp TLSA 3 1 1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
          b"d NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:a@b!\" .\n"
          b"e TYPE65000 \\# 3 010203\nf DS 1 13 2 "
          b"0000000000000000000000000000000000000000000000000000000000000000\n")
    write("zonefile", "errors", b"@ SOA ns\nbad line here\n$INCLUDE /nonexistent\n"
          b"x IN A 999.1.1.1\n( unbalanced\n")


def updates():
    """RFC 2136 messages for the update target: every prerequisite and
    update kind, signed with fuzz/update.c's key or not."""
    import dns.rdata
    import dns.rdataclass
    import dns.tsigkeyring
    import dns.update
    ring = dns.tsigkeyring.from_text(
        {"fuzzkey.": ("hmac-sha256",
                      __import__("base64").b64encode(
                          b"zonecast-fuzz-secret-0123456789\0").decode())})
    n = 0

    def out(u):
        nonlocal n
        write("update", "u%03d" % n, u.to_wire())
        n += 1

    for signed in (False, True):
        kw = {"keyring": ring, "keyname": "fuzzkey."} if signed else {}
        u = dns.update.UpdateMessage("example.", **kw)
        u.add("new", 300, "A", "192.0.2.77")
        u.add("new", 300, "TXT", "hello")
        out(u)
        u = dns.update.UpdateMessage("example.", **kw)
        u.present("web")
        u.present("web", "A")
        u.absent("nope")
        u.absent("web", "AAAA")
        u.present("web", dns.rdata.from_text("IN", "A", "192.0.2.80"))
        u.replace("web", 60, "A", "192.0.2.81")
        out(u)
        u = dns.update.UpdateMessage("example.", **kw)
        u.delete("mail", "AAAA")
        u.delete("big")
        u.delete("ns", "A", "192.0.2.1")
        u.delete("example.", "NS")
        u.add("www", 300, "A", "192.0.2.5")
        u.add("x", 300, "CNAME", "web")
        out(u)
        u = dns.update.UpdateMessage("example.", **kw)
        u.add("example.", 300, "SOA", "ns hostmaster 99 7200 900 1209600 60")
        u.add("sig", 300, "NSEC", "next A")
        out(u)
        u = dns.update.UpdateMessage("example.org.", **kw)
        u.add("a", 300, "A", "192.0.2.1")
        out(u)


if __name__ == "__main__":
    queries()
    edge_values()
    zonefiles()
    updates()
