"""Targeted authoritative-DNS tests with exact, RFC-derived expectations.

Every test that takes `dns_server` runs twice: against zonecast and against
knotd, which validates the expectations themselves. `zonecast_only` tests
check zonecast-specific behaviour (import CLI, live import) and do not run on
knotd; `knot_deviates` tests encode the RFC where knotd 3.2 is known to
differ, and are strict xfails on knotd. Zone data: zones/*.zone.
"""

import os
import shutil
import socket
import struct
import subprocess
import time

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

import servers
from servers import make_query, recv_exact

EC = "example.com."
NEG_TTL = {"example.com.": 300, "example.net.": 60, "sub.example.com.": 300}
SOA_EC = "example.com. 300 SOA ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 1209600 300"

# All of these are in dev/test's valgrind pass too (but what its -k leaves out).
pytestmark = pytest.mark.valgrind


# ------------------------------------------------------------------ helpers

def ask(srv, name, rdtype="A", **kw):
    return srv.query(name, rdtype, **kw)


def rrs(section):
    """Set of 'owner ttl TYPE rdata' lines, owner lowercased."""
    out = set()
    for rrset in section:
        for rd in rrset:
            out.add("%s %d %s %s" % (rrset.name.to_text().lower(), rrset.ttl,
                                     dns.rdatatype.to_text(rrset.rdtype), rd.to_text().strip()))
    return out


def ordered(section):
    return [(rrset.name.to_text().lower(), dns.rdatatype.to_text(rrset.rdtype))
            for rrset in section]


def flag(m, f):
    return bool(m.flags & f)


def assert_positive(m, answer):
    assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    assert flag(m, dns.flags.AA) and not flag(m, dns.flags.TC) and not flag(m, dns.flags.RA)
    assert rrs(m.answer) == set(answer)


def assert_negative(m, rcode, zone=EC, answer=()):
    assert m.rcode() == rcode, dns.rcode.to_text(m.rcode())
    assert flag(m, dns.flags.AA)
    assert rrs(m.answer) == set(answer)
    soa = [r for r in m.authority if r.rdtype == dns.rdatatype.SOA]
    assert len(soa) == 1 and soa[0].name == dns.name.from_text(zone), m.authority
    assert soa[0].ttl == NEG_TTL[zone], "negative TTL (RFC 2308 section 5)"


def assert_referral(m, cut, ns, glue, ttl=3600):
    assert m.rcode() == dns.rcode.NOERROR
    assert not flag(m, dns.flags.AA), "referrals are not authoritative"
    assert not m.answer
    assert rrs(m.authority) == {"%s %d NS %s" % (cut, ttl, n) for n in ns}
    assert set(glue) <= rrs(m.additional)


def raw_header(wire):
    ident, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", wire[:12])
    return {"id": ident, "qr": bool(flags & 0x8000), "opcode": (flags >> 11) & 0xF,
            "aa": bool(flags & 0x0400), "rcode": flags & 0xF, "counts": (qd, an, ns, ar)}


def plain_wire(name="www.example.com.", rdtype="A", **kw):
    return make_query(name, rdtype, **kw).to_wire()


# ------------------------------------------------------------------ exact match

def test_exact_match(dns_server):
    m = ask(dns_server, "www.example.com.")
    assert_positive(m, {"www.example.com. 300 A 192.0.2.80"})


def test_qname_case_is_preserved(dns_server):
    m = ask(dns_server, "wWw.ExAmPlE.cOm.")
    assert m.question[0].name.labels == dns.name.from_text("wWw.ExAmPlE.cOm.").labels
    assert m.answer[0].name.labels == dns.name.from_text("wWw.ExAmPlE.cOm.").labels
    assert_positive(m, {"www.example.com. 300 A 192.0.2.80"})


def test_mixed_case_owner_in_zone_file_matches_any_case(dns_server):
    assert_positive(ask(dns_server, "mixed.EXAMPLE.com."), {"mixed.example.com. 3600 A 192.0.2.81"})


def test_escaped_labels(dns_server):
    assert_positive(ask(dns_server, r"esc\.dot.example.com."), {r"esc\.dot.example.com. 3600 A 192.0.2.85"})
    assert_positive(ask(dns_server, r"sp\032ace.example.com."), {r"sp\032ace.example.com. 3600 A 192.0.2.86"})
    assert_negative(ask(dns_server, "esc.dot.example.com."), dns.rcode.NXDOMAIN)


