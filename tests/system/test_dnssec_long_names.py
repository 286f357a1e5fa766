"""Compact denial for long names (docs/dnssec.md, "Next names").

The NSEC of a compact denial is owned by the query name; its next name must
be the first name after it in canonical order (RFC 4034 §6.1) that can
exist: \\000.<name> while that fits in 255 octets, else the first name after
the name's subtree (RFC 4471 §3.1.2). zonecast used to give the owner itself
as next name for query names over 253 octets: an NSEC that reads as the last
of the zone and covers every other name, which a resolver using its cache
aggressively (RFC 8198, unbound's default) can take as proof that names of
the zone do not exist (unbound 1.17 does not: it reads such an NSEC as
covering the names below its owner only, which cannot exist).

The zone here, ln.test., holds a name with data of every length from 240 to
255 octets for every length of its first label from 1 to 63 octets (the
label the next name changes), its other labels of random lengths from 1 to
63 (all of one octet, all of 63, or mixed), and names placed exactly where
the next name of a name just before them must land: after a first label
ending in 0xff octets, in 0x40 (0x41 to 0x5a compare as a to z), all 0xff
(the next name goes up a level), and the greatest name the zone can hold
(its next name is the apex). For every one of them and for a name just
before each, the answers to a DO=1 query are checked:

- the NSEC is owned by the query name, its next name fits in 255 octets,
  follows the query name in canonical order (the comparison is dnspython's,
  not zonecast's) and no name of the zone, empty non-terminals included,
  lies strictly between them; where the very next possible name is known,
  it is that name;
- unbound validates the NODATA and the compact NXDOMAIN (AD), and delv
  ("negative response, fully validated") for a sample of each length;
- after all that, every name of the zone still resolves through unbound.
"""

import bisect
import os
import random

import dns.flags
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

import servers
import validators
from conftest import _Running, _require_zonecast
from test_dnssec import (NXNAME, check_signed, enable, nsec_types, rrsets, show, type_names,
                         types, via_unbound)

APEX = dns.name.from_text("ln.test.")
LENGTHS = range(240, 256)
UPPER = range(ord("A"), ord("Z") + 1)


# ------------------------------------------------------------------ names

def wire_len(name):
    return len(name.to_wire())


def canon_next_octet(c):
    """The octet after c in canonical order (A-Z compare as a-z)."""
    return 0x5B if c == 0x40 else c + 1


def canon_prev_octet(c):
    return 0x40 if c == 0x5B else c - 1


def random_octets(rng, n):
    out = bytearray()
    while len(out) < n:
        c = rng.choice((0x00, 0x01, 0x2d, 0x40, 0x5b, 0x61, 0x7a, 0xfe, 0xff, rng.randrange(256)))
        if c not in UPPER:
            out.append(c)
    return bytes(out)


def tail_labels(rng, octets, style):
    """Labels that take exactly `octets` wire octets (length octets
    included): all of 1 octet, all of 63, or of random lengths."""
    labels = []
    while octets > 0:
        if octets <= 64:
            n = octets - 1
        else:
            n = {"ones": 1, "max": 63, "mixed": rng.randint(1, 63)}[style]
            if octets - (n + 1) == 1:     # never leave a single octet
                n -= 1 if n > 1 else -1
        labels.append(random_octets(rng, n))
        octets -= n + 1
    return labels


def long_name(rng, total, first, style, second=None):
    """A name of `total` wire octets under APEX whose first label is the
    bytes `first` (and second label `second`, if given); None when the
    lengths leave a single octet."""
    lead = [first] + ([second] if second is not None else [])
    rest = total - wire_len(APEX) - sum(1 + len(lb) for lb in lead)
    if rest < 0 or rest == 1:
        return None
    name = dns.name.Name(lead + tail_labels(rng, rest, style) + list(APEX.labels))
    assert wire_len(name) == total
    return name


def with_first(name, first):
    return dns.name.Name((first,) + name.labels[1:])


class Case:
    """A query name, whether it exists (data: TXT) and, when known, the one
    next name its NSEC must have."""

    def __init__(self, qname, exists, expected_next=None, what=""):
        self.qname = qname
        self.exists = exists
        self.expected_next = expected_next
        self.what = what

    def __repr__(self):
        return "%s(%d octets, first label %d)" % (self.what, wire_len(self.qname),
                                                   len(self.qname.labels[0]))


