"""HEAD (commit 5b64e3d) attacked from outside, beside test_api_head.py:
big answers pipelined with GETs, HEAD with bodies (Content-Length, chunked,
Expect: 100-continue, past api-max-body), the propagation long-poll, paths
GET refuses, real clients, the method's case, audit, the metrics listener."""

import functools
import http.client
import shutil
import socket
import subprocess
import threading
import time
import types

import pytest
import requests

import servers
import test_api_head as head_tests
from test_api_head import MISSING_ZONE, comparable, exchange, one, parse, request, same_as_get
from test_audit import fields as audit_fields
from test_audit import wait_for

# test_api_head.py's fixtures: this module's server, a client, a zone.
srv = head_tests.srv
api = head_tests.api
zone = head_tests.zone

BIG = 10000


@pytest.fixture(scope="module")
def big(api):
    """A zone of BIG TXT records of 200 octets (about 2.3 MB exported, 5.2 MB
    listed on one page): its id."""
    zid = api.ok("POST", "/zones", json={"name": "bighead.api.test"})["result"]["id"]
    text = "".join('h%d.bighead.api.test. 300 IN TXT "%s"\n' % (n, "x" * 200) for n in range(BIG))
    api.ok("POST", "/zones/%s/dns_records/import" % zid, data=text.encode())
    return zid


def kept(fields):
    """comparable() without Connection (a keep-alive answer has none)."""
    return [f for f in comparable(fields) if f[0] != "connection"]


def answers(raw, *heads):
    """Each response of raw in turn, (status, fields, body) (heads: whether
    each answers a HEAD); nothing may follow the last."""
    out = []
    for head in heads:
        status, fields, body, raw = parse(raw, head)
        out.append((status, fields, body))
    assert raw == b"", raw
    return out


def length(fields):
    (n,) = [int(v) for k, v in fields if k.lower() == "content-length"]
    return n


def test_big_answers_pipelined(srv, api, big):
    """HEAD of the export and of a 10,003-record page pipelined before a GET:
    headers only, GET's Content-Length, the GET whole; no slower than GET."""
    export = "/zones/%s/dns_records/export" % big
    listing = "/zones/%s/dns_records?per_page=50000" % big
    t = time.monotonic()
    g_export, g_listing = (one(srv, "GET", p, token=api.token) for p in (export, listing))
    get_s = time.monotonic() - t
    assert len(g_export[2]) > 2000000 and b'"total_count":%d' % (BIG + 3) in g_listing[2]
    t = time.monotonic()
    raw = exchange(srv, request("HEAD", export, token=api.token, close=False)
                   + request("HEAD", listing, token=api.token, close=False)
                   + request("HEAD", export, token=api.token, close=False)
                   + request("GET", "/zones/%s/dns_records?per_page=2" % big, token=api.token))
    head_s = time.monotonic() - t
    (s1, f1, _), (s2, f2, _), (s3, f3, _), (s4, _, body) = answers(raw, True, True, True, False)
    assert (s1, s2, s3, s4) == (200, 200, 200, 200)
    assert kept(f1) == kept(f3) == kept(g_export[1])
    assert kept(f2) == kept(g_listing[1])
    assert length(f2) == len(g_listing[2]) and b'"count":2' in body
    assert head_s < 2 * get_s + 2, (head_s, get_s)


def test_big_head_concurrent_and_repeated(srv, api, big):
    """Four keep-alive clients HEAD the big listing five times each: GET's
    Content-Length, no body, and each connection answers a GET after."""
    path = "/client/v4/zones/%s/dns_records?per_page=50000" % big
    hdr = {"Authorization": "Bearer " + api.token}
    seen, errors = [], []

    def client():
        try:
            c = http.client.HTTPConnection("127.0.0.1", srv.api_port, timeout=30)
            for _ in range(5):
                c.request("HEAD", path, headers=hdr)
                r = c.getresponse()
                seen.append((r.status, r.getheader("Content-Length"), r.read()))
            c.request("GET", "/client/v4/user/tokens/verify", headers=hdr)
            r = c.getresponse()
            seen.append((r.status, "verify", r.read()[:16]))
            c.close()
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=client) for _ in range(4)]
    [t.start() for t in threads]
    [t.join(60) for t in threads]
    assert errors == []
    expected = str(len(one(srv, "GET", path[len("/client/v4"):], token=api.token)[2]))
    assert sorted(set(seen)) == [(200, expected, b""), (200, "verify", b'{"success":true,')]
    assert len(seen) == 24


