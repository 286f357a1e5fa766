"""IXFR after a change of the SOA's fields or TTL (RFC 1995 §4): the
difference sequence starts with the SOA the client holds, exactly (its
serial, TTL and every field), and applied to the zone at that serial it
gives the current zone. An outside tester found the signed view's IXFR
giving the old serial with the new fields (BIND: "del not exact", IXFR
failed, AXFR instead).

For each way the SOA changes (PATCH /zones/{id} of its fields or TTL, an
UPDATE adding a newer SOA, a zone import whose SOA differs), on a signed
zone (served from the signed view, which journals such versions) and an
unsigned one (whose records journal answers such a change in AXFR form,
also correct): the IXFR from the serial before is checked against AXFRs
taken before and after.
"""

import time

import dns.rdatatype
import dns.update
import pytest

import servers
import test_update as U
from test_transfer import axfr, assert_same_rrs, ixfr_answer, is_soa, parse_ixfr, update

WAIT = 20.0 * servers.TIMEOUT_SCALE


@pytest.fixture(scope="module")
def srv(zonecast_dyn):
    return zonecast_dyn


@pytest.fixture(scope="module")
def api(srv):
    return srv.client()


def soa_item(items):
    return [i for i in items if is_soa(i)]


def served(srv, z, key, signed):
    """(rrs, serial) of the AXFR once it carries the serial DNS answers
    (signed: once the signed view has built it)."""
    deadline = time.monotonic() + WAIT
    while True:
        want = U.soa_serial(srv, z.name)
        try:
            rrs, serial, _ = axfr(srv, z.origin, key=key)
        except Exception:   # noqa: BLE001 - the view has not built it yet
            rrs, serial = {}, None
        if serial == want and (not signed or any(k[2] == "RRSIG" for k in rrs)):
            return rrs, serial
        assert time.monotonic() < deadline, "AXFR at %s, DNS %s" % (serial, want)
        time.sleep(0.05)


def soa_of(rrs):
    [text] = [v for k, v in rrs.items() if k[2] == "SOA"]
    return text


def soa_rest(text):
    """An SOA's TTL and fields but the serial."""
    f = text.split()
    return f[1:5] + f[6:]


def change_soa(srv, z, how, old_soa):
    """Changes the SOA's fields or TTL one way."""
    fields = old_soa.split()
    serial = int(fields[5])
    if how == "patch-fields":
        z.api.ok("PATCH", "/zones/%s" % z.id, json={"soa": {"refresh": 7211, "minimum": 61}})
    elif how == "patch-ttl":
        z.api.ok("PATCH", "/zones/%s" % z.id, json={"soa": {"ttl": 611}})
    elif how == "update":
        u = U.unsigned_update(z)
        u.add(z.origin, 612, "SOA", "%s %s %d 7212 3612 1209612 62" % (
            fields[3], fields[4], serial + 5))
        U.ok_unsigned(z, u)
    elif how == "import":
        path = "%s/%s.soa.zone" % (srv.workdir, z.name)
        with open(path, "w") as f:
            f.write("$ORIGIN %s\n$TTL 300\n@ 613 SOA ns1 hostmaster %d 7213 3613 1209613 63\n"
                    "@ NS ns1\n@ NS ns2\nns1 A 192.0.2.53\nwww A 192.0.2.80\n"
                    % (z.origin, serial + 7))
        srv.import_zone(z.name, path)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize("how", ["patch-fields", "patch-ttl", "update", "import"])
def test_ixfr_after_an_soa_change_starts_from_the_old_soa_exactly(srv, api, signed, how):
    z = U.Zone(srv, api, "soa" + how.replace("-", "")[:8] + ("s" if signed else "u"))
    key = srv.tsig_create("ixfr-soa." + z.name, z.name)
    z.add_api(z.n("www"), "A", "192.0.2.80")
    if signed:
        srv.run_cli("dnssec", "enable", "--data-dir", srv.data_dir, z.name)
    old, s0 = served(srv, z, key, signed)
    old_soa = soa_of(old)
    change_soa(srv, z, how, old_soa)
    deadline = time.monotonic() + WAIT
    while True:
        new, s1 = served(srv, z, key, signed)
        if s1 != s0 and soa_rest(soa_of(new)) != soa_rest(old_soa):
            break
        assert time.monotonic() < deadline, "the SOA change was not served"
        time.sleep(0.05)
    new_soa = soa_of(new)

    items = ixfr_answer(srv, z.origin, s0, key=key)
    kind, val = parse_ixfr(items)
    if kind == "axfr":
        # AXFR form: right too (RFC 1995 §4), but the signed view journals
        # these versions and must answer incrementally.
        assert not signed, "the signed view answered IXFR from %d in AXFR form" % s0
        assert_same_rrs(val, new, "AXFR-form IXFR from %d" % s0)
        return
    assert kind == "ixfr" and len(val) == 1, (kind, val)
    soas = soa_item(items)
    assert soas[0][1] == new_soa and soas[2][1] == new_soa and soas[3][1] == new_soa, soas
    # the deleted SOA: the one the client holds, TTL and fields included
    assert soas[1][1] == old_soa, "IXFR's old SOA\n  %s\nis not the zone's at %d\n  %s" % (
        soas[1][1], s0, old_soa)
    (frm, to, dels, adds) = val[0]
    assert (frm, to) == (s0, s1)
    before = {k: v for k, v in old.items() if k[2] != "SOA"}
    after = {k: v for k, v in new.items() if k[2] != "SOA"}
    assert set(dels) <= set(before), [dels[k] for k in set(dels) - set(before)]
    assert not set(adds) & set(before)
    applied = {k: v for k, v in before.items() if k not in dels}
    applied.update(adds)
    assert_same_rrs(applied, after, "the zone at %d + IXFR" % s0)
