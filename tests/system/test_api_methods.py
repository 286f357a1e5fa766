"""Methods on the HTTP API's paths (RFC 9110 section 15.5.6).

Every path of the API takes some methods; any other gets 405 with an
`Allow` field listing exactly the methods that path takes (HEAD wherever
GET is: a HEAD is answered as the GET) and the Cloudflare envelope
(code 1000, a message starting with `method:`). The answer depends on the
path's shape alone: it comes after authentication and before any lookup,
so a method a path does not take gets 405 whatever its ids (a zone that
does not exist too), while a path that does not exist gets 404 whatever
the method. Requests go over raw sockets (test_api_head.py's helpers), so
what libmicrohttpd puts on the wire is what is checked.
"""

import itertools
import json

import pytest

import test_api_head as head_tests
from test_api_head import MISSING_ZONE, one, same_as_get

_seq = itertools.count(1)

# test_api_head.py's fixtures: this module's server and its client.
srv = head_tests.srv
api = head_tests.api

# Every method tried on every path: HTTP's, WebDAV-free, and one no server
# knows.
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FOO")

# The API's paths (docs/api.md, the tables) and the methods each takes;
# {zid}, {rid}, {kid} and {tid} are filled in from the fixture.
ROUTES = (
    ("/zones", {"GET", "HEAD", "POST"}),
    ("/zones/{zid}", {"GET", "HEAD", "PATCH", "DELETE"}),
    ("/zones/{zid}/dns_records", {"GET", "HEAD", "POST"}),
    ("/zones/{zid}/dns_records/batch", {"POST"}),
    ("/zones/{zid}/dns_records/import", {"POST"}),
    ("/zones/{zid}/dns_records/export", {"GET", "HEAD"}),
    ("/zones/{zid}/dns_records/{rid}", {"GET", "HEAD", "PUT", "PATCH", "DELETE"}),
    ("/zones/{zid}/dnssec", {"GET", "HEAD", "PATCH", "DELETE"}),
    ("/zones/{zid}/secondaries", {"GET", "HEAD", "PUT", "PATCH"}),
    ("/zones/{zid}/tsig_keys", {"GET", "HEAD", "POST"}),
    ("/zones/{zid}/tsig_keys/{kid}", {"DELETE"}),
    ("/zones/{zid}/propagation", {"GET", "HEAD"}),
    ("/zones/{zid}/retry", {"POST"}),
    ("/user/tokens", {"GET", "HEAD", "POST"}),
    ("/user/tokens/verify", {"GET", "HEAD"}),
    ("/user/tokens/permission_groups", {"GET", "HEAD"}),
    ("/user/tokens/{tid}", {"GET", "HEAD", "DELETE"}),
    ("/fleet", {"GET", "HEAD"}),
)


@pytest.fixture(scope="module")
def ids(api):
    """The ids the paths name: a zone of this module's own with a record
    and a TSIG key, and a token."""
    name = "methods%d.api.test" % next(_seq)
    zid = api.ok("POST", "/zones", json={"name": name})["result"]["id"]
    rid = api.ok("POST", "/zones/%s/dns_records" % zid,
                 json={"name": "www." + name, "type": "A", "content": "192.0.2.1"})["result"]["id"]
    kid = api.ok("POST", "/zones/%s/tsig_keys" % zid,
                 json={"name": "methods.key", "algorithm": "hmac-sha256"})["result"]["id"]
    tid = api.get("/user/tokens", params={"per_page": 1})[0]["id"]
    return dict(zid=zid, rid=rid, kid=kid, tid=tid, name=name)


def allow_of(fields):
    """The methods of the response's Allow fields (None: there is none)."""
    values = [v for k, v in fields if k.lower() == "allow"]
    if not values:
        return None
    return {m.strip() for v in values for m in v.split(",") if m.strip()}


def assert_405(srv, method, path, allowed, **kw):
    """405, an Allow field naming exactly allowed, the envelope (GET's for
    a HEAD, which has no body)."""
    if method == "HEAD":
        status, fields, body = same_as_get(srv, path, **kw)
    else:
        status, fields, body = one(srv, method, path, **kw)
    assert status == 405, (method, path, status, body)
    assert allow_of(fields) == allowed, (method, path, fields)
    env = json.loads(body)
    assert env["success"] is False and env["result"] is None, (method, path, env)
    assert [e["code"] for e in env["errors"]] == [1000], (method, path, env)
    assert env["errors"][0]["message"].startswith("method:"), (method, path, env)


def test_every_method_a_path_does_not_take_is_405_with_allow(srv, api, ids):
    for template, allowed in ROUTES:
        path = template.format(**ids)
        for method in METHODS:
            if method not in allowed:
                assert_405(srv, method, path, allowed, token=api.token)


