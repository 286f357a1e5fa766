"""The zone-content rules give the same outcome through the HTTP API and
through RFC 2136 UPDATE (records/rules.h, docs/api.md and
docs/dynamic-updates.md).

Every case makes two zones alike on one zonecast (`zonecast_dyn`): the
same records are written into both through the API, then the same change
is sent to one through the API (POST or DELETE, `?wait=live`) and to the
other as an UPDATE signed with a TSIG key of the zone (dnspython). Both
must agree on whether the change was made (API 200 vs 400; UPDATE NOERROR
that moved the serial vs NOERROR that changed nothing, REFUSED or NOTZONE)
and DNS must then serve the same RRsets, TTLs included, for every name and
type the case touches (names in rdata compared as text, relative to each
zone, so their case counts). A refused change changes nothing.

Two outcomes differ by design and are checked as such: a second CNAME is
refused by the API and replaces the first through UPDATE (RFC 2136
§3.4.2.2), and a duplicate with a new TTL is refused by the API and
retimes the RRset through UPDATE.
"""

import itertools
import subprocess
import time

import dns.flags
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.update
import pytest

import servers
from conftest import UPDATE_SOURCE

DNS_WAIT = 2.0 * servers.TIMEOUT_SCALE
_seq = itertools.count(1)

KEY = ("257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF"
       "+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==")


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def zone_check(origin, path):
    """`zonecast zone check --origin ORIGIN PATH`: (exit code, its output)."""
    cp = subprocess.run([servers.zonecast_bin(), "zone", "check", "--origin", origin, str(path)],
                        capture_output=True, text=True)
    return cp.returncode, cp.stdout + cp.stderr


# ------------------------------------------------------------------ the cases

def add(name, rtype, ttl, text, api="accepted", update=None, rcode="NOERROR"):
    """A step: add a record. `api`/`update`: "accepted" or "refused" (update
    defaults to api's); rcode: the UPDATE's answer."""
    return ("add", name, rtype, ttl, text, api, update or api, rcode)


def delete(name, rtype, text, api="accepted", update=None, rcode="NOERROR"):
    """A step: delete one record (API: DELETE by id; UPDATE: class NONE)."""
    return ("delete", name, rtype, None, text, api, update or api, rcode)


