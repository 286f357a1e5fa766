"""Secondaries set up the way operators set them up (docs/configuration.md,
"Secondaries"): NSD and Knot that accept NOTIFY only when signed with their
transfer key get it signed (`notify: ADDR[:PORT] key NAME`) and follow every
change at once; a secondary that refuses NOTIFY is logged at warning level
once per secondary and kind of refusal; a new serial is never held back by
the resends of an older NOTIFY to a secondary that was down.
"""

import re
import time

import dns.update
import pytest

import secondaries
import servers
from test_transfer import (SEC_FILE, SEC_ZONE, SYNC_WAIT, NotifyListener, LS,
                           _assert_same_data, _wait_synced, secondary_factory)  # noqa: F401

NOTIFY_WAIT = 3.0 * servers.TIMEOUT_SCALE   # well below any SOA refresh (7200 s here)


def _update(srv, name, rdtype="A", data="192.0.2.1", zone=SEC_ZONE):
    u = dns.update.UpdateMessage(zone)
    u.add(name, 300, rdtype, data)
    r = dns.query.tcp(u, srv.host, port=srv.port, timeout=3)
    assert r.rcode() == 0, r
    deadline = time.monotonic() + 10
    while True:
        m = srv.query(name, rdtype)
        if m.answer:
            return _serial(srv, zone)
        assert time.monotonic() < deadline, "update not served"
        time.sleep(0.01)


def _serial(srv, zone=SEC_ZONE):
    return srv.query(zone, "SOA").answer[0][0].serial


def _primary(zonecast_api_factory, tmp_path, port, notify, more=()):
    zfile = tmp_path / "sec.test.zone"
    zfile.write_text(SEC_FILE)
    options = [("notify", n) for n in notify] + [("allow-update", "127.0.0.1"),
                                                 ("notify-timeout", "300")] + list(more)
    return zonecast_api_factory(zones={SEC_ZONE: str(zfile)}, port=port, options=options)


def _lines(srv, pattern):
    return [l for l in srv.log().splitlines() if re.search(pattern, l)]


def test_signed_notify_reaches_nsd_and_knot_that_require_it(zonecast_api_factory,
                                                           secondary_factory, tmp_path):
    """NSD and Knot accept NOTIFY only signed with their key; zonecast signs
    it with the key the notify entry names, so they follow every change at
    once instead of on their SOA refresh (7,200 s)."""
    pport = servers.free_port()
    nsd = secondary_factory(secondaries.NsdSecondary, pport, [SEC_ZONE], notify_key=True)
    knot = secondary_factory(secondaries.KnotSecondary, pport, [SEC_ZONE], notify_key=True)
    # keys are looked up at each send: these are created once zonecast runs
    srv = _primary(zonecast_api_factory, tmp_path, pport,
                   ["127.0.0.1:%d key nsd-xfr" % nsd.port,
                    "127.0.0.1:%d key knot-xfr" % knot.port])
    nsd.key = srv.tsig_create("nsd-xfr", "sec.test")
    knot.key = srv.tsig_create("knot-xfr", "sec.test", algorithm="hmac-sha512")
    secs = [nsd, knot]
    for s in secs:
        s.start()
    _wait_synced(srv, secs, SEC_ZONE)
    for i in range(5):
        t0 = time.monotonic()
        serial = _update(srv, "n%d.%s" % (i, SEC_ZONE))
        for s in secs:
            got = s.wait_serial(SEC_ZONE, serial, timeout=NOTIFY_WAIT)
            assert got == serial, "%s serves %s, not %s, %.1f s after the change:\n%s" % (
                s.kind, got, serial, time.monotonic() - t0, "\n".join(s.log().splitlines()[-15:]))
    _assert_same_data(srv, secs, SEC_ZONE, nsd.key)
    assert not _lines(srv, r"refused the NOTIFY"), srv.log()
    # the secondaries say the NOTIFYs came signed with their key
    assert re.search(r"notify for sec\.test\. from 127\.0\.0\.1 serial %d" % serial, nsd.log())
    assert not re.search(r"notify for sec\.test\..*refused", nsd.log()), nsd.log()
    assert re.search(r"notify, incoming, remote 127\.0\.0\.1@\d+, serial %d" % serial,
                     knot.log(), re.I), knot.log()[-3000:]
    assert "denied" not in knot.log(), knot.log()[-3000:]
    # the key existed only after start: one warning, then it was used
    missing = _lines(srv, r"cannot sign NOTIFYs to .* with key")
    assert len(missing) <= 2, missing


