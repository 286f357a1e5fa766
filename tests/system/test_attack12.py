"""An outside tester's cases (issue 12's follow-up): the zone-content rules
through every write path (HTTP API, its Cloudflare-style PUT, PATCH,
batch and import endpoints, RFC 2136 UPDATE, `zonecast zone import`), the
API's HTTP framing, and the zonecast command's writes racing API writes
and UPDATEs with a SIGKILL in the middle.

Each test states the rule (and the RFC) it holds the server to; the paths
must agree on a verdict, and DNS must serve what the records store holds.
"""

import json
import socket
import subprocess
import threading
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import servers
from conftest import UPDATE_SOURCE

_seq = iter(range(1, 1000000))


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


# ------------------------------------------------------------------ helpers

class Zone:
    """A fresh zone of the module's server: API id, name, origin."""

    def __init__(self, srv, api, prefix="a"):
        self.srv, self.api = srv, api
        self.name = "%s%d.attack12.test" % (prefix, next(_seq))
        self.origin = self.name + "."
        self.id = api.ok("POST", "/zones", json={"name": self.name})["result"]["id"]

    def fq(self, rel):
        return self.origin if rel == "@" else "%s.%s" % (rel, self.origin)

    def post(self, rel, rtype, content, ttl=300, **kw):
        body = {"name": self.fq(rel), "type": rtype, "content": content, "ttl": ttl}
        body.update(kw)
        return self.api.call("POST", "/zones/%s/dns_records" % self.id, json=body,
                             params={"wait": "live"})

    def serial(self):
        return self.api.get("/zones/%s" % self.id)["serial"]

    def update(self, *adds):
        """An UPDATE adding (rel, ttl, type, rdata) records; its rcode name."""
        u = dns.update.UpdateMessage(self.origin)
        for rel, ttl, rtype, text in adds:
            if rtype == "MINFO":    # Not in every dnspython: RFC 3597's form.
                wire = b"".join(dns.name.from_text(n).to_wire() for n in text.split())
                rtype, text = "TYPE14", "\\# %d %s" % (len(wire), wire.hex())
            u.add(self.fq(rel), ttl, rtype, text)
        r = dns.query.tcp(u, self.srv.host, port=self.srv.port, timeout=5,
                          source=UPDATE_SOURCE)
        return dns.rcode.to_text(r.rcode())

    def api_import(self, text):
        return self.api.call("POST", "/zones/%s/dns_records/import" % self.id,
                             data=text.encode(), headers={"Content-Type": "text/plain"})

    def records(self, rtype):
        return sorted(r["content"] for r in self.api.records(self.id, type=rtype))

    def query(self, rel, rtype):
        m = dns.query.tcp(dns.message.make_query(self.fq(rel), rtype), self.srv.host,
                          port=self.srv.port, timeout=3)
        return m


def cli_import(srv, zone, text, tmp_path):
    path = tmp_path / ("%s.zone" % zone)
    path.write_text(text)
    return srv.run_cli("zone", "import", "--data-dir", srv.data_dir, zone, str(path),
                       check=False)


def zone_text(origin, *lines):
    return "\n".join(["$ORIGIN %s" % origin, "$TTL 300",
                      "@ SOA ns1 hostmaster 1 7200 3600 1209600 300",
                      "@ NS ns1", "@ NS ns2", "ns1 A 192.0.2.53", "ns2 A 192.0.2.54"]
                     + list(lines)) + "\n"


# ------------------------------------------------- DNAME is a singleton type

def dname_answer(z, rel):
    """The DNAME served at rel and the CNAME synthesized below it."""
    m = z.query("x." + rel, "A")
    dname = [rd.target.to_text() for rr in m.answer if rr.rdtype == dns.rdatatype.DNAME
             for rd in rr]
    cname = [rd.target.to_text() for rr in m.answer if rr.rdtype == dns.rdatatype.CNAME
             for rd in rr]
    return dname, cname


