"""An outside tester's attack on the HTTP layer below the JSON (2026-12-07):
heads that libmicrohttpd 0.9.75 reads otherwise than a proxy in front
could. A blank before the colon ("Transfer-Encoding : chunked",
"Content-Length : N") made a field that framed nothing, so the body, a
whole POST, ran as the next request; a Transfer-Encoding other than
chunked held the connection until the client gave up; a NUL octet cut a
header's value ("Bearer T\\0X" read as "Bearer T": libmicrohttpd gives
no way to see it, docs/differences.md); HTTP/1.1 requests
without a Host, or with two, were served. Each is refused now (400, 501
for a coding not understood) before the body, the connection closed, on
the API's listener and on the metrics one (common/http_check.c).

Each test fails on the binary before the fix (777eb8c)."""

import json
import socket

import pytest

from test_api import new_zone
import test_api_head as head_tests
from test_metrics import start_server

_names = iter(range(1, 1000))
srv, api = head_tests.srv, head_tests.api   # the module's server and client fixtures


def send(port, data, timeout=5):
    """Every byte the server sends on one connection until it closes (or
    the timeout: a server still waiting for more is a failure here)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                raise AssertionError("no answer in %ds, got %r" % (timeout, out))
            if not chunk:
                return out
            out += chunk


def statuses(raw):
    return [line.split(b" ")[1] for line in raw.split(b"\r\n") if line.startswith(b"HTTP/1.")]


def head(lines, body=b""):
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def hidden_post(api, zid, name):
    """A whole POST of a record, as a body to hide."""
    body = json.dumps({"type": "A", "name": name, "content": "192.0.2.9"}).encode()
    return head(["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid, "Host: x",
                 "Authorization: Bearer " + api.token, "Content-Type: application/json",
                 "Content-Length: %d" % len(body)], body)


def records_named(api, zid, name):
    return api.ok("GET", "/zones/%s/dns_records" % zid, params={"name": name})["result"]


def test_a_blank_before_the_colon_hides_nothing(srv, api):
    zid, zone = new_zone(api, "smuggle")
    for shape in ("Transfer-Encoding : chunked", "Transfer-Encoding\t: chunked",
                  "Content-Length : %d"):
        name = "s%d.%s" % (next(_names), zone)
        inner = hidden_post(api, zid, name)
        lines = ["GET /client/v4/zones HTTP/1.1", "Host: x",
                 "Authorization: Bearer " + api.token]
        if "Transfer" in shape:
            body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(inner), inner)
            lines += [shape, "Content-Length: 4"]
        else:
            body = inner
            lines.append(shape % len(inner))
        raw = send(srv.api_port, head(lines, body))
        assert statuses(raw) == [b"400"], (shape, raw[:300])
        assert b"not a field name" in raw and b"Connection: close" in raw, raw[:400]
        assert records_named(api, zid, name) == [], shape


@pytest.mark.parametrize("te,status", [
    ("identity", b"400"), ("gzip, chunked", b"501"), ("chunked, identity", b"400"),
    ("chunked, chunked", b"501"), ("xchunked", b"400"), ('"chunked"', b"400"),
    ("chunked;q=1", b"400"),
    # a blank after the value: a proxy reads chunked (RFC 9110 §5.5),
    # libmicrohttpd did not, and the request behind it became body
    ("chunked ", b"400"), ("chunked\t", b"400")])
def test_transfer_encodings_other_than_chunked_are_answered(srv, api, te, status):
    """They held the connection (10 s, api-timeout) without an answer and
    swallowed the request behind them as body."""
    zid, zone = new_zone(api, "te")
    name = "t%d.%s" % (next(_names), zone)
    raw = send(srv.api_port, head(["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid,
                                   "Host: x", "Authorization: Bearer " + api.token,
                                   "Transfer-Encoding: " + te])
               + hidden_post(api, zid, name), timeout=3)
    assert statuses(raw) == [status], raw[:300]
    assert records_named(api, zid, name) == []


def test_chunked_given_twice_or_in_http10_is_refused(srv, api):
    zid, zone = new_zone(api, "te2")
    body = json.dumps({"type": "A", "name": "c." + zone, "content": "192.0.2.1"}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    for lines in (["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid, "Host: x",
                   "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
                  ["POST /client/v4/zones/%s/dns_records HTTP/1.0" % zid,
                   "Transfer-Encoding: chunked"]):
        raw = send(srv.api_port, head(lines + ["Authorization: Bearer " + api.token],
                                      chunked), timeout=3)
        assert statuses(raw) in ([b"400"], [b"501"]), (lines, raw[:300])
    assert records_named(api, zid, "c." + zone) == []
    # plain chunked still works, any case
    raw = send(srv.api_port, head(["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid,
                                   "Host: x", "Authorization: Bearer " + api.token,
                                   "Transfer-Encoding: Chunked", "Connection: close"], chunked))
    assert statuses(raw) == [b"200"], raw[:300]


def test_host_is_required_once_in_http11(srv, api):
    auth = "Authorization: Bearer " + api.token
    for lines in (["GET /client/v4/user/tokens/verify HTTP/1.1", auth],
                  ["GET /client/v4/user/tokens/verify HTTP/1.1", "Host: a", "Host: b", auth],
                  ["GET /client/v4/user/tokens/verify HTTP/1.0", "Host: a", "Host: b", auth]):
        raw = send(srv.api_port, head(lines))
        assert statuses(raw) == [b"400"] and b"Host" in raw, (lines, raw[:300])
    # HTTP/1.0 without a Host is fine; HTTP/1.1 with one is
    raw = send(srv.api_port, head(["GET /client/v4/user/tokens/verify HTTP/1.0", auth]))
    assert statuses(raw) == [b"200"], raw[:300]
    raw = send(srv.api_port, head(["GET /client/v4/user/tokens/verify HTTP/1.1", "Host: h",
                                   auth, "Connection: close"]))
    assert statuses(raw) == [b"200"], raw[:300]


def test_the_metrics_listener_refuses_the_same_heads(tmp_path):
    s = start_server(tmp_path)
    try:
        port = s.metrics_port
        for lines in (["GET /metrics HTTP/1.1", "Host: x", "Content-Length : 3"],
                      ["GET /metrics HTTP/1.1"],
                      ["GET /metrics HTTP/1.1", "Host: x", "Transfer-Encoding: identity"],
                      ["GET /metrics HTTP/1.1", "Host: x", "Transfer-Encoding: chunked "],
                      ["GET /metrics HTTP/1.1", "Host: x", "Content-Length: 2",
                       "Transfer-Encoding: chunked"]):
            raw = send(port, head(lines), timeout=3)
            assert statuses(raw) == [b"400"], (lines, raw[:300])
        raw = send(port, head(["GET /metrics HTTP/1.1", "Host: x", "Connection: close"]))
        assert statuses(raw) == [b"200"], raw[:200]
    finally:
        problems = s.stop()
    assert not problems, problems


def test_many_query_arguments_get_an_answer(srv, api):
    """About 500 arguments filled libmicrohttpd's memory for the
    connection, and it closed it without a word (a write with ?wait=live
    and 600 arguments too: nothing written, nothing said)."""
    auth = "Authorization: Bearer " + api.token
    for n, status in ((256, b"400"), (257, b"414"), (600, b"414"), (5000, b"414")):
        q = "&".join("a=1" for _ in range(n))
        raw = send(srv.api_port, head(["GET /client/v4/zones?%s HTTP/1.1" % q, "Host: x", auth,
                                       "Connection: close"]))
        assert statuses(raw) == [status], (n, raw[:300])
    zid, zone = new_zone(api, "args")
    body = json.dumps({"type": "A", "name": "w." + zone, "content": "192.0.2.1"}).encode()
    q = "wait=live&" + "&".join("a=1" for _ in range(600))
    raw = send(srv.api_port, head(["POST /client/v4/zones/%s/dns_records?%s HTTP/1.1" % (zid, q),
                                   "Host: x", auth, "Content-Length: %d" % len(body),
                                   "Connection: close"], body))
    assert statuses(raw) == [b"414"], raw[:300]
    assert records_named(api, zid, "w." + zone) == []


def test_escaped_slash_and_absolute_form_targets(srv, api):
    """'/zones%2F{id}' was decoded before the path was split and named the
    zone (a proxy allowing /zones only let it through): 400 now. An
    absolute-form target (RFC 9112 section 3.2.2: a server MUST accept it)
    got 404: it is served as its path."""
    zid, zone = new_zone(api, "slash")
    auth = "Authorization: Bearer " + api.token
    for target in ("/client/v4/zones%%2F%s" % zid, "/client/v4/zones%%2f%s" % zid,
                   "/client%%2Fv4/zones/%s" % zid):
        raw = send(srv.api_port, head(["GET %s HTTP/1.1" % target, "Host: x", auth]))
        assert statuses(raw) == [b"400"] and b"%2F" in raw, (target, raw[:300])
    # a %2F in the query is a query's business (a filter may hold '/')
    raw = send(srv.api_port, head(["GET /client/v4/zones?name=a%%2Fb HTTP/1.1", "Host: x",
                                   auth, "Connection: close"]))
    assert statuses(raw) == [b"200"], raw[:300]
    for target in ("http://x/client/v4/zones/%s" % zid, "HTTPS://x:1/client/v4/zones/%s" % zid):
        raw = send(srv.api_port, head(["GET %s HTTP/1.1" % target, "Host: x", auth,
                                       "Connection: close"]))
        assert statuses(raw) == [b"200"] and zid.encode() in raw, (target, raw[:300])


def test_a_folded_framing_field_hides_nothing(srv, api):
    """libmicrohttpd 0.9.75 appends a folded line to the field's name:
    "Content-Length:\\r\\n 187" became a field "Content-Length187", and a
    proxy reading a length of 187 (RFC 9112 section 5.2) passed a body
    that ran here as the next request. Refused now (third-round tester)."""
    zid, zone = new_zone(api, "fold")
    name = "f.%s" % zone
    inner = hidden_post(api, zid, name)
    for lines, body in (
            (["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid, "Host: x",
              "Authorization: Bearer " + api.token, "Content-Type: application/json",
              "Content-Length:", " %d" % len(inner)], inner),
            (["POST /client/v4/zones/%s/dns_records HTTP/1.1" % zid, "Host: x",
              "Authorization: Bearer " + api.token, "Transfer-Encoding:", " chunked"],
             b"%x\r\n%s\r\n0\r\n\r\n" % (len(inner), inner))):
        raw = send(srv.api_port, head(lines, body))
        assert statuses(raw) == [b"400"] and b"folded" in raw, (lines, raw[:300])
    assert records_named(api, zid, name) == []
    # a fold elsewhere still works (libmicrohttpd's own business)
    raw = send(srv.api_port, head(["GET /client/v4/user/tokens/verify HTTP/1.1", "Host: x",
                                   "Authorization: Bearer " + api.token, "X-Note: a",
                                   " b", "Connection: close"]))
    assert statuses(raw) == [b"200"], raw[:300]
