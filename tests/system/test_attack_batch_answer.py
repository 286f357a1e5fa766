"""Outside test of commit a06d733: POST .../dns_records/batch answers with the
records as the write unit wrote them (its node cache, src/api/node_cache.c)
instead of reading them back after the commit.

The property checked everywhere: with no other writer in between, every
record of the batch's answer ("posts", "puts", "patches") is, field by field
and with the JSON types (false is not 0), what GET .../dns_records/{id}
answers right after; every record of "deletes" is what GET answered right
before the batch, and GET finds it no more. Each list holds one record per
op of the request, in the request's order. A refused batch changes nothing.

test_same_answers_as_the_binary_before_the_change runs one scenario on this
binary and on the one built from the commit before a06d733
(ZONECAST_BASE_BIN, default /tmp/base/build/zonecast; skipped when absent)
and compares the answers with ids and times abstracted.

Run on both records backends (ZONECAST_TEST_RECORDS=postgresql).
"""

import itertools
import json
import os
import re

import pytest

import servers

BASE_BIN = os.environ.get("ZONECAST_BASE_BIN", "/tmp/base/build/zonecast")
LISTS = ("deletes", "patches", "puts", "posts")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
_seq = itertools.count(1)


@pytest.fixture(scope="module")
def api(zonecast_api):
    return zonecast_api.client()


# ------------------------------------------------------------------ helpers

def new_zone(api, prefix="ba", name=None):
    name = name or "%s%d.batch-answer.test" % (prefix, next(_seq))
    body = api.ok("POST", "/zones", json={"name": name})
    return body["result"]["id"], name


def strict(v):
    """A JSON value as text: False and 0, 1 and 1.0 differ."""
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def get_record(api, zid, rid):
    r = api.call("GET", "/zones/%s/dns_records/%s" % (zid, rid))
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, r.text


def field_diff(answered, stored):
    """{field: (answered, stored)} for each field that differs."""
    missing = "<absent>"
    out = {}
    for f in sorted(set(answered) | set(stored)):
        a, s = answered.get(f, missing), stored.get(f, missing)
        if strict(a) != strict(s):
            out[f] = (a, s)
    return out


def check_shape(rec):
    """What every answered record holds, whatever the case."""
    for f in ("id", "zone_id", "zone_name", "name", "type", "content", "ttl", "proxied",
              "proxiable", "comment", "tags", "created_on", "modified_on", "meta"):
        assert f in rec, (f, rec)
    assert TIME_RE.match(rec["created_on"]) and TIME_RE.match(rec["modified_on"]), rec
    assert rec["created_on"] <= rec["modified_on"], rec
    assert rec["proxied"] is False and isinstance(rec["tags"], list), rec


def batch(api, zid, body, expect=200):
    """Sends the batch; on success checks the answer against GET before and
    after and returns the result. On a refusal checks that nothing changed."""
    path = "/zones/%s/dns_records/batch" % zid
    addressed = [op["id"] for k in ("deletes", "patches", "puts") for op in body.get(k, [])
                 if isinstance(op, dict) and "id" in op]
    before = {}
    for rid in addressed:
        st, b = get_record(api, zid, rid)
        if st == 200:
            before[b["result"]["id"]] = b["result"]
    listing = sorted(strict(r) for r in api.records(zid)) if expect != 200 else None
    r = api.call("POST", path, json=body)
    assert r.status_code == expect, (body, r.status_code, r.text[:2000])
    if expect != 200:
        assert r.json()["success"] is False
        assert sorted(strict(x) for x in api.records(zid)) == listing, \
            "a refused batch changed the zone: %r" % (body,)
        return None
    res = r.json()["result"]
    assert set(res) == set(LISTS), res.keys()
    for k in LISTS:
        assert len(res[k]) == len(body.get(k, [])), (k, len(res[k]), len(body.get(k, [])))
    for k in ("patches", "puts"):
        for op, rec in zip(body.get(k, []), res[k]):
            assert int(rec["id"], 16) == int(op["id"].strip(), 16), (k, op, rec)
    problems = []
    for k in ("posts", "puts", "patches"):
        for i, rec in enumerate(res[k]):
            check_shape(rec)
            st, got = get_record(api, zid, rec["id"])
            if st != 200:
                problems.append("%s[%d] id %s: GET after answers HTTP %d %r"
                                % (k, i, rec["id"], st, got))
                continue
            d = field_diff(rec, got["result"])
            if d:
                problems.append("%s[%d] id %s: batch answer vs GET after: %r"
                                % (k, i, rec["id"], d))
    for i, rec in enumerate(res["deletes"]):
        check_shape(rec)
        st, _ = get_record(api, zid, rec["id"])
        if st != 404:
            problems.append("deletes[%d] id %s: still there after (HTTP %d)" % (i, rec["id"], st))
        d = field_diff(rec, before.get(rec["id"], {}))
        if d:
            problems.append("deletes[%d] id %s: batch answer vs GET before: %r"
                            % (i, rec["id"], d))
    assert not problems, "request %s\n" % strict(body)[:3000] + "\n".join(problems)
    return res