def test_refused_notify_is_logged_once_per_secondary_and_change(zonecast_api_factory,
                                                                secondary_factory, tmp_path):
    """NSD wants NOTIFY signed with its key: an unsigned NOTIFY gets REFUSED,
    one signed with a key NSD does not know NOTAUTH (TSIG BADKEY). Each is
    logged once at warning level whatever the number of serials, and the
    return to acceptance once at info."""
    pport = servers.free_port()
    nsd = secondary_factory(secondaries.NsdSecondary, pport, [SEC_ZONE], notify_key=True)
    unsigned = "127.0.0.1:%d" % nsd.port
    foreign = "127.0.0.1:%d key not-nsds" % nsd.port
    srv = _primary(zonecast_api_factory, tmp_path, pport, [unsigned, foreign])
    nsd.key = srv.tsig_create("nsd-key", "sec.test")
    srv.tsig_create("not-nsds", "sec.test")
    nsd.start()
    _wait_synced(srv, [nsd], SEC_ZONE)
    for i in range(4):
        _update(srv, "r%d.%s" % (i, SEC_ZONE))
    deadline = time.monotonic() + NOTIFY_WAIT
    while len(_lines(srv, r"warning: notify: .* refused the NOTIFY")) < 2:
        assert time.monotonic() < deadline, srv.log()
        time.sleep(0.05)
    time.sleep(1.0)   # responses to the later serials come in meanwhile
    refused = _lines(srv, r"warning: notify: .* refused the NOTIFY")
    assert len(refused) == 2, "\n".join(refused)
    by_target = {t: [l for l in refused if ("%s refused" % t) in l] for t in (unsigned, foreign)}
    assert len(by_target[unsigned]) == 1 and "REFUSED" in by_target[unsigned][0], refused
    assert len(by_target[foreign]) == 1 and re.search(r"NOTAUTH \(TSIG BADKEY\)",
                                                      by_target[foreign][0]), refused
    assert "refused, no acl matches" in nsd.log()
    # NSD now accepts unsigned NOTIFYs: zonecast says so once
    assert nsd.stop() == []
    nsd.notify_key = False
    nsd.restart()
    for i in range(3):
        serial = _update(srv, "a%d.%s" % (i, SEC_ZONE))
        assert nsd.wait_serial(SEC_ZONE, serial, timeout=NOTIFY_WAIT) == serial
    again = _lines(srv, r"info: notify: .* accepts NOTIFY again")
    assert len(again) == 1 and unsigned + " accepts" in again[0], again
    assert len(_lines(srv, r"warning: notify: .* refused the NOTIFY")) == 2


def test_new_serial_is_not_held_behind_resends(zonecast_api_factory, tmp_path):
    """A secondary down at start leaves zonecast's NOTIFY in retry back-off
    (sent at 0, 0.5, 1.5, 3.5 s...); once it is up, the next serial is
    notified at once, not at the next resend."""
    port = servers.free_port()
    srv = _primary(zonecast_api_factory, tmp_path, None, ["127.0.0.1:%d" % port],
                   more=[("notify-timeout", "500"), ("notify-retries", "6")])
    time.sleep(1.7)                     # the start NOTIFY is between 1.5 s and 3.5 s
    lst = NotifyListener(port)          # the secondary comes up late
    try:
        t0 = time.monotonic()
        serial = _update(srv, "late." + SEC_ZONE)
        m = lst.wait_serial(SEC_ZONE, serial, t0, timeout=NOTIFY_WAIT)
        arrived = [t for t, msg in lst.notifies(SEC_ZONE, t0) if LS(msg) == serial][0]
        assert arrived - t0 < 0.4, "the new serial waited %.2f s for the resend" % (arrived - t0)
        assert LS(m) == serial
    finally:
        lst.close()


