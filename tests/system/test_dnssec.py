"""Online DNSSEC signing with compact denial (docs/dnssec.md, RFC 9824).

One zonecast for the module serves zones/signed.test.zone, signed by
`zonecast dnssec enable`, and a second one serves its unsigned child
insecure.signed.test. (behind the delegation without DS). Answers are
checked three ways:

- through unbound as a validating resolver (validators.py) whose trust
  anchor is the DS printed by `zonecast dnssec ds`: every answer must come
  back with AD set; a wrong anchor, a disabled zone or a signature flipped
  by a proxy must make it SERVFAIL (so AD is not unbound being lenient);
- through BIND's delv with the same anchor: "; fully validated" for data,
  "; negative response, fully validated" for the compact denial proofs;
- directly with dnspython: the exact shapes of docs/dnssec.md (RRSIG
  fields, NSEC owner/next/types, NXNAME, the CO flag, FORMERR for type 128,
  CDS/CDNSKEY, DS = make_ds(DNSKEY)), each RRSIG checked cryptographically
  by dnspython against the served DNSKEY RRset.

Other tests make zones of their own in the same server (copies of
signed.test.zone under another origin) for --algorithm ed25519, --split,
disable, the API (GET/PATCH /zones/{id}/dnssec) and changes made right
after enabling (API POST, RFC 2136 UPDATE with TSIG).
"""

import base64
import itertools
import os
import re
import time

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import servers
import validators
from conftest import _Running, _require_zonecast

ZONE = "signed.test."
CHILD = "insecure.signed.test."
ZONE_FILE = os.path.join(servers.ZONES_DIR, "signed.test.zone")
CHILD_FILE = os.path.join(servers.ZONES_DIR, "insecure.signed.test.zone")
NXNAME = 128                   # RFC 9824 §2
CO = 0x4000                    # Compact Answers OK, EDNS header flag (RFC 9824 §4)
WAIT = 5.0 * servers.TIMEOUT_SCALE  # a change must be served (signed) within this
SIGNED_TYPES = {dns.rdatatype.RRSIG, dns.rdatatype.NSEC, dns.rdatatype.DNSKEY,
                dns.rdatatype.NSEC3, dns.rdatatype.NSEC3PARAM}
_seq = itertools.count(1)


# ------------------------------------------------------------------ helpers

def N(text):
    return dns.name.from_text(text)


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.1fs waiting for %s"
                        % (timeout, what() if callable(what) else what))
        time.sleep(0.02)


def ask(srv, name, rdtype="A", do=True, co=False, tcp=False, timeout=2.0):
    """A direct (non-recursive) query to the server under test; TCP when the
    UDP answer is truncated."""
    q = servers.make_query(name, rdtype, do=do, payload=4096)
    if co:
        q.ednsflags |= CO
    if tcp:
        return dns.query.tcp(q, srv.host, port=srv.port, timeout=timeout)
    r = dns.query.udp(q, srv.host, port=srv.port, timeout=timeout)
    if r.flags & dns.flags.TC:
        r = dns.query.tcp(q, srv.host, port=srv.port, timeout=timeout)
    return r


def try_ask(srv, *a, **kw):
    try:
        return ask(srv, *a, **kw)
    except Exception:
        return None


def nsec_types(rd):
    """The set of type numbers in an NSEC type bitmap."""
    out = set()
    for window, bitmap in rd.windows:
        for i, byte in enumerate(bitmap):
            for bit in range(8):
                if byte & (0x80 >> bit):
                    out.add(window * 256 + i * 8 + bit)
    return out


def types(*names):
    return {dns.rdatatype.from_text(t) if isinstance(t, str) else t for t in names}


def type_names(ts):
    return sorted(dns.rdatatype.to_text(t) for t in ts)


def successor(name):
    """\\000.<name>: RFC 9824's next name for a compact denial NSEC."""
    name = N(name) if isinstance(name, str) else name
    return dns.name.Name((b"\x00",) + name.labels)


def rrsets(msg, section, rdtype=None, name=None):
    sec = getattr(msg, section)
    return [r for r in sec if (rdtype is None or r.rdtype == rdtype)
            and (name is None or r.name == (N(name) if isinstance(name, str) else name))]


def sigs_for(msg, section, rrset):
    """RRSIG RRsets in section covering (rrset.name, rrset.rdtype)."""
    return [r for r in getattr(msg, section) if r.rdtype == dns.rdatatype.RRSIG
            and r.covers == rrset.rdtype and r.name == rrset.name]


def expected_labels(name):
    n = len(name.labels) - 1            # without the root label
    return n - 1 if name.labels[0] == b"*" else n


def show(msg):
    return msg.to_text() if msg is not None else "(no answer)"


def check_signed(msg, zone, dnskeys, sections=("answer", "authority"), tags=None,
                 skip=()):
    """Every RRset of the sections (but RRSIGs and `skip` (name, type) pairs)
    has RRSIGs whose signer is the zone, whose labels/original TTL/validity
    fit, whose key tag is one of `tags` (default: any served DNSKEY), and
    one of which dnspython validates against the served DNSKEY RRset."""
    zone = N(zone) if isinstance(zone, str) else zone
    now = time.time()
    served_tags = {dns.dnssec.key_id(k) for k in dnskeys}
    tags = served_tags if tags is None else set(tags)
    checked = 0
    for section in sections:
        for rrset in getattr(msg, section):
            if rrset.rdtype == dns.rdatatype.RRSIG or (rrset.name, rrset.rdtype) in skip:
                continue
            what = "%s %s in %s" % (rrset.name, dns.rdatatype.to_text(rrset.rdtype), section)
            sigsets = sigs_for(msg, section, rrset)
            assert sigsets, "no RRSIG for %s:\n%s" % (what, show(msg))
            for sig in sigsets[0]:
                assert sig.signer == zone, "%s: signer %s, not %s" % (what, sig.signer, zone)
                assert sig.key_tag in tags, ("%s: RRSIG key tag %d not in %s"
                                             % (what, sig.key_tag, sorted(tags)))
                assert sig.labels == expected_labels(rrset.name), (
                    "%s: RRSIG labels %d, owner has %d" % (what, sig.labels,
                                                          expected_labels(rrset.name)))
                assert sig.original_ttl == rrset.ttl, (
                    "%s: RRSIG original TTL %d, RRset TTL %d" % (what, sig.original_ttl, rrset.ttl))
                assert sig.inception <= now - 60, "%s: inception %d is not in the past" % (
                    what, sig.inception)
                assert sig.expiration >= now + 86400, "%s: expires within a day (%d)" % (
                    what, sig.expiration)
                assert sig.expiration - sig.inception <= 9 * 86400, (
                    "%s: validity %d s > 7 days + 1 h + 1 day of jitter"
                    % (what, sig.expiration - sig.inception))
            try:
                dns.dnssec.validate(rrset, sigsets[0], {zone: dnskeys})
            except dns.dnssec.ValidationFailure as e:
                pytest.fail("%s: RRSIG does not validate against the served DNSKEYs (%s):\n%s"
                            % (what, e, show(msg)))
            checked += 1
    return checked


def assert_no_dnssec(msg, what):
    for section in ("answer", "authority", "additional"):
        bad = [r for r in getattr(msg, section) if r.rdtype in SIGNED_TYPES]
        assert not bad, "%s: DNSSEC records in %s without DO:\n%s" % (what, section, show(msg))


def check_compact_nsec(msg, qname, want_types, zone, dnskeys, what):
    """The NSEC of a compact answer: one, owned by qname, next \\000.qname,
    exactly want_types in its bitmap, signed (and the SOA too)."""
    qname = N(qname)
    nsecs = rrsets(msg, "authority", dns.rdatatype.NSEC)
    assert len(nsecs) == 1, "%s: expected one NSEC RRset in authority:\n%s" % (what, show(msg))
    nsec = nsecs[0]
    assert nsec.name == qname, "%s: NSEC owner %s, not the query name %s" % (what, nsec.name, qname)
    assert len(nsec) == 1
    rd = nsec[0]
    assert rd.next == successor(qname), "%s: NSEC next %s, not %s" % (
        what, rd.next, successor(qname))
    got = nsec_types(rd)
    assert got == want_types, "%s: NSEC types %s, expected %s" % (
        what, type_names(got), type_names(want_types))
    soas = rrsets(msg, "authority", dns.rdatatype.SOA)
    assert len(soas) == 1 and soas[0].name == N(zone), "%s: no SOA of the zone in authority:\n%s" % (
        what, show(msg))
    check_signed(msg, zone, dnskeys, sections=("authority",))


def zone_copy(workdir, origin):
    """signed.test.zone rewritten for another origin; returns the path."""
    with open(ZONE_FILE) as f:
        text = f.read()
    text = text.replace("signed.test.", origin)
    path = os.path.join(workdir, origin + "zone")
    with open(path, "w") as f:
        f.write(text)
    return path