# (id, records written first through the API: (name, type, ttl, rdata), steps)
# Names: "@" the apex, "x" relative, "x." absolute; {o} in rdata: the origin.
CASES = [
    # The drift this module fixed: the API compared rdata octet by octet,
    # UPDATE in canonical form (RFC 2136 §1.1.1, RFC 4034 §6.2).
    ("mx-name-case-is-a-duplicate", [("@", "MX", 300, "10 mail.{o}")],
     [add("@", "MX", 300, "10 MAIL.{o}", "refused")]),
    ("mx-name-case-escaped-octets", [("e", "MX", 300, "10 a\\000b.{o}")],
     [add("e", "MX", 300, "10 A\\000B.{o}", "refused"),
      add("e", "MX", 300, "10 a\\000c.{o}")]),
    ("mx-escaped-dot-is-another-name", [("d", "MX", 300, "10 a.b.{o}")],
     [add("d", "MX", 300, "10 a\\.b.{o}"),
      add("d", "MX", 300, "10 A\\.B.{o}", "refused")]),
    ("ns-name-case", [("sub", "NS", 300, "ns.other.test.")],
     [add("sub", "NS", 300, "NS.Other.TEST.", "refused")]),
    ("srv-name-case", [("_sip._tcp", "SRV", 300, "0 5 5060 sip.{o}")],
     [add("_sip._tcp", "SRV", 300, "0 5 5060 SIP.{o}", "refused"),
      add("_sip._tcp", "SRV", 300, "0 5 5061 SIP.{o}")]),
    ("ptr-name-case", [("1", "PTR", 300, "host.other.test.")],
     [add("1", "PTR", 300, "HOST.other.test.", "refused")]),
    ("cname-name-case", [("c", "CNAME", 300, "t.{o}")],
     [add("c", "CNAME", 300, "T.{o}", "refused")]),
    ("txt-case-is-data", [("t", "TXT", 300, '"abc"')],
     [add("t", "TXT", 300, '"ABC"')]),
    ("identical-a", [("a", "A", 300, "192.0.2.1")],
     [add("a", "A", 300, "192.0.2.1", "refused"), add("a", "A", 300, "192.0.2.2")]),
    # CNAME and other data, both orders (RFC 1034 §3.6.2); UPDATE ignores.
    ("cname-beside-data", [("x", "A", 300, "192.0.2.1")],
     [add("x", "CNAME", 300, "t.{o}", "refused")]),
    ("data-beside-cname", [("y", "CNAME", 300, "t.{o}")],
     [add("y", "A", 300, "192.0.2.1", "refused"),
      add("y", "TXT", 300, '"beside"', "refused")]),
    ("cname-at-apex", [],
     [add("@", "CNAME", 300, "elsewhere.test.", "refused")]),
    # A DS is the parent's, at the cut (RFC 4035 §2.4): not at the apex
    # (BIND's named-checkzone refuses such a zone, its UPDATE ignores it);
    # at a delegation below, taken.
    ("ds-at-apex", [("sub", "NS", 300, "ns.elsewhere.test.")],
     [add("@", "DS", 300, "12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", "refused"),
      add("sub", "DS", 300, "12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF")]),
    ("dname-beside-cname", [("dn", "CNAME", 300, "t.{o}")],
     [add("dn", "DNAME", 300, "other.test.", "refused")]),
    ("dname-beside-data", [("dn2", "A", 300, "192.0.2.1")],
     [add("dn2", "DNAME", 300, "other.test.")]),
    ("wildcard", [("*", "TXT", 300, '"w"')],
     [add("*", "CNAME", 300, "t.{o}", "refused"), add("*", "A", 300, "192.0.2.9")]),
    # No data below a DNAME (RFC 6672 §2.4): API 400, UPDATE REFUSED (as
    # knotd answers; BIND 9.18 adds them). At the DNAME's own name other
    # data is taken, a CNAME is not (ignored by UPDATE, as beside data).
    ("below-dname", [("dn3", "DNAME", 300, "other.test.")],
     [add("x.dn3", "A", 300, "192.0.2.1", "refused", rcode="REFUSED"),
      add("a.b.dn3", "TXT", 300, '"deep"', "refused", rcode="REFUSED"),
      add("x.dn3", "DNAME", 300, "other.test.", "refused", rcode="REFUSED"),
      add("dn3", "TXT", 300, '"at the owner"'),
      add("dn3", "CNAME", 300, "t.{o}", "refused"),
      add("dn3x", "A", 300, "192.0.2.2")]),
    ("dname-above-data", [("q.p", "A", 300, "192.0.2.1")],
     [add("p", "DNAME", 300, "other.test.", "refused", rcode="REFUSED"),
      add("p", "A", 300, "192.0.2.2"),
      add("q", "DNAME", 300, "other.test.")]),
    ("dname-above-a-delegation", [("del", "NS", 300, "ns.other.test."),
                                  ("glue.del", "A", 300, "192.0.2.3")],
     [add("del", "DNAME", 300, "other.test.", "refused", rcode="REFUSED")]),
    ("dname-at-the-apex-above-data", [("h", "A", 300, "192.0.2.1")],
     [add("@", "DNAME", 300, "other.test.", "refused", rcode="REFUSED")]),
    # One TTL per RRset (RFC 2181 §5.2).
    ("ttl-retimes-the-rrset", [("r", "A", 300, "192.0.2.1"), ("r", "A", 300, "192.0.2.2")],
     [add("r", "A", 600, "192.0.2.3")]),
    # The online signer's types: API 400, UPDATE REFUSED.
    ("signer-dnskey", [],
     [add("@", "DNSKEY", 300, KEY, "refused", rcode="REFUSED")]),
    ("signer-cds", [],
     [add("@", "CDS", 300, "12345 13 2 " + "3F0C9C2AB8E7D4C2" * 4, "refused",
          rcode="REFUSED")]),
    # Names outside the zone: API 400, UPDATE NOTZONE.
    ("outside-the-zone", [],
     [add("www.other.test.", "A", 300, "192.0.2.1", "refused", rcode="NOTZONE")]),
    # The apex NS: one may go, the last stays (UPDATE: ignored).
    ("last-apex-ns", [],
     [delete("@", "NS", "ns2.{o}"), delete("@", "NS", "ns1.{o}", "refused")]),
    ("delete-one-mx", [("@", "MX", 300, "10 mail.{o}"), ("@", "MX", 300, "20 mx2.{o}")],
     [delete("@", "MX", "20 mx2.{o}")]),
]

