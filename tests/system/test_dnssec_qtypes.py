"""Queries for the DNSSEC types themselves, NSEC and RRSIG, in a zone signed
online with compact denial (docs/dnssec.md, "Queries for NSEC and RRSIG").

With compact denial every name a DO=1 query can reach has an NSEC, owned by
the name, that lists RRSIG and NSEC (RFC 9824 §3, RFC 4035 §2.3). A NODATA
for QTYPE NSEC or RRSIG proven by that NSEC is a contradiction, which
validators reject (unbound: "nodata proof failed", delv: "no valid RRSIG"),
so these queries get the data:

- NSEC: the NSEC RRset compact denial would give at the name, in the
  answer section, signed; validated by unbound (AD) and delv ("fully
  validated") at the apex, names with data, empty non-terminals, wildcard
  matches, CNAMEs, names reached through a DNAME and names that do not
  exist; without DO, unsigned (RFC 3225 §3), and a plain NXDOMAIN for a
  name that does not exist; with CO, NXDOMAIN and the proof in authority.
- RRSIG: the RRSIGs of every RRset at the name, the NSEC's included, as a
  signed zone served by knotd or BIND gives them. Each one is checked here
  against the RRset it covers and the served DNSKEYs. Validators do not
  validate positive RRSIG answers (RRSIGs are not signed, RFC 4034 §3):
  unbound passes them on without AD; delv 9.18 cannot resolve a QTYPE
  RRSIG in any signed zone (its fetch hangs, as it does against knotd's
  presigned zones), which one test pins so that an answer it could reject
  would show.
- At and below a zone cut: a referral, whose NSEC (insecure cut) has the
  next name of RFC 9824 §3.4, outside the child zone.

The module runs its own zonecast, child and unbound (the `env` fixture of
test_dnssec.py).
"""

import dns.dnssec
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from test_dnssec import (CO, CHILD, NXNAME, ZONE, N, answer_texts, ask, assert_no_dnssec,
                         assert_validated, check_compact_nsec, check_signed, enable,
                         env, nsec_types, rrsets, run_delv, show, sigs_for,  # noqa: F401 (env)
                         successor, try_ask, type_names, types, via_unbound, wait_for, zone_copy)

SIGNED = ("RRSIG", "NSEC")
APEX_TYPES = ("A", "NS", "SOA", "MX", "TXT", "DNSKEY", "CDS", "CDNSKEY")

# (query name, owner of the answer, types the NSEC lists besides RRSIG and NSEC)
NAMES = [
    (ZONE, ZONE, APEX_TYPES),
    ("www." + ZONE, "www." + ZONE, ("A", "AAAA", "TXT")),
    ("mail." + ZONE, "mail." + ZONE, ("A",)),
    ("ent." + ZONE, "ent." + ZONE, ()),                      # empty non-terminal
    ("b.ent." + ZONE, "b.ent." + ZONE, ()),
    ("wild." + ZONE, "wild." + ZONE, ()),                    # ENT above the wildcard
    ("foo.wild." + ZONE, "foo.wild." + ZONE, ("A", "TXT")),  # wildcard match
    ("a.b.c.wild." + ZONE, "a.b.c.wild." + ZONE, ("A", "TXT")),
    ("exists.wild." + ZONE, "exists.wild." + ZONE, ("A",)),
    ("chain1." + ZONE, "chain1." + ZONE, ("CNAME",)),        # the CNAME's owner
    ("dname." + ZONE, "dname." + ZONE, ("DNAME",)),
    ("nx." + ZONE, "nx." + ZONE, ("NXNAME",)),               # no such name
    ("a.b.nx2." + ZONE, "a.b.nx2." + ZONE, ("NXNAME",)),
    ("x.exists.wild." + ZONE, "x.exists.wild." + ZONE, ("NXNAME",)),
    ("x.www." + ZONE, "x.www." + ZONE, ("NXNAME",)),
]
IDS = [n.replace(ZONE, "") or "apex" for n, _o, _t in NAMES]

