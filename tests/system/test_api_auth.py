"""HTTP details of the API's authentication and preconditions (issue 11 item 10).

- `Authorization`: the scheme is case-insensitive (RFC 9110 §11.1) and one or
  more spaces part it from the token (§11.4); two `Authorization` fields get
  400 whatever they hold, and neither token is tried.
- `If-Match` (RFC 9110 §13.1.1) is `*` or a list of entity tags: a write goes
  ahead when any tag matches the record's ETag by the strong comparison (a
  weak `W/` tag never does), whatever the whitespace, empty list elements or
  number of `If-Match` lines; otherwise 412. A field that is no such list gets
  400. A refused write changes nothing (the record, its ETag, the zone's
  serial over DNS).

Requests go through python3-requests, and through http.client (or a raw
socket) where a request must carry a header field twice, which requests
cannot send.
"""

import http.client
import itertools
import json
import socket
import time

import dns.rcode
import pytest

_seq = itertools.count(1)


@pytest.fixture(scope="module")
def srv(zonecast_api):
    return zonecast_api


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def new_zone(api):
    name = "auth%d.api.test" % next(_seq)
    return api.ok("POST", "/zones", json={"name": name})["result"]["id"], name


def new_record(api, zid, zone, content="192.0.2.1"):
    """A record of the zone; returns (path of the record, its ETag)."""
    rec = api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"name": "r%d.%s" % (next(_seq), zone), "type": "A",
                       "content": content, "ttl": 300})["result"]
    path = "/zones/%s/dns_records/%s" % (zid, rec["id"])
    return path, api.call("GET", path).headers["ETag"]


def raw_request(srv, method, path, headers, body=None):
    """One request with exactly these header fields (a list of (name, value),
    names may repeat), over http.client; returns (status, parsed JSON)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.api_port, timeout=10)
    try:
        conn.putrequest(method, "/client/v4" + path, skip_accept_encoding=True)
        data = json.dumps(body).encode() if body is not None else None
        for name, value in headers:
            conn.putheader(name, value)
        if data is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        r = conn.getresponse()
        text = r.read()
        return r.status, json.loads(text) if text else None
    finally:
        conn.close()


def soa_serial(srv, zone):
    """The zone's serial as DNS serves it (a zone just made through the API
    is served a moment later)."""
    deadline = time.monotonic() + 5
    while True:
        m = srv.query(zone, "SOA")
        if m.rcode() == dns.rcode.NOERROR or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert m.rcode() == dns.rcode.NOERROR, m.to_text()
    return m.answer[0][0].serial


def settled(srv, api, zid, zone, timeout=20):
    """Waits until DNS serves the zone's serial as the API has it: a write
    is acknowledged before its build is served, and a serial served later
    would look like a change made by a refused write."""
    deadline = time.monotonic() + timeout
    while soa_serial(srv, zone) != api.get("/zones/%s" % zid)["serial"]:
        assert time.monotonic() < deadline, "DNS never served the API's serial"
        time.sleep(0.02)


def state(srv, api, path, zone):
    """What a refused write must leave alone: the record (content, ETag) and
    the zone's serial as DNS serves it."""
    r = api.call("GET", path)
    return r.status_code, r.json()["result"]["content"], r.headers["ETag"], soa_serial(srv, zone)


# ------------------------------------------------------------------ Authorization

@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
@pytest.mark.parametrize("spaces", [" ", "   "])
def test_bearer_scheme_is_case_insensitive(srv, api, scheme, spaces):
    """RFC 9110 §11.1: "the scheme is case-insensitive"; §11.4: 1*SP before
    the credentials. Reads and writes both get through."""
    r = api.call("GET", "/zones", token=None,
                 headers={"Authorization": scheme + spaces + api.token})
    assert r.status_code == 200, r.text
    r = api.call("POST", "/zones", token=None, json={"name": "case%d.api.test" % next(_seq)},
                 headers={"Authorization": scheme + spaces + api.token})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("value", [
    "", "Bearer", "Bearer ", "bearer", "Bearer" + "x" * 10, "Basic dXNlcjpwYXNz",
    "Token zc_abc", "BearerX zc_abc",
])
def test_no_bearer_token_is_401(srv, api, value):
    r = api.call("GET", "/zones", token=None, headers={"Authorization": value})
    assert r.status_code == 401, r.text
    assert r.json()["success"] is False


def test_lowercase_scheme_with_unknown_token_is_401(srv, api):
    r = api.call("GET", "/zones", token=None, headers={"Authorization": "bearer zc_nosuchtoken"})
    assert r.status_code == 401, r.text
    assert "invalid token" in r.text


