"""DNSSEC-signed zones served by standard secondaries (docs/dnssec.md,
"Secondaries"): BIND, Knot and NSD transfer a zone zonecast signs and get
it signed ahead of time (src/sigview): an RRSIG for every authoritative
RRset and a standard NSEC chain, which they serve as they are.

One environment for the module, its tests in order: zonecast serving
signed.test (DNSSEC turned on while it runs), the three secondaries
(TSIG transfers, signed NOTIFY for NSD and Knot); through each secondary,
unbound and delv with the DS of `zonecast dnssec ds` as trust anchor
validate positive, NODATA, NXDOMAIN, wildcard, empty non-terminal and
delegation (DS, insecure cut) answers: first, after a stream of changes
(which the secondaries take by IXFR, of a handful of records each), and
after each step of a ZSK rollover. BIND's dnssec-verify and
ldns-verify-zone accept the zone as each secondary transfers it, and each
serves exactly what zonecast's AXFR holds.
"""

import os
import re
import subprocess
import tempfile
import time

import dns.flags
import dns.message
import dns.query
import dns.rdatatype
import dns.rcode
import dns.update
import dns.zone
import pytest

import secondaries
import servers
import validators
from test_transfer import rrs_of_zone, assert_same_rrs, xfr_messages, rr_list

ZONE = "signed.test."
ZONE_FILE = """$ORIGIN signed.test.
$TTL 300
@        SOA  ns1 hostmaster 1000 7200 3600 1209600 300
@        NS   ns1
@        NS   ns2
@        MX   10 mail
ns1      A    192.0.2.53
ns2      A    192.0.2.54
mail     A    192.0.2.25
www      A    192.0.2.80
www      AAAA 2001:db8::80
*.wild   TXT  "wildcard"
a.b.c    TXT  "below an empty non-terminal"
sub      NS   ns.sub
ns.sub   A    192.0.2.99
secure   NS   ns.secure
secure   DS   12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF
ns.secure A   192.0.2.98
"""
SYNC_WAIT = 20.0 * servers.TIMEOUT_SCALE

# (name, type, kind): kind says what a validator must conclude
BASE_CASES = [
    ("www.signed.test.", "A", "positive"),
    ("signed.test.", "DNSKEY", "positive"),
    ("signed.test.", "SOA", "positive"),
    ("www.signed.test.", "TXT", "nodata"),
    ("c.signed.test.", "A", "nodata"),           # an empty non-terminal
    ("nope.signed.test.", "A", "nxdomain"),
    ("zzz.signed.test.", "A", "nxdomain"),       # after the last name
    ("x.y.wild.signed.test.", "TXT", "positive"),  # a wildcard expansion
    ("secure.signed.test.", "DS", "positive"),   # a secure delegation's DS
    ("sub.signed.test.", "DS", "nodata"),        # an insecure cut: no DS, proven
]


