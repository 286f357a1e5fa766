"""An outside tester's attack on 920ff5a (a %00 kept and refused through
server.c unescape() and its thread-local flag, paths over 1,023 octets 414,
over 8 segments 404, waits that end at SIGTERM): octets the fix does not
see, the flag on kept-alive and refused connections, escapes near %00,
exact boundaries, the audit line of what was served, and SIGTERM / SIGHUP
while a ?wait=live write, a retry and a long poll wait on a held builder.
Raw sockets (test_api_head.py) where the bytes matter."""

import datetime
import signal
import time

from servers import ApiClient
from test_api_head import exchange, one, parse, request
import test_attack_routing as routing
from test_attack_routing import call, in_threads, zone_with_record
from test_audit import audit_lines, fields
from test_one_write_path import write_zone
import test_quarantine as quarantine

NUL_MSG = b"a NUL octet"
srv, api = routing.srv, routing.api    # the module's server and client fixtures


def still_there(api, zid, rid):
    assert api.call("GET", "/zones/%s" % zid).status_code == 200, zid
    assert api.call("GET", "/zones/%s/dns_records/%s" % (zid, rid)).status_code == 200, rid


def test_raw_nul_octet_in_the_request_line_never_serves_a_shorter_path(srv, api):
    """Found by this file: a raw NUL octet (not %00) in the request target went
    past unescape() (a C string: it stops there) and libmicrohttpd 0.9.75
    handed on_request() the path cut at it, so
    'DELETE /client/v4/zones/Z\\0/dns_records/R HTTP/1.1' deleted zone Z.
    Now server.c uri_seen() and uri_whole() refuse it (400)."""
    zid, _, rid, _ = zone_with_record(api, "rawnul")
    path = "/zones/%s\x00/dns_records/%s" % (zid, rid)
    status, _, body = one(srv, "GET", path, token=api.token)
    assert status in (400, 404), (status, body[:120])
    status, _, body = one(srv, "DELETE", path, token=api.token)
    assert status in (400, 404), (status, body[:120])
    still_there(api, zid, rid)


def test_escapes_near_nul_and_ones_that_are_not(srv, api):
    zid, name, rid, _ = zone_with_record(api, "esc")
    rec = "/zones/%s/dns_records/%s" % (zid, rid)
    # malformed or partial escapes are kept as they are: no id, 404, never 400
    for tail in ("%0", "%0g", "%", "%2500", "%g0", "%0%30"):
        for method in ("GET", "DELETE"):
            status, _, body = one(srv, method, rec + tail, token=api.token)
            assert status == 404 and NUL_MSG not in body, (method, tail, status, body)
    # "%%00" and "%%%00" still hold a %00; lower case and outside the prefix too
    for path in (rec + "%%00", rec + "%%%00", "/zones/%s%%00%%0a" % zid, "//foo%00",
                 "/zones?%00=1", "/zones?name=%s&%%00" % name, "/zones?a%00b=c&name=x",
                 "/zones?name=%s+%%00" % name, "/client%00/v4/zones"):
        for method in ("GET", "DELETE", "HEAD"):
            status, fields_, body = one(srv, method, path, token=api.token)
            assert status == 400 and ("Connection", "close") in fields_, (method, path, status)
            assert body == (b"" if method == "HEAD" else body) and \
                (method == "HEAD" or NUL_MSG in body), (method, path, body)
    # headers are not unescaped: a %00 there is just text
    assert one(srv, "GET", rec, token=api.token, headers=["X-Probe: a%00b"])[0] == 200
    status = exchange(srv, request("GET", rec, token=api.token).replace(
        b"Host: 127.0.0.1", b"Host: a%00b"))[:12]
    assert status == b"HTTP/1.1 200", status
    still_there(api, zid, rid)


