"""The administrative writes are written once (src/admin/): the API's
handlers (DELETE /zones/{id}, /zones/{id}/tsig_keys, PATCH
/zones/{id}/dnssec) and the `zonecast` command (zone delete, tsig
create|delete, dnssec enable|disable) run the same writer units against
one server, and see each other's changes.

Where the two copies once disagreed, both now take the command's steps:

- disable: PATCH {"status": "disabled"} removed the keys at once, while a
  DS may still be at the parent. It now goes through "pending-disabled"
  (CDS and CDNSKEY DELETE published, RFC 8078 §4, as `zonecast dnssec
  disable` and Cloudflare's API do); asked again before the DS TTL it is
  refused (409, with the time), after it the keys go; "force": true
  removes them at once, as `--force` does.
- enable of a zone being disabled: PATCH {"status": "active"} answered
  "active" and left CDS DELETE published (so a parent following CDS would
  still drop the DS); it now cancels the disable, as `zonecast dnssec
  enable` does.

Time passing is simulated as in test_operator_safety.py: the DELETE
record's creation time is moved back in records.db."""

import os
import sqlite3
import subprocess
import time

import dns.message
import dns.query
import dns.rdatatype
import pytest

from servers import ZONES_DIR, ZonecastServer, zonecast_bin

ZONE = "example.com."
ZONE_FILE = os.path.join(ZONES_DIR, "example.com.zone")
CDS = 59


@pytest.fixture
def served(tmp_path):
    srv = ZonecastServer(str(tmp_path / "srv"), zones={ZONE: ZONE_FILE}, api=True).start()
    yield srv
    assert not srv.stop()