def test_a_second_dname_at_a_name_is_refused_by_the_api(srv, api):
    """A name holds at most one DNAME (RFC 6672 section 2.4: the
    redirection of a subtree is one target; BIND and Knot refuse a second
    one). With two, DNS answered one DNAME and synthesized the CNAME from
    the other."""
    z = Zone(srv, api)
    assert z.post("d", "DNAME", "one.other.test").status_code == 200
    r = z.post("d", "DNAME", "two.other.test")
    assert r.status_code == 400, r.text
    assert "DNAME" in r.json()["errors"][0]["message"]
    assert z.records("DNAME") == ["one.other.test"]
    # The same through PUT (another record rewritten as a second DNAME),
    # PATCH and a batch.
    rid = z.post("d", "TXT", "t").json()["result"]["id"]
    r = api.call("PUT", "/zones/%s/dns_records/%s" % (z.id, rid),
                 json={"name": z.fq("d"), "type": "DNAME", "content": "two.other.test",
                       "ttl": 300})
    assert r.status_code == 400, r.text
    r = api.call("PATCH", "/zones/%s/dns_records/%s" % (z.id, rid),
                 json={"type": "DNAME", "content": "two.other.test"})
    assert r.status_code == 400, r.text
    r = api.call("POST", "/zones/%s/dns_records/batch" % z.id,
                 json={"posts": [{"name": z.fq("e"), "type": "DNAME",
                                  "content": "one.other.test", "ttl": 300},
                                 {"name": z.fq("e"), "type": "DNAME",
                                  "content": "two.other.test", "ttl": 300}]})
    assert r.status_code == 400, r.text
    assert z.records("DNAME") == ["one.other.test"]
    assert dname_answer(z, "d") == (["one.other.test."], ["x.one.other.test."])


def test_a_second_dname_replaces_the_first_through_update(srv, api):
    """UPDATE treats DNAME as it treats CNAME (RFC 2136 section 3.4.2.2):
    the new one replaces the stored one, so DNS serves one redirection and
    the CNAME it synthesizes follows it. Two DNAMEs in one message leave
    the last."""
    z = Zone(srv, api)
    assert z.post("d", "DNAME", "one.other.test").status_code == 200
    assert z.update(("d", 300, "DNAME", "two.other.test.")) == "NOERROR"
    assert z.records("DNAME") == ["two.other.test"]
    assert dname_answer(z, "d") == (["two.other.test."], ["x.two.other.test."])
    assert z.update(("e", 300, "DNAME", "one.other.test."),
                    ("e", 300, "DNAME", "two.other.test.")) == "NOERROR"
    assert [r["content"] for r in api.records(z.id, type="DNAME", name=z.fq("e"))] == \
        ["two.other.test"]


def test_a_second_dname_is_refused_by_both_imports(srv, api, tmp_path):
    """`zonecast zone import` and the API's import refuse a file with two
    DNAMEs at one name, as they refuse two CNAMEs."""
    z = Zone(srv, api)
    cp = cli_import(srv, z.name, zone_text(z.origin, "d DNAME one.other.test.",
                                           "d DNAME two.other.test."), tmp_path)
    assert cp.returncode != 0, cp.stdout + cp.stderr
    assert "DNAME" in cp.stderr, cp.stderr
    r = z.api_import("d.%s 300 IN DNAME one.other.test.\nd.%s 300 IN DNAME two.other.test.\n"
                     % (z.origin, z.origin))
    assert r.status_code == 400, r.text
    assert z.records("DNAME") == []


# ------------------------------------- the signer's records in a zone import

@pytest.mark.parametrize("line", [
    "www RRSIG A 13 3 300 20300101000000 20200101000000 12345 {o} AAAA",
    "www NSEC zz.{o} A RRSIG NSEC",
    "@ NSEC3PARAM 1 0 0 -",
    "abcdefgh NSEC3 1 0 0 - 0123456789ABCDEFGHIJKLMNOPQRSTUV A",
], ids=["RRSIG", "NSEC", "NSEC3PARAM", "NSEC3"])
def test_an_import_refuses_signatures_and_denial_records(srv, api, tmp_path, line):
    """RRSIG, NSEC, NSEC3 and NSEC3PARAM are the online signer's (docs/api.md
    "Rules checked on every write"): the API's import refuses them (400),
    and so must `zonecast zone import`. Imported, they were served as they
    were (stale signatures of another signer) and then could be deleted by
    neither the API nor UPDATE ("managed by the online signer")."""
    z = Zone(srv, api)
    assert z.post("www", "A", "192.0.2.1").status_code == 200
    before = z.serial()
    text = zone_text(z.origin, "www A 192.0.2.1", line.format(o=z.origin))
    r = z.api_import(text)
    assert r.status_code == 400, r.text
    # the line named, as every other refusal of the file names it (was
    # "type: ..." alone: tester 31)
    assert text.splitlines()[8] == line.format(o=z.origin)
    assert r.json()["errors"][0]["message"].startswith("file: line 9: type: "), r.text
    cp = cli_import(srv, z.name, text, tmp_path)
    assert cp.returncode != 0, "zone import took %r:\n%s" % (line, cp.stdout)
    assert z.serial() == before
    rtype = line.split()[1]
    assert z.records(rtype) == []


