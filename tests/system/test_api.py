"""The HTTP API (Cloudflare v4 shape) checked through its effect on DNS.

Every test makes zones of its own on one module-wide zonecast with its API
(`zonecast_api`), writes through the API and asks the DNS side what it
serves: an acknowledged write must be answered within about a second (in
practice milliseconds), a refused one must change nothing (same SOA serial,
same records). The second half drives zonecast with Debian's
`python3-cloudflare` (module `CloudFlare`), the library and the example
programs it ships, pointed at zonecast by `CLOUDFLARE_API_URL`.
"""

import itertools
import os
import shutil
import subprocess
import sys
import time

import dns.flags
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

DNS_WAIT = 1.0          # an acknowledged write must be answered within this
_seq = itertools.count(1)


# ------------------------------------------------------------------ helpers

@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def new_zone(api, prefix="z"):
    """Create a fresh zone; returns (zone_id, zone name without the dot)."""
    name = "%s%d.api.test" % (prefix, next(_seq))
    body = api.ok("POST", "/zones", json={"name": name})
    assert body["result"]["name"] == name
    return body["result"]["id"], name


def rdata_of(rec):
    """The DNS rdata an API record stands for (names in content are FQDNs)."""
    text = rec["content"]
    if rec["type"] in ("MX", "SRV", "URI") and rec.get("priority") is not None:
        text = "%d %s" % (rec["priority"], text)
    return dns.rdata.from_text(dns.rdataclass.IN, rec["type"], text, origin=dns.name.root,
                               relativize=False)


def rdatas(rtype, *texts):
    return {dns.rdata.from_text(dns.rdataclass.IN, rtype, t, origin=dns.name.root,
                               relativize=False)
            for t in texts}


def answer(m, name, rtype):
    """rdata set of (name, rtype) in the answer section (empty set if none)."""
    qn = dns.name.from_text(name)
    rt = dns.rdatatype.from_text(rtype)
    out = set()
    for rrset in m.answer:
        if rrset.name == qn and rrset.rdtype == rt:
            out |= set(rrset)
    return out


def answer_ttl(m, name, rtype):
    qn, rt = dns.name.from_text(name), dns.rdatatype.from_text(rtype)
    ttls = {rrset.ttl for rrset in m.answer if rrset.name == qn and rrset.rdtype == rt}
    assert len(ttls) == 1, m.to_text()
    return ttls.pop()


def describe(m):
    return "%s\n%s" % (dns.rcode.to_text(m.rcode()), m.to_text()) if m is not None else "no answer"


def ask(srv, name, rtype="A"):
    try:
        return srv.query(name, rtype, timeout=0.5)
    except Exception:   # a lost UDP answer: the poll asks again
        return None