def cli(srv, *args):
    return subprocess.run([zonecast_bin()] + list(args[:2]) + ["--data-dir", srv.data_dir]
                          + list(args[2:]), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def ask(srv, name, rtype):
    q = dns.message.make_query(name, rtype, want_dnssec=True)
    return dns.query.udp(q, "127.0.0.1", port=srv.port, timeout=5)


def texts(r, rtype):
    return sorted(rd.to_text() for rrset in r.answer if rrset.rdtype == rtype for rd in rrset)


def wait_until(fn, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def age_cds(data_dir, seconds):
    db = sqlite3.connect(os.path.join(data_dir, "records.db"))
    with db:
        db.execute("UPDATE records SET created_on = created_on - ? WHERE type = ?",
                   (seconds * 1000, CDS))
    db.close()


def cds_delete_served(srv):
    return texts(ask(srv, ZONE, "CDS"), dns.rdatatype.CDS) == ["0 0 0 00"]


def signed(srv):
    return bool(texts(ask(srv, ZONE, "DNSKEY"), dns.rdatatype.DNSKEY))


def test_api_disable_goes_through_pending_disabled(served):
    api = served.client()
    zid = api.zone_id(ZONE)
    path = "/zones/%s/dnssec" % zid
    assert api.ok("PATCH", path, json={"status": "active"})["result"]["status"] == "active"
    wait_until(lambda: signed(served), "DNSKEY served after PATCH active")
    # First PATCH disabled: CDS/CDNSKEY DELETE, the zone still signed.
    res = api.ok("PATCH", path, json={"status": "disabled"})["result"]
    assert res["status"] == "pending-disabled", res
    assert res.get("ds"), "the DS is still shown while pending: %s" % res
    wait_until(lambda: cds_delete_served(served), "CDS DELETE served after PATCH disabled")
    r = ask(served, ZONE, "CDNSKEY")
    assert texts(r, dns.rdatatype.CDNSKEY) == ["0 3 0 AA=="], r
    assert texts(r, dns.rdatatype.RRSIG), "the DELETE records are signed: %s" % r
    assert signed(served)
    assert api.get(path)["status"] == "pending-disabled"
    # The command sees the same state (one implementation, one store).
    out = cli(served, "dnssec", "keys", ZONE).stdout
    assert "being disabled" in out, out
    # Again before the DS TTL: 409 saying from when, nothing removed.
    r = api.call("PATCH", path, json={"status": "disabled"})
    assert r.status_code == 409, (r.status_code, r.text)
    assert "pending-disabled" in r.text and "force" in r.text, r.text
    assert signed(served) and api.get(path)["status"] == "pending-disabled"
    # So is the command's second run: the same rail.
    cp = cli(served, "dnssec", "disable", ZONE)
    assert cp.returncode == 1 and "too early for disable" in cp.stderr, cp.stderr
    # Once the DS TTL and the margin have passed: the keys go.
    age_cds(served.data_dir, 86400 + 301)
    res = api.ok("PATCH", path, json={"status": "disabled"})["result"]
    assert res["status"] == "disabled", res
    wait_until(lambda: not signed(served), "DNSKEY gone after the second PATCH disabled")
    r = ask(served, ZONE, "SOA")
    assert not texts(r, dns.rdatatype.RRSIG) and not texts(r, dns.rdatatype.CDS), r
    # Disabled already: PATCH disabled changes nothing and says so.
    assert api.ok("PATCH", path, json={"status": "disabled"})["result"]["status"] == "disabled"


def test_api_disable_force_removes_at_once(served):
    api = served.client()
    path = "/zones/%s/dnssec" % api.zone_id(ZONE)
    api.ok("PATCH", path, json={"status": "active"})
    wait_until(lambda: signed(served), "DNSKEY served after PATCH active")
    r = api.call("PATCH", path, json={"status": "disabled", "force": "yes"})
    assert r.status_code == 400 and "force" in r.text, (r.status_code, r.text)
    res = api.ok("PATCH", path, json={"status": "disabled", "force": True})["result"]
    assert res["status"] == "disabled", res
    wait_until(lambda: not signed(served), "DNSKEY gone after a forced PATCH disabled")


def test_api_enable_cancels_a_disable_begun_by_the_command(served):
    api = served.client()
    path = "/zones/%s/dnssec" % api.zone_id(ZONE)
    cp = cli(served, "dnssec", "enable", ZONE)
    assert cp.returncode == 0, cp.stderr
    cp = cli(served, "dnssec", "disable", ZONE)
    assert cp.returncode == 0 and "DELETE published" in cp.stdout, cp.stdout + cp.stderr
    wait_until(lambda: cds_delete_served(served), "CDS DELETE served after disable")
    res = api.ok("PATCH", path, json={"status": "active"})["result"]
    assert res["status"] == "active", res
    # The KSK's CDS is back in place of DELETE: a parent following CDS
    # keeps (or puts back) the DS.
    wait_until(lambda: not cds_delete_served(served), "CDS DELETE withdrawn after PATCH active")
    cds = texts(ask(served, ZONE, "CDS"), dns.rdatatype.CDS)
    assert len(cds) == 1 and cds[0].split()[1:3] == ["13", "2"], cds
    assert cds[0].split()[0] == str(res["key_tag"]), (cds, res)
    assert "being disabled" not in cli(served, "dnssec", "keys", ZONE).stdout


def test_tsig_keys_and_zone_delete_either_way(served):
    api = served.client()
    zid = api.zone_id(ZONE)
    # A key made by the command is listed by the API and deleted there.
    cp = cli(served, "tsig", "create", "cli-key", "--zone", ZONE)
    assert cp.returncode == 0 and "cli-key" in cp.stdout, cp.stderr
    keys = api.get("/zones/%s/tsig_keys" % zid)
    made = [k for k in keys if k["name"] == "cli-key"]
    assert made and "secret" not in made[0], keys
    api.ok("DELETE", "/zones/%s/tsig_keys/%s" % (zid, made[0]["id"]))
    cp = cli(served, "tsig", "delete", "cli-key")
    assert cp.returncode == 1 and "no key cli-key" in cp.stderr, cp.stderr
    # A key made by the API, under a name taken: the same refusal.
    api.ok("POST", "/zones/%s/tsig_keys" % zid, json={"name": "api-key"})
    cp = cli(served, "tsig", "create", "api-key", "--zone", ZONE)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    r = api.call("POST", "/zones/%s/tsig_keys" % zid, json={"name": "api-key"})
    assert r.status_code == 409, (r.status_code, r.text)
    cp = cli(served, "tsig", "delete", "api-key")
    assert cp.returncode == 0, cp.stderr
    assert not api.get("/zones/%s/tsig_keys" % zid)
    # The zone deleted by the API is gone for the command too.
    api.ok("DELETE", "/zones/%s" % zid)
    cp = cli(served, "zone", "delete", ZONE, "--force")
    assert cp.returncode == 1 and "no zone" in cp.stderr, cp.stderr
    wait_until(lambda: ask(served, ZONE, "SOA").rcode() != 0, "zone no longer served")