# Through the DNAME: the synthesised CNAME leads to a name of the zone.
DNAME_NAMES = [
    ("foo.dname." + ZONE, "foo.wild." + ZONE, ("A", "TXT")),
    ("x.exists.dname." + ZONE, "x.exists.wild." + ZONE, ("NXNAME",)),
]


def want_types(extra):
    return types(*SIGNED, *[NXNAME if t == "NXNAME" else t for t in extra])


def the_nsec(msg, section, owner, what):
    nsecs = rrsets(msg, section, dns.rdatatype.NSEC)
    assert len(nsecs) == 1 and len(nsecs[0]) == 1, "%s: expected one NSEC in %s:\n%s" % (
        what, section, show(msg))
    assert nsecs[0].name == N(owner), "%s: NSEC owner %s, not %s" % (what, nsecs[0].name, owner)
    return nsecs[0]


def check_nsec_answer(msg, owner, extra, dnskeys, what, signed=True):
    """An NSEC answer: NOERROR, AA, the NSEC at owner (next \\000.owner,
    exactly the expected types) in the answer, signed when asked."""
    assert msg.rcode() == dns.rcode.NOERROR and msg.flags & dns.flags.AA, show(msg)
    nsec = the_nsec(msg, "answer", owner, what)
    rd = nsec[0]
    assert rd.next == successor(owner), "%s: NSEC next %s, not %s" % (what, rd.next,
                                                                     successor(owner))
    got = nsec_types(rd)
    assert got == want_types(extra), "%s: NSEC types %s, expected %s" % (
        what, type_names(got), type_names(want_types(extra)))
    if signed:
        check_signed(msg, ZONE, dnskeys, sections=("answer",))
        assert not msg.authority, "%s: authority section in a positive answer:\n%s" % (
            what, show(msg))
    else:
        assert not sigs_for(msg, "answer", nsec), "%s: NSEC signed without DO:\n%s" % (
            what, show(msg))


# ------------------------------------------------------------------ QTYPE NSEC

@pytest.mark.valgrind
@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_nsec_query_answered_with_the_nsec(env, qname, owner, extra):
    for tcp in (False, True):
        r = ask(env.srv, qname, "NSEC", tcp=tcp)
        check_nsec_answer(r, owner, extra, env.dnskeys, "%s NSEC" % qname)


@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_nsec_query_validates_in_unbound(env, qname, owner, extra):
    r = assert_validated(env.ub, qname, "NSEC")
    nsec = the_nsec(r, "answer", owner, "unbound %s NSEC" % qname)
    assert nsec_types(nsec[0]) == want_types(extra), show(r)


@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_nsec_query_validates_in_delv(env, qname, owner, extra):
    cp = run_delv(env, qname, "NSEC")
    assert cp.stdout.startswith("; fully validated"), "%s\n%s" % (" ".join(cp.argv), cp.out)
    assert "\tNSEC\t" in cp.stdout, cp.out


@pytest.mark.parametrize("qname,target,extra", DNAME_NAMES, ids=["wildcard", "nx"])
def test_nsec_query_through_dname(env, qname, target, extra):
    """RFC 6672 §3.2: the DNAME, the synthesised CNAME, then the target's
    NSEC as for a query at the target; validated by unbound and delv."""
    r = ask(env.srv, qname, "NSEC")
    assert r.rcode() == dns.rcode.NOERROR, show(r)
    assert rrsets(r, "answer", dns.rdatatype.DNAME, "dname." + ZONE), show(r)
    cname = rrsets(r, "answer", dns.rdatatype.CNAME, qname)
    assert cname and cname[0][0].target == N(target), show(r)
    nsec = the_nsec(r, "answer", target, "%s NSEC" % qname)
    assert nsec_types(nsec[0]) == want_types(extra), show(r)
    check_signed(r, ZONE, env.dnskeys, sections=("answer",), skip={(N(qname), dns.rdatatype.CNAME)})
    u = assert_validated(env.ub, qname, "NSEC")
    assert rrsets(u, "answer", dns.rdatatype.NSEC, target), show(u)
    cp = run_delv(env, qname, "NSEC")
    assert cp.stdout.startswith("; fully validated"), "%s\n%s" % (" ".join(cp.argv), cp.out)