# The outcomes that differ by design (docs/api.md, docs/dynamic-updates.md).
DIFFERENCES = [
    ("second-cname", [("c2", "CNAME", 300, "one.{o}")],
     [add("c2", "CNAME", 300, "two.{o}", api="refused", update="accepted")]),
    ("duplicate-with-new-ttl", [("d2", "A", 300, "192.0.2.1")],
     [add("d2", "A", 60, "192.0.2.1", api="refused", update="accepted")]),
]


# ------------------------------------------------------------------ helpers

class Zone:
    """A zone of the case: API id, name (no final dot), origin, a TSIG key."""

    def __init__(self, srv, api, prefix):
        self.srv, self.api = srv, api
        self.name = "%s%d.parity.test" % (prefix, next(_seq))
        self.origin = self.name + "."
        self.id = api.ok("POST", "/zones", json={"name": self.name})["result"]["id"]
        self.key = srv.tsig_create("parity-key." + self.name, self.name)
        self.settle()

    def fq(self, name):
        if name == "@":
            return self.origin
        return name if name.endswith(".") else "%s.%s" % (name, self.origin)

    def update_message(self):
        """An UPDATE of the zone, signed with its TSIG key."""
        return dns.update.UpdateMessage(self.origin, keyring=self.key.key,
                                        keyalgorithm=self.key.key.algorithm)

    def rdata(self, rtype, text):
        return dns.rdata.from_text(dns.rdataclass.IN, rtype, text.format(o=self.origin),
                                   origin=dns.name.root, relativize=False)

    def serial(self):
        return self.api.get("/zones/%s" % self.id)["serial"]

    def served_serial(self):
        try:
            m = self.srv.query(self.origin, "SOA", timeout=0.5)
        except Exception:
            return None
        soa = [r for r in m.answer if r.rdtype == dns.rdatatype.SOA]
        return soa[0][0].serial if soa else None

    def settle(self):
        """Wait until DNS serves the API's current version; return it."""
        s = self.serial()
        deadline = time.monotonic() + DNS_WAIT
        while self.served_serial() != s:
            assert time.monotonic() < deadline, "%s: serial %s not served" % (self.name, s)
            time.sleep(0.01)
        return s

    def post(self, name, rtype, ttl, text):
        return self.api.call("POST", "/zones/%s/dns_records" % self.id,
                             params={"wait": "live"},
                             json={"name": self.fq(name), "type": rtype, "ttl": ttl,
                                   "content": text.format(o=self.origin)})

    def record_id(self, name, rtype, text):
        want = self.rdata(rtype, text)
        for r in self.api.records(self.id, type=rtype):
            content = r["content"]
            if r.get("priority") is not None:
                content = "%d %s" % (r["priority"], content)
            if rtype in ("NS", "MX", "CNAME", "PTR") and not content.endswith("."):
                content += "."      # the API writes names without their final dot
            if r["name"] + "." == self.fq(name).lower() and self.rdata(rtype, content) == want:
                return r["id"]
        raise AssertionError("%s: no %s %s %s" % (self.name, name, rtype, text))

    def served(self, name, rtype):
        """(rcode, sorted rdata texts relative to the origin, ttl) for (name, rtype)."""
        qname = dns.name.from_text(self.fq(name))
        for _ in range(3):
            try:
                m = self.srv.query(self.fq(name), rtype, timeout=1.0)
                break
            except Exception:
                m = None
        assert m is not None, "no answer for %s %s" % (name, rtype)
        origin = dns.name.from_text(self.origin)
        rrs = [r for r in m.answer
               if r.name == qname and r.rdtype == dns.rdatatype.from_text(rtype)]
        texts = sorted(rd.to_text(origin=origin, relativize=True) for r in rrs for rd in r)
        return dns.rcode.to_text(m.rcode()), texts, rrs[0].ttl if rrs else None