def make_cases():
    rng = random.Random(20241109)
    cases = []
    styles = ("mixed", "ones", "max")
    for total in LENGTHS:
        for first_len in range(1, 64):
            first = random_octets(rng, first_len - 1)
            last = rng.randrange(2, 256 - 1)
            if last in UPPER:
                last = 0x5B
            first += bytes([last])
            name = long_name(rng, total, first, styles[first_len % 3])
            if name is None:
                continue
            cases.append(Case(name, True, what="data"))
            # Just before it, same length: at 255 octets its next name
            # is this very name.
            before = with_first(name, first[:-1] + bytes([canon_prev_octet(last)]))
            cases.append(Case(before, False, name if total == 255 else None, "before data"))
    # 255 octets, first label ending in 0xff: dropped, the octet before
    # them incremented ("ab\xff\xff" -> "ac").
    for k in (1, 2, 5):
        name = long_name(rng, 255, b"q" * 10 + b"b" + b"\xff" * k, "mixed")
        after = with_first(name, b"q" * 10 + b"c")
        cases += [Case(name, False, after, "0xff tail"), Case(after, True, what="after 0xff tail")]
    # 0x40 is followed by 0x5b, not by 0x41 ('A' = 'a').
    name = long_name(rng, 255, b"at" * 20 + b"\x40", "mixed")
    after = with_first(name, b"at" * 20 + b"\x5b")
    cases += [Case(name, False, after, "0x40"), Case(after, True, what="after 0x40"),
              Case(with_first(name, b"at" * 20 + b"a"), True, what="a after 0x40")]
    # A first label of 0xff only: up one level, whose label gets 0x00.
    name = long_name(rng, 255, b"\xff" * 20, "mixed", second=b"up" * 5)
    parent = name.parent()
    up = dns.name.Name((b"up" * 5 + b"\x00",) + parent.labels[1:])
    cases += [Case(name, False, up, "0xff label"), Case(up, True, what="after 0xff label")]
    # ... and a 63-octet label above it: that one incremented.
    name = long_name(rng, 255, b"\xff" * 30, "mixed", second=b"u" * 62 + b"p")
    parent = name.parent()
    up = dns.name.Name((b"u" * 62 + b"q",) + parent.labels[1:])
    cases += [Case(name, False, up, "0xff label, 63 above"),
              Case(up, True, what="after 0xff label, 63 above")]
    # 254 octets, first label of 63: incremented, not extended.
    name = long_name(rng, 254, b"m" * 62 + b"d", "max")
    after = with_first(name, b"m" * 62 + b"e")
    cases += [Case(name, False, after, "254/63"), Case(after, True, what="after 254/63")]
    # 254 octets, shorter first label: a 0x00 appended to it.
    name = long_name(rng, 254, b"k" * 30, "mixed")
    cases.append(Case(name, False, with_first(name, b"k" * 30 + b"\x00"), "254 append"))
    # The greatest name the zone can hold: every label 0xff, as long as
    # possible; nothing can follow it but the end of the zone.
    labels, room = [], 255 - wire_len(APEX)
    while room > 0:
        n = min(63, room - 1)
        labels.insert(0, b"\xff" * n)
        room -= n + 1
    cases.append(Case(dns.name.Name(labels + list(APEX.labels)), False, APEX, "last name"))
    # A name made twice (random octets) would be both data and not.
    existing = {c.qname for c in cases if c.exists}
    return [c for c in cases if c.exists or c.qname not in existing]


CASES = make_cases()


def zone_names():
    """Every name of the zone: owners and the empty non-terminals above."""
    owners = {APEX, dns.name.from_text("www.ln.test."), dns.name.from_text("ns1.ln.test.")}
    owners |= {c.qname for c in CASES if c.exists}
    names = set(owners)
    for n in owners:
        while n != APEX:
            n = n.parent()
            names.add(n)
    return sorted(names)


ZONE_NAMES = zone_names()


def master_text(name):
    """name in master-file form, every octet but a-z, 0-9 and - as \\DDD
    (RFC 1035 §5.1)."""
    def octet(c):
        ok = c in b"abcdefghijklmnopqrstuvwxyz0123456789-"
        return chr(c) if ok else "\\%03d" % c
    return "".join("".join(octet(c) for c in lb) + "." for lb in name.labels[:-1])