def test_ttl_extremes(dns_server):
    assert_positive(ask(dns_server, "ttl0.example.com."), {"ttl0.example.com. 0 A 192.0.2.82"})
    assert_positive(ask(dns_server, "ttlmax.example.com."),
                    {"ttlmax.example.com. 2147483647 A 192.0.2.83"})


def test_rfc3597_generic_and_unknown_types(dns_server):
    assert_positive(ask(dns_server, "generic.example.com."), {"generic.example.com. 3600 A 192.0.2.99"})
    assert_positive(ask(dns_server, "types.example.com.", "TYPE65000"),
                    {r"types.example.com. 3600 TYPE65000 \# 4 0a000001"})
    assert_positive(ask(dns_server, "types.example.com.", "TYPE65001"),
                    {r"types.example.com. 3600 TYPE65001 \# 0"})
    assert_negative(ask(dns_server, "types.example.com.", "TYPE65002"), dns.rcode.NOERROR)


def _authoritative_rrsets():
    """(zone, owner, rdataset) for every RRset a server must answer verbatim."""
    out = []
    for origin, path in servers.DEFAULT_ZONES.items():
        apex = dns.name.from_text(origin)
        z = dns.zone.from_file(path, origin=apex, relativize=False)
        cuts = [n for n, node in z.nodes.items()
                if n != apex and node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.NS)]
        for name, node in sorted(z.nodes.items()):
            for rds in node.rdatasets:
                at_cut = name in cuts
                below = any(name.is_subdomain(c) and name != c for c in cuts)
                if below or (at_cut and rds.rdtype != dns.rdatatype.DS):
                    continue
                out.append((origin, name, rds))
    return out


def test_every_authoritative_rrset_is_served_verbatim(dns_server):
    """All RRsets of the zone files (all types, RFC 3597 too), TTLs included, over TCP."""
    bad = []
    for _zone, name, rds in _authoritative_rrsets():
        m = ask(dns_server, name, rds.rdtype, tcp=True)
        got = [r for r in m.answer if r.name == name and r.rdtype == rds.rdtype]
        want = sorted((rds.ttl, rd.to_digestable()) for rd in rds)
        have = sorted((r.ttl, rd.to_digestable()) for r in got for rd in r)
        if m.rcode() != dns.rcode.NOERROR or not flag(m, dns.flags.AA) or want != have:
            bad.append("%s %s: rcode %s, got %s" % (name, dns.rdatatype.to_text(rds.rdtype),
                                                     dns.rcode.to_text(m.rcode()), m.answer))
    assert not bad, "\n".join(bad[:20])


# ------------------------------------------------------------------ CNAME

def test_cname_chain_inside_zone(dns_server):
    m = ask(dns_server, "chain1.example.com.")
    assert_positive(m, {"chain1.example.com. 3600 CNAME chain2.example.com.",
                        "chain2.example.com. 600 CNAME chain3.example.com.",
                        "chain3.example.com. 3600 CNAME www.example.com.",
                        "www.example.com. 300 A 192.0.2.80"})
    assert ordered(m.answer)[0] == ("chain1.example.com.", "CNAME")


def test_cname_query_type_cname_is_not_followed(dns_server):
    assert_positive(ask(dns_server, "cname.example.com.", "CNAME"),
                    {"cname.example.com. 3600 CNAME www.example.com."})


def test_cname_to_name_without_the_type_is_nodata(dns_server):
    assert_negative(ask(dns_server, "cname.example.com.", "TXT"), dns.rcode.NOERROR,
                    answer={"cname.example.com. 3600 CNAME www.example.com."})


def test_cname_leaving_all_zones(dns_server):
    m = ask(dns_server, "ext.example.com.")
    assert_positive(m, {"ext.example.com. 3600 CNAME www.example.org."})


def test_cname_to_other_served_zone(dns_server):
    """The chain may stop at the zone boundary (RFC 1034 4.3.2) or continue correctly."""
    m = ask(dns_server, "tonet.example.com.")
    assert m.rcode() == dns.rcode.NOERROR and flag(m, dns.flags.AA)
    got = rrs(m.answer)
    assert "tonet.example.com. 3600 CNAME host.example.net." in got
    assert got <= {"tonet.example.com. 3600 CNAME host.example.net.",
                   "host.example.net. 3600 A 198.51.100.1"}


def test_cname_to_nonexistent_name_is_nxdomain(dns_server):
    """RFC 6604 section 2.1: RCODE describes the last name of the chain."""
    assert_negative(ask(dns_server, "tonx.example.com."), dns.rcode.NXDOMAIN,
                    answer={"tonx.example.com. 3600 CNAME nx.example.com."})