def post(api, zid, **rec):
    return batch(api, zid, {"posts": [rec]})["posts"][0]


# ------------------------------------------------------------------ content

def test_addresses_in_any_spelling(api):
    zid, zone = new_zone(api, "addr")
    accepted = []
    for i, (t, c) in enumerate([
            ("AAAA", "2001:DB8:0:0::1"), ("AAAA", "2001:0db8:0000:0000:0000:0000:0000:0002"),
            ("AAAA", "::FFFF:192.0.2.1"), ("AAAA", "2001:db8::0:3"), ("AAAA", "0::0"),
            ("AAAA", "2001:DB8::A:B:C:D:E"), ("A", "192.0.2.1"), ("A", "0.0.0.0"),
            ("A", "255.255.255.255"), ("A", "192.0.2.01"), ("A", "192.000.002.002"),
            ("A", " 192.0.2.3"), ("A", "192.0.2.4 "), ("AAAA", "2001:db8::1%eth0")]):
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                     json={"posts": [{"name": "a%d.%s" % (i, zone), "type": t, "content": c}]})
        if r.status_code == 200:
            accepted.append((t, c))
    assert ("AAAA", "2001:DB8:0:0::1") in accepted
    # all the accepted spellings again, in one batch, checked against GET
    zid, zone = new_zone(api, "addr")
    res = batch(api, zid, {"posts": [{"name": "b%d.%s" % (i, zone), "type": t, "content": c}
                                     for i, (t, c) in enumerate(accepted)]})
    by_content = {c: r["content"] for (t, c), r in zip(accepted, res["posts"])}
    assert by_content["2001:DB8:0:0::1"] == "2001:db8::1"
    # a non-canonical PATCH and PUT of an address
    a = res["posts"][0]
    batch(api, zid, {"patches": [{"id": a["id"], "content": "2001:DB8:0000::00FF"}]})
    batch(api, zid, {"puts": [{"id": a["id"], "name": a["name"].upper(), "type": "AAAA",
                               "content": "2001:0DB8::1:0:0:1"}]})


TXT_CONTENTS = [
    "plain text", '"quoted"', '"a" "b" "c"', '"with \\"quote\\" inside"', "back\\\\slash",
    'mixed "quote" in plain', "\\065\\066", '"\\065"', "semi ; colon", "paren ( )",
    "tab\there", "h\u00e9llo \u2713 \U0001F600", '"h\u00e9llo"', "x" * 255, "y" * 256,
    "z" * 1000, '"' + "q" * 300 + '"', '"' + "r" * 255 + '" "s"', '""', "", '"" ""',
    "v=spf1 include:_spf.example.com ~all", "trailing space ", " leading space",
    '"unterminated', 'a"b"c', "\\# 3 616263", "\\#notgeneric", "#hash", "\\\\#x",
    "key=\"value with spaces\"", '"\\\\"', "\\\"", "@", "*",
]


def test_txt_contents(api):
    zid, zone = new_zone(api, "txt")
    accepted = []
    for i, c in enumerate(TXT_CONTENTS):
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                     json={"posts": [{"name": "probe%d.%s" % (i, zone), "type": "TXT",
                                      "content": c}]})
        if r.status_code == 200:
            accepted.append(c)
        else:
            assert r.status_code == 400, (c, r.status_code, r.text)
    assert len(accepted) >= 20, accepted
    # each accepted content again, all in one batch, as TXT and SPF
    res = batch(api, zid, {"posts": [{"name": "t%d.%s" % (i, zone), "type": "TXT",
                                      "content": c} for i, c in enumerate(accepted)]
                           + [{"name": "s%d.%s" % (i, zone), "type": "SPF", "content": c}
                              for i, c in enumerate(accepted[:10])]})
    # then each rewritten by PATCH (comment only: the content goes through
    # the format and the parse again), and by PUT with another form
    recs = res["posts"][:len(accepted)]
    batch(api, zid, {"patches": [{"id": r["id"], "comment": "c%d" % i}
                                 for i, r in enumerate(recs)]})
    batch(api, zid, {"puts": [{"id": r["id"], "name": r["name"], "type": "TXT",
                               "content": '"put %d" "second"' % i}
                              for i, r in enumerate(recs[:5])]})


