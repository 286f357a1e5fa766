"""A signed zone's keys in the edge store: the keyset (src/edge/codec.h,
docs/architecture.md "Edge values").

- An edge store written before keysets had a version byte (the keys back
  to back) keeps signing after an upgrade: the same DNSKEYs, answers that
  delv fully validates, no difference for `zonecast verify`; the zone's
  next full build writes the versioned form (version 2).
- A keyset the DNS server cannot load is logged (with the zone and why)
  and the zone is answered unsigned, not silently.
- A zone has at most 8 keys: a ninth `prepublish` is refused with the
  reason, and the zone keeps signing with its 8.

The old form is made from the new one with LMDB's own tools (mdb_dump,
mdb_load) on the stopped server's edge.mdb: version 2 is the old form
behind a version byte and a key count.
"""

import os
import re
import shutil
import subprocess
import time

import dns.dnssec
import dns.name
import dns.rdataclass
import dns.rdatatype
import pytest

import servers
import validators

ZONE = "signed.test."
ZONE_FILE = os.path.join(servers.ZONES_DIR, "signed.test.zone")
WAIT = 5.0 * servers.TIMEOUT_SCALE


def _need(tool):
    path = shutil.which(tool)
    if path is None:
        pytest.skip("%s not installed (dev/deps test)" % tool)
    return path


def keysets(data_dir):
    """The edge store's `keys` table: {zone id key (hex): value (bytes)}."""
    out = subprocess.run([_need("mdb_dump"), "-n", "-s", "keys",
                          os.path.join(data_dir, "edge.mdb")],
                         capture_output=True, text=True, check=True).stdout
    lines = out.split("HEADER=END\n", 1)[1].split("DATA=END", 1)[0].split()
    return {lines[i]: bytes.fromhex(lines[i + 1]) for i in range(0, len(lines), 2)}


def put_keysets(data_dir, values):
    """Overwrites entries of the `keys` table (the server stopped)."""
    text = "VERSION=3\nformat=bytevalue\ndatabase=keys\ntype=btree\nHEADER=END\n"
    for key, val in values.items():
        text += " %s\n %s\n" % (key, val.hex())
    text += "DATA=END\n"
    subprocess.run([_need("mdb_load"), "-n", "-s", "keys",
                    os.path.join(data_dir, "edge.mdb")],
                   input=text, text=True, check=True)


def unmarked(value):
    """The same keys in the form written before version 2."""
    assert value[0] == 2 and 1 <= value[1] <= 8, value[:2].hex()
    return value[2:]


def dnssec_cli(srv, *args, check=True):
    return srv.run_cli("dnssec", args[0], "--data-dir", srv.data_dir, ZONE.rstrip("."),
                       *args[1:], check=check)


def served_dnskeys(srv):
    """The DNSKEY RRset served with DO=1, checked against its RRSIG."""
    r = srv.query(ZONE, "DNSKEY", do=True)
    keys = r.get_rrset(r.answer, dns.name.from_text(ZONE), dns.rdataclass.IN,
                       dns.rdatatype.DNSKEY)
    sigs = r.get_rrset(r.answer, dns.name.from_text(ZONE), dns.rdataclass.IN,
                       dns.rdatatype.RRSIG, dns.rdatatype.DNSKEY)
    if keys is None or sigs is None:
        return None
    dns.dnssec.validate(keys, sigs, {dns.name.from_text(ZONE): keys})
    return keys


def wait_for(cond, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def wait_signed(srv, count):
    return wait_for(lambda: (lambda k: k if k is not None and len(k) == count else None)(
        served_dnskeys(srv)), "%d DNSKEYs served signed" % count)


def assert_validates(srv, anchor, name, rdtype):
    cp = validators.delv(srv.port, anchor, ZONE, name, rdtype)
    assert "; fully validated" in cp.out, "%s\n%s" % (" ".join(cp.argv), cp.out)


@pytest.fixture
def signed(zonecast_factory, tmp_path):
    _need("mdb_dump")
    _need("mdb_load")
    if not os.access(validators.delv_bin(), os.X_OK):
        pytest.skip("delv not installed (dev/deps test)")
    srv = zonecast_factory(zones={ZONE: ZONE_FILE})
    cp = dnssec_cli(srv, "enable", "--split")
    ds = validators.parse_ds(cp.stdout)
    anchor = validators.anchors_file(str(tmp_path / "anchor.conf"), ds)
    keys = wait_signed(srv, 2)
    return srv, anchor, keys


def test_keyset_written_before_version_2_keeps_signing(signed):
    srv, anchor, keys = signed
    before = keysets(srv.data_dir)
    assert len(before) == 1
    (zone_key, value), = before.items()
    assert value[0] == 2 and value[1] == 2, value[:2].hex()

    # The edge store as an older zonecast left it.
    assert srv.stop() == []
    put_keysets(srv.data_dir, {zone_key: unmarked(value)})
    assert keysets(srv.data_dir)[zone_key][0] == 1
    srv.restart()

    # Same keys, signed answers that validate, no difference for verify.
    assert wait_signed(srv, 2) == keys
    assert_validates(srv, anchor, "www." + ZONE, "A")
    assert_validates(srv, anchor, ZONE, "DNSKEY")
    cp = srv.verify(ZONE)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "do not load" not in srv.log()
    assert keysets(srv.data_dir)[zone_key] == unmarked(value)

    # The next full build (a rollover step) writes version 2.
    dnssec_cli(srv, "rollover", "zsk", "prepublish")
    now = keysets(srv.data_dir)[zone_key]
    assert now[0] == 2 and now[1] == 3, now[:2].hex()
    assert now[2:].startswith(unmarked(value))
    wait_signed(srv, 3)
    assert_validates(srv, anchor, "www." + ZONE, "A")


def test_keyset_that_does_not_load_is_logged(signed):
    srv, anchor, keys = signed
    (zone_key, value), = keysets(srv.data_dir).items()
    assert srv.stop() == []
    put_keysets(srv.data_dir, {zone_key: b"\x09" + value[1:]})  # a newer version
    srv.restart()
    r = srv.query("www." + ZONE, "A", do=True)
    assert r.answer and not any(rr.rdtype == dns.rdatatype.RRSIG for rr in r.answer), r
    wait_for(lambda: "do not load" in srv.log(), "the log line")
    line = [ln for ln in srv.log().splitlines() if "do not load" in ln]
    assert "zone signed.test." in line[0] and "unknown format version" in line[0], line
    # Once per worker, not per query.
    for _ in range(20):
        srv.query("www." + ZONE, "A", do=True)
    assert srv.log().count("do not load") <= srv.workers, srv.log()
    # verify reports it; a full build of the zone (a rollover step) repairs.
    assert srv.verify(ZONE).returncode != 0
    dnssec_cli(srv, "rollover", "zsk", "prepublish")
    wait_signed(srv, 3)
    assert_validates(srv, anchor, "www." + ZONE, "A")


def test_ninth_key_refused(signed):
    srv, anchor, _keys = signed
    for n in range(3, 9):
        dnssec_cli(srv, "rollover", "zsk", "prepublish")
    keys = wait_signed(srv, 8)
    cp = dnssec_cli(srv, "rollover", "zsk", "prepublish", check=False)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "a signed zone has 1 to 8 DNSSEC keys" in cp.stderr, cp.stderr
    assert served_dnskeys(srv) == keys
    assert len(re.findall(r"^tag=", dnssec_cli(srv, "keys").stdout, re.M)) == 8
    assert_validates(srv, anchor, "www." + ZONE, "A")
    assert srv.verify(ZONE).returncode == 0