def test_cname_to_empty_non_terminal_is_nodata(dns_server):
    assert_negative(ask(dns_server, "toent.example.com."), dns.rcode.NOERROR,
                    answer={"toent.example.com. 3600 CNAME b.ent.example.com."})


def test_cname_to_wildcard_match(dns_server):
    assert_positive(ask(dns_server, "towild.example.com."),
                    {"towild.example.com. 3600 CNAME foo.w.example.com.",
                     "foo.w.example.com. 3600 A 192.0.2.100"})


def test_cname_loop_terminates(dns_server):
    m = ask(dns_server, "loop1.example.com.")
    assert_positive(m, {"loop1.example.com. 3600 CNAME loop2.example.com.",
                        "loop2.example.com. 3600 CNAME loop1.example.com."})
    assert sum(len(r) for r in m.answer) == 2
    m = ask(dns_server, "self.example.com.")
    assert_positive(m, {"self.example.com. 3600 CNAME self.example.com."})


def test_long_cname_chain_is_followed_in_order_and_bounded(dns_server):
    m = ask(dns_server, "lc1.example.com.")
    assert m.rcode() == dns.rcode.NOERROR and flag(m, dns.flags.AA)
    chain = ["lc%d.example.com." % i for i in range(1, 13)] + ["www.example.com."]
    owners = [o for o, _ in ordered(m.answer)]
    assert owners == chain[:len(owners)] and len(owners) >= 1


def test_cname_into_delegation_gives_referral(dns_server):
    m = ask(dns_server, "todeleg.example.com.")
    assert m.rcode() == dns.rcode.NOERROR
    assert rrs(m.answer) == {"todeleg.example.com. 3600 CNAME host.deleg.example.com."}
    assert {r.rdtype for r in m.authority} == {dns.rdatatype.NS}
    assert m.authority[0].name == dns.name.from_text("deleg.example.com.")


# ------------------------------------------------------------------ DNAME

def test_dname_synthesizes_cname(dns_server):
    """RFC 6672 section 3.1: DNAME plus a synthesized CNAME with the DNAME's TTL."""
    m = ask(dns_server, "x.DNAME.example.com.")
    assert_positive(m, {"dname.example.com. 3600 DNAME example.net.",
                        "x.dname.example.com. 3600 CNAME x.example.net."})
    assert ordered(m.answer)[0] == ("dname.example.com.", "DNAME")
    cname = [r for r in m.answer if r.rdtype == dns.rdatatype.CNAME][0]
    assert cname.name.labels == dns.name.from_text("x.DNAME.example.com.").labels


def test_dname_owner_itself_is_not_redirected(dns_server):
    assert_positive(ask(dns_server, "dname.example.com."), {"dname.example.com. 3600 A 192.0.2.2"})
    assert_positive(ask(dns_server, "dname.example.com.", "DNAME"),
                    {"dname.example.com. 3600 DNAME example.net."})


def test_dname_inside_zone_is_followed(dns_server):
    assert_positive(ask(dns_server, "host.dname-in.example.com."),
                    {"dname-in.example.com. 3600 DNAME target.example.com.",
                     "host.dname-in.example.com. 3600 CNAME host.target.example.com.",
                     "host.target.example.com. 3600 A 192.0.2.90"})
    assert_negative(ask(dns_server, "x.dname-in.example.com."), dns.rcode.NXDOMAIN,
                    answer={"dname-in.example.com. 3600 DNAME target.example.com.",
                            "x.dname-in.example.com. 3600 CNAME x.target.example.com."})


def test_dname_substitution_too_long_is_yxdomain(dns_server):
    """RFC 6672 section 2.2: the substituted name would exceed 255 octets."""
    label = "a" * 63
    m = ask(dns_server, "%s.%s.%s.dlong.example.com." % (label, label, label))
    assert m.rcode() == dns.rcode.YXDOMAIN
    assert not [r for r in m.answer if r.rdtype == dns.rdatatype.CNAME]


def test_dname_loop_terminates(dns_server):
    m = ask(dns_server, "a.dloop.example.com.")
    assert m.rcode() == dns.rcode.NOERROR and flag(m, dns.flags.AA)
    assert ordered(m.answer)[0] == ("dloop.example.com.", "DNAME")
    assert len(rrs(m.answer)) == sum(len(r) for r in m.answer), "duplicate RRs"


