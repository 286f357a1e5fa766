"""The TSIG time window and replays (issue 11 item 9; RFC 8945 §5.2.3, §10).

A signed request is accepted only while the server's clock is within the
request's fudge of its Time Signed, and that fudge is capped by the server's
`tsig-max-fudge` (300 s by default): a client asking for a fudge of 65535 s
gets no more than 300. Within the window, an exact copy of an UPDATE already
accepted (the same key and MAC: a captured message sent again) is refused.
Both refusals are NOTAUTH with TSIG error BADTIME, signed with the key and
carrying the server's time (RFC 8945 §5.2.3), are logged, and change
nothing. The replay check is shown on the data: the record a captured
UPDATE wrote is changed in between, and the replay must not put it back.

Messages are built and signed with dnspython (servers.tsig_sign signs at a
chosen time with a chosen fudge) and sent as raw bytes, so that a replay is
the very same bytes.
"""

import itertools
import os
import socket
import struct
import subprocess
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig
import dns.update
import pytest

import servers
from servers import exchange_from, split_tsig, tsig_mac_valid, tsig_sign

BADTIME = 18
_seq = itertools.count(1)


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


class Zone:
    """A zone of its own and a key of it, for one test."""

    def __init__(self, srv, api):
        self.srv, self.api = srv, api
        self.name = "tw%d.tsig.test" % next(_seq)
        self.origin = self.name + "."
        self.id = api.ok("POST", "/zones", json={"name": self.name})["result"]["id"]
        self.key = srv.tsig_create("key." + self.name, self.name)
        wait_for(lambda: serial(srv, self.name) is not None, "zone served")

    def n(self, label):
        return "%s.%s" % (label, self.origin)

    def update(self, *adds, replace=(), delete=(), msg_id=None):
        """An unsigned UPDATE message (dnspython) of this zone."""
        u = dns.update.UpdateMessage(self.origin)
        if msg_id is not None:
            u.id = msg_id
        for name, rtype, text in adds:
            u.add(self.n(name), 300, rtype, text)
        for name, rtype, text in replace:
            u.replace(self.n(name), 300, rtype, text)
        for name, rtype in delete:
            u.delete(self.n(name), rtype)
        return u

    def signed(self, u, when=None, fudge=300):
        """(wire, mac) of u signed with the zone's key at `when` (now)."""
        return tsig_sign(u.to_wire(), self.key.key, time_signed=when, fudge=fudge)


@pytest.fixture
def zone(srv, api):
    return Zone(srv, api)


def wait_for(cond, what, timeout=2.0 * servers.TIMEOUT_SCALE):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for %s" % what
        time.sleep(0.01)


def serial(srv, zone):
    try:
        m = srv.query(zone, "SOA", timeout=0.5)
    except Exception:
        return None
    if m.rcode() != dns.rcode.NOERROR or not m.answer:
        return None
    return m.answer[0][0].serial


def served(srv, name, rtype="A"):
    """Sorted rdata texts DNS answers for (name, rtype)."""
    m = srv.query(name, rtype, timeout=1)
    return sorted(rd.to_text() for rrset in m.answer
                  if rrset.rdtype == dns.rdatatype.from_text(rtype) for rd in rrset)


def expect_served(srv, name, texts, rtype="A"):
    wait_for(lambda: served(srv, name, rtype) == sorted(texts),
             "%s %s = %s (DNS: %s)" % (name, rtype, texts, served(srv, name, rtype)))


def send(srv, wire, tcp=True):
    r = exchange_from(srv.host, srv.port, wire, tcp=tcp, source="127.0.0.1")
    assert r is not None, "no response (tcp=%s)" % tcp
    return r


def rcode(wire):
    return dns.rcode.Rcode(wire[3] & 0x0F)


def assert_badtime(r, key, request_mac, now=None):
    """NOTAUTH, TSIG error BADTIME, signed with the key (the request's MAC
    chained), Other Data holding the server's time (RFC 8945 §5.2.3)."""
    assert rcode(r) == dns.rcode.NOTAUTH, dns.rcode.to_text(rcode(r))
    _msg, owner, rd, _ = split_tsig(r)
    assert rd is not None and owner == key.name
    assert rd.error == BADTIME, "TSIG error %d" % rd.error
    assert tsig_mac_valid(r, key, request_mac), "the BADTIME response is not signed"
    assert len(rd.other) == 6, rd.other
    server_time = int.from_bytes(rd.other, "big")
    assert abs(server_time - (now or time.time())) < 30


def log_since(srv, mark):
    return srv.log()[mark:]


# ------------------------------------------------------------------ the time window

