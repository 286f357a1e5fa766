"""Read your own write (issue 11 item 11, docs/security.md "acknowledged =
servable").

An UPDATE is answered NOERROR only once this server answers from it, as
BIND and Knot do: a client that queries right after its acknowledged
UPDATE sees the new data and the new SOA serial, never the previous ones
(the bug: the SOA read right after the last of 40 UPDATEs still showed the
previous serial). The API keeps its propagation receipts by default and
answers a write with ?wait=live only once it is served.

Every check here queries once, at once, after the acknowledgement: no
polling, no sleep.

test_concurrent_writers_read_their_writes runs writers of every kind at
the same time, so group commit puts several units (several versions of one
zone) in one transaction and the builder's passes take several versions
at once. The bug it pins: an UPDATE that changed nothing because another
writer had just added the same data (a duplicate, a retry) was answered
NOERROR at once, before that data was served (about 1 in 100 duplicates).
"""

import itertools
import socket
import struct
import subprocess
import threading

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update
import pytest

import servers
from conftest import UPDATE_SOURCE

ROUNDS = 200
_seq = itertools.count(1)


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def make_zone(srv, api, prefix):
    """A fresh zone through the API, served; returns (id, name)."""
    name = "%s%d.ryw.test" % (prefix, next(_seq))
    body = api.call("POST", "/zones?wait=live", json={"name": name})
    assert body.status_code == 200, body.text
    assert body.json()["zone_live"] is True
    return body.json()["result"]["id"], name


def answer(srv, name, rtype, tcp=False):
    """(rcode, {rdata text}) of one query, asked once."""
    m = srv.query(name, rtype, tcp=tcp, timeout=2.0)
    qn = dns.name.from_text(name)
    qt = dns.rdatatype.from_text(rtype)
    return m.rcode(), {rd.to_text() for rrset in m.answer
                       if rrset.name == qn and rrset.rdtype == qt for rd in rrset}


def serial_now(srv, zone):
    rcode, rds = answer(srv, zone + ".", "SOA")
    assert rcode == dns.rcode.NOERROR and len(rds) == 1, (rcode, rds)
    return int(next(iter(rds)).split()[2])


def test_nsupdate_then_query_sees_it(srv, api):
    """200 runs of BIND's nsupdate (TSIG, UDP and TCP), each followed at once
    by a query of the name it added and of the SOA."""
    _, zone = make_zone(srv, api, "ns")
    key = srv.tsig_create("ryw-key." + zone, zone)
    s0 = serial_now(srv, zone)
    stale = []
    for i in range(ROUNDS):
        argv = ["nsupdate", "-k", key.path] + (["-v"] if i % 2 else [])
        script = ("server 127.0.0.1 %d\nzone %s.\nupdate add n%d.%s. 300 A 192.0.2.%d\n"
                  "send\n" % (srv.port, zone, i, zone, i % 250 + 1))
        cp = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=20)
        assert cp.returncode == 0, cp.stderr
        got = answer(srv, "n%d.%s." % (i, zone), "A")
        serial = serial_now(srv, zone)
        if got != (dns.rcode.NOERROR, {"192.0.2.%d" % (i % 250 + 1)}) or serial != s0 + i + 1:
            stale.append((i, got, serial, s0 + i + 1))
    assert not stale, "%d of %d UPDATEs not answered from at once: %s" % (
        len(stale), ROUNDS, stale[:5])


def test_dnspython_update_then_query_sees_it(srv, api):
    """200 dnspython UPDATEs (UDP and TCP, adds and replacements), each
    followed at once by queries over the other transport: the new data, not
    the old, and the new serial."""
    _, zone = make_zone(srv, api, "py")
    origin = zone + "."
    s0 = serial_now(srv, zone)
    stale = []
    for i in range(ROUNDS):
        u = dns.update.UpdateMessage(origin)
        if i % 4 == 3:
            # replace what the previous round added: the old value must be gone
            u.replace("r%d.%s" % (i - 1, origin), 300, "A", "198.51.100.%d" % (i % 250 + 1))
            name, want = "r%d.%s" % (i - 1, origin), "198.51.100.%d" % (i % 250 + 1)
        else:
            u.add("r%d.%s" % (i, origin), 300, "A", "192.0.2.%d" % (i % 250 + 1))
            name, want = "r%d.%s" % (i, origin), "192.0.2.%d" % (i % 250 + 1)
        tcp = i % 2 == 1
        send = dns.query.tcp if tcp else dns.query.udp
        r = send(u, "127.0.0.1", port=srv.port, timeout=5, source=UPDATE_SOURCE)
        assert r.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(r.rcode())
        got = answer(srv, name, "A", tcp=not tcp)
        serial = serial_now(srv, zone)
        if got != (dns.rcode.NOERROR, {want}) or serial != s0 + i + 1:
            stale.append((i, name, got, serial, s0 + i + 1))
    assert not stale, "%d of %d UPDATEs not answered from at once: %s" % (
        len(stale), ROUNDS, stale[:5])