def test_data_types_with_priority(api):
    zid, zone = new_zone(api, "prio")
    cases = [
        {"type": "MX", "content": "mail." + zone, "priority": 10},
        {"type": "MX", "content": "MAIL2." + zone.upper() + ".", "priority": 0},
        {"type": "MX", "content": "20 mx3." + zone},
        {"type": "MX", "content": "mx4." + zone, "priority": 65535},
        {"type": "MX", "content": ".", "priority": 0},
        {"type": "SRV", "content": "5 443 target." + zone, "priority": 1},
        {"type": "SRV", "content": "1 2 3 srv2." + zone},
        {"type": "SRV", "content": "0 0 .", "priority": 0,
         "data": {"priority": 9, "weight": 0, "port": 0, "target": "."}},
        {"type": "URI", "content": '1 "https://example.com/x"', "priority": 10},
        {"type": "URI", "content": '10 1 "ftp://x.example"'},
        {"type": "CAA", "content": '0 issue "letsencrypt.org"'},
        {"type": "CAA", "content": '128 ISSUEWILD ";"'},
        {"type": "CAA", "content": '0 iodef "mailto:a@example.com"',
         "data": {"flags": 0, "tag": "iodef", "value": "mailto:b@example.com"}},
        {"type": "HTTPS", "content": '1 . alpn="h3,h2" ipv4hint=192.0.2.1'},
        {"type": "HTTPS", "content": "0 svc." + zone},
        {"type": "SVCB", "content": "1 svc." + zone + ". port=8443 key65000=x"},
        {"type": "SVCB", "content": '2 . mandatory=alpn alpn=h2 ech="AAAA"'},
        {"type": "NAPTR", "content": '100 10 "U" "E2U+sip" "!^.*$!sip:a@example.com!" .'},
        {"type": "SSHFP", "content": "4 2 " + "AB" * 32},
        {"type": "TLSA", "content": "3 1 1 " + "0A" * 32},
        {"type": "DS", "content": "12345 13 2 " + "ab" * 32},
        {"type": "CERT", "content": "PGP 0 0 AAAA"},
        {"type": "LOC", "content": "52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m"},
        {"type": "NS", "content": "ns.Elsewhere.example"},
        {"type": "PTR", "content": "ptr.example"},
        {"type": "CNAME", "content": "target.Example.COM."},
        {"type": "DNAME", "content": "dname.example"},
        {"type": "TYPE65400", "content": "\\# 4 0a0b0c0d"},
        {"type": "A", "content": "\\# 4 c0000201"},
    ]
    accepted = []
    for i, c in enumerate(cases):
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                     json={"posts": [dict(c, name="p%d.%s" % (i, zone))]})
        if r.status_code == 200:
            accepted.append(c)
    assert len(accepted) >= 20, [c for c in cases if c not in accepted]
    res = batch(api, zid, {"posts": [dict(c, name="q%d.%s" % (i, zone))
                                     for i, c in enumerate(accepted)]})
    mx = res["posts"][0]
    assert mx["priority"] == 10 and mx["content"] == "mail." + zone, mx
    # priority changed alone, content alone, both by PUT
    prio = [r for r in res["posts"] if "priority" in r]
    batch(api, zid, {"patches": [{"id": r["id"], "priority": 7} for r in prio]})
    batch(api, zid, {"patches": [{"id": prio[0]["id"], "content": "other." + zone}],
                     "puts": [{"id": prio[1]["id"], "name": prio[1]["name"], "type": "MX",
                               "content": "put." + zone, "priority": 3}]})


# ------------------------------------------------------------------ names

def test_names_in_any_spelling(api):
    zid, zone = new_zone(api, "names")
    names = ["MiXeD." + zone.upper(), "Trailing.%s." % zone, "\\065bc." + zone,
             "a\\.b." + zone, "*.wild." + zone, "*." + zone, "@", zone, zone.upper() + ".",
             "relative", "Rel.Ative", "\\000." + zone, "\\196\\228." + zone,
             "x\\032y." + zone, "deep.a.b.c.d.e.f." + zone, "l" * 63 + "." + zone,
             "_srv._tcp." + zone, "-dash." + zone, "\\@." + zone]
    accepted = []
    for i, n in enumerate(names):
        r = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                     json={"posts": [{"name": n, "type": "TXT", "content": "probe%d" % i}]})
        if r.status_code == 200:
            accepted.append(n)
    assert len(accepted) >= 15, accepted
    res = batch(api, zid, {"posts": [{"name": n, "type": "A", "content": "192.0.2.%d" % (i + 1)}
                                     for i, n in enumerate(accepted)]})
    assert res["posts"][0]["name"] == "mixed." + zone
    # renamed by PATCH to another case of their name, and to other names
    batch(api, zid, {"patches": [{"id": r["id"], "name": r["name"].upper()}
                                 for r in res["posts"] if "\\" not in r["name"]]})
    batch(api, zid, {"patches": [{"id": r["id"], "name": "moved%d.%s" % (i, zone)}
                                 for i, r in enumerate(res["posts"][:5])]})