def test_knot_up_late_gets_the_next_serial_at_once(zonecast_api_factory, secondary_factory,
                                                   tmp_path):
    """The same with knotd: down when zonecast starts, up after the first
    resend (notify-timeout 2 s: sent at 0, 2, 6, 14 s); a change at about
    3 s reaches it by NOTIFY and IXFR within a second, not at 6 s."""
    pport = servers.free_port()
    knot = secondary_factory(secondaries.KnotSecondary, pport, [SEC_ZONE])
    srv = _primary(zonecast_api_factory, tmp_path, pport, ["127.0.0.1:%d" % knot.port],
                   more=[("notify-timeout", "2000"), ("allow-transfer", "127.0.0.1")])
    started = time.monotonic()
    time.sleep(2.3)
    knot.start()
    _wait_synced(srv, [knot], SEC_ZONE)
    assert time.monotonic() - started < 5.5, "too slow a start for this test's timing"
    t0 = time.monotonic()
    serial = _update(srv, "late." + SEC_ZONE)
    got = knot.wait_serial(SEC_ZONE, serial, timeout=NOTIFY_WAIT)
    took = time.monotonic() - t0
    assert got == serial and took < 1.0, "knotd got serial %s after %.2f s:\n%s" % (
        got, took, "\n".join(knot.xfr_log()[-10:]))


# ------------------------------------------------------------------ per-zone secondaries

OTHER_ZONE = "other.test."
OTHER_FILE = SEC_FILE.replace("sec.test.", OTHER_ZONE)


def _axfr_rcode(srv, zone, key=None, source="127.0.0.1"):
    """The rcode of an AXFR request (unsigned from source, or signed)."""
    from test_transfer import query_rcode
    rcode, _rd, _m = query_rcode(srv, zone, "AXFR", key=key.key if key else None,
                                 source=None if key else source)
    return rcode


