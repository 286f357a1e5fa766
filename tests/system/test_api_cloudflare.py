"""The API as Cloudflare's clients use it (docs/api.md).

- TXT content in Cloudflare's two forms: plain text (what certbot's
  dns-cloudflare plugin and most clients send) and quoted character-strings
  (what Cloudflare's documentation asks for). Each comes back in the form it
  was written in; a content filter finds a record by either form; strings
  over 255 octets are split; DMARC and DKIM content with ';' is taken as it
  is for every type, read back, exported and served.

Every test makes zones of its own on one module-wide zonecast with its API
and checks what DNS serves (dnspython), as test_api.py does.
"""

import dns.flags
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

from test_api import (answer, assert_error, expect_answer, new_zone, post_record, rdatas,
                      wait_dns, is_auth)
import dns.rcode


@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def records_path(zid):
    return "/zones/%s/dns_records" % zid


def listed(api, zid, **params):
    """The records a listing returns (one page, as a client sees it)."""
    return api.get(records_path(zid), params=dict(params, per_page=1000))


def served_txt(srv, name):
    """The TXT strings DNS serves at name: a set of tuples of bytes."""
    wait_dns(srv, name, "TXT", lambda m: is_auth(m, dns.rcode.NOERROR) and
             (answer(m, name, "TXT") or m.flags & dns.flags.TC), "a TXT answer")
    m = srv.query(name, "TXT", tcp=True)  # long ones do not fit in UDP
    return {tuple(rd.strings) for rd in answer(m, name, "TXT")}


# ------------------------------------------------------------------ TXT content

def test_plain_txt_comes_back_plain_and_is_found_by_either_form(srv, api):
    """certbot-dns-cloudflare writes the token without quotes and finds its
    record again by ?type=TXT&name=...&content=<token>: that must list it, or
    every run leaves an _acme-challenge record behind."""
    zid, zone = new_zone(api, "txtplain")
    name = "_acme-challenge.www." + zone
    token = "kLfR2-5x_Pq8vZ0yWmE1sTn4uHb7cAa9dGj3oIe6wKs"
    rec, _ = post_record(api, zid, name=name, type="TXT", content=token, ttl=120)
    assert rec["content"] == token
    assert api.get(records_path(zid) + "/" + rec["id"])["content"] == token
    assert served_txt(srv, name) == {(token.encode(),)}
    for content in (token, '"%s"' % token, token.upper()):
        found = listed(api, zid, type="TXT", name=name, content=content)
        assert [r["id"] for r in found] == [rec["id"]], content
    assert listed(api, zid, type="TXT", name=name, content=token + "x") == []
    # python3-cloudflare's own calls, as certbot makes them
    api.ok("DELETE", records_path(zid) + "/" + rec["id"])
    assert listed(api, zid, type="TXT", name=name) == []


def test_quoted_txt_comes_back_quoted_and_is_found_unquoted(srv, api):
    zid, zone = new_zone(api, "txtq")
    rec, _ = post_record(api, zid, name="q." + zone, type="TXT",
                         content='"hello world" "second"')
    assert rec["content"] == '"hello world" "second"'
    assert served_txt(srv, "q." + zone) == {(b"hello world", b"second")}
    one, _ = post_record(api, zid, name="one." + zone, type="TXT", content='"tok-123"')
    assert one["content"] == '"tok-123"'
    assert [r["id"] for r in listed(api, zid, content="tok-123")] == [one["id"]]
    assert [r["id"] for r in listed(api, zid, content='"tok-123"')] == [one["id"]]


@pytest.mark.parametrize("length", [255, 256, 600, 4096])
def test_long_plain_txt_is_split_at_255_and_reads_back_whole(srv, api, length):
    zid, zone = new_zone(api, "txtlong")
    text = ("v=DKIM1; k=rsa; p=" + "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" * 100)[:length]
    rec, _ = post_record(api, zid, name="k._domainkey." + zone, type="TXT", content=text)
    assert rec["content"] == text
    want = tuple(text[i:i + 255].encode() for i in range(0, length, 255))
    assert served_txt(srv, "k._domainkey." + zone) == {want}
    assert [r["id"] for r in listed(api, zid, content=text)] == [rec["id"]]