def test_an_exported_signed_zone_imports_back(srv, api, tmp_path):
    """The signer's DNSKEY, CDS and CDNSKEY are stored and exported; a signed
    zone's export imports back (records/rules.h), RRSIG refused or not."""
    z = Zone(srv, api)
    api.ok("PATCH", "/zones/%s/dnssec" % z.id, json={"status": "active"})
    text = api.call("GET", "/zones/%s/dns_records/export" % z.id).text
    cp = cli_import(srv, z.name, text, tmp_path)
    assert cp.returncode == 0, cp.stderr


# ----------------------------------------------- one TTL per RRset, imports

def test_two_ttls_in_one_rrset_get_one_verdict_from_both_imports(srv, api, tmp_path):
    """A master file whose RRset has two TTLs is refused by both imports
    (RFC 2181 section 5.2; records/rules.h): the API's names the line, and
    writes nothing of the file."""
    z = Zone(srv, api)
    text = zone_text(z.origin, "t 300 A 192.0.2.1", "t 600 A 192.0.2.2")
    cp = cli_import(srv, z.name, text, tmp_path)
    assert cp.returncode != 0
    before = z.records("A")
    r = z.api_import("u.%s 60 IN TXT x\nt.%s 300 IN A 192.0.2.1\n"
                     "T.%s 600 IN A 192.0.2.2\nt.%s 900 IN A 192.0.2.3\n"
                     % (z.origin, z.origin, z.origin.upper(), z.origin))
    assert r.status_code == 400, r.text
    msg = r.json()["errors"][0]["message"]
    assert msg.startswith("file: line 3: ") and "TTL 600 here and 300 at line 2" in msg, msg
    assert z.records("A") == before and z.records("TXT") == []
    # One TTL per RRset in the file: taken, and other RRsets' TTLs differ freely.
    r = z.api_import("t.%s 300 IN A 192.0.2.1\nT.%s 300 IN A 192.0.2.2\n"
                     "t.%s 600 IN TXT x\n" % (z.origin, z.origin.upper(), z.origin))
    assert r.status_code == 200, r.text


