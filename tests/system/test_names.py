"""Names with any octet (RFC 2181 §11), issue 11 items 1 and 2.

Every name maps to an edge key of its own, in DNSSEC canonical order
(dns/name.h escapes the octets 0x00 and 0x01): names holding 0x00, 0x01 or
any other octet, at the start, middle or end of a label and at every label
position, are stored, served, exported and imported as themselves, through
the API (also with a token scoped to the zone) and through signed UPDATE;
names that the old encoding merged (`a\\000b.zone.` and `b.a.zone.`) stay
apart; other zones keep taking changes; `zonecast verify` is clean and a
restart serves the same. In the root zone, where a name with more than 240
octets 0x00/0x01 has no key, the write is refused with a clear error.
"""

import os
import random
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update
import pytest

import servers

WAIT = 3.0 * servers.TIMEOUT_SCALE


def label_variants():
    """Labels with octets that stress the key's escape, at every position."""
    out = []
    for o in (0x00, 0x01, 0x02, 0x2e, 0x5c, 0x41, 0x7f, 0xff):
        b = bytes([o])
        out += [b, b + b"x", b"x" + b, b"x" + b + b"y", b * 3]
    return out


def wire_name(labels, origin):
    return dns.name.Name(list(labels) + list(origin.labels))


def ask(srv, name, rtype="TXT"):
    q = dns.message.make_query(name, rtype)
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=2)


def served_txt(srv, name):
    r = ask(srv, name)
    if r.rcode() != dns.rcode.NOERROR or not r.answer:
        return None
    return sorted(b"".join(rd.strings) for rd in r.answer[0])


def wait_txt(srv, name, want):
    deadline = time.monotonic() + WAIT
    while True:
        got = served_txt(srv, name)
        if got == want:
            return
        if time.monotonic() > deadline:
            raise AssertionError("%s: served %r, want %r" % (name, got, want))
        time.sleep(0.02)


def api_name(name):
    """The API's name form: presentation format without the final dot."""
    return name.to_text().rstrip(".")


def tag(i):
    return ("n%d" % i).encode()


@pytest.fixture
def srv(zonecast_api_factory):
    return zonecast_api_factory(zones={})


def make_zone(api, zname):
    zid = api.ok("POST", "/zones", json={"name": zname})["result"]["id"]
    return zid


def test_any_octet_names_through_api(srv):
    api = srv.client()
    zname = "names.test"
    zid = make_zone(api, zname)
    origin = dns.name.from_text(zname)
    # A token scoped to this zone takes the same names.
    scoped = srv.client(srv.create_token(zone=zname))
    names = []
    for i, lab in enumerate(label_variants()):
        names.append(wire_name([lab], origin))
        names.append(wire_name([b"p", lab], origin))
        names.append(wire_name([lab, b"q"], origin))
    # The pair the old encoding merged, and prefixes of each other.
    names += [wire_name([b"a\x00b"], origin), wire_name([b"b", b"a"], origin),
              wire_name([b"x"], origin), wire_name([b"x\x00"], origin),
              wire_name([b"\x00"], origin), wire_name([b"\x00\x00"], origin),
              wire_name([b"\x00", b"\x00"], origin)]
    names = list(dict.fromkeys(n.canonicalize() for n in names))
    for i, n in enumerate(names):
        client = scoped if i % 2 else api
        client.ok("POST", "/zones/%s/dns_records" % zid,
                  json={"type": "TXT", "name": api_name(n),
                        "content": '"%s"' % tag(i).decode()})
    for i, n in enumerate(names):
        wait_txt(srv, n, [tag(i)])
    # The API lists each name as written (presentation form round trip).
    listed = {r["name"]: r["content"] for r in api.records(zid, type="TXT")}
    for i, n in enumerate(names):
        assert listed[api_name(n)] == '"%s"' % tag(i).decode()
    # A name next to a stored one, differing in a 0x00/0x01 octet, is absent.
    for n in (wire_name([b"a\x01b"], origin), wire_name([b"zz\x00"], origin),
              wire_name([b"\x01\x00\x01"], origin)):
        assert n not in names
        r = ask(srv, n)
        assert r.rcode() == dns.rcode.NXDOMAIN, (n, r)
    assert srv.verify().returncode == 0

    # Another zone keeps taking changes meanwhile.
    other = make_zone(api, "other.names.test")
    api.ok("POST", "/zones/%s/dns_records" % other,
           json={"type": "TXT", "name": "after.other.names.test", "content": '"ok"'})
    wait_txt(srv, dns.name.from_text("after.other.names.test"), [b"ok"])

    # Export, then import into a new data directory: the same names.
    exported = srv.run_cli("zone", "export", "--data-dir", srv.data_dir, zname).stdout
    path = os.path.join(srv.workdir, "export.zone")
    with open(path, "w") as f:
        f.write(exported)
    fresh = os.path.join(srv.workdir, "fresh")
    srv.run_cli("zone", "import", "--data-dir", fresh, zname, path)
    again = srv.run_cli("zone", "export", "--data-dir", fresh, zname).stdout
    body = lambda t: sorted(l for l in t.splitlines() if " SOA " not in l and "\tSOA\t" not in l)
    assert body(again) == body(exported)
    cp = srv.run_cli("verify", "--data-dir", fresh, check=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr

    # A restart serves the same (the edge keys are read back as written).
    assert not srv.stop()
    srv.restart()
    for i, n in enumerate(names):
        wait_txt(srv, n, [tag(i)])


def test_any_octet_names_through_update(srv):
    api = srv.client()
    zname = "upd-names.test"
    make_zone(api, zname)
    key = srv.tsig_create("names-key", zname)
    keyring = dns.tsigkeyring.from_text({key.name: (key.algorithm, key.secret)})
    origin = dns.name.from_text(zname)
    rnd = random.Random(2181)
    names = []
    for _ in range(40):
        labels = [bytes(rnd.choice((0, 1, 2, 0x41, 0x61, 0xff)) for _ in
                        range(rnd.randint(1, 5))) for _ in range(rnd.randint(1, 3))]
        names.append(wire_name(labels, origin))
    names += [wire_name([b"a\x00b"], origin), wire_name([b"b", b"a"], origin)]
    names = list(dict.fromkeys(n.canonicalize() for n in names))
    for i, n in enumerate(names):
        up = dns.update.UpdateMessage(zname, keyring=keyring, keyname=key.name,
                                      keyalgorithm=key.algorithm)
        up.add(n, 300, "TXT", '"%s"' % tag(i).decode())
        r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=3)
        assert r.rcode() == dns.rcode.NOERROR, (n, r)
    for i, n in enumerate(names):
        wait_txt(srv, n, [tag(i)])
    # Delete one of the formerly merged pair: the other stays.
    up = dns.update.UpdateMessage(zname, keyring=keyring, keyname=key.name,
                                  keyalgorithm=key.algorithm)
    up.delete(wire_name([b"a\x00b"], origin))
    r = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=3)
    assert r.rcode() == dns.rcode.NOERROR
    b_a = wire_name([b"b", b"a"], origin)
    deadline = time.monotonic() + WAIT
    while ask(srv, wire_name([b"a\x00b"], origin)).rcode() != dns.rcode.NXDOMAIN:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert served_txt(srv, b_a) == [tag(names.index(b_a))]
    assert srv.verify().returncode == 0


