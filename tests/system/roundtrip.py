"""What is accepted must re-import (issue 11 item 8): the round-trip property.

For random records of every type the API takes (rdata_gen.py), with owner
names holding any octet:

  API write (and, for a share of them, a TSIG-signed UPDATE)
    -> the DNS answer (dnspython) carries exactly the records written
    -> `zonecast zone export` equals GET .../dns_records/export, and
       named-checkzone (BIND 9) loads it
    -> `zonecast zone import` of it into a fresh data directory: the same
       answers, and an export with the same records
    -> an API import of it into a zone made anew: the same records.

Records zonecast must refuse (malformed rdata, meta-types, TTLs over
2^31-1, rdata without an exact master-file form) get HTTP 400 naming the
problem, or FORMERR / REFUSED, and change nothing.

`Roundtrip(start, count, seed).run()` returns the list of failures, each
with what reproduces it; tests/system/test_roundtrip.py runs a few hundred
cases, bench/roundtrip any number (--count, --seed).
"""

import os
import random
import shutil
import subprocess
import struct
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.tsigkeyring
import dns.update
import dns.wire

import rdata_gen as gen
import servers

WAIT = 5.0 * servers.TIMEOUT_SCALE
API_ZONE = "rt.test"
UPDATE_ZONE = "up.test"
NAMED_CHECKZONE = shutil.which("named-checkzone")
# named-checkzone: the rdata must load; BIND's policy checks (names, MX
# and SRV targets, in-zone NS addresses, SPF, wildcards) are not ours.
NAMED_OPTIONS = ["-i", "none", "-k", "ignore", "-m", "ignore", "-M", "ignore",
                 "-n", "ignore", "-r", "ignore", "-S", "ignore", "-T", "ignore",
                 "-W", "ignore"]


class Case:
    """One RRset: its owner, type, TTL and the rdata (wire) of its records."""

    def __init__(self, owner, rtype, ttl, wires, via="api"):
        self.owner, self.type, self.ttl, self.wires, self.via = owner, rtype, ttl, wires, via

    def describe(self):
        return "%s %s %d [%s] (%s)" % (self.owner.to_text(), self.type, self.ttl,
                                       " ".join(w.hex() or "-" for w in self.wires), self.via)


# Where servers may compress names in rdata (RFC 1035 types, RFC 3597
# §4) or a client must take them compressed (RFC 2163, 2535, 2782, 3403):
# octets before the names, the number of names.
COMPRESSIBLE = {
    dns.rdatatype.NS: (0, 1), dns.rdatatype.CNAME: (0, 1), dns.rdatatype.PTR: (0, 1),
    dns.rdatatype.MX: (2, 1), dns.rdatatype.AFSDB: (2, 1), dns.rdatatype.RT: (2, 1),
    dns.rdatatype.SOA: (0, 2), dns.rdatatype.MINFO: (0, 2), dns.rdatatype.RP: (0, 2),
    dns.rdatatype.SRV: (6, 1), dns.rdatatype.SIG: (18, 1), dns.rdatatype.RRSIG: (18, 1),
}


def read_rdata(p, rtype, end):
    """The rdata at the parser's position, names decompressed where the
    type allows compression, otherwise the octets as they are."""
    start = p.current
    if rtype == dns.rdatatype.NAPTR:
        p.get_struct("!HH")
        for _ in range(3):
            p.get_counted_bytes()
        head = p.wire[start:p.current]
        return bytes(head) + p.get_name().to_wire() + bytes(p.wire[p.current:end])
    if rtype not in COMPRESSIBLE:
        return bytes(p.wire[start:end])
    before, names = COMPRESSIBLE[rtype]
    out = bytes(p.get_bytes(before))
    for _ in range(names):
        out += p.get_name().to_wire()
    return out + bytes(p.wire[p.current:end])