def test_quoted_strings_over_255_octets_are_split(srv, api):
    zid, zone = new_zone(api, "txtqlong")
    rec, _ = post_record(api, zid, name="l." + zone, type="TXT",
                         content='"%s" "%s"' % ("a" * 300, "b" * 10))
    assert served_txt(srv, "l." + zone) == {(b"a" * 255, b"a" * 45, b"b" * 10)}
    assert rec["content"] == '"%s" "%s" "%s"' % ("a" * 255, "a" * 45, "b" * 10)


def test_txt_text_round_trips_utf8_quotes_and_backslashes(srv, api):
    zid, zone = new_zone(api, "txtutf")
    for i, content in enumerate(['caf\u00e9 \u2713 says "hi" \\o/',
                                 '"caf\u00e9 \\"quoted\\" \\\\ back"',
                                 "  leading and trailing spaces  ",
                                 "tab\there"]):
        rec, _ = post_record(api, zid, name="u%d.%s" % (i, zone), type="TXT", content=content)
        assert rec["content"] == content
        assert api.get(records_path(zid) + "/" + rec["id"])["content"] == content
    assert served_txt(srv, "u0." + zone) == {('caf\u00e9 \u2713 says "hi" \\o/'.encode(),)}
    assert served_txt(srv, "u1." + zone) == {('caf\u00e9 "quoted" \\ back'.encode(),)}


def test_patch_keeps_the_form_content_was_written_in(srv, api):
    zid, zone = new_zone(api, "txtpatch")
    rec, _ = post_record(api, zid, name="p." + zone, type="TXT", content="plain; text")
    r = api.ok("PATCH", records_path(zid) + "/" + rec["id"], json={"ttl": 900})["result"]
    assert r["content"] == "plain; text" and r["ttl"] == 900
    q, _ = post_record(api, zid, name="p." + zone, type="TXT", content='"quoted"', ttl=900)
    r = api.ok("PATCH", records_path(zid) + "/" + q["id"], json={"comment": "c"})["result"]
    assert r["content"] == '"quoted"'


# ------------------------------------------------------------------ ';' in content

SEMICOLONS = [
    # (type, content written, content read back, rdata served)
    ("TXT", "v=DMARC1; p=none; rua=mailto:d@example.org", None,
     '"v=DMARC1; p=none; rua=mailto:d@example.org"'),
    ("TXT", '"v=DMARC1; p=reject"', None, '"v=DMARC1; p=reject"'),
    ("TXT", "v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC", None,
     '"v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC"'),
    ("TXT", '"a" ; b', '"a" ";" "b"', '"a" ";" "b"'),
    ("CAA", '0 issue "letsencrypt.org; validationmethods=dns-01"', None,
     '0 issue "letsencrypt.org; validationmethods=dns-01"'),
    ("CAA", "0 issue letsencrypt.org;accounturi=x", '0 issue "letsencrypt.org;accounturi=x"',
     '0 issue "letsencrypt.org;accounturi=x"'),
    ("HINFO", "a;b (c)", '"a;b" "(c)"', '"a;b" "(c)"'),
    ("NAPTR", '100 10 "u" "E2U+sip" "!^.*$!sip:info@example.org;transport=udp!" .', None,
     '100 10 "u" "E2U+sip" "!^.*$!sip:info@example.org;transport=udp!" .'),
]


def test_content_with_semicolons_is_taken_as_it_is_read_back_exported_and_served(srv, api):
    zid, zone = new_zone(api, "semi")
    made = []
    for i, (rtype, content, back, served) in enumerate(SEMICOLONS):
        name = "s%d.%s" % (i, zone)
        rec, _ = post_record(api, zid, name=name, type=rtype, content=content)
        assert rec["content"] == (back or content), (rtype, content)
        assert api.get(records_path(zid) + "/" + rec["id"])["content"] == (back or content)
        expect_answer(srv, name, rtype, rdatas(rtype, served))
        made.append((name, rtype, served))
    # the export holds them as the same rdata, and imports into another zone
    text = api.call("GET", records_path(zid) + "/export").text
    exported = dns.zone.from_text(text, origin=zone + ".", relativize=False, check_origin=False)
    for name, rtype, served in made:
        rds = exported.find_rdataset(name + ".", rtype)
        assert set(rds) == rdatas(rtype, served), (name, text)
    zid2, zone2 = new_zone(api, "semi2")
    r = api.call("POST", records_path(zid2) + "/import", data=text.replace(zone + ".", zone2 + "."))
    assert r.status_code == 200, r.text
    for name, rtype, served in made:
        expect_answer(srv, name.replace(zone, zone2), rtype, rdatas(rtype, served))