class Env:
    pass


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    for tool in (secondaries.named_bin(), servers.knotd_bin(), secondaries.nsd_bin(),
                 validators.unbound_bin(), validators.delv_bin()):
        if not os.access(tool, os.X_OK):
            pytest.skip("%s not installed" % tool)
    from conftest import _require_zonecast
    _require_zonecast()
    tmp = tmp_path_factory.mktemp("signed-secondaries")
    zfile = tmp / "signed.test.zone"
    zfile.write_text(ZONE_FILE)
    e = Env()
    e.tmp = tmp
    pport = servers.free_port()

    def workdir(kind):
        return tempfile.mkdtemp(prefix=kind + "-", dir=str(tmp))
    e.bind = secondaries.BindSecondary(workdir("named"), pport, [ZONE])
    e.knot = secondaries.KnotSecondary(workdir("knotd"), pport, [ZONE], notify_key=True)
    e.nsd = secondaries.NsdSecondary(workdir("nsd"), pport, [ZONE], notify_key=True)
    e.secs = [e.bind, e.knot, e.nsd]
    e.srv = servers.ZonecastServer(workdir("zonecast"), zones={ZONE: str(zfile)}, api=True,
                                   port=pport, options=[
                                       ("notify", "127.0.0.1:%d key bind-key" % e.bind.port),
                                       ("notify", "127.0.0.1:%d key knot-key" % e.knot.port),
                                       ("notify", "127.0.0.1:%d key nsd-key" % e.nsd.port),
                                       ("allow-update", "127.0.0.1"),
                                       ("notify-timeout", "300")])
    started = [e.srv]
    try:
        e.srv.start()
        e.api = e.srv.client()
        e.zid = e.api.zone_id(ZONE)
        e.bind.key = e.srv.tsig_create("bind-key", "signed.test")
        e.knot.key = e.srv.tsig_create("knot-key", "signed.test", algorithm="hmac-sha512")
        e.nsd.key = e.srv.tsig_create("nsd-key", "signed.test")
        # signing turned on while zonecast runs, with a KSK and a ZSK (so
        # that the ZSK rollover below replaces a ZSK)
        out = e.srv.run_cli("dnssec", "enable", "--data-dir", e.srv.data_dir, "signed.test",
                            "--split")
        e.ds = validators.parse_ds(out.stdout)
        assert e.ds, out.stdout
        e.anchors = validators.anchors_file(str(tmp / "anchors.conf"), e.ds)
        e.anchor_lines = [l for l in out.stdout.splitlines() if " DS " in l]
        wait_view(e)
        for s in e.secs:
            started.append(s)
            s.start()
        sync(e)
        yield e
    finally:
        problems = []
        for s in started:
            problems += ["%s: %s" % (s.kind, p) for p in s.stop()]
        assert not problems, "%s\n--- zonecast log tail ---\n%s" % (
            problems, e.srv.log()[-4000:])


def zonecast_axfr(e):
    """zonecast's AXFR of the zone (the signed view), {rr_key: text}."""
    msgs = xfr_messages(e.srv, ZONE, key=e.bind.key)
    items = rr_list(r for m in msgs for r in m.answer)
    return dict(items[:-1]), int(items[0][1].split()[5])


def wait_view(e, timeout=SYNC_WAIT):
    """Until zonecast's transfers carry the serial it answers, signed."""
    deadline = time.monotonic() + timeout
    while True:
        want = e.srv.query(ZONE, "SOA").answer[0][0].serial
        try:
            rrs, serial = zonecast_axfr(e)
        except Exception:   # noqa: BLE001 - not built yet (SERVFAIL)
            rrs, serial = {}, None
        if serial == want and any(k[2] == "RRSIG" for k in rrs):
            return serial
        assert time.monotonic() < deadline, "the signed view did not reach %s (%s):\n%s" % (
            want, serial, e.srv.log()[-3000:])
        time.sleep(0.05)


def sync(e, timeout=SYNC_WAIT):
    """Every secondary serves the view's serial and exactly its data. The
    view may move on while this looks (a change not built yet when its
    serial was read): then again, from the newer serial."""
    deadline = time.monotonic() + timeout
    while True:
        serial = wait_view(e)
        got = [(s, s.wait_serial(ZONE, serial, timeout=timeout)) for s in e.secs]
        mine, now = zonecast_axfr(e)
        ahead = [g for _, g in got if g is not None and 0 < (g - serial) % 2**32 < 2**31]
        if (now != serial or ahead) and time.monotonic() < deadline:
            continue
        for s, g in got:
            assert g == serial == now, "%s serves %s, the view %s (now %s):\n%s" % (
                s.kind, g, serial, now, "\n".join(s.log().splitlines()[-20:]))
        break
    for s in e.secs:
        assert_same_rrs(rrs_of_zone(s.axfr(ZONE)), mine, "%s vs zonecast's signed view" % s.kind)
    return serial


