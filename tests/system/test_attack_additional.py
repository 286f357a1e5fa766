"""An outside tester's attack on the answer path (2026-12-07): one UDP
query put a UDP worker in an endless loop. A referral, MX or SRV answer
whose additional addresses did not all fit: the put that ran out of room
had moved libknot's compression suffix to the owner it wrote past the
end, the next address's owner was written at that same offset and
compressed against itself, and the next compression walked that pointer
for ever (100 % CPU, no answer again from that worker, SIGTERM not
heard). Every put now goes through dns_pkt_put() (dns/pkt_put.h), which
puts the suffix back when a put fails.

Sweeps the sizes around the ones that hung (they depend on where the
message fills up), each answer compared with knotd's; with one UDP worker
a single wedge fails every query after it. Fails on 777eb8c."""

import os

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

import servers

ZONE = "add.test."


def zone_text():
    lines = ["$ORIGIN %s" % ZONE, "$TTL 3600", "@ SOA ns1 h 1 2 3 4 5", "@ NS ns1",
             "ns1 A 192.0.2.1"]
    # delegations d<N> with N glued NS names (A and AAAA each)
    for n in range(4, 49):
        for i in range(1, n + 1):
            lines += ["d%d NS ns%d.d%d" % (n, i, n), "ns%d.d%d A 192.0.2.%d" % (i, n, i % 250 + 1),
                      "ns%d.d%d AAAA 2001:db8::%x" % (i, n, i)]
    # MX and SRV RRsets of N in-zone targets (below a cut: glue; above: data)
    lines += ["cut NS ns1"]
    for n in (8, 10, 12, 20, 30, 40):
        for i in range(1, n + 1):
            lines += ["mx%d MX %d m%d.cut" % (n, i, i), "srv%d SRV 1 1 %d s%d" % (n, 1000 + i, i)]
    for i in range(1, 41):
        lines += ["m%d.cut A 192.0.2.%d" % (i, i), "m%d.cut AAAA 2001:db8:1::%x" % (i, i),
                  "s%d A 192.0.2.%d" % (i, i), "s%d AAAA 2001:db8:2::%x" % (i, i)]
    return "\n".join(lines) + "\n"


QUERIES = ([("x.d%d.%s" % (n, ZONE), "A") for n in range(4, 49)]
           + [("mx%d.%s" % (n, ZONE), "MX") for n in (8, 10, 12, 20, 30, 40)]
           + [("srv%d.%s" % (n, ZONE), "SRV") for n in (8, 10, 12, 20, 30, 40)])
SIZES = [None, 512, 1232]


def ask(srv, name, rtype, payload):
    q = dns.message.make_query(name, rtype, use_edns=payload is not None,
                               payload=payload or 512)
    q.flags &= ~0x0100    # RD off
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2, ignore_trailing=True,
                         raise_on_truncation=False)


def shape(r):
    return (r.rcode(), bool(r.flags & 0x0200), len(r.answer), len(r.authority))


@pytest.fixture
def servers_(tmp_path_factory, zonecast_factory, knotd_factory):
    path = tmp_path_factory.mktemp("add") / "add.test.zone"
    path.write_text(zone_text())
    zc = zonecast_factory(zones={ZONE: str(path)}, workers=1)
    kn = knotd_factory(zones={ZONE: str(path)})
    return zc, kn


def test_additional_that_does_not_fit_never_wedges_a_worker(servers_):
    zc, kn = servers_
    for payload, (name, rtype) in ((p, q) for p in SIZES for q in QUERIES):
        try:
            got = ask(zc, name, rtype, payload)
        except dns.exception.Timeout:
            pytest.fail("no answer to %s %s (payload %s)" % (name, rtype, payload))
        want = ask(kn, name, rtype, payload)
        assert shape(got) == shape(want), (name, rtype, payload, got.to_text(),
                                           want.to_text())
        # every address that came is whole and names a target of the answer
        for rrset in got.additional:
            if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
                assert rrset.name.is_subdomain(dns.name.from_text(ZONE)), got.to_text()
        soa = ask(zc, ZONE, "SOA", payload)
        assert soa.rcode() == dns.rcode.NOERROR and soa.answer, (name, rtype, payload)


WILD = "wild.test."
WILD_ZONE = """$ORIGIN wild.test.
$TTL 3600
@ SOA ns1 h 1 2 3 4 5
@ NS ns1
ns1 A 192.0.2.1
*.x.y A 192.0.2.10
*.x.y AAAA 2001:db8::10
_sip._tcp SRV 1 2 5060 any.x.y
mail MX 10 m.x.y
mail MX 20 deep.down.x.y
svc HTTPS 1 h.x.y
cut NS ns.x.y
below.cut A 192.0.2.99
occl MX 5 a.below.cut
"""