def via_api(z, step):
    """Apply a step through the API; returns "accepted" or "refused"."""
    op, name, rtype, ttl, text = step[:5]
    if op == "add":
        r = z.post(name, rtype, ttl, text)
    else:
        rid = z.record_id(name, rtype, text)
        r = z.api.call("DELETE", "/zones/%s/dns_records/%s" % (z.id, rid),
                       params={"wait": "live"})
    if r.status_code == 200:
        return "accepted"
    assert r.status_code == 400, "%s: HTTP %d %s" % (step, r.status_code, r.text)
    assert r.json()["errors"][0]["message"], r.text
    return "refused"


def via_update(z, step):
    """Apply a step as a TSIG-signed UPDATE; returns ("accepted" or
    "refused", the rcode's name). NOERROR without a new serial: refused
    (ignored, RFC 2136 §3.4.2)."""
    op, name, rtype, ttl, text = step[:5]
    before = z.settle()
    u = z.update_message()
    if op == "add":
        u.add(z.fq(name), ttl, rtype, text.format(o=z.origin))
    else:
        u.delete(z.fq(name), rtype, text.format(o=z.origin))
    r = dns.query.tcp(u, z.srv.host, port=z.srv.port, timeout=5)
    rcode = dns.rcode.to_text(r.rcode())
    moved = z.serial() != before
    assert not moved or rcode == "NOERROR", (step, rcode)
    return ("accepted" if moved else "refused"), rcode


def probes(records, steps):
    return sorted({(name, rtype) for name, rtype, _, _ in records}
                  | {(s[1], s[2]) for s in steps} | {("@", "NS"), ("@", "MX")})


def state(z, probe_list):
    return {p: z.served(*p) for p in probe_list}


def run_case(srv, api, records, steps, compare_served=True):
    za, zu = Zone(srv, api, "pa"), Zone(srv, api, "pu")
    for z in (za, zu):
        for name, rtype, ttl, text in records:
            r = z.post(name, rtype, ttl, text)
            assert r.status_code == 200, "setup %s %s: %s" % (name, rtype, r.text)
        z.settle()
    plist = probes(records, steps)
    for step in steps:
        want_api, want_update, want_rcode = step[5:]
        before_a, before_u = state(za, plist), state(zu, plist)
        got_api = via_api(za, step)
        got_update, rcode = via_update(zu, step)
        za.settle()
        after_a, after_u = state(za, plist), state(zu, plist)
        assert (got_api, got_update, rcode) == (want_api, want_update, want_rcode), \
            "step %r: API %s, UPDATE %s (%s)" % (step[:5], got_api, got_update, rcode)
        for got, before, after, path in ((got_api, before_a, after_a, "API"),
                                        (got_update, before_u, after_u, "UPDATE")):
            if got == "refused":
                assert after == before, "%s: a refused %r changed what is served" % (
                    path, step[:5])
            else:
                assert after != before, "%s: an accepted %r changed nothing" % (path, step[:5])
        if compare_served:
            assert after_a == after_u, "step %r: API and UPDATE serve differently:\n" \
                "API    %r\nUPDATE %r" % (step[:5], after_a, after_u)
    return za, zu


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_api_and_update_agree(srv, api, case):
    _id, records, steps = case
    run_case(srv, api, records, steps)