# ------------------------------------------------------------------ wildcards (RFC 4592)

def test_wildcard_synthesis_uses_qname_case(dns_server):
    m = ask(dns_server, "FoO.w.example.com.")
    assert_positive(m, {"foo.w.example.com. 3600 A 192.0.2.100"})
    assert m.answer[0].name.labels == dns.name.from_text("FoO.w.example.com.").labels


def test_wildcard_matches_several_labels(dns_server):
    assert_positive(ask(dns_server, "a.b.w.example.com.", "TXT"),
                    {'a.b.w.example.com. 3600 TXT "wildcard at *.w"'})


def test_wildcard_without_the_type_is_nodata(dns_server):
    assert_negative(ask(dns_server, "foo.w.example.com.", "MX"), dns.rcode.NOERROR)


def test_existing_name_blocks_wildcard(dns_server):
    """RFC 4592 section 3.3.1: exists.w has its own node; below it nothing matches."""
    assert_negative(ask(dns_server, "exists.w.example.com.", "TXT"), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "x.exists.w.example.com."), dns.rcode.NXDOMAIN)


def test_empty_non_terminal_blocks_wildcard(dns_server):
    assert_negative(ask(dns_server, "ent.w.example.com."), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "x.ent.w.example.com."), dns.rcode.NXDOMAIN)


def test_literal_asterisk_query(dns_server):
    assert_positive(ask(dns_server, "*.w.example.com."), {"*.w.example.com. 3600 A 192.0.2.100"})


def test_wildcard_cname(dns_server):
    assert_positive(ask(dns_server, "foo.cw.example.com."),
                    {"foo.cw.example.com. 3600 CNAME www.example.com.",
                     "www.example.com. 300 A 192.0.2.80"})
    assert_positive(ask(dns_server, "foo.cwext.example.com."),
                    {"foo.cwext.example.com. 3600 CNAME www.example.org."})


def test_wildcard_cname_loop_terminates(dns_server):
    m = ask(dns_server, "foo.cwloop.example.com.")
    assert m.rcode() == dns.rcode.NOERROR and flag(m, dns.flags.AA)
    assert ordered(m.answer)[0] == ("foo.cwloop.example.com.", "CNAME")
    assert len(rrs(m.answer)) == sum(len(r) for r in m.answer) <= 3


def test_wildcard_mx_gets_additional(dns_server):
    m = ask(dns_server, "foo.mxw.example.com.", "MX")
    assert_positive(m, {"foo.mxw.example.com. 3600 MX 10 mail.example.com."})
    assert rrs(m.additional) == {"mail.example.com. 3600 A 192.0.2.25",
                                 "mail.example.com. 3600 AAAA 2001:db8::25"}


def test_deeper_wildcard_under_empty_non_terminals(dns_server):
    assert_positive(ask(dns_server, "x.lvl2.lvl1.example.com."),
                    {"x.lvl2.lvl1.example.com. 3600 A 192.0.2.110"})
    assert_negative(ask(dns_server, "lvl1.example.com."), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "lvl2.lvl1.example.com."), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "x.lvl1.example.com."), dns.rcode.NXDOMAIN)


def test_empty_non_terminal_wildcard_gives_nodata(dns_server):
    """RFC 4592 section 2.2.1: *.star exists only as an ENT, so it matches with no data."""
    assert_positive(ask(dns_server, "a.*.star.example.com."), {"a.*.star.example.com. 3600 A 192.0.2.111"})
    assert_negative(ask(dns_server, "b.star.example.com."), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "a.x.star.example.com."), dns.rcode.NOERROR)


def test_wildcard_in_other_zone(dns_server):
    assert_positive(ask(dns_server, "q.wild.example.net.", "TXT"),
                    {'q.wild.example.net. 3600 TXT "wildcard in example.net"'})


# ------------------------------------------------------------------ negative answers

@pytest.mark.parametrize("name,zone", [("nx.example.com.", "example.com."),
                                       ("nx.example.net.", "example.net."),
                                       ("nx.sub.example.com.", "sub.example.com.")])
def test_nxdomain_negative_ttl_is_min_of_soa_ttl_and_minimum(dns_server, name, zone):
    """RFC 2308 section 5; example.net has SOA TTL 60 < MINIMUM 3600."""
    m = ask(dns_server, name)
    assert_negative(m, dns.rcode.NXDOMAIN, zone=zone)
    assert not m.additional