def test_targets_a_wildcard_matches_get_their_addresses(tmp_path, zonecast_factory,
                                                        knotd_factory):
    """knotd adds the addresses a wildcard gives an MX/SRV/HTTPS/NS target
    (any.x.y from *.x.y); zonecast looked for the target's own node only.
    Names below a cut are not matched by a wildcard above it."""
    path = tmp_path / "wild.test.zone"
    path.write_text(WILD_ZONE)
    zc = zonecast_factory(zones={WILD: str(path)}, workers=1)
    kn = knotd_factory(zones={WILD: str(path)})

    def additional(srv, name, rtype):
        r = ask(srv, name, rtype, 1232)
        return sorted(rr.to_text() for rrset in r.additional for rr in [rrset]
                      if rrset.rdtype != dns.rdatatype.OPT)

    for name, rtype in (("_sip._tcp." + WILD, "SRV"), ("mail." + WILD, "MX"),
                        ("x.cut." + WILD, "A"), ("occl." + WILD, "MX")):
        got, want = additional(zc, name, rtype), additional(kn, name, rtype)
        assert got == want, (name, rtype, got, want)
    # knotd 3.2 writes an HTTPS target's wildcard addresses under the
    # wildcard's own owner (*.x.y); RFC 4592 §4.1 expands it to the target
    assert additional(zc, "svc." + WILD, "HTTPS") == [
        "h.x.y.wild.test. 3600 IN A 192.0.2.10", "h.x.y.wild.test. 3600 IN AAAA 2001:db8::10"]
    assert any("any.x.y.wild.test. 3600 IN A 192.0.2.10" in x
               for x in additional(zc, "_sip._tcp." + WILD, "SRV"))


def test_no_additional_addresses_below_a_dname(tmp_path, zonecast_factory):
    """Data below a DNAME is occluded (RFC 6672 §2.4: a query for it gets
    the DNAME's rewrite); an MX target there had its A given in the
    additional section. knotd refuses such a zone at load ("child record
    exists under DNAME"), and so do zonecast's rules now on every write
    path (test_zone_rules_parity.py); a store written before them may still
    hold one, so the store's TXT is turned into the DNAME behind the
    server's back (SQLite) and the edge store built again from it."""
    text = ("$ORIGIN occl.test.\n$TTL 3600\n@ SOA ns1 h 1 2 3 4 5\n@ NS ns1\n"
            "ns1 A 192.0.2.1\ndn %s\nx.dn A 192.0.2.123\nocc MX 10 x.dn\n"
            "ok MX 10 ns1\n")
    path = tmp_path / "occl.test.zone"
    path.write_text(text % "DNAME x")
    zc = zonecast_factory(zones={}, workers=1)
    cp = zc.import_zone("occl.test.", str(path), check=False)
    assert cp.returncode == 1 and "record below the DNAME at dn.occl.test." in cp.stderr, cp
    if servers.RECORDS_BACKEND != "sqlite":
        pytest.skip("the store is edited through SQLite")
    path.write_text(text % 'TXT "placeholder"')
    zc.import_zone("occl.test.", str(path))
    zc.stop()
    import sqlite3
    db = sqlite3.connect(os.path.join(zc.data_dir, "records.db"))
    with db:
        n = db.execute("UPDATE records SET type = 39, rdata = ? WHERE type = 16 AND owner = ?",
                       (dns.name.from_text("x.occl.test.").to_wire(),
                        dns.name.from_text("dn.occl.test.").to_wire())).rowcount
    db.close()
    assert n == 1
    for f in ("edge.mdb", "edge.mdb-lock"):
        if os.path.exists(os.path.join(zc.data_dir, f)):
            os.unlink(os.path.join(zc.data_dir, f))
    zc.zones = {"occl.test.": str(path)}
    zc.restart()
    zc.wait_ready(zc.zones)
    r = ask(zc, "dn.occl.test.", "DNAME", 1232)
    assert [x.rdtype for x in r.answer] == [dns.rdatatype.DNAME], r.to_text()
    r = ask(zc, "occ.occl.test.", "MX", 1232)
    assert r.answer and not [x for x in r.additional if x.rdtype == dns.rdatatype.A], r.to_text()
    r = ask(zc, "ok.occl.test.", "MX", 1232)
    assert [x.to_text() for x in r.additional if x.rdtype == dns.rdatatype.A] == \
        ["ns1.occl.test. 3600 IN A 192.0.2.1"], r.to_text()