"""Outside test of commit 19af210: the answers of POST .../dns_records/batch
and GET .../dns_records (record listings) written as JSON text
(src/api/json_text.c, api_record_json_text(), envelope_text(),
api_list_result_text()) instead of jansson objects.

Claims checked:

- every answer is strict JSON in UTF-8 (no duplicate keys, no NaN);
- the envelope's keys and their order: success, errors, messages, result,
  result_info (listings), zone_version (writes), zone_live (?wait=live);
- each record of a listing or of a batch's answer is, byte for byte, what
  GET .../dns_records/{id} answers for it (that one still jansson's
  json_dumps(JSON_COMPACT)), keys in the same order, priority last;
- comments and tags with quotes, backslashes, control characters and
  Unicode come back as written; TXT with odd octets, names with escapes;
- result_info's count is the page's length, total_count and total_pages
  agree with the records;
- the audit line of a batch names its record ids in the answer's order,
  20 of them and "+N more";
- differential (ZONECAST_OLD_BIN, the binary of 7fcf351; skipped when
  unset): the same request sequence on a fresh server of each binary gives
  the same status, headers and bytes once times and the SOA serial are
  abstracted, and the same audit ids.

Runs on both records stores (ZONECAST_TEST_RECORDS=postgresql).
"""

import json
import os
import random
import re
import sqlite3
import time

import pytest

import servers
from test_audit import fields as audit_fields  # a text audit line's key=value pairs

OLD_BIN = os.environ.get("ZONECAST_OLD_BIN")
RECORD_KEYS = ["id", "zone_id", "zone_name", "name", "type", "content", "ttl", "proxied",
               "proxiable", "comment", "tags", "created_on", "modified_on", "meta"]
DATA_TYPES = ("CAA", "CERT", "DS", "HTTPS", "SVCB", "NAPTR", "SMIMEA", "TLSA", "SRV", "SSHFP", "LOC",
              "URI")
TIME_RE = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
SERIAL_RE = re.compile(rb"(hostmaster\.[^ \"]* )(\d+)( \d+ \d+ \d+ \d+)")
ID_RE = re.compile(rb"[0-9a-f]{32}")


# ------------------------------------------------------------- raw JSON text

def _value_end(s, i):
    """End of the JSON value starting at s[i] (compact text)."""
    c = s[i]
    if c == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    if c in "{[":
        depth = 0
        while True:
            c = s[i]
            if c == '"':
                i = _value_end(s, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    j = i
    while j < len(s) and s[j] not in ",}]":
        j += 1
    return j


def raw_members(s):
    """[(key, raw value text)] of the object text s, in order."""
    assert s[0] == "{", s[:80]
    out, i = [], 1
    if s[i] == "}":
        return out
    while True:
        k = _value_end(s, i)
        key = json.loads(s[i:k])
        assert s[k] == ":", s[k - 20:k + 20]
        v = _value_end(s, k + 1)
        out.append((key, s[k + 1:v]))
        if s[v] == "}":
            assert v == len(s) - 1, "text after the object: %r" % s[v:v + 80]
            return out
        assert s[v] == ",", s[v - 20:v + 20]
        i = v + 1


def raw_elements(s):
    """[raw element text] of the array text s."""
    assert s[0] == "[", s[:80]
    out, i = [], 1
    if s[i] == "]":
        return out
    while True:
        v = _value_end(s, i)
        out.append(s[i:v])
        if s[v] == "]":
            assert v == len(s) - 1
            return out
        assert s[v] == ",", s[v - 20:v + 20]
        i = v + 1


def _no_dups(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "duplicate keys: %r" % keys
    return dict(pairs)


def _no_constant(name):
    raise AssertionError("non-JSON constant %s" % name)


def strict_json(body):
    """The bytes as UTF-8 and strict JSON: (text, value)."""
    text = body.decode("utf-8")  # strict: raises on invalid UTF-8
    return text, json.loads(text, object_pairs_hook=_no_dups, parse_constant=_no_constant)


def envelope(r, keys):
    """A successful answer: checks its keys (and order); its raw members."""
    text, v = strict_json(r.content)
    assert r.headers.get("Content-Type") == "application/json", r.headers
    m = raw_members(text)
    assert [k for k, _ in m] == keys, ([k for k, _ in m], text[:300])
    assert v["success"] is True and v["errors"] == [], text[:500]
    return dict(m), v


def check_record_shape(raw):
    m = raw_members(raw)
    keys = [k for k, _ in m]
    rec = json.loads(raw)
    want = RECORD_KEYS + (["priority"] if rec["type"] in ("MX", "SRV", "URI") else [])
    # Cloudflare's data, last, for the types that have one (when their
    # content reads field by field)
    if rec["type"] in DATA_TYPES and "data" in rec:
        want = want + ["data"]
    assert keys == want, (keys, raw)
    assert rec["proxied"] is False and rec["proxiable"] is False and rec["meta"] == {}
    assert isinstance(rec["ttl"], int) and isinstance(rec["tags"], list)
    return rec


# ---------------------------------------------------------------- helpers

class Api:
    """Wraps an ApiClient; every answer parsed strictly."""

    def __init__(self, srv):
        self.srv = srv
        self.c = srv.client()

    def call(self, method, path, **kw):
        r = self.c.call(method, path, **kw)
        if method != "HEAD":
            strict_json(r.content)
        return r

    def zone(self, name):
        r = self.call("POST", "/zones", json={"name": name})
        assert r.status_code == 200, r.text
        return r.json()["result"]["id"]

    def single_raw(self, zid, rid):
        r = self.call("GET", "/zones/%s/dns_records/%s" % (zid, rid))
        assert r.status_code == 200, r.text
        m, _ = envelope(r, ["success", "errors", "messages", "result"])
        return m["result"]

    def listing(self, zid, **params):
        r = self.call("GET", "/zones/%s/dns_records" % zid, params=params)
        assert r.status_code == 200, (params, r.text[:500])
        m, v = envelope(r, ["success", "errors", "messages", "result", "result_info"])
        items = raw_elements(m["result"])
        info = v["result_info"]
        assert list(info) == ["page", "per_page", "count", "total_count", "total_pages"], info
        assert info["count"] == len(items), (info, len(items))
        pp = info["per_page"]
        assert info["total_pages"] == (info["total_count"] + pp - 1) // pp, info
        return items, info

    def batch(self, zid, body, live=False, status=200):
        path = "/zones/%s/dns_records/batch%s" % (zid, "?wait=live" if live else "")
        r = self.call("POST", path, json=body)
        assert r.status_code == status, r.text[:1000]
        keys = ["success", "errors", "messages", "result", "zone_version"]
        m, v = envelope(r, keys + (["zone_live"] if live else []))
        res = raw_members(m["result"])
        assert [k for k, _ in res] == ["deletes", "patches", "puts", "posts"], m["result"][:200]
        assert int(r.headers["X-Zone-Version"]) == v["zone_version"]
        return {k: raw_elements(x) for k, x in res}, v


def audit_batch_ids(srv, zid, count_before):
    """The ids field of the batch audit lines for zone zid after the first
    count_before of them."""
    def lines():
        return [l for l in srv.log().splitlines()
                if "audit: api accepted" in l and "/zones/%s/dns_records/batch" % zid in l]
    deadline = time.monotonic() + 5
    while len(lines()) <= count_before and time.monotonic() < deadline:
        time.sleep(0.05)
    return [audit_fields(l).get("ids") for l in lines()[count_before:]]


def documented_audit(ids):
    """The ids field as audit.c says it is: 20 ids, then "+N more"."""
    s = ",".join(ids[:20]) if ids else "-"
    if len(ids) > 20:
        s += ",+%d more" % (len(ids) - 20)
    return s


ODD_COMMENTS = [
    'quote " backslash \\ slash / end',
    "ctl \x01\x02\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f del \x7f",
    "latin é ü ß, CJK 漢字, emoji 🦊🧪, BOM \ufeff, ls \u2028 ps \u2029, max \U0010ffff",
    "nonchar \ufffe\uffff private \ue000",
    "",
    "x" * 500,
    "é" * 250,  # 500 bytes
]
ODD_TAGS = [["plain", "k:v"], ["q:\"quoted\"", "b:back\\slash", "u:é漢🦊"],
            ["c:\x01\x1f\t\n"], []]

TXT_CONTENTS = [
    'plain with "inner quotes" and \\ backslash',
    'v=DMARC1; p=none; rua=mailto:a@b.example',
    "utf8 é 漢字 🦊",
    '"quoted" "two\\"parts" "\\200\\255\\000\\001"',
    '"\\195\\169 valid utf8 as escapes"',
    '"\\195" "\\169"',
    "L" * 1000,
    "é" * 300,  # 600 octets: strings of 255 split a character
    '"' + "\\255" * 250 + '"',
]


def fill_zone(api, zid, zname):
    """Records of many types, names and odd fields; their ids."""
    recs = [
        {"name": zname, "type": "MX", "content": "mail.%s" % zname, "priority": 10},
        {"name": "a.%s" % zname, "type": "A", "content": "192.0.2.1", "ttl": 60},
        {"name": "a.%s" % zname, "type": "AAAA", "content": "2001:db8::1", "ttl": 60},
        {"name": "c.%s" % zname, "type": "CNAME", "content": "a.%s" % zname},
        {"name": "_sip._tcp.%s" % zname, "type": "SRV", "content": "5 5060 sip.%s" % zname,
         "priority": 0},
        {"name": "_u._tcp.%s" % zname, "type": "URI", "content": '1 "https://e.example/"',
         "priority": 65535},
        {"name": "caa.%s" % zname, "type": "CAA",
         "content": '0 issue "letsencrypt.org;validationmethods=dns-01"'},
        {"name": "h.%s" % zname, "type": "HINFO", "content": '"\\200cpu" "a;b"'},
        {"name": "n.%s" % zname, "type": "NAPTR", "content": '1 2 "u" "E2U+sip" "" .'},
        {"name": "p.%s" % zname, "type": "PTR", "content": "target.example"},
        {"name": "s.%s" % zname, "type": "SSHFP", "content": "1 1 " + "ab" * 20},
        {"name": "_443._tcp.%s" % zname, "type": "TLSA", "content": "3 1 1 " + "cd" * 32},
        {"name": "svc.%s" % zname, "type": "SVCB", "content": "1 . alpn=h2,h3 port=8443"},
        {"name": "web.%s" % zname, "type": "HTTPS", "content": "1 . alpn=h2"},
        {"name": "loc.%s" % zname, "type": "LOC", "content": "52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m"},
        {"name": "dn.%s" % zname, "type": "DNAME", "content": "other.example"},
        {"name": "g.%s" % zname, "type": "TYPE65000", "content": "\\# 4 00ff0a0b"},
        {"name": "null.%s" % zname, "type": "NULL", "content": "\\# 3 000102"},
        {"name": "spf.%s" % zname, "type": "SPF", "content": "v=spf1 -all"},
        {"name": "rp.%s" % zname, "type": "RP", "content": "admin.example ."},
        {"name": "ds.%s" % zname, "type": "DS", "content": "60485 5 1 " + "2b" * 20},
        {"name": "sub.%s" % zname, "type": "NS", "content": "ns.other.example"},
        {"name": "a\\000b.%s" % zname, "type": "A", "content": "192.0.2.2"},
        {"name": "a\\.b.%s" % zname, "type": "A", "content": "192.0.2.3"},
        {"name": "sp\\032ace.%s" % zname, "type": "A", "content": "192.0.2.4"},
        {"name": "q\\\"uote.%s" % zname, "type": "A", "content": "192.0.2.5"},
        {"name": "back\\\\slash.%s" % zname, "type": "A", "content": "192.0.2.6"},
        {"name": "\\200\\255.%s" % zname, "type": "A", "content": "192.0.2.7"},
        {"name": "é.%s" % zname, "type": "A", "content": "192.0.2.8"},
        {"name": "*.w.%s" % zname, "type": "A", "content": "192.0.2.9"},
        {"name": "\\200" * 63 + "." + "\\001" * 63 + "." + "\\034" * 60 + "." + zname,
         "type": "TXT", "content": '"' + "\\127" * 1000 + '"'},
        {"name": "MiXeD.%s" % zname, "type": "MX", "content": "MAIL.Example", "priority": 1},
        {"name": "ttl0.%s" % zname, "type": "A", "content": "192.0.2.10", "ttl": 0},
        {"name": "ttlmax.%s" % zname, "type": "A", "content": "192.0.2.11", "ttl": 2147483647},
    ]
    for i, t in enumerate(TXT_CONTENTS):
        recs.append({"name": "t%d.%s" % (i, zname), "type": "TXT", "content": t})
    for i, c in enumerate(ODD_COMMENTS):
        recs.append({"name": "cm%d.%s" % (i, zname), "type": "A", "content": "192.0.2.20",
                     "comment": c, "tags": ODD_TAGS[i % len(ODD_TAGS)]})
    ids = []
    for body in recs:
        r = api.call("POST", "/zones/%s/dns_records" % zid, json=body)
        assert r.status_code == 200, (body, r.text)
        ids.append(r.json()["result"]["id"])
    return recs, ids


# ------------------------------------------------------------- new binary

@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return Api(srv)


@pytest.fixture(scope="module")
def filled(api):
    zname = "fill.jt.test"
    zid = api.zone(zname)
    recs, ids = fill_zone(api, zid, zname)
    return zid, zname, recs, ids


def test_listing_records_are_the_single_gets_bytes(api, filled):
    zid, zname, recs, ids = filled
    items, info = api.listing(zid, per_page=1000)
    assert info["total_count"] == len(items) == len(recs) + 3  # SOA, 2 NS
    listed = {}
    for raw in items:
        rec = check_record_shape(raw)
        listed[rec["id"]] = raw
    assert set(ids) <= set(listed)
    for rid, raw in listed.items():
        assert api.single_raw(zid, rid) == raw, rid
    # what was written comes back
    by_id = {rid: json.loads(listed[rid]) for rid in ids}
    for body, rid in zip(recs, ids):
        got = by_id[rid]
        if "comment" in body:
            assert got["comment"] == body["comment"], (body, got)
            assert got["tags"] == body["tags"], (body, got)
        if body["type"] == "TXT" and not body["content"].startswith('"'):
            assert got["content"] == body["content"]
        if "priority" in body:
            assert got["priority"] == body["priority"]
    soa = [json.loads(r) for r in items if json.loads(r)["type"] == "SOA"]
    assert len(soa) == 1 and "priority" not in soa[0]


def test_pages_orders_filters(api, filled):
    zid, zname, recs, ids = filled
    full, info = api.listing(zid, per_page=50000)
    n = info["total_count"]
    assert len(full) == n
    # pages of 1, 7: the pages put together are the whole listing
    for pp in (1, 7):
        got = []
        for page in range(1, (n + pp - 1) // pp + 1):
            items, inf = api.listing(zid, per_page=pp, page=page)
            assert inf["page"] == page and inf["total_count"] == n
            got += items
        assert got == full
    # past the end, far past the end: an empty page
    for page in (n + 1, 100000000):
        items, inf = api.listing(zid, per_page=1, page=page)
        assert items == [] and inf["count"] == 0 and inf["total_count"] == n
    # orders and directions: a permutation of the records, same bytes
    for order in ("name", "type", "content", "ttl", "proxied"):
        for d in ("asc", "desc"):
            items, inf = api.listing(zid, order=order, direction=d, per_page=1000)
            assert sorted(items) == sorted(full), (order, d)
            page2, _ = api.listing(zid, order=order, direction=d, per_page=5, page=2)
            assert page2 == items[5:10], (order, d)
    # filters: store path and checked path, match all/any
    items, inf = api.listing(zid, type="TXT", per_page=1000)
    assert inf["count"] == len(TXT_CONTENTS) + 1  # and the long name's
    items, inf = api.listing(zid, type="TXT", name="t0.%s" % zname, match="any", per_page=3)
    assert inf["total_count"] == len(TXT_CONTENTS) + 1 and len(items) == 3
    items, inf = api.listing(zid, **{"comment.contains": "🦊", "per_page": 1000})
    assert len(items) == 1 and json.loads(items[0])["comment"] == ODD_COMMENTS[2]
    items, inf = api.listing(zid, search="é", per_page=1000)
    assert items and all(i in full for i in items)
    items, inf = api.listing(zid, type="A", **{"content.contains": "nothing-like-this"})
    assert items == [] and inf["total_count"] == 0 and inf["total_pages"] == 0
    items, inf = api.listing(zid, **{"tag.present": "u", "per_page": 1000})
    assert items and all("u:" in json.dumps(json.loads(i)["tags"], ensure_ascii=False)
                         for i in items)
    for raw in full:
        check_record_shape(raw)


def test_empty_zone_listing_and_bad_params(api):
    zid = api.zone("empty.jt.test")
    items, inf = api.listing(zid, type="TXT")
    assert items == [] and inf == {"page": 1, "per_page": 100, "count": 0, "total_count": 0,
                                   "total_pages": 0}
    for params in ({"per_page": 0}, {"per_page": 50001}, {"page": 0}, {"order": "zzz"},
                   {"direction": "up"}, {"match": "some"}, {"bogus": "1"}):
        r = api.call("GET", "/zones/%s/dns_records" % zid, params=params)
        assert r.status_code == 400, (params, r.text)
        v = r.json()
        assert list(v) == ["success", "errors", "messages", "result"] and v["result"] is None
    r = api.call("GET", "/zones/%s/dns_records" % ("f" * 32))
    assert r.status_code == 404 and r.json()["success"] is False
    # HEAD: no body, and no server error
    h = api.call("HEAD", "/zones/%s/dns_records" % zid)
    assert h.content == b"" and h.status_code < 500
    # (HEAD has no route in zonecast, before this commit as after: 404)


def test_batch_answers_and_audit(api, srv):
    zname = "batch.jt.test"
    zid = api.zone(zname)
    n_audit = 0
    # 25 posts with odd fields: the answer, the records, the audit line
    posts = [{"name": "p%02d.%s" % (i, zname), "type": "TXT",
              "content": TXT_CONTENTS[i % len(TXT_CONTENTS)],
              "comment": ODD_COMMENTS[i % len(ODD_COMMENTS)],
              "tags": ODD_TAGS[i % len(ODD_TAGS)]} for i in range(25)]
    posts.append({"name": "mx.%s" % zname, "type": "MX", "content": "m.%s" % zname,
                  "priority": 7})
    res, v = api.batch(zid, {"posts": posts})
    assert [len(res[k]) for k in ("deletes", "patches", "puts", "posts")] == [0, 0, 0, 26]
    ids = []
    for body, raw in zip(posts, res["posts"]):
        rec = check_record_shape(raw)
        assert rec["name"] == body["name"] and rec["comment"] == body.get("comment")
        assert rec["tags"] == body.get("tags", [])
        assert api.single_raw(zid, rec["id"]) == raw
        ids.append(rec["id"])
    assert audit_batch_ids(srv, zid, n_audit) == [documented_audit(ids)]
    n_audit += 1

    # deletes + patches + puts + posts in one batch
    before = {rid: api.single_raw(zid, rid) for rid in ids[:3]}
    body = {
        "deletes": [{"id": ids[0]}, {"id": ids[1]}, {"id": ids[2]}],
        "patches": [{"id": ids[3], "comment": "patched \x00".replace("\x00", "\x01")},
                    {"id": ids[4], "tags": ["z:é"], "ttl": 77}],
        "puts": [{"id": ids[5], "name": posts[5]["name"], "type": "TXT",
                  "content": '"put \\"x\\" \\200"', "comment": None}],
        "posts": [{"name": "new.%s" % zname, "type": "SRV", "content": "1 2 t.%s" % zname,
                   "priority": 3}],
    }
    res, v = api.batch(zid, body)
    assert [json.loads(r)["id"] for r in res["deletes"]] == ids[:3]
    for rid, raw in zip(ids[:3], res["deletes"]):
        assert raw == before[rid]
        assert api.call("GET", "/zones/%s/dns_records/%s" % (zid, rid)).status_code == 404
    order = [json.loads(r)["id"] for k in ("deletes", "patches", "puts", "posts")
             for r in res[k]]
    assert order[:6] == ids[:6]
    for k in ("patches", "puts", "posts"):
        for raw in res[k]:
            rec = check_record_shape(raw)
            assert api.single_raw(zid, rec["id"]) == raw, k
    assert json.loads(res["patches"][0])["comment"] == "patched \x01"
    assert json.loads(res["puts"][0])["comment"] is None
    assert audit_batch_ids(srv, zid, n_audit) == [documented_audit(order)]
    n_audit += 1

    # ?wait=live
    res, v = api.batch(zid, {"posts": [{"name": "live.%s" % zname, "type": "A",
                                        "content": "192.0.2.99"}]}, live=True)
    assert v["zone_live"] is True and len(res["posts"]) == 1
    assert audit_batch_ids(srv, zid, n_audit) == [json.loads(res["posts"][0])["id"]]
    n_audit += 1

    # an empty batch
    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={})
    if r.status_code == 200:
        m, v = envelope(r, ["success", "errors", "messages", "result", "zone_version"])
        assert m["result"] == '{"deletes":[],"patches":[],"puts":[],"posts":[]}', m["result"]
        assert audit_batch_ids(srv, zid, n_audit) == ["-"]
        n_audit += 1
    else:
        assert r.status_code == 400, r.text

    # refused batches: the error envelope; no accepted line
    for bad in ({"posts": [{"name": "live.%s" % zname, "type": "A", "content": "192.0.2.99"}]},
                {"deletes": [{"id": "f" * 32}]},
                {"posts": [{"name": "x.%s" % zname, "type": "A", "content": "nope"}]},
                {"posts": "x"}):
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid, json=bad)
        assert r.status_code in (400, 404, 409), (bad, r.text)
        v = r.json()
        assert list(v) == ["success", "errors", "messages", "result"], r.text
        assert v["success"] is False and v["result"] is None and v["errors"]
    r = api.call("POST", "/zones/%s/dns_records/batch" % zid, data=b'{"posts": [',
                 headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["success"] is False
    assert audit_batch_ids(srv, zid, n_audit) == []

    # listing after the batches: records as single GETs give them
    items, inf = api.listing(zid, per_page=1000)
    for raw in items:
        rec = check_record_shape(raw)
        assert api.single_raw(zid, rec["id"]) == raw


def test_batch_of_1000_and_big_listing(api, srv):
    zname = "big.jt.test"
    zid = api.zone(zname)
    posts = [{"name": "r%04d.%s" % (i, zname), "type": "TXT", "content": "v%d é \"q\" \\" % i,
              "comment": "c%d\x1f" % i, "tags": ["n:%d" % i]} for i in range(1000)]
    res, v = api.batch(zid, {"posts": posts})
    assert len(res["posts"]) == 1000
    ids = [json.loads(r)["id"] for r in res["posts"]]
    assert audit_batch_ids(srv, zid, 0) == [documented_audit(ids)]
    items, inf = api.listing(zid, per_page=50000, order="content", direction="desc")
    assert inf["count"] == inf["total_count"] == 1003
    byid = {json.loads(r)["id"]: r for r in items}
    for raw in res["posts"]:
        assert byid[json.loads(raw)["id"]] == raw
    # deleting them all in one batch answers each as it was
    res2, _ = api.batch(zid, {"deletes": [{"id": i} for i in ids]})
    assert res2["deletes"] == res["posts"]
    assert audit_batch_ids(srv, zid, 1) == [documented_audit(ids)]


def test_not_live_batch_note(zonecast_api_factory, tmp_path):
    """A batch answered 202 with zone_live false and a note in messages (the
    zone's build fails: ZONECAST_FAULT_BUILD)."""
    fault = tmp_path / "fault"
    fault.write_text("")
    s = zonecast_api_factory(zones={}, env={"ZONECAST_FAULT_BUILD": str(fault)},
                             options=[("live-wait", "1500")])
    a = Api(s)
    r = a.call("POST", "/zones?wait=live", json={"name": "q.jt.test"})
    assert r.status_code == 200 and r.json()["zone_live"] is True, r.text
    zid = r.json()["result"]["id"]
    fault.write_text("q.jt.test.\n")
    r = a.call("POST", "/zones/%s/dns_records/batch?wait=live" % zid,
               json={"posts": [{"name": "x.q.jt.test", "type": "A", "content": "192.0.2.1"}]})
    assert r.status_code == 202, r.text
    m, v = envelope(r, ["success", "errors", "messages", "result", "zone_version", "zone_live"])
    assert v["zone_live"] is False and r.headers["X-Zone-Live"] == "false"
    assert len(v["messages"]) == 1 and "not live" in v["messages"][0]["message"], v
    fault.write_text("")


@pytest.mark.skipif(servers.RECORDS_BACKEND != "sqlite", reason="writes SQLite behind the server")
def test_store_octets_behind_the_server(api, srv):
    """A comment or tags the store holds that are not valid UTF-8 or not
    JSON (written behind the server's back): every answer stays valid JSON;
    the record is listed (count agrees)."""
    zname = "raw.jt.test"
    zid = api.zone(zname)
    ids = []
    for i in range(4):
        r = api.call("POST", "/zones/%s/dns_records" % zid,
                     json={"name": "r%d.%s" % (i, zname), "type": "A",
                           "content": "192.0.2.%d" % (i + 1), "comment": "c"})
        ids.append(r.json()["result"]["id"])
    db = sqlite3.connect(os.path.join(srv.data_dir, "records.db"), timeout=10)
    try:
        db.execute("UPDATE records SET comment = CAST(X'61ff62c0afeda080f4908080' AS TEXT)"
                   " WHERE id = ?", (int(ids[0], 16),))
        db.execute("UPDATE records SET tags = '[ \"a\" , \"b:\\u00e9\\u0001\" ]' WHERE id = ?",
                   (int(ids[1], 16),))
        db.execute("UPDATE records SET tags = 'not json' WHERE id = ?", (int(ids[2], 16),))
        db.execute("UPDATE records SET comment = CAST(X'0102037f' AS TEXT) WHERE id = ?",
                   (int(ids[3], 16),))
        db.commit()
    finally:
        db.close()
    items, inf = api.listing(zid, per_page=100)
    assert inf["count"] == inf["total_count"] == 7  # SOA, 2 NS
    got = {json.loads(r)["id"]: json.loads(r) for r in items}
    assert got[ids[0]]["comment"] == "a\xffb\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80"
    assert got[ids[1]]["tags"] == ["a", "b:é\x01"]
    assert got[ids[2]]["tags"] == []
    assert got[ids[3]]["comment"] == "\x01\x02\x03\x7f"
    for rid in ids:
        raw = [r for r in items if json.loads(r)["id"] == rid][0]
        assert api.single_raw(zid, rid) == raw


# ------------------------------------------------------------ differential

def _normalise(body, ids):
    """Times out; ids and versions (serials: times) numbered as they come."""
    body = TIME_RE.sub(b"<T>", body)

    def ver(v):
        return b"<V%d>" % ids.setdefault(b"v" + v, len(ids))
    body = SERIAL_RE.sub(lambda m: m.group(1) + ver(m.group(2)) + m.group(3), body)
    body = re.sub(rb'"zone_version":(\d+)', lambda m: b'"zone_version":' + ver(m.group(1)),
                  body)

    def rid(m):
        return b"<ID%d>" % ids.setdefault(m.group(0), len(ids))
    return ID_RE.sub(rid, body)


def scenario(srv):
    """One request sequence; [(label, status, headers, body)] and the audit
    ids of its batches."""
    a = Api(srv)
    out = []

    def rec(label, r):
        hdr = {k: r.headers.get(k) for k in ("Content-Type", "X-Zone-Version", "X-Zone-Live",
                                             "ETag", "Content-Length")}
        if hdr["X-Zone-Version"]:
            hdr["X-Zone-Version"] = "present"
        if hdr["ETag"]:  # "ID-MODIFIED": the time differs
            hdr["ETag"] = hdr["ETag"].split("-")[0]
        if hdr["Content-Length"] and r.content:
            assert int(hdr["Content-Length"]) == len(r.content)
            hdr["Content-Length"] = None
        out.append((label, r.status_code, hdr, r.content))
        return r

    zname = "diff.jt.test"
    zid = a.zone(zname)
    recs, ids = fill_zone(a, zid, zname)
    P = "/zones/%s/dns_records" % zid
    lists = [{}, {"per_page": 1000}, {"per_page": 1, "page": 3}, {"per_page": 7, "page": 2},
             {"page": 99}, {"per_page": 50000}, {"type": "TXT"}, {"type": "MX"},
             {"name": "a.%s" % zname}, {"name.exact": "a.%s" % zname, "type": "AAAA"},
             {"type": "TXT", "name": "a.%s" % zname, "match": "any"},
             {"content.contains": "192.0.2"}, {"comment.contains": "é"},
             {"comment.absent": ""}, {"tag.exact": "k:v"}, {"tag.present": "u"},
             {"tag_match": "any", "tag.contains": "q:quot", "tag.present": "c"}, {"search": "\\"},
             {"search": "🦊"}, {"proxied": "false"}]
    for order in ("name", "type", "content", "ttl", "proxied"):
        for d in ("asc", "desc"):
            lists.append({"order": order, "direction": d, "per_page": 9, "page": 2})
            lists.append({"order": order, "direction": d})
    lists += [{"per_page": 0}, {"order": "id"}, {"bogus": 1}]
    for p in lists:
        rec("GET %r" % p, a.call("GET", P, params=p))
    rec("HEAD", a.call("HEAD", P))
    for rid in ids:
        rec("GET one", a.call("GET", "%s/%s" % (P, rid)))
    B = P + "/batch"
    rec("batch posts", a.call("POST", B, json={"posts": [
        {"name": "b%02d.%s" % (i, zname), "type": "TXT", "content": TXT_CONTENTS[i % 9],
         "comment": ODD_COMMENTS[i % 7], "tags": ODD_TAGS[i % 4]} for i in range(24)]}))
    bp = [x["id"] for x in json.loads(out[-1][3])["result"]["posts"]]
    rec("batch mixed", a.call("POST", B, json={
        "deletes": [{"id": ids[1]}, {"id": bp[0]}],
        "patches": [{"id": bp[1], "comment": "p\x02"}, {"id": ids[0], "priority": 20}],
        "puts": [{"id": bp[2], "name": "b02.%s" % zname, "type": "TXT", "content": "put"}],
        "posts": [{"name": "u2.%s" % zname, "type": "URI", "content": '2 "x"', "priority": 9}]}))
    rnd = random.Random(7)
    rec("batch random", a.call("POST", B, json={"posts": [
        {"name": "rnd%02d.%s" % (i, zname), "type": "TXT",
         "content": "x" + _random_text(rnd, 200).replace("\n", " ").replace("\r", " "),
         "comment": _random_text(rnd, 500), "tags": ["r:" + _random_text(rnd, 60)]}
        for i in range(60)]}))
    rec("batch live", a.call("POST", B + "?wait=live", json={"posts": [
        {"name": "lv.%s" % zname, "type": "A", "content": "192.0.2.50"}]}))
    rec("batch empty", a.call("POST", B, json={}))
    rec("batch dup", a.call("POST", B, json={"posts": [
        {"name": "lv.%s" % zname, "type": "A", "content": "192.0.2.50"}]}))
    rec("batch bad id", a.call("POST", B, json={"deletes": [{"id": "f" * 32}]}))
    rec("batch bad wait", a.call("POST", B + "?wait=soon", json={}))
    rec("batch broken", a.call("POST", B, data=b'{"posts":[',
                               headers={"Content-Type": "application/json"}))
    rec("GET If-None-Match", a.call("GET", P, headers={"If-None-Match": "*"}))
    for p in ({"per_page": 1000}, {"order": "content", "per_page": 1000},
              {"order": "content", "direction": "desc", "per_page": 13, "page": 3},
              {"search": "r:", "order": "type"}):
        rec("GET after %r" % p, a.call("GET", P, params=p))
    time.sleep(0.3)
    audit = [(audit_fields(l).get("status"), audit_fields(l).get("ids"))
             for l in srv.log().splitlines() if "audit: api" in l and "/batch" in l]
    return out, audit


@pytest.mark.skipif(not OLD_BIN, reason="ZONECAST_OLD_BIN not set")
def test_same_bytes_as_the_old_binary(zonecast_api_factory, tmp_path_factory):
    new = zonecast_api_factory()
    new_out, new_audit = scenario(new)
    saved = os.environ.get("ZONECAST_BIN")
    os.environ["ZONECAST_BIN"] = OLD_BIN
    try:
        old = zonecast_api_factory()
        old_out, old_audit = scenario(old)
    finally:
        if saved is None:
            del os.environ["ZONECAST_BIN"]
        else:
            os.environ["ZONECAST_BIN"] = saved
    assert len(new_out) == len(old_out)
    new_ids, old_ids = {}, {}
    diffs = []
    for (l1, s1, h1, b1), (l2, s2, h2, b2) in zip(new_out, old_out):
        assert l1 == l2
        n1, n2 = _normalise(b1, new_ids), _normalise(b2, old_ids)
        if (s1, h1, n1) != (s2, h2, n2):
            diffs.append((l1, (s1, h1, n1[:3000]), (s2, h2, n2[:3000])))
    assert not diffs, "\n\n".join("%s\n new: %r\n old: %r" % d for d in diffs[:5])
    norm = lambda a, m: [(s, _normalise(x.encode(), m) if x else x) for s, x in a]
    assert norm(new_audit, new_ids) == norm(old_audit, old_ids)
    assert [st for st, _ in new_audit] == ["200"] * 5 + ["400"] * 4, new_audit


def test_audit_names_20_ids_then_more(api, srv):
    """A batch's audit line names its first 20 ids, then "+N more" with N
    the ids left out (before 19af210's fix: 12 ids fit, and N was counted
    from 20 and cut short)."""
    zname = "audit20.jt.test"
    zid = api.zone(zname)
    res, _ = api.batch(zid, {"posts": [{"name": "a%02d.%s" % (i, zname), "type": "A",
                                        "content": "192.0.2.1"} for i in range(25)]})
    ids = [json.loads(r)["id"] for r in res["posts"]]
    assert audit_batch_ids(srv, zid, 0) == [documented_audit(ids)]


def _random_text(rnd, max_bytes):
    """Random Unicode scalar values from every UTF-8 length (no NUL, which
    a JSON body cannot carry to jansson), at most max_bytes octets."""
    out, size = [], 0
    while True:
        k = rnd.random()
        if k < 0.3:
            cp = rnd.randrange(1, 0x80)
        elif k < 0.5:
            cp = rnd.randrange(0x80, 0x800)
        elif k < 0.8:
            cp = rnd.choice([rnd.randrange(0x800, 0xd800), rnd.randrange(0xe000, 0x10000)])
        else:
            cp = rnd.randrange(0x10000, 0x110000)
        n = len(chr(cp).encode())
        if size + n > max_bytes:
            return "".join(out)
        out.append(chr(cp))
        size += n


def test_random_text_same_bytes_as_jansson(api):
    """300 records with random comments, tags and plain TXT content (every
    UTF-8 length, control characters): the batch's answer, the listing
    (three orders) and GET of each record give each record the same bytes,
    and the values written come back."""
    rnd = random.Random(19)
    zname = "rand.jt.test"
    zid = api.zone(zname)
    posts = []
    for i in range(300):
        content = _random_text(rnd, rnd.choice([20, 300, 1000]))
        content = "x" + content.replace("\n", " ").replace("\r", " ")  # plain form
        posts.append({"name": "r%03d.%s" % (i, zname), "type": "TXT", "content": content,
                      "comment": _random_text(rnd, rnd.choice([10, 500])),
                      "tags": ["t%d:%s" % (j, _random_text(rnd, 40)) for j in range(i % 3)]})
    res, _ = api.batch(zid, {"posts": posts})
    assert len(res["posts"]) == 300
    for body, raw in zip(posts, res["posts"]):
        rec = check_record_shape(raw)
        assert rec["comment"] == body["comment"] and rec["tags"] == body["tags"], body
        assert rec["content"] == body["content"], body
        assert api.single_raw(zid, rec["id"]) == raw
    answered = set(res["posts"])
    for order in ("name", "content", "ttl"):
        items, inf = api.listing(zid, per_page=50000, order=order)
        assert answered <= set(items) and inf["count"] == 303


@pytest.mark.skipif(servers.RECORDS_BACKEND != "sqlite", reason="writes SQLite behind the server")
def test_listed_record_readable_by_id(api, srv):
    """A comment that is not UTF-8 (written behind the server's back) is
    read as Latin-1 everywhere: the record is listed, read by its id with
    the same bytes, patched and deleted in a batch, which answers it (it
    was missing from every answer, 404 by id and 500 for a batch deleting
    it, before)."""
    zname = "rawid.jt.test"
    zid = api.zone(zname)
    rid = api.call("POST", "/zones/%s/dns_records" % zid,
                   json={"name": "r.%s" % zname, "type": "A", "content": "192.0.2.1"}
                   ).json()["result"]["id"]
    db = sqlite3.connect(os.path.join(srv.data_dir, "records.db"), timeout=10)
    try:
        db.execute("UPDATE records SET comment = CAST(X'61ff62' AS TEXT) WHERE id = ?",
                   (int(rid, 16),))
        db.commit()
    finally:
        db.close()
    items, _ = api.listing(zid, name="r.%s" % zname)
    assert [json.loads(i)["id"] for i in items] == [rid]
    assert api.call("GET", "/zones/%s/dns_records/%s" % (zid, rid)).status_code == 200
    assert api.single_raw(zid, rid) == items[0]
    assert json.loads(items[0])["comment"] == "a\xffb"
    res, _ = api.batch(zid, {"patches": [{"id": rid, "ttl": 600}]})
    assert [json.loads(r)["comment"] for r in res["patches"]] == ["a\xffb"]
    res, _ = api.batch(zid, {"deletes": [{"id": rid}]})
    assert [json.loads(r)["id"] for r in res["deletes"]] == [rid]