# ------------------------------------------------------------------ zonecast dnssec CLI

def dnssec_cli(srv, cmd, zone, *args, check=True):
    return srv.run_cli("dnssec", cmd, "--data-dir", srv.data_dir, zone.rstrip("."), *args,
                       check=check)


def served_dnskeys(srv, zone):
    r = try_ask(srv, zone, "DNSKEY")
    if r is None:
        return None
    keys = rrsets(r, "answer", dns.rdatatype.DNSKEY, zone)
    if not keys or not sigs_for(r, "answer", keys[0]):
        return None
    return keys[0]


def enable(srv, zone, *flags):
    """`zonecast dnssec enable ZONE [flags]`; waits until the zone is served
    signed; returns (DS list of (owner, rdata), DS text lines, DNSKEY RRset)."""
    cp = dnssec_cli(srv, "enable", zone, *flags, check=False)
    assert cp.returncode == 0, "zonecast dnssec enable %s %s failed (%d):\n%s%s" % (
        zone, " ".join(flags), cp.returncode, cp.stdout, cp.stderr)
    ds = validators.parse_ds(cp.stdout)
    assert ds, "dnssec enable printed no DS record:\n%s" % cp.stdout
    for owner, _rd in ds:
        assert owner == zone, "DS owner %s for zone %s" % (owner, zone)
    keys = wait_for(lambda: served_dnskeys(srv, zone),
                    lambda: "a signed DNSKEY RRset for %s after enable; last answer:\n%s"
                    % (zone, show(try_ask(srv, zone, "DNSKEY"))))
    return ds, ds_lines(ds), keys


def ds_lines(ds, owner=None):
    return ["%s 3600 IN DS %s" % (owner or o, rd.to_text()) for o, rd in ds]


def zone_is_unsigned(srv, zone):
    r = try_ask(srv, zone, "SOA")
    return r is not None and r.answer and not rrsets(r, "answer", dns.rdatatype.RRSIG)


# ------------------------------------------------------------------ fixtures

class Env:
    pass


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The signed zone, its unsigned child and unbound validating both."""
    _require_zonecast()
    for tool, path in (("unbound", validators.unbound_bin()), ("delv", validators.delv_bin())):
        if not os.access(path, os.X_OK):
            pytest.skip("%s not installed (dev/deps test)" % tool)
    run = _Running(tmp_path_factory)
    ub = None
    try:
        e = Env()
        e.srv = run.start(servers.ZonecastServer, api=True, zones={ZONE: ZONE_FILE})
        e.child = run.start(servers.ZonecastServer, zones={CHILD: CHILD_FILE})
        # DO=0 answers before signing: after it they must be the same
        e.unsigned = {q: snapshot(try_ask(e.srv, *q, do=False)) for q in DO0_QUERIES}
        e.ds, e.anchors, e.dnskeys = enable(e.srv, ZONE)
        e.api = e.srv.client()
        e.zone_id = e.api.zone_id(ZONE)
        workdir = str(tmp_path_factory.mktemp("unbound"))
        ub = validators.Unbound(workdir, {ZONE: e.srv.port, CHILD: e.child.port},
                                anchors=e.anchors).start()
        e.ub = ub
        e.anchor_file = validators.anchors_file(os.path.join(workdir, "anchors.conf"), e.ds)
        e.tmp = tmp_path_factory
        yield e
    finally:
        problems = ub.stop() if ub is not None else []
        run.stop_all()
        if problems:
            pytest.fail("unbound: %s\n%s" % ("; ".join(problems), ub.log_tail()), pytrace=False)


@pytest.fixture
def resolvers(tmp_path_factory):
    """Start extra unbound instances: resolvers(stubs, anchors)."""
    started = []

    def start(stubs, anchors, **kw):
        ub = validators.Unbound(str(tmp_path_factory.mktemp("unbound")), stubs,
                                anchors=anchors, **kw)
        started.append(ub)
        return ub.start()

    yield start
    problems = []
    for ub in started:
        problems += ub.stop()
    if problems:
        pytest.fail("unbound: %s" % "; ".join(problems), pytrace=False)


@pytest.fixture
def new_zone(env):
    """new_zone(prefix): a copy of signed.test under a fresh origin, imported
    into the running server; returns the origin."""
    def make(prefix):
        origin = "%s%d.test." % (prefix, next(_seq))
        path = zone_copy(env.srv.workdir, origin)
        env.srv.import_zone(origin.rstrip("."), path)
        wait_for(lambda: (try_ask(env.srv, origin, "SOA", do=False) or dns.message.Message()).answer,
                 "%s served" % origin)
        return origin
    return make


def via_unbound(ub, name, rdtype="A"):
    try:
        return ub.query(name, rdtype)
    except Exception as e:  # a timeout is a failure with the log to read
        pytest.fail("unbound gave no answer for %s %s (%s):\n%s" % (name, rdtype, e, ub.log_tail()))


def assert_validated(ub, name, rdtype, rcode=dns.rcode.NOERROR):
    r = via_unbound(ub, name, rdtype)
    assert r.rcode() == rcode, "unbound: %s %s -> %s, expected %s\n%s\n--- unbound log ---\n%s" % (
        name, rdtype, dns.rcode.to_text(r.rcode()), dns.rcode.to_text(rcode), show(r),
        ub.log_tail())
    assert r.flags & dns.flags.AD, "unbound: %s %s answered without AD\n%s\n--- unbound log ---\n%s" % (
        name, rdtype, show(r), ub.log_tail())
    return r


def assert_bogus(ub, name, rdtype="A"):
    r = via_unbound(ub, name, rdtype)
    assert r.rcode() == dns.rcode.SERVFAIL, (
        "unbound: %s %s -> %s (AD=%s), expected SERVFAIL (bogus)\n%s\n--- unbound log ---\n%s"
        % (name, rdtype, dns.rcode.to_text(r.rcode()), bool(r.flags & dns.flags.AD), show(r),
           ub.log_tail()))
    return r


def answer_texts(r, name, rdtype):
    return sorted(rd.to_text() for rs in rrsets(r, "answer", dns.rdatatype.from_text(rdtype), name)
                  for rd in rs)


# ------------------------------------------------------------------ through unbound

POSITIVE = [
    # (name, type, expected rdata of (name, type) in the answer)
    (ZONE, "A", ["192.0.2.1"]),
    ("www." + ZONE, "A", ["192.0.2.80"]),
    ("www." + ZONE, "AAAA", ["2001:db8::80"]),
    (ZONE, "MX", ["10 mail.signed.test."]),
    (ZONE, "TXT", ['"signed zone of the system tests"', '"v=spf1 -all"']),
    (ZONE, "NS", ["ns1.signed.test.", "ns2.signed.test."]),
    ("ns1." + ZONE, "A", ["127.0.53.1"]),
    ("foo.wild." + ZONE, "A", ["192.0.2.100"]),
    ("a.b.c.wild." + ZONE, "TXT", ['"wildcard"']),
    ("exists.wild." + ZONE, "A", ["192.0.2.101"]),
    ("a.b.ent." + ZONE, "A", ["192.0.2.120"]),
    ("secure." + ZONE, "DS",
     ["12345 13 2 2bb183af5f22588179a53b0a98631fad1a292118c1d4d08c3d6a4b3a1b2c3d4e"]),
]


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype,want", POSITIVE, ids=["%s/%s" % (n, t) for n, t, _ in POSITIVE])
def test_unbound_validates_positive(env, name, rdtype, want):
    r = assert_validated(env.ub, name, rdtype)
    assert answer_texts(r, name, rdtype) == sorted(want), show(r)


@pytest.mark.valgrind
def test_unbound_validates_cname_chain(env):
    r = assert_validated(env.ub, "chain1." + ZONE, "A")
    assert answer_texts(r, "chain1." + ZONE, "CNAME") == ["chain2.signed.test."], show(r)
    assert answer_texts(r, "chain2." + ZONE, "CNAME") == ["www.signed.test."], show(r)
    assert answer_texts(r, "www." + ZONE, "A") == ["192.0.2.80"], show(r)


NEGATIVE = [
    # (name, type): NOERROR, empty answer (NODATA or compact NXDOMAIN)
    ("www." + ZONE, "MX"),                 # NODATA
    (ZONE, "AAAA"),                        # NODATA at the apex
    ("nx." + ZONE, "A"),                   # does not exist: compact denial
    ("deeper.nx." + ZONE, "TXT"),
    ("ent." + ZONE, "A"),                  # empty non-terminal
    ("b.ent." + ZONE, "TXT"),
    ("foo.wild." + ZONE, "MX"),            # wildcard NODATA
    ("insecure." + ZONE, "DS"),            # no DS at the insecure cut
]


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype", NEGATIVE, ids=["%s/%s" % n for n in NEGATIVE])
def test_unbound_validates_negative(env, name, rdtype):
    r = assert_validated(env.ub, name, rdtype)
    assert not rrsets(r, "answer", dns.rdatatype.from_text(rdtype)), show(r)


@pytest.mark.valgrind
def test_unbound_nxdomain_name_is_nodata_shaped(env):
    """A name that does not exist: NOERROR (RFC 9824 §3), AD set, nothing in
    the answer; and a name below it as well."""
    for name in ("nothing-here." + ZONE, "x.y.nothing-here2." + ZONE):
        r = assert_validated(env.ub, name, "A")
        assert not r.answer, show(r)


@pytest.mark.valgrind
def test_unbound_insecure_delegation(env):
    """The cut without DS: the DS query is a validated NODATA (AD, no DS);
    a name in the unsigned child is answered (NOERROR, not SERVFAIL) and
    without AD, the child being provably insecure."""
    r = assert_validated(env.ub, "insecure." + ZONE, "DS")
    assert not rrsets(r, "answer", dns.rdatatype.DS), show(r)
    r = via_unbound(env.ub, "host.insecure." + ZONE, "A")
    assert r.rcode() == dns.rcode.NOERROR, "%s\n%s" % (show(r), env.ub.log_tail())
    assert answer_texts(r, "host.insecure." + ZONE, "A") == ["192.0.2.203"], show(r)
    assert not r.flags & dns.flags.AD, "AD on an answer from the insecure child:\n%s" % show(r)


@pytest.mark.valgrind
def test_unbound_validates_dnskey(env):
    r = assert_validated(env.ub, ZONE, "DNSKEY")
    keys = rrsets(r, "answer", dns.rdatatype.DNSKEY, ZONE)
    assert keys and {dns.dnssec.key_id(k) for k in keys[0]} == {
        dns.dnssec.key_id(k) for k in env.dnskeys}, show(r)


# ------------------------------------------------------------------ the validator really validates

def test_wrong_trust_anchor_digest_is_bogus(env, resolvers):
    owner, ds = env.ds[0]
    digest = bytearray(ds.digest)
    digest[0] ^= 0x01
    bad = ds.replace(digest=bytes(digest))
    ub = resolvers({ZONE: env.srv.port}, ["%s 3600 IN DS %s" % (owner, bad.to_text())])
    assert_bogus(ub, "www." + ZONE, "A")
    assert_bogus(ub, "nx." + ZONE, "A")


def test_trust_anchor_of_another_zones_key_is_bogus(env, new_zone, resolvers):
    """The DS of another signed zone's key, put under signed.test."""
    other = new_zone("other")
    ds, _lines, _keys = enable(env.srv, other)
    assert {rd.key_tag for _o, rd in ds} != {rd.key_tag for _o, rd in env.ds} or \
        {rd.digest for _o, rd in ds} != {rd.digest for _o, rd in env.ds}, \
        "two zones got the same key"
    ub = resolvers({ZONE: env.srv.port}, ds_lines(ds, owner=ZONE))
    assert_bogus(ub, "www." + ZONE, "A")
    assert_bogus(ub, ZONE, "MX")