# ------------------------------------------------------------------ comment and tags

def test_comments_and_tags(api):
    zid, zone = new_zone(api, "meta")
    res = batch(api, zid, {"posts": [
        {"name": "c1." + zone, "type": "A", "content": "192.0.2.1", "comment": "a comment",
         "tags": ["team:dns", "env:prod", "x"]},
        {"name": "c2." + zone, "type": "A", "content": "192.0.2.2", "comment": None,
         "tags": None},
        {"name": "c3." + zone, "type": "A", "content": "192.0.2.3", "comment": "",
         "tags": []},
        {"name": "c4." + zone, "type": "A", "content": "192.0.2.4",
         "comment": "utf-8 \u00e9\u00e8 \u2713 \U0001F600 \"q\" \\ \t tab / <>&"},
        {"name": "c5." + zone, "type": "A", "content": "192.0.2.5", "comment": "c" * 500},
        {"name": "c6." + zone, "type": "A", "content": "192.0.2.6",
         "tags": ["b:2", "a:1", "b:2", "Z_z-9:with:colons and spaces?"]},
        {"name": "c7." + zone, "type": "A", "content": "192.0.2.7", "comment": "\u00e9" * 250},
        {"name": "c8." + zone, "type": "A", "content": "192.0.2.8", "comment": " ",
         "tags": ["t:" + "v" * 400]},
    ]})
    r1, r2, r3, r4, r5, r6, r7, r8 = res["posts"]
    assert r1["comment"] == "a comment" and r1["tags"] == ["team:dns", "env:prod", "x"]
    assert r2["comment"] is None and r2["tags"] == []
    # each field changed alone by PATCH, the others kept
    batch(api, zid, {"patches": [
        {"id": r1["id"], "ttl": 120},
        {"id": r2["id"], "comment": "now set"},
        {"id": r3["id"], "tags": ["only:tags"]},
        {"id": r4["id"], "comment": None},
        {"id": r5["id"], "comment": ""},
        {"id": r6["id"], "tags": []},
        {"id": r7["id"], "tags": None},
        {"id": r8["id"]},
    ]})
    # PUT with every field, and PUT with only the required ones (what is kept)
    batch(api, zid, {"puts": [
        {"id": r1["id"], "name": "c1." + zone, "type": "AAAA", "content": "2001:db8::1",
         "ttl": 300, "proxied": False, "comment": "put", "tags": ["put:1"]},
        {"id": r2["id"], "name": "c2b." + zone, "type": "TXT", "content": "put text"},
        {"id": r3["id"], "name": "c3." + zone, "type": "A", "content": "192.0.2.33",
         "comment": None, "tags": None},
    ]})
    # oversized and invalid ones are refused and change nothing
    batch(api, zid, {"patches": [{"id": r1["id"], "comment": "c" * 501}]}, expect=400)
    batch(api, zid, {"patches": [{"id": r1["id"], "tags": ["bad tag"]}]}, expect=400)
    batch(api, zid, {"patches": [{"id": r1["id"], "tags": "notalist"}]}, expect=400)
    batch(api, zid, {"patches": [{"id": r1["id"], "comment": 5}]}, expect=400)


def test_comment_with_nul_and_odd_json(api):
    """Comments JSON allows but C strings do not hold (\\u0000), and
    unpaired surrogates: refused or stored, the answer is what is stored."""
    zid, zone = new_zone(api, "nul")
    path = "/zones/%s/dns_records/batch" % zid
    for i, raw in enumerate(['"a\\u0000b"', '"\\ud800"', '"\\udfff x"', '"\\u0000"']):
        body = ('{"posts": [{"name": "n%d.%s", "type": "A", "content": "192.0.2.1",'
                ' "comment": %s}]}' % (i, zone, raw))
        r = api.call("POST", path, data=body.encode(),
                     headers={"Content-Type": "application/json"})
        assert r.status_code in (200, 400), (raw, r.status_code, r.text)
        if r.status_code == 200:
            (rec,) = r.json()["result"]["posts"]
            st, got = get_record(api, zid, rec["id"])
            assert st == 200 and not field_diff(rec, got["result"]), (raw, rec, got)


# ------------------------------------------------------------------ TTL