def test_api_wait_live_then_query_sees_it(srv, api):
    """200 API writes with ?wait=live (create, then change in place): each
    answers 200, zone_live true, X-Zone-Live: true, and the next query shows
    it. A write without it keeps the receipt behaviour (zone_version, no
    zone_live); a bad wait value is refused before anything is written."""
    zid, zone = make_zone(srv, api, "api")
    path = "/zones/%s/dns_records" % zid
    stale = []
    rid = None
    for i in range(ROUNDS):
        content = "192.0.2.%d" % (i % 250 + 1)
        if i % 2 == 0:
            name = "w%d.%s" % (i, zone)
            r = api.call("POST", path + "?wait=live",
                         json={"name": name, "type": "A", "content": content, "ttl": 300})
        else:
            r = api.call("PATCH", "%s/%s?wait=live" % (path, rid), json={"content": content})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["zone_live"] is True and r.headers["X-Zone-Live"] == "true", r.text
        rid = body["result"]["id"]
        got = answer(srv, name + ".", "A")
        serial = serial_now(srv, zone)
        if got != (dns.rcode.NOERROR, {content}) or serial < body["zone_version"]:
            stale.append((i, name, got, serial, body["zone_version"]))
    assert not stale, "%d of %d writes not served when answered: %s" % (
        len(stale), ROUNDS, stale[:5])

    # without ?wait=live: the receipt as before
    r = api.call("POST", path, json={"name": "plain." + zone, "type": "A",
                                     "content": "192.0.2.1"})
    assert r.status_code == 200 and "zone_live" not in r.json(), r.text
    assert "X-Zone-Live" not in r.headers
    version = r.json()["zone_version"]
    receipt = api.get("/zones/%s/propagation" % zid,
                      params={"version": version, "wait": 5})
    assert receipt["live"] is True and receipt["quarantine"] is None, receipt

    # a wait value writes do not take: 400, nothing written
    before = len(api.records(zid))
    r = api.call("POST", path + "?wait=3", json={"name": "no." + zone, "type": "A",
                                                 "content": "192.0.2.1"})
    assert r.status_code == 400 and "wait" in r.json()["errors"][0]["message"], r.text
    assert len(api.records(zid)) == before


def test_pipelined_updates_answered_in_order_and_served(srv, api):
    """60 UPDATEs written back to back on one TCP connection, into two zones,
    a third of them changing nothing (a failed prerequisite): the answers
    come in the order of the messages, and each name acknowledged is
    served."""
    zones = [make_zone(srv, api, "pipe")[1] for _ in range(2)]
    msgs, want = [], []
    for i in range(60):
        zone = zones[i % 2] + "."
        u = dns.update.UpdateMessage(zone)
        if i % 3 == 2:
            u.present("missing%d.%s" % (i, zone))   # NXDOMAIN, nothing written
            u.add("never%d.%s" % (i, zone), 300, "A", "192.0.2.1")
            want.append((u.id, dns.rcode.NXDOMAIN, None))
        else:
            u.add("p%d.%s" % (i, zone), 300, "A", "192.0.2.%d" % (i + 1))
            want.append((u.id, dns.rcode.NOERROR, "p%d.%s" % (i, zone)))
        msgs.append(u)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((UPDATE_SOURCE, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", srv.port))
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in
                           (m.to_wire() for m in msgs)))
        got = []
        for _ in msgs:
            (n,) = struct.unpack("!H", servers.recv_exact(s, 2))
            r = dns.message.from_wire(servers.recv_exact(s, n))
            got.append((r.id, r.rcode()))
            name = next(w[2] for w in want if w[0] == r.id)
            if name is not None and r.rcode() == dns.rcode.NOERROR:
                assert answer(srv, name, "A")[0] == dns.rcode.NOERROR, name
    assert got == [(i, rc) for i, rc, _ in want]