# (fudge the client asks for, seconds its Time Signed is off, accepted?)
WINDOW_CASES = [
    (65535, -1000, False),   # the example: 1,000 s late, fudge 65535
    (65535, 1000, False),    # ahead as far
    (65535, -20000, False),
    (65535, -310, False),    # just past the 300 s cap
    (65535, 310, False),
    (65535, -280, True),     # within the cap: the big fudge is merely capped
    (65535, 280, True),
    (600, -400, False),      # a fudge between the default and 65535
    (300, -280, True),
    (100, -150, False),      # the request's own smaller fudge still holds
    (100, 80, True),
    (0, 0, False),           # RFC 8945 §5.2.3: no window at all
]


@pytest.mark.parametrize("fudge,skew,accepted", WINDOW_CASES)
def test_fudge_is_capped(srv, zone, fudge, skew, accepted):
    name = "w%d" % abs(skew)
    before = serial(srv, zone.name)
    now = time.time()
    wire, mac = zone.signed(zone.update((name, "A", "192.0.2.1")), when=now + skew, fudge=fudge)
    mark = len(srv.log())
    r = send(srv, wire)
    if accepted:
        assert rcode(r) == dns.rcode.NOERROR, dns.rcode.to_text(rcode(r))
        expect_served(srv, zone.n(name), ["192.0.2.1"])
        return
    assert_badtime(r, zone.key.key, mac, now)
    time.sleep(0.2)
    assert served(srv, zone.n(name)) == []
    assert serial(srv, zone.name) == before
    log = log_since(srv, mark)
    assert "outside the window of" in log and zone.name in log, log


def test_over_udp_too(srv, zone):
    now = time.time()
    wire, mac = zone.signed(zone.update(("u", "A", "192.0.2.1")), when=now - 1000, fudge=65535)
    assert_badtime(send(srv, wire, tcp=False), zone.key.key, mac, now)
    assert served(srv, zone.n("u")) == []


def test_dnspython_client_sees_badtime(srv, zone):
    """A real client library reading the answer: dnspython raises PeerBadTime
    for a request signed long ago with a huge fudge."""
    # dnspython signs at time.time(): signed 1000 s ago by hand
    wire, mac = tsig_sign(zone.update(("py", "A", "192.0.2.1")).to_wire(),
                          zone.key.key, time_signed=time.time() - 1000, fudge=65535)
    r = send(srv, wire)
    with pytest.raises(dns.tsig.PeerBadTime):
        dns.message.from_wire(r, keyring=zone.key.key, request_mac=mac)
    assert served(srv, zone.n("py")) == []


def test_transfers_and_signed_queries_are_capped_too(srv, zone):
    """The cap is the server's, for every signed request: an AXFR and a
    signed SOA query signed 1000 s ago with fudge 65535 get BADTIME."""
    now = time.time()
    for rtype, tcp in (("AXFR", True), ("SOA", False), ("SOA", True)):
        q = dns.message.make_query(zone.origin, rtype)
        wire, mac = tsig_sign(q.to_wire(), zone.key.key, time_signed=now - 1000, fudge=65535)
        r = exchange_from(srv.host, srv.port, wire, tcp=tcp)
        assert r is not None
        assert_badtime(r, zone.key.key, mac, now)
        # within the cap they are served
        wire, _ = tsig_sign(q.to_wire(), zone.key.key, time_signed=now - 200, fudge=65535)
        r = exchange_from(srv.host, srv.port, wire, tcp=tcp)
        assert rcode(r) == dns.rcode.NOERROR, (rtype, tcp, dns.rcode.to_text(rcode(r)))


# ------------------------------------------------------------------ replays

@pytest.mark.parametrize("first_tcp,replay_tcp", [(True, True), (False, False), (True, False),
                                                  (False, True)])
def test_replay_of_an_add_does_not_revert_a_newer_change(srv, zone, first_tcp, replay_tcp):
    """A captured UPDATE that set A 192.0.2.1 is replayed after the record
    was changed to 192.0.2.2: BADTIME, and 192.0.2.2 stays."""
    wire, mac = zone.signed(zone.update(replace=[("r", "A", "192.0.2.1")]))
    assert rcode(send(srv, wire, tcp=first_tcp)) == dns.rcode.NOERROR
    expect_served(srv, zone.n("r"), ["192.0.2.1"])
    newer, _ = zone.signed(zone.update(replace=[("r", "A", "192.0.2.2")]))
    assert rcode(send(srv, newer)) == dns.rcode.NOERROR
    expect_served(srv, zone.n("r"), ["192.0.2.2"])
    s = serial(srv, zone.name)
    mark = len(srv.log())
    for _ in range(3):   # however often it comes back
        assert_badtime(send(srv, wire, tcp=replay_tcp), zone.key.key, mac)
    time.sleep(0.2)
    assert served(srv, zone.n("r")) == ["192.0.2.2"]
    assert serial(srv, zone.name) == s
    log = log_since(srv, mark)
    assert "refused a replay" in log and zone.key.name in log, log


