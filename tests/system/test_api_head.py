"""HEAD on the HTTP API (RFC 9110 section 9.3.2).

A HEAD is answered as the GET of the same URL: the same status and header
fields, Content-Length the length of the body GET sends, and no body on
the wire. Authentication and errors apply alike (401, 403, 404, 405, 400
with no body), a HEAD reaches no handler but GET's, so it never writes,
and the audit log treats it as it treats a GET. Requests go over raw
sockets, so what libmicrohttpd puts on the wire is what is checked.
"""

import itertools
import socket
import time

import pytest

from test_audit import fields as audit_fields  # a text audit line's key=value pairs
from test_audit import wait_for

_seq = itertools.count(1)
MISSING_ZONE = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


@pytest.fixture(scope="module")
def zone(api):
    """A zone of this module's own with two records: (zone id, name, record id)."""
    name = "head%d.api.test" % next(_seq)
    zid = api.ok("POST", "/zones", json={"name": name})["result"]["id"]
    rid = api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"name": "www." + name, "type": "A", "content": "192.0.2.1"})["result"]["id"]
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"name": name, "type": "TXT", "content": "v=spf1 -all"})
    return zid, name, rid


def request(method, path, token=None, body=b"", headers=(), close=True):
    """One request as bytes (path under /client/v4 unless it starts with //)."""
    target = path[1:] if path.startswith("//") else "/client/v4" + path
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: 127.0.0.1"]
    if token is not None:
        lines.append("Authorization: Bearer " + token)
    if body:
        lines += ["Content-Type: application/json", "Content-Length: %d" % len(body)]
    lines += list(headers)
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def exchange(srv, data):
    """Sends data on one connection; every byte the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", srv.api_port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def parse(raw, head):
    """The first response of raw: (status, [(name, value)...], body, rest).
    A response to a HEAD has no body whatever its Content-Length says."""
    end = raw.index(b"\r\n\r\n")
    lines = raw[:end].decode("latin-1").split("\r\n")
    version, status = lines[0].split(" ")[:2]
    assert version == "HTTP/1.1", lines[0]
    fields = [tuple(v.strip() for v in line.split(":", 1)) for line in lines[1:]]
    length = 0
    if not head:
        (length,) = [int(v) for k, v in fields if k.lower() == "content-length"]
    body = raw[end + 4:end + 4 + length]
    assert len(body) == length, "short body: %r" % raw
    return int(status), fields, body, raw[end + 4 + length:]


def one(srv, method, path, **kw):
    """A request alone on its connection: (status, fields, body); nothing
    may follow the response."""
    status, fields, body, rest = parse(exchange(srv, request(method, path, **kw)),
                                       method == "HEAD")
    assert rest == b"", "%s %s: %d bytes after the response: %r" % (method, path, len(rest), rest)
    return status, fields, body


def comparable(fields):
    """Header fields as a sorted list, names in lower case, without Date."""
    return sorted((k.lower(), v) for k, v in fields if k.lower() != "date")


def same_as_get(srv, path, **kw):
    """HEAD path answers what GET path does, without a body; returns GET's
    (status, fields, body)."""
    h_status, h_fields, _ = one(srv, "HEAD", path, **kw)
    g_status, g_fields, g_body = one(srv, "GET", path, **kw)
    assert h_status == g_status, "HEAD %s: %d, GET: %d %r" % (path, h_status, g_status, g_body)
    assert comparable(h_fields) == comparable(g_fields), (path, h_fields, g_fields)
    lengths = [int(v) for k, v in h_fields if k.lower() == "content-length"]
    assert lengths == [len(g_body)], (path, h_fields, len(g_body))
    return g_status, g_fields, g_body


def test_head_answers_as_get_on_reads(srv, api, zone):
    zid, name, rid = zone
    for path, ctype in (("/zones", "application/json"),
                        ("/zones?name=%s" % name, "application/json"),
                        ("/zones/%s" % zid, "application/json"),
                        ("/zones/%s/dns_records" % zid, "application/json"),
                        ("/zones/%s/dns_records?type=A&per_page=1" % zid, "application/json"),
                        ("/zones/%s/dns_records/%s" % (zid, rid), "application/json"),
                        ("/zones/%s/dns_records/export" % zid, "text/plain"),
                        ("/zones/%s/dnssec" % zid, "application/json"),
                        ("/zones/%s/secondaries" % zid, "application/json"),
                        ("/zones/%s/tsig_keys" % zid, "application/json"),
                        ("/user/tokens/verify", "application/json"),
                        ("/user/tokens", "application/json"),
                        ("/fleet", "application/json")):
        status, fields, body = same_as_get(srv, path, token=api.token)
        assert status == 200, (path, body)
        assert ("content-type", ctype) in comparable(fields), (path, fields)
        assert len(body) > 0
    # the record's ETag comes with the HEAD too
    _, fields, _ = one(srv, "HEAD", "/zones/%s/dns_records/%s" % (zid, rid), token=api.token)
    assert [k for k, _ in fields if k.lower() == "etag"], fields


def test_head_answers_as_get_on_errors(srv, api, zone):
    zid, name, rid = zone
    cases = (
        # no token, a bad one, another scheme
        ("/zones", dict(), 401),
        ("/zones/%s/dns_records" % zid, dict(token="zc_not_a_token"), 401),
        ("/zones", dict(headers=["Authorization: Basic " + api.token]), 401),
        # missing zone, record, path; outside /client/v4
        ("/zones/%s" % MISSING_ZONE, dict(token=api.token), 404),
        ("/zones/%s/dns_records" % MISSING_ZONE, dict(token=api.token), 404),
        ("/zones/%s/dns_records/%s" % (zid, MISSING_ZONE), dict(token=api.token), 404),
        ("/nope", dict(token=api.token), 404),
        ("//foo", dict(token=api.token), 404),
        # a path GET does not take (a TSIG key: DELETE only)
        ("/zones/%s/tsig_keys/%s" % (zid, MISSING_ZONE), dict(token=api.token), 405),
        # a parameter zonecast does not implement; wait on a read
        ("/zones/%s/dns_records?bogus=1" % zid, dict(token=api.token), 400),
        ("/zones?wait=live", dict(token=api.token), 400),
        ("/zones/%s/dns_records?page=0" % zid, dict(token=api.token), 400),
    )
    for path, kw, expected in cases:
        status, fields, body = same_as_get(srv, path, **kw)
        assert status == expected, (path, status, body)
        assert b'"success":false' in body, body


def test_head_with_narrow_tokens(srv, api, zone):
    """A read-only token may HEAD what it may GET (a HEAD is no write); a
    token scoped to another zone gets 403 as GET does."""
    zid, name, rid = zone
    ro = srv.create_token(read_only=True)
    for path in ("/zones", "/zones/%s" % zid, "/zones/%s/dns_records" % zid):
        assert same_as_get(srv, path, token=ro)[0] == 200, path
    other = api.ok("POST", "/zones", json={"name": "headother%d.api.test" % next(_seq)})
    scoped = srv.create_token(zone=other["result"]["name"])
    for path in ("/zones/%s" % zid, "/zones/%s/dns_records" % zid):
        assert same_as_get(srv, path, token=scoped)[0] == 403, path
    assert same_as_get(srv, "/zones/%s" % other["result"]["id"], token=scoped)[0] == 200


def test_head_keeps_the_connection_in_step(srv, api, zone):
    """Pipelined on one connection, HEAD, HEAD, GET: each response comes
    whole and the next starts right after a HEAD's header fields."""
    zid, _, _ = zone
    path = "/zones/%s/dns_records" % zid
    raw = exchange(srv, request("HEAD", path, token=api.token, close=False)
                   + request("HEAD", "/zones/%s" % MISSING_ZONE, token=api.token, close=False)
                   + request("GET", path, token=api.token))
    s1, f1, _, raw = parse(raw, True)
    s2, _, _, raw = parse(raw, True)
    s3, f3, body, raw = parse(raw, False)
    assert (s1, s2, s3) == (200, 404, 200) and raw == b""
    assert [v for k, v in f1 if k.lower() == "content-length"] == [str(len(body))]