def check_validation(e, cases, phase):
    """Each case through each secondary: unbound (AD, rcode) and delv."""
    failures = []
    for s in e.secs:
        ub = validators.Unbound(str(e.tmp / ("unbound-%s-%s" % (s.kind, phase))),
                                {ZONE: s.port}, anchors=e.anchor_lines)
        ub.start()
        try:
            for name, rdtype, kind in cases:
                r = ub.query(name, rdtype)
                want_rcode = dns.rcode.NXDOMAIN if kind == "nxdomain" else dns.rcode.NOERROR
                ok = (r.rcode() == want_rcode and r.flags & dns.flags.AD and
                      bool(r.answer) == (kind == "positive"))
                if not ok:
                    failures.append("unbound via %s: %s %s -> %s AD=%s answer=%s (want %s)\n%s"
                                    % (s.kind, name, rdtype, dns.rcode.to_text(r.rcode()),
                                       bool(r.flags & dns.flags.AD), bool(r.answer), kind,
                                       ub.log_tail(1500)))
                cp = validators.delv(s.port, e.anchors, ZONE, name, rdtype)
                want = "; fully validated" if kind == "positive" else \
                    "; negative response, fully validated"
                if want not in cp.out or (kind == "positive" and
                                          not cp.stdout.startswith(want)):
                    failures.append("delv via %s: %s %s: want %r\n%s" % (
                        s.kind, name, rdtype, want, cp.out))
        finally:
            assert ub.stop() == []
    assert not failures, "\n\n".join(failures)


def ixfr_counts(e):
    return {s.kind: s.ixfr_count() for s in (e.bind, e.knot)}


def test_secondaries_serve_the_signed_zone_and_it_validates(env):
    e = env
    rrs, _ = zonecast_axfr(e)
    types = {k[2] for k in rrs}
    assert {"RRSIG", "NSEC", "DNSKEY"} <= types, types
    # every authoritative RRset signed, glue and the cut's NS not
    signed = {(k[0], k[3]) for k in rrs if k[2] == "RRSIG"}
    assert not any(k[0] == "ns.sub.signed.test." for k in rrs if k[2] == "RRSIG")
    check_validation(e, BASE_CASES, "initial")


def _update(e, *ops):
    u = dns.update.UpdateMessage(ZONE)
    for op, args in ops:
        getattr(u, op)(*args)
    r = dns.query.tcp(u, e.srv.host, port=e.srv.port, timeout=5)
    assert r.rcode() == dns.rcode.NOERROR, r


def test_a_stream_of_changes_reaches_them_by_ixfr_and_validates(env):
    e = env
    before = ixfr_counts(e)
    serial0 = wait_view(e)
    # one change: the IXFR holds a handful of records
    _update(e, ("add", ("one.signed.test.", 300, "A", "192.0.2.1")))
    serial1 = wait_view(e)
    msgs = xfr_messages(e.srv, ZONE, rdtype="IXFR", key=e.bind.key, serial=serial0)
    items = rr_list(r for m in msgs for r in m.answer)
    assert 6 <= len(items) <= 16, "IXFR of one new name: %d RRs\n%s" % (
        len(items), "\n".join(t for _, t in items))
    kinds = sorted({(k[0], k[2]) for k, _ in items})
    assert ("one.signed.test.", "A") in kinds and ("one.signed.test.", "NSEC") in kinds, kinds
    assert sum(1 for k, _ in items if k[2] == "SOA") == 4
    # a stream through the API and UPDATE
    rec = e.api.ok("POST", "/zones/%s/dns_records" % e.zid,
                   json={"name": "api.signed.test", "type": "TXT", "content": "from the API",
                         "ttl": 600})["result"]
    for i in range(8):
        _update(e, ("add", ("s%d.signed.test." % i, 300, "A", "198.51.100.%d" % (i + 1))),
                ("add", ("s%d.signed.test." % i, 300, "TXT", "stream %d" % i)))
        if i % 3 == 2:
            _update(e, ("delete", ("s%d.signed.test." % (i - 1),)))
    _update(e, ("delete", ("mail.signed.test.",)),
            ("delete", ("signed.test.", "MX")),
            ("delete", ("www.signed.test.", "A")),
            ("add", ("www.signed.test.", 60, "A", "192.0.2.81")),
            ("add", ("*.new.signed.test.", 300, "A", "192.0.2.200")),
            ("add", ("deleg.signed.test.", 300, "NS", "ns.deleg.signed.test.")),
            ("add", ("ns.deleg.signed.test.", 300, "A", "192.0.2.97")))
    e.api.ok("PATCH", "/zones/%s/dns_records/%s" % (e.zid, rec["id"]),
             json={"content": "changed"})
    sync(e)
    after = ixfr_counts(e)
    for kind in after:
        assert after[kind] > before[kind], "%s took no IXFR:\n%s" % (kind, after)
    assert e.bind.axfr_count() == 1 and e.knot.axfr_count() == 1, (
        e.bind.axfr_count(), e.knot.axfr_count())
    check_validation(e, BASE_CASES[:3] + [
        ("one.signed.test.", "A", "positive"),
        ("api.signed.test.", "TXT", "positive"),
        ("s0.signed.test.", "TXT", "positive"),
        ("s1.signed.test.", "A", "nxdomain"),    # deleted
        ("mail.signed.test.", "A", "nxdomain"),  # deleted
        ("signed.test.", "MX", "nodata"),
        ("www.signed.test.", "A", "positive"),
        ("q.new.signed.test.", "A", "positive"),  # the new wildcard
        ("deleg.signed.test.", "DS", "nodata"),   # the new insecure cut
        ("x.y.wild.signed.test.", "TXT", "positive"),
    ], "changes")