def test_ttls(api):
    zid, zone = new_zone(api, "ttl")
    res = batch(api, zid, {"posts": [
        {"name": "t1." + zone, "type": "A", "content": "192.0.2.1", "ttl": 1},
        {"name": "t2." + zone, "type": "A", "content": "192.0.2.2"},
        {"name": "t3." + zone, "type": "A", "content": "192.0.2.3", "ttl": 0},
        {"name": "t4." + zone, "type": "A", "content": "192.0.2.4", "ttl": 2147483647},
        {"name": "t5." + zone, "type": "A", "content": "192.0.2.5", "ttl": 2},
    ]})
    # Cloudflare's "automatic" (ttl 1, or none given) reads back as 1,
    # served with the zone's default TTL
    assert res["posts"][0]["ttl"] == res["posts"][1]["ttl"] == 1
    batch(api, zid, {"posts": [{"name": "t6." + zone, "type": "A", "content": "192.0.2.6",
                                "ttl": -1}]}, expect=400)
    batch(api, zid, {"posts": [{"name": "t6." + zone, "type": "A", "content": "192.0.2.6",
                                "ttl": 2147483648}]}, expect=400)
    batch(api, zid, {"posts": [{"name": "t6." + zone, "type": "A", "content": "192.0.2.6",
                                "ttl": "300"}]}, expect=400)
    # the zone's default TTL changed: TTL 1 takes the new one
    r = api.call("PATCH", "/zones/%s" % zid, json={"default_ttl": 1234})
    if r.status_code == 200:
        res = batch(api, zid, {"patches": [{"id": res["posts"][2]["id"], "ttl": 1}],
                               "posts": [{"name": "t7." + zone, "type": "A",
                                          "content": "192.0.2.7", "ttl": 1}]})
        assert res["posts"][0]["ttl"] == 1 and res["patches"][0]["ttl"] == 1
        served = {r["content"]: r for r in api.records(zid)}
        assert served["192.0.2.7"]["ttl"] == 1


def test_rrset_ttl_spreads_inside_the_batch(api):
    """One TTL per RRset (RFC 2181 5.2): a later op of the batch retimes
    records an earlier op of the same batch wrote; the answer shows them as
    stored after the whole batch."""
    zid, zone = new_zone(api, "retime")
    a = post(api, zid, name="r." + zone, type="A", content="192.0.2.1", ttl=100,
             comment="keep", tags=["k:v"])
    b = post(api, zid, name="r." + zone, type="A", content="192.0.2.2", ttl=100)
    res = batch(api, zid, {
        "patches": [{"id": a["id"], "comment": "patched"}, {"id": b["id"], "ttl": 200}],
        "puts": [{"id": b["id"], "name": "R." + zone.upper(), "type": "A",
                  "content": "192.0.2.3", "ttl": 300}],
        "posts": [{"name": "r." + zone, "type": "A", "content": "192.0.2.4", "ttl": 400},
                  {"name": "R." + zone, "type": "A", "content": "192.0.2.5", "ttl": 500},
                  {"name": "r." + zone, "type": "AAAA", "content": "2001:db8::1", "ttl": 600}]})
    assert {r["ttl"] for r in res["patches"] + res["puts"] + res["posts"][:2]} == {500}
    assert res["patches"][0]["comment"] == "patched" and res["patches"][0]["tags"] == ["k:v"]
    # a record moved by PUT into another RRset takes or gives its TTL
    c = post(api, zid, name="s." + zone, type="A", content="192.0.2.9", ttl=700)
    batch(api, zid, {"puts": [{"id": c["id"], "name": "r." + zone, "type": "A",
                               "content": "192.0.2.9", "ttl": 800}]})
    batch(api, zid, {"patches": [{"id": a["id"], "name": "s." + zone}]})


# ------------------------------------------------------------------ ops together

def test_same_id_in_patches_and_puts(api):
    zid, zone = new_zone(api, "twice")
    a = post(api, zid, name="a." + zone, type="A", content="192.0.2.1", comment="c0")
    res = batch(api, zid, {"patches": [{"id": a["id"], "ttl": 111},
                                       {"id": a["id"], "comment": "c1"},
                                       {"id": a["id"], "tags": ["t:1"]}],
                           "puts": [{"id": a["id"], "name": "b." + zone, "type": "A",
                                     "content": "192.0.2.2", "ttl": 222},
                                    {"id": a["id"], "name": "c." + zone, "type": "TXT",
                                     "content": "last"}]})
    # every op on the id is answered with the record as the batch left it
    assert len({strict(r) for r in res["patches"] + res["puts"]}) == 1, res
    assert res["puts"][-1]["type"] == "TXT" and res["puts"][-1]["name"] == "c." + zone