@pytest.mark.parametrize("victim", ["A", "NSEC", "DNSKEY"])
def test_corrupted_signature_is_bogus(env, resolvers, victim):
    """A proxy flips one byte in the RRSIGs covering `victim`: unbound must
    reject exactly what depends on them, and still validate the rest."""
    vt = dns.rdatatype.from_text(victim)
    proxy = validators.CorruptingProxy(env.srv.port, lambda owner, covered: covered == vt).start()
    try:
        ub = resolvers({ZONE: proxy.port}, env.anchors)
        if victim == "A":
            assert_bogus(ub, "www." + ZONE, "A")
            assert_bogus(ub, "wc%d.wild.%s" % (next(_seq), ZONE), "A")
            assert_validated(ub, "www." + ZONE, "AAAA")
        elif victim == "NSEC":
            assert_bogus(ub, "nx%d.%s" % (next(_seq), ZONE), "A")
            assert_bogus(ub, "www." + ZONE, "MX")
            assert_validated(ub, "www." + ZONE, "A")
        else:
            assert_bogus(ub, "www." + ZONE, "A")
        assert proxy.corrupted > 0, "the proxy saw no RRSIG covering %s" % victim
    finally:
        proxy.stop()


def test_disable_with_old_anchor_is_bogus(env, new_zone, resolvers):
    z = new_zone("dis")
    _ds, lines, _keys = enable(env.srv, z)
    ub = resolvers({z: env.srv.port}, lines)
    assert_validated(ub, "www." + z, "A")
    # --force: keys removed at once, the DS still trusted (the anchor).
    cp = dnssec_cli(env.srv, "disable", z, "--force", check=False)
    assert cp.returncode == 0, "dnssec disable failed: %s%s" % (cp.stdout, cp.stderr)
    assert "WARNING" in cp.stderr, cp.stderr
    wait_for(lambda: zone_is_unsigned(env.srv, z), "%s served unsigned after disable" % z)
    r = ask(env.srv, z, "DNSKEY")
    assert not rrsets(r, "answer", dns.rdatatype.DNSKEY), "DNSKEY still served:\n%s" % show(r)
    r = ask(env.srv, "mail." + z, "A")
    assert not rrsets(r, "answer", dns.rdatatype.RRSIG), show(r)
    # names unbound has not cached: unsigned answers under the anchor are bogus
    assert_bogus(ub, "mail." + z, "A")
    assert_bogus(ub, z, "TXT")


# ------------------------------------------------------------------ delv

DELV_POSITIVE = [(ZONE, "A"), ("www." + ZONE, "A"), (ZONE, "MX"), (ZONE, "TXT"),
                 (ZONE, "DNSKEY"), ("foo.wild." + ZONE, "A"), ("chain1." + ZONE, "A"),
                 ("secure." + ZONE, "DS")]
DELV_NEGATIVE = [("nx." + ZONE, "A"), ("www." + ZONE, "MX"), ("ent." + ZONE, "A"),
                 ("foo.wild." + ZONE, "MX"), ("insecure." + ZONE, "DS")]


def run_delv(env, name, rdtype, anchor_file=None):
    cp = validators.delv(env.srv.port, anchor_file or env.anchor_file, ZONE, name, rdtype)
    return cp


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype", DELV_POSITIVE, ids=["%s/%s" % n for n in DELV_POSITIVE])
def test_delv_fully_validated(env, name, rdtype):
    cp = run_delv(env, name, rdtype)
    first = cp.stdout.splitlines()[0] if cp.stdout else ""
    assert first == "; fully validated", "%s\n%s" % (" ".join(cp.argv), cp.out)
    rt = dns.rdatatype.from_text(rdtype)
    assert re.search(r"^%s\s+\d+\s+IN\s+%s\s" % (re.escape(name), rdtype), cp.stdout, re.M) or (
        rt == dns.rdatatype.A and "CNAME" in cp.stdout), cp.out


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype", DELV_NEGATIVE, ids=["%s/%s" % n for n in DELV_NEGATIVE])
def test_delv_negative_fully_validated(env, name, rdtype):
    cp = run_delv(env, name, rdtype)
    assert "; negative response, fully validated" in cp.out, "%s\n%s" % (" ".join(cp.argv), cp.out)
    # compact denial: never an NXDOMAIN proof without CO
    assert "NXDOMAIN" not in cp.out, cp.out


def test_delv_wrong_anchor_fails(env, tmp_path):
    owner, ds = env.ds[0]
    digest = bytearray(ds.digest)
    digest[-1] ^= 0x80
    bad = validators.anchors_file(str(tmp_path / "bad.conf"),
                                  [(owner, ds.replace(digest=bytes(digest)))])
    cp = run_delv(env, "www." + ZONE, "A", anchor_file=bad)
    assert "fully validated" not in cp.out, cp.out
    assert "resolution failed" in cp.out, cp.out


# ------------------------------------------------------------------ direct queries

DO0_QUERIES = [(ZONE, "A"), (ZONE, "MX"), (ZONE, "TXT"), (ZONE, "NS"), ("www." + ZONE, "A"),
               ("www." + ZONE, "MX"), ("nx." + ZONE, "A"), ("ent." + ZONE, "A"),
               ("foo.wild." + ZONE, "A"), ("chain1." + ZONE, "A"), ("secure." + ZONE, "DS"),
               ("host.secure." + ZONE, "A"), ("host.insecure." + ZONE, "A"),
               ("insecure." + ZONE, "DS")]