@pytest.mark.valgrind
@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_nsec_query_without_do(env, qname, owner, extra):
    """RFC 3225 §3: security records asked for by type come without DO too,
    unsigned; a name that does not exist is a plain NXDOMAIN, as for every
    type without DO (RFC 9824 §5)."""
    r = ask(env.srv, qname, "NSEC", do=False)
    if "NXNAME" in extra:
        assert r.rcode() == dns.rcode.NXDOMAIN and r.flags & dns.flags.AA, show(r)
        assert_no_dnssec(r, "%s NSEC DO=0" % qname)
        return
    check_nsec_answer(r, owner, extra, env.dnskeys, "%s NSEC DO=0" % qname, signed=False)
    assert not rrsets(r, "answer", dns.rdatatype.RRSIG), show(r)


@pytest.mark.valgrind
def test_nsec_query_with_co_flag(env):
    """RFC 9824 §5.1: with CO, a name that does not exist is NXDOMAIN with the
    compact proof in authority, whatever the type; a name that exists is
    answered as without CO."""
    for qname in ("nx." + ZONE, "a.b.nx2." + ZONE):
        r = ask(env.srv, qname, "NSEC", co=True)
        assert r.rcode() == dns.rcode.NXDOMAIN and r.ednsflags & CO, show(r)
        assert not r.answer, show(r)
        check_compact_nsec(r, qname, types("RRSIG", "NSEC", NXNAME), ZONE, env.dnskeys,
                           "%s NSEC CO" % qname)
    r = ask(env.srv, "www." + ZONE, "NSEC", co=True)
    check_nsec_answer(r, "www." + ZONE, ("A", "AAAA", "TXT"), env.dnskeys, "www NSEC CO")


def test_nsec_and_rrsig_queries_in_an_unsigned_zone(env):
    """The unsigned child holds no NSEC and no RRSIG: NODATA, as before."""
    for qname in (CHILD, "host." + CHILD):
        for rdtype in ("NSEC", "RRSIG"):
            for do in (True, False):
                r = ask(env.child, qname, rdtype, do=do)
                assert r.rcode() == dns.rcode.NOERROR and not r.answer, show(r)
                assert_no_dnssec(r, "%s %s in the unsigned child" % (qname, rdtype))
    r = ask(env.child, "nx." + CHILD, "NSEC")
    assert r.rcode() == dns.rcode.NXDOMAIN, show(r)


# ------------------------------------------------------------------ QTYPE RRSIG

def covered_types(msg, owner):
    """{covered type: RRSIG RRset} of the RRSIGs at owner in the answer."""
    out = {}
    for rs in rrsets(msg, "answer", dns.rdatatype.RRSIG, owner):
        assert rs.covers not in out, show(msg)
        out[rs.covers] = rs
    return out


def check_rrsig_answer(env, msg, qname, owner, extra, what):
    """The RRSIGs of every RRset at owner, NSEC included, each one a valid
    signature of the RRset it covers (fetched from the server)."""
    assert msg.rcode() == dns.rcode.NOERROR and msg.flags & dns.flags.AA, show(msg)
    assert all(rs.rdtype == dns.rdatatype.RRSIG for rs in msg.answer), (
        "%s: only RRSIGs belong in the answer:\n%s" % (what, show(msg)))
    assert not msg.authority, show(msg)
    sigs = covered_types(msg, owner)
    want = want_types(extra) - {dns.rdatatype.RRSIG, NXNAME}
    assert set(sigs) == want, "%s: RRSIGs cover %s, expected %s\n%s" % (
        what, type_names(sigs), type_names(want), show(msg))
    for covered, sig in sigs.items():
        r = ask(env.srv, qname, covered)
        rrset = [rs for rs in r.answer if rs.rdtype == covered and rs.name == N(owner)]
        assert rrset, "%s: no %s RRset at %s:\n%s" % (what, dns.rdatatype.to_text(covered),
                                                       owner, show(r))
        try:
            dns.dnssec.validate(rrset[0], sig, {N(ZONE): env.dnskeys})
        except dns.dnssec.ValidationFailure as e:
            pytest.fail("%s: the RRSIG over %s does not validate (%s):\n%s"
                        % (what, dns.rdatatype.to_text(covered), e, show(msg)))
        for rd in sig:
            assert rd.signer == N(ZONE) and rd.labels == len(N(owner).labels) - 1, (
                "%s: %s" % (what, rd))