def test_mixed_batch(api):
    zid, zone = new_zone(api, "mixed")
    recs = batch(api, zid, {"posts": [
        {"name": "d%d.%s" % (i, zone), "type": "A", "content": "192.0.2.%d" % (i + 1),
         "comment": "d%d" % i, "tags": ["i:%d" % i]} for i in range(8)]})["posts"]
    res = batch(api, zid, {
        "deletes": [{"id": recs[0]["id"]}, {"id": recs[1]["id"]}],
        "patches": [{"id": recs[2]["id"], "content": "192.0.2.102"},
                    {"id": recs[3]["id"], "name": "d0." + zone}],
        "puts": [{"id": recs[4]["id"], "name": "d1." + zone, "type": "A",
                  "content": "192.0.2.2", "ttl": 60, "comment": "re-made"},
                 {"id": recs[5]["id"], "name": "d5." + zone, "type": "CNAME",
                  "content": "d2." + zone}],
        "posts": [{"name": "d0." + zone, "type": "A", "content": "192.0.2.1"},
                  {"name": "new." + zone, "type": "MX", "content": "d0." + zone,
                   "priority": 5}]})
    assert [r["id"] for r in res["deletes"]] == [recs[0]["id"], recs[1]["id"]]
    # the apex's own records (made with the zone): NS patched, SOA refused
    apex = api.records(zid, name=zone)
    ns = [r for r in apex if r["type"] == "NS"]
    soa = [r for r in apex if r["type"] == "SOA"]
    if ns:
        batch(api, zid, {"patches": [{"id": ns[0]["id"], "comment": "apex ns", "ttl": 1}]})
    if soa:
        batch(api, zid, {"patches": [{"id": soa[0]["id"], "comment": "soa"}]}, expect=400)


def test_duplicates_and_refusals(api):
    zid, zone = new_zone(api, "dup")
    a = post(api, zid, name="a." + zone, type="A", content="192.0.2.1")
    # the same record twice in one batch, or again: refused, nothing changed
    batch(api, zid, {"posts": [{"name": "b." + zone, "type": "A", "content": "192.0.2.2"},
                               {"name": "B." + zone, "type": "A", "content": "192.0.2.2"}]},
          expect=400)
    batch(api, zid, {"posts": [{"name": "a." + zone, "type": "A", "content": "192.0.2.1"}]},
          expect=400)
    batch(api, zid, {"posts": [{"name": "t." + zone, "type": "TXT", "content": "x"},
                               {"name": "t." + zone, "type": "TXT", "content": '"x"'}]},
          expect=400)
    batch(api, zid, {"posts": [{"name": "m." + zone, "type": "MX", "content": "A." + zone,
                                "priority": 1},
                               {"name": "m." + zone, "type": "MX", "content": "a." + zone,
                                "priority": 1}]}, expect=400)
    # the same record after its delete in the same batch: a new record
    res = batch(api, zid, {"deletes": [{"id": a["id"]}],
                           "posts": [{"name": "a." + zone, "type": "A", "content": "192.0.2.1"}]})
    assert res["posts"][0]["id"] != a["id"]
    # the same content in other records, and a PUT that keeps it identical
    b = res["posts"][0]
    batch(api, zid, {"puts": [{"id": b["id"], "name": "a." + zone, "type": "A",
                               "content": "192.0.2.1"}]})
    batch(api, zid, {"patches": [{"id": b["id"]}]})
    # ids that are not there, deleted twice, malformed
    batch(api, zid, {"deletes": [{"id": "%032x" % 2 ** 62}]}, expect=404)
    batch(api, zid, {"deletes": [{"id": "f" * 32}]}, expect=400)
    batch(api, zid, {"deletes": [{"id": b["id"]}, {"id": b["id"]}]}, expect=404)
    batch(api, zid, {"patches": [{"id": "not-an-id"}]}, expect=400)
    # ids of another zone's records are not this zone's
    ozid, ozone = new_zone(api, "other")
    o = post(api, ozid, name="o." + ozone, type="A", content="192.0.2.9")
    batch(api, zid, {"deletes": [{"id": o["id"]}]}, expect=404)
    batch(api, zid, {"patches": [{"id": o["id"], "comment": "x"}]}, expect=404)
    batch(api, zid, {"puts": [{"id": o["id"], "name": "o." + zone, "type": "A",
                               "content": "192.0.2.9"}]}, expect=404)
    st, got = get_record(api, ozid, o["id"])
    assert st == 200 and not field_diff(o, got["result"]), (o, got)