def test_an_rrset_over_512_records_is_signed_and_transferred(env):
    """An RRset of 600 records (the write rules allow one DNS message's
    worth, about 4,000 A records): the signer
    had room for 512, so it was answered SERVFAIL with DO and froze the
    zone's signed view, every later change kept from the secondaries
    (outside tester 27). Signed, transferred and validated now; the next
    change reaches the secondaries too."""
    e = env
    u = dns.update.UpdateMessage(ZONE)
    for i in range(600):
        u.add("big.signed.test.", 300, "A", "10.0.%d.%d" % (i >> 8, i & 255))
    r = dns.query.tcp(u, e.srv.host, port=e.srv.port, timeout=10)
    assert r.rcode() == dns.rcode.NOERROR, r
    q = dns.message.make_query("big.signed.test.", "A", want_dnssec=True)
    a = dns.query.tcp(q, e.srv.host, port=e.srv.port, timeout=5)
    assert a.rcode() == dns.rcode.NOERROR, a.rcode()
    assert [len(x) for x in a.answer if x.rdtype == dns.rdatatype.A] == [600]
    assert any(x.rdtype == dns.rdatatype.RRSIG for x in a.answer), a
    _update(e, ("add", ("after-big.signed.test.", 300, "A", "192.0.2.77")))
    sync(e)
    mine, _ = zonecast_axfr(e)
    assert [k for k in mine if k[0] == "after-big.signed.test." and k[2] == "A"], \
        sorted(k for k in mine if k[0].startswith("after"))
    check_validation(e, [("big.signed.test.", "A", "positive"),
                         ("after-big.signed.test.", "A", "positive")], "big")
    _update(e, ("delete", ("big.signed.test.",)), ("delete", ("after-big.signed.test.",)))
    sync(e)


def _rollover(e, step, role="zsk"):
    # Back to back: the TTL waits are forced (test_operator_safety.py
    # checks them); every step must validate through the secondaries anyway.
    e.srv.run_cli("dnssec", "rollover", "--data-dir", e.srv.data_dir, "signed.test", role, step,
                  "--force")


def test_a_zsk_rollover_reaches_them_and_every_step_validates(env):
    e = env
    cases = BASE_CASES[:6] + [("one.signed.test.", "A", "positive"),
                              ("x.y.wild.signed.test.", "TXT", "positive")]
    tags = []
    for step in ("prepublish", "activate", "retire"):
        _rollover(e, step)
        sync(e)
        rrs, _ = zonecast_axfr(e)
        tags.append(sorted({int(t.split()[9]) for k, t in rrs.items()
                            if k[2] == "RRSIG" and k[0] == "www.signed.test."}))
        check_validation(e, cases, "zsk-" + step)
    # the new ZSK signs from activation on, alone after retirement
    assert tags[0] != tags[1] and tags[1] == tags[2], tags
    rrs, _ = zonecast_axfr(e)
    zsks = [t for k, t in rrs.items() if k[2] == "DNSKEY" and t.split()[3] == "256"]
    assert len(zsks) == 1, zsks