def test_the_nul_flag_never_reaches_another_request(srv, api):
    """url_nul is thread-local, reset by on_request() and on_completed():
    a request refused by libmicrohttpd itself after unescaping never reaches
    either; the next request, on the connection or a new one, is served."""
    zid, name, rid, _ = zone_with_record(api, "flag")
    rec = "/zones/%s/dns_records/%s" % (zid, rid)
    tok = api.token
    clean = request("GET", rec, token=tok, close=False)
    # clean, %00, clean pipelined: 200, then 400 and the connection closes
    raw = exchange(srv, clean + request("GET", rec + "?x=%00", token=tok, close=False) + clean)
    s1, _, _, raw = parse(raw, False)
    s2, f2, _, raw = parse(raw, False)
    assert (s1, s2, raw) == (200, 400, b"") and ("Connection", "close") in f2
    # libmicrohttpd's own refusals after the line was unescaped: no Host
    # (400), headers over its buffer (431); then clean requests
    no_host = request("GET", rec + "%00?a=%00", token=tok, close=False).replace(
        b"Host: 127.0.0.1\r\n", b"")
    big = request("GET", rec + "%00", token=tok, close=False,
                  headers=["X-Pad-%d: %s" % (i, "p" * 4000) for i in range(10)])
    for bad, want in ((no_host, b"HTTP/1.1 400"), (big, b"HTTP/1.1 431")):
        raw = exchange(srv, bad + clean + clean)
        assert raw.startswith(want) and raw.count(b"HTTP/1.1 ") == 1, raw[:200]
        for _ in range(3):
            assert one(srv, "GET", rec, token=tok)[0] == 200
    # many kept-alive requests after the first, one connection: all served
    raw = exchange(srv, clean * 20 + request("GET", rec, token=tok))
    assert raw.count(b"HTTP/1.1 200 OK") == 21, raw.count(b"HTTP/1.1 ")


def test_length_and_segment_boundaries(srv, api):
    zid, name, rid, _ = zone_with_record(api, "bound")
    tok = api.token

    def padded(octets, tail="dns_records/%s" % rid):
        head = "zones/%s" % zid
        return "/" + head + "/" * (octets - len(head) - len(tail)) + tail

    for octets, want in ((1022, 200), (1023, 200), (1024, 414), (1025, 414)):
        path = padded(octets)
        assert len(path) - 1 == octets
        for method in ("GET", "HEAD"):
            status, _, body = one(srv, method, path, token=tok)
            assert status == want, (method, octets, status, body[:100])
        if want == 414:
            assert one(srv, "DELETE", path, token=tok)[0] == 414
    # the query is not the path's: 1023 octets with a 3 KiB query is served
    query = "?name=" + "".join("%%%02X" % ord(c) for c in "www." + name) + "&type=A"
    status, _, body = one(srv, "GET", padded(1023, "dns_records") + query, token=tok)
    assert status == 200 and rid.encode() in body, (status, body[:200])
    # 8 and 9 segments: no path of the table, GET and DELETE alike
    for extra in ("/a/b/c/d", "/a/b/c/d/e", "/a/b/c/d/e/f/g/h/i/j"):
        for method in ("GET", "DELETE"):
            assert one(srv, method, "/zones/%s/dns_records/%s%s" % (zid, rid, extra),
                       token=tok)[0] == 404, (method, extra)
    still_there(api, zid, rid)


def test_audit_lines_name_what_was_served(srv, api):
    """Found by this file (the audit's side of 'no path served as a shorter
    one'): a path of 300 to 1,023 octets is served whole, but api_audit()
    wrote it cut into char op[300], so a record's DELETE padded with '/'
    read as 'DELETE /client/v4/zones/Z////...', the zone's delete. A cut
    operation now ends in '...(longer)'."""
    zid, name, rid, _ = zone_with_record(api, "aud")
    rec = "/zones/%s/dns_records/%s" % (zid, rid)
    # CR and LF decoded into the path stay inside one escaped audit line
    assert one(srv, "DELETE", rec + "%0d%0aINFO: audit: api accepted x=%0A", token=api.token)[0] \
        == 404
    path = "/zones/%s%sdns_records/%s" % (zid, "/" * 400, rid)
    assert one(srv, "DELETE", path, token=api.token)[0] == 200
    time.sleep(0.3)
    log = srv.log()
    assert not [l for l in log.splitlines() if l.startswith("INFO: audit")]
    refused = [l for l in audit_lines(log, "api", "refused") if rid in l]
    assert refused and '%s\\x0d\\x0aINFO: audit: api accepted x=\\x0a"' % rid in refused[-1], \
        refused
    (line,) = [fields(l) for l in audit_lines(log, "api", "accepted")
               if "ids=%s" % rid in l and "DELETE" in l]
    assert line["operation"] == "DELETE /client/v4" + path, line["operation"][-60:]