def test_api_import_reads_no_file_of_the_server(srv, api, tmp_path):
    """$INCLUDE in an API import (or in a record's content) is refused, its
    file never read: a file of the server is not the caller's (found by an
    outside tester: an import took a TXT record from a server file, and
    told, line by line, whether /etc/shadow exists). `zonecast zone
    import`, run by the operator on the operator's files, still reads
    them."""
    z = Zone(srv, api)
    secret = tmp_path / "server-side.zone"
    secret.write_text("leak 300 TXT \"from the server\"\n")
    before = z.records("TXT")
    for directive in ("$INCLUDE", "$include"):
        r = z.api_import("$ORIGIN %s\nok 300 TXT x\n%s %s\n" % (z.origin, directive, secret))
        assert r.status_code == 400, r.text
        msgs = [e["message"] for e in r.json()["errors"]]
        assert msgs == ["file: line 3: $INCLUDE is not accepted here (it would read a file"
                        " of the server)"], msgs
    r = z.api_import("$INCLUDE /nonexistent/x\n")
    assert r.status_code == 400 and "file open error" not in r.text, r.text
    r = api.call("POST", "/zones/%s/dns_records" % z.id,
                 json={"type": "TXT", "name": "c." + z.origin.rstrip("."),
                       "content": "x\n$INCLUDE %s" % secret})
    assert r.status_code == 400, r.text
    assert z.records("TXT") == before
    # The operator's own import still takes the include.
    text = zone_text(z.origin, "$INCLUDE %s" % secret)
    cp = cli_import(srv, z.name, text, tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert z.records("TXT") == ['"from the server"']


@pytest.mark.parametrize("how", ["api", "cli"])
def test_a_last_line_ending_in_cr_is_refused_not_dropped(srv, api, tmp_path, how):
    """libzscanner refuses every CR but one ending the input, whose line it
    dropped in silence: such a file is refused as a CRLF file is, naming
    its last line (found by an outside tester)."""
    z = Zone(srv, api)
    before = z.records("A")
    if how == "api":
        for body, line in (("t.%s 300 A 192.0.2.1\nu.%s 300 A 192.0.2.3\r", 2),
                           ("t.%s 300 A 192.0.2.1\ru.%s 300 A 192.0.2.3\r", 1)):
            r = z.api_import(body % (z.origin, z.origin))
            assert r.status_code == 400, r.text
            msg = r.json()["errors"][0]["message"]
            assert msg == "file: line %d: unsupported CRLF newline, remove CR bytes" % line, msg
    else:
        text = zone_text(z.origin, "u 300 A 192.0.2.3").rstrip("\n") + "\r"
        cp = cli_import(srv, z.name, text, tmp_path)
        assert cp.returncode != 0 and "unsupported CRLF newline" in cp.stderr, cp.stderr
    assert z.records("A") == before


def test_two_ttls_message_whole_and_other_refusals_first(srv, api):
    """The TTL message is whole for the longest escaped names, and records
    refused for their own reason (RRSIGs, which differ in TTL by type
    covered, RFC 4034 section 3; names outside the zone) get that reason,
    not the TTL's (found by an outside tester)."""
    z = Zone(srv, api)
    owner = ".".join(["\\000" * 63] * 3) + "." + z.origin
    r = z.api_import("%s 300 TXT a\n%s 600 TXT b\n" % (owner, owner))
    assert r.status_code == 400, r.text
    msg = r.json()["errors"][0]["message"]
    assert msg.endswith("TXT has TTL 600 here and 300 at line 1"), msg
    sig = "A 13 2 300 20300101000000 20200101000000 1 %s AAAA" % z.origin
    r = z.api_import("t.%s 300 RRSIG %s\nt.%s 600 RRSIG %s\n"
                     % (z.origin, sig, z.origin, sig.replace("A 13", "TXT 13")))
    assert r.status_code == 400 and "TTL" not in r.text and "signer" in r.text, r.text
    r = z.api_import("other.example. 300 A 192.0.2.1\nother.example. 600 A 192.0.2.2\n")
    assert r.status_code == 400 and "TTL" not in r.text, r.text


def test_import_multipart_with_a_quoted_boundary(srv, api):
    """RFC 2046 section 5.1.1 lets the boundary be quoted, as .NET's
    MultipartFormDataContent sends it (found by an outside tester: "a
    master file is required")."""
    z = Zone(srv, api)
    body = ("--Xy=Zb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"z.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\nq.%s 300 IN A 192.0.2.7\n\r\n--Xy=Zb--\r\n"
            % z.origin)
    for ctype in ('multipart/form-data; boundary="Xy=Zb"',
                  'multipart/form-data; boundary="Xy=Zb"; charset=utf-8',
                  "multipart/form-data; boundary=Xy=Zb"):
        r = api.call("POST", "/zones/%s/dns_records/import" % z.id, data=body.encode(),
                     headers={"Content-Type": ctype})
        assert r.status_code == 200, (ctype, r.text)
    assert z.records("A") == ["192.0.2.7"]
    for ctype in ('multipart/form-data; boundary="Xy=Zb', 'multipart/form-data; boundary=""',
                  "multipart/form-data; boundary="):
        # An empty boundary would cut the file at its first "--".
        r = api.call("POST", "/zones/%s/dns_records/import" % z.id,
                     data=body.replace("Xy=Zb", "").encode(), headers={"Content-Type": ctype})
        assert r.status_code == 400, (ctype, r.text)


def test_refusals_name_the_line_or_the_batch_place(srv, api):
    """A write rule's refusal of one record of many names which: the line
    of an imported file (as its syntax errors do), the place in a batch
    ("posts[2].name: ..."; was the field alone, in a batch of up to 1,000
    changes or a file of as many lines). Nothing is written."""
    z = Zone(srv, api)
    before = z.serial()
    o = z.origin
    for body, want in [
            ("a.%s 300 IN A 192.0.2.1\nb.other.test. 300 IN A 192.0.2.1\n" % o,
             "file: line 2: name: outside the zone"),
            ("a.%s 300 IN A 192.0.2.1\n\n; c\n%s 300 IN CNAME x.%s\n" % (o, o, o),
             "file: line 4: name: a CNAME cannot be at the zone apex"),
            ("c.%s 300 IN CNAME x.%s\nc.%s 300 IN TXT y\n" % (o, o, o),
             "file: line 2: name: "),
            ("$ORIGIN %s\na 300 A 192.0.2.1\n@ 300 DS 1 13 2 %s\n" % (o, "00" * 32),
             "file: line 3: type: a DS record cannot")]:
        r = z.api_import(body)
        assert r.status_code == 400, r.text
        assert r.json()["errors"][0]["message"].startswith(want), (want, r.text)
    path = "/zones/%s/dns_records/batch" % z.id
    for body, status, want in [
            ({"posts": [{"name": "a." + o, "type": "A", "content": "192.0.2.1"},
                        {"name": "a." + o, "type": "A", "content": "192.0.2.2"},
                        {"name": "a." + o, "type": "CNAME", "content": "x." + o}]},
             400, "posts[2].name: a CNAME cannot share"),
            ({"posts": [{"name": "a." + o, "type": "A", "content": "192.0.2.1"},
                        {"name": "b." + o, "type": "A", "content": "not an address"}]},
             400, "posts[1].content: "),
            ({"deletes": [{"id": "0" * 31 + "9"}]}, 404, "deletes[0].id: Record does not exist")]:
        r = api.call("POST", path, json=body)
        assert r.status_code == status, r.text
        assert r.json()["errors"][0]["message"].startswith(want), (want, r.text)
    assert z.serial() == before and z.records("A") == [] and z.records("CNAME") == []


def test_import_ttl_over_2_31_names_its_line(srv, api):
    """A TTL over 2^31-1 (RFC 2181 section 8) in an imported file is an
    error of the file, at its line (was the API field's "ttl: 1
    (automatic) or ...", which does not apply to a file)."""
    z = Zone(srv, api)
    r = z.api_import("t.%s 300 A 192.0.2.1\nu.%s 2147483648 A 192.0.2.2\n"
                     "v.%s 4294967295 A 192.0.2.3\n" % (z.origin, z.origin, z.origin))
    assert r.status_code == 400, r.text
    assert [e["message"] for e in r.json()["errors"]] == [
        "file: line %d: a TTL over 2^31-1 (RFC 2181 section 8)" % n for n in (2, 3)], r.text
    assert z.records("A") == []
    # At most 100 reported, as syntax errors are; an SOA's TTL does not count.
    r = z.api_import("@ 2147483648 SOA ns1 h 1 2 3 4 5\n$TTL 2147483648\n"
                     + "a A 192.0.2.1\n" * 150)
    assert r.status_code == 400 and len(r.json()["errors"]) == 100, r.text
    assert r.json()["errors"][0]["message"].startswith("file: line 3: "), r.text
    r = z.api_import("t.%s 2147483647 A 192.0.2.1\n" % z.origin)
    assert r.status_code == 200, r.text


# ------------------------- names in rdata: which types compare ignoring case

# (type, stored, added, duplicate?): RFC 4034 section 6.2 lowercases the
# names of these types only (RFC 6840 section 5.1 took NSEC out); SVCB,
# HTTPS, LP, IPSECKEY and the rest compare octet by octet (RFC 3597
# section 7: no new type is canonicalised).
IPSECKEY_KEY = "AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ=="
RDATA_CASES = [
    ("RP", "mbox.{o} txt.{o}", "MBOX.{o} TXT.{o}", True),
    ("AFSDB", "1 afs.{o}", "1 AFS.{o}", True),
    ("RT", "10 relay.{o}", "10 RELAY.{o}", True),
    ("KX", "10 kx.{o}", "10 KX.{o}", True),
    ("MINFO", "rm.{o} em.{o}", "RM.{o} EM.{o}", True),
    ("NAPTR", '100 10 "S" "SIP+D2U" "" _sip._udp.{o}',
     '100 10 "S" "SIP+D2U" "" _SIP._UDP.{o}', True),
    ("NAPTR", '100 10 "S" "SIP+D2U" "" _sip._udp.{o}',
     '100 10 "s" "SIP+D2U" "" _sip._udp.{o}', False),
    ("SVCB", "1 target.{o}", "1 TARGET.{o}", False),
    ("HTTPS", "1 target.{o}", "1 TARGET.{o}", False),
    ("LP", "10 l64.{o}", "10 L64.{o}", False),
    ("IPSECKEY", "10 3 2 gw.{o} " + IPSECKEY_KEY, "10 3 2 GW.{o} " + IPSECKEY_KEY, False),
]


@pytest.mark.parametrize("case", RDATA_CASES,
                         ids=["%s-%s" % (c[0], "dup" if c[3] else "two") for c in RDATA_CASES])
def test_names_in_rdata_compare_alike_on_every_path(srv, api, tmp_path, case):
    """A record differing from a stored one only in the case of a name in
    its rdata is a duplicate exactly when RFC 4034 section 6.2 lowercases
    that type: the API refuses it (400), UPDATE does not add it, an import
    refuses it; otherwise all three store both."""
    rtype, stored, added, dup = case
    za, zu = Zone(srv, api), Zone(srv, api)
    for z in (za, zu):
        assert z.post("n", rtype, stored.format(o=z.name + ".")).status_code == 200
    r = za.post("n", rtype, added.format(o=za.name + "."))
    assert r.status_code == (400 if dup else 200), r.text
    before = zu.serial()
    assert zu.update(("n", 300, rtype, added.format(o=zu.origin))) == "NOERROR"
    assert (zu.serial() == before) == dup
    assert len(za.records(rtype)) == len(zu.records(rtype)) == (1 if dup else 2)
    zi = Zone(srv, api)
    cp = cli_import(srv, zi.name, zone_text(zi.origin, "n %s %s" % (rtype, stored.format(o=zi.origin)),
                                            "n %s %s" % (rtype, added.format(o=zi.origin))),
                    tmp_path)
    assert (cp.returncode != 0) == dup, cp.stdout + cp.stderr
    # DNS serves what the store holds (the answer's count from the wire:
    # dnspython merges rdata that differ in the case of a name).
    wire = dns.message.make_query(za.fq("n"), rtype).to_wire()
    reply = srv.exchange(wire, tcp=True)
    assert int.from_bytes(reply[6:8], "big") == (1 if dup else 2)


# ------------------------------------------------------ HTTP framing (RFC 9112)

def raw_http(srv, data, timeout=3.0):
    """Sends data on one connection; every response read until the server
    closes (or the timeout): [(status line, body)]."""
    s = socket.create_connection(("127.0.0.1", srv.api_port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        pass
    s.close()
    return [part.split(b"\r\n", 1)[0] for part in out.split(b"HTTP/1.1 ")[1:]]


def http_request(api, method, path, body=b"", headers=()):
    h = b"%s /client/v4%s HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n" % (
        method.encode(), path.encode(), api.token.encode())
    for k in headers:
        h += k + b"\r\n"
    return h + b"\r\n" + body


def test_two_content_lengths_that_differ_are_refused(srv, api):
    """RFC 9112 section 6.3 (and 8.6): a request whose Content-Length fields
    differ has no valid framing; the server must answer 400 and close. A
    proxy in front that reads the other length would otherwise see another
    request than zonecast does (request smuggling). zonecast took the first
    length and wrote the record."""
    z = Zone(srv, api)
    body = json.dumps({"name": z.fq("cl"), "type": "A", "content": "192.0.2.1",
                       "ttl": 300}).encode()
    statuses = raw_http(srv, http_request(
        api, "POST", "/zones/%s/dns_records" % z.id, body,
        [b"Content-Length: %d" % len(body), b"Content-Length: 7"])
        + http_request(api, "GET", "/zones/%s" % z.id))
    assert statuses == [b"400 Bad Request"], statuses
    assert z.records("A") == []
    # The same length twice is one length (RFC 9110 section 8.6).
    statuses = raw_http(srv, http_request(
        api, "POST", "/zones/%s/dns_records" % z.id, body,
        [b"Content-Length: %d" % len(body), b"Content-Length: %d" % len(body),
         b"Connection: close"]))
    assert statuses == [b"200 OK"], statuses


def test_content_length_beside_chunked_closes_the_connection(srv, api):
    """RFC 9112 section 6.1: a request with both Transfer-Encoding and
    Content-Length may be read as chunked, but the server MUST close the
    connection after answering it; zonecast kept it open and answered the
    request pipelined behind it."""
    z = Zone(srv, api)
    body = json.dumps({"name": z.fq("te"), "type": "A", "content": "192.0.2.1",
                       "ttl": 300}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    statuses = raw_http(srv, http_request(
        api, "POST", "/zones/%s/dns_records" % z.id, chunked,
        [b"Content-Length: 5", b"Transfer-Encoding: chunked"])
        + http_request(api, "GET", "/zones/%s" % z.id))
    assert len(statuses) == 1, statuses


def test_http_edge_cases_answer_and_write_nothing_wrong(srv, api):
    """Pipelined writes are answered in order, a chunked body is read, a
    half-closed connection still gets its answer; bad bodies (not UTF-8, a
    NUL escape, a body shorter than its Content-Length) write nothing."""
    z = Zone(srv, api)
    path = "/zones/%s/dns_records" % z.id

    def body(rel, content="192.0.2.1", rtype="A"):
        return json.dumps({"name": z.fq(rel), "type": rtype, "content": content,
                           "ttl": 300}).encode()

    def cl(b):
        return [b"Content-Length: %d" % len(b)]

    b1, b2 = body("p1"), body("p2")
    statuses = raw_http(srv, http_request(api, "POST", path, b1, cl(b1))
                        + http_request(api, "POST", path, b2, cl(b2))
                        + http_request(api, "GET", "/zones/%s" % z.id,
                                       headers=[b"Connection: close"]))
    assert statuses == [b"200 OK"] * 3, statuses
    b3 = body("ch")
    statuses = raw_http(srv, http_request(
        api, "POST", path, b"%x\r\n%s\r\n0\r\n\r\n" % (len(b3), b3),
        [b"Transfer-Encoding: chunked", b"Connection: close"]))
    assert statuses == [b"200 OK"], statuses
    # Half-closed: the client sends its request and shuts its side.
    b4 = body("hc")
    s = socket.create_connection(("127.0.0.1", srv.api_port), timeout=5)
    s.sendall(http_request(api, "POST", path, b4, cl(b4) + [b"Connection: close"]))
    s.shutdown(socket.SHUT_WR)
    reply = s.recv(65536)
    s.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply[:100]
    bad = b'{"name":"nu.' + z.name.encode() + b'","type":"TXT","content":"\xff\xfe"}'
    nul = body("nul", "a\u0000b", "TXT")
    for b in (bad, nul):
        statuses = raw_http(srv, http_request(api, "POST", path, b,
                                              cl(b) + [b"Connection: close"]))
        assert statuses == [b"400 Bad Request"], (b, statuses)
    short = body("short")
    s = socket.create_connection(("127.0.0.1", srv.api_port), timeout=5)
    s.sendall(http_request(api, "POST", path, short[:10], cl(short)))
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    try:
        s.recv(65536)
    except socket.timeout:
        pass
    s.close()
    names = sorted(r["name"] for r in api.records(z.id) if r["type"] in ("A", "TXT"))
    assert names == sorted(z.fq(n)[:-1] for n in ("p1", "p2", "ch", "hc")), names


# ----------------------------------------------------------- zone delete

def test_zone_delete_without_force_says_how_many_records(srv, api):
    """`zonecast zone delete` off a terminal refuses without --force and
    says what would go: the zone's record count (it said 0)."""
    z = Zone(srv, api)
    assert z.post("www", "A", "192.0.2.1").status_code == 200
    cp = srv.run_cli("zone", "delete", "--data-dir", srv.data_dir, z.name, check=False)
    assert cp.returncode == 1
    # SOA, two NS and the A record.
    assert "holds 4 records" in cp.stderr, cp.stderr


# ------------------- the zonecast command's writes racing API and UPDATE

def served(port, zone):
    try:
        r = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=port,
                          timeout=0.3)
    except Exception:
        return None
    return r.answer[0][0].serial if r.rcode() == dns.rcode.NOERROR and r.answer else None


def test_commands_racing_writes_and_a_sigkill_lose_nothing(zonecast_api_factory, tmp_path):
    """API writes and UPDATEs to one zone while `zonecast zone import`
    replaces another, `tsig create|delete` and `dnssec enable|disable` run
    on the first, and the server is SIGKILLed in the middle and started
    again (the commands writing in-process meanwhile, under serve.lock):
    no served serial ever goes back, every acknowledged write is
    there afterwards, and `zonecast verify` finds the edge store equal to
    the records store."""
    srv = zonecast_api_factory(options=[("allow-update", UPDATE_SOURCE)])
    api = srv.client()
    wz = "race%d.attack12.test" % next(_seq)
    wid = api.ok("POST", "/zones", json={"name": wz})["result"]["id"]
    iz = "imp%d.attack12.test" % next(_seq)
    files = []
    for k in range(2):
        p = tmp_path / ("imp%d.zone" % k)
        p.write_text(zone_text(iz + ".", *["h%d A 192.0.2.%d" % (j, k + 1)
                                           for j in range(300)]))
        files.append(str(p))
    assert srv.run_cli("zone", "import", "--data-dir", srv.data_dir, iz, files[0],
                       check=False).returncode == 0
    stop, pause, paused = threading.Event(), threading.Event(), threading.Event()
    acked_api, acked_upd, versions, errors = [], [], [], []
    seen = {wz: [], iz: []}

    def poll():
        while not stop.is_set():
            for z in seen:
                s = served(srv.port, z + ".")
                if s is not None and (not seen[z] or seen[z][-1] != s):
                    seen[z].append(s)

    def api_writer():
        i = 0
        while not stop.is_set():
            i += 1
            try:
                r = api.call("POST", "/zones/%s/dns_records" % wid, timeout=10,
                             json={"name": "a%d.%s" % (i, wz), "type": "A",
                                   "content": "192.0.2.1", "ttl": 300})
            except Exception:
                continue
            if r.status_code == 200:
                acked_api.append("a%d.%s" % (i, wz))
                versions.append(r.json()["zone_version"])

    def update_writer():
        i = 0
        while not stop.is_set():
            i += 1
            u = dns.update.UpdateMessage(wz + ".")
            u.add("u%d.%s." % (i, wz), 300, "TXT", "u%d" % i)
            try:
                r = dns.query.tcp(u, "127.0.0.1", port=srv.port, timeout=3,
                                  source=UPDATE_SOURCE)
            except Exception:
                continue
            if r.rcode() == dns.rcode.NOERROR:
                acked_upd.append("u%d.%s" % (i, wz))

    def commands():
        k = 0
        while not stop.is_set():
            k += 1
            steps = [("zone", "import", "--data-dir", srv.data_dir, iz, files[k % 2]),
                     ("tsig", "create", "--data-dir", srv.data_dir, "k%d.%s" % (k, wz),
                      "--zone", wz),
                     ("dnssec", "enable", "--data-dir", srv.data_dir, wz),
                     ("tsig", "delete", "--data-dir", srv.data_dir, "k%d.%s" % (k, wz)),
                     ("dnssec", "disable", "--data-dir", srv.data_dir, wz, "--force")]
            for args in steps:
                while pause.is_set() and not stop.is_set():
                    paused.set()    # A serve refuses to start while a
                    time.sleep(0.02)  # command holds the directory.
                try:
                    subprocess.run([servers.zonecast_bin()] + list(args), capture_output=True,
                                   timeout=30 * servers.TIMEOUT_SCALE)
                except subprocess.TimeoutExpired:
                    errors.append("zonecast %s timed out" % " ".join(args))

    threads = [threading.Thread(target=f, daemon=True)
               for f in (poll, api_writer, update_writer, commands)]
    for t in threads:
        t.start()
    time.sleep(4)
    srv.kill9()
    time.sleep(1.5)     # The commands run in-process meanwhile.
    pause.set()
    assert paused.wait(60 * servers.TIMEOUT_SCALE)
    srv.restart()
    pause.clear()
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for z, serials in seen.items():
        back = [(a, b) for a, b in zip(serials, serials[1:]) if (b - a) % 2**32 >= 2**31]
        assert not back, "%s: served serial went back: %r" % (z, back)
    assert acked_api and acked_upd, (len(acked_api), len(acked_upd))
    names = {r["name"] for r in api.records(wid, per_page=50000)}
    lost = [n for n in acked_api + acked_upd if n not in names]
    assert not lost, "acknowledged and lost: %r" % lost[:10]
    deadline = time.monotonic() + 10 * servers.TIMEOUT_SCALE
    while (served(srv.port, wz + ".") or 0) < max(versions):
        assert time.monotonic() < deadline, "serial %d not served" % max(versions)
        time.sleep(0.05)
    for _ in range(50):
        cp = srv.verify()
        if cp.returncode == 0:
            break
        time.sleep(0.2)
    assert cp.returncode == 0, cp.stdout + cp.stderr