def test_a_ksk_rollover_reaches_them_with_the_new_ds(env):
    """KSK: prepublish (the new KSK in DNSKEY, CDS and CDNSKEY; the old one
    still signs, so the old DS still validates), activate (the new KSK signs
    the DNSKEY set: the new DS validates), retire (the old one gone): each
    step through every secondary."""
    e = env
    cases = [("www.signed.test.", "A", "positive"), ("signed.test.", "DNSKEY", "positive"),
             ("nope.signed.test.", "A", "nxdomain")]
    old_anchor_lines, old_anchors = e.anchor_lines, e.anchors
    _rollover(e, "prepublish", "ksk")
    sync(e)
    check_validation(e, cases, "ksk-prepublish")
    out = e.srv.run_cli("dnssec", "ds", "--data-dir", e.srv.data_dir, "signed.test").stdout
    both = validators.parse_ds(out)
    assert len(both) == 2, out
    new = [d for d in both if d[1] not in [x[1] for x in e.ds]]
    assert len(new) == 1, (both, e.ds)
    _rollover(e, "activate", "ksk")
    sync(e)
    e.anchors = validators.anchors_file(str(e.tmp / "anchors-new.conf"), new)
    e.anchor_lines = [l for l in out.splitlines() if " DS " in l and
                      str(new[0][1].key_tag) in l.split()]
    assert len(e.anchor_lines) == 1, out
    try:
        check_validation(e, cases, "ksk-activate")
        _rollover(e, "retire", "ksk")
        sync(e)
        check_validation(e, cases, "ksk-retire")
        rrs, _ = zonecast_axfr(e)
        ksks = [t for k, t in rrs.items() if k[2] == "DNSKEY" and t.split()[3] == "257"]
        assert len(ksks) == 1, ksks
    finally:
        e.ds = new
    assert old_anchors != e.anchors and old_anchor_lines != e.anchor_lines