def zone_text():
    lines = ["$ORIGIN ln.test.", "$TTL 300",
             "@ 3600 IN SOA ns1.ln.test. hostmaster.ln.test. 1 7200 3600 1209600 300",
             "@ NS ns1", "ns1 A 127.0.53.1", "www A 192.0.2.80"]
    for c in CASES:
        if c.exists:
            lines.append('%s TXT "%d octets"' % (master_text(c.qname), wire_len(c.qname)))
    return "\n".join(lines) + "\n"


def covered_names(owner, nxt):
    """The names of the zone that the NSEC owner -> nxt denies: those
    strictly between, or, for the last NSEC of a zone (next <= owner,
    RFC 4034 §4.1.1), after the owner or before the next name."""
    after = bisect.bisect_right(ZONE_NAMES, owner)
    before = bisect.bisect_left(ZONE_NAMES, nxt)
    if owner < nxt:
        return ZONE_NAMES[after:before]
    return ZONE_NAMES[after:] + ZONE_NAMES[:before]


# ------------------------------------------------------------------ fixture

class Env:
    pass


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    _require_zonecast()
    for tool, path in (("unbound", validators.unbound_bin()), ("delv", validators.delv_bin())):
        if not os.access(path, os.X_OK):
            pytest.skip("%s not installed (dev/deps test)" % tool)
    run = _Running(tmp_path_factory)
    ub = None
    try:
        e = Env()
        workdir = str(tmp_path_factory.mktemp("lnzone"))
        path = os.path.join(workdir, "ln.test.zone")
        with open(path, "w") as f:
            f.write(zone_text())
        e.srv = run.start(servers.ZonecastServer, zones={APEX.to_text(): path})
        e.ds, e.anchors, e.dnskeys = enable(e.srv, APEX.to_text())
        ub_dir = str(tmp_path_factory.mktemp("unbound"))
        ub = validators.Unbound(ub_dir, {APEX.to_text(): e.srv.port}, anchors=e.anchors).start()
        e.ub = ub
        e.anchor_file = validators.anchors_file(os.path.join(ub_dir, "anchors.conf"), e.ds)
        yield e
    finally:
        problems = ub.stop() if ub is not None else []
        run.stop_all()
        if problems:
            pytest.fail("unbound: %s\n%s" % ("; ".join(problems), ub.log_tail()), pytrace=False)


def ask(srv, name, rdtype="A", co=False):
    q = servers.make_query(name, rdtype, do=True, payload=4096)
    if co:
        q.ednsflags |= 0x4000
    return dns.query.tcp(q, srv.host, port=srv.port, timeout=2.0)


def check_denial(env, case, msg, section="authority"):
    what = repr(case)
    nsecs = rrsets(msg, section, dns.rdatatype.NSEC)
    assert len(nsecs) == 1 and len(nsecs[0]) == 1, "%s: one NSEC expected:\n%s" % (what, show(msg))
    nsec = nsecs[0]
    assert nsec.name == case.qname, "%s: NSEC owner %s" % (what, nsec.name)
    nxt = nsec[0].next
    assert wire_len(nxt) <= 255, "%s: next name of %d octets" % (what, wire_len(nxt))
    assert nxt.is_subdomain(APEX), "%s: next name %s outside the zone" % (what, nxt)
    if case.expected_next is not None:
        assert nxt == case.expected_next, "%s: next name\n  %s\nexpected\n  %s" % (
            what, nxt, case.expected_next)
    if nxt != APEX:
        assert nxt > case.qname, "%s: next name %s does not follow the owner" % (what, nxt)
    covered = covered_names(case.qname, nxt)
    assert not covered, "%s: the NSEC %s -> %s covers names of the zone, e.g. %s" % (
        what, case.qname, nxt, covered[0])
    want = types("TXT", "RRSIG", "NSEC") if case.exists else types("RRSIG", "NSEC", NXNAME)
    assert nsec_types(nsec[0]) == want, "%s: types %s" % (what, type_names(nsec_types(nsec[0])))
    check_signed(msg, APEX, env.dnskeys, sections=(section,))


# ------------------------------------------------------------------ tests

def test_the_cases_cover_every_length_and_label_length():
    lengths = {wire_len(c.qname) for c in CASES}
    assert lengths >= set(LENGTHS), sorted(set(LENGTHS) - lengths)
    for total in LENGTHS:
        firsts = {len(c.qname.labels[0]) for c in CASES if wire_len(c.qname) == total}
        assert len(firsts) >= 60, (total, sorted(firsts))
    inner = {len(lb) for c in CASES for lb in c.qname.labels[1:-3]}
    assert inner == set(range(1, 64)), sorted(set(range(1, 64)) - inner)