def test_every_method_listed_is_taken(srv, api, ids):
    """Each method an Allow field names reaches its handler: a write with
    a body it refuses (nothing is written), a DELETE of an id that does
    not exist, or a zone made to be deleted."""
    zid = ids["zid"]
    spare = api.ok("POST", "/zones", json={"name": "spare%d.api.test" % next(_seq)})
    probes = dict(ids, zid=zid, rid=MISSING_ZONE, kid=MISSING_ZONE, tid=MISSING_ZONE)
    for template, allowed in ROUTES:
        for method in sorted(allowed):
            fill = ids if method in ("GET", "HEAD") else probes
            if template == "/zones/{zid}" and method == "DELETE":
                fill = dict(ids, zid=spare["result"]["id"])
            path = template.format(**fill)
            if template.endswith("/propagation"):
                path += "?version=1"    # required; wait=0: answers at once
            body = b"{" if method in ("POST", "PUT", "PATCH") else b""
            status, fields, _ = one(srv, method, path, token=api.token, body=body)
            assert status != 405, (method, path, status)
            assert allow_of(fields) is None, (method, path, fields)
            if method in ("GET", "HEAD"):
                assert status == 200, (method, path, status)
            elif template == "/zones/{zid}/retry" or (template, method) in (
                    ("/zones/{zid}", "DELETE"), ("/zones/{zid}/dnssec", "DELETE")):
                # (a DELETE of an unsigned zone's DNSSEC: disabled already)
                assert status == 200, (method, path, status)
            else:
                assert status in (400, 404), (method, path, status)
    # the refused writes wrote nothing
    assert [r["id"] for r in api.records(zid, type="A")] == [ids["rid"]]
    assert [k["id"] for k in api.get("/zones/%s/tsig_keys" % zid)] == [ids["kid"]]


def test_unknown_paths_stay_404(srv, api, ids):
    zid, rid = ids["zid"], ids["rid"]
    for path in ("/nothing", "/user", "/user/nothing", "/user/tokens/%s/more" % rid,
                 "/fleet/edges", "/zones/%s/nothing" % zid, "/zones/%s/dnssec/keys" % zid,
                 "/zones/%s/dns_records/%s/more" % (zid, rid),
                 "/zones/%s/tsig_keys/%s/more" % (zid, ids["kid"]), "//client/v3/zones"):
        for method in METHODS:
            status, fields, body = one(srv, method, path, token=api.token)
            assert status == 404, (method, path, status, body)
            assert allow_of(fields) is None, (method, path, fields)
            if method != "HEAD":
                env = json.loads(body)
                assert env["success"] is False and env["errors"][0]["code"] == 7003, env


def test_ids_that_do_not_exist(srv, api, ids):
    """The path's shape decides 405 before any lookup: a method the path
    does not take is 405 for a zone, record or token that does not exist
    too; a method it takes gets the lookup's 404."""
    zid = ids["zid"]
    for path, method, allowed in (
            ("/zones/%s/dns_records" % MISSING_ZONE, "PUT", {"GET", "HEAD", "POST"}),
            ("/zones/%s/dns_records" % MISSING_ZONE, "DELETE", {"GET", "HEAD", "POST"}),
            ("/zones/%s" % MISSING_ZONE, "POST", {"GET", "HEAD", "PATCH", "DELETE"}),
            ("/zones/%s/retry" % MISSING_ZONE, "GET", {"POST"}),
            ("/zones/nonsense/propagation", "POST", {"GET", "HEAD"}),
            ("/zones/%s/dns_records/%s" % (zid, MISSING_ZONE), "POST",
             {"GET", "HEAD", "PUT", "PATCH", "DELETE"}),
            ("/user/tokens/%s" % MISSING_ZONE, "PATCH", {"GET", "HEAD", "DELETE"})):
        assert_405(srv, method, path, allowed, token=api.token)
    for path in ("/zones/%s/dns_records" % MISSING_ZONE, "/zones/%s/retry" % MISSING_ZONE,
                 "/zones/%s/dns_records/%s" % (zid, MISSING_ZONE)):
        method = "POST" if path.endswith("retry") else "GET"
        assert one(srv, method, path, token=api.token)[0] == 404, path


def test_order_of_the_checks(srv, api, ids):
    """Authentication comes first (401 without an Allow field); then the
    method, before a read-only token's 403, a zone-scoped token's 403 and
    the query's 400."""
    zid = ids["zid"]
    path = "/zones/%s/dns_records" % zid
    status, fields, _ = one(srv, "PUT", path)
    assert status == 401 and allow_of(fields) is None, (status, fields)
    status, fields, _ = one(srv, "PUT", path, token="zc_not_a_token")
    assert status == 401 and allow_of(fields) is None, (status, fields)
    ro = srv.create_token(read_only=True)
    assert_405(srv, "PUT", path, {"GET", "HEAD", "POST"}, token=ro)
    assert one(srv, "POST", path, token=ro, body=b"{}")[0] == 403
    other = api.ok("POST", "/zones", json={"name": "methodsother%d.api.test" % next(_seq)})
    scoped = srv.create_token(zone=other["result"]["name"])
    assert_405(srv, "DELETE", path, {"GET", "HEAD", "POST"}, token=scoped)
    assert_405(srv, "DELETE", "/fleet", {"GET", "HEAD"}, token=scoped)
    assert_405(srv, "PATCH", path + "?bogus=1", {"GET", "HEAD", "POST"}, token=api.token)
    assert_405(srv, "GET", "/zones/%s/retry?wait=live" % zid, {"POST"}, token=api.token)