def test_bad_txt_content_is_refused_naming_content(srv, api):
    zid, zone = new_zone(api, "txtbad")
    for content in ('"not closed', '"a" b"c', '"\\256"', '"\\1x"'):
        r = api.call("POST", records_path(zid), json={"name": "b." + zone, "type": "TXT",
                                                     "content": content})
        assert_error(r, 400, "content")
    assert listed(api, zid, name="b." + zone) == []


# ------------------------------------------------------------------ list filters

def fill(api, zid, zone):
    """A small zone to filter: records with comments and tags."""
    made = {}
    for key, rec in {
        "www_a": dict(name="www." + zone, type="A", content="192.0.2.10", ttl=300,
                      comment="Web Front", tags=["env:prod", "team:web"]),
        "www_aaaa": dict(name="www." + zone, type="AAAA", content="2001:db8::10", ttl=600,
                         tags=["env:prod"]),
        "api_a": dict(name="api." + zone, type="A", content="192.0.2.20", ttl=120,
                      comment="backend", tags=["env:staging", "critical"]),
        "mail_mx": dict(name=zone, type="MX", content="mail." + zone, priority=10, ttl=900),
        "spf": dict(name=zone, type="TXT", content="v=spf1 mx -all", ttl=900),
        "dmarc": dict(name="_dmarc." + zone, type="TXT", content="v=DMARC1; p=none", ttl=900,
                      comment="mail policy"),
        "wwwdev": dict(name="www-dev." + zone, type="CNAME", content="www." + zone, ttl=60),
    }.items():
        made[key], _ = post_record(api, zid, **rec)
    return made


def ids(api, zid, **params):
    return {r["id"] for r in listed(api, zid, **params)}


def test_name_filters(srv, api):
    zid, zone = new_zone(api, "fname")
    m = fill(api, zid, zone)
    www = {m["www_a"]["id"], m["www_aaaa"]["id"]}
    assert ids(api, zid, **{"name.exact": "www." + zone}) == www
    assert ids(api, zid, **{"name.exact": "WWW." + zone.upper()}) == www
    assert ids(api, zid, name="www." + zone) == www
    # an exact name that no record has lists nothing, never the whole zone
    assert ids(api, zid, **{"name.exact": "nothing." + zone}) == set()
    assert ids(api, zid, **{"name.startswith": "www"}) == www | {m["wwwdev"]["id"]}
    assert ids(api, zid, **{"name.contains": "W-D"}) == {m["wwwdev"]["id"]}
    assert ids(api, zid, **{"name.endswith": "_dmarc." + zone}) == {m["dmarc"]["id"]}
    assert ids(api, zid, **{"name.exact": "www." + zone, "type": "AAAA"}) == {m["www_aaaa"]["id"]}


def test_content_and_comment_filters(srv, api):
    zid, zone = new_zone(api, "fcont")
    m = fill(api, zid, zone)
    assert ids(api, zid, **{"content.exact": "192.0.2.10"}) == {m["www_a"]["id"]}
    assert ids(api, zid, **{"content.startswith": "192.0.2."}) == {m["www_a"]["id"],
                                                                   m["api_a"]["id"]}
    assert ids(api, zid, **{"content.contains": "dmarc1; P=NONE"}) == {m["dmarc"]["id"]}
    assert ids(api, zid, **{"content.endswith": "-all"}) == {m["spf"]["id"]}
    assert ids(api, zid, **{"content.exact": "mail." + zone}) == {m["mail_mx"]["id"]}
    assert ids(api, zid, **{"comment.exact": "web front"}) == {m["www_a"]["id"]}
    assert ids(api, zid, **{"comment.contains": "END"}) == {m["api_a"]["id"]}
    assert ids(api, zid, **{"comment.startswith": "mail"}) == {m["dmarc"]["id"]}
    assert ids(api, zid, **{"comment.present": ""}) == {m["www_a"]["id"], m["api_a"]["id"],
                                                        m["dmarc"]["id"]}
    absent = ids(api, zid, **{"comment.absent": "", "type": "A"})
    assert absent == set()
    assert m["spf"]["id"] in ids(api, zid, **{"comment.absent": "true"})