CONCURRENT_ROUNDS = 150


def test_concurrent_writers_read_their_writes(srv, api):
    """Writers at once on two zones: API writes and batches with ?wait=live,
    UPDATEs over UDP and TCP, and pairs of threads sending the very same
    UPDATE at the same moment (one adds, the other finds it there and
    changes nothing). Every acknowledgement is followed at once by one query:
    the written data is answered, and for the API the SOA serial is at least
    the write's zone_version."""
    zones = [make_zone(srv, api, "cc") for _ in range(2)]
    stale, errors = [], []
    lock = threading.Lock()

    def note(what):
        with lock:
            stale.append(what)

    def check_txt(kind, name, want, version=None, zone=None):
        got = answer(srv, name, "TXT")
        if got != (dns.rcode.NOERROR, {'"%s"' % want}):
            note((kind, name, got))
        elif version is not None and serial_now(srv, zone) < version:
            note((kind, name, "serial below", version))

    def update(name, origin, value, tcp, replace=True):
        u = dns.update.UpdateMessage(origin)
        (u.replace if replace else u.add)(name, 300, "TXT", value)
        send = dns.query.tcp if tcp else dns.query.udp
        return send(u, "127.0.0.1", port=srv.port, timeout=10, source=UPDATE_SOURCE)

    def api_writer(k):
        for i in range(CONCURRENT_ROUNDS):
            zid, zone = zones[(k + i) % 2]
            name = "a%d-%d.%s" % (k, i, zone)
            if i % 3 == 2:
                body = {"posts": [{"name": "%s%d.%s" % (c, i, name), "type": "TXT",
                                   "content": "b%d" % i} for c in "xy"]}
                r = api.call("POST", "/zones/%s/dns_records/batch?wait=live" % zid, json=body)
                name = "y%d.%s" % (i, name)
                want = "b%d" % i
            else:
                want = "v%d" % i
                r = api.call("POST", "/zones/%s/dns_records?wait=live" % zid,
                             json={"name": name, "type": "TXT", "content": want})
            if r.status_code != 200 or r.json().get("zone_live") is not True:
                note(("api status", r.status_code, r.text[:200]))
                continue
            check_txt("api", name + ".", want, r.json()["zone_version"], zone)

    def update_writer(k):
        for i in range(CONCURRENT_ROUNDS):
            _, zone = zones[(k + i) % 2]
            name = "u%d-%d.%s." % (k, i, zone)
            r = update(name, zone + ".", "v%d" % i, tcp=i % 2 == 1)
            if r.rcode() != dns.rcode.NOERROR:
                note(("update rcode", name, dns.rcode.to_text(r.rcode())))
                continue
            check_txt("update", name, "v%d" % i)

    def twin_writer(k, barrier):
        for i in range(CONCURRENT_ROUNDS):
            _, zone = zones[i % 2]
            name = "t%d-%d.%s." % (k // 2, i, zone)
            barrier.wait()
            # an add: the second of the two finds the record there
            r = update(name, zone + ".", "same", tcp=(k + i) % 4 == 0, replace=False)
            if r.rcode() != dns.rcode.NOERROR:
                note(("twin rcode", name, dns.rcode.to_text(r.rcode())))
                continue
            check_txt("twin", name, "same")

    def run(fn, *args):
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported by the assert below
            with lock:
                errors.append(repr(e))

    barriers = [threading.Barrier(2, timeout=60) for _ in range(2)]
    threads = [threading.Thread(target=run, args=(api_writer, k)) for k in range(3)]
    threads += [threading.Thread(target=run, args=(update_writer, k)) for k in range(3)]
    threads += [threading.Thread(target=run, args=(twin_writer, k, barriers[k // 2]))
                for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    total = CONCURRENT_ROUNDS * len(threads)
    assert not stale, "%d of %d acknowledged writes not answered by the next query: %s" % (
        len(stale), total, stale[:6])