@pytest.mark.parametrize("name,zone", [("www.example.com.", "example.com."),
                                       ("host.example.net.", "example.net."),
                                       ("host.sub.example.com.", "sub.example.com.")])
def test_nodata_negative_ttl(dns_server, name, zone):
    assert_negative(ask(dns_server, name, "MX"), dns.rcode.NOERROR, zone=zone)


def test_empty_non_terminal_is_nodata(dns_server):
    assert_negative(ask(dns_server, "ent.example.com."), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "b.ent.example.com.", "TXT"), dns.rcode.NOERROR)
    assert_negative(ask(dns_server, "c.ent.example.com."), dns.rcode.NXDOMAIN)


def test_nxdomain_below_existing_name(dns_server):
    assert_negative(ask(dns_server, "deep.www.example.com."), dns.rcode.NXDOMAIN)


# ------------------------------------------------------------------ zone cuts

DELEG_NS = ["ns1.deleg.example.com.", "ns2.deleg.example.com.", "ns.example.net."]
DELEG_GLUE = ["ns1.deleg.example.com. 3600 A 192.0.2.201",
              "ns1.deleg.example.com. 3600 AAAA 2001:db8::201",
              "ns2.deleg.example.com. 3600 A 192.0.2.202"]


@pytest.mark.parametrize("name,rdtype", [("host.deleg.example.com.", "A"),
                                         ("deleg.example.com.", "A"),
                                         ("deleg.example.com.", "NS"),
                                         ("ns1.deleg.example.com.", "A"),
                                         ("a.b.deleg.example.com.", "TXT")])
def test_referral_with_glue(dns_server, name, rdtype):
    """RFC 1034 4.3.2 step 3b: at or below a cut, NS in authority, glue in additional."""
    m = ask(dns_server, name, rdtype)
    assert_referral(m, "deleg.example.com.", DELEG_NS, DELEG_GLUE)
    assert not [r for r in m.authority if r.rdtype == dns.rdatatype.SOA]


def test_referral_with_sibling_glue(dns_server):
    """RFC 9471: in-domain glue is required; sibling glue (ns1.deleg) is included if it fits."""
    m = ask(dns_server, "x.deleg2.example.com.")
    assert_referral(m, "deleg2.example.com.",
                    ["ns.deleg2.example.com.", "ns1.deleg.example.com."],
                    ["ns.deleg2.example.com. 3600 A 192.0.2.203"])
    assert rrs(m.additional) <= {"ns.deleg2.example.com. 3600 A 192.0.2.203"} | set(DELEG_GLUE[:2])


def test_referral_without_glue(dns_server):
    m = ask(dns_server, "deleg3.example.com.")
    assert_referral(m, "deleg3.example.com.", ["ns1.example.org.", "ns2.example.org."], [])
    assert not m.additional


def test_ds_at_cut_is_answered_by_parent(dns_server):
    """RFC 4035 section 3.1.4.1."""
    assert_positive(ask(dns_server, "deleg.example.com.", "DS"),
                    {"deleg.example.com. 3600 DS 12345 13 2 "
                     "2bb183af5f22588179a53b0a98631fad1a292118c1d4d08c3d6a4b3a1b2c3d4e"})
    assert_negative(ask(dns_server, "deleg2.example.com.", "DS"), dns.rcode.NOERROR)


def test_ds_for_served_child_zone_comes_from_parent(dns_server):
    m = ask(dns_server, "sub.example.com.", "DS")
    assert_positive(m, {"sub.example.com. 3600 DS 54321 13 2 "
                        "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"})


def test_ds_at_apex_without_served_parent_is_nodata(dns_server):
    assert_negative(ask(dns_server, "example.com.", "DS"), dns.rcode.NOERROR)


def test_served_child_zone_answers_at_and_below_its_apex(dns_server):
    m = ask(dns_server, "sub.example.com.", "NS")
    assert_positive(m, {"sub.example.com. 600 NS ns1.sub.example.com.",
                        "sub.example.com. 600 NS ns1.example.com."})
    assert_positive(ask(dns_server, "host.sub.example.com."), {"host.sub.example.com. 600 A 192.0.2.211"})
    assert_positive(ask(dns_server, "ns1.sub.example.com."), {"ns1.sub.example.com. 600 A 192.0.2.210"})
    assert_referral(ask(dns_server, "a.deleg.sub.example.com.", "TXT"), "deleg.sub.example.com.",
                    ["ns.deleg.sub.example.com."], ["ns.deleg.sub.example.com. 600 A 192.0.2.214"],
                    ttl=600)