def test_tags_are_stored_and_filtered(srv, api):
    zid, zone = new_zone(api, "ftag")
    m = fill(api, zid, zone)
    assert m["www_a"]["tags"] == ["env:prod", "team:web"]
    got = api.get(records_path(zid) + "/" + m["api_a"]["id"])
    assert got["tags"] == ["env:staging", "critical"]
    assert ids(api, zid, **{"tag.present": "env"}) == {m["www_a"]["id"], m["www_aaaa"]["id"],
                                                       m["api_a"]["id"]}
    assert ids(api, zid, **{"tag.exact": "env:PROD"}) == {m["www_a"]["id"], m["www_aaaa"]["id"]}
    assert ids(api, zid, **{"tag.contains": "env:tag"}) == {m["api_a"]["id"]}
    assert ids(api, zid, **{"tag.startswith": "team:w"}) == {m["www_a"]["id"]}
    assert ids(api, zid, **{"tag.endswith": "env:ing"}) == {m["api_a"]["id"]}
    assert ids(api, zid, **{"tag.present": "critical"}) == {m["api_a"]["id"]}
    assert m["www_a"]["id"] not in ids(api, zid, **{"tag.absent": "env"})
    # several tag filters: all by default, any with tag_match=any
    both = {"tag.exact": "env:prod", "tag.present": "team"}
    assert ids(api, zid, **both) == {m["www_a"]["id"]}
    assert ids(api, zid, tag_match="any", **both) == {m["www_a"]["id"], m["www_aaaa"]["id"]}
    # PATCH without tags keeps them; tags: [] clears them
    r = api.ok("PATCH", records_path(zid) + "/" + m["www_a"]["id"], json={"ttl": 700})
    assert r["result"]["tags"] == ["env:prod", "team:web"]
    r = api.ok("PATCH", records_path(zid) + "/" + m["www_a"]["id"], json={"tags": []})
    assert r["result"]["tags"] == []
    for bad in ("notalist", [1], ["bad name:x"], [":v"], ["x" * 600]):
        r = api.call("POST", records_path(zid), json={"name": "t." + zone, "type": "A",
                                                      "content": "192.0.2.1", "tags": bad})
        assert r.status_code == 400 and r.json()["errors"][0]["message"].startswith("tags")


def test_match_any_and_all(srv, api):
    zid, zone = new_zone(api, "fmatch")
    m = fill(api, zid, zone)
    both = {"type": "CNAME", "content.exact": "192.0.2.20"}
    assert ids(api, zid, **both) == set()
    assert ids(api, zid, match="all", **both) == set()
    assert ids(api, zid, match="any", **both) == {m["wwwdev"]["id"], m["api_a"]["id"]}
    assert ids(api, zid, match="any", **{"name.exact": "api." + zone, "type": "MX"}) == {
        m["api_a"]["id"], m["mail_mx"]["id"]}
    # search is ANDed whatever match says
    assert ids(api, zid, match="any", search="front", type="MX") == set()
    assert ids(api, zid, search="FRONT") == {m["www_a"]["id"]}
    assert ids(api, zid, search="dmarc") == {m["dmarc"]["id"]}
    assert ids(api, zid, search="staging") == {m["api_a"]["id"]}
    assert ids(api, zid, proxied="false") == ids(api, zid)
    assert ids(api, zid, proxied="true") == set()


def test_orders_directions_and_pages(srv, api):
    zid, zone = new_zone(api, "forder")
    fill(api, zid, zone)
    every = listed(api, zid)

    def keys(order, direction, key):
        got = listed(api, zid, order=order, direction=direction)
        assert len(got) == len(every)
        return [key(r) for r in got]

    types = keys("type", "asc", lambda r: dns.rdatatype.from_text(r["type"]).value)
    assert types == sorted(types)
    assert keys("type", "desc", lambda r: r["type"])[0] == "AAAA"
    ttls = keys("ttl", "asc", lambda r: r["ttl"])
    assert ttls == sorted(ttls)
    ttls = keys("ttl", "desc", lambda r: r["ttl"])
    assert ttls == sorted(ttls, reverse=True)
    contents = keys("content", "asc", lambda r: r["content"])
    assert contents == sorted(contents)
    contents = keys("content", "desc", lambda r: r["content"])
    assert contents == sorted(contents, reverse=True)
    names = keys("name", "asc", lambda r: r["id"])
    assert names == [r["id"] for r in every]
    assert keys("name", "desc", lambda r: r["id"]) == names[::-1]
    assert keys("proxied", "asc", lambda r: r["id"]) == names
    # pages of a filtered, ordered listing add up to the whole
    pages, page = [], 1
    while True:
        body = api.ok("GET", records_path(zid), params={"order": "content", "per_page": 2,
                                                        "page": page, "content.contains": "."})
        pages += body["result"]
        info = body["result_info"]
        if page >= info["total_pages"]:
            break
        page += 1
    assert info["total_count"] == len(pages) == len(listed(api, zid, **{"content.contains": "."}))
    assert [r["content"] for r in pages] == sorted(r["content"] for r in pages)


