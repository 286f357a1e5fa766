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