def snapshot(msg):
    """What DO=0 answers must keep through enable: rcode, AA, the answer and
    additional sections in full, the authority as (name, type) pairs (the
    SOA serial may move)."""
    if msg is None:
        return None
    return (dns.rcode.to_text(msg.rcode()), bool(msg.flags & dns.flags.AA),
            sorted(rs.to_text() for rs in msg.answer),
            sorted((rs.name.to_text(), dns.rdatatype.to_text(rs.rdtype)) for rs in msg.authority),
            sorted(rs.to_text() for rs in msg.additional))


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype", DO0_QUERIES, ids=["%s/%s" % q for q in DO0_QUERIES])
def test_do0_answers_unchanged_and_unsigned(env, name, rdtype):
    r = ask(env.srv, name, rdtype, do=False)
    assert_no_dnssec(r, "%s %s DO=0" % (name, rdtype))
    assert snapshot(r) == env.unsigned[(name, rdtype)], (
        "DO=0 answer changed by signing:\nbefore %s\nafter  %s" % (env.unsigned[(name, rdtype)],
                                                                  snapshot(r)))


def test_do0_nonexistent_is_plain_nxdomain(env):
    r = ask(env.srv, "nx." + ZONE, "A", do=False)
    assert r.rcode() == dns.rcode.NXDOMAIN, show(r)
    assert_no_dnssec(r, "nx DO=0")
    r = ask(env.srv, ZONE, "A", do=False, co=True)
    assert_no_dnssec(r, "apex A DO=0 CO")


SIGNED_POSITIVE = [(ZONE, "A"), (ZONE, "MX"), (ZONE, "TXT"), (ZONE, "NS"), (ZONE, "SOA"),
                   ("www." + ZONE, "A"), ("www." + ZONE, "AAAA"), ("mail." + ZONE, "A"),
                   ("chain1." + ZONE, "A"), ("a.b.ent." + ZONE, "A"), ("secure." + ZONE, "DS")]


@pytest.mark.valgrind
@pytest.mark.parametrize("name,rdtype", SIGNED_POSITIVE, ids=["%s/%s" % q for q in SIGNED_POSITIVE])
def test_do1_answers_signed(env, name, rdtype):
    for tcp in (False, True):
        r = ask(env.srv, name, rdtype, tcp=tcp)
        assert r.rcode() == dns.rcode.NOERROR and r.flags & dns.flags.AA, show(r)
        assert rrsets(r, "answer", dns.rdatatype.from_text(rdtype)) or rdtype == "A" and \
            rrsets(r, "answer", dns.rdatatype.CNAME), show(r)
        n = check_signed(r, ZONE, env.dnskeys, sections=("answer",))
        assert n == len([rs for rs in r.answer if rs.rdtype != dns.rdatatype.RRSIG])
        if r.authority:   # NS in authority of a positive answer: authoritative, signed
            check_signed(r, ZONE, env.dnskeys, sections=("authority",))


@pytest.mark.valgrind
def test_do1_cname_chain_each_link_signed(env):
    r = ask(env.srv, "chain1." + ZONE, "A")
    owners = {(rs.name.to_text(), dns.rdatatype.to_text(rs.rdtype)) for rs in r.answer
              if rs.rdtype != dns.rdatatype.RRSIG}
    assert owners == {("chain1." + ZONE, "CNAME"), ("chain2." + ZONE, "CNAME"),
                      ("www." + ZONE, "A")}, show(r)
    assert check_signed(r, ZONE, env.dnskeys, sections=("answer",)) == 3


@pytest.mark.valgrind
@pytest.mark.parametrize("qname", ["foo.wild." + ZONE, "a.b.c.d.wild." + ZONE])
def test_wildcard_signed_as_query_name(env, qname):
    r = ask(env.srv, qname, "A")
    assert r.rcode() == dns.rcode.NOERROR, show(r)
    a = rrsets(r, "answer", dns.rdatatype.A)
    assert len(a) == 1 and a[0].name == N(qname), show(r)
    sig = sigs_for(r, "answer", a[0])
    assert sig, show(r)
    assert sig[0][0].labels == len(N(qname).labels) - 1, (
        "wildcard answer RRSIG labels %d: should be the query name's %d (docs/dnssec.md)"
        % (sig[0][0].labels, len(N(qname).labels) - 1))
    check_signed(r, ZONE, env.dnskeys)
    # no wildcard proof needed, none given
    assert not rrsets(r, "authority", dns.rdatatype.NSEC), show(r)


@pytest.mark.valgrind
@pytest.mark.parametrize("qname,rdtype", [("nx." + ZONE, "A"), ("a.b.nx2." + ZONE, "TXT"),
                                          ("x.exists.wild." + ZONE, "A"),
                                          ("x.www." + ZONE, "AAAA")])
def test_nonexistent_compact_denial(env, qname, rdtype):
    """RFC 9824: NOERROR, empty answer, SOA + NSEC(qname -> \\000.qname,
    RRSIG NSEC NXNAME), both signed."""
    for tcp in (False, True):
        r = ask(env.srv, qname, rdtype, tcp=tcp)
        assert r.rcode() == dns.rcode.NOERROR, "compact denial must be NOERROR:\n%s" % show(r)
        assert r.flags & dns.flags.AA, show(r)
        assert not r.answer, show(r)
        assert not r.ednsflags & CO, "CO set in a response to a query without it:\n%s" % show(r)
        check_compact_nsec(r, qname, types("RRSIG", "NSEC", NXNAME), ZONE, env.dnskeys,
                           "%s %s" % (qname, rdtype))


@pytest.mark.valgrind
def test_co_flag_restores_nxdomain(env):
    qname = "nx." + ZONE
    r = ask(env.srv, qname, "A", co=True)
    assert r.rcode() == dns.rcode.NXDOMAIN, "CO=1: expected NXDOMAIN:\n%s" % show(r)
    assert r.ednsflags & CO, "CO not echoed in the response (ednsflags 0x%04x)" % r.ednsflags
    assert r.ednsflags & dns.flags.DO
    check_compact_nsec(r, qname, types("RRSIG", "NSEC", NXNAME), ZONE, env.dnskeys, "nx CO")
    # CO on a name that exists changes nothing
    r = ask(env.srv, "www." + ZONE, "A", co=True)
    assert r.rcode() == dns.rcode.NOERROR and answer_texts(r, "www." + ZONE, "A") == ["192.0.2.80"]
    r = ask(env.srv, "www." + ZONE, "MX", co=True)
    assert r.rcode() == dns.rcode.NOERROR and not r.answer, show(r)


@pytest.mark.valgrind
@pytest.mark.parametrize("qname,rdtype,present", [
    ("www." + ZONE, "MX", ("A", "AAAA", "TXT")),
    (ZONE, "AAAA", ("A", "NS", "SOA", "MX", "TXT", "DNSKEY", "CDS", "CDNSKEY")),
    ("mail." + ZONE, "TXT", ("A",)),
    ("chain1." + ZONE, "TXT", None),   # CNAME: answered with the chain, not NODATA
    ("foo.wild." + ZONE, "MX", ("A", "TXT")),
    ("ent." + ZONE, "A", ()),
    ("b.ent." + ZONE, "AAAA", ()),
    ("wild." + ZONE, "A", ()),
])
def test_nodata_nsec(env, qname, rdtype, present):
    r = ask(env.srv, qname, rdtype)
    assert r.rcode() == dns.rcode.NOERROR and r.flags & dns.flags.AA, show(r)
    if present is None:
        assert rrsets(r, "answer", dns.rdatatype.CNAME), show(r)
        check_signed(r, ZONE, env.dnskeys, sections=("answer",))
        return
    assert not r.answer, show(r)
    check_compact_nsec(r, qname, types("RRSIG", "NSEC", *present), ZONE, env.dnskeys,
                       "%s %s" % (qname, rdtype))
    # NODATA is NODATA with CO too
    r = ask(env.srv, qname, rdtype, co=True)
    assert r.rcode() == dns.rcode.NOERROR, show(r)


@pytest.mark.valgrind
@pytest.mark.parametrize("do", [True, False])
def test_nxname_query_formerr(env, do):
    for name in ("www." + ZONE, "nx." + ZONE):
        r = ask(env.srv, name, NXNAME, do=do)
        assert r.rcode() == dns.rcode.FORMERR, "type NXNAME query: expected FORMERR:\n%s" % show(r)


@pytest.mark.valgrind
def test_secure_delegation_referral(env):
    r = ask(env.srv, "host.secure." + ZONE, "A")
    assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.AA, show(r)
    assert not r.answer, show(r)
    ns = rrsets(r, "authority", dns.rdatatype.NS, "secure." + ZONE)
    ds = rrsets(r, "authority", dns.rdatatype.DS, "secure." + ZONE)
    assert ns and ds, "referral without NS and DS:\n%s" % show(r)
    assert not sigs_for(r, "authority", ns[0]), "the NS set of a referral is signed:\n%s" % show(r)
    check_signed(r, ZONE, env.dnskeys, sections=("authority",),
                 skip={(ns[0].name, dns.rdatatype.NS)})
    assert not rrsets(r, "authority", dns.rdatatype.NSEC), show(r)
    assert not [rs for rs in r.additional if rs.rdtype == dns.rdatatype.RRSIG], (
        "glue is signed:\n%s" % show(r))
    assert answer_texts_section(r, "additional", "ns1.secure." + ZONE, "A") == ["127.0.53.3"]