def wait_dns(srv, name, rtype, check, what, timeout=DNS_WAIT):
    """Ask until check(msg) holds; fail with the last answer after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        m = ask(srv, name, rtype)
        if m is not None and check(m):
            return m
        if time.monotonic() > deadline:
            pytest.fail("DNS %s %s: expected %s within %.1fs, got %s"
                        % (name, rtype, what, timeout, describe(m)))
        time.sleep(0.01)


def is_auth(m, rcode):
    return m.rcode() == rcode and bool(m.flags & dns.flags.AA)


def expect_answer(srv, name, rtype, expected, ttl=None):
    """DNS answers exactly `expected` (a set of rdata) for (name, rtype)."""
    m = wait_dns(srv, name, rtype,
                 lambda m: is_auth(m, dns.rcode.NOERROR) and answer(m, name, rtype) == expected
                 and (ttl is None or answer_ttl(m, name, rtype) == ttl),
                 "%s ttl=%s" % (sorted(r.to_text() for r in expected), ttl))
    return m


def expect_nxdomain(srv, name, rtype="A"):
    return wait_dns(srv, name, rtype, lambda m: is_auth(m, dns.rcode.NXDOMAIN) and not m.answer,
                    "NXDOMAIN")


def expect_nodata(srv, name, rtype):
    return wait_dns(srv, name, rtype,
                    lambda m: is_auth(m, dns.rcode.NOERROR) and not m.answer
                    and any(r.rdtype == dns.rdatatype.SOA for r in m.authority),
                    "NODATA")


def expect_refused(srv, name, rtype="SOA"):
    return wait_dns(srv, name, rtype, lambda m: m.rcode() == dns.rcode.REFUSED, "REFUSED")


def served_soa(srv, zone):
    """The served SOA and its TTL (a zone is answered within DNS_WAIT of its creation)."""
    m = wait_dns(srv, zone, "SOA",
                 lambda m: is_auth(m, dns.rcode.NOERROR) and answer(m, zone + ".", "SOA"),
                 "the zone's SOA")
    (soa,) = answer(m, zone + ".", "SOA")
    return soa, answer_ttl(m, zone + ".", "SOA")


def serial(srv, zone):
    return served_soa(srv, zone)[0].serial


def expect_serial(srv, zone, version):
    wait_dns(srv, zone, "SOA",
             lambda m: answer(m, zone + ".", "SOA")
             and next(iter(answer(m, zone + ".", "SOA"))).serial == version,
             "SOA serial %d" % version)


def post_record(api, zid, **rec):
    body = api.ok("POST", "/zones/%s/dns_records" % zid, json=rec)
    return body["result"], body["zone_version"]


def snapshot(api, srv, zid, zone):
    """What must not change when a request is refused."""
    recs = api.records(zid)
    version = api.get("/zones/%s" % zid)["serial"]
    expect_serial(srv, zone, version)      # DNS has caught up with the last write
    return (serial(srv, zone), version,
            sorted((r["id"], r["name"], r["type"], r["content"], r["ttl"],
                    r.get("priority")) for r in recs))


def assert_error(r, status, field):
    """An error response: the status, the envelope, a message naming field."""
    assert r.status_code == status, "HTTP %d %s" % (r.status_code, r.text)
    body = r.json()
    assert body["success"] is False and body["errors"], body
    msg = body["errors"][0]["message"]
    assert isinstance(body["errors"][0]["code"], int), body
    if field is not None:
        assert msg.startswith(field + ":"), "message %r does not start with %r" % (msg, field)
    return body


# ------------------------------------------------------------------ authentication

def test_missing_or_invalid_token_is_401_and_writes_nothing(srv, api):
    zid, zone = new_zone(api, "auth")
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records" % zid
    rec = {"name": "x." + zone, "type": "A", "content": "192.0.2.1"}
    for token in (None, "", "not-a-token", api.token + "x"):
        for method, body in (("GET", None), ("POST", rec)):
            r = api.call(method, path, json=body, token=token)
            assert_error(r, 401, None)
    r = api.call("GET", "/zones", token=None, headers={"Authorization": "Basic " + api.token})
    assert_error(r, 401, None)
    r = api.call("POST", "/zones", json={"name": "unauth.api.test"}, token="nope")
    assert_error(r, 401, None)
    assert api.get("/zones", params={"name": "unauth.api.test"}) == []
    assert snapshot(api, srv, zid, zone) == before
    expect_nxdomain(srv, "x." + zone)
    expect_refused(srv, "unauth.api.test")


def test_read_only_token_reads_but_cannot_write(srv, api):
    zid, zone = new_zone(api, "ro")
    rec, _ = post_record(api, zid, name="www." + zone, type="A", content="192.0.2.1")
    ro = srv.client(srv.create_token(read_only=True))
    assert any(z["id"] == zid for z in ro.get("/zones"))
    assert ro.get("/zones/%s/dns_records/%s" % (zid, rec["id"]))["content"] == "192.0.2.1"
    before = snapshot(api, srv, zid, zone)
    base = "/zones/%s" % zid
    for method, path, body in (
            ("POST", base + "/dns_records", {"name": "n." + zone, "type": "A", "content": "192.0.2.9"}),
            ("PUT", base + "/dns_records/" + rec["id"],
             {"name": "www." + zone, "type": "A", "content": "192.0.2.9"}),
            ("PATCH", base + "/dns_records/" + rec["id"], {"content": "192.0.2.9"}),
            ("DELETE", base + "/dns_records/" + rec["id"], None),
            ("POST", base + "/dns_records/batch", {"deletes": [{"id": rec["id"]}]}),
            ("POST", base + "/dns_records/import", None),
            ("PATCH", base, {"default_ttl": 60}),
            ("DELETE", base, None),
            ("POST", "/zones", {"name": "ro-new.api.test"})):
        r = ro.call(method, path, json=body)
        assert_error(r, 403, None)
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_nxdomain(srv, "n." + zone)
    expect_refused(srv, "ro-new.api.test")


def test_zone_scoped_token_sees_and_writes_only_its_zone(srv, api):
    zid_a, zone_a = new_zone(api, "scopea")
    zid_b, zone_b = new_zone(api, "scopeb")
    scoped = srv.client(srv.create_token(zone=zone_a))
    listed = scoped.get("/zones")
    assert [z["id"] for z in listed] == [zid_a]
    assert_error(scoped.call("GET", "/zones/%s" % zid_b), 403, None)
    assert_error(scoped.call("GET", "/zones/%s/dns_records" % zid_b), 403, None)
    before_b = snapshot(api, srv, zid_b, zone_b)
    r = scoped.call("POST", "/zones/%s/dns_records" % zid_b,
                    json={"name": "x." + zone_b, "type": "A", "content": "192.0.2.2"})
    assert_error(r, 403, None)
    assert_error(scoped.call("PATCH", "/zones/%s" % zid_b, json={"default_ttl": 60}), 403, None)
    assert_error(scoped.call("DELETE", "/zones/%s" % zid_b), 403, None)
    assert_error(scoped.call("POST", "/zones", json={"name": "scoped-new.api.test"}), 403, None)
    assert snapshot(api, srv, zid_b, zone_b) == before_b
    expect_nxdomain(srv, "x." + zone_b)
    # its own zone: reads and writes work
    body = scoped.ok("POST", "/zones/%s/dns_records" % zid_a,
                     json={"name": "x." + zone_a, "type": "A", "content": "192.0.2.3"})
    assert body["result"]["zone_id"] == zid_a
    expect_answer(srv, "x." + zone_a, "A", rdatas("A", "192.0.2.3"))


# ------------------------------------------------------------------ zones

def test_zone_create_list_get(srv, api):
    name = "create%d.api.test" % next(_seq)
    r = api.call("POST", "/zones", json={"name": name})
    assert r.status_code == 200, r.text
    body = r.json()
    z = body["result"]
    assert body["success"] is True and body["errors"] == [] and "messages" in body
    assert z["name"] == name and z["id"]
    assert sorted(z["name_servers"]) == ["ns1." + name, "ns2." + name]
    assert int(r.headers["X-Zone-Version"]) == body["zone_version"]
    # DNS: the new zone is served at once with its SOA and NS
    m = wait_dns(srv, name, "SOA", lambda m: is_auth(m, dns.rcode.NOERROR) and m.answer, "SOA")
    (soa,) = answer(m, name + ".", "SOA")
    assert soa.serial == body["zone_version"] == z["serial"]
    assert soa.mname == dns.name.from_text("ns1." + name)
    expect_answer(srv, name, "NS", rdatas("NS", "ns1.%s." % name, "ns2.%s." % name))
    # list (with and without the name filter) and get
    assert [x["id"] for x in api.get("/zones", params={"name": name})] == [z["id"]]
    all_zones, page = [], 1
    while True:
        b = api.ok("GET", "/zones", params={"page": page, "per_page": 2})
        assert b["result_info"]["per_page"] == 2 and len(b["result"]) <= 2
        all_zones += b["result"]
        if page >= b["result_info"]["total_pages"]:
            break
        page += 1
    assert len(all_zones) == b["result_info"]["total_count"]
    assert len({x["id"] for x in all_zones}) == len(all_zones)
    assert z["id"] in {x["id"] for x in all_zones}
    got = api.get("/zones/%s" % z["id"])
    assert got["name"] == name and got["id"] == z["id"] and got["serial"] == soa.serial
    # the same name again, and bad names
    assert_error(api.call("POST", "/zones", json={"name": name}), 409, "name")
    for bad in ({"name": "bad..name"}, {"name": ""}, {}, {"name": 42}):
        assert_error(api.call("POST", "/zones", json=bad), 400, "name")
    assert_error(api.call("GET", "/zones/ffffffffffffffffffffffffffffffff"), 404, None)


def test_zone_list_takes_cloudflares_filters_and_orders(srv, api):
    """List Zones' status, match, order, direction and account.id (which
    cloudflare-go and others send) were refused (400)."""
    zid, name = new_zone(api, "zl")
    every = [z["name"] for z in api.get("/zones", params={"per_page": 1000})]

    def names(**params):
        return [z["name"] for z in api.get("/zones", params=dict(params, per_page=1000))]

    assert names(status="active") == every       # none quarantined here
    assert names(status="pending") == []
    assert names(name=name, status="active") == [name]
    assert names(name=name, status="pending") == []
    assert names(name=name, status="pending", match="any") == [name]
    assert names(name=name, status="active", match="all") == [name]
    assert names(direction="desc") == every[::-1]
    assert names(order="name", direction="asc") == every
    assert names(order="status", direction="desc") == every[::-1]
    assert names(**{"account.id": "0123456789abcdef0123456789abcdef", "name": name}) == [name]
    # a page of the reversed list
    b = api.ok("GET", "/zones", params={"direction": "desc", "per_page": 2, "page": 1})
    assert [z["name"] for z in b["result"]] == every[::-1][:2]
    assert b["result_info"]["total_count"] == len(every)
    # the name filter's operators (name=contains:x, ...)
    label = name.split(".")[0]                   # zl<N>
    assert names(name="equal:" + name.upper()) == [name]
    assert name not in names(name="not_equal:" + name) and \
        len(names(name="not_equal:" + name)) == len(every) - 1
    assert names(name="starts_with:" + label + ".") == [name]
    assert names(name="starts_with:" + label.upper() + ".") == [name]
    assert names(name="starts_with_case_sensitive:" + label.upper() + ".") == []
    assert name in names(name="ends_with:" + name[len(label):])
    assert names(name="contains:" + label + ".api") == [name]
    assert names(name="contains:no-such-zone-text") == []
    assert name in names(name="ends_with:" + name[len(label):] + ".")   # a final dot
    # a parameter given twice: the first won unsaid
    r = api.call("GET", "/zones?name=%s&name=other.test" % name)
    assert r.status_code == 400 and "given more than once" in r.text, r.text
    # one without a value was taken as not given: a filter so listed all
    for q in ("/zones?name", "/zones/%s/dns_records?name" % zid,
              "/zones/%s/dns_records?content" % zid):
        r = api.call("GET", q)
        assert r.status_code == 400 and "a value is required" in r.text, (q, r.text)
    r = api.call("GET", "/zones/%s/dns_records?type=A&type" % zid)
    assert r.status_code == 400 and "given more than once" in r.text, r.text
    # the tag filters repeat by design: each must have its value
    for q in ("tag.present&tag.present=env", "tag.exact=env:prod&tag.exact",
              "tag.contains&tag.contains"):
        r = api.call("GET", "/zones/%s/dns_records?%s" % (zid, q))
        assert r.status_code == 400 and "a value is required" in r.text, (q, r.text)
    r = api.call("POST", "/zones/%s/dns_records?wait" % zid,
                 json={"type": "A", "name": "nowait." + name, "content": "192.0.2.9"})
    assert r.status_code == 400, r.text
    assert api.get("/zones/%s/dns_records" % zid, params={"name": "nowait." + name}) == []
    # Cloudflare's flags need none
    assert api.call("GET", "/zones/%s/dns_records?comment.absent" % zid).status_code == 200
    for bad in ({"status": "gone"}, {"match": "some"}, {"order": "serial"},
                {"direction": "up"}, {"account.type": "x"}):
        assert_error(api.call("GET", "/zones", params=bad), 400, list(bad)[0])


def test_zone_patch_changes_soa_fields_and_default_ttl(srv, api):
    zid, zone = new_zone(api, "patch")
    soa0, _ = served_soa(srv, zone)
    body = api.ok("PATCH", "/zones/%s" % zid,
                  json={"default_ttl": 600,
                        "soa": {"refresh": 100, "retry": 50, "expire": 100000,
                                "minimum": 60, "ttl": 300}})
    v = body["zone_version"]
    assert v == soa0.serial + 1 and body["result"]["default_ttl"] == 600
    m = wait_dns(srv, zone, "SOA",
                 lambda m: answer(m, zone + ".", "SOA")
                 and next(iter(answer(m, zone + ".", "SOA"))).serial == v, "serial %d" % v)
    (soa,) = answer(m, zone + ".", "SOA")
    assert (soa.refresh, soa.retry, soa.expire, soa.minimum) == (100, 50, 100000, 60)
    assert answer_ttl(m, zone + ".", "SOA") == 300
    assert (soa.mname, soa.rname) == (soa0.mname, soa0.rname)
    # negative answers use min(SOA TTL, minimum) (RFC 2308)
    m = expect_nxdomain(srv, "nothing." + zone)
    assert [r.ttl for r in m.authority if r.rdtype == dns.rdatatype.SOA] == [60]
    # default_ttl: a record written without a ttl (or ttl 1, automatic) gets it
    rec, _ = post_record(api, zid, name="d." + zone, type="A", content="192.0.2.1")
    expect_answer(srv, "d." + zone, "A", rdatas("A", "192.0.2.1"), ttl=600)
    assert rec["ttl"] == 1      # Cloudflare's "automatic", as written
    rec, _ = post_record(api, zid, name="auto." + zone, type="A", content="192.0.2.2", ttl=1)
    expect_answer(srv, "auto." + zone, "A", rdatas("A", "192.0.2.2"), ttl=600)
    assert rec["ttl"] == 1 and api.get("/zones/%s/dns_records/%s" % (zid, rec["id"]))["ttl"] == 1
    # a PATCH without a ttl keeps "automatic"; one with a TTL of its own
    # ends it, for the whole RRset (RFC 2181 §5.2)
    r = api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
               json={"comment": "c"})["result"]
    assert r["ttl"] == 1
    other, _ = post_record(api, zid, name="auto." + zone, type="A", content="192.0.2.3",
                           ttl=120)
    assert api.get("/zones/%s/dns_records/%s" % (zid, rec["id"]))["ttl"] == 120
    expect_answer(srv, "auto." + zone, "A", rdatas("A", "192.0.2.2", "192.0.2.3"), ttl=120)
    # ... also when the TTL given is the one served (600, the default)
    a1, _ = post_record(api, zid, name="same." + zone, type="A", content="192.0.2.4", ttl=1)
    post_record(api, zid, name="same." + zone, type="A", content="192.0.2.5", ttl=600)
    assert api.get("/zones/%s/dns_records/%s" % (zid, a1["id"]))["ttl"] == 600
    # an automatic write leaves the others' TTLs given as they were
    post_record(api, zid, name="same." + zone, type="A", content="192.0.2.6", ttl=1)
    ttls = {r["content"]: r["ttl"] for r in api.get("/zones/%s/dns_records" % zid,
                                                     params={"name": "same." + zone})}
    assert ttls == {"192.0.2.4": 600, "192.0.2.5": 600, "192.0.2.6": 1}, ttls
    assert api.get("/zones/%s" % zid)["default_ttl"] == 600
    # a PATCH with a bad value changes nothing
    before = snapshot(api, srv, zid, zone)
    for bad, field in (({"soa": {"refresh": "x"}}, "soa.refresh"),
                       ({"soa": {"expire": -1}}, "soa.expire"),
                       ({"default_ttl": -1}, "default_ttl"),
                       ({"default_ttl": 600, "soa": {"minimum": "soon"}}, "soa.minimum")):
        assert_error(api.call("PATCH", "/zones/%s" % zid, json=bad), 400, field)
    assert_error(api.call("PATCH", "/zones/%s" % zid, data="{nope",
                          headers={"Content-Type": "application/json"}), 400, "body")
    assert snapshot(api, srv, zid, zone) == before
    soa2, ttl2 = served_soa(srv, zone)
    assert (soa2.refresh, soa2.retry, soa2.expire, soa2.minimum, ttl2) == (100, 50, 100000, 60, 300)


def test_write_responses_show_the_new_state(srv, api):
    """The result of a write is what a GET right afterwards returns."""
    zid, zone = new_zone(api, "resp")
    time.sleep(0.01)
    body = api.ok("PATCH", "/zones/%s" % zid, json={"default_ttl": 900})
    got = api.get("/zones/%s" % zid)
    assert body["result"] == got
    assert got["modified_on"] > got["created_on"]
    rec, _ = post_record(api, zid, name="r." + zone, type="A", content="192.0.2.1")
    time.sleep(0.01)
    for method, change in (("PATCH", {"content": "192.0.2.2"}),
                           ("PUT", {"name": "r." + zone, "type": "A", "content": "192.0.2.3"})):
        body = api.ok(method, "/zones/%s/dns_records/%s" % (zid, rec["id"]), json=change)
        got = api.get("/zones/%s/dns_records/%s" % (zid, rec["id"]))
        assert body["result"] == got
        assert got["modified_on"] > got["created_on"] == rec["created_on"]


def test_zone_delete_stops_serving(srv, api):
    zid, zone = new_zone(api, "del")
    post_record(api, zid, name="www." + zone, type="A", content="192.0.2.1")
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.1"))
    body = api.ok("DELETE", "/zones/%s" % zid)
    assert body["result"]["id"] == zid
    expect_refused(srv, zone, "SOA")
    expect_refused(srv, "www." + zone, "A")
    assert_error(api.call("GET", "/zones/%s" % zid), 404, None)
    assert_error(api.call("GET", "/zones/%s/dns_records" % zid), 404, None)
    assert_error(api.call("POST", "/zones/%s/dns_records" % zid,
                          json={"name": "x." + zone, "type": "A", "content": "192.0.2.1"}), 404, None)
    assert api.get("/zones", params={"name": zone}) == []
    assert_error(api.call("DELETE", "/zones/%s" % zid), 404, None)


# ------------------------------------------------------------------ records

def test_record_create_list_filters_paging_get(srv, api):
    zid, zone = new_zone(api, "list")
    made = []
    for rec in ({"name": "www." + zone, "type": "A", "content": "192.0.2.1", "ttl": 300},
                {"name": "www." + zone, "type": "A", "content": "192.0.2.2", "ttl": 300},
                {"name": "www." + zone, "type": "AAAA", "content": "2001:db8::1", "ttl": 300},
                {"name": "@", "type": "MX", "content": "mail." + zone, "priority": 10},
                {"name": "mail", "type": "A", "content": "192.0.2.25"},
                {"name": "txt." + zone, "type": "TXT", "content": '"hello world"',
                 "comment": "a note"},
                {"name": "alias." + zone, "type": "CNAME", "content": "www." + zone},
                {"name": "_sip._tcp." + zone, "type": "SRV", "content": "5 5060 sip." + zone,
                 "priority": 20}):
        r = api.call("POST", "/zones/%s/dns_records" % zid, json=rec)
        assert r.status_code == 200, r.text
        body = r.json()
        res = body["result"]
        assert int(r.headers["X-Zone-Version"]) == body["zone_version"]
        assert res["zone_id"] == zid and res["zone_name"] == zone and res["id"]
        assert res["type"] == rec["type"] and res["proxied"] is False
        for k in ("created_on", "modified_on", "ttl", "content", "name"):
            assert k in res, res
        made.append(res)
    names = {m["name"] for m in made}
    assert names == {"www." + zone, zone, "mail." + zone, "txt." + zone, "alias." + zone,
                     "_sip._tcp." + zone}, "names are FQDNs without the final dot"
    assert [m for m in made if m["type"] == "TXT"][0]["comment"] == "a note"
    assert [m for m in made if m["type"] == "MX"][0]["priority"] == 10
    # DNS answers every record
    for m in made:
        same = {rdata_of(x) for x in made if x["name"] == m["name"] and x["type"] == m["type"]}
        expect_answer(srv, m["name"] + ".", m["type"], same)
    # filters
    www_a = api.records(zid, name="www." + zone, type="A")
    assert sorted(r["content"] for r in www_a) == ["192.0.2.1", "192.0.2.2"]
    assert {r["type"] for r in api.records(zid, name="www." + zone)} == {"A", "AAAA"}
    assert [r["id"] for r in api.records(zid, content="192.0.2.25")] == \
        [m["id"] for m in made if m["content"] == "192.0.2.25"]
    assert api.records(zid, name="nothing." + zone) == []
    assert [r["name"] for r in api.records(zid, type="CNAME")] == ["alias." + zone]
    # paging: 2 per page covers everything exactly once, result_info adds up
    everything = api.records(zid)
    total = len(everything)
    assert total >= len(made) + 2     # + apex NS (+ SOA, if listed)
    seen, page = [], 1
    while True:
        b = api.ok("GET", "/zones/%s/dns_records" % zid, params={"page": page, "per_page": 2})
        info = b["result_info"]
        assert (info["page"], info["per_page"], info["total_count"]) == (page, 2, total)
        assert info["count"] == len(b["result"]) <= 2
        assert info["total_pages"] == (total + 1) // 2
        seen += [r["id"] for r in b["result"]]
        if page == info["total_pages"]:
            break
        page += 1
    assert sorted(seen) == sorted(r["id"] for r in everything) and len(set(seen)) == total
    b = api.ok("GET", "/zones/%s/dns_records" % zid, params={"page": page + 5, "per_page": 2})
    assert b["result"] == []
    assert_error(api.call("GET", "/zones/%s/dns_records" % zid, params={"per_page": 0}), 400, None)
    # Digits only: a sign or a blank is refused, as in ids.
    for bad in ("+5", " 5", "-1", "5 ", "0x5", ""):
        assert_error(api.call("GET", "/zones/%s/dns_records" % zid, params={"per_page": bad}),
                     400, None)
        assert_error(api.call("GET", "/zones/%s/dns_records" % zid, params={"page": bad}),
                     400, None)
    # get by id, with an ETag
    for m in made:
        r = api.call("GET", "/zones/%s/dns_records/%s" % (zid, m["id"]))
        assert r.status_code == 200 and r.headers.get("ETag")
        got = r.json()["result"]
        for k in ("id", "name", "type", "content", "ttl", "priority", "comment"):
            assert got.get(k) == m.get(k), (k, got, m)
    assert_error(api.call("GET", "/zones/%s/dns_records/%s" % (zid, "f" * 32)), 404, None)


def test_record_put_patch_delete(srv, api):
    zid, zone = new_zone(api, "edit")
    rec, v = post_record(api, zid, name="www." + zone, type="A", content="192.0.2.1", ttl=300)
    expect_answer(srv, "www." + zone + ".", "A", rdatas("A", "192.0.2.1"), ttl=300)
    # PUT replaces (keeps the id)
    body = api.ok("PUT", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
                  json={"name": "www." + zone, "type": "A", "content": "192.0.2.2", "ttl": 120})
    assert body["result"]["id"] == rec["id"] and body["zone_version"] == v + 1
    expect_answer(srv, "www." + zone + ".", "A", rdatas("A", "192.0.2.2"), ttl=120)
    # PATCH changes only what it names
    body = api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, rec["id"]), json={"ttl": 900})
    res = body["result"]
    assert (res["id"], res["name"], res["type"], res["content"], res["ttl"]) == \
        (rec["id"], "www." + zone, "A", "192.0.2.2", 900)
    expect_answer(srv, "www." + zone + ".", "A", rdatas("A", "192.0.2.2"), ttl=900)
    body = api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
                  json={"content": "192.0.2.3", "comment": "moved"})
    assert body["result"]["ttl"] == 900 and body["result"]["comment"] == "moved"
    expect_answer(srv, "www." + zone + ".", "A", rdatas("A", "192.0.2.3"), ttl=900)
    assert api.get("/zones/%s/dns_records/%s" % (zid, rec["id"]))["content"] == "192.0.2.3"
    # DELETE
    v = api.get("/zones/%s" % zid)["serial"]
    body = api.ok("DELETE", "/zones/%s/dns_records/%s" % (zid, rec["id"]))
    assert body["result"]["id"] == rec["id"] and body["zone_version"] == v + 1
    expect_nxdomain(srv, "www." + zone)
    assert_error(api.call("GET", "/zones/%s/dns_records/%s" % (zid, rec["id"])), 404, None)
    assert_error(api.call("DELETE", "/zones/%s/dns_records/%s" % (zid, rec["id"])), 404, None)
    assert_error(api.call("PATCH", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
                          json={"content": "192.0.2.4"}), 404, None)
    expect_serial(srv, zone, v + 1)


def test_rename_leaves_nothing_stale(srv, api):
    zid, zone = new_zone(api, "ren")
    a, _ = post_record(api, zid, name="old." + zone, type="A", content="192.0.2.1")
    post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.7")
    txt, _ = post_record(api, zid, name="keep." + zone, type="TXT", content='"t"')
    expect_answer(srv, "old." + zone, "A", rdatas("A", "192.0.2.1"))
    # PATCH rename: the old name is gone entirely, the new one answers
    api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, a["id"]), json={"name": "new." + zone})
    expect_answer(srv, "new." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_nxdomain(srv, "old." + zone, "A")
    expect_nxdomain(srv, "old." + zone, "TXT")
    # PUT rename onto a name with other data: both names right afterwards
    api.ok("PUT", "/zones/%s/dns_records/%s" % (zid, a["id"]),
           json={"name": "keep." + zone, "type": "A", "content": "192.0.2.8"})
    expect_answer(srv, "keep." + zone, "A", rdatas("A", "192.0.2.7", "192.0.2.8"))
    expect_nxdomain(srv, "new." + zone)
    # renaming one record of an RRset away leaves the rest of it
    api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, a["id"]), json={"name": "away." + zone})
    expect_answer(srv, "keep." + zone, "A", rdatas("A", "192.0.2.7"))
    expect_answer(srv, "away." + zone, "A", rdatas("A", "192.0.2.8"))
    # rename away the TXT: keep.* keeps its A, its TXT is NODATA
    api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, txt["id"]), json={"name": "t2." + zone})
    expect_nodata(srv, "keep." + zone, "TXT")
    expect_answer(srv, "t2." + zone, "TXT", rdatas("TXT", '"t"'))
    # rename through a batch patch
    body = api.ok("POST", "/zones/%s/dns_records/batch" % zid,
                  json={"patches": [{"id": a["id"], "name": "batched." + zone}]})
    expect_answer(srv, "batched." + zone, "A", rdatas("A", "192.0.2.8"))
    expect_nxdomain(srv, "away." + zone)
    expect_serial(srv, zone, body["zone_version"])


def test_retype_leaves_nothing_stale(srv, api):
    zid, zone = new_zone(api, "ret")
    rec, _ = post_record(api, zid, name="host." + zone, type="A", content="192.0.2.1")
    expect_answer(srv, "host." + zone, "A", rdatas("A", "192.0.2.1"))
    api.ok("PUT", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
           json={"name": "host." + zone, "type": "AAAA", "content": "2001:db8::1"})
    expect_answer(srv, "host." + zone, "AAAA", rdatas("AAAA", "2001:db8::1"))
    expect_nodata(srv, "host." + zone, "A")
    # PATCH type and content: AAAA -> TXT
    api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
           json={"type": "TXT", "content": '"now text"'})
    expect_answer(srv, "host." + zone, "TXT", rdatas("TXT", '"now text"'))
    expect_nodata(srv, "host." + zone, "AAAA")
    # retype to a CNAME (alone at its name): every type now follows the CNAME
    api.ok("PUT", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
           json={"name": "host." + zone, "type": "CNAME", "content": "target.example"})
    expect_answer(srv, "host." + zone, "CNAME", rdatas("CNAME", "target.example."))
    wait_dns(srv, "host." + zone, "TXT",
                 lambda m: answer(m, "host." + zone, "CNAME") == rdatas("CNAME", "target.example.")
                 and not answer(m, "host." + zone, "TXT"), "only the CNAME")
    # rename and retype at once
    api.ok("PUT", "/zones/%s/dns_records/%s" % (zid, rec["id"]),
           json={"name": "other." + zone, "type": "MX", "content": "mx." + zone, "priority": 5})
    expect_answer(srv, "other." + zone, "MX", rdatas("MX", "5 mx.%s." % zone))
    expect_nxdomain(srv, "host." + zone, "CNAME")
    expect_nxdomain(srv, "host." + zone, "TXT")


def test_rrset_ttl_applies_to_whole_rrset(srv, api):
    """RFC 2181 section 5.2: one TTL per RRset; a write with a new TTL gives it to all."""
    zid, zone = new_zone(api, "ttl")
    r1, _ = post_record(api, zid, name="rr." + zone, type="A", content="192.0.2.1", ttl=300)
    r2, v = post_record(api, zid, name="rr." + zone, type="A", content="192.0.2.2", ttl=600)
    assert {r["ttl"] for r in api.records(zid, name="rr." + zone, type="A")} == {600}
    expect_answer(srv, "rr." + zone, "A", rdatas("A", "192.0.2.1", "192.0.2.2"), ttl=600)
    body = api.ok("PATCH", "/zones/%s/dns_records/%s" % (zid, r1["id"]), json={"ttl": 120})
    assert body["zone_version"] == v + 1, "the RRset's TTL changes in the same version"
    assert {r["ttl"] for r in api.records(zid, name="rr." + zone, type="A")} == {120}
    expect_answer(srv, "rr." + zone, "A", rdatas("A", "192.0.2.1", "192.0.2.2"), ttl=120)


def test_cname_exclusivity(srv, api):
    """RFC 1034 section 3.6.2, RFC 2181 section 10.1: a CNAME is alone at its name."""
    zid, zone = new_zone(api, "cname")
    a, _ = post_record(api, zid, name="a." + zone, type="A", content="192.0.2.1")
    cn, _ = post_record(api, zid, name="c." + zone, type="CNAME", content="a." + zone)
    txt, _ = post_record(api, zid, name="t." + zone, type="TXT", content='"x"')
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records" % zid
    for bad in ({"name": "a." + zone, "type": "CNAME", "content": "elsewhere.example"},
                {"name": "c." + zone, "type": "A", "content": "192.0.2.9"},
                {"name": "c." + zone, "type": "TXT", "content": '"y"'},
                {"name": "@", "type": "CNAME", "content": "elsewhere.example"}):
        r = api.call("POST", path, json=bad)
        assert 400 <= r.status_code < 500, (bad, r.status_code, r.text)
        assert_error(r, r.status_code, None)
    # PATCH/PUT into a conflict: retype t.* (TXT) to CNAME next to nothing is fine,
    # but renaming the A onto the CNAME's name or the CNAME onto a.* is not
    for rid, change in ((a["id"], {"name": "c." + zone}),
                        (cn["id"], {"name": "a." + zone}),
                        (txt["id"], {"name": "a." + zone, "type": "CNAME",
                                     "content": "elsewhere.example"})):
        r = api.call("PATCH", "%s/%s" % (path, rid), json=change)
        assert 400 <= r.status_code < 500, (change, r.status_code, r.text)
    r = api.call("POST", path + "/batch",
                 json={"posts": [{"name": "b." + zone, "type": "A", "content": "192.0.2.5"},
                                 {"name": "b." + zone, "type": "CNAME", "content": "a." + zone}]})
    assert 400 <= r.status_code < 500, r.text
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "c." + zone, "CNAME", rdatas("CNAME", "a.%s." % zone))
    expect_answer(srv, "a." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_nxdomain(srv, "b." + zone)


def test_second_cname_at_a_name_is_refused(srv, api):
    """RFC 2181 section 10.1: there is only one CNAME at a name (a CNAME RRset has one record)."""
    zid, zone = new_zone(api, "cname2")
    post_record(api, zid, name="c." + zone, type="CNAME", content="one.example")
    before = snapshot(api, srv, zid, zone)
    r = api.call("POST", "/zones/%s/dns_records" % zid,
                 json={"name": "c." + zone, "type": "CNAME", "content": "two.example"})
    assert 400 <= r.status_code < 500, "second CNAME accepted: %d %s" % (r.status_code, r.text)
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "c." + zone, "CNAME", rdatas("CNAME", "one.example."))


def test_duplicate_records_are_refused(srv, api):
    zid, zone = new_zone(api, "dup")
    a, _ = post_record(api, zid, name="d." + zone, type="A", content="192.0.2.1")
    b, _ = post_record(api, zid, name="d." + zone, type="A", content="192.0.2.2")
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records" % zid
    r = api.call("POST", path, json={"name": "d." + zone, "type": "A", "content": "192.0.2.1"})
    assert 400 <= r.status_code < 500, r.text
    # Cloudflare's code for it, which clients test ("An identical record
    # already exists.")
    assert r.json()["errors"][0]["code"] == 81058, r.text
    # the same data spelled differently is still the same record
    r = api.call("POST", path, json={"name": "D." + zone.upper(), "type": "a", "content": "192.0.2.1"})
    assert 400 <= r.status_code < 500, r.text
    r = api.call("PATCH", "%s/%s" % (path, b["id"]), json={"content": "192.0.2.1"})
    assert 400 <= r.status_code < 500, r.text
    r = api.call("POST", path + "/batch",
                 json={"posts": [{"name": "e." + zone, "type": "A", "content": "192.0.2.3"},
                                 {"name": "e." + zone, "type": "A", "content": "192.0.2.3"}]})
    assert 400 <= r.status_code < 500, r.text
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "d." + zone, "A", rdatas("A", "192.0.2.1", "192.0.2.2"))
    expect_nxdomain(srv, "e." + zone)


BAD_RECORDS = [
    # (body, field the message must start with)
    ({"name": "x", "type": "A", "content": "999.1.1.1"}, "content"),
    ({"name": "x", "type": "A", "content": "bad"}, "content"),
    ({"name": "x", "type": "AAAA", "content": "2001:db8::zz"}, "content"),
    ({"name": "x", "type": "MX", "content": "mail.example", "priority": "high"}, "priority"),
    ({"name": "x", "type": "TXT", "content": '"' + "a" * 5000 + '"'}, "content"),
    ({"name": "x", "type": "CNAME", "content": "a..b"}, "content"),
    ({"name": "x", "type": "BOGUS", "content": "1.2.3.4"}, "type"),
    ({"name": "x", "content": "1.2.3.4"}, "type"),
    ({"name": "x", "type": "A"}, "content"),
    ({"type": "A", "content": "192.0.2.1"}, "name"),
    ({"name": "outside.example.", "type": "A", "content": "192.0.2.1"}, "name"),
    ({"name": "x", "type": "A", "content": "192.0.2.1", "ttl": -5}, "ttl"),
    # (TTL 0 is accepted: UPDATE and zone files take it, RFC 2181 §8.)
    ({"name": "x", "type": "CAA", "content": '0 "" "x"'}, "content"),
    ({"name": "x", "type": "TXT", "content": '"a" "b'}, "content"),
    ({"name": "x", "type": "A", "content": "192.0.2.1", "ttl": 2 ** 31}, "ttl"),
    ({"name": "x", "type": "A", "content": "192.0.2.1", "ttl": "abc"}, "ttl"),
    ({"name": "@", "type": "SOA", "content": "a. b. 1 2 3 4 5"}, "type"),
]


def test_bad_record_input_names_the_field_and_changes_nothing(srv, api):
    zid, zone = new_zone(api, "bad")
    keep, _ = post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.1")
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records" % zid
    problems = []
    for body, field in BAD_RECORDS:
        r = api.call("POST", path, json=body)
        try:
            assert_error(r, 400, field)
        except AssertionError as e:
            problems.append("POST %r: %s" % (body if len(str(body)) < 200 else str(body)[:200], e))
        # the same bad data through PUT and PATCH of an existing record
        if "name" in body and "type" in body and "content" in body:
            r = api.call("PUT", "%s/%s" % (path, keep["id"]), json=body)
            if not (r.status_code == 400 and r.json()["errors"][0]["message"].startswith(field + ":")):
                problems.append("PUT %r: %d %s" % (str(body)[:200], r.status_code, r.text[:300]))
    # bad JSON and bodies of the wrong shape
    for raw in ("{bad", "", "[1, 2]", "null", '{"name": "x", "type": "A", "content": "192.0.2.1"'):
        r = api.call("POST", path, data=raw, headers={"Content-Type": "application/json"})
        try:
            assert_error(r, 400, "body")
        except AssertionError as e:
            problems.append("POST raw %r: %s" % (raw, e))
    r = api.call("PATCH", "%s/%s" % (path, keep["id"]), data="{bad",
                 headers={"Content-Type": "application/json"})
    if r.status_code != 400:
        problems.append("PATCH bad JSON: %d %s" % (r.status_code, r.text))
    r = api.call("PATCH", "%s/%s" % (path, keep["id"]), json={"content": "300.0.0.1"})
    if not (r.status_code == 400 and r.json()["errors"][0]["message"].startswith("content:")):
        problems.append("PATCH bad content: %d %s" % (r.status_code, r.text))
    assert not problems, "\n".join(problems)
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "keep." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_nxdomain(srv, "x." + zone)


def test_bad_owner_name_syntax_is_a_name_error(srv, api):
    zid, zone = new_zone(api, "badname")
    keep, _ = post_record(api, zid, name="keep." + zone, type="A", content="192.0.2.1")
    before = snapshot(api, srv, zid, zone)
    problems = []
    for name in ("x" * 64, "a..b", "x" * 63 + "." + "y" * 63 + "." + "z" * 63 + "." + "w" * 63):
        body = {"name": name, "type": "A", "content": "192.0.2.1"}
        for method, path in (("POST", "/zones/%s/dns_records" % zid),
                             ("PUT", "/zones/%s/dns_records/%s" % (zid, keep["id"])),
                             ("PATCH", "/zones/%s/dns_records/%s" % (zid, keep["id"]))):
            r = api.call(method, path, json=body if method != "PATCH" else {"name": name})
            try:
                assert_error(r, 400, "name")
            except AssertionError as e:
                problems.append("%s name=%r: %s" % (method, name[:20] + "...", str(e).split("\n")[0]))
    assert not problems, "\n".join(problems)
    assert snapshot(api, srv, zid, zone) == before


def test_names_are_read_on_their_wire_form(srv, api):
    """Found by an outside tester: a record's name was tested against the
    zone by comparing texts, so an FQDN whose zone part was spelled
    otherwise (an escape, another case, raw UTF-8) was taken as relative
    and stored, acknowledged, under NAME.ZONE.ZONE; a final escaped dot
    was taken as absolute; `GET /zones?name=` compared texts too."""
    zid, zone = new_zone(api, "wire")
    first, rest = zone.split(".", 1)
    esc = "\\%03d%s.%s" % (ord(first[0]), first[1:], rest)     # \119ire12.api.test
    cases = [("q." + zone[:-1] + "\\%03d" % ord(zone[-1]), "q." + zone),
             (esc, zone),
             ("Z." + esc.upper(), "z." + zone),
             ("x\\.", "x\\.." + zone),                         # relative: x\. then the zone
             ("r." + zone + "\\.", "r." + zone + "\\.." + zone)]
    for name, stored in cases:
        rec = api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": "TXT", "name": name, "content": "x"})["result"]
        assert rec["name"] == stored, (name, rec["name"])
        wait_dns(srv, stored + ".", "TXT", lambda m: m.answer, "TXT at " + stored)
    for spelling in (zone, zone + ".", zone.upper(), esc, esc + "."):
        assert [z["id"] for z in api.get("/zones", params={"name": spelling})] == [zid], spelling
    assert api.get("/zones", params={"name": "no..name"}) == []
    # A name written in Unicode is stored in Punycode, as Cloudflare
    # stores it ("Domain names are always represented in Punycode"), and
    # resolvers ask for that form (IDNA2008): raw UTF-8 octets were stored
    # and answered only to a query in octets no resolver sends.
    n = next(_seq)
    uname = "B\u00fccher%d.api.test" % n
    alabel = "xn--bcher%d-" % n
    uz = api.ok("POST", "/zones", json={"name": uname})["result"]
    assert uz["name"].startswith(alabel) and uz["name"].endswith(".api.test"), uz["name"]
    ascii_zone = uz["name"]
    rec = api.ok("POST", "/zones/%s/dns_records" % uz["id"],
                 json={"type": "A", "name": "www." + uname, "content": "192.0.2.1"})["result"]
    assert rec["name"] == "www." + ascii_zone
    for spelling in (uname, uname.lower(), ascii_zone, ascii_zone.upper()):
        assert [z["id"] for z in api.get("/zones", params={"name": spelling})] == [uz["id"]]
    expect_answer(srv, "www." + ascii_zone + ".", "A", rdatas("A", "192.0.2.1"))
    got = api.get("/zones/%s/dns_records" % uz["id"],
                  params={"name": "www.b\u00fccher%d.api.test" % n})
    assert [r["id"] for r in got] == [rec["id"]]
    # Escapes are octets, as in master files: kept so.
    rec = api.ok("POST", "/zones/%s/dns_records" % uz["id"],
                 json={"type": "A", "name": "\\195\\169", "content": "192.0.2.2"})["result"]
    assert rec["name"] == "\\195\\169." + ascii_zone
    # Unicode that is no internationalized label is refused.
    # ... nor is Unicode that IDNA maps to ASCII punctuation, which the
    # master-file syntax read after took as an escape (a\uff3c\uff10\uff16\uff15b
    # stored "aAb"), a wildcard, a dot inside a label or a blank
    for bad in ("\U0001F98A", "a\u200db", "a\uff3c\uff10\uff16\uff15b", "\uff0a",
                "x\uff3c\uff0ey", "a\u3000b", "\ufe6b", "x\uff0fy", "a\uff1bb"):
        assert_error(api.call("POST", "/zones/%s/dns_records" % uz["id"],
                              json={"type": "A", "name": bad, "content": "192.0.2.3"}),
                     400, "name")


def test_zone_names_the_record_rules_cannot_hold_are_refused(srv, api):
    """A wildcard zone would put its apex NS at a wildcard (RFC 4592
    §4.2; its export did not import), and a zone name takes a space or
    control character only as \\DDD, as a record name does."""
    before = {z["id"] for z in api.get("/zones", params={"per_page": 1000})}
    for bad in ("*.wild%d.api.test" % next(_seq), "*", "sp ace.api.test", "a\nb.api.test",
                "tab\t.api.test", "del\x7f.api.test"):
        assert_error(api.call("POST", "/zones", json={"name": bad}), 400, "name")
    assert {z["id"] for z in api.get("/zones", params={"per_page": 1000})} == before
    # Not a wildcard: '*' elsewhere, or escaped as \042.
    for good in ("a.*.w%d.api.test" % next(_seq), "x*.w%d.api.test" % next(_seq)):
        assert api.ok("POST", "/zones", json={"name": good})["result"]["name"] == good


def test_names_in_content_are_fqdns_in_every_type(srv, api):
    """docs/api.md: names in content are FQDNs without the final dot. Only
    the types whose content is one name were; the targets of SVCB/HTTPS,
    RP, KX, AFSDB, NAPTR, RT, MINFO and LP got the zone appended."""
    zid, zone = new_zone(api, "cnames")
    cases = {"HTTPS": ("1 svc.example.com alpn=h2", "1 svc.example.com. alpn=h2"),
             "SVCB": ("1 svc.example.com", "1 svc.example.com."),
             "RP": ("mbox.example.com txt.example.com", "mbox.example.com. txt.example.com."),
             "KX": ("1 kx.example.com", "1 kx.example.com."),
             "AFSDB": ("1 afs.example.com", "1 afs.example.com."),
             "RT": ("1 rt.example.com", "1 rt.example.com."),
             "MINFO": ("r.example.com e.example.com", None),   # dnspython has none
             "LP": ("10 lp.example.com", None),
             "IPSECKEY": ("10 3 2 gw.example.com AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ==",
                          "10 3 2 gw.example.com. AQNRU3mG7TVTO2BkR47usntb102uFJtugbo6BSGvgqt4AQ=="),
             "NAPTR": ('1 1 "s" "SIP+D2U" "" _sip._udp.example.com',
                       '1 1 "s" "SIP+D2U" "" _sip._udp.example.com.'),
             # a name inside a quoted regexp is data, not a name (it lost
             # its dot, and a GET written back changed the record)
             "TYPE35": ('100 10 "u" "E2U+sip" "!^(.*) sip.rt.test. (.*)$!\\\\1!" sip.rt.test',
                        '100 10 "u" "E2U+sip" "!^(.*) sip.rt.test. (.*)$!\\\\1!" sip.rt.test.'),
             "CNAME": ("cn.example.com", "cn.example.com.")}
    for rtype, (content, want) in cases.items():
        name = "%s.%s" % (rtype.lower(), zone)
        rec = api.ok("POST", "/zones/%s/dns_records" % zid,
                     json={"type": rtype, "name": name, "content": content})["result"]
        # written back as given: FQDNs without their final dot
        assert rec["content"].replace('alpn="h2"', "alpn=h2") == content, rec
        listed = api.records(zid, content=content)
        assert [r["id"] for r in listed] == [rec["id"]], (content, listed)
        if rtype in ("RP", "KX", "AFSDB", "RT", "NAPTR", "CNAME"):
            # the names with their final dots: only the last one was
            # dropped, so a multi-name filter so written matched nothing
            listed = api.records(zid, content=want)
            assert [r["id"] for r in listed] == [rec["id"]], (want, listed)
        if want is not None:
            expect_answer(srv, name, rtype, rdatas(rtype, want))
    # the root stays "." (an SRV's root target lost its only character)
    rec = api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "SRV", "name": "_x._tcp." + zone, "content": "2 3 .",
                       "priority": 1})["result"]
    assert rec["content"] == "2 3 ." and rec["priority"] == 1, rec
    # With the final dot, the same.
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"type": "KX", "name": "kx2." + zone, "content": "1 kx.example.com."})
    expect_answer(srv, "kx2." + zone, "KX", rdatas("KX", "1 kx.example.com."))


def test_names_in_content_written_in_unicode_are_stored_in_punycode(srv, api):
    """Cloudflare: "Domain names are always represented in Punycode, even
    if Unicode characters were used". The record's own name was; a name
    inside content in Unicode (a CNAME's target) was refused. Only the
    words that are names for the type are converted: a character-string
    in Unicode is data and stays as written."""
    zid, zone = new_zone(api, "ucontent")
    u, a = "b\u00fccher.example", "xn--bcher-kva.example"
    cases = [("CNAME", "c1", u, None, a),
             ("CNAME", "c2", "www.B\u00dcCHER.example.", None, "www.xn--bcher-kva.example"),
             ("MX", "m1", u, 10, a),                          # priority apart
             ("MX", "m2", "20 mail." + u, None, "mail." + a),  # priority in content
             ("SRV", "_s._tcp", "1 2 " + u, 5, "1 2 " + a),
             ("SRV", "_t._tcp", "5 1 2 " + u, None, "1 2 " + a),
             ("HTTPS", "h", "1 " + u + " alpn=h2", None, "1 " + a + " alpn=h2"),
             ("RP", "rp", u + " t." + u, None, a + " t." + a),
             ("NAPTR", "n", '1 1 "s" "SIP+D2U" "" _sip._udp.' + u, None,
              '1 1 "s" "SIP+D2U" "" _sip._udp.' + a),
             # a label written with escapes stays octets (as in names)
             ("CNAME", "c3", "b\\195\\188cher.example", None, "b\\195\\188cher.example")]
    for rtype, label, content, prio, stored in cases:
        body = {"type": rtype, "name": label, "content": content}
        if prio is not None:
            body["priority"] = prio
        rec = api.ok("POST", "/zones/%s/dns_records" % zid, json=body)["result"]
        assert rec["content"] == stored, (content, rec)
        if rtype in ("CNAME", "MX") and "\\" not in stored:
            want = (("%d " % rec["priority"]) if rtype == "MX" else "") + stored + "."
            expect_answer(srv, "%s.%s" % (label, zone), rtype, rdatas(rtype, want))
    # The content filter takes the Unicode spelling too: it matches the
    # Punycode stored.
    got = api.records(zid, type="CNAME", content=u)
    assert [r["content"] for r in got] == [a], got
    got = api.records(zid, type="MX", content="mail." + u)
    assert [r["content"] for r in got] == ["mail." + a], got
    # Cloudflare's data object takes a target in Unicode too.
    rec = api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "SRV", "name": "_d._udp",
                       "data": {"priority": 1, "weight": 2, "port": 3, "target": u}})["result"]
    assert rec["content"] == "2 3 " + a and rec["data"]["target"] == a, rec
    # Unicode that is no internationalized name is 400, naming content,
    # and writes nothing.
    before = snapshot(api, srv, zid, zone)
    # (A character-string in Unicode is data, never converted: outside
    # TXT the master-file syntax takes it escaped only, as before.)
    for rtype, content in (("CNAME", "\U0001F98A.example"), ("MX", "10 a\uff0eb.example"),
                           ("SRV", "1 2 3 x\u3000y.example"),
                           ("HINFO", '"b\u00fccher.example" "x"'),
                           ("CAA", '0 issue "b\u00fccher.example"')):
        assert_error(api.call("POST", "/zones/%s/dns_records" % zid,
                              json={"type": rtype, "name": "bad", "content": content}),
                     400, "content")
    assert snapshot(api, srv, zid, zone) == before


def test_soa_and_apex_ns_rules(srv, api):
    zid, zone = new_zone(api, "apex")
    ns = api.records(zid, name=zone, type="NS")
    assert sorted(r["content"] for r in ns) == ["ns1." + zone, "ns2." + zone]
    before = snapshot(api, srv, zid, zone)
    for soa in api.records(zid, type="SOA"):      # if the SOA is listed, it cannot be deleted
        assert_error(api.call("DELETE", "/zones/%s/dns_records/%s" % (zid, soa["id"])), 400, None)
        # A patch of its id names the id, not a type it did not give
        # (an outside tester: a batch's said patches[0].type).
        content = {"content": "ns1.%s. hostmaster.%s. 99 1 1 1 1" % (zone, zone)}
        assert_error(api.call("PATCH", "/zones/%s/dns_records/%s" % (zid, soa["id"]),
                              json=content), 400, "id")
        assert_error(api.call("POST", "/zones/%s/dns_records/batch" % zid,
                              json={"patches": [dict(content, id=soa["id"])]}),
                     400, "patches[0].id")
        assert_error(api.call("PATCH", "/zones/%s/dns_records/%s" % (zid, soa["id"]),
                              json=dict(content, type="SOA")), 400, "type")
    assert snapshot(api, srv, zid, zone) == before
    one, last = sorted(ns, key=lambda r: r["content"])
    api.ok("DELETE", "/zones/%s/dns_records/%s" % (zid, one["id"]))
    expect_answer(srv, zone, "NS", rdatas("NS", last["content"] + "."))
    before = snapshot(api, srv, zid, zone)
    assert_error(api.call("DELETE", "/zones/%s/dns_records/%s" % (zid, last["id"])), 400, None)
    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={"deletes": [{"id": last["id"]}]})
    assert 400 <= r.status_code < 500, r.text
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, zone, "NS", rdatas("NS", last["content"] + "."))


@pytest.mark.parametrize("method,change", [
    ("PATCH", {"name": "sub"}),
    ("PATCH", {"type": "A", "content": "192.0.2.1"}),
    ("PUT", {"name": "@", "type": "TXT", "content": '"x"'}),
    ("BATCH", {"name": "sub"}),
])
def test_last_apex_ns_cannot_be_renamed_or_retyped_away(srv, api, method, change):
    """Like deleting it, moving the last apex NS away would leave a zone without NS."""
    zid, zone = new_zone(api, "lastns")
    one, last = sorted(api.records(zid, name=zone, type="NS"), key=lambda r: r["content"])
    api.ok("DELETE", "/zones/%s/dns_records/%s" % (zid, one["id"]))
    before = snapshot(api, srv, zid, zone)
    if method == "BATCH":
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                     json={"patches": [dict(change, id=last["id"])]})
    else:
        r = api.call(method, "/zones/%s/dns_records/%s" % (zid, last["id"]), json=change)
    assert 400 <= r.status_code < 500, "%s %r took away the last apex NS: %d %s" % (
        method, change, r.status_code, r.text[:300])
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, zone, "NS", rdatas("NS", last["content"] + "."))


def test_listed_soa_matches_served_soa(srv, api):
    """If dns_records lists the SOA at all, it is the SOA that DNS serves."""
    zid, zone = new_zone(api, "soalist")
    post_record(api, zid, name="a." + zone, type="A", content="192.0.2.1")
    v = api.ok("PATCH", "/zones/%s" % zid, json={"soa": {"refresh": 1234}})["zone_version"]
    expect_serial(srv, zone, v)
    listed = api.records(zid, type="SOA")
    if not listed:
        return
    (rec,) = listed
    soa, ttl = served_soa(srv, zone)
    assert rdata_of(rec) == soa, "listed %r, served %s" % (rec["content"], soa.to_text())
    assert rec["ttl"] == ttl


def test_if_match_gives_412_when_the_record_changed(srv, api):
    zid, zone = new_zone(api, "etag")
    rec, _ = post_record(api, zid, name="e." + zone, type="A", content="192.0.2.1")
    path = "/zones/%s/dns_records/%s" % (zid, rec["id"])
    r = api.call("GET", path)
    etag1 = r.headers["ETag"]
    r = api.call("PATCH", path, json={"content": "192.0.2.2"}, headers={"If-Match": etag1})
    assert r.status_code == 200, r.text
    etag2 = api.call("GET", path).headers["ETag"]
    assert etag2 != etag1
    expect_answer(srv, "e." + zone, "A", rdatas("A", "192.0.2.2"))
    before = snapshot(api, srv, zid, zone)
    for method, body in (("PATCH", {"content": "192.0.2.3"}),
                         ("PUT", {"name": "e." + zone, "type": "A", "content": "192.0.2.3"}),
                         ("DELETE", None)):
        r = api.call(method, path, json=body, headers={"If-Match": etag1})
        assert_error(r, 412, None)
    assert snapshot(api, srv, zid, zone) == before
    expect_answer(srv, "e." + zone, "A", rdatas("A", "192.0.2.2"))
    r = api.call("PUT", path, json={"name": "e." + zone, "type": "A", "content": "192.0.2.4"},
                 headers={"If-Match": etag2})
    assert r.status_code == 200, r.text
    etag3 = r.headers.get("ETag") or api.call("GET", path).headers["ETag"]
    expect_answer(srv, "e." + zone, "A", rdatas("A", "192.0.2.4"))
    r = api.call("DELETE", path, headers={"If-Match": etag3})
    assert r.status_code == 200, r.text
    expect_nxdomain(srv, "e." + zone)


def test_batch_is_all_or_nothing_and_one_version(srv, api):
    zid, zone = new_zone(api, "batch")
    d, _ = post_record(api, zid, name="del." + zone, type="A", content="192.0.2.1")
    p, _ = post_record(api, zid, name="pat." + zone, type="A", content="192.0.2.2")
    u, _ = post_record(api, zid, name="put." + zone, type="A", content="192.0.2.3")
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records/batch" % zid
    good_ops = {"deletes": [{"id": d["id"]}],
                "patches": [{"id": p["id"], "content": "192.0.2.22"}],
                "puts": [{"id": u["id"], "name": "put." + zone, "type": "AAAA",
                          "content": "2001:db8::3"}],
                "posts": [{"name": "new." + zone, "type": "A", "content": "192.0.2.4"}]}
    # each kind of failure, last in the batch, undoes everything before it
    for broken in (dict(good_ops, posts=good_ops["posts"] + [{"name": "bad." + zone, "type": "A",
                                                               "content": "bad"}]),
                   dict(good_ops, posts=[{"name": "new." + zone, "type": "A", "content": "192.0.2.4"},
                                         {"name": "new." + zone, "type": "CNAME",
                                          "content": "x.example"}]),
                   dict(good_ops, deletes=[{"id": d["id"]}, {"id": "f" * 32}]),
                   dict(good_ops, patches=[{"id": p["id"], "ttl": -1}])):
        r = api.call("POST", path, json=broken)
        assert 400 <= r.status_code < 500, (broken, r.status_code, r.text)
        assert_error(r, r.status_code, None)
        assert snapshot(api, srv, zid, zone) == before, broken
    expect_answer(srv, "del." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_answer(srv, "pat." + zone, "A", rdatas("A", "192.0.2.2"))
    expect_answer(srv, "put." + zone, "A", rdatas("A", "192.0.2.3"))
    expect_nxdomain(srv, "new." + zone)
    expect_nxdomain(srv, "bad." + zone)
    # the good batch: one version, every change visible
    v0 = before[0]
    r = api.call("POST", path, json=good_ops)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["zone_version"] == v0 + 1 and int(r.headers["X-Zone-Version"]) == v0 + 1
    expect_serial(srv, zone, v0 + 1)
    expect_nxdomain(srv, "del." + zone)
    expect_answer(srv, "pat." + zone, "A", rdatas("A", "192.0.2.22"))
    expect_answer(srv, "put." + zone, "AAAA", rdatas("AAAA", "2001:db8::3"))
    expect_nodata(srv, "put." + zone, "A")
    expect_answer(srv, "new." + zone, "A", rdatas("A", "192.0.2.4"))
    # order: deletes before posts, so a batch can replace a record by the same data
    r = api.call("POST", path, json={"deletes": [{"id": api.records(zid, name="new." + zone)[0]["id"]}],
                                     "posts": [{"name": "new." + zone, "type": "A",
                                                "content": "192.0.2.4", "ttl": 77}]})
    assert r.status_code == 200, r.text
    expect_answer(srv, "new." + zone, "A", rdatas("A", "192.0.2.4"), ttl=77)


def refused_batches(api, srv, zid, zone, batches):
    """Each batch is refused with a 4xx and changes nothing."""
    before = snapshot(api, srv, zid, zone)
    path = "/zones/%s/dns_records/batch" % zid
    for ops, status in batches:
        r = api.call("POST", path, json=ops)
        assert r.status_code == status, (ops, r.status_code, r.text)
        assert_error(r, status, None)
        assert snapshot(api, srv, zid, zone) == before, ops


def test_batch_ops_see_the_earlier_ops_of_their_batch(srv, api):
    """Every op of a batch is checked against the zone as the ops before it
    left it: refusals that only earlier ops of the same batch cause, and
    changes that only they allow (names in any case)."""
    zid, zone = new_zone(api, "bseq")
    path = "/zones/%s/dns_records/batch" % zid
    x, _ = post_record(api, zid, name="x." + zone, type="A", content="192.0.2.1", ttl=300)
    m, _ = post_record(api, zid, name="mv." + zone, type="A", content="192.0.2.2")
    cname = {"type": "CNAME", "content": "x." + zone}
    refused_batches(api, srv, zid, zone, [
        # a CNAME, then other data at its name
        ({"posts": [dict(cname, name="c." + zone),
                    {"name": "C." + zone.upper(), "type": "A", "content": "192.0.2.9"}]}, 400),
        # the same record twice, its name in another case
        ({"posts": [{"name": "d." + zone, "type": "A", "content": "192.0.2.3"},
                    {"name": "D." + zone.upper(), "type": "A", "content": "192.0.2.3"}]}, 400),
        # a record moved by PUT, or by PATCH, to a name where a later post adds a CNAME
        ({"puts": [{"id": m["id"], "name": "to." + zone, "type": "A", "content": "192.0.2.2"}],
          "posts": [dict(cname, name="to." + zone)]}, 400),
        ({"patches": [{"id": m["id"], "name": "TO." + zone}],
          "posts": [dict(cname, name="to." + zone)]}, 400),
        # a CNAME posted where a record stays after a PUT that leaves it in place
        ({"puts": [{"id": m["id"], "name": "mv." + zone, "type": "A", "content": "192.0.2.7"}],
          "posts": [dict(cname, name="MV." + zone)]}, 400),
        # two patches of one record: the second starts where the first left
        # it, and makes it a duplicate there
        ({"patches": [{"id": m["id"], "name": "x." + zone},
                      {"id": m["id"], "content": "192.0.2.1"}]}, 400),
        # a record deleted, then patched, or deleted again: it is gone
        ({"deletes": [{"id": x["id"]}], "patches": [{"id": x["id"], "content": "192.0.2.5"}]},
         404),
        ({"deletes": [{"id": x["id"]}, {"id": x["id"]}]}, 404),
    ])
    # deleted, then posted again with the same data at the same name: a new record
    body = api.ok("POST", path, json={
        "deletes": [{"id": x["id"]}],
        "posts": [{"name": "X." + zone.upper(), "type": "A", "content": "192.0.2.1", "ttl": 300}]})
    (new_x,) = body["result"]["posts"]
    assert new_x["id"] != x["id"] and new_x["name"] == "x." + zone
    assert [r["id"] for r in api.records(zid, name="x." + zone)] == [new_x["id"]]
    # moved away by PUT, then a CNAME at the name it left
    api.ok("POST", path, json={
        "puts": [{"id": m["id"], "name": "to." + zone, "type": "A", "content": "192.0.2.2"}],
        "posts": [{"name": "mv." + zone, "type": "CNAME", "content": "to." + zone}]})
    expect_answer(srv, "mv." + zone, "CNAME", rdatas("CNAME", "to.%s." % zone))
    expect_answer(srv, "to." + zone, "A", rdatas("A", "192.0.2.2"))
    # two patches of one record: the second starts from the first's result
    body = api.ok("POST", path, json={"patches": [{"id": m["id"], "name": "p2." + zone},
                                                  {"id": m["id"], "content": "192.0.2.22"}]})
    assert [(r["id"], r["name"], r["content"]) for r in body["result"]["patches"]] == [
        (m["id"], "p2." + zone, "192.0.2.22")] * 2
    expect_answer(srv, "p2." + zone, "A", rdatas("A", "192.0.2.22"))
    expect_nxdomain(srv, "to." + zone)
    # one TTL per RRset: each write gives its TTL to the records written
    # before it in the batch; the result shows the records as stored after it
    body = api.ok("POST", path, json={
        "puts": [{"id": m["id"], "name": "p2." + zone, "type": "A", "content": "192.0.2.23",
                  "ttl": 120}],
        "posts": [{"name": "p2." + zone, "type": "A", "content": "192.0.2.24", "ttl": 60},
                  {"name": "P2." + zone, "type": "A", "content": "192.0.2.25", "ttl": 600}]})
    res = body["result"]
    assert [(r["content"], r["ttl"]) for r in res["puts"] + res["posts"]] == [
        ("192.0.2.23", 600), ("192.0.2.24", 600), ("192.0.2.25", 600)]
    assert sorted((r["content"], r["ttl"]) for r in api.records(zid, name="p2." + zone)) == [
        ("192.0.2.23", 600), ("192.0.2.24", 600), ("192.0.2.25", 600)]
    expect_answer(srv, "p2." + zone, "A", rdatas("A", "192.0.2.23", "192.0.2.24", "192.0.2.25"),
                  ttl=600)


def test_batch_names_with_any_octet(srv, api):
    """Names of a batch that hold escaped octets (NUL, a dot inside a label,
    octets above ASCII, which have no case) are one node exactly when they
    are one name: the rules see them so within one batch."""
    zid, zone = new_zone(api, "boct")
    path = "/zones/%s/dns_records/batch" % zid
    target = {"type": "CNAME", "content": "t." + zone}

    def a(name, content="192.0.2.1"):
        return {"name": name + "." + zone, "type": "A", "content": content}

    refused_batches(api, srv, zid, zone, [
        ({"posts": [dict(target, name="n\\000." + zone), a("n\\000")]}, 400),
        ({"posts": [dict(target, name="a\\065." + zone), a("aa")]}, 400),
        ({"posts": [a("d\\.o"), a("D\\.O")]}, 400),
        ({"posts": [a("\\000\\196"), a("\\000\\196")]}, 400),
    ])
    body = api.ok("POST", path, json={"posts": [
        dict(target, name="n\\000." + zone), a("n"), a("n\\000\\000"),
        dict(target, name="d\\.o." + zone), a("d.o"),
        dict(target, name="\\196." + zone), a("\\228"),
        a("\\000\\196"), a("\\000\\196", "192.0.2.2")]})
    assert len(body["result"]["posts"]) == 9
    expect_answer(srv, "n\\000." + zone, "CNAME", rdatas("CNAME", "t.%s." % zone))
    expect_answer(srv, "n." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_answer(srv, "n\\000\\000." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_answer(srv, "d\\.o." + zone, "CNAME", rdatas("CNAME", "t.%s." % zone))
    expect_answer(srv, "d.o." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_answer(srv, "\\196." + zone, "CNAME", rdatas("CNAME", "t.%s." % zone))
    expect_answer(srv, "\\228." + zone, "A", rdatas("A", "192.0.2.1"))
    expect_answer(srv, "\\000\\196." + zone, "A", rdatas("A", "192.0.2.1", "192.0.2.2"))
    # the same names, each op seeing the last: move the A away from n, a
    # CNAME in its place; the NUL name's CNAME deleted, an A posted there
    recs = {(r["name"], r["type"]): r for r in api.records(zid)}
    n_a = recs[("n." + zone, "A")]
    n0 = recs[("n\\000." + zone, "CNAME")]
    api.ok("POST", path, json={
        "deletes": [{"id": n0["id"]}],
        "patches": [{"id": n_a["id"], "name": "n\\000." + zone}],
        "posts": [dict(target, name="N." + zone), a("n\\000", "192.0.2.3")]})
    expect_answer(srv, "n." + zone, "CNAME", rdatas("CNAME", "t.%s." % zone))
    expect_answer(srv, "n\\000." + zone, "A", rdatas("A", "192.0.2.1", "192.0.2.3"))


IMPORT_TEXT = """\
$ORIGIN {zone}.
$TTL 300
@        3600 IN SOA ns9.elsewhere. h.elsewhere. 77 1 1 1 1
www           IN A     192.0.2.80
www           IN A     192.0.2.81
www           IN AAAA  2001:db8::80
@             IN MX    10 mail
mail     60   IN A     192.0.2.25
alias         IN CNAME www
txt           IN TXT   "two words" "and more"
_sip._tcp     IN SRV   10 5 5060 sip.{zone}.
sub           IN NS    ns.sub
ns.sub        IN A     192.0.2.53
*.wild        IN A     192.0.2.99
"""


def test_import_adds_records_and_bad_files_change_nothing(srv, api):
    zid, zone = new_zone(api, "imp")
    v0 = serial(srv, zone)
    text = IMPORT_TEXT.format(zone=zone)
    r = api.call("POST", "/zones/%s/dns_records/import" % zid,
                 files={"file": ("zone.txt", text, "text/plain")})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["zone_version"] == v0 + 1
    assert body["result"]["recs_added"] == 11
    expect_serial(srv, zone, v0 + 1)
    soa, _ = served_soa(srv, zone)
    assert soa.mname == dns.name.from_text("ns1." + zone), "the imported SOA is skipped"
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.80", "192.0.2.81"), ttl=300)
    expect_answer(srv, "mail." + zone, "A", rdatas("A", "192.0.2.25"), ttl=60)
    expect_answer(srv, zone, "MX", rdatas("MX", "10 mail.%s." % zone))
    expect_answer(srv, "txt." + zone, "TXT", rdatas("TXT", '"two words" "and more"'))
    expect_answer(srv, "x.wild." + zone, "A", rdatas("A", "192.0.2.99"))
    m = ask(srv, "host.sub." + zone, "A")
    assert m.rcode() == dns.rcode.NOERROR and not (m.flags & dns.flags.AA), "referral"
    # a raw body works too, and a bad file changes nothing
    r = api.call("POST", "/zones/%s/dns_records/import" % zid, data="raw 120 IN A 192.0.2.7\n")
    assert r.status_code == 200, r.text
    expect_answer(srv, "raw." + zone, "A", rdatas("A", "192.0.2.7"), ttl=120)
    # lines ending in CRLF (a form encoder's, Cloudflare's TypeScript SDK
    # sends a string so; a Windows file) were refused: taken now
    r = api.call("POST", "/zones/%s/dns_records/import" % zid,
                 files={"file": ("zone.txt", "crlf1 60 IN A 192.0.2.31\r\n"
                                 "crlf2 60 IN TXT \"a b\"\r\n", "text/plain")})
    assert r.status_code == 200 and r.json()["result"]["recs_added"] == 2, r.text
    expect_answer(srv, "crlf2." + zone, "TXT", rdatas("TXT", '"a b"'), ttl=60)
    # a CR not before an LF is still refused
    r = api.call("POST", "/zones/%s/dns_records/import" % zid, data="cr 60 IN A 192.0.2.32\r")
    assert r.status_code == 400, r.text
    before = snapshot(api, srv, zid, zone)
    for bad in ("ok1 IN A 192.0.2.8\nbroken IN A 999.0.0.1\n",
                "ok2 IN A 192.0.2.8\nout.of.zone.example. IN A 192.0.2.8\n",
                "www IN CNAME elsewhere.example.\n"):
        r = api.call("POST", "/zones/%s/dns_records/import" % zid,
                     files={"file": ("bad.txt", bad, "text/plain")})
        assert 400 <= r.status_code < 500, (bad, r.status_code, r.text)
        assert_error(r, r.status_code, None)
    assert snapshot(api, srv, zid, zone) == before
    expect_nxdomain(srv, "ok1." + zone)


def test_export_then_import_round_trip(srv, api):
    zid, zone = new_zone(api, "exp")
    r = api.call("POST", "/zones/%s/dns_records/import" % zid, data=IMPORT_TEXT.format(zone=zone))
    assert r.status_code == 200, r.text
    # export: a master file with exactly the listed records
    r = api.call("GET", "/zones/%s/dns_records/export" % zid)
    assert r.status_code == 200, r.text
    exported = dns.zone.from_text(r.text, origin=zone + ".", relativize=False,
                                  check_origin=False)
    listed = api.records(zid)
    want = {(r["name"] + ".", r["type"], r["ttl"], rdata_of(r).to_text())
            for r in listed if r["type"] != "SOA"}
    got = {(n.to_text(), dns.rdatatype.to_text(rds.rdtype), rds.ttl, rd.to_text())
           for n, rds in exported.iterate_rdatasets() for rd in rds
           if rds.rdtype != dns.rdatatype.SOA}
    assert got == want
    # import the export into a new zone: the same records (SOA and apex NS are the new zone's)
    zid2, zone2 = new_zone(api, "imp")
    text2 = r.text.replace(zone + ".", zone2 + ".")
    r = api.call("POST", "/zones/%s/dns_records/import" % zid2, data=text2)
    assert r.status_code == 200, r.text

    def norm(recs, z):
        return sorted((x["name"][:-len(z)], x["type"], x["ttl"],
                       rdata_of(x).to_text().replace(z + ".", "ZONE."))
                      for x in recs if x["type"] != "SOA")

    assert norm(api.records(zid2), zone2) == norm(api.records(zid), zone)
    expect_answer(srv, "www." + zone2, "A", rdatas("A", "192.0.2.80", "192.0.2.81"), ttl=300)


def test_zone_version_grows_by_one_per_write_request(srv, api):
    zid, zone = new_zone(api, "ver")
    v = serial(srv, zone)
    rec = None
    base = "/zones/%s" % zid
    steps = [
        ("POST", base + "/dns_records", lambda: {"name": "a." + zone, "type": "A", "content": "192.0.2.1"}),
        ("POST", base + "/dns_records", lambda: {"name": "a." + zone, "type": "A", "content": "192.0.2.2"}),
        ("PATCH", None, lambda: {"content": "192.0.2.3"}),
        ("PUT", None, lambda: {"name": "b." + zone, "type": "A", "content": "192.0.2.4"}),
        ("POST", base + "/dns_records/batch",
         lambda: {"posts": [{"name": "c%d.%s" % (i, zone), "type": "A", "content": "192.0.2.%d" % i}
                            for i in range(1, 20)]}),
        ("PATCH", base, lambda: {"default_ttl": 120}),
        ("POST", base + "/dns_records/import", None),
        ("DELETE", None, None),
    ]
    for method, path, make in steps:
        kw = {}
        if make is not None:
            kw["json"] = make()
        elif method == "POST":
            kw["data"] = "imported IN A 192.0.2.200\n"
        if path is None:
            path = base + "/dns_records/" + rec["id"]
        r = api.call(method, path, **kw)
        assert r.status_code == 200, (method, path, r.text)
        body = r.json()
        assert body["zone_version"] == v + 1, (method, path, body.get("zone_version"), v)
        assert int(r.headers["X-Zone-Version"]) == v + 1
        v += 1
        if body["result"] and "type" in body["result"] and path.endswith("/dns_records"):
            rec = body["result"]
        expect_serial(srv, zone, v)
        # a refused request in between: no version
        assert api.call("POST", base + "/dns_records",
                        json={"name": "x", "type": "A", "content": "nope"}).status_code == 400
    assert api.get(base)["serial"] == v
    expect_serial(srv, zone, v)


def test_propagation_receipt_with_wait(srv, api):
    zid, zone = new_zone(api, "prop")
    _, v = post_record(api, zid, name="p." + zone, type="A", content="192.0.2.1")
    t0 = time.monotonic()
    r = api.get("/zones/%s/propagation" % zid, params={"version": v, "wait": 5})
    assert time.monotonic() - t0 < 2
    assert r["version"] == v and r["live"] is True and r["edge_version"] >= v
    # when the receipt says live, DNS answers (no polling needed)
    m = ask(srv, "p." + zone, "A")
    assert answer(m, "p." + zone, "A") == rdatas("A", "192.0.2.1"), describe(m)
    assert serial(srv, zone) >= v
    # an older version is live too; a future one is not, after waiting about the given time
    assert api.get("/zones/%s/propagation" % zid, params={"version": v - 1})["live"] is True
    t0 = time.monotonic()
    r = api.get("/zones/%s/propagation" % zid, params={"version": v + 50, "wait": 0.3})
    took = time.monotonic() - t0
    assert r["live"] is False and r["edge_version"] == v
    assert 0.25 <= took < 2, took
    # a write while someone waits for it
    import threading
    got = {}

    def waiter():
        got["r"] = api.ok("GET", "/zones/%s/propagation" % zid,
                          params={"version": v + 1, "wait": 5})["result"]
        got["t"] = time.monotonic()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.2)
    post_record(api, zid, name="q." + zone, type="A", content="192.0.2.2")
    t_write = time.monotonic()
    t.join(10)
    assert got["r"]["live"] is True and got["t"] - t_write < 1.0
    for bad in ({"version": "x"}, {}, {"version": v, "wait": "long"}):
        r = api.call("GET", "/zones/%s/propagation" % zid, params=bad)
        assert r.status_code == 400, (bad, r.text)


def test_long_polls_hold_no_records_store_connection(srv, api):
    """More propagation long polls than the API's 16 records store
    connections: the waits hold none, so every other request (reads and
    writes) is answered at once meanwhile, not after the waits or with 503."""
    import threading
    from servers import ApiClient
    zid, zone = new_zone(api, "polls")
    _, v = post_record(api, zid, name="p." + zone, type="A", content="192.0.2.1")
    results = []

    def poll():
        c = ApiClient(api.base_url, api.token)
        r = c.call("GET", "/zones/%s/propagation" % zid,
                   params={"version": v + 1000, "wait": 4})
        results.append((r.status_code, r.json()["result"]["live"]))

    threads = [threading.Thread(target=poll) for _ in range(24)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert all(t.is_alive() for t in threads)  # All still waiting.
    t1 = time.monotonic()
    api.get("/zones")
    post_record(api, zid, name="q." + zone, type="A", content="192.0.2.2")
    took = time.monotonic() - t1
    for t in threads:
        t.join(30)
    assert took < 2, took  # Was 10 s and 503 for the write.
    assert len(results) == 24 and set(results) == {(200, False)}, results
    assert time.monotonic() - t0 >= 4


def zoneversion(m):
    """The ZONEVERSION option (RFC 9660) of a response: (label count, type, serial) or None."""
    for o in m.options:
        if o.otype == 19:
            wire = o.to_wire()
            assert len(wire) == 6, wire
            return wire[0], wire[1], int.from_bytes(wire[2:6], "big")
    return None


def test_answers_carry_the_zone_version_when_asked(srv, api):
    """RFC 9660: the answer says which zone version produced it."""
    import dns.edns
    zid, zone = new_zone(api, "zv")
    _, v = post_record(api, zid, name="a." + zone, type="A", content="192.0.2.1")
    opt = [dns.edns.GenericOption(19, b"")]
    deadline = time.monotonic() + DNS_WAIT
    while True:
        m = srv.query("a." + zone, "A", options=opt, timeout=0.5)
        if answer(m, "a." + zone, "A") or time.monotonic() > deadline:
            break
    assert answer(m, "a." + zone, "A") == rdatas("A", "192.0.2.1"), describe(m)
    assert zoneversion(m) == (len(zone.split(".")), 0, v)
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"name": "b." + zone, "type": "A", "content": "192.0.2.2"})
    expect_serial(srv, zone, v + 1)     # the write is live (slow under ASan)
    m = expect_nxdomain(srv, "nothing." + zone)
    m = srv.query("nothing." + zone, "A", options=opt, timeout=0.5)
    assert zoneversion(m) == (len(zone.split(".")), 0, v + 1)
    m = srv.query("a." + zone, "A", timeout=0.5)
    assert zoneversion(m) is None, "only when the query asks for it"


def test_unknown_paths_and_methods(srv, api):
    zid, zone = new_zone(api, "path")
    for method, path in (("GET", "/nothing"), ("GET", "/zones/%s/nothing" % zid),
                         ("GET", "/zones/%s/dns_records/%s/more" % (zid, "f" * 32))):
        r = api.call(method, path)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.json()["success"] is False
    r = api.call("DELETE", "/zones")
    assert r.status_code in (404, 405), r.text
    assert r.json()["success"] is False


# ------------------------------------------------------------------ python3-cloudflare

try:
    import CloudFlare
except ImportError:     # the tests below skip
    CloudFlare = None
EXAMPLES = "/usr/share/doc/python3-cloudflare/examples"


@pytest.fixture
def cf_env(srv, tmp_path, monkeypatch):
    """Environment for the library: base URL and token from the environment,
    no config file (the library reads ./.cloudflare.cfg and ~/.cloudflare.cfg)."""
    if CloudFlare is None:
        pytest.skip("python3-cloudflare not installed")
    token = srv.create_token()
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLOUDFLARE_", "CF_API_"))}
    env.update(HOME=str(home), CLOUDFLARE_API_URL=srv.api_url, CLOUDFLARE_API_TOKEN=token)
    for k in list(os.environ):
        if k.startswith(("CLOUDFLARE_", "CF_API_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    return env


def test_cloudflare_library_round_trip(srv, api, cf_env, monkeypatch):
    monkeypatch.setenv("CLOUDFLARE_API_URL", cf_env["CLOUDFLARE_API_URL"])
    monkeypatch.setenv("CLOUDFLARE_API_TOKEN", cf_env["CLOUDFLARE_API_TOKEN"])
    zid, zone = new_zone(api, "cf")
    cf = CloudFlare.CloudFlare()
    zones = cf.zones.get(params={"name": zone})
    assert [z["id"] for z in zones] == [zid]
    # create
    r = cf.zones.dns_records.post(zid, data={"name": "www." + zone, "type": "A",
                                             "content": "192.0.2.1", "ttl": 300,
                                             "proxied": False})
    rid = r["id"]
    assert r["name"] == "www." + zone and r["proxied"] is False
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.1"), ttl=300)
    cf.zones.dns_records.post(zid, data={"name": "@", "type": "MX", "content": "mail." + zone,
                                         "priority": 10})
    expect_answer(srv, zone, "MX", rdatas("MX", "10 mail.%s." % zone))
    # list, with the filters the library passes through
    listed = cf.zones.dns_records.get(zid, params={"name": "www." + zone, "type": "A",
                                                   "match": "all"})
    assert [x["id"] for x in listed] == [rid]
    assert len(cf.zones.dns_records.get(zid, params={"per_page": 100})) >= 4
    assert cf.zones.dns_records.get(zid, rid)["content"] == "192.0.2.1"
    # edit: put, then patch
    r = cf.zones.dns_records.put(zid, rid, data={"name": "www." + zone, "type": "A",
                                                 "content": "192.0.2.2", "ttl": 600,
                                                 "proxied": False})
    assert r["content"] == "192.0.2.2"
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.2"), ttl=600)
    r = cf.zones.dns_records.patch(zid, rid, data={"name": "web." + zone})
    assert r["name"] == "web." + zone
    expect_answer(srv, "web." + zone, "A", rdatas("A", "192.0.2.2"))
    expect_nxdomain(srv, "www." + zone)
    # errors come back as CloudFlareAPIError with zonecast's code and message
    with pytest.raises(CloudFlare.exceptions.CloudFlareAPIError) as ei:
        cf.zones.dns_records.post(zid, data={"name": "bad." + zone, "type": "A", "content": "bad"})
    assert str(ei.value).startswith("content:")
    expect_nxdomain(srv, "bad." + zone)
    # delete
    r = cf.zones.dns_records.delete(zid, rid)
    assert r["id"] == rid
    expect_nxdomain(srv, "web." + zone)
    assert cf.zones.dns_records.get(zid, params={"name": "web." + zone}) == []


def test_cloudflare_library_constructor_arguments(srv, api, cf_env):
    """token= and base_url= given to the constructor, nothing in the environment."""
    zid, zone = new_zone(api, "cfarg")
    cf = CloudFlare.CloudFlare(token=cf_env["CLOUDFLARE_API_TOKEN"], base_url=srv.api_url)
    r = cf.zones.dns_records.post(zid, data={"name": "k." + zone, "type": "TXT",
                                             "content": '"from the library"'})
    expect_answer(srv, "k." + zone, "TXT", rdatas("TXT", '"from the library"'))
    cf.zones.dns_records.delete(zid, r["id"])
    expect_nxdomain(srv, "k." + zone, "TXT")
    # a zone created through the library is served
    name = "cfzone%d.api.test" % next(_seq)
    z = cf.zones.post(data={"name": name, "jump_start": False})
    assert z["name"] == name
    wait_dns(srv, name, "SOA", lambda m: is_auth(m, dns.rcode.NOERROR) and m.answer, "SOA")
    cf.zones.delete(z["id"])
    expect_refused(srv, name)
    # a read-only token: the library raises the 403
    ro = CloudFlare.CloudFlare(token=srv.create_token(read_only=True), base_url=srv.api_url)
    assert ro.zones.dns_records.get(zid, params={"name": "k." + zone}) == []
    with pytest.raises(CloudFlare.exceptions.CloudFlareAPIError):
        ro.zones.dns_records.post(zid, data={"name": "ro." + zone, "type": "A",
                                             "content": "192.0.2.1"})
    expect_nxdomain(srv, "ro." + zone)


def test_cloudflare_library_import(srv, api, cf_env):
    zid, zone = new_zone(api, "cfimp")
    cf = CloudFlare.CloudFlare(token=cf_env["CLOUDFLARE_API_TOKEN"], base_url=srv.api_url)
    text = "imp 300 IN A 192.0.2.31\nimp 300 IN TXT \"x\"\n"
    r = cf.zones.dns_records.import_.post(zid, files={"file": ("zone.txt", text)})
    assert r["recs_added"] == 2
    expect_answer(srv, "imp." + zone, "A", rdatas("A", "192.0.2.31"), ttl=300)
    expect_answer(srv, "imp." + zone, "TXT", rdatas("TXT", '"x"'), ttl=300)


def test_cloudflare_library_export(srv, api, cf_env):
    zid, zone = new_zone(api, "cfexp")
    cf = CloudFlare.CloudFlare(token=cf_env["CLOUDFLARE_API_TOKEN"], base_url=srv.api_url)
    cf.zones.dns_records.post(zid, data={"name": "imp." + zone, "type": "A",
                                         "content": "192.0.2.31", "ttl": 300})
    exported = cf.zones.dns_records.export.get(zid)
    z = dns.zone.from_text(exported, origin=zone + ".", relativize=False, check_origin=False)
    assert z.find_rdataset("imp.%s." % zone, "A").ttl == 300


def run_client(cf_env, argv, cwd):
    cp = subprocess.run(argv, env=cf_env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, "%s -> %d\n%s%s" % (argv, cp.returncode, cp.stdout, cp.stderr)
    return cp.stdout


def test_cli4_command(srv, api, cf_env):
    """The `cli4` command, as documented upstream (`cli4 --post name=... /zones/:ID/dns_records`)."""
    cli4 = shutil.which("cli4")
    if cli4 is None:
        pytest.skip("no cli4 command: Debian's python3-cloudflare 2.11.1-1 ships only the "
                    "library (see test_cloudflare_example_programs for the subprocess check)")
    import json
    zid, zone = new_zone(api, "cli")
    home = cf_env["HOME"]
    out = run_client(cf_env, [cli4, "--post", "name=www." + zone, "type=A", "content=192.0.2.1",
                              "/zones/:%s/dns_records" % zid], home)
    rid = json.loads(out)["id"]
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.1"))
    out = run_client(cf_env, [cli4, "name=www." + zone, "/zones/:%s/dns_records" % zid], home)
    assert [r["id"] for r in json.loads(out)] == [rid]
    run_client(cf_env, [cli4, "--put", "name=www." + zone, "type=A", "content=192.0.2.2",
                        "/zones/:%s/dns_records/:%s" % (zid, rid)], home)
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.2"))
    run_client(cf_env, [cli4, "--patch", "content=192.0.2.3",
                        "/zones/:%s/dns_records/:%s" % (zid, rid)], home)
    expect_answer(srv, "www." + zone, "A", rdatas("A", "192.0.2.3"))
    run_client(cf_env, [cli4, "--delete", "/zones/:%s/dns_records/:%s" % (zid, rid)], home)
    expect_nxdomain(srv, "www." + zone)


def example(name):
    path = os.path.join(EXAMPLES, name)
    if not os.path.exists(path):
        pytest.skip("%s not shipped" % path)
    return [sys.executable, path]


def test_cloudflare_example_delete_zone_entry(srv, api, cf_env):
    """example_delete_zone_entry.py ZONE NAME, a program shipped with
    python3-cloudflare, run as a command with only CLOUDFLARE_API_URL and
    CLOUDFLARE_API_TOKEN set: finds the zone by name, lists the records of NAME
    and deletes each. (The Debian package has no cli4 command.)"""
    zid, zone = new_zone(api, "exdel")
    cf = CloudFlare.CloudFlare(token=cf_env["CLOUDFLARE_API_TOKEN"], base_url=srv.api_url)
    for rec in ({"name": "foo." + zone, "type": "A", "content": "192.168.0.1"},
                {"name": "foo." + zone, "type": "AAAA", "content": "2001:d8b::1"},
                {"name": "ding." + zone, "type": "A", "content": "216.58.194.206"}):
        cf.zones.dns_records.post(zid, data=rec)
    expect_answer(srv, "foo." + zone, "AAAA", rdatas("AAAA", "2001:d8b::1"))
    out = run_client(cf_env, example("example_delete_zone_entry.py") + [zone, "foo"], cf_env["HOME"])
    assert out.count("DELETED") == 2, out
    expect_nxdomain(srv, "foo." + zone, "A")
    expect_nxdomain(srv, "foo." + zone, "AAAA")
    expect_answer(srv, "ding." + zone, "A", rdatas("A", "216.58.194.206"))
    assert api.records(zid, name="foo." + zone) == []
    out = run_client(cf_env, example("example_delete_zone_entry.py") + [zone, "foo"], cf_env["HOME"])
    assert "RECORD NOT FOUND" in out


def test_cloudflare_example_create_zone_and_populate(srv, api, cf_env):
    """example_create_zone_and_populate.py ZONE: creates the zone, prints its
    owner, plan and status, creates six records (relative names) and PUTs each
    back, then lists them."""
    zone = "example%d.api.test" % next(_seq)
    out = run_client(cf_env, example("example_create_zone_and_populate.py") + [zone],
                     cf_env["HOME"])
    assert "Read back DNS records" in out
    api.zone_id(zone)
    expect_answer(srv, "ding." + zone, "A", rdatas("A", "216.58.194.206"))
    expect_answer(srv, "foo." + zone, "AAAA", rdatas("AAAA", "2001:d8b::1"))
    expect_answer(srv, "foo." + zone, "A", rdatas("A", "192.168.0.1"))
    expect_answer(srv, "duh." + zone, "A", rdatas("A", "10.0.0.1"))
    expect_answer(srv, "bar." + zone, "CNAME", rdatas("CNAME", "foo.%s." % zone))
    expect_answer(srv, "shakespeare." + zone, "TXT",
                  rdatas("TXT", '"What\'s in a name? That which we call a rose by any other '
                                'name would smell as sweet."'))


def test_cloudflare_example_dns_export(srv, api, cf_env):
    """example_dns_export.py ZONE prints the zone's master file."""
    zid, zone = new_zone(api, "exexp")
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"name": "ding." + zone, "type": "A", "content": "216.58.194.206"})
    out = run_client(cf_env, example("example_dns_export.py") + [zone], cf_env["HOME"])
    z = dns.zone.from_text(out, origin=zone + ".", relativize=False, check_origin=False)
    assert {rd.to_text() for rd in z.find_rdataset("ding.%s." % zone, "A")} == {"216.58.194.206"}