def test_ids_in_other_spellings(api):
    """An id given in upper case, without its leading zeros, with a 0x or a
    blank: it names no record (400 or 404, nothing changed), as in a URL;
    only the 32 lower-case digits the API wrote do."""
    zid, zone = new_zone(api, "ids")
    recs = batch(api, zid, {"posts": [{"name": "i%d.%s" % (i, zone), "type": "A",
                                       "content": "192.0.2.%d" % (i + 1)}
                                      for i in range(5)]})["posts"]
    spell = [lambda h: h.upper(), lambda h: h.lstrip("0"), lambda h: "0x" + h.lstrip("0"),
             lambda h: " " + h.lstrip("0")]
    for f, r in zip(spell, recs):
        op = {"id": f(r["id"]), "comment": "spelled"}
        if op["id"] == r["id"]:
            continue
        resp = api.call("POST", "/zones/%s/dns_records/batch" % zid, json={"patches": [op]})
        assert resp.status_code in (400, 404), (op, resp.text)
        st, stored = get_record(api, zid, r["id"])
        assert st == 200 and stored["result"]["comment"] is None, (op, stored)
    # Ids are read in the API's own form only (api_id_parse()): another
    # spelling names nothing, so the batch deletes nothing.
    rid = recs[4]["id"]
    if rid.upper() != rid:
        resp = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                        json={"deletes": [{"id": rid.upper()}]})
        assert resp.status_code in (400, 404), resp.text
        assert get_record(api, zid, rid)[0] == 200
    batch(api, zid, {"deletes": [{"id": rid}]})
    assert get_record(api, zid, rid)[0] == 404


def test_imported_records(zonecast_api, api):
    """Records a zone import wrote (no API form, no comment), each rewritten
    by a batch PATCH: through the content's format and parse again."""
    srv = zonecast_api
    for zone in ("example.com", "sub.example.com", "example.net"):
        zid = api.zone_id(zone)
        recs = [r for r in api.records(zid)
                if r["type"] not in ("SOA", "RRSIG", "NSEC", "NSEC3", "DNSKEY", "CDS",
                                     "CDNSKEY", "NSEC3PARAM")]
        assert recs
        res = api.call("POST", "/zones/%s/dns_records/batch" % zid,
                       json={"patches": [{"id": r["id"], "comment": "imported"}
                                         for r in recs]})
        if res.status_code != 200:
            # one at a time: what can be rewritten is
            for r in recs:
                op = {"patches": [{"id": r["id"], "comment": "imported"}]}
                resp = api.call("POST", "/zones/%s/dns_records/batch" % zid, json=op)
                if resp.status_code == 200:
                    (got,) = resp.json()["result"]["patches"]
                    st, stored = get_record(api, zid, r["id"])
                    assert not field_diff(got, stored["result"]), (r, got, stored)
            continue
        for got in res.json()["result"]["patches"]:
            st, stored = get_record(api, zid, got["id"])
            assert st == 200 and not field_diff(got, stored["result"]), (got, stored)
        batch(api, zid, {"patches": [{"id": r["id"], "ttl": 1} for r in recs[:20]]})


def test_wait_live(api):
    """?wait=live: the same answer, given once the DNS side serves it."""
    zid, zone = new_zone(api, "live")
    a = post(api, zid, name="a." + zone, type="A", content="192.0.2.1")
    r = api.call("POST", "/zones/%s/dns_records/batch?wait=live" % zid,
                 json={"patches": [{"id": a["id"], "ttl": 99, "comment": "live"}],
                       "posts": [{"name": "b." + zone, "type": "TXT", "content": "live"}]})
    assert r.status_code in (200, 202), r.text
    res = r.json()["result"]
    for rec in res["patches"] + res["posts"]:
        st, got = get_record(api, zid, rec["id"])
        assert st == 200 and not field_diff(rec, got["result"]), (rec, got)


def test_empty_batch(api):
    zid, _ = new_zone(api, "empty")
    batch(api, zid, {})
    batch(api, zid, {"posts": [], "patches": [], "puts": [], "deletes": []})