def test_root_zone_name_without_key_is_refused(srv, tmp_path):
    """In the root zone a name of 250 octets 0x00 has no edge key (511
    bytes); the API answers 400 naming the field, UPDATE REFUSED, and
    nothing changes; a long name that fits is stored and served."""
    zf = tmp_path / "root.zone"
    zf.write_text("$ORIGIN .\n$TTL 300\n@ SOA a.root-servers.test. h.test. 1 2 3 4 5\n"
                  "@ NS a.root-servers.test.\n")
    srv.import_zone(".", str(zf))
    api = srv.client()
    zid = [z["id"] for z in api.get("/zones") if z["name"] == "."][0]
    too_long = dns.name.Name([b"\x00" * 63, b"\x01" * 63, b"\x00" * 63, b"\x00" * 61, b""])
    fits = dns.name.Name([b"\x00" * 63, b"\x01" * 63, b"\x00" * 60, b""])
    before = api.records(zid)
    r = api.call("POST", "/zones/%s/dns_records" % zid,
                 json={"type": "TXT", "name": too_long.to_text(), "content": '"x"'})
    assert r.status_code == 400, r.text
    assert "name" in r.json()["errors"][0]["message"]
    assert api.records(zid) == before
    api.ok("POST", "/zones/%s/dns_records" % zid,
           json={"type": "TXT", "name": fits.to_text(), "content": '"fits"'})
    wait_txt(srv, fits, [b"fits"])
    key = srv.tsig_create("root-key", ".")
    keyring = dns.tsigkeyring.from_text({key.name: (key.algorithm, key.secret)})
    up = dns.update.UpdateMessage(".", keyring=keyring, keyname=key.name,
                                  keyalgorithm=key.algorithm)
    up.add(too_long, 300, "TXT", '"x"')
    resp = dns.query.tcp(up, "127.0.0.1", port=srv.port, timeout=3)
    assert resp.rcode() == dns.rcode.REFUSED
    assert ask(srv, too_long).rcode() == dns.rcode.NXDOMAIN
    assert srv.verify().returncode == 0


def test_upgrade_from_schema_7(zonecast_factory):
    """A data directory written by the zonecast before this encoding (schema
    7, unescaped edge keys, made through its API: fixtures/schema7) is
    migrated at start: keys computed again, the edge rebuilt; names that
    shared a node there are two here, and verify is clean."""
    srv = zonecast_factory()
    assert not srv.stop()
    fixtures = os.path.join(os.path.dirname(__file__), "fixtures", "schema7")
    for f in os.listdir(srv.data_dir):
        os.unlink(os.path.join(srv.data_dir, f))
    for f in ("records.db", "edge.mdb"):
        with open(os.path.join(fixtures, f), "rb") as src, \
                open(os.path.join(srv.data_dir, f), "wb") as dst:
            dst.write(src.read())
    srv.zones = {"up.test": None}
    srv.restart()
    assert "building its 1 zones again" in srv.log()
    for name, want in (("x\\000.up.test.", b"x\x00.up.test"),
                       ("c\\000d.up.test.", b"c\x00d.up.test"),
                       ("d.c.up.test.", b"d.c.up.test"),
                       ("r\\001s.up.test.", b"r\x01s.up.test"),
                       ("q\\001.up.test.", b"q1")):
        wait_txt(srv, dns.name.from_text(name), [want])
    assert srv.verify().returncode == 0