def test_replay_of_a_delete_does_not_delete_again(srv, zone, api):
    """A captured UPDATE that deleted a record is replayed after the record
    was added again through the API: the record stays."""
    wire, _ = zone.signed(zone.update(("d", "A", "192.0.2.5")))
    assert rcode(send(srv, wire)) == dns.rcode.NOERROR
    delete, mac = zone.signed(zone.update(delete=[("d", "A")]))
    assert rcode(send(srv, delete)) == dns.rcode.NOERROR
    wait_for(lambda: served(srv, zone.n("d")) == [], "deleted")
    api.ok("POST", "/zones/%s/dns_records" % zone.id,
           json={"name": "d." + zone.name, "type": "A", "content": "192.0.2.6", "ttl": 300})
    expect_served(srv, zone.n("d"), ["192.0.2.6"])
    assert_badtime(send(srv, delete), zone.key.key, mac)
    time.sleep(0.2)
    assert served(srv, zone.n("d")) == ["192.0.2.6"]


def test_older_captures_are_refused_too(srv, zone):
    """Several messages accepted in a row: each one's copy is refused, the
    oldest as well as the newest."""
    wires = []
    for i in range(5):
        w, m = zone.signed(zone.update(replace=[("o", "A", "192.0.2.%d" % (i + 1))]))
        assert rcode(send(srv, w)) == dns.rcode.NOERROR
        wires.append((w, m))
    expect_served(srv, zone.n("o"), ["192.0.2.5"])
    for w, m in wires:
        assert_badtime(send(srv, w), zone.key.key, m)
    time.sleep(0.2)
    assert served(srv, zone.n("o")) == ["192.0.2.5"]


def test_distinct_messages_are_never_taken_for_replays(srv, zone):
    """60 different UPDATEs signed in the same second by one key, sent at
    once on one connection, and the same content again under another id:
    every one is accepted (the check is on the exact message, not on its
    content or time)."""
    now = int(time.time())
    wires = []
    for i in range(60):
        w, _ = zone.signed(zone.update(("s%d" % i, "A", "192.0.2.1"), msg_id=1000 + i), when=now)
        wires.append(w)
    for i in range(5):   # the same change, a new message
        w, _ = zone.signed(zone.update(("s0", "A", "192.0.2.1"), msg_id=2000 + i), when=now)
        wires.append(w)
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
        for _ in wires:
            (ln,) = struct.unpack("!H", servers.recv_exact(s, 2))
            r = servers.recv_exact(s, ln)
            assert rcode(r) == dns.rcode.NOERROR, dns.rcode.to_text(rcode(r))
    expect_served(srv, zone.n("s59"), ["192.0.2.1"])


def test_the_same_message_under_two_keys(srv, zone):
    """Two keys of a zone sign the same message at the same second: two
    messages, each accepted once, each copy refused."""
    other = srv.tsig_create("other." + zone.name, zone.name)
    now = int(time.time())
    u = zone.update(("k", "A", "192.0.2.1"), msg_id=7)
    for key in (zone.key, other):
        w, mac = tsig_sign(u.to_wire(), key.key, time_signed=now)
        assert rcode(send(srv, w)) == dns.rcode.NOERROR
        assert_badtime(send(srv, w), key.key, mac)