@pytest.mark.parametrize("second", ["same", "other_valid", "invalid", "basic", "lowercase"])
def test_two_authorization_fields_are_400(srv, api, second):
    """Two credentials: neither is tried, whichever comes first, even when
    both name the same valid token; a write changes nothing."""
    other = srv.create_token()
    values = {"same": "Bearer " + api.token, "other_valid": "Bearer " + other,
              "invalid": "Bearer zc_nosuchtoken", "basic": "Basic dXNlcjpwYXNz",
              "lowercase": "bearer " + api.token}
    first = "Bearer " + api.token
    for order in ((first, values[second]), (values[second], first)):
        fields = [("Authorization", v) for v in order]
        status, body = raw_request(srv, "GET", "/zones", fields)
        assert status == 400, body
        assert body["success"] is False
        assert "Authorization" in body["errors"][0]["message"]
        name = "dup%d.api.test" % next(_seq)
        status, body = raw_request(srv, "POST", "/zones", fields, body={"name": name})
        assert status == 400, body
        assert api.get("/zones", params={"name": name}) == []


def test_two_authorization_fields_over_a_raw_socket(srv, api):
    """The same over a raw socket, the header names in two spellings."""
    req = ("GET /client/v4/zones HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Authorization: Bearer %s\r\nauthorization: Bearer %s\r\n"
           "Connection: close\r\n\r\n" % (api.token, api.token)).encode()
    with socket.create_connection(("127.0.0.1", srv.api_port), timeout=10) as s:
        s.sendall(req)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status_line = data.split(b"\r\n", 1)[0]
    assert b" 400 " in status_line, data[:500]


def test_one_authorization_field_among_others_still_works(srv, api):
    """Only Authorization is refused twice: other repeated fields (here two
    Accept lines) do not matter."""
    status, body = raw_request(srv, "GET", "/zones",
                               [("Authorization", "Bearer " + api.token),
                                ("Accept", "application/json"), ("Accept", "*/*")])
    assert status == 200, body


# ------------------------------------------------------------------ If-Match

def matching_lists(etag):
    """If-Match values (one field) that contain the record's strong ETag."""
    return [
        etag,
        '"nope", ' + etag,
        etag + ', "nope"',
        '"a","b",' + etag + ',"c"',
        '  ' + etag + '  ',
        '"a" ,\t' + etag,
        ', ' + etag + ' ,',
        ',,' + etag,
        'W/"x", ' + etag,
        'W/' + etag + ', ' + etag,
        '*',
        ' * ',
    ]


def failing_lists(etag):
    """Well-formed If-Match values that do not match the record by the strong
    comparison."""
    inner = etag.strip('"')
    return [
        '"nope"',
        '"a", "b", "c"',
        'W/' + etag,                     # weak: never matches in If-Match
        'W/' + etag + ', W/"x"',
        '"%s-0"' % inner,
        '"%s"' % inner.upper() if inner.upper() != inner else '"X%s"' % inner,
        '""',
    ]


MALFORMED = ['abc', '"unterminated', 'W/abc', '*, "x"', '"a" "b"', '"a";"b"', 'W/', '"a",b',
             '**']


@pytest.mark.parametrize("method", ["PATCH", "PUT", "DELETE"])
def test_if_match_any_entry_matches(srv, api, method):
    zid, zone = new_zone(api)
    for value in matching_lists("ETAG"):
        path, etag = new_record(api, zid, zone)
        value = value.replace("ETAG", etag)
        name = api.get(path)["name"]
        body = {"PATCH": {"content": "192.0.2.9"},
                "PUT": {"name": name, "type": "A", "content": "192.0.2.9", "ttl": 300},
                "DELETE": None}[method]
        # http.client: requests refuses a value with leading whitespace
        status, resp = raw_request(srv, method, path, [("Authorization", "Bearer " + api.token),
                                                      ("If-Match", value)], body=body)
        assert status == 200, "If-Match: %r -> %s" % (value, resp)
        after = api.call("GET", path)
        if method == "DELETE":
            assert after.status_code == 404
        else:
            assert after.json()["result"]["content"] == "192.0.2.9"