def test_large_batches(api):
    zid, zone = new_zone(api, "large")
    # 600 names: the cache's tables of ids and of names grow several times
    posts = [{"name": "n%d.%s" % (i % 600, zone), "type": "A",
              "content": "10.%d.%d.%d" % (i // 65536, i // 256 % 256, i % 256),
              "ttl": 300 + (i % 7), "comment": "p%d" % i if i % 3 else None,
              "tags": ["i:%d" % i] if i % 5 == 0 else None}
             for i in range(1000)]
    res = batch(api, zid, {"posts": posts})
    # within a name the last TTL is every record's TTL
    by_name = {}
    for r in res["posts"]:
        by_name.setdefault(r["name"], set()).add(r["ttl"])
    assert len(by_name) == 600 and all(len(t) == 1 for t in by_name.values()), by_name
    recs = res["posts"]
    res = batch(api, zid, {
        "deletes": [{"id": r["id"]} for r in recs[:100]],
        "patches": [{"id": r["id"], "ttl": 900 + i % 3} for i, r in enumerate(recs[100:500])],
        "puts": [{"id": r["id"], "name": "m%d.%s" % (i % 20, zone), "type": "AAAA",
                  "content": "2001:db8::%x" % i} for i, r in enumerate(recs[500:700])],
        "posts": [{"name": "n%d.%s" % (i % 50, zone), "type": "TXT", "content": "t%d" % i}
                  for i in range(300)]})
    assert {r["ttl"] for r in res["patches"]} <= {900, 901, 902}


# ------------------------------------------------------------------ before the change

def scenario(api, zid, zone):
    """A fixed sequence of batches; returns their answers."""
    out = []

    def b(body, expect=200):
        res = batch(api, zid, body, expect=expect)
        out.append((expect, res))
        return res

    res = b({"posts": [
        {"name": "A." + zone.upper(), "type": "A", "content": "192.0.2.1", "ttl": 1},
        {"name": "a." + zone, "type": "A", "content": "192.0.2.2", "ttl": 300,
         "comment": "c", "tags": ["x:1"]},
        {"name": "@", "type": "TXT", "content": '"t" "u"'},
        {"name": "*.w." + zone, "type": "AAAA", "content": "2001:DB8:0:0::1"},
        {"name": "m." + zone, "type": "MX", "content": "A." + zone, "priority": 5},
        {"name": "s." + zone, "type": "SRV", "content": "1 2 t." + zone, "priority": 3},
        {"name": "c." + zone, "type": "CAA", "content": '0 issue "ca.example"'},
        {"name": "h." + zone, "type": "HTTPS", "content": '1 . alpn="h2"'},
        {"name": "e." + zone, "type": "TXT", "content": "", "comment": ""},
        {"name": "l." + zone, "type": "TXT", "content": "x" * 600},
    ]})
    ids = [r["id"] for r in res["posts"]]
    b({"deletes": [{"id": ids[9]}],
       "patches": [{"id": ids[0], "ttl": 60}, {"id": ids[1], "comment": None},
                   {"id": ids[2], "tags": ["p:1"]}, {"id": ids[0], "comment": "again"}],
       "puts": [{"id": ids[4], "name": "m." + zone, "type": "MX", "content": "b." + zone,
                 "priority": 9},
                {"id": ids[0], "name": "a." + zone, "type": "A", "content": "192.0.2.3"}],
       "posts": [{"name": "a." + zone, "type": "A", "content": "192.0.2.4", "ttl": 77},
                 {"name": "n." + zone, "type": "TXT", "content": "h\u00e9llo"}]})
    b({"posts": [{"name": "a." + zone, "type": "A", "content": "192.0.2.4"}]}, expect=400)
    return out


def normalized(answers, zid):
    """Ids as the order they first appear in, times left out (the
    millisecond a write falls in differs from run to run; both runs check
    them against GET)."""
    ids = {}

    def norm(v):
        if isinstance(v, dict):
            d = {k: norm(x) for k, x in v.items() if k not in ("created_on", "modified_on")}
            if "id" in v and isinstance(v["id"], str):
                d["id"] = ids.setdefault(v["id"], "ID%d" % len(ids))
            if v.get("zone_id") == zid:
                d["zone_id"] = "ZID"
            return d
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return [(st, norm(body)) for st, body in answers]


def test_same_answers_as_the_binary_before_the_change(api, zonecast_api_factory, monkeypatch):
    if not os.access(BASE_BIN, os.X_OK):
        pytest.skip("no binary of the commit before a06d733 at %s" % BASE_BIN)
    name = "cross%d.batch-answer.test" % next(_seq)
    zid, zone = new_zone(api, name=name)
    mine = scenario(api, zid, zone)
    monkeypatch.setenv("ZONECAST_BIN", BASE_BIN)
    old_srv = zonecast_api_factory(zones={"example.com.": servers.DEFAULT_ZONES["example.com."]},
                                   workers=1)
    old_api = old_srv.client()
    monkeypatch.undo()
    ozid, ozone = new_zone(old_api, name=name)
    theirs = scenario(old_api, ozid, ozone)
    a, b = normalized(mine, zid), normalized(theirs, ozid)
    for i, (x, y) in enumerate(zip(a, b)):
        assert strict(x) == strict(y), "batch %d: this binary %s\nbefore a06d733 %s" % (
            i, strict(x), strict(y))