def make_cases(rnd, count):
    """count random RRsets, each under a label of its own (c<i>) so that no
    case's name sits below another's NS, DNAME or wildcard."""
    cases = []
    for i in range(count):
        via = "update" if rnd.random() < 0.3 else "api"
        origin = dns.name.from_text("c%d.%s" % (i, UPDATE_ZONE if via == "update" else API_ZONE))
        rtype = rnd.choice(gen.API_TYPES)
        owner = gen.name(rnd, origin, max_labels=2)
        while rtype == "NS" and owner.is_wild():  # Refused (RFC 4592 §4.2).
            owner = gen.name(rnd, origin, max_labels=2)
        count_rd = 1 if rtype in gen.SINGLETONS else rnd.choice((1, 1, 1, 2, 3))
        wires = []
        for _ in range(count_rd * 3):
            w = gen.rdata_wire(rnd, rtype)
            if w not in wires:
                wires.append(w)
            if len(wires) == count_rd:
                break
        ttl = rnd.choice((0, 1 if via == "update" else 2, 300, 86400, 2147483647,
                          rnd.randint(2, 2147483647)))
        cases.append(Case(owner, rtype, ttl, wires, via))
    return cases


def edge_cases():
    """Records that must be accepted: each an edge of a text form."""
    o = lambda text: dns.name.from_text(text + "." + API_ZONE if text else API_ZONE)
    every_octet = bytes(range(256))
    txt_all = b"".join(gen.cstr(every_octet[i:i + 64]) for i in range(0, 256, 64))
    special = [bytes([c]) for c in gen.SPECIAL]
    owners = [dns.name.Name([b"a" + c + b"b", b"e%d" % i] + list(o("").labels))
              for i, c in enumerate(special)]
    owners += [dns.name.Name([c, b"f%d" % i] + list(o("").labels)) for i, c in enumerate(special)]
    owners += [dns.name.Name([c * 63, b"g%d" % i] + list(o("").labels))
               for i, c in enumerate(special)]
    cases = [Case(n, "TXT", 300, [gen.cstr(b"x")]) for n in owners]
    cases += [
        Case(o("txt-empty"), "TXT", 300, [b"\x00", b"\x00\x00"]),
        Case(o("txt-all"), "TXT", 300, [txt_all]),
        Case(o("txt-dkim"), "TXT", 300, [gen.cstr(b"v=DKIM1; k=rsa; p=MIGf")]),
        Case(o("txt-255"), "TXT", 300, [gen.cstr(b"z" * 255) + gen.cstr(b"")]),
        Case(o("caa-empty-value"), "CAA", 300, [b"\x00\x05issue"]),
        Case(o("caa-odd-value"), "CAA", 300, [b"\x80\x03tbs\x00\xff\";\\ ("]),
        Case(o("unknown-empty"), "TYPE65000", 300, [b""]),
        Case(o("unknown-data"), "TYPE65000", 300, [b"\x00\xff\\\""]),
        Case(o("ttl-max"), "A", 2147483647, [b"\x01\x02\x03\x04"]),
        Case(o("ttl-zero"), "A", 0, [b"\x01\x02\x03\x05"]),
        Case(o("cname-escaped-dot"), "CNAME", 300,
             [dns.name.from_text("a\\..b\\.").to_wire()]),
        Case(o("mx-root"), "MX", 300, [b"\x00\x0a\x00"]),
        # Content starting with "\#" that is not RFC 3597's marker.
        Case(o("cname-hash"), "CNAME", 300, [dns.name.from_text("\\#x.example.").to_wire()]),
        Case(o("txt-hash"), "TXT", 300, [gen.cstr(b"#") + gen.cstr(b"x")]),
        Case(o("svcb-all"), "SVCB", 300, [
            b"\x00\x01\x00" + b"\x00\x00\x00\x02\x00\x03" + b"\x00\x01\x00\x03\x02h2" +
            b"\x00\x02\x00\x00" + b"\x00\x03\x00\x02\x01\xbb" +
            b"\x00\x04\x00\x04\xc0\x00\x02\x01" + b"\x00\x05\x00\x02\xab\xcd" +
            b"\x00\x06\x00\x10" + bytes(15) + b"\x01" + b"\x00\x07\x00\x10/dns-query{?dns}" +
            b"\xfd\xe8\x00\x03a\"b"]),
        Case(o("https-alias"), "HTTPS", 300, [b"\x00\x00" + dns.name.from_text(
            "x\\(y.example.").to_wire()]),
    ]
    return cases