def test_mx_differing_in_case_is_one_record_both_ways(srv, api):
    """The drift case, spelled out: MX 10 mail and MX 10 MAIL are one record
    (RFC 4034 §6.2) to the API as to UPDATE; the stored spelling stays."""
    za, zu = run_case(srv, api, [("@", "MX", 300, "10 mail.{o}")],
                      [add("@", "MX", 300, "10 MAIL.{o}", "refused")])
    for z in (za, zu):
        assert z.served("@", "MX") == ("NOERROR", ["10 mail"], 300)
        assert [r["content"] for r in api.records(z.id, type="MX")] == ["mail." + z.name]


def test_a6_differing_in_case_is_one_record(srv, api):
    """A6's prefix name is lowercased by canonical form (RFC 4034 §6.2, as
    BIND compares it; libknot's list leaves A6 out): both spellings were
    stored through UPDATE (the API takes no A6), and a validator, seeing
    one record, found the RRSIG over two bogus (outside tester 28). The
    second is a duplicate now: NOERROR, nothing added."""
    z = Zone(srv, api, "a6")
    for prefix in ("p.example.", "P.EXAMPLE."):
        # 64 ::1 PREFIX: prefix length, 8 octets of suffix, the name (in
        # the generic form: dnspython has no A6 text form)
        wire = bytes([64]) + bytes(7) + b"\x01" + dns.name.from_text(prefix).to_wire()
        u = z.update_message()
        u.add(z.fq("a6"), 300, "TYPE38", "\\# %d %s" % (len(wire), wire.hex()))
        m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
        assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    z.settle()
    served = srv.query(z.fq("a6"), "TYPE38").answer
    assert len(served) == 1 and len(served[0]) == 1, served


@pytest.mark.parametrize("case", DIFFERENCES, ids=[c[0] for c in DIFFERENCES])
def test_documented_differences(srv, api, case):
    _id, records, steps = case
    za, zu = run_case(srv, api, records, steps, compare_served=False)
    if _id == "second-cname":
        assert za.served("c2", "CNAME")[1] == ["one"]
        assert zu.served("c2", "CNAME")[1] == ["two"]
    else:
        assert za.served("d2", "A") == ("NOERROR", ["192.0.2.1"], 300)
        assert zu.served("d2", "A") == ("NOERROR", ["192.0.2.1"], 60)