def check_cases(cases, check):
    """Runs check(case) on every case; fails with the first few failures."""
    failures = []
    for case in cases:
        try:
            check(case)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "%d of %d cases failed; the first ones:\n%s" % (
        len(failures), len(cases), "\n\n".join(failures[:3]))


@pytest.mark.parametrize("total", LENGTHS)
def test_next_name_follows_query_name_and_covers_nothing(env, total):
    """Every name of that length, with data (NODATA) or not (compact
    NXDOMAIN): the NSEC of the answer."""
    def check(case):
        r = ask(env.srv, case.qname, "A")
        assert r.rcode() == dns.rcode.NOERROR and r.flags & dns.flags.AA, show(r)
        assert not r.answer, show(r)
        check_denial(env, case, r)
    check_cases([c for c in CASES if wire_len(c.qname) == total], check)


def test_compact_nxdomain_with_co(env):
    def check(case):
        r = ask(env.srv, case.qname, "A", co=True)
        assert r.rcode() == dns.rcode.NXDOMAIN, show(r)
        check_denial(env, case, r)
    check_cases([c for c in CASES if not c.exists and wire_len(c.qname) >= 253], check)


def test_nsec_queries_at_long_names(env):
    """QTYPE NSEC: the same NSEC, in the answer."""
    def check(case):
        r = ask(env.srv, case.qname, "NSEC")
        assert r.rcode() == dns.rcode.NOERROR and not r.authority, show(r)
        check_denial(env, case, r, section="answer")
    check_cases([c for c in CASES if wire_len(c.qname) >= 253], check)


def test_unbound_validates_every_denial(env):
    failures = []
    for case in CASES:
        r = via_unbound(env.ub, case.qname.to_text(), "A")
        if r.rcode() != dns.rcode.NOERROR or not r.flags & dns.flags.AD or r.answer:
            failures.append("%r: %s AD=%s\n%s" % (case, dns.rcode.to_text(r.rcode()),
                                                  bool(r.flags & dns.flags.AD), show(r)))
    assert not failures, "%d of %d denials not validated by unbound:\n%s\n--- log ---\n%s" % (
        len(failures), len(CASES), "\n".join(failures[:3]), env.ub.log_tail())


def delv_sample():
    """Per length: the shortest and longest first labels, data and not."""
    out = []
    for total in LENGTHS:
        here = [c for c in CASES if wire_len(c.qname) == total]
        for exists in (True, False):
            some = sorted((c for c in here if c.exists == exists),
                          key=lambda c: len(c.qname.labels[0]))
            out += some[:1] + some[-1:]
    return out + [c for c in CASES if c.expected_next is not None and wire_len(c.qname) >= 254]


@pytest.mark.parametrize("case", delv_sample(), ids=lambda c: repr(c).replace(" ", "_"))
def test_delv_validates_denial(env, case):
    cp = validators.delv(env.srv.port, env.anchor_file, APEX.to_text(), case.qname.to_text(), "A")
    assert "; negative response, fully validated" in cp.out, "%r\n%s\n%s" % (
        case, " ".join(cp.argv), cp.out)


def test_every_name_still_resolves_through_unbound(env):
    """After every denial above sits in unbound's cache, names of the zone
    must still be answered: no cached NSEC may cover them (RFC 8198).
    unbound 1.17 reads an NSEC whose next name is its owner as covering
    only names below the owner, so the next names zonecast used to give
    pass here too; a next name that wrapped to the apex or went past a
    name of the zone would not."""
    for case in CASES:
        via_unbound(env.ub, case.qname.to_text(), "A")
    missing = []
    for case in [c for c in CASES if c.exists]:
        r = via_unbound(env.ub, case.qname.to_text(), "TXT")
        if r.rcode() != dns.rcode.NOERROR or not rrsets(r, "answer", dns.rdatatype.TXT):
            missing.append("%r: %s" % (case, dns.rcode.to_text(r.rcode())))
    r = via_unbound(env.ub, "www.ln.test.", "A")
    if not r.answer:
        missing.append("www.ln.test. A: %s" % dns.rcode.to_text(r.rcode()))
    assert not missing, "%d names denied from unbound's cache:\n%s" % (len(missing),
                                                                      "\n".join(missing[:5]))