# ------------------------------------------------------------------ additional section

def test_mx_additional(dns_server):
    m = ask(dns_server, "example.com.", "MX")
    assert_positive(m, {"example.com. 3600 MX 10 mail.example.com.",
                        "example.com. 3600 MX 20 mail2.example.net."})
    assert {"mail.example.com. 3600 A 192.0.2.25",
            "mail.example.com. 3600 AAAA 2001:db8::25"} <= rrs(m.additional)


def test_srv_additional(dns_server):
    m = ask(dns_server, "_sip._udp.example.com.", "SRV")
    assert {"sip.example.com. 3600 A 192.0.2.50", "sip.example.com. 3600 AAAA 2001:db8::50"} \
        <= rrs(m.additional)


def test_ns_additional(dns_server):
    m = ask(dns_server, "example.com.", "NS")
    assert_positive(m, {"example.com. 3600 NS ns1.example.com.", "example.com. 3600 NS ns2.example.com.",
                        "example.com. 3600 NS ns.example.net."})
    assert {"ns1.example.com. 3600 A 192.0.2.53", "ns1.example.com. 3600 AAAA 2001:db8::53",
            "ns2.example.com. 3600 A 192.0.2.54"} <= rrs(m.additional)


def test_mx_pointing_to_cname_gets_no_additional(dns_server):
    """RFC 2181 section 10.3: MX targets must not be aliases; do not chase them."""
    m = ask(dns_server, "mxcname.example.com.", "MX")
    assert_positive(m, {"mxcname.example.com. 3600 MX 10 cname.example.com."})
    assert not m.additional


# ------------------------------------------------------------------ ANY

@pytest.mark.parametrize("tcp", [False, True])
def test_any_returns_data_of_the_name(dns_server, tcp):
    """RFC 8482: all RRsets, a subset, or one synthesized HINFO are all acceptable."""
    m = ask(dns_server, "example.com.", "ANY", tcp=tcp)
    assert m.rcode() == dns.rcode.NOERROR and flag(m, dns.flags.AA)
    assert m.answer and all(r.name == dns.name.from_text(EC) for r in m.answer)
    z = dns.zone.from_file(servers.DEFAULT_ZONES[EC], origin=EC, relativize=False)
    apex = z.find_node(EC)
    for r in m.answer:
        if r.rdtype == dns.rdatatype.HINFO:
            continue
        zr = apex.get_rdataset(dns.rdataclass.IN, r.rdtype)
        assert zr is not None and set(zr) == set(r), r


def test_any_nxdomain(dns_server):
    assert_negative(ask(dns_server, "nx.example.com.", "ANY"), dns.rcode.NXDOMAIN)


# ------------------------------------------------------------------ truncation

def test_truncation_without_edns_at_512(dns_server):
    wire = dns_server.exchange(plain_wire("mid.example.com.", edns=None))
    assert len(wire) <= 512
    m = dns.message.from_wire(wire)
    assert flag(m, dns.flags.TC) and m.rcode() == dns.rcode.NOERROR


def test_edns_1232_fits_midsize_rrset(dns_server):
    m = ask(dns_server, "mid.example.com.", payload=1232)
    assert not flag(m, dns.flags.TC) and sum(len(r) for r in m.answer) == 35


@pytest.mark.parametrize("payload", [1232, 4096, 65535])
def test_large_rrset_truncated_at_1232(dns_server, payload):
    """Server payload limit 1232 (DNS flag day 2020) whatever the client offers."""
    wire = dns_server.exchange(plain_wire("big.example.com.", payload=payload))
    assert len(wire) <= 1232
    m = dns.message.from_wire(wire)
    assert flag(m, dns.flags.TC)


@pytest.mark.parametrize("name,rdtype,count", [("big.example.com.", "A", 100),
                                               ("bigtxt.example.com.", "TXT", 20)])
def test_tcp_returns_the_whole_rrset(dns_server, name, rdtype, count):
    m = ask(dns_server, name, rdtype, tcp=True)
    assert not flag(m, dns.flags.TC) and sum(len(r) for r in m.answer) == count


def test_small_client_payload_is_treated_as_512(dns_server):
    """RFC 6891 section 6.2.5: values below 512 are treated as 512."""
    m = ask(dns_server, "example.com.", "NS", payload=100)
    assert not flag(m, dns.flags.TC) and m.answer


# ------------------------------------------------------------------ protocol