def test_per_zone_secondaries_through_the_api_and_the_cli(zonecast_api_factory,
                                                          secondary_factory, tmp_path):
    """No server-wide notify or allow-transfer: the zone's own secondaries,
    set through the API, take effect at once (NSD signed NOTIFY and
    transfer with a key of the zone, knotd by address); another zone stays
    closed to them; removed through the CLI, they stop at once too."""
    pport = servers.free_port()
    nsd = secondary_factory(secondaries.NsdSecondary, pport, [SEC_ZONE], notify_key=True)
    knot = secondary_factory(secondaries.KnotSecondary, pport, [SEC_ZONE])
    (tmp_path / "sec.zone").write_text(SEC_FILE)
    (tmp_path / "other.zone").write_text(OTHER_FILE)
    srv = zonecast_api_factory(zones={SEC_ZONE: str(tmp_path / "sec.zone"),
                                      OTHER_ZONE: str(tmp_path / "other.zone")},
                               port=pport, options=[("allow-update", "127.0.0.1"),
                                                    ("allow-transfer", "key all-zones")])
    api = srv.client()
    zid, oid = api.zone_id(SEC_ZONE), api.zone_id(OTHER_ZONE)
    nsd.key = srv.tsig_create("nsd-key", "sec.test")
    path = "/zones/%s/secondaries" % zid
    assert api.get(path) == {"notify": [], "allow_transfer": []}
    assert _axfr_rcode(srv, SEC_ZONE) == 5            # REFUSED: nobody by address yet
    # bad entries: 400 naming the field, nothing stored
    for body, want in (({"notify": ["not an address"]}, "notify[0]"),
                       ({"notify": ["127.0.0.1:53 key nosuchkey"]}, "no TSIG key nosuchkey"),
                       ({"allow_transfer": ["10.0.0.0/99"]}, "allow_transfer[0]"),
                       ({"allow_transfer": "127.0.0.1"}, "allow_transfer: an array")):
        r = api.call("PATCH", path, json=body)
        assert r.status_code == 400 and want in r.text, (body, r.status_code, r.text)
    assert api.get(path) == {"notify": [], "allow_transfer": []}

    nsd.start()
    knot.start()
    time.sleep(1.0)   # their first transfers (knotd's is refused: no address rule)
    t0 = time.monotonic()
    want = {"notify": ["127.0.0.1:%d key nsd-key" % nsd.port, "127.0.0.1:%d" % knot.port],
            "allow_transfer": ["127.0.0.1"]}
    assert api.ok("PUT", path, json=want)["result"] == want
    assert api.get(path) == want
    # new targets are notified at once: both have the zone within seconds
    # (knotd's retry after its refused bootstrap would take far longer)
    _wait_synced(srv, [nsd, knot], SEC_ZONE, timeout=NOTIFY_WAIT + 1.5)
    took = time.monotonic() - t0
    assert took < NOTIFY_WAIT + 1.5, took
    for i in range(3):
        serial = _update(srv, "z%d.%s" % (i, SEC_ZONE))
        for s in (nsd, knot):
            assert s.wait_serial(SEC_ZONE, serial, timeout=NOTIFY_WAIT) == serial, s.kind
    _assert_same_data(srv, [nsd, knot], SEC_ZONE, nsd.key)
    # the address rule is the zone's only
    assert _axfr_rcode(srv, SEC_ZONE) == 0
    assert _axfr_rcode(srv, OTHER_ZONE) == 5
    # a key of another zone listed by the zone; the server-wide key rule
    other_key = srv.tsig_create("other-key", "other.test")
    assert _axfr_rcode(srv, SEC_ZONE, key=other_key) == 5
    api.ok("PATCH", path, json={"allow_transfer": ["127.0.0.1", "key other-key"]})
    assert api.get(path)["notify"] == want["notify"]          # PATCH keeps the other list
    assert _axfr_rcode(srv, SEC_ZONE, key=other_key) == 0
    everywhere = srv.tsig_create("all-zones", "other.test", transfer=False)
    for z in (SEC_ZONE, OTHER_ZONE):
        assert _axfr_rcode(srv, z, key=everywhere) == 0, z
    # a token for sec.test only may not name another zone's key
    scoped = srv.client(srv.create_token(zone="sec.test"))
    r = scoped.call("PATCH", path, json={"allow_transfer": ["key other-key"]})
    assert r.status_code == 400 and "belongs to another zone" in r.text, r.text

    # the CLI shows and removes them; the server follows within a second
    cp = srv.run_cli("secondaries", "--data-dir", srv.data_dir, "sec.test")
    assert "notify\t127.0.0.1:%d key nsd-key" % nsd.port in cp.stdout, cp.stdout
    assert "allow-transfer\tkey other-key" in cp.stdout, cp.stdout
    bad = srv.run_cli("secondaries", "--data-dir", srv.data_dir, "sec.test",
                      "--notify", "127.0.0.1 key missing-key", check=False)
    assert bad.returncode != 0 and "no TSIG key missing-key" in bad.stderr, bad.stderr
    srv.run_cli("secondaries", "--data-dir", srv.data_dir, "sec.test", "--no-notify",
                "--allow-transfer", "key other-key")
    assert api.get(path) == {"notify": [], "allow_transfer": ["key other-key"]}
    time.sleep(1.5)
    assert _axfr_rcode(srv, SEC_ZONE) == 5
    before = {s.kind: s.serial(SEC_ZONE) for s in (nsd, knot)}
    serial = _update(srv, "after-removal." + SEC_ZONE)
    time.sleep(2.0)
    for s in (nsd, knot):
        assert s.serial(SEC_ZONE) == before[s.kind] != serial, (s.kind, "still notified")
    # and added back through the CLI: notified at once
    srv.run_cli("secondaries", "--data-dir", srv.data_dir, "sec.test",
                "--notify", "127.0.0.1:%d key nsd-key" % nsd.port)
    assert nsd.wait_serial(SEC_ZONE, serial, timeout=NOTIFY_WAIT) == serial
    assert re.search(r"info: notify: zones' secondaries changed", srv.log())