def test_a_name_holds_at_most_504_types_both_ways(srv, api, tmp_path):
    """An edge store node holds 512 types (504 are taken: 8 are kept for
    what signing adds). The 513th was stored and
    acknowledged by nobody (an UPDATE got SERVFAIL), the zone's builds
    then failed (quarantined: every later change of the zone unserved).
    The rules refuse it on every path now: the API 400 naming type, an
    UPDATE REFUSED, an import with its line; a record of a type the name
    already holds is still taken."""
    z = Zone(srv, api, "types")
    posts = [{"type": "TYPE%d" % t, "name": "big." + z.name, "content": "\\# 1 00"}
             for t in range(1000, 1504)]
    r = api.call("POST", "/zones/%s/dns_records/batch" % z.id, json={"posts": posts})
    assert r.status_code == 200, r.text
    before = z.settle()
    r = z.post("big", "TYPE1504", 300, "\\# 1 00")
    assert r.status_code == 400 and r.json()["errors"][0]["message"].startswith("type:"), r.text
    u = z.update_message()
    u.add(z.fq("big"), 300, "TYPE1504", "\\# 1 00")
    u.add(z.fq("other"), 300, "A", "192.0.2.1")     # the whole message is refused
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.REFUSED, dns.rcode.to_text(m.rcode())
    assert z.serial() == before
    # the rule holds for what a message leaves: an add past the limit
    # that a later delete brings back is taken (an UPDATE's changes are
    # made in order, RFC 2136 §3.4.2; it was refused at the add), one
    # that leaves 505 types is refused whole
    u = z.update_message()
    u.add(z.fq("big"), 300, "TYPE1504", "\\# 1 00")
    u.add(z.fq("big"), 300, "TYPE1505", "\\# 1 00")
    u.delete(z.fq("big"), "TYPE1001")
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.REFUSED, dns.rcode.to_text(m.rcode())
    assert z.serial() == before
    u = z.update_message()
    u.add(z.fq("big"), 300, "TYPE1504", "\\# 1 00")
    u.delete(z.fq("big"), "TYPE1001")
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    before = z.settle()
    assert z.served("big", "TYPE1504")[0] == "NOERROR"
    assert not z.served("big", "TYPE1001")[1]
    # a type the name holds, and other names, are taken; the zone builds
    u = z.update_message()
    u.add(z.fq("big"), 300, "TYPE1000", "\\# 1 01")
    u.add(z.fq("other"), 300, "A", "192.0.2.1")
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    assert z.settle() != before
    assert z.served("other", "A")[1] == ["192.0.2.1"]
    # a zone whose apex is full signs (the signer's types have their
    # room): a name of 512 types stopped `dnssec enable`, quarantined
    posts = [{"type": "TYPE%d" % t, "name": z.name, "content": "\\# 1 00"}
             for t in range(2000, 2502)]
    r = api.call("POST", "/zones/%s/dns_records/batch" % z.id, json={"posts": posts})
    assert r.status_code == 200, r.text
    api.ok("PATCH", "/zones/%s/dnssec" % z.id, json={"status": "active"})
    deadline = time.monotonic() + DNS_WAIT * 5
    while True:
        m = srv.query(z.origin, "DNSKEY")
        if m.answer:
            break
        assert time.monotonic() < deadline, "the signed zone is not served"
        time.sleep(0.05)
    zone = api.get("/zones/%s" % z.id)
    assert zone["status"] == "active" and zone["quarantine"] is None, zone
        # a master file with 505 types at one name: refused with its line
    lines = ["$ORIGIN t.test.", "@ 300 SOA ns h 1 2 3 4 5", "@ 300 NS ns", "ns 300 A 192.0.2.1"]
    lines += ["big 300 TYPE%d \\# 1 00" % t for t in range(1000, 1505)]
    path = tmp_path / "t.zone"
    path.write_text("\n".join(lines) + "\n")
    code, out = zone_check("t.test", path)
    assert code == 1 and "504 record types" in out, out