def _transferred_zone_file(e, sec, path):
    cp = subprocess.run(["dig", "@127.0.0.1", "-p", str(sec.port), "AXFR", ZONE, "+nocmd",
                         "+nostats", "+nocomments"], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    lines = [l for l in cp.stdout.splitlines() if l.strip() and not l.startswith(";")]
    with open(path, "w") as f:
        f.write("\n".join(lines[:-1]) + "\n")   # the closing SOA once
    return path


def test_dnssec_verify_and_ldns_verify_zone_accept_what_they_transferred(env):
    e = env
    for tool in ("dnssec-verify", "ldns-verify-zone"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            pytest.skip("%s not installed" % tool)
    for s in e.secs:
        path = _transferred_zone_file(e, s, str(e.tmp / ("%s.axfr" % s.kind)))
        # a KSK and a ZSK, so no -z (a zone with a CSK alone needs it)
        cp = subprocess.run(["dnssec-verify", "-o", ZONE, path], capture_output=True,
                            text=True, timeout=60)
        assert cp.returncode == 0 and "Zone fully signed" in cp.stdout + cp.stderr, (
            s.kind, cp.stdout + cp.stderr)
        cp = subprocess.run(["ldns-verify-zone", path], capture_output=True, text=True,
                            timeout=60)
        assert cp.returncode == 0 and "Zone is verified and complete" in cp.stdout + cp.stderr, (
            s.kind, cp.stdout + cp.stderr)


class _ShortSignatures(servers.ZonecastServer):
    """zonecast whose signed view makes signatures valid 24 s (jitter 6 s,
    made again 12 s before they expire, checked every second), 8 at most
    per version: ZONECAST_SIGVIEW_VALIDITY and ZONECAST_SIGVIEW_BATCH."""

    def env(self):
        env = super().env()
        env["ZONECAST_SIGVIEW_VALIDITY"] = "24"
        env["ZONECAST_SIGVIEW_BATCH"] = "8"
        return env


def test_signatures_are_refreshed_in_batches_before_they_expire(tmp_path):
    """A zone that does not change: before its signatures expire zonecast
    gives it versions of its own (records_zone_touch) and makes a batch of
    at most 8 signatures again in each; knotd follows each by IXFR, holding
    RRSIG changes only; no signature it serves ever expires, and the zone
    validates through it at the end."""
    if not os.access(servers.knotd_bin(), os.X_OK) or \
            not os.access(validators.delv_bin(), os.X_OK):
        pytest.skip("knotd or delv not installed")
    zfile = tmp_path / "signed.test.zone"
    zfile.write_text(ZONE_FILE)
    pport = servers.free_port()
    knot = secondaries.KnotSecondary(str(tmp_path / "knot"), pport, [ZONE])
    srv = _ShortSignatures(str(tmp_path / "zc"), zones={ZONE: str(zfile)}, port=pport,
                           options=[("notify", "127.0.0.1:%d" % knot.port),
                                    ("allow-transfer", "127.0.0.1"),
                                    ("notify-timeout", "300"), ("log-level", "debug")])
    os.makedirs(srv.workdir, exist_ok=True)
    e = Env()
    e.srv, e.secs, e.bind = srv, [knot], None
    try:
        srv.start()
        out = srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, "signed.test")
        anchors = validators.anchors_file(str(tmp_path / "anchors.conf"),
                                          validators.parse_ds(out.stdout))
        e.bind = Env()
        e.bind.key = None
        first = wait_view(e)
        knot.start()
        sync(e)
        t0 = time.monotonic()
        deadline = t0 + 40 * servers.TIMEOUT_SCALE
        seen = {}
        while time.monotonic() < deadline and len(seen) < 6:
            serial = srv.query(ZONE, "SOA").answer[0][0].serial
            if serial != first and serial not in seen:
                seen[serial] = time.monotonic() - t0
            time.sleep(0.2)
        assert len(seen) >= 3, "no refresh versions in %.0f s: %s\n%s" % (
            time.monotonic() - t0, seen, srv.log()[-3000:])
        last = sync(e)
        # from the first serial on: RRSIG changes only (and the SOA)
        msgs = xfr_messages(srv, ZONE, rdtype="IXFR", serial=first)
        kinds = {k[2] for k, _ in rr_list(r for m in msgs for r in m.answer)}
        assert kinds == {"SOA", "RRSIG"}, kinds
        # each refresh version made a batch at most (8), and the SOA's
        lines = re.findall(r"signed view: zone signed\.test\. serial (\d+) -> (\d+), "
                           r"(\d+) signatures", srv.log())
        refreshes = [(int(a), int(b), int(n)) for a, b, n in lines if int(a) >= first]
        assert len(refreshes) >= 3, lines
        assert all(1 <= n <= 8 + 1 for _, _, n in refreshes), refreshes
        assert sum(n - 1 for _, _, n in refreshes) >= 20, refreshes  # most of the zone's
        now = time.time()
        rrs, _ = zonecast_axfr_unsigned(srv)
        expirations = [int(t.split()[7]) for k, t in rrs.items() if k[2] == "RRSIG"]
        assert expirations and all(_ts(x) > now for x in expirations), sorted(expirations)[:5]
        assert_same_rrs(rrs_of_zone(knot.axfr(ZONE)), rrs, "knotd vs zonecast after refreshes")
        cp = validators.delv(knot.port, anchors, ZONE, "www.signed.test.", "A")
        assert cp.stdout.startswith("; fully validated"), cp.out
    finally:
        problems = knot.stop() + srv.stop()
        assert not problems, problems


def _ts(text):
    """RRSIG time (YYYYMMDDHHMMSS, or seconds) as Unix seconds."""
    import calendar
    s = str(text)
    if len(s) == 14:
        return calendar.timegm(time.strptime(s, "%Y%m%d%H%M%S"))
    return int(s)


def zonecast_axfr_unsigned(srv):
    msgs = xfr_messages(srv, ZONE, source="127.0.0.1")
    items = rr_list(r for m in msgs for r in m.answer)
    return dict(items[:-1]), int(items[0][1].split()[5])