def test_a_full_replay_cache_never_lets_a_replay_through(zonecast_api_factory):
    """tsig-replay-cache=1024, and 1,200 accepted messages to fill it: the
    copy of the first one (no longer held) is refused all the same; so are
    messages signed no later than what the cache had to drop, while a
    message signed after that is accepted. The log says the cache is full."""
    s = zonecast_api_factory(zones={}, options=[("tsig-replay-cache", "1024")])
    z = Zone(s, s.client())
    now = int(time.time())
    first, first_mac = z.signed(z.update(replace=[("f", "A", "192.0.2.1")]), when=now - 60)
    assert rcode(send(s, first)) == dns.rcode.NOERROR
    expect_served(s, z.n("f"), ["192.0.2.1"])
    newer, _ = z.signed(z.update(replace=[("f", "A", "192.0.2.2")]), when=now - 60)
    assert rcode(send(s, newer)) == dns.rcode.NOERROR
    # 1,200 more, signed 30 s ago: no-ops (deleting what is not there)
    wires = [z.signed(z.update(delete=[("none%d" % i, "A")], msg_id=i % 65536),
                      when=now - 30)[0] for i in range(1200)]
    by_id = {}
    with socket.create_connection((s.host, s.port), timeout=30) as c:
        c.sendall(b"".join(struct.pack("!H", len(w)) + w for w in wires))
        for _ in wires:
            (ln,) = struct.unpack("!H", servers.recv_exact(c, 2))
            r = servers.recv_exact(c, ln)
            # answered as each completes (RFC 7766 §6.2.1.1): a refusal
            # overtakes the updates still being committed
            by_id[struct.unpack("!H", r[:2])[0]] = rcode(r)
    codes = [by_id[i] for i in range(len(wires))]
    accepted = codes.count(dns.rcode.NOERROR)
    # the cache holds 1024: 1022 fit beside the first two, the next three
    # push out the first two and one of the 1022, whose second becomes the
    # floor; the rest, signed in that second, are refused as unproven
    assert accepted == 1022 + 3, accepted
    assert codes[:accepted] == [dns.rcode.NOERROR] * accepted
    assert set(codes[accepted:]) == {dns.rcode.NOTAUTH}
    # the first message, dropped from the cache, is still no replay chance
    assert_badtime(send(s, first), z.key.key, first_mac)
    time.sleep(0.2)
    assert served(s, z.n("f")) == ["192.0.2.2"]
    # a message signed now is taken
    fresh, _ = z.signed(z.update(replace=[("f", "A", "192.0.2.3")]))
    assert rcode(send(s, fresh)) == dns.rcode.NOERROR
    expect_served(s, z.n("f"), ["192.0.2.3"])
    assert "TSIG replay cache is full (tsig-replay-cache 1024)" in s.log()


# ------------------------------------------------------------------ configuration

def test_tsig_max_fudge_setting(zonecast_api_factory):
    """tsig-max-fudge=600: 500 s off with fudge 65535 is accepted, 700 s off
    is not, and a request's own fudge of 300 still bounds it."""
    s = zonecast_api_factory(zones={}, options=[("tsig-max-fudge", "600")])
    z = Zone(s, s.client())
    now = time.time()
    for i, (fudge, skew, ok) in enumerate([(65535, -500, True), (65535, 500, True),
                                           (65535, -700, False), (300, -400, False),
                                           (601, -650, False)]):
        wire, mac = z.signed(z.update(("m%d" % i, "A", "192.0.2.1")), when=now + skew, fudge=fudge)
        r = send(s, wire)
        if ok:
            assert rcode(r) == dns.rcode.NOERROR, (fudge, skew)
        else:
            assert_badtime(r, z.key.key, mac, now)


@pytest.mark.parametrize("setting", ["tsig-max-fudge=0", "tsig-max-fudge=65536",
                                     "tsig-max-fudge=-1", "tsig-max-fudge=abc",
                                     "tsig-replay-cache=10", "tsig-replay-cache=0",
                                     "tsig-replay-cache=99999999"])
def test_bad_settings_are_refused(tmp_path, setting):
    if not os.access(servers.zonecast_bin(), os.X_OK):
        pytest.skip("zonecast binary not found")
    cp = subprocess.run([servers.zonecast_bin(), "serve", "--data-dir", str(tmp_path / "d"),
                         "--listen", "127.0.0.1:%d" % servers.free_port(), "--api-listen", "none",
                         "-o", setting], capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0
    key = setting.split("=")[0]
    assert "invalid value" in cp.stderr and key in cp.stderr, cp.stderr
    assert not (tmp_path / "d").exists()


def test_a_tsig_record_not_of_class_any_is_formerr(srv, zone):
    """RFC 8945 §4.2: a TSIG record's CLASS MUST be ANY. One of class IN
    was answered NOTAUTH/BADSIG, the audit line blaming the key's secret;
    it is a malformed message: FORMERR, unsigned (as BIND answers), and
    nothing changes."""
    before = serial(srv, zone.name)
    u = zone.update(("cls", "A", "192.0.2.1"))
    plain = u.to_wire()
    wire, _mac = zone.signed(u)
    at = len(plain) + len(zone.key.key.name.to_wire()) + 2   # the TSIG's class
    for rclass in (1, 254, 3):
        bad = wire[:at] + struct.pack("!H", rclass) + wire[at + 2:]
        r = send(srv, bad)
        assert rcode(r) == dns.rcode.FORMERR, (rclass, dns.rcode.to_text(rcode(r)))
        assert split_tsig(r)[1] is None, "a FORMERR is not signed"
    time.sleep(0.2)
    assert served(srv, zone.n("cls")) == [] and serial(srv, zone.name) == before
    # class ANY, the same message: applied
    assert rcode(send(srv, wire)) == dns.rcode.NOERROR
    expect_served(srv, zone.n("cls"), ["192.0.2.1"])