def test_an_rrset_fits_in_one_dns_message(srv, api, tmp_path):
    """An RRset takes at most 65,007 octets as an answer (records with a
    compressed owner, its owner once: RECORDS_RULES_MAX_RRSET_OCTETS,
    room left for the header, question, its RRSIG and OPT). Larger ones
    were stored: no query could get them whole (TC over TCP too), a BIND
    secondary refused the zone, and a 65,535-octet record stopped every
    AXFR of its zone (outside tester 28); 65,600 records at one name had
    failed the zone's builds before. An import names the line of the
    first record past the limit; the largest RRset that fits is served
    whole over TCP; the API and UPDATE refuse one record more."""
    head = ["$ORIGIN big.test.", "$TTL 300", "@ SOA ns h 1 2 3 4 5", "@ NS ns", "ns A 192.0.2.1"]
    owner = len(dns.name.from_text("many.big.test.").to_wire())
    fit = (65535 - 12 - 4 - 512 - owner) // (12 + 16)   # AAAA records that fit
    rows = ["many AAAA 2001:db8::%x:%x" % (i >> 16, i & 0xffff) for i in range(fit + 1)]
    path = tmp_path / "over.zone"
    path.write_text("\n".join(head + rows) + "\n")
    code, out = zone_check("big.test", path)
    assert code == 1 and "over.zone:%d:" % (len(head) + fit + 1) in out, out[-500:]
    assert out.count("larger than one DNS message") == 1, out[-500:]
    big = dns.rdata.from_text(dns.rdataclass.IN, "TYPE65280",
                              "\\# 65500 " + "00" * 65500)
    path = tmp_path / "one.zone"
    path.write_text("\n".join(head + ["huge 300 TYPE65280 %s" % big.to_text()]) + "\n")
    code, out = zone_check("big.test", path)
    assert code == 1 and "one.zone:6:" in out, out
    # the largest that fits: imported, answered whole over TCP
    name = "full%d.test" % next(_seq)
    path = tmp_path / "full.zone"
    path.write_text("\n".join(["$ORIGIN %s." % name] + head[1:] + rows[:fit]) + "\n")
    srv.import_zone(name, str(path))
    m = srv.query("many.%s." % name, "AAAA", tcp=True)
    assert not m.flags & dns.flags.TC and sum(len(r) for r in m.answer) == fit, \
        (m.flags, sum(len(r) for r in m.answer))
    # one more: API 400, UPDATE REFUSED (the whole message), nothing added
    zid = api.zone_id(name)
    r = api.call("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "AAAA", "name": "many." + name, "content": "2001:db8::ffff:1"})
    assert r.status_code == 400 and "larger than one DNS message" in r.text, r.text
    u = dns.update.UpdateMessage(name + ".")
    u.add("many.%s." % name, 300, "AAAA", "2001:db8::ffff:1")
    m = servers.exchange_from("127.0.0.1", srv.port, u.to_wire(), tcp=True,
                              source=UPDATE_SOURCE)
    assert m is not None and m[3] & 0x0f == dns.rcode.REFUSED, m


def test_no_data_below_a_dname_on_every_path(srv, api, tmp_path):
    """RFC 6672 §2.4: no record below a DNAME's owner. A Knot secondary
    refuses such a zone ("child record exists under DNAME") and stays on
    its old serial; the rules refuse it on every path: the API 400 naming
    the name and the DNAME (a batch too, nothing of it written), an UPDATE
    REFUSED as a whole (as knotd answers), a master file with each line."""
    z = Zone(srv, api, "dn")
    r = z.post("dn", "DNAME", 300, "other.test.")
    assert r.status_code == 200, r.text
    r = z.post("q.p", "A", 300, "192.0.2.1")
    assert r.status_code == 200, r.text
    before = z.settle()
    r = z.post("x.dn", "A", 300, "192.0.2.1")
    msg = r.json()["errors"][0]["message"]
    assert r.status_code == 400 and msg.startswith("name: x.dn.%s is below the DNAME at dn.%s"
                                                   % (z.name, z.name)), r.text
    assert "RFC 6672 section 2.4" in msg, msg
    r = z.post("p", "DNAME", 300, "other.test.")
    msg = r.json()["errors"][0]["message"]
    assert r.status_code == 400 and msg.startswith("name: a DNAME at p.%s would have records "
                                                   "below it, such as at q.p.%s"
                                                   % (z.name, z.name)), r.text
    # a batch whose later post lies below its earlier DNAME: nothing written
    posts = [{"type": "DNAME", "name": "b." + z.name, "content": "other.test."},
             {"type": "A", "name": "c.b." + z.name, "content": "192.0.2.9"}]
    r = api.call("POST", "/zones/%s/dns_records/batch" % z.id, json={"posts": posts})
    assert r.status_code == 400 and "below the DNAME at b." in r.text, r.text
    assert z.serial() == before
    # UPDATE: the whole message REFUSED, its other record not added
    u = z.update_message()
    u.add(z.fq("ok"), 300, "A", "192.0.2.1")
    u.add(z.fq("x.dn"), 300, "A", "192.0.2.1")
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.REFUSED, dns.rcode.to_text(m.rcode())
    assert z.serial() == before
    # deleting the records below first, in the same message, lets the DNAME in
    u = z.update_message()
    u.delete(z.fq("q.p"))
    u.add(z.fq("p"), 300, "DNAME", "other.test.")
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    assert z.settle() != before
    assert [r["name"] for r in api.records(z.id, type="DNAME")] == ["dn." + z.name, "p." + z.name]
    # a master file: each record below a DNAME, with its line
    path = tmp_path / "dn.zone"
    path.write_text("$ORIGIN dn.test.\n@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\n"
                    "ns 300 A 192.0.2.1\ndn 300 DNAME other.test.\ndn 300 A 192.0.2.2\n"
                    "x.dn 300 A 192.0.2.3\ndnx 300 A 192.0.2.4\na.b.dn 300 TXT deep\n")
    code, out = zone_check("dn.test", path)
    assert code == 1, out
    assert "dn.zone:7: error: x.dn.dn.test. A: record below the DNAME at dn.dn.test. " \
        "(RFC 6672 section 2.4)" in out, out
    assert "dn.zone:9: error: a.b.dn.dn.test. TXT: record below the DNAME" in out, out
    assert "2 problem(s)" in out, out


def test_a_ds_at_the_apex_is_refused_by_imports(tmp_path):
    """A master file with a DS at its apex: `zone check` (and so `zone
    import`) names the line; zonecast exported such a zone, which BIND
    then refused to load ("DS record at top of zone": outside tester 27)."""
    path = tmp_path / "ds.zone"
    path.write_text("$ORIGIN ds.test.\n@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\n"
                    "ns 300 A 192.0.2.1\n@ 300 DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n"
                    "sub 300 NS ns.sub\nsub 300 DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\nns.sub 300 A 192.0.2.2\n")
    code, out = zone_check("ds.test", path)
    assert code == 1, out
    assert "ds.zone:5: error: ds.test. DS: DS at the zone apex" in out, out
    assert "1 problem(s)" in out, out


def test_a_record_whose_text_is_longest_reads_back_whole(srv, api):
    """A TXT record of 25,600 control octets (taken by UPDATE, as by zone
    import: over 100,000 characters as text) is listed by the API with its
    whole content: the API rendered it into a 70,000-character buffer,
    listed `content: ""`, and a client writing back what it read stored
    an empty TXT (outside tester 28). Its content parses back to the same
    record; written back, it is refused (longer than the API takes) and
    the record stays."""
    z = Zone(srv, api, "long")
    octets = bytes(i % 32 for i in range(255))
    text = " ".join('"%s"' % "".join("\\%03d" % b for b in octets) for _ in range(100))
    rd = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.TXT, text)
    u = z.update_message()
    u.add(z.fq("bin"), 300, rd)
    m = dns.query.tcp(u, srv.host, port=srv.port, timeout=10)
    assert m.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(m.rcode())
    rec = [r for r in api.records(z.id, type="TXT") if r["name"] == "bin." + z.name][0]
    assert len(rec["content"]) > 100000, len(rec["content"])
    back = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.TXT, rec["content"])
    assert back == rd
    one = api.get("/zones/%s/dns_records/%s" % (z.id, rec["id"]))
    assert one["content"] == rec["content"]
    before = z.settle()
    r = api.call("PUT", "/zones/%s/dns_records/%s" % (z.id, rec["id"]),
                 json={"type": "TXT", "name": rec["name"], "content": rec["content"], "ttl": 600})
    assert r.status_code == 400 and "content:" in r.text, r.text
    assert z.serial() == before
    served = srv.query(z.fq("bin"), "TXT", tcp=True).answer
    assert served and served[0][0] == rd