def answer_texts_section(r, section, name, rdtype):
    return sorted(rd.to_text() for rs in rrsets(r, section, dns.rdatatype.from_text(rdtype), name)
                  for rd in rs)


@pytest.mark.valgrind
def test_insecure_delegation_referral_and_ds(env):
    cut = "insecure." + ZONE
    r = ask(env.srv, "host." + cut, "A")
    assert r.rcode() == dns.rcode.NOERROR and not r.flags & dns.flags.AA, show(r)
    ns = rrsets(r, "authority", dns.rdatatype.NS, cut)
    assert ns and not sigs_for(r, "authority", ns[0]), show(r)
    assert not rrsets(r, "authority", dns.rdatatype.DS), show(r)
    nsec = rrsets(r, "authority", dns.rdatatype.NSEC, cut)
    assert nsec, "insecure referral without NSEC proving no DS:\n%s" % show(r)
    assert nsec_types(nsec[0][0]) == types("NS", "RRSIG", "NSEC"), type_names(nsec_types(nsec[0][0]))
    check_signed(r, ZONE, env.dnskeys, sections=("authority",), skip={(ns[0].name, dns.rdatatype.NS)})
    # the DS query itself, answered by the parent
    r = ask(env.srv, cut, "DS")
    assert r.rcode() == dns.rcode.NOERROR and r.flags & dns.flags.AA and not r.answer, show(r)
    nsec = rrsets(r, "authority", dns.rdatatype.NSEC, cut)
    assert nsec and nsec_types(nsec[0][0]) == types("NS", "RRSIG", "NSEC"), show(r)
    check_signed(r, ZONE, env.dnskeys, sections=("authority",))


@pytest.mark.valgrind
def test_dnskey_rrset_signed_and_ds_matches(env):
    r = ask(env.srv, ZONE, "DNSKEY")
    keys = rrsets(r, "answer", dns.rdatatype.DNSKEY, ZONE)
    assert keys, show(r)
    keys = keys[0]
    check_signed(r, ZONE, keys, sections=("answer",))
    for k in keys:
        assert k.protocol == 3 and k.algorithm == 13, k
        assert k.flags in (256, 257), k
    ksks = [k for k in keys if k.flags == 257]
    assert len(ksks) == 1 and len(keys) == 1, "default: one CSK (flags 257):\n%s" % keys
    # `zonecast dnssec ds` prints what enable printed, and it is make_ds of the key
    cp = dnssec_cli(env.srv, "ds", ZONE)
    printed = validators.parse_ds(cp.stdout)
    assert printed, cp.stdout
    assert {rd for _o, rd in printed} == {rd for _o, rd in env.ds}, cp.stdout
    for owner, rd in printed:
        assert owner == ZONE
        assert rd.digest_type == 2, "DS digest type %d, SHA-256 is 2" % rd.digest_type
        match = [k for k in ksks if dns.dnssec.key_id(k) == rd.key_tag]
        assert match, "DS key tag %d matches no served KSK" % rd.key_tag
        assert dns.dnssec.make_ds(N(ZONE), match[0], "SHA256") == rd, (
            "DS %s is not make_ds(DNSKEY) %s" % (rd, dns.dnssec.make_ds(N(ZONE), match[0], "SHA256")))


@pytest.mark.valgrind
def test_cds_cdnskey_at_apex(env):
    keys = env.dnskeys
    r = ask(env.srv, ZONE, "CDS")
    cds = rrsets(r, "answer", dns.rdatatype.CDS, ZONE)
    assert cds, "no CDS at the apex:\n%s" % show(r)
    check_signed(r, ZONE, keys, sections=("answer",))
    want = {rd.to_text() for _o, rd in env.ds}
    assert {rd.to_text() for rd in cds[0]} == want, "CDS %s != DS %s" % (cds[0], want)
    r = ask(env.srv, ZONE, "CDNSKEY")
    cdnskey = rrsets(r, "answer", dns.rdatatype.CDNSKEY, ZONE)
    assert cdnskey, "no CDNSKEY at the apex:\n%s" % show(r)
    check_signed(r, ZONE, keys, sections=("answer",))
    assert {rd.to_text() for rd in cdnskey[0]} == {k.to_text() for k in keys if k.flags == 257}
    # not anywhere else
    r = ask(env.srv, "www." + ZONE, "CDS")
    assert not r.answer, show(r)


@pytest.mark.valgrind
def test_dnskey_unsigned_without_do(env):
    r = ask(env.srv, ZONE, "DNSKEY", do=False)
    assert rrsets(r, "answer", dns.rdatatype.DNSKEY), show(r)
    assert not rrsets(r, "answer", dns.rdatatype.RRSIG), show(r)


@pytest.mark.valgrind
def test_dnssec_keys_cli(env):
    cp = dnssec_cli(env.srv, "keys", ZONE)
    tag = str(dns.dnssec.key_id(env.dnskeys[0]))
    assert tag in cp.stdout, "dnssec keys does not list tag %s:\n%s" % (tag, cp.stdout)
    assert "257" in cp.stdout, cp.stdout
    assert_no_private_material(cp.stdout, env.dnskeys, "dnssec keys")


# ------------------------------------------------------------------ changes right after enabling

@pytest.mark.valgrind
def test_changes_after_enable_validate(env, new_zone, resolvers):
    z = new_zone("chg")
    _ds, lines, keys = enable(env.srv, z)
    api = env.api
    zid = api.zone_id(z)
    ub = resolvers({z: env.srv.port}, lines)
    # API POST right after enabling
    body = api.ok("POST", "/zones/%s/dns_records" % zid,
                  json={"name": "api-new." + z.rstrip("."), "type": "A", "content": "192.0.2.171",
                        "ttl": 300})
    assert body["result"]["id"]
    wait_for(lambda: answer_texts(ask(env.srv, "api-new." + z, "A"), "api-new." + z, "A")
             == ["192.0.2.171"], "api-new.%s served" % z)
    r = assert_validated(ub, "api-new." + z, "A")
    assert answer_texts(r, "api-new." + z, "A") == ["192.0.2.171"], show(r)
    check_signed(ask(env.srv, "api-new." + z, "A"), z, keys)
    # RFC 2136 UPDATE signed with a key from `zonecast tsig create`
    key = env.srv.tsig_create("dnssec-upd." + z.rstrip("."), z.rstrip("."))
    u = dns.update.UpdateMessage(z, keyring=key.key, keyalgorithm=key.key.algorithm)
    u.add("upd-new." + z, 300, "TXT", '"added by UPDATE"')
    u.add("www." + z, 300, "MX", "10 mail." + z)
    resp = dns.query.tcp(u, "127.0.0.1", port=env.srv.port, timeout=5)
    assert resp.rcode() == dns.rcode.NOERROR, show(resp)
    wait_for(lambda: answer_texts(ask(env.srv, "upd-new." + z, "TXT"), "upd-new." + z, "TXT")
             == ['"added by UPDATE"'], "upd-new.%s served" % z)
    r = assert_validated(ub, "upd-new." + z, "TXT")
    assert answer_texts(r, "upd-new." + z, "TXT") == ['"added by UPDATE"'], show(r)
    r = assert_validated(ub, "www." + z, "MX")
    assert answer_texts(r, "www." + z, "MX") == ["10 mail.%s" % z], show(r)
    # the new name's NODATA carries its new types
    r = ask(env.srv, "upd-new." + z, "A")
    check_compact_nsec(r, "upd-new." + z, types("TXT", "RRSIG", "NSEC"), z, keys, "upd-new A")
    assert_validated(ub, "upd-new." + z, "A")
    # a deleted name: compact denial, validated
    u = dns.update.UpdateMessage(z, keyring=key.key, keyalgorithm=key.key.algorithm)
    u.delete("mail." + z)
    resp = dns.query.tcp(u, "127.0.0.1", port=env.srv.port, timeout=5)
    assert resp.rcode() == dns.rcode.NOERROR, show(resp)
    wait_for(lambda: ask(env.srv, "mail." + z, "A").answer == [], "mail.%s deleted" % z)
    r = ask(env.srv, "mail." + z, "A")
    check_compact_nsec(r, "mail." + z, types("RRSIG", "NSEC", NXNAME), z, keys, "deleted mail")
    r = assert_validated(ub, "mail." + z, "TXT")
    assert not r.answer