def test_head_with_bodies_keeps_the_connection_in_step(srv, api, zone):
    """A HEAD carrying a write's body by Content-Length, then by chunks, then
    a GET: three answers in order, nothing written."""
    zid, name, _ = zone
    before = sorted(r["id"] for r in api.records(zid))
    record = b'{"name": "hb.%s", "type": "A", "content": "192.0.2.77"}' % name.encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(record), record)
    te = ["Transfer-Encoding: chunked", "Content-Type: application/json"]
    path = "/zones/%s/dns_records" % zid
    raw = exchange(srv, request("HEAD", path, token=api.token, body=record, close=False)
                   + request("HEAD", path, token=api.token, headers=te, close=False) + chunked
                   + request("GET", path, token=api.token))
    (s1, f1, _), (s2, f2, _), (s3, _, body) = answers(raw, True, True, False)
    assert (s1, s2, s3) == (200, 200, 200)
    assert length(f1) == length(f2) == len(body)
    assert sorted(r["id"] for r in api.records(zid)) == before


def test_head_expect_100_continue(srv, api, zone):
    """Expect: 100-continue: 100, the body read (not taken for a request),
    then HEAD's answer and the GET's."""
    zid, name, _ = zone
    body = b'{"name": "exp.%s", "type": "A", "content": "192.0.2.78"}' % name.encode()
    path = "/zones/%s/dns_records" % zid
    with socket.create_connection(("127.0.0.1", srv.api_port), timeout=10) as s:
        s.sendall(request("HEAD", path, token=api.token, close=False,
                          headers=["Expect: 100-continue", "Content-Type: application/json",
                                   "Content-Length: %d" % len(body)]))
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(body + request("GET", path, token=api.token))
        raw = b"".join(iter(lambda: s.recv(65536), b""))
    (s1, f1, _), (s2, _, got) = answers(raw, True, False)
    assert (s1, s2) == (200, 200) and length(f1) == len(got)
    assert b"192.0.2.78" not in got


def test_head_long_poll(srv, api, zone):
    """propagation?wait=S: HEAD waits as GET does (the whole wait for a
    version not yet made, none for one served)."""
    zid, _, _ = zone
    serial = api.get("/zones/%s" % zid)["serial"]
    ahead = "/zones/%s/propagation?version=%d&wait=0.6" % (zid, serial + 1000)
    answers = []
    for method in ("HEAD", "GET"):
        t = time.monotonic()
        answers.append(one(srv, method, ahead, token=api.token) + (time.monotonic() - t,))
    (hs, hf, _, ht), (gs, gf, got, gt) = answers
    assert hs == gs == 200 and comparable(hf) == comparable(gf) and length(hf) == len(got)
    assert b'"live":false' in got and 0.55 < ht < 5 and 0.55 < gt < 5, (ht, gt)
    t = time.monotonic()
    now = "/zones/%s/propagation?version=%d&wait=30" % (zid, serial)
    assert b'"live":true' in same_as_get(srv, now, token=api.token)[2]
    assert time.monotonic() - t < 5
    for bad in ("wait=nan", "wait=61", "wait=-1", "wait=1", "version=x&wait=1"):
        path = "/zones/%s/propagation?%s" % (zid, bad)
        assert same_as_get(srv, path, token=api.token)[0] == 400, bad