def stamp(line):
    """A log line's time, in seconds."""
    return datetime.datetime.strptime(line.split(" ")[0], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def held_waits(factory, tmp_path):
    """A full build of held.test held half-way (ZONECAST_FAULT_PAUSE) keeps
    the builder busy while a ?wait=live write on another zone, a retry of a
    quarantined zone and a long poll wait; SIGHUP at 1 s, SIGTERM at 2 s.
    The server (stopped) and each wait's (status or exception, seconds
    after SIGTERM it ended)."""
    pause, fault = tmp_path / "pause", tmp_path / "fault"
    pause.write_text("")
    fault.write_text("")
    big = write_zone(tmp_path / "held.zone", 1000, "h", names=2500, origin="held.test.")
    srv = factory(zones={"held.test.": big}, env={
        "ZONECAST_FAULT_PAUSE": str(pause), "ZONECAST_FAULT_BUILD": str(fault)})
    api = srv.client()
    held = api.zone_id("held.test")
    bad = quarantine.create_zone(api, srv, "bad.term.test")
    live = quarantine.create_zone(api, srv, "live.term.test")
    fault.write_text("bad.term.test\n")
    assert quarantine.post(api, bad, "x.bad.term.test", "192.0.2.5").status_code == 200
    quarantine.wait_for(lambda: api.get("/zones/%s" % bad)["quarantine"], "quarantine")
    pause.write_text("held.test\n")
    v = api.ok("PATCH", "/zones/%s" % held, json={"default_ttl": 600})["zone_version"]
    quarantine.wait_for(lambda: "full build held between two steps" in srv.log(), "the hold")
    base, tok, t0 = srv.api_url, api.token, time.monotonic()

    def signals():
        time.sleep(1.0)
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        srv.proc.send_signal(signal.SIGTERM)
        return time.monotonic() - t0

    def timed(method, path, **kw):
        try:
            status = call(base, tok, method, path, **kw)[0]
        except Exception as e:    # cut by the stop: no answer
            status = type(e).__name__
        return status, time.monotonic() - t0
    out = in_threads(
        lambda: timed("POST", "/zones/%s/dns_records?wait=live" % live, json={
            "name": "w.live.term.test", "type": "A", "content": "192.0.2.7"}),
        lambda: timed("POST", "/zones/%s/retry" % bad),
        lambda: timed("GET", "/zones/%s/propagation" % held, params={"version": v, "wait": 30}),
        signals)
    term = out[-1]
    time.sleep(1.5)    # the builder held on after SIGTERM: the waits end without it
    pause.write_text("")
    assert srv.stop(timeout=30) == []
    srv.live_zone, srv.token = live, tok
    return srv, [(status, round(t - term, 2)) for status, t in out[:3]]


def test_sighup_ends_no_wait_sigterm_ends_each_at_once(zonecast_api_factory, tmp_path):
    srv, ended = held_waits(zonecast_api_factory, tmp_path)
    # each waited past the SIGHUP (1 s before SIGTERM), ended within 1 s of SIGTERM
    assert all(-0.9 < after < 1.0 for _, after in ended), ended
    assert all(s in (200, 202, 409) or isinstance(s, str) for s, _ in ended), ended
    # server side too: the write's and the retry's audit lines within 0.5 s of SIGTERM
    log = srv.log().splitlines()
    (stop,) = [stamp(l) for l in log if "SIGTERM): shutting down" in l]
    lines = [(stamp(l) - stop, fields(l)["operation"].split("/")[-1]) for l in log
             if "status=202" in l and "audit: api accepted" in l]
    assert sorted(o for _, o in lines) == ["dns_records", "retry"], lines
    assert all(0 <= d < 0.5 for d, _ in lines), lines
    srv.restart()    # the write was committed before the stop
    names = [r["name"] for r in ApiClient(srv.api_url, srv.token).records(srv.live_zone)]
    assert "w.live.term.test" in names, names


def test_a_committed_wait_live_write_is_answered_at_sigterm(zonecast_api_factory, tmp_path):
    """Found by this file: docs/operations.md: at SIGTERM "API requests already
    with the writer are committed and answered", and live.c ends a
    ?wait=live wait with 202 "the server is stopping". That answer never
    left: MHD_stop_daemon()'s close_all_connections() shut every
    connection's socket down before it joined their threads, so the client
    of a committed write saw a reset (and might POST it again). api_stop()
    now waits (at most 3 s) for the requests in flight to complete."""
    _, ended = held_waits(zonecast_api_factory, tmp_path)
    assert ended[0][0] == 202, ended
