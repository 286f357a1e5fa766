#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the seed corpora under fuzz/corpus/ (rerun after changing a
format; `make_seeds.py TARGET...` writes only those targets' seeds).
Queries and transfer requests come from dnspython, edge values follow the
format documented in src/edge/codec.h, zone files cover the directives,
API requests are "METHOD\nURL\nHEADERS\n\nBODY"."""
import os
import struct

import dns.edns
import dns.flags
import dns.message
import dns.name
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
    reason = b"per-record build failed at www.example.: value too large"
    quarantine = struct.pack(">BBQQQQIIiB", 1, 1, 7, 1764744000123, 1764744001000, 99,
                             2024010101, 3, -2011, len(apex)) + apex
    quarantine += struct.pack(">H", len(reason)) + reason
    write("edge_decode", "quarantine", quarantine)
    keysets()


# Throwaway keys for the seeds only (PKCS#8 PEM, as signer_key_generate()
# writes them): an ECDSA P-256 one and an Ed25519 one.
PEM_P256 = (b"-----BEGIN PRIVATE KEY-----\n"
            b"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgU2WDfZw1eH32kdp7\n"
            b"m4JOWWcwgF85bB4T0CwI2yzCqTGhRANCAARE8WobEYX+N3csRoX7Yq7bw1ph/xqU\n"
            b"mzTr8s6y7vbARrRlCzZDHS6p0q4pqbXXiWNLElfe60Cvb2iGytilEUtF\n"
            b"-----END PRIVATE KEY-----\n")
PEM_ED25519 = (b"-----BEGIN PRIVATE KEY-----\n"
               b"MC4CAQAwBQYDK2VwBCIEIIQlK5plMUSxN44M7bx4r4bebfgz4lYleeuIOniRDEnW\n"
               b"-----END PRIVATE KEY-----\n")


def keyset_key(flags, alg, active, pem):
    return struct.pack(">HBBH", flags, alg, active, len(pem)) + pem


def keyset(keys, version=2, count=None):
    """A keyset value (src/edge/codec.h); version 1: the unmarked form
    written before keysets had a version byte (keys back to back)."""
    body = b"".join(keyset_key(*k) for k in keys)
    if version == 1:
        return body
    return struct.pack(">BB", version, len(keys) if count is None else count) + body


def keysets():
    csk = (257, 13, 1, PEM_P256)
    ksk, zsk = (257, 15, 1, PEM_ED25519), (256, 13, 1, PEM_P256)
    write("edge_decode", "keyset-csk", keyset([csk]))
    write("edge_decode", "keyset-ksk-zsk", keyset([ksk, zsk]))
    write("edge_decode", "keyset-rollover", keyset(
        [ksk, zsk, (256, 13, 0, PEM_P256), (257, 15, 0, PEM_ED25519)]))
    write("edge_decode", "keyset-max", keyset([csk] * 8))
    write("edge_decode", "keyset-no-ksk", keyset([(257, 13, 0, PEM_P256), zsk]))
    write("edge_decode", "keyset-not-a-key", keyset([(257, 13, 1, b"x" * 40)]))
    write("edge_decode", "keyset-v1", keyset([ksk, zsk], version=1))
    write("edge_decode", "keyset-v1-csk", keyset([csk], version=1))
    # Malformed: each must be refused with its own error.
    good = keyset([ksk, zsk])
    write("edge_decode", "keyset-truncated", good[:-7])
    write("edge_decode", "keyset-trailing", good + b"\x00")
    write("edge_decode", "keyset-version-3", b"\x03" + good[1:])
    write("edge_decode", "keyset-version-0", b"\x00" + good[1:])
    write("edge_decode", "keyset-count-0", keyset([ksk, zsk], count=0))
    write("edge_decode", "keyset-count-9", keyset([csk] * 9, count=9))
    write("edge_decode", "keyset-count-short", keyset([ksk, zsk], count=3))
    write("edge_decode", "keyset-active-2", keyset([(257, 13, 2, PEM_P256)]))
    write("edge_decode", "keyset-empty-pem", keyset([(257, 13, 1, b"")]))
    write("edge_decode", "keyset-v1-truncated", keyset([ksk, zsk], version=1)[:-3])
    write("edge_decode", "keyset-v1-nine", keyset([csk] * 9, version=1))


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
    # Generic forms: any rdata for any type, well-formed or not.
    write("zonefile", "generic", b"$TTL 60\n@ SOA ns h 1 2 3 4 5\n"
          b"a A \\# 3 010203\nb TXT \\# 2 0561\nc CAA \\# 3 000078\n"
          b"d SVCB \\# 3 00015e\ne NSEC3 \\# 5 0100000129\n"
          b"f HTTPS \\# 11 000100000100030268323b\ng IPSECKEY \\# 5 0103010561\n"
          b"h LOC \\# 16 00121613800000008000000000989680\n"
          b"i CSYNC \\# 10 00000001000000020020\nj TYPE65000 \\# 0\n"
          b"k NULL \\# 1 00\nl APL \\# 0\nm NAPTR \\# 9 000100010000000161\n"
          b"n 2147483648 TXT x\n*.o NS ns\np TYPE200 \\# 0\n")
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
    prereq_order()


def prereq_order():
    """RFC 2136 §3.2.5's order: a failing prerequisite before a malformed
    one (decided in the committer, not by the worker's prescan), and a
    value-dependent mismatch before an existence failure."""
    def rr(name, rtype, rclass, ttl, rdata=b""):
        return (dns.name.from_text(name).to_wire() +
                struct.pack(">HHIH", rtype, rclass, ttl, len(rdata)) + rdata)

    def wire(prereqs, updates):
        head = struct.pack(">HHHHHH", 4242, 5 << 11, 1, len(prereqs),
                           len(updates), 0)
        return (head + dns.name.from_text("example.").to_wire() +
                struct.pack(">HH", 6, 1) + b"".join(prereqs) + b"".join(updates))

    a, txt, any_, axfr = 1, 16, 255, 252
    cls_in, cls_ch, cls_none, cls_any = 1, 3, 254, 255
    add = [rr("new.example.", a, cls_in, 300, b"\xc0\x00\x02\x09")]
    in_use = rr("web.example.", any_, cls_none, 0)
    seeds = {
        "prereq-order-ttl": [in_use, rr("web.example.", a, cls_any, 300)],
        "prereq-order-notzone": [in_use, rr("x.example.org.", a, cls_any, 0)],
        "prereq-order-class": [in_use, rr("web.example.", a, cls_ch, 0)],
        "prereq-order-meta": [rr("web.example.", a, cls_none, 0),
                              rr("web.example.", axfr, cls_any, 0)],
        "prereq-order-value": [rr("web.example.", a, cls_in, 0,
                                  b"\xc0\x00\x02\x63"), in_use],
        "prereq-order-value-ttl": [rr("web.example.", txt, cls_in, 0, b"\x01x"),
                                   rr("web.example.", a, cls_any, 300)],
    }
    for name, prereqs in seeds.items():
        write("update", name, wire(prereqs, add))


def tsig_rr(keyname, algorithm="hmac-sha256.", time=0, mac=b"\0" * 32,
           orig_id=0, error=0):
    """A TSIG RR (RFC 8945 §4.2). Time 0: fuzz/xfr_request.c signs the
    message for real when keyname is one of its keys."""
    rdata = (dns.name.from_text(algorithm).to_wire() +
             struct.pack(">HIHH", time >> 32, time & 0xffffffff, 300,
                         len(mac)) + mac +
             struct.pack(">HHH", orig_id, error, 0))
    return (dns.name.from_text(keyname).to_wire() +
            struct.pack(">HHIH", 250, 255, 0, len(rdata)) + rdata)


def with_rr(wire, rr):
    """Appends an RR to the additional section."""
    arcount = struct.unpack(">H", wire[10:12])[0] + 1
    return wire[:10] + struct.pack(">H", arcount) + wire[12:] + rr


def transfers():
    """AXFR and IXFR requests for fuzz/xfr_request.c's stores: example.
    (serials 1 to 7 in the journal), big.test. (100, 101; multi-message).
    The ID's low bits pick the client and a broken connection there."""
    import dns.rdataclass
    import dns.rrset
    import dns.tsigkeyring

    def axfr(name, qid, rdclass="IN"):
        q = dns.message.make_query(name, "AXFR", rdclass=rdclass)
        q.id = qid
        return q.to_wire()

    def ixfr(name, serial, qid):
        q = dns.message.make_query(name, "IXFR")
        q.id = qid
        q.authority.append(dns.rrset.from_text(
            name, 0, "IN", "SOA", "ns.%s h.%s %d 0 0 0 0" % (name, name,
                                                            serial)))
        return q.to_wire()

    out = lambda name, wire: write("xfr_request", name, wire)
    for qid, who in ((0, "v4"), (1, "refused"), (2, "v6"), (3, "mapped")):
        out("axfr_" + who, axfr("example.", qid))
    out("axfr_big", axfr("big.test.", 0))
    out("axfr_big_fail1", axfr("big.test.", 4))
    out("axfr_big_fail2", axfr("big.test.", 8))
    out("axfr_big_stop", axfr("big.test.", 12))
    out("axfr_chaos", axfr("example.", 0, "CH"))
    out("axfr_notzone", axfr("nope.", 0))
    out("axfr_below_apex", axfr("www.example.", 0))
    for serial in (0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80000000, 0xffffffff):
        out("ixfr_%u" % serial, ixfr("example.", serial, 0))
    out("ixfr_big_old", ixfr("big.test.", 100, 0))
    out("ixfr_big_current", ixfr("big.test.", 101, 0))
    out("ixfr_big_fail2", ixfr("big.test.", 100, 8))
    q = dns.message.make_query("example.", "IXFR")
    q.id = 0
    out("ixfr_no_soa", q.to_wire())
    q.authority.append(dns.rrset.from_text("example.", 0, "IN", "A",
                                           "192.0.2.1"))
    out("ixfr_not_soa", q.to_wire())
    # Signed: time 0 is re-signed by the target with the named key.
    out("axfr_tsig", with_rr(axfr("example.", 1), tsig_rr("fuzzkey.")))
    out("ixfr_tsig_old", with_rr(ixfr("example.", 3, 1), tsig_rr("fuzzkey.")))
    out("ixfr_tsig_current", with_rr(ixfr("example.", 7, 1),
                                     tsig_rr("fuzzkey.")))
    out("axfr_tsig_big", with_rr(axfr("big.test.", 1),
                                 tsig_rr("bigkey.", "hmac-sha512.",
                                         mac=b"\0" * 64)))
    out("ixfr_tsig_big", with_rr(ixfr("big.test.", 100, 9),
                                 tsig_rr("bigkey.", "hmac-sha512.",
                                         mac=b"\0" * 64)))
    out("axfr_tsig_noxfr", with_rr(axfr("example.", 1), tsig_rr("noxfr.")))
    out("axfr_tsig_other_zone", with_rr(axfr("big.test.", 1),
                                        tsig_rr("fuzzkey.")))
    out("axfr_tsig_badkey", with_rr(axfr("example.", 1),
                                    tsig_rr("unknown.")))
    out("axfr_tsig_badalg", with_rr(axfr("example.", 1),
                                    tsig_rr("fuzzkey.", "hmac-sha1.",
                                            time=1, mac=b"\0" * 20)))
    out("axfr_tsig_badsig", with_rr(axfr("example.", 1),
                                    tsig_rr("fuzzkey.", time=1700000000)))
    out("axfr_tsig_origid", with_rr(axfr("example.", 1),
                                    tsig_rr("fuzzkey.", orig_id=0x1234)))
    # Signed with the key by dnspython: stale by the time it replays.
    ring = dns.tsigkeyring.from_text(
        {"fuzzkey.": ("hmac-sha256",
                      __import__("base64").b64encode(
                          b"zonecast-fuzz-secret-0123456789\0").decode())})
    q = dns.message.make_query("example.", "AXFR")
    q.id = 0
    q.use_tsig(ring, keyname="fuzzkey.")
    out("axfr_tsig_stale", q.to_wire())
    # A signed query the transfer threads answer (a secondary's SOA check).
    soa = dns.message.make_query("example.", "SOA", use_edns=0)
    soa.id = 0
    out("soa_tsig", with_rr(soa.to_wire(), tsig_rr("fuzzkey.")))
    soa = dns.message.make_query("big.test.", "TXT", use_edns=0)
    soa.id = 0
    soa.question[0].name = dns.name.from_text("fat.big.test.")
    out("txt_tsig_big", with_rr(soa.to_wire(), tsig_rr("bigkey.",
                                                       "hmac-sha512.",
                                                       mac=b"\0" * 64)))
    # Malformed.
    wire = axfr("example.", 0)
    out("short", wire[:11])
    out("truncated_question", wire[:20])
    out("two_questions", wire[:5] + b"\x02" + wire[6:] + wire[12:])
    out("compression_in_question", wire[:12] + b"\xc0\x0c\x00\xfc\x00\x01")
    out("trailing", wire + b"\x00")
    out("response", wire[:2] + bytes([wire[2] | 0x80]) + wire[3:])
    out("tsig_not_last", with_rr(with_rr(axfr("example.", 0),
                                         tsig_rr("fuzzkey.")),
                                 b"\x00\x00\x01\x00\x01\x00\x00\x00\x00"
                                 b"\x00\x04\x7f\x00\x00\x01"))


def api_requests():
    """Requests for fuzz/api_request.c: "METHOD\nURL\nHEADERS\n\nBODY".
    Zone 1 is example. (fuzz_zone.h), its records have ids 1 to 25."""
    import json
    n = 0
    z = "/client/v4/zones/00000000000000000000000000000001"
    r = z + "/dns_records"

    def out(method, url, body=b"", headers=()):
        nonlocal n
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        head = "".join(h + "\n" for h in headers)
        write("api_request", "r%03d" % n,
              ("%s\n%s\n%s\n" % (method, url, head)).encode() + body)
        n += 1

    # Reading, with paging, filters and percent-encoding.
    out("GET", "/client/v4/zones")
    out("GET", "/client/v4/zones?name=example&page=1&per_page=5")
    out("GET", "/client/v4/zones?name=%65xample")
    for q in ("page=0", "page=-1", "per_page=50001", "page=abc",
              "page=99999999999999999999999", "per_page=1&page=3",
              "page=9223372036854775807&per_page=50000"):
        out("GET", "/client/v4/zones?" + q)
    out("GET", z)
    out("GET", "/client/v4/zones/1")
    out("GET", "/client/v4/zones/ffffffffffffffffffffffffffffffff")
    out("GET", "/client/v4/zones/0")
    out("GET", r)
    for q in ("type=A", "type=MX&name=example", "name=www.example",
              "name=w%77w", "name=%00", "name=a%2Fb", "type=BOGUS",
              "type=TYPE65000", "content=192.0.2.1", "content=mail.example",
              "name=@", "page=2&per_page=3", "per_page=1&page=26",
              "name=*.wild.example", "name=x." + "a" * 300,
              "name=%C3%A9.example", "name=%ff%fe", "type=A&type=MX",
              "name", "=&&=x&%"):
        out("GET", r + "?" + q)
    out("GET", r + "/00000000000000000000000000000001")
    out("GET", r + "/999")
    out("GET", r + "/-1")
    out("GET", r + "/export")
    out("GET", z + "/tsig_keys")
    out("GET", z + "/dnssec")
    for q in ("version=1", "version=2&wait=5", "version=-1",
              "version=4294967296", "version=1x", ""):
        out("GET", z + "/propagation?" + q)
    out("GET", z + "/nothing")
    out("GET", "/client/v4/")
    out("GET", "/")
    out("GET", "/client/v4/zones/1/dns_records/1/2/3/4/5/6/7/8/9")
    out("GET", "/client/v4//zones//1")
    out("GET", "/client/v4/zones%2F1")
    # Zones.
    out("POST", "/client/v4/zones", {"name": "new.test"})
    out("POST", "/client/v4/zones", {"name": "example"})
    out("POST", "/client/v4/zones", {"name": ""})
    out("POST", "/client/v4/zones", {"name": 5})
    out("POST", "/client/v4/zones", {"name": "a..b"})
    out("POST", "/client/v4/zones", {"name": "x" * 70 + ".test"})
    out("POST", "/client/v4/zones", [])
    out("POST", "/client/v4/zones", "{\"name\": ")
    out("POST", "/client/v4/zones", "")
    out("POST", "/client/v4/zones", '{"name": "\\u0000.test"}')
    out("PATCH", z, {"default_ttl": 600, "serial_policy": "unixtime",
                     "soa": {"refresh": 100, "retry": 50, "expire": 1000,
                             "minimum": 30, "ttl": 3600}})
    out("PATCH", z, '{"default_ttl": 1e400}')
    out("PATCH", z, '{"default_ttl": 99999999999999999999999}')
    out("PATCH", z, {"default_ttl": -1})
    out("PATCH", z, {"soa": 5})
    out("PATCH", z, {"soa": {"refresh": 2 ** 31}})
    out("PATCH", z, {"serial_policy": "x"})
    out("PATCH", z, {"serial_policy": "increment"})
    out("DELETE", z)
    out("PUT", z)
    out("DELETE", "/client/v4/zones")
    # Records of every type.
    for name, rtype, content, extra in (
            ("new", "A", "192.0.2.7", {}),
            ("new", "AAAA", "2001:db8::7", {}),
            ("alias", "CNAME", "web.example", {}),
            ("example", "MX", "mail.example", {"priority": 5}),
            ("new", "TXT", "\"hello\" \"world\"", {}),
            ("deleg", "NS", "ns.elsewhere.net", {}),
            ("_sip._tcp", "SRV", "1 5060 sip.example", {"priority": 10}),
            ("example", "CAA", "0 issue \"ca.example\"", {}),
            ("7", "PTR", "host.example", {}),
            ("new", "HTTPS", "1 . alpn=h2", {}),
            ("new", "SVCB", "0 other.example", {}),
            ("_443._tcp", "TLSA", "3 1 1 " + "ab" * 32, {}),
            ("new", "NAPTR", "100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:a@b!\" .",
             {}),
            ("child", "DS", "1 13 2 " + "00" * 32, {}),
            ("new", "SSHFP", "1 1 " + "ab" * 20, {}),
            ("new", "URI", "1 \"https://example.net/\"", {"priority": 1}),
            ("new", "LOC", "52 22 23 N 4 53 32 E -2m 1m 10000m 10m", {}),
            ("new", "DNAME", "target.example", {}),
            ("new", "TYPE65000", "\\# 3 010203", {}),
            ("example", "SOA", "ns h 1 2 3 4 5", {}),
            ("new", "RRSIG", "A 13 2 300 20300101000000 20200101000000 1 "
             "example. AAAA", {}),
            ("new", "DNSKEY", "256 3 13 AAAA", {})):
        body = {"name": name, "type": rtype, "content": content, "ttl": 300}
        body.update(extra)
        out("POST", r, body)
    out("POST", r, {"name": "www", "type": "A", "content": "192.0.2.1"})
    out("POST", r, {"name": "web", "type": "A", "content": "192.0.2.80",
                    "ttl": 1})
    out("POST", r, {"name": "web", "type": "A", "content": "192.0.2.81",
                    "ttl": 99, "comment": "retimes the RRset"})
    out("POST", r, {"name": "x.example.org", "type": "A",
                    "content": "192.0.2.1"})
    out("POST", r, {"name": "new", "type": "A", "content": "192.0.2.1",
                    "ttl": 2 ** 31})
    out("POST", r, {"name": "new", "type": "A", "content": "192.0.2.1",
                    "ttl": "300"})
    out("POST", r, '{"name": "new", "type": "MX", "content": "mail", '
        '"priority": 1e3}')
    out("POST", r, {"name": "new", "type": "MX", "content": "mail",
                    "priority": 65536})
    out("POST", r, {"name": "new", "type": "TXT", "content": "x" * 5000})
    out("POST", r, {"name": "new", "type": "A"})
    out("POST", r, {"type": "A", "content": "192.0.2.1"})
    out("POST", r, {"name": "new", "content": "192.0.2.1"})
    out("POST", r, {"name": "new", "type": "A", "content": "192.0.2.1\n"
                    "evil 300 IN A 192.0.2.2"})
    out("POST", r, {"name": "new", "type": "A", "content": "1.2.3.4 ; x"})
    out("POST", r, {"name": "new", "type": "A", "content": "1.2.3.4 ("})
    out("PUT", r + "/1", {"name": "ns", "type": "A", "content": "192.0.2.2"})
    out("PATCH", r + "/3", {"ttl": 60}, ["If-Match: *"])
    out("PATCH", r + "/3", {"content": "10 mail2.example"},
        ['If-Match: "3-0"'])
    out("PATCH", r + "/5", {"name": "moved"})
    out("DELETE", r + "/5")
    out("DELETE", r + "/1")
    out("DELETE", r + "/2")
    out("DELETE", r + "/12345")
    out("POST", r + "/batch", {
        "deletes": [{"id": "5"}],
        "patches": [{"id": "6", "ttl": 120}],
        "puts": [{"id": "7", "name": "mail", "type": "A",
                  "content": "192.0.2.26"}],
        "posts": [{"name": "b1", "type": "A", "content": "192.0.2.31"},
                  {"name": "b2", "type": "TXT", "content": "batch"}]})
    out("POST", r + "/batch", {"posts": {"name": "x"}})
    out("POST", r + "/batch", {"deletes": [{"id": "zz"}]})
    out("POST", r + "/batch", {"posts": [5]})
    out("POST", r + "/batch", {"posts": [{"name": "c%d" % i, "type": "A",
                                          "content": "192.0.2.%d" % (i % 250)}
                                         for i in range(300)]})
    zone_text = ("$ORIGIN example.\n$TTL 300\n@ SOA ns h 1 2 3 4 5\n"
                 "imp1 A 192.0.2.101\nimp2 MX 10 mail\nimp3 TXT \"x\"\n"
                 "web A 192.0.2.80\n")
    out("POST", r + "/import", zone_text)
    out("POST", r + "/import", "--xyz\r\nContent-Disposition: form-data; "
        "name=\"file\"; filename=\"z\"\r\n\r\n" + zone_text +
        "\r\n--xyz--\r\n",
        ["Content-Type: multipart/form-data; boundary=xyz"])
    out("POST", r + "/import", "--xyz\r\n\r\n",
        ["Content-Type: multipart/form-data; boundary=xyz"])
    out("POST", r + "/import", "junk", ["Content-Type: multipart/form-data"])
    out("POST", r + "/import", "@ IN A 1.2.3.4\n$INCLUDE /etc/passwd\n")
    out("POST", r + "/import", "bad line\n")
    # TSIG keys and DNSSEC.
    out("POST", z + "/tsig_keys", {"name": "k1", "algorithm": "hmac-sha256",
                                   "grants": ["subdomain:example.:A,AAAA",
                                              "name:x.example."],
                                   "transfer": True})
    out("POST", z + "/tsig_keys", {"name": "k2", "algorithm": "md5"})
    out("POST", z + "/tsig_keys", {"name": "k3", "grants": "all"})
    out("POST", z + "/tsig_keys", {"name": "k4", "grants": ["a b"]})
    out("POST", z + "/tsig_keys", {"name": "k5", "transfer": "yes"})
    out("POST", z + "/tsig_keys", {"name": "k6", "grants": ["x" * 600,
                                                            "y" * 600]})
    out("DELETE", z + "/tsig_keys/1")
    out("DELETE", z + "/tsig_keys/abc")
    out("PATCH", z + "/dnssec", {"status": "active",
                                 "algorithm": "ecdsap256sha256"})
    out("PATCH", z + "/dnssec", {"status": "active", "algorithm": "ed25519",
                                 "split": True})
    out("PATCH", z + "/dnssec", {"status": "disabled"})
    out("PATCH", z + "/dnssec", {"status": "on"})
    out("PATCH", z + "/dnssec", {"status": "active", "algorithm": 13})
    # Tokens and methods.
    out("POST", r, {"name": "ro", "type": "A", "content": "192.0.2.1"},
        ["Authorization: ro"])
    out("GET", r, b"", ["Authorization: ro"])
    out("GET", "/client/v4/zones", b"", ["Authorization: zone"])
    out("POST", "/client/v4/zones", {"name": "z.test"},
        ["Authorization: zone"])
    out("GET", r, b"", ["Authorization: Bearer wrong"])
    out("GET", r, b"", ["Authorization: Basic eDp5"])
    out("GET", r, b"", ["Authorization: Bearer "])
    out("FOO", r)
    out("", "")
    # Cloudflare's list filters and orders, TXT in both forms, the batch's
    # result, tokens (issue 16).
    for q in ("name.exact=www.example&type=A", "name.contains=ww&match=any&type=MX",
              "content=hello&type=TXT", "content.startswith=%22hel",
              "comment.present&tag.present=env", "tag.exact=env:prod&tag_match=any",
              "order=content&direction=desc", "order=ttl&per_page=2&page=2",
              "order=type", "search=mail", "proxied=true", "bogus=1",
              "name.exact=a&name=b", "tag.contains=:x", "order=id"):
        out("GET", r + "?" + q)
    for content in ("v=DMARC1; p=none", '"a" ; b', "x" * 600, '"' + "y" * 300 + '"',
                    '"\\256"', '"unclosed'):
        out("POST", r, {"name": "t", "type": "TXT", "content": content,
                        "tags": ["env:prod", "x"]})
    out("POST", r, {"name": "c", "type": "CAA", "content": "0 issue ca.example;x=1"})
    out("POST", r + "/batch", {"deletes": [{"id": "5"}], "posts": [
        {"name": "b", "type": "TXT", "content": "plain"}]})
    out("GET", "/client/v4/user/tokens/verify")
    out("GET", "/client/v4/user/tokens/verify", b"", ["Authorization: zone"])
    out("GET", "/client/v4/user/tokens?per_page=1")
    out("GET", "/client/v4/user/tokens/permission_groups")
    out("GET", "/client/v4/user/tokens/00000000000000000000000000000002")
    out("POST", "/client/v4/user/tokens", {"name": "n", "policies": [
        {"effect": "allow", "resources": {"com.cloudflare.api.account.zone.*": "*"},
         "permission_groups": [{"name": "DNS Read"}]}],
        "expires_on": "2099-01-01T00:00:00Z"})
    out("POST", "/client/v4/user/tokens", {"name": "n", "policies": [{}]})
    out("DELETE", "/client/v4/user/tokens/00000000000000000000000000000003")
    out("DELETE", "/client/v4/user/tokens/00000000000000000000000000000001",
        b"", ["Authorization: zone"])


def repl_keysets():
    """Op streams (src/edge/repl.h) putting keysets (table 2) for zones 1-3:
    a version-2 one, one in the unmarked form, a malformed one, and the
    deletion of one (the other repl_apply seeds were written by hand)."""
    def put_keys(zone, value):
        key = struct.pack(">Q", zone)
        return struct.pack(">BBHI", 1, 2, len(key), len(value)) + key + value

    def del_keys(zone):
        key = struct.pack(">Q", zone)
        return struct.pack(">BBHI", 2, 2, len(key), 0) + key

    csk = (257, 13, 1, PEM_P256)
    ksk, zsk = (257, 15, 1, PEM_ED25519), (256, 13, 1, PEM_P256)
    # The first byte also says where the stream is cut in two (its value
    # modulo the length + 1): these cut inside the first op.
    write("repl_apply", "keysets", put_keys(1, keyset([csk])) +
          put_keys(2, keyset([ksk, zsk], version=1)) +
          put_keys(3, keyset([ksk, zsk])[:-5]))
    write("repl_apply", "keysets_replaced", put_keys(1, keyset([ksk, zsk])) +
          put_keys(2, b"\x09" + keyset([csk])[1:]) + del_keys(3))


TARGETS = {"query": queries, "edge_decode": edge_values,
           "zonefile": zonefiles, "update": updates,
           "xfr_request": transfers, "api_request": api_requests,
           "repl_apply": repl_keysets}

if __name__ == "__main__":
    import sys
    for target in sys.argv[1:] or TARGETS:
        TARGETS[target]()