# (API fields, part of the 400's message): refused, nothing stored.
API_REFUSALS = [
    ({"type": "CAA", "content": '0 "" "x"'}, "CAA tag is empty"),
    ({"type": "CAA", "content": '0 tag! "x"'}, "letters and digits"),
    ({"type": "CAA", "content": '0 a-b "x"'}, "letters and digits"),
    # (';', '(' and ')' outside quotes are data, as Cloudflare takes
    # them: test_api_cloudflare.py.)
    ({"type": "A", "content": "\\# 3 010203"}, "ends inside a field"),
    ({"type": "TXT", "content": "\\# 2 0561"}, "character-string"),
    ({"type": "SVCB", "content": "\\# 3 00015e"}, "domain name"),
    ({"type": "TYPE0", "content": "\\# 0"}, "type"),
    ({"type": "TYPE200", "content": "\\# 0"}, "type"),
    # NULL in a type bitmap: libknot writes "NULL", libzscanner has no
    # such name.
    ({"type": "CSYNC", "content": "\\# 10 00000001000000020020"}, "master-file form"),
    # An alpn id with ';': libknot writes it unquoted, where ';' starts a
    # comment.
    ({"type": "HTTPS", "content": '1 . alpn="a;b"'}, "master-file form"),
    ({"type": "KEY", "content": "\\# 5 c000030801"}, "no key"),
    ({"type": "TYPE7", "content": "\\# 1 36"}, "domain name"),
    ({"type": "NULL", "content": "\\# 0"}, "empty"),
    ({"type": "NS", "name": "*.wild." + API_ZONE, "content": "ns.example."}, "wildcard"),
    ({"type": "DS", "content": "1 8 2 00"}, "DS digest"),
    ({"type": "TXT", "content": "x", "ttl": 2147483648}, "ttl"),
]

# (rtype, ttl, rdata wire, rcode) for UPDATE: FORMERR for malformed rdata,
# REFUSED for what zonecast does not store; nothing changes.
UPDATE_REFUSALS = [
    ("TXT", 300, b"\x05ab", dns.rcode.FORMERR),
    ("TXT", 300, b"", dns.rcode.FORMERR),
    ("CAA", 300, b"\x00\x00x", dns.rcode.FORMERR),
    ("CAA", 300, b"\x00\x04tag!x", dns.rcode.FORMERR),
    ("SVCB", 300, b"\x00\x01\x5e", dns.rcode.FORMERR),
    ("HTTPS", 300, b"\x00\x01\x00\x00\x03\x00\x01", dns.rcode.FORMERR),
    ("NSEC3PARAM", 300, b"\x01\x00\x00\x01\x29", dns.rcode.REFUSED),
    ("IPSECKEY", 300, b"\x01\x03\x01\x05ab", dns.rcode.FORMERR),
    ("A", 300, b"\x01\x02\x03", dns.rcode.FORMERR),
    ("TXT", 2147483648, b"\x01a", dns.rcode.REFUSED),
    (200, 300, b"", dns.rcode.REFUSED),
    (0, 300, b"", dns.rcode.REFUSED),
    ("CSYNC", 300, b"\x00\x00\x00\x01\x00\x00\x00\x02\x00\x20", dns.rcode.REFUSED),
]