def test_head_where_get_refuses_or_odd_urls(srv, api, zone):
    """HEAD answers as GET on paths GET has no handler for, odd spellings of
    URLs, doubled credentials, HTTP/1.0 and conditional fields (zonecast
    implements If-Match on writes only: a read ignores If-Match and
    If-None-Match, HEAD as GET, so no 304 from either)."""
    zid, _, rid = zone
    tid = api.get("/user/tokens/verify")["id"]
    etag = [v for k, v in one(srv, "GET", "/zones/%s/dns_records/%s" % (zid, rid),
                              token=api.token)[1] if k.lower() == "etag"][0]
    gone = (405,)   # a path GET does not take (with Allow, 4ae3d16)
    cases = (
        ("/zones/%s/dns_records/batch" % zid, {}, gone),
        ("/zones/%s/dns_records/import" % zid, {}, gone),
        ("/zones/%s/retry" % zid, {}, gone),
        ("/zones/%s/tsig_keys/%s?wait=live" % (zid, MISSING_ZONE), {}, gone),
        ("/zones/%s/propagation" % zid, {}, (400,)),
        ("/zones/%s/dns_records/export?type=A" % zid, {}, (400,)),
        ("/zones/%s/dnssec?wait=live" % zid, {}, (400,)),
        ("/user/tokens/permission_groups", {}, (200,)),
        ("/user/tokens/%s" % tid, {}, (200,)),
        ("/user/tokens/%s" % MISSING_ZONE, {}, (404,)),
        ("/zones/", {}, (200,)),
        ("//client/v4/zones//%s//" % zid, {}, (200,)),
        ("//client/v4/zones/%s/dns_records/%%7a" % zid, {}, (404,)),
        ("//client/v4", {}, (404,)),
        ("/zones", dict(headers=["Authorization: Bearer " + api.token]), (400,)),
        ("/zones/%s/dns_records/%s" % (zid, rid), dict(headers=["If-None-Match: " + etag]), (200,)),
        ("/zones/%s/dns_records/%s" % (zid, rid), dict(headers=['If-Match: "nope"']), (200,)),
        ("/zones/%s/dns_records/%s" % (zid, rid), dict(headers=["If-Match: bad tag"]), (200,)),
    )
    for path, kw, expected in cases:
        status, fields, _ = same_as_get(srv, path, token=api.token, **kw)
        assert status in expected, (path, status)
        # an Allow field (of a 405) offers HEAD exactly where it offers GET
        for allow in [v.split(", ") for k, v in fields if k.lower() == "allow"]:
            assert ("HEAD" in allow) == ("GET" in allow), (path, allow)
    # HTTP/1.0: headers only, then the server closes
    raw = exchange(srv, b"HEAD /client/v4/zones HTTP/1.0\r\nAuthorization: Bearer "
                   + api.token.encode() + b"\r\n\r\n")
    ((status, fields, _),) = answers(raw, True)
    assert status == 200 and length(fields) == len(one(srv, "GET", "/zones", token=api.token)[2])