def apex_keys(srv, zone):
    """The apex DNSKEY, CDS and CDNSKEY served, as sorted texts."""
    out = []
    for t in ("DNSKEY", "CDS", "CDNSKEY"):
        out += sorted("%s %s" % (t, x) for x in answer_texts(ask(srv, zone, t), zone, t))
    return out


def test_signers_keys_survive_apex_delete_and_reimport(env, new_zone, resolvers):
    """An UPDATE deleting every RRset at the apex (`update delete ZONE.`),
    and a zone import of a file without the keys, removed the DNSKEY, CDS
    and CDNSKEY the signer publishes: the zone stayed signed by a key no
    longer published (bogus). They are the signer's: both keep them."""
    z = new_zone("keep")
    _ds, lines, keys = enable(env.srv, z)
    published = apex_keys(env.srv, z)
    assert any(x.startswith("CDS ") for x in published), published
    ub = resolvers({z: env.srv.port}, lines)
    key = env.srv.tsig_create("keep-upd." + z.rstrip("."), z.rstrip("."))
    u = dns.update.UpdateMessage(z, keyring=key.key, keyalgorithm=key.key.algorithm)
    u.add(z, 300, "TXT", '"apex text"')
    assert dns.query.tcp(u, "127.0.0.1", port=env.srv.port, timeout=5).rcode() == 0
    wait_for(lambda: '"apex text"' in answer_texts(ask(env.srv, z, "TXT"), z, "TXT"),
             "apex TXT served")
    u = dns.update.UpdateMessage(z, keyring=key.key, keyalgorithm=key.key.algorithm)
    u.delete(z)
    resp = dns.query.tcp(u, "127.0.0.1", port=env.srv.port, timeout=5)
    assert resp.rcode() == dns.rcode.NOERROR, show(resp)
    wait_for(lambda: answer_texts(ask(env.srv, z, "TXT"), z, "TXT") == [], "apex TXT deleted")
    assert apex_keys(env.srv, z) == published
    assert_validated(ub, z, "SOA")
    assert_validated(ub, "www." + z, "A")
    # a zone import of the plain file (no keys in it) keeps them as well
    path = zone_copy(env.srv.workdir, z)
    env.srv.import_zone(z.rstrip("."), path)
    wait_for(lambda: answer_texts(ask(env.srv, z, "TXT"), z, "TXT") != [],
             "the imported apex TXT served")
    assert apex_keys(env.srv, z) == published
    r = assert_validated(ub, "www." + z, "A")
    assert r.answer, show(r)
    assert_validated(ub, z, "DNSKEY")


def test_api_export_of_a_signed_zone_imports_back(env, new_zone, resolvers):
    """An API export of a signed zone holds its DNSKEY, CDS and CDNSKEY; the
    API import of it, into the zone itself or into another, failed on the
    first DNSKEY (400 "DNSSEC records are made by zonecast's online
    signer"). They are skipped now, as the SOA is: the signer makes the
    zone's own, which stay as they were."""
    z = new_zone("rt")
    _ds, lines, _keys = enable(env.srv, z)
    api = env.api
    zid = api.zone_id(z)
    published = apex_keys(env.srv, z)
    r = api.call("GET", "/zones/%s/dns_records/export" % zid)
    assert r.status_code == 200 and "\tDNSKEY\t" in r.text, r.text[:500]
    text = r.text
    r = api.call("POST", "/zones/%s/dns_records/import" % zid, data=text)
    assert r.status_code == 200, r.text
    assert r.json()["result"]["recs_added"] == 0, r.text
    assert apex_keys(env.srv, z) == published
    # into an unsigned zone: its data, none of the other zone's keys
    other = "rt2-%s" % z
    oid = api.ok("POST", "/zones", json={"name": other.rstrip(".")})["result"]["id"]
    r = api.call("POST", "/zones/%s/dns_records/import" % oid, data=text.replace(z, other))
    assert r.status_code == 200, r.text
    assert r.json()["result"]["recs_added"] > 0, r.text
    assert not any(x["type"] in ("DNSKEY", "CDS", "CDNSKEY") for x in api.records(oid))
    # one outside the zone is refused, as any record there
    r = api.call("POST", "/zones/%s/dns_records/import" % oid,
                 data="other.example. 300 IN RRSIG A 13 2 300 20300101000000 "
                      "20200101000000 1 other.example. AAAA\n")
    assert r.status_code == 400, r.text
    ub = resolvers({z: env.srv.port}, lines)
    assert_validated(ub, "www." + z, "A")


def test_no_rrsig_without_its_rrset_and_additional_addresses_signed(tmp_path, zonecast_factory):
    """A negative answer at payload 512 whose SOA (long names) did not fit
    left the SOA out without TC, but its smaller RRSIG went in: an RRSIG
    without its RRset, SERVFAIL at a validating resolver. A signed denial
    needs its SOA: TC now. And the addresses of MX/SRV targets in the
    additional section come with their RRSIGs (RFC 4035 §3.1.1), glue
    without."""
    long1 = ".".join(["a" * 63] * 3 + ["b" * 61]) + "."
    long2 = ".".join(["k" * 63] * 3 + ["j" * 61]) + "."
    path = tmp_path / "ls.test.zone"
    path.write_text("$ORIGIN ls.test.\n$TTL 300\n@ SOA %s %s 1 2 3 4 5\n@ NS ns\n"
                    "ns A 192.0.2.1\nmx MX 10 mail\nmail A 192.0.2.2\nmail AAAA 2001:db8::2\n"
                    "d NS ns.d\nns.d A 192.0.2.3\n" % (long1, long2))
    srv = zonecast_factory(zones={"ls.test.": str(path)}, workers=1)
    enable(srv, "ls.test.")
    for name, payload in (("nx.ls.test.", 512), ("ns.ls.test.", 512), ("nx.ls.test.", 1232)):
        q = dns.message.make_query(name, "MX", want_dnssec=True, payload=payload)
        r = dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=3, ignore_trailing=True,
                          raise_on_truncation=False)
        for section in (r.answer, r.authority, r.additional):
            covered = {(x.name, x.covers) for x in section if x.rdtype == dns.rdatatype.RRSIG}
            present = {(x.name, x.rdtype) for x in section if x.rdtype != dns.rdatatype.RRSIG}
            assert covered <= present, (name, payload, r.to_text())
        soa = [x for x in r.authority if x.rdtype == dns.rdatatype.SOA]
        assert soa or r.flags & dns.flags.TC, (name, payload, r.to_text())
    r = ask(srv, "mx.ls.test.", "MX")
    signed_add = {(x.name.to_text(), x.covers) for x in r.additional
                  if x.rdtype == dns.rdatatype.RRSIG}
    assert signed_add == {("mail.ls.test.", dns.rdatatype.A),
                          ("mail.ls.test.", dns.rdatatype.AAAA)}, r.to_text()
    r = ask(srv, "x.d.ls.test.", "A")                    # a referral: glue unsigned
    assert [x for x in r.additional if x.rdtype == dns.rdatatype.A] and \
        not [x for x in r.additional if x.rdtype == dns.rdatatype.RRSIG], r.to_text()


# ------------------------------------------------------------------ algorithms and key split

@pytest.mark.valgrind
@pytest.mark.parametrize("flags,alg", [(("--algorithm", "ed25519"), 15),
                                       (("--split",), 13),
                                       (("--algorithm", "ed25519", "--split"), 15)],
                         ids=["ed25519", "split", "ed25519-split"])