class Roundtrip:
    def __init__(self, start, count, seed, workdir, log=None):
        """start(zones=None) returns a running ZonecastServer with its API
        (zones: {name: master file} imported before it starts)."""
        self.start, self.count, self.seed, self.workdir = start, count, seed, workdir
        self.log = log or (lambda msg: None)
        self.failures = []

    def fail(self, what):
        self.failures.append(what)

    # -- writing ----------------------------------------------------------
    def setup(self):
        self.a = self.start()
        self.api = self.a.client()
        self.zone_ids = {}
        for zone in (API_ZONE, UPDATE_ZONE):
            self.zone_ids[zone] = self.api.ok("POST", "/zones", json={"name": zone})["result"]["id"]
            # Addresses for the zone's name servers, so that BIND
            # loads the exports.
            for ns in ("ns1", "ns2"):
                self.api.ok("POST", "/zones/%s/dns_records" % self.zone_ids[zone],
                            json={"type": "A", "name": "%s.%s" % (ns, zone),
                                  "content": "192.0.2.53"})
        key = self.a.tsig_create("roundtrip-key", UPDATE_ZONE)
        self.keyring = dns.tsigkeyring.from_text({key.name: (key.algorithm, key.secret)})
        self.key = key

    def write_api(self, rnd, case):
        zid = self.zone_ids[API_ZONE]
        for wire in case.wires:
            body = gen.api_fields(rnd, case.type, wire, gen.api_name(case.owner), case.ttl)
            r = self.api.call("POST", "/zones/%s/dns_records" % zid, json=body)
            if r.status_code != 200:
                self.fail("API refused a valid record: %s: %r -> %d %s"
                          % (case.describe(), body, r.status_code, r.text[:300]))
                return False
        return True

    def write_update(self, case):
        up = dns.update.UpdateMessage(UPDATE_ZONE, keyring=self.keyring,
                                      keyname=self.key.name, keyalgorithm=self.key.algorithm)
        for wire in case.wires:
            up.add(case.owner, case.ttl, gen.to_rdata(case.type, wire))
        r = dns.query.tcp(up, "127.0.0.1", port=self.a.port, timeout=5)
        if r.rcode() != dns.rcode.NOERROR:
            self.fail("UPDATE refused a valid record: %s -> %s"
                      % (case.describe(), dns.rcode.to_text(r.rcode())))
            return False
        return True

    # -- reading ----------------------------------------------------------
    @staticmethod
    def answer(srv, case):
        """(ttl, sorted rdata) that srv serves for the case, from the raw
        response (dnspython's reader refuses some well-formed rdata, such
        as a URI with an empty target), names in rdata decompressed."""
        rt = gen.rdtype(case.type)
        query = dns.message.make_query(case.owner, rt).to_wire()
        wire = servers.exchange_from("127.0.0.1", srv.port, query, tcp=True, timeout=5)
        if wire is None:
            return "no response"
        counts = struct.unpack("!4H", wire[4:12])
        p = dns.wire.Parser(wire, 12)
        for _ in range(counts[0]):
            p.get_name()
            p.get_struct("!HH")
        found = {}
        for section in range(2):  # Answer, then authority (a referral's NS).
            for _ in range(counts[1 + section]):
                owner = p.get_name()
                (rtype, _rclass, ttl, rdlen) = p.get_struct("!HHIH")
                end = p.current + rdlen
                rdata = read_rdata(p, rtype, end)
                p.seek(end)
                if owner == case.owner and rtype == rt:
                    found.setdefault(section, (ttl, []))[1].append(rdata)
            if section in found:
                return found[section][0], sorted(found[section][1])
        return None

    @staticmethod
    def expected(case):
        return case.ttl, sorted(case.wires)

    def check_answers(self, srv, cases, what):
        """Every case answered as written, within WAIT for all of them."""
        deadline = time.monotonic() + WAIT
        pending = list(cases)
        while pending:
            pending = [c for c in pending if self.answer(srv, c) != self.expected(c)]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for case in pending:
            self.fail("%s: %s answered %r, want %r" % (what, case.describe(),
                                                       self.answer(srv, case),
                                                       self.expected(case)))

    def soa_serial(self, srv, zone):
        r = dns.query.tcp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=srv.port,
                          timeout=5)
        return r.answer[0][0].serial if r.answer else None

    # -- refusals ---------------------------------------------------------
    def check_refusals(self):
        zid = self.zone_ids[API_ZONE]
        before = self.soa_serial(self.a, API_ZONE)
        for fields, message in API_REFUSALS:
            body = dict({"name": "refused." + API_ZONE, "ttl": 300}, **fields)
            r = self.api.call("POST", "/zones/%s/dns_records" % zid, json=body)
            text = r.text
            if r.status_code != 400 or message not in text:
                self.fail("API: %r -> %d %s, want 400 naming %r"
                          % (body, r.status_code, text[:300], message))
        if self.soa_serial(self.a, API_ZONE) != before:
            self.fail("API: a refused write moved the serial of %s" % API_ZONE)
        owner = dns.name.from_text("refused." + UPDATE_ZONE)
        before = self.soa_serial(self.a, UPDATE_ZONE)
        for rtype, ttl, rdata, rcode in UPDATE_REFUSALS:
            wire = servers.update_wire(UPDATE_ZONE, updates=[
                servers.rr_wire(owner, rtype, "IN", ttl, rdata)])
            wire, _ = servers.tsig_sign(wire, self.key.key)
            resp = self.a.exchange(wire, tcp=True, timeout=5)
            got = None if resp is None else (resp[3] & 0x0f)
            if got != rcode:
                self.fail("UPDATE %s ttl %d rdata %s: rcode %s, want %s"
                          % (rtype, ttl, rdata.hex(), got, dns.rcode.to_text(rcode)))
        if self.soa_serial(self.a, UPDATE_ZONE) != before:
            self.fail("UPDATE: a refused message moved the serial of %s" % UPDATE_ZONE)

    # -- export and import ------------------------------------------------
    def export(self, srv, zone):
        return srv.run_cli("zone", "export", "--data-dir", srv.data_dir, zone).stdout

    @staticmethod
    def body(text):
        """An export's record lines, the SOA (whose serial moves) left out."""
        return sorted(l for l in text.splitlines() if l and not l.startswith("$")
                      and l.split("\t")[2:3] != ["SOA"])

    def named_checkzone(self, zone, path):
        if NAMED_CHECKZONE is None:
            return
        cp = subprocess.run([NAMED_CHECKZONE] + NAMED_OPTIONS + [zone, path],
                            capture_output=True, text=True, timeout=120)
        if cp.returncode != 0:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
            context = []
            for word in cp.stdout.split():
                if word.startswith(path + ":"):
                    num = word[len(path) + 1:].rstrip(":")
                    if num.isdigit() and 0 < int(num) <= len(lines):
                        context.append(lines[int(num) - 1])
            self.fail("named-checkzone refused the export of %s:\n%s\n%s"
                      % (zone, cp.stdout[-2000:], "\n".join(context[:20])))

    def api_import(self, srv, zone, text):
        """Deletes the zone, makes it anew and imports text through the API
        (in chunks: an import takes at most 10,000 records)."""
        api = srv.client()
        zid = api.zone_id(zone)
        api.ok("DELETE", "/zones/%s" % zid)
        zid = api.ok("POST", "/zones", json={"name": zone})["result"]["id"]
        lines = [l for l in text.splitlines() if l and not l.startswith("$")]
        for i in range(0, len(lines), 5000):
            chunk = "$ORIGIN %s.\n%s\n" % (zone, "\n".join(lines[i:i + 5000]))
            r = api.call("POST", "/zones/%s/dns_records/import" % zid, data=chunk.encode(),
                         headers={"Content-Type": "text/plain"})
            if r.status_code != 200:
                self.fail("API import of the export of %s: %d %s"
                          % (zone, r.status_code, r.text[:500]))

    # -- the run ------------------------------------------------------------
    def run(self):
        rnd = random.Random(self.seed)
        self.setup()
        cases = make_cases(rnd, self.count) + edge_cases()
        written = []
        for case in cases:
            ok = self.write_update(case) if case.via == "update" else self.write_api(rnd, case)
            if ok:
                written.append(case)
        self.log("%d RRsets written (%d records)" % (len(written),
                                                     sum(len(c.wires) for c in written)))
        self.check_answers(self.a, written, "after the writes")
        self.check_refusals()

        exports = {}
        for zone in (API_ZONE, UPDATE_ZONE):
            exports[zone] = self.export(self.a, zone)
            r = self.api.call("GET", "/zones/%s/dns_records/export" % self.zone_ids[zone])
            if r.text != exports[zone]:
                self.fail("GET .../export of %s differs from `zonecast zone export`" % zone)
            path = os.path.join(self.workdir, "%s.export" % zone)
            with open(path, "w") as f:
                f.write(exports[zone])
            exports[zone + ".path"] = path
            self.named_checkzone(zone, path)

        # `zonecast zone import` into a fresh data directory.
        b = self.start(zones={API_ZONE: exports[API_ZONE + ".path"],
                              UPDATE_ZONE: exports[UPDATE_ZONE + ".path"]})
        self.check_answers(b, written, "after zone import")
        for zone in (API_ZONE, UPDATE_ZONE):
            if self.body(self.export(b, zone)) != self.body(exports[zone]):
                self.fail("the export of %s after zone import differs from the one "
                          "imported" % zone)
        cp = b.verify()
        if cp.returncode != 0:
            self.fail("zonecast verify after zone import: %s" % (cp.stdout + cp.stderr)[-1000:])

        # The API's import of the same text into zones made anew.
        for zone in (API_ZONE, UPDATE_ZONE):
            self.api_import(b, zone, exports[zone])
        self.check_answers(b, written, "after API import")
        for zone in (API_ZONE, UPDATE_ZONE):
            again = self.body(self.export(b, zone))
            if again != self.body(exports[zone]):
                diff = sorted(set(again) ^ set(self.body(exports[zone])))
                self.fail("the export of %s after API import differs:\n%s"
                          % (zone, "\n".join(diff[:20])))
        self.log("%d failures" % len(self.failures))
        return self.failures