@pytest.mark.parametrize("name", ["example.org.", "com.", ".", "example.com.evil.", "xample.com."])
def test_out_of_zone_is_refused(dns_server, name):
    m = ask(dns_server, name, "SOA", rd=True)
    assert m.rcode() == dns.rcode.REFUSED
    assert not flag(m, dns.flags.AA) and not flag(m, dns.flags.RA)
    assert not m.answer and not m.authority and not m.additional


def test_header_echo_rd_copied_ra_clear(dns_server):
    q = make_query("www.example.com.", "A", rd=True, id=0x1234)
    m = dns.message.from_wire(dns_server.exchange(q.to_wire()))
    assert m.id == 0x1234 and flag(m, dns.flags.QR) and flag(m, dns.flags.RD)
    assert not flag(m, dns.flags.RA) and not flag(m, dns.flags.AD)
    assert m.question == q.question


@pytest.mark.parametrize("opcode", [1, 2, 3, 6, 15])
def test_unknown_opcode_is_notimp(dns_server, opcode):
    """RFC 1035 4.1.1 / RFC 6895 section 2.2: opcodes the server does not implement."""
    b = bytearray(plain_wire())
    b[2] = (b[2] & 0x87) | (opcode << 3)
    resp = dns_server.exchange(bytes(b))
    assert resp is not None
    h = raw_header(resp)
    assert h["qr"] and h["opcode"] == opcode and h["rcode"] == dns.rcode.NOTIMP


@pytest.mark.knot_deviates("drops QDCOUNT=2 queries without answering")
def test_qdcount_2_is_formerr(dns_server):
    """RFC 9619 section 4: QUERY with QDCOUNT > 1 gets FORMERR."""
    w = plain_wire(edns=None)
    b = bytearray(w[:12])
    b[5] = 2
    resp = dns_server.exchange(bytes(b) + w[12:] + w[12:])
    assert resp is not None and raw_header(resp)["rcode"] == dns.rcode.FORMERR


def test_qdcount_0_is_formerr(dns_server):
    w = bytearray(plain_wire(edns=None)[:12])
    w[5] = 0
    resp = dns_server.exchange(bytes(w))
    assert resp is not None and raw_header(resp)["rcode"] == dns.rcode.FORMERR


@pytest.mark.parametrize("edns", [None, 0])
def test_trailing_garbage_is_formerr(dns_server, edns):
    resp = dns_server.exchange(plain_wire(edns=edns) + b"\x01\x02\x03")
    assert resp is not None and raw_header(resp)["rcode"] == dns.rcode.FORMERR


def test_two_opt_records_is_formerr(dns_server):
    """RFC 6891 section 6.1.1: more than one OPT RR -> FORMERR."""
    w0, w = plain_wire(edns=None), plain_wire()
    b = bytearray(w)
    b[11] = 2
    resp = dns_server.exchange(bytes(b) + w[len(w0):])
    assert resp is not None and raw_header(resp)["rcode"] == dns.rcode.FORMERR


@pytest.mark.parametrize("name", ["www.example.com.", "nx.example.com.", "example.org."])
def test_edns_version_1_is_badvers(dns_server, name):
    """RFC 6891 section 6.1.3: BADVERS, with an OPT of the highest version we support (0)."""
    m = ask(dns_server, name, edns=1)
    assert m.rcode() == dns.rcode.BADVERS and m.edns == 0 and not m.answer


def test_opt_echoed_with_1232_payload_and_do(dns_server):
    m = ask(dns_server, "www.example.com.", payload=4096, do=True)
    assert m.edns == 0 and m.payload == 1232
    assert m.ednsflags & dns.flags.DO, "RFC 3225 section 3: DO is copied into the response"


def test_no_opt_without_edns(dns_server):
    assert ask(dns_server, "www.example.com.", edns=None).edns == -1


def test_unknown_edns_option_is_ignored(dns_server):
    m = ask(dns_server, "www.example.com.", options=[dns.edns.GenericOption(65001, b"abc")])
    assert m.rcode() == dns.rcode.NOERROR and m.answer
    assert not [o for o in m.options if o.otype == 65001]


def test_nsid_when_configured(dns_server):
    """RFC 5001: an NSID request gets the server's identifier, if one is configured."""
    m = ask(dns_server, "www.example.com.", options=[dns.edns.GenericOption(dns.edns.NSID, b"")])
    assert m.rcode() == dns.rcode.NOERROR and m.answer
    nsid = [o for o in m.options if o.otype == dns.edns.NSID]
    if not nsid:
        pytest.skip("server has no NSID configured")
    assert len(nsid) == 1 and nsid[0].to_wire()
    assert not [o for o in ask(dns_server, "www.example.com.").options if o.otype == dns.edns.NSID]