def test_parameters_not_implemented_are_400_not_ignored(srv, api):
    """A tool that deletes whatever a filter lists must never get the whole
    zone for a filter zonecast does not know."""
    zid, zone = new_zone(api, "fbad")
    fill(api, zid, zone)
    before = listed(api, zid)
    path = records_path(zid)
    for params in ({"name.like": "www"}, {"tag": "x"}, {"content.regex": "."}, {"zone": "x"},
                   {"order": "id"}, {"direction": "up"}, {"match": "some"},
                   {"tag_match": "none"}, {"proxied": "yes"}, {"type": "BOGUS"},
                   {"name.exact": "www." + zone, "name": "api." + zone},
                   {"per_page": "0"}):
        r = api.call("GET", path, params=params)
        body = assert_error(r, 400, None)
        first = next(iter(params))
        assert any(k in body["errors"][0]["message"] for k in params), (params, body)
        assert first
    for p in (path + "/" + before[0]["id"], path + "/export", "/zones/" + zid, "/zones"):
        r = api.call("GET", p, params={"bogus": "1"})
        assert_error(r, 400, "bogus")
    # a write with a parameter it does not take writes nothing
    r = api.call("POST", path, params={"dry_run": "1"},
                 json={"name": "new." + zone, "type": "A", "content": "192.0.2.99"})
    assert_error(r, 400, "dry_run")
    r = api.call("DELETE", path + "/" + before[0]["id"], params={"force": "true"})
    assert_error(r, 400, "force")
    assert listed(api, zid) == before


# ------------------------------------------------------------------ batch

def test_batch_result_in_cloudflares_shape(srv, api):
    """The records per operation (deletes as they were, the others as
    written), and zonecast's zone_version: one version for the batch."""
    zid, zone = new_zone(api, "bshape")
    d, _ = post_record(api, zid, name="del." + zone, type="TXT", content="going away",
                       comment="old")
    p, _ = post_record(api, zid, name="pat." + zone, type="A", content="192.0.2.2")
    u, v0 = post_record(api, zid, name="put." + zone, type="A", content="192.0.2.3")
    body = api.ok("POST", records_path(zid) + "/batch", json={
        "deletes": [{"id": d["id"]}],
        "patches": [{"id": p["id"], "content": "192.0.2.22", "tags": ["x:1"]}],
        "puts": [{"id": u["id"], "name": "put." + zone, "type": "TXT",
                  "content": "v=DMARC1; p=none"}],
        "posts": [{"name": "new1." + zone, "type": "A", "content": "192.0.2.4"},
                  {"name": "new2." + zone, "type": "TXT", "content": '"quoted"'}]})
    res = body["result"]
    assert body["zone_version"] == v0 + 1
    assert sorted(res) == ["deletes", "patches", "posts", "puts"]
    assert [(r["id"], r["content"], r["comment"]) for r in res["deletes"]] == [
        (d["id"], "going away", "old")]
    assert [(r["id"], r["content"], r["tags"]) for r in res["patches"]] == [
        (p["id"], "192.0.2.22", ["x:1"])]
    assert [(r["id"], r["type"], r["content"]) for r in res["puts"]] == [
        (u["id"], "TXT", "v=DMARC1; p=none")]
    assert [(r["name"], r["content"]) for r in res["posts"]] == [
        ("new1." + zone, "192.0.2.4"), ("new2." + zone, '"quoted"')]
    # the posted records are the stored ones (ids that GET finds)
    for r in res["posts"] + res["patches"] + res["puts"]:
        assert api.get(records_path(zid) + "/" + r["id"]) == r
    expect_answer(srv, "put." + zone, "TXT", rdatas("TXT", '"v=DMARC1; p=none"'))
    # an empty batch: empty lists, still one version
    body = api.ok("POST", records_path(zid) + "/batch", json={})
    assert body["result"] == {"deletes": [], "patches": [], "puts": [], "posts": []}
    assert body["zone_version"] == v0 + 2