def test_head_never_writes(srv, api, zone):
    """A HEAD on every write route, with a body that would be a valid
    write: GET's answer, and nothing changed."""
    zid, name, rid = zone
    before = (api.get("/zones/%s" % zid)["serial"],
              sorted(r["id"] for r in api.records(zid)),
              [t["status"] for t in api.get("/user/tokens", params={"per_page": 1000})],
              len(api.get("/zones", params={"per_page": 1000})),
              api.get("/zones/%s/tsig_keys" % zid))
    record = b'{"name": "head.%s", "type": "A", "content": "192.0.2.9"}' % name.encode()
    writes = (
        ("/zones", b'{"name": "headmade.api.test"}'),
        ("/zones/%s" % zid, b'{"default_ttl": 60}'),
        ("/zones/%s/dns_records" % zid, record),
        ("/zones/%s/dns_records?wait=live" % zid, record),
        ("/zones/%s/dns_records/%s" % (zid, rid), record),
        ("/zones/%s/dns_records/batch" % zid, b'{"deletes": [{"id": "%s"}]}' % rid.encode()),
        ("/zones/%s/dns_records/import" % zid, b"headimp 300 IN A 192.0.2.10\n"),
        ("/zones/%s/dnssec" % zid, b'{"status": "active"}'),
        ("/zones/%s/secondaries" % zid, b'{"notify": ["192.0.2.2:53"]}'),
        ("/zones/%s/tsig_keys" % zid, b'{"name": "head.key", "algorithm": "hmac-sha256"}'),
        ("/zones/%s/retry" % zid, b""),
        ("/user/tokens", b'{"name": "head-made"}'),
        ("/user/tokens/1", b""),
    )
    for path, body in writes:
        head = one(srv, "HEAD", path, token=api.token, body=body)
        get = one(srv, "GET", path, token=api.token, body=body)
        assert head[0] == get[0], (path, head, get)
        assert comparable(head[1]) == comparable(get[1]), (path, head, get)
    after = (api.get("/zones/%s" % zid)["serial"],
             sorted(r["id"] for r in api.records(zid)),
             [t["status"] for t in api.get("/user/tokens", params={"per_page": 1000})],
             len(api.get("/zones", params={"per_page": 1000})),
             api.get("/zones/%s/tsig_keys" % zid))
    assert after == before
    assert api.get("/zones", params={"name": "headmade.api.test"}) == []
    assert api.get("/zones/%s/dnssec" % zid)["status"] == "disabled"


def test_head_audit_as_get(srv, api, zone):
    """The audit log: no line for a HEAD read, as for a GET; a refused
    credential logs one naming HEAD, as it names GET."""
    zid, _, _ = zone
    path = "/zones/%s/secondaries" % zid
    assert one(srv, "HEAD", path, token=api.token)[0] == 200
    assert one(srv, "HEAD", path, token="zc_not_a_token")[0] == 401
    assert one(srv, "GET", path, token="zc_not_a_token")[0] == 401
    assert one(srv, "GET", path, token=api.token)[0] == 200

    def lines():
        return [audit_fields(l) for l in srv.log().splitlines()
                if "audit: api" in l and "/client/v4" + path in l]
    found = wait_for(lambda: len(lines()) >= 2 and lines(), "the two audit lines")
    time.sleep(0.2)     # a line for a read would have come by now
    found = lines()
    assert sorted((f["operation"], f["status"]) for f in found) == [
        ("GET /client/v4" + path, "401"), ("HEAD /client/v4" + path, "401")], found