def test_algorithm_and_split_variants_validate(env, new_zone, resolvers, flags, alg):
    z = new_zone("var")
    ds, lines, keys = enable(env.srv, z, *flags)
    split = "--split" in flags
    for k in keys:
        assert k.algorithm == alg, "DNSKEY algorithm %d, expected %d" % (k.algorithm, alg)
    ksk = [k for k in keys if k.flags == 257]
    zsk = [k for k in keys if k.flags == 256]
    if split:
        assert len(ksk) == 1 and len(zsk) == 1, "--split: one KSK and one ZSK:\n%s" % keys
    else:
        assert len(ksk) == 1 and not zsk, "one CSK:\n%s" % keys
    ksk_tag = dns.dnssec.key_id(ksk[0])
    sign_tag = dns.dnssec.key_id(zsk[0]) if split else ksk_tag
    for _o, rd in ds:
        assert rd.algorithm == alg and rd.key_tag == ksk_tag, "DS %s for KSK tag %d" % (rd, ksk_tag)
        assert dns.dnssec.make_ds(N(z), ksk[0], "SHA256") == rd
    # DNSKEY (and CDS/CDNSKEY) signed by the KSK, everything else by the ZSK only
    for t in ("DNSKEY", "CDS", "CDNSKEY"):
        r = ask(env.srv, z, t)
        sig = sigs_for(r, "answer", rrsets(r, "answer", dns.rdatatype.from_text(t), z)[0])
        assert sig and ksk_tag in {s.key_tag for s in sig[0]}, "%s not signed by the KSK:\n%s" % (
            t, show(r))
        check_signed(r, z, keys, sections=("answer",))
    for name, t in ((z, "SOA"), ("www." + z, "A"), ("foo.wild." + z, "A"), ("nx." + z, "A"),
                    ("www." + z, "MX")):
        r = ask(env.srv, name, t)
        check_signed(r, z, keys, tags={sign_tag})
    ub = resolvers({z: env.srv.port}, lines)
    for name, t in ((z, "A"), ("www." + z, "A"), (z, "MX"), (z, "TXT"), ("foo.wild." + z, "A"),
                    ("chain1." + z, "A"), ("secure." + z, "DS")):
        r = assert_validated(ub, name, t)
        assert r.answer, show(r)
    for name, t in (("nx." + z, "A"), ("www." + z, "MX"), ("ent." + z, "A"),
                    ("insecure." + z, "DS")):
        r = assert_validated(ub, name, t)
        assert not rrsets(r, "answer", dns.rdatatype.from_text(t)), show(r)
    # delv agrees
    af = validators.anchors_file(os.path.join(ub.workdir, "anchors.conf"), ds)
    cp = validators.delv(env.srv.port, af, z, "www." + z, "A")
    assert cp.stdout.startswith("; fully validated"), cp.out
    cp = validators.delv(env.srv.port, af, z, "nx." + z, "A")
    assert "; negative response, fully validated" in cp.out, cp.out


# ------------------------------------------------------------------ the API

B64_OR_HEX = re.compile(r"^[A-Za-z0-9+/=\s]{40,}$")


def assert_no_private_material(text_or_obj, dnskeys, what):
    """No field named like a private key, and every long base64/hex string
    is public: a served key, or a DS digest / DS text."""
    public = {base64.b64encode(k.key).decode() for k in dnskeys}
    if isinstance(text_or_obj, str):
        assert not re.search(r"private|secret|PRIVATE", text_or_obj), (
            "%s mentions private material:\n%s" % (what, text_or_obj))
        for blob in re.findall(r"[A-Za-z0-9+/]{40,}={0,2}", text_or_obj):
            assert any(blob in p for p in public) or re.fullmatch(r"[0-9A-Fa-f]+", blob), (
                "%s shows a long blob that is no public key: %s" % (what, blob))
        return

    def walk(o, path):
        if isinstance(o, dict):
            for k, v in o.items():
                assert not re.search(r"priv|secret", k, re.I), "%s: field %s%s" % (what, path, k)
                walk(v, path + k + ".")
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, "%s%d." % (path, i))
        elif isinstance(o, str) and B64_OR_HEX.match(o):
            s = re.sub(r"\s", "", o)
            ok = s in public or re.fullmatch(r"[0-9A-Fa-f]+", s) or " DS " in o
            assert ok, "%s: field %s is a blob that is no public key: %r" % (what, path, o)
    walk(text_or_obj, "")


@pytest.mark.valgrind
def test_api_get_dnssec(env):
    res = env.api.get("/zones/%s/dnssec" % env.zone_id)
    assert res["status"] == "active", res
    owner, ds = env.ds[0]
    assert str(res["algorithm"]) == "13", res
    assert str(res["digest_type"]) == "2", res
    assert res["digest"].replace(" ", "").lower() == ds.digest.hex(), res
    assert int(res["key_tag"]) == ds.key_tag, res
    assert int(res["flags"]) == 257, res
    ksk = [k for k in env.dnskeys if dns.dnssec.key_id(k) == ds.key_tag][0]
    assert re.sub(r"\s", "", res["public_key"]) == base64.b64encode(ksk.key).decode(), res
    api_ds = validators.parse_ds(res["ds"])
    assert api_ds and api_ds[0][0] == ZONE and api_ds[0][1] == ds, res["ds"]
    assert_no_private_material(res, env.dnskeys, "GET /dnssec")
    # a read-only token may read it, not change it
    ro = env.srv.client(env.srv.create_token(read_only=True))
    assert ro.get("/zones/%s/dnssec" % env.zone_id)["status"] == "active"
    r = ro.call("PATCH", "/zones/%s/dnssec" % env.zone_id, json={"status": "disabled"})
    assert r.status_code in (401, 403), (r.status_code, r.text)
    assert env.api.get("/zones/%s/dnssec" % env.zone_id)["status"] == "active"
    assert served_dnskeys(env.srv, ZONE) is not None


@pytest.mark.valgrind
def test_api_patch_disable_and_enable(env, new_zone, resolvers):
    z = new_zone("api")
    zid = env.api.zone_id(z)
    res = env.api.get("/zones/%s/dnssec" % zid)
    assert res["status"] == "disabled", "a new zone is unsigned: %s" % res
    r = ask(env.srv, "www." + z, "A")
    assert not rrsets(r, "answer", dns.rdatatype.RRSIG), show(r)
    # PATCH active: signed, and GET's DS is the served key's
    res = env.api.ok("PATCH", "/zones/%s/dnssec" % zid, json={"status": "active"})["result"]
    assert res["status"] == "active", res
    keys = wait_for(lambda: served_dnskeys(env.srv, z),
                    lambda: "DNSKEY of %s after PATCH active; last answer:\n%s"
                    % (z, show(try_ask(env.srv, z, "DNSKEY"))))
    res = env.api.get("/zones/%s/dnssec" % zid)
    ds = validators.parse_ds(res["ds"])
    assert ds, res
    ksk = [k for k in keys if dns.dnssec.key_id(k) == int(res["key_tag"])]
    assert ksk and dns.dnssec.make_ds(N(z), ksk[0], "SHA256") == ds[0][1], res
    assert_no_private_material(res, keys, "GET /dnssec")
    check_signed(ask(env.srv, "www." + z, "A"), z, keys)
    ub = resolvers({z: env.srv.port}, ds_lines(ds))
    assert_validated(ub, "www." + z, "A")
    # PATCH disabled: first CDS/CDNSKEY DELETE (RFC 8078 §4), the zone still
    # signed (test_admin_writes.py waits out the DS TTL); force: the keys go
    # at once: unsigned again, GET says so
    res = env.api.ok("PATCH", "/zones/%s/dnssec" % zid, json={"status": "disabled"})["result"]
    assert res["status"] == "pending-disabled", res
    assert served_dnskeys(env.srv, z) is not None
    res = env.api.ok("PATCH", "/zones/%s/dnssec" % zid,
                     json={"status": "disabled", "force": True})["result"]
    assert res["status"] == "disabled", res
    wait_for(lambda: zone_is_unsigned(env.srv, z), "%s unsigned after PATCH disabled" % z)
    for name, t in ((z, "DNSKEY"), ("www." + z, "A"), ("nx." + z, "A"), (z, "CDS")):
        r = ask(env.srv, name, t)
        assert_no_dnssec(r, "%s %s after PATCH disabled" % (name, t))
        assert not rrsets(r, "answer", dns.rdatatype.CDS), show(r)
    r = ask(env.srv, "nx." + z, "A")
    assert r.rcode() == dns.rcode.NXDOMAIN, "unsigned zone: plain NXDOMAIN\n%s" % show(r)
    assert env.api.get("/zones/%s/dnssec" % zid)["status"] == "disabled"
    assert_bogus(ub, "mail." + z, "A")
    # bad bodies are refused, and change nothing
    r = env.api.call("PATCH", "/zones/%s/dnssec" % zid, json={"status": "sideways"})
    assert r.status_code == 400, (r.status_code, r.text)
    assert env.api.get("/zones/%s/dnssec" % zid)["status"] == "disabled"