@pytest.mark.parametrize("method", ["PATCH", "PUT", "DELETE"])
def test_if_match_without_a_strong_match_is_412(srv, api, method):
    zid, zone = new_zone(api)
    path, etag = new_record(api, zid, zone)
    name = api.get(path)["name"]
    body = {"PATCH": {"content": "192.0.2.9"},
            "PUT": {"name": name, "type": "A", "content": "192.0.2.9", "ttl": 300},
            "DELETE": None}[method]
    settled(srv, api, zid, zone)
    before = state(srv, api, path, zone)
    for value in failing_lists(etag):
        r = api.call(method, path, json=body, headers={"If-Match": value})
        assert r.status_code == 412, "If-Match: %r -> %s" % (value, r.text)
        assert r.json()["success"] is False
        assert state(srv, api, path, zone) == before, value


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_malformed_if_match_is_400(srv, api, method):
    zid, zone = new_zone(api)
    path, etag = new_record(api, zid, zone)
    settled(srv, api, zid, zone)
    before = state(srv, api, path, zone)
    for value in MALFORMED + [etag + ' junk', 'W/ ' + etag, etag + ', *']:
        r = api.call(method, path, json={"content": "192.0.2.9"} if method == "PATCH" else None,
                     headers={"If-Match": value})
        assert r.status_code == 400, "If-Match: %r -> %s" % (value, r.text)
        assert "If-Match" in r.json()["errors"][0]["message"]
        assert state(srv, api, path, zone) == before, value


def test_if_match_over_several_fields(srv, api):
    """Several If-Match lines make one list (RFC 9110 §5.3): a match in any
    line lets the write through; none in any gives 412; a malformed line
    gives 400 even when another line matches."""
    zid, zone = new_zone(api)
    path, etag = new_record(api, zid, zone)
    auth = ("Authorization", "Bearer " + api.token)
    settled(srv, api, zid, zone)
    before = state(srv, api, path, zone)
    status, body = raw_request(srv, "PATCH", path,
                               [auth, ("If-Match", '"x"'), ("If-Match", '"y", W/' + etag)],
                               body={"content": "192.0.2.7"})
    assert status == 412, body
    status, body = raw_request(srv, "PATCH", path,
                               [auth, ("If-Match", 'nonsense'), ("If-Match", etag)],
                               body={"content": "192.0.2.7"})
    assert status == 400, body
    assert state(srv, api, path, zone) == before
    status, body = raw_request(srv, "PATCH", path,
                               [auth, ("If-Match", '"x"'), ("If-Match", '"y", ' + etag)],
                               body={"content": "192.0.2.7"})
    assert status == 200, body
    assert api.get(path)["content"] == "192.0.2.7"


def test_if_match_protects_against_a_lost_update(srv, api):
    """Two clients read the same record; the first write wins, the second,
    still naming the old ETag among others, gets 412 and the first stays."""
    zid, zone = new_zone(api)
    path, etag = new_record(api, zid, zone)
    r = api.call("PATCH", path, json={"content": "192.0.2.11"},
                 headers={"If-Match": '"other", ' + etag})
    assert r.status_code == 200, r.text
    new_etag = api.call("GET", path).headers["ETag"]
    assert new_etag != etag
    r = api.call("PATCH", path, json={"content": "192.0.2.12"},
                 headers={"If-Match": '"other", ' + etag})
    assert r.status_code == 412, r.text
    deadline = time.monotonic() + 2
    name = api.get(path)["name"]
    while True:
        m = srv.query(name, "A")
        if m.answer and m.answer[0][0].to_text() == "192.0.2.11":
            break
        assert time.monotonic() < deadline, m.to_text()
        time.sleep(0.02)
    assert api.get(path)["content"] == "192.0.2.11"


def test_long_if_match_lists(srv, api):
    """A list of 64 strong tags is read whole (the match may be the last);
    one more is refused (400) rather than cut."""
    zid, zone = new_zone(api)
    path, etag = new_record(api, zid, zone)
    others = ['"t%d"' % i for i in range(63)]
    r = api.call("PATCH", path, json={"content": "192.0.2.13"},
                 headers={"If-Match": ", ".join(others + [etag])})
    assert r.status_code == 200, r.text
    etag = api.call("GET", path).headers["ETag"]
    r = api.call("PATCH", path, json={"content": "192.0.2.14"},
                 headers={"If-Match": ", ".join(others + ['"u"', etag])})
    assert r.status_code == 400, r.text
    # weak tags are not counted: they can never match
    weak = ['W/"w%d"' % i for i in range(200)]
    r = api.call("PATCH", path, json={"content": "192.0.2.15"},
                 headers={"If-Match": ", ".join(weak + [etag])})
    assert r.status_code == 200, r.text