@pytest.mark.valgrind
@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_rrsig_query_answered_with_the_rrsigs(env, qname, owner, extra):
    for tcp in (False, True):
        r = ask(env.srv, qname, "RRSIG", tcp=tcp)
        check_rrsig_answer(env, r, qname, owner, extra, "%s RRSIG" % qname)


@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_rrsig_query_through_unbound(env, qname, owner, extra):
    """unbound does not validate a positive RRSIG answer ("cannot validate
    RRSIG, no sigs on sigs") and passes it on: NOERROR, the same RRSIGs."""
    r = via_unbound(env.ub, qname, "RRSIG")
    assert r.rcode() == dns.rcode.NOERROR, "%s\n--- unbound log ---\n%s" % (show(r),
                                                                          env.ub.log_tail())
    want = want_types(extra) - {dns.rdatatype.RRSIG, NXNAME}
    assert set(covered_types(r, owner)) == want, show(r)


def test_rrsig_query_in_delv_is_no_validation_failure(env):
    """delv 9.18 cannot resolve QTYPE RRSIG in a signed zone at all: it caches
    RRSIGs only with the RRset they cover and waits for a validation that
    never starts, whoever serves the zone (knotd's presigned zones too).
    What it must not report is a failed proof, as it did for the NODATA
    zonecast used to give ("insecurity proof failed")."""
    cp = run_delv(env, "www." + ZONE, "RRSIG")
    for failure in ("no valid RRSIG", "insecurity proof failed", "bogus", "broken trust",
                    "no valid signature", "not fully validated"):
        assert failure not in cp.out, "%s\n%s" % (" ".join(cp.argv), cp.out)
    assert cp.stdout.startswith("; fully validated") or "hung fetch" in cp.out, cp.out


@pytest.mark.parametrize("qname,owner,extra", NAMES, ids=IDS)
def test_rrsig_query_without_do(env, qname, owner, extra):
    """Asked for by type: the RRSIGs without DO too (RFC 3225 §3); a name
    that does not exist: plain NXDOMAIN."""
    r = ask(env.srv, qname, "RRSIG", do=False)
    if "NXNAME" in extra:
        assert r.rcode() == dns.rcode.NXDOMAIN, show(r)
        assert_no_dnssec(r, "%s RRSIG DO=0" % qname)
        return
    check_rrsig_answer(env, r, qname, owner, extra, "%s RRSIG DO=0" % qname)


@pytest.fixture
def zone_with_split_keys(env):
    """A copy of signed.test signed with a KSK and a ZSK (--split)."""
    origin = "rrsigsplit.test."
    path = zone_copy(env.srv.workdir, origin)
    env.srv.import_zone(origin.rstrip("."), path)
    wait_for(lambda: (try_ask(env.srv, origin, "SOA", do=False) or dns.message.Message()).answer,
             "%s served" % origin)
    _ds, _lines, keys = enable(env.srv, origin, "--split")
    return origin, keys


def test_rrsig_query_with_split_keys(env, zone_with_split_keys):
    """With a KSK and a ZSK: DNSKEY, CDS and CDNSKEY signed by the KSK, the
    rest by the ZSK, as in the answers for those types."""
    z, keys = zone_with_split_keys
    r = ask(env.srv, z, "RRSIG")
    sigs = covered_types(r, z)
    assert len(sigs) == len(APEX_TYPES) + 1, show(r)
    ksk = {dns.dnssec.key_id(k) for k in keys if k.flags == 257}
    zsk = {dns.dnssec.key_id(k) for k in keys if k.flags == 256}
    assert ksk and zsk
    for covered, sig in sigs.items():
        tags = {rd.key_tag for rd in sig}
        apex_key = covered in (dns.rdatatype.DNSKEY, dns.rdatatype.CDS, dns.rdatatype.CDNSKEY)
        assert tags == (ksk if apex_key else zsk), "%s signed by %s\n%s" % (
            dns.rdatatype.to_text(covered), tags, show(r))