def test_api_delete_dnssec_is_the_disable(env, new_zone):
    """Cloudflare's DELETE /zones/{id}/dnssec (the TypeScript SDK's
    dns.dnssec.delete()) got 405: it is PATCH {"status": "disabled"},
    each call the next step, its result the zone's id."""
    z = new_zone("del")
    zid = env.api.zone_id(z)
    env.api.ok("PATCH", "/zones/%s/dnssec" % zid, json={"status": "active"})
    wait_for(lambda: served_dnskeys(env.srv, z), "%s signed" % z)
    ro = env.srv.client(env.srv.create_token(read_only=True))
    assert ro.call("DELETE", "/zones/%s/dnssec" % zid).status_code in (401, 403)
    r = env.api.call("DELETE", "/zones/%s/dnssec" % zid, data=b'{"x": 1}',
                     headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    body = env.api.ok("DELETE", "/zones/%s/dnssec" % zid)
    assert body["result"] == zid, body
    assert env.api.get("/zones/%s/dnssec" % zid)["status"] == "pending-disabled"
    # the keys go once the parent's DS TTL has passed (409 before it)
    r = env.api.call("DELETE", "/zones/%s/dnssec" % zid)
    assert r.status_code == 409, r.text
    assert served_dnskeys(env.srv, z) is not None


def test_api_patch_fields_round_trip_and_none_is_ignored(env, new_zone):
    """What GET gives is taken back ("algorithm": "13", or 13); a field
    the asked status does nothing with is refused, not ignored ("ds_ttl"
    or "force" with "active", "algorithm" or "split" with "disabled");
    "algorithm" or "split" on a zone being disabled, whose disable
    "active" only cancels, is refused (409) and the zone stays as it was."""
    z = new_zone("apirt")
    zid = env.api.zone_id(z)
    path = "/zones/%s/dnssec" % zid
    env.api.ok("PATCH", path, json={"status": "active"})
    got = env.api.get(path)
    assert got["algorithm"] == "13", got
    for alg in (got["algorithm"], 13, "ECDSAP256SHA256"):
        env.api.ok("PATCH", path, json={"status": "active", "algorithm": alg})
    for body in ({"status": "active", "ds_ttl": 60}, {"status": "active", "force": True},
                 {"status": "disabled", "algorithm": "13"},
                 {"status": "disabled", "split": True},
                 {"status": "active", "algorithm": "14"}):
        r = env.api.call("PATCH", path, json=body)
        assert r.status_code == 400, (body, r.status_code, r.text)
    assert env.api.get(path)["status"] == "active"
    env.api.ok("PATCH", path, json={"status": "disabled", "ds_ttl": 60})
    assert env.api.get(path)["status"] == "pending-disabled"
    for body in ({"status": "active", "algorithm": "ed25519"},
                 {"status": "active", "split": True}):
        r = env.api.call("PATCH", path, json=body)
        assert r.status_code == 409 and "pending-disabled" in r.text, (body, r.text)
        assert env.api.get(path)["status"] == "pending-disabled"
    env.api.ok("PATCH", path, json={"status": "active"})
    got = env.api.get(path)
    assert got["status"] == "active" and got["algorithm"] == "13", got


def test_api_patch_active_ed25519_split(env, new_zone, resolvers):
    """PATCH {"status": "active", "algorithm": "ed25519", "split": true}
    (docs/api.md): a KSK and a ZSK of algorithm 15, and answers validate."""
    z = new_zone("apised")
    zid = env.api.zone_id(z)
    env.api.ok("PATCH", "/zones/%s/dnssec" % zid,
               json={"status": "active", "algorithm": "ed25519", "split": True})
    keys = wait_for(lambda: served_dnskeys(env.srv, z),
                    lambda: "DNSKEY of %s after PATCH active; last answer:\n%s"
                    % (z, show(try_ask(env.srv, z, "DNSKEY"))))
    assert sorted((k.flags, k.algorithm) for k in keys) == [(256, 15), (257, 15)], keys
    res = env.api.get("/zones/%s/dnssec" % zid)
    assert res["status"] == "active" and str(res["algorithm"]) == "15", res
    ds = validators.parse_ds(res["ds"])
    ksk = [k for k in keys if k.flags == 257][0]
    assert int(res["key_tag"]) == dns.dnssec.key_id(ksk), res
    assert ds and dns.dnssec.make_ds(N(z), ksk, "SHA256") == ds[0][1], res
    assert_no_private_material(res, keys, "GET /dnssec")
    ub = resolvers({z: env.srv.port}, ds_lines(ds))
    assert_validated(ub, z, "TXT")
    assert_validated(ub, "nx." + z, "A")


@pytest.mark.parametrize("rtype,content", [
    ("DNSKEY", "257 3 13 mEetPw40N1STHn3BGK3KX3AZcsbTT8L/N+3C1NaIIKkMCd9+M83Y6dKUreLtiLaxaQGRAshaes7xx2AE3wHW3g=="),
    ("CDS", "0 0 0 00"),
    ("NSEC", "zzz.signed.test. A RRSIG NSEC"),
    ("RRSIG", "A 13 3 300 20300101000000 20200101000000 12345 signed.test. "
              "oL6EiqGxnOCZYiU/qPW6VS5h1w7lVCc/guiDYeB7u8OS2xpTXijcFhpYW2nRelw/3Bdj+GfwXFOAPu3AIbMSvw=="),
])
def test_api_refuses_signer_types(env, rtype, content):
    """The signer owns DNSKEY, CDS, CDNSKEY, RRSIG, NSEC... (docs/api.md):
    the records API neither creates them nor changes what DNS serves."""
    before = ask(env.srv, ZONE, "DNSKEY")
    name = ZONE.rstrip(".") if rtype in ("DNSKEY", "CDS") else "www." + ZONE.rstrip(".")
    r = env.api.call("POST", "/zones/%s/dns_records" % env.zone_id,
                     json={"name": name, "type": rtype, "content": content, "ttl": 300})
    assert 400 <= r.status_code < 500, "POST %s: HTTP %d %s" % (rtype, r.status_code, r.text[:500])
    time.sleep(0.1)
    after = ask(env.srv, ZONE, "DNSKEY")
    assert rrsets(after, "answer", dns.rdatatype.DNSKEY) == rrsets(before, "answer",
                                                                   dns.rdatatype.DNSKEY)
    assert_validated(env.ub, "www." + ZONE, "A")


# ------------------------------------------------------------------ key rollover

def _delv_ok(env, zone, anchor_file, name, rdtype, negative=False):
    cp = validators.delv(env.srv.port, anchor_file, zone, name, rdtype)
    want = "; negative response, fully validated" if negative else "; fully validated"
    assert want in cp.out, "%s\n%s" % (" ".join(cp.argv), cp.out)


def _key_tags(env, zone):
    out = dnssec_cli(env.srv, "keys", zone).stdout
    return sorted(re.findall(r"tag=(\d+)\tflags=(\d+) [^\t]*\t[^\t]*\t(\w+)", out))


def test_rollover_end_to_end_keeps_validating(env, new_zone, tmp_path):
    """ZSK pre-publish (adding a ZSK to a CSK zone, then rolling it) and a
    KSK roll with both DS at the parent: delv validates positive and
    negative answers after every step; served DNSKEYs follow the steps."""
    z = new_zone("roll")
    ds, _lines, _keys = enable(env.srv, z)
    anchor = validators.anchors_file(str(tmp_path / "a1.conf"), ds)

    def check(anchor_file, what):
        for name, rdtype, neg in (("www." + z, "A", False), (z, "DNSKEY", False),
                                  ("nx." + z, "A", True), ("www." + z, "MX", True)):
            try:
                _delv_ok(env, z, anchor_file, name, rdtype, neg)
            except AssertionError as e:
                raise AssertionError("after %s: %s" % (what, e))

    def step(role, what, served_tags):
        # Back to back: the waits are forced (test_operator_safety.py
        # checks them); validation must hold at every step anyway, as
        # delv asks with no cache.
        cp = dnssec_cli(env.srv, "rollover", z, role, what, "--force", check=False)
        assert cp.returncode == 0, "rollover %s %s: %s%s" % (role, what, cp.stdout, cp.stderr)
        tags = {t for t, _f, _s in _key_tags(env, z)}
        assert len(tags) == served_tags, _key_tags(env, z)
        wait_for(lambda: (lambda k: k is not None and
                          {str(rd.flags) + "/" + str(dns.dnssec.key_id(rd)) for rd in k}
                          == {f + "/" + t for t, f, _s in _key_tags(env, z)})(
                     served_dnskeys(env.srv, z)),
                 "%s's DNSKEY set to follow %s %s" % (z, role, what))

    check(anchor, "enable")
    step("zsk", "prepublish", 2)
    check(anchor, "zsk prepublish")
    step("zsk", "activate", 2)
    check(anchor, "zsk activate")
    step("zsk", "prepublish", 3)
    step("zsk", "activate", 3)
    check(anchor, "second zsk activate")
    step("zsk", "retire", 2)
    check(anchor, "zsk retire")
    step("ksk", "prepublish", 3)
    both = validators.parse_ds(dnssec_cli(env.srv, "ds", z).stdout)
    assert len(both) == 2, both
    anchor2 = validators.anchors_file(str(tmp_path / "a2.conf"), both)
    check(anchor2, "ksk prepublish")
    step("ksk", "activate", 3)
    check(anchor2, "ksk activate")
    step("ksk", "retire", 2)
    new = validators.parse_ds(dnssec_cli(env.srv, "ds", z).stdout)
    assert len(new) == 1 and new[0] in both and new[0] != ds[0], (new, both, ds)
    check(validators.anchors_file(str(tmp_path / "a3.conf"), new), "ksk retire")
    # the old KSK alone no longer validates the DNSKEY set
    cp = validators.delv(env.srv.port, anchor, z, z, "DNSKEY")
    assert "; fully validated" not in cp.out, cp.out