def test_response_is_not_answered(dns_server):
    """A message with QR=1 is never answered (no reflection loops)."""
    b = bytearray(plain_wire())
    b[2] |= 0x80
    assert dns_server.exchange(bytes(b), timeout=0.5) is None


def test_tcp_pipelining(dns_server):
    """RFC 7766 section 6.2.1: ten queries back to back on one connection, ten answers."""
    names = ["www", "mail", "ns1", "ns2", "sip", "nx", "chain1", "foo.w", "host.deleg", "types"]
    wires = {0x4000 + i: make_query(n + ".example.com.", "A", id=0x4000 + i).to_wire()
             for i, n in enumerate(names)}
    with socket.create_connection((dns_server.host, dns_server.port), timeout=5) as s:
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires.values()))
        seen = {}
        for _ in wires:
            (ln,) = struct.unpack("!H", recv_exact(s, 2))
            m = dns.message.from_wire(recv_exact(s, ln))
            seen[m.id] = m
    assert set(seen) == set(wires)
    assert rrs(seen[0x4000].answer) == {"www.example.com. 300 A 192.0.2.80"}
    assert seen[0x4005].rcode() == dns.rcode.NXDOMAIN


@pytest.mark.parametrize("tool", ["dig", "kdig"])
def test_tcp_with_command_line_tools(dns_server, tool):
    if not shutil.which(tool):
        pytest.skip(tool + " not installed")
    out = subprocess.run([tool, "@127.0.0.1", "-p", str(dns_server.port), "+tcp", "+norec",
                          "+short", "chain1.example.com.", "A"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["chain2.example.com.", "chain3.example.com.",
                                  "www.example.com.", "192.0.2.80"]


# ------------------------------------------------------------------ zonecast CLI

def _wait_answer(srv, name, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            m = srv.query(name, "SOA", timeout=0.2)
            if m.rcode() == dns.rcode.NOERROR and m.answer:
                return m
        except Exception:  # noqa: BLE001 -- timeouts while waiting
            pass
        time.sleep(0.01)
    return None


@pytest.mark.zonecast_only
def test_zone_imported_while_running_is_served_within_1s(zonecast_factory, tmp_path):
    srv = zonecast_factory(zones={EC: servers.DEFAULT_ZONES[EC]})
    assert ask(srv, "live.test.", "SOA").rcode() == dns.rcode.REFUSED
    path = tmp_path / "live.test.zone"
    path.write_text("$ORIGIN live.test.\n$TTL 300\n"
                    "@ SOA ns.live.test. h.live.test. 1 3600 600 86400 60\n"
                    "@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\n")
    srv.import_zone("live.test.", str(path))
    t0 = time.monotonic()
    m = _wait_answer(srv, "live.test.", 1.0)
    assert m is not None, "zone not served %.2fs after import" % (time.monotonic() - t0)
    assert_positive(ask(srv, "www.live.test."), {"www.live.test. 300 A 192.0.2.2"})


BAD_ZONES = {
    "syntax-error": "$ORIGIN bad.test.\n@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\nns 300 A 999.1.1.1\n",
    "no-soa": "$ORIGIN bad.test.\n@ 300 NS ns\nns 300 A 192.0.2.1\n",
    "out-of-zone-record": "$ORIGIN bad.test.\n@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\n"
                          "www.example.org. 300 A 192.0.2.1\n",
    "cname-and-other-data": "$ORIGIN bad.test.\n@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\n"
                            "x 300 CNAME ns\nx 300 A 192.0.2.1\n",
}


@pytest.mark.zonecast_only
@pytest.mark.parametrize("case", sorted(BAD_ZONES))
def test_import_rejects_bad_zone_file(zonecast_factory, tmp_path, case):
    srv = zonecast_factory(zones={EC: servers.DEFAULT_ZONES[EC]})
    path = tmp_path / "bad.zone"
    path.write_text(BAD_ZONES[case])
    cp = srv.import_zone("bad.test.", str(path), check=False)
    assert cp.returncode != 0 and cp.stderr.strip(), "bad zone accepted: %s" % case
    assert _wait_answer(srv, "bad.test.", 0.3) is None, "rejected zone is served"
    assert_positive(ask(srv, "www.example.com."), {"www.example.com. 300 A 192.0.2.80"})