# ------------------------------------------------------------------ zone cuts

@pytest.mark.valgrind
@pytest.mark.parametrize("rdtype", ["NSEC", "RRSIG"])
@pytest.mark.parametrize("qname", ["insecure." + ZONE, "host.insecure." + ZONE])
def test_dnssec_types_at_an_insecure_cut_are_referred(env, qname, rdtype):
    """The child answers for names at and below its apex: a referral, whose
    NSEC proves there is no DS and, RFC 9824 §3.4, has as next name
    insecure\\000.signed.test.: outside the child zone."""
    r = ask(env.srv, qname, rdtype)
    cut = "insecure." + ZONE
    assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.AA, show(r)
    assert not r.answer, show(r)
    assert rrsets(r, "authority", dns.rdatatype.NS, cut), show(r)
    nsec = the_nsec(r, "authority", cut, "%s %s" % (qname, rdtype))
    assert nsec[0].next == N("insecure\\000." + ZONE), show(r)
    assert nsec_types(nsec[0]) == types("NS", "RRSIG", "NSEC"), show(r)
    check_signed(r, ZONE, env.dnskeys, sections=("authority",),
                 skip={(N(cut), dns.rdatatype.NS)})
    # unbound follows the referral to the unsigned child: insecure, no error
    u = via_unbound(env.ub, qname, rdtype)
    assert u.rcode() == dns.rcode.NOERROR and not u.flags & dns.flags.AD, "%s\n%s" % (
        show(u), env.ub.log_tail())


@pytest.mark.parametrize("rdtype", ["NSEC", "RRSIG"])
@pytest.mark.parametrize("qname", ["secure." + ZONE, "host.secure." + ZONE])
def test_dnssec_types_at_a_secure_cut_are_referred(env, qname, rdtype):
    r = ask(env.srv, qname, rdtype)
    cut = "secure." + ZONE
    assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.AA, show(r)
    assert not r.answer, show(r)
    assert rrsets(r, "authority", dns.rdatatype.NS, cut), show(r)
    assert rrsets(r, "authority", dns.rdatatype.DS, cut), show(r)
    assert not rrsets(r, "authority", dns.rdatatype.NSEC), show(r)


def test_ds_nodata_at_an_insecure_cut_has_next_name_outside_the_child(env):
    """The DS query is the parent's (RFC 4035 §3.1.4.1); its NSEC, owned by
    the cut, must not name the child's \\000.insecure.signed.test. (RFC 9824
    §3.4); delv and unbound validate the NODATA."""
    r = ask(env.srv, "insecure." + ZONE, "DS")
    nsec = the_nsec(r, "authority", "insecure." + ZONE, "insecure DS")
    assert nsec[0].next == N("insecure\\000." + ZONE), show(r)
    assert_validated(env.ub, "insecure." + ZONE, "DS")
    cp = run_delv(env, "insecure." + ZONE, "DS")
    assert "; negative response, fully validated" in cp.out, cp.out
    # and validators still take the referral's NSEC as proof of no DS
    u = via_unbound(env.ub, "host." + CHILD, "A")
    assert answer_texts(u, "host." + CHILD, "A") == ["192.0.2.203"], show(u)
    assert not u.flags & dns.flags.AD, show(u)


@pytest.mark.valgrind
def test_other_types_unchanged(env):
    """Only the NSEC and RRSIG types changed: NODATA elsewhere keeps its
    compact proof in authority."""
    r = ask(env.srv, "www." + ZONE, "MX")
    check_compact_nsec(r, "www." + ZONE, types("A", "AAAA", "TXT", "RRSIG", "NSEC"), ZONE,
                       env.dnskeys, "www MX")
    assert not r.answer
    r = ask(env.srv, "nx." + ZONE, "A")
    check_compact_nsec(r, "nx." + ZONE, types("RRSIG", "NSEC", NXNAME), ZONE, env.dnskeys,
                       "nx A")
