"""ACME end to end: certificates from pebble for several names and a
wildcard in one order, with each client an operator would point at
zonecast (tests/system/acme.py): certbot dns-rfc2136, certbot
dns-cloudflare through zonecast's API, lego rfc2136. Each runs with its
propagation wait at 0 (docs/acme.md says why that is safe here: zonecast
answers a write within milliseconds); pebble's DNS-01 checks ask zonecast
itself. Afterwards no challenge record is left in the zone, by DNS and by
the API, and a second run works the same (nothing piled up)."""

import dns.rcode
import pytest

import acme


@pytest.fixture
def setup(tmp_path, zonecast_factory):
    """(zonecast serving acme.test. with its API, pebble checking through it)."""
    missing = acme.missing_tools()
    if missing:
        pytest.skip("not installed (dev/deps test): " + ", ".join(missing))
    zfile = tmp_path / "acme.test.zone"
    zfile.write_text(acme.ZONE_TEXT)
    srv = zonecast_factory(zones={acme.ZONE: str(zfile)}, api=True)
    pebble = acme.Pebble(str(tmp_path), srv.port).start()
    yield srv, pebble
    pebble.stop()


def challenge_key(srv, name="acme-challenges"):
    """A TSIG key that may change only the challenges' TXT records."""
    grants = ["name:%s.:TXT" % n for n in acme.CHALLENGE_NAMES]
    return srv.tsig_create(name, "acme.test", grants=grants, transfer=False)


def assert_issued(result, pebble):
    assert result.returncode == 0, "%s\n--- pebble ---\n%s" % (result.describe(),
                                                              pebble.log()[-4000:])
    assert result.names == sorted(acme.DOMAINS), result.names


def assert_no_challenge_left(srv):
    for name in acme.CHALLENGE_NAMES:
        r = srv.query(name + ".", "TXT")
        assert r.rcode() in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN) and not r.answer, r
    api = srv.client()
    zid = api.zone_id("acme.test")
    left = api.get("/zones/%s/dns_records" % zid,
                   params={"name.startswith": "_acme-challenge", "per_page": 100})
    assert left == [], left
    assert api.get("/zones/%s/dns_records" % zid, params={"type": "TXT"}) == []


def test_certbot_dns_rfc2136(setup, tmp_path):
    srv, pebble = setup
    key = challenge_key(srv)
    for run in ("first", "second"):
        result = acme.certbot_rfc2136(str(tmp_path), pebble, srv.port, key, tag=run)
        assert_issued(result, pebble)
        print("certbot dns-rfc2136, propagation 0: %.1f s" % result.seconds)
        assert_no_challenge_left(srv)


def test_certbot_dns_cloudflare(setup, tmp_path):
    """Through the API: certbot's plugin finds the zone by name, posts each
    token as plain TXT content, and finds each record again by
    ?type=TXT&name=...&content=TOKEN to delete it."""
    srv, pebble = setup
    token = srv.create_token(zone="acme.test.")
    for run in ("first", "second"):
        result = acme.certbot_cloudflare(str(tmp_path), pebble, srv.api_url, token, tag=run)
        assert_issued(result, pebble)
        print("certbot dns-cloudflare, propagation 0: %.1f s" % result.seconds)
        assert_no_challenge_left(srv)


def test_lego_rfc2136(setup, tmp_path):
    srv, pebble = setup
    key = challenge_key(srv)
    for run in ("first", "second"):
        result = acme.lego_rfc2136(str(tmp_path), pebble, srv.port, key, tag=run)
        assert_issued(result, pebble)
        print("lego rfc2136, --dns.disable-cp: %.1f s" % result.seconds)
        assert_no_challenge_left(srv)


def test_a_key_without_the_grant_gets_no_certificate(setup, tmp_path):
    """The grant is what lets a client write its challenges: a key limited
    to another name is refused (REFUSED), nothing is written, no
    certificate is issued."""
    srv, pebble = setup
    key = srv.tsig_create("other-key", "acme.test", grants=["name:www.acme.test.:A"],
                          transfer=False)
    result = acme.certbot_rfc2136(str(tmp_path), pebble, srv.port, key, tag="nogrant")
    assert result.returncode != 0 and result.names is None, result.describe()
    assert_no_challenge_left(srv)