def test_real_clients(srv, api, zone):
    """http.client and requests read HEAD's answer as HEAD's and reuse the
    connection; curl -I of two URLs reuses one connection."""
    zid, _, _ = zone
    hdr = {"Authorization": "Bearer " + api.token}
    path = "/client/v4/zones/%s/dns_records/export" % zid
    c = http.client.HTTPConnection("127.0.0.1", srv.api_port, timeout=10)
    c.request("HEAD", path, headers=hdr)
    h = c.getresponse()
    assert (h.status, h.read()) == (200, b"")
    sock = c.sock
    c.request("GET", path, headers=hdr)
    g = c.getresponse()
    text = g.read()
    assert c.sock is sock and g.status == 200 and int(h.getheader("Content-Length")) == len(text)
    assert h.getheader("Content-Type") == "text/plain" and b"SOA" in text
    c.close()
    r = requests.head(srv.api_url + "/zones/%s" % zid, headers=hdr, timeout=10)
    assert r.status_code == 200 and r.content == b"" and int(r.headers["Content-Length"]) > 100
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    out = subprocess.run(["curl", "-sv", "-I", "-H", "Authorization: Bearer " + api.token,
                          srv.api_url + "/zones", srv.api_url + "/user/tokens/verify"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0 and out.stdout.count("HTTP/1.1 200 OK") == 2, out
    assert "Re-using existing connection" in out.stderr, out.stderr


def test_method_case_and_audit(srv, api, zone):
    """Methods are case-sensitive (RFC 9110 section 9.1): "head" is no HEAD
    but an unknown method, answered as FOO is, with a body, writing nothing
    and audited as a refusal. A HEAD a zone-scoped token may not make is
    audited naming HEAD; a read-only token's HEAD on a write path is a read."""
    zid, name, _ = zone
    body = b'{"name": "lower.%s"}' % name.encode()
    for method in ("head", "Head", "FOO"):
        status, fields, got = one(srv, method, "/zones", token=api.token, body=body)
        assert status == 405 and length(fields) == len(got) > 0, (method, got)
    assert api.get("/zones", params={"name": "lower." + name}) == []
    other = api.ok("POST", "/zones", json={"name": "scoped.%s" % name})["result"]
    scoped = srv.create_token(zone=other["name"])
    path = "/zones/%s/secondaries" % zid
    assert one(srv, "HEAD", path, token=scoped)[0] == 403
    ro = srv.create_token(read_only=True)
    assert one(srv, "HEAD", "/zones/%s/tsig_keys" % zid, token=ro, body=b'{"name": "k"}')[0] == 200

    def lines():
        return [audit_fields(ln) for ln in srv.log().splitlines() if "audit: api" in ln
                and ("/client/v4" + path in ln or '"head /client/v4/zones"' in ln
                     or "/tsig_keys" in ln)]
    wait_for(lambda: len(lines()) >= 2, "the audit lines")
    time.sleep(0.2)
    found = sorted((f["operation"], f["status"]) for f in lines())
    assert found == [("HEAD /client/v4" + path, "403"), ("head /client/v4/zones", "405")], found


def test_metrics_listener_and_body_limit(zonecast_api_factory):
    """The metrics listener (its own HTTP server, GET and HEAD): HEAD as GET
    on every path, pipelined with GETs; the API with a small api-max-body:
    a HEAD announcing a larger body gets GET's 413 and the connection closes."""
    mport = servers.free_port()
    s = zonecast_api_factory(options=[("metrics-listen", "127.0.0.1:%d" % mport),
                                      ("api-max-body", "1024")])
    token = s.create_token()
    metrics = functools.partial(exchange, types.SimpleNamespace(api_port=mport))

    def req(method, path, close=True):
        return ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n"
                % (method, path, "Connection: close\r\n" if close else "")).encode()

    for path in ("/healthz", "/readyz", "/", "/nope"):
        h = parse(metrics(req("HEAD", path)), True)
        g = parse(metrics(req("GET", path)), False)
        assert h[0] == g[0] and comparable(h[1]) == comparable(g[1]) and h[3] == b"", path
    raw = metrics(req("HEAD", "/metrics", False) + req("HEAD", "/healthz", False)
                  + req("GET", "/healthz"))
    (s1, f1, _), (s2, _, _), (s3, _, body) = answers(raw, True, True, False)
    assert (s1, s2, s3, body) == (200, 200, 200, b"ok\n") and length(f1) > 1000
    assert parse(metrics(req("POST", "/healthz")), False)[0] == 405
    big = b"{" + b" " * 2000 + b"}"
    for method in ("HEAD", "GET"):
        raw = exchange(s, request(method, "/zones", token=token, body=big, close=False)
                       + request("GET", "/zones", token=token))
        status, fields, _, rest = parse(raw, method == "HEAD")
        assert status == 413 and ("connection", "close") in comparable(fields), method
        assert b"HTTP/1.1" not in rest, (method, rest)
    # chunked, so unannounced: 413 once it ends, the connection going on;
    # cut off past twice the limit (docs/configuration.md), HEAD as GET
    te = ["Transfer-Encoding: chunked"]
    over = b"3e8\r\n" + b" " * 1000 + b"\r\n1f4\r\n" + b" " * 500 + b"\r\n0\r\n\r\n"
    cut = b"bb8\r\n" + b" " * 3000 + b"\r\n0\r\n\r\n"
    seen = {}
    for method in ("HEAD", "GET"):
        raw = exchange(s, request(method, "/zones", token=token, headers=te, close=False) + over
                       + request("GET", "/user/tokens/verify", token=token))
        (status, fields, _), (after, _, _) = answers(raw, method == "HEAD", False)
        seen[method] = (status, length(fields), after)
        seen[method + " cut"] = exchange(s, request(method, "/zones", token=token, headers=te,
                                                    close=False) + cut + request("GET", "/zones"))
    assert seen["HEAD"] == seen["GET"] and seen["GET"][::2] == (413, 200)
    assert seen["HEAD cut"] == seen["GET cut"] == b""


def test_chunked_body_between_one_and_two_limits_gets_413(zonecast_api_factory):
    """A chunked body under twice api-max-body gets 413 (docs/configuration.md),
    also when one chunk crosses the limit: one chunk of 1500 octets at 1024 was
    cut off unanswered while 1000 + 1000 got 413 (api_req_body() counted only
    the discarded octets, the crossing piece whole; found by this file)."""
    s = zonecast_api_factory(options=[("api-max-body", "1024")])
    token = s.create_token()
    one_chunk = b"5dc\r\n" + b" " * 1500 + b"\r\n0\r\n\r\n"
    for method in ("HEAD", "GET"):
        raw = exchange(s, request(method, "/zones", token=token, close=False,
                                  headers=["Transfer-Encoding: chunked"]) + one_chunk
                       + request("GET", "/user/tokens/verify", token=token))
        assert raw.startswith(b"HTTP/1.1 413 "), (method, raw[:200])
