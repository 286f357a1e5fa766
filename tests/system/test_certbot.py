"""certbot's dns-rfc2136 plugin, set up the default way, against zonecast:
its credentials file names no algorithm, so certbot signs with HMAC-MD5
(RFC 8945 §6: mandatory to implement), with a key made by `zonecast tsig
create --algorithm hmac-md5`. pebble, the ACME test server, checks the
DNS-01 challenge against zonecast and issues the certificate; certbot then
removes its TXT record. A key of another algorithm under the same default
credentials fails, and zonecast's log says why (key, client, reason).
"""

import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

import servers

ZONE = "acme.test."
ZONE_FILE = """$ORIGIN acme.test.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
@    NS  ns1
ns1  A   192.0.2.53
www  A   192.0.2.80
"""
CERTBOT_TIMEOUT = 180 * servers.TIMEOUT_SCALE


def _need(*tools):
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip("%s not installed (dev/deps test)" % t)
    try:
        import certbot_dns_rfc2136  # noqa: F401
    except ImportError:
        pytest.skip("python3-certbot-dns-rfc2136 not installed")


def _self_signed(dirpath):
    """A certificate for pebble's HTTPS listener (certbot runs with
    --no-verify-ssl: the test is about DNS, not about trusting pebble)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
            .sign(key, hashes.SHA256()))
    cpath, kpath = os.path.join(dirpath, "cert.pem"), os.path.join(dirpath, "key.pem")
    with open(cpath, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(kpath, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()))
    return cpath, kpath


@pytest.fixture
def pebble(tmp_path, zonecast_factory):
    """(zonecast serving acme.test. with UPDATE by key only, pebble whose
    DNS-01 checks ask that zonecast, pebble's directory URL)."""
    _need("certbot", "pebble")
    zfile = tmp_path / "acme.test.zone"
    zfile.write_text(ZONE_FILE)
    srv = zonecast_factory(zones={ZONE: str(zfile)})
    cert, key = _self_signed(str(tmp_path))
    port = servers.free_port()
    cfg = {"pebble": {"listenAddress": "127.0.0.1:%d" % port,
                      "managementListenAddress": "127.0.0.1:%d" % servers.free_port(),
                      "certificate": cert, "privateKey": key,
                      "httpPort": servers.free_port(), "tlsPort": servers.free_port(),
                      "ocspResponderURL": "", "externalAccountBindingRequired": False}}
    cpath = tmp_path / "pebble.json"
    cpath.write_text(json.dumps(cfg))
    env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT="0")
    log = open(tmp_path / "pebble.log", "wb")
    proc = subprocess.Popen(["pebble", "-config", str(cpath), "-dnsserver",
                             "127.0.0.1:%d" % srv.port], stdout=log, stderr=subprocess.STDOUT,
                            env=env)
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "pebble.log").read_text()
            time.sleep(0.1)
    yield srv, "https://127.0.0.1:%d/dir" % port
    proc.terminate()
    proc.wait(10)
    log.close()


def _certbot(tmp_path, directory, srv, key, domain, tag):
    """certbot certonly with dns-rfc2136 and a credentials file that names
    no algorithm (so HMAC-MD5); returns the CompletedProcess."""
    cred = tmp_path / ("rfc2136-%s.ini" % tag)
    cred.write_text("dns_rfc2136_server = 127.0.0.1\n"
                    "dns_rfc2136_port = %d\n"
                    "dns_rfc2136_name = %s.\n"
                    "dns_rfc2136_secret = %s\n" % (srv.port, key.name, key.secret))
    os.chmod(cred, 0o600)
    base = tmp_path / ("certbot-" + tag)
    argv = ["certbot", "certonly", "--non-interactive", "--agree-tos",
            "--register-unsafely-without-email", "--server", directory, "--no-verify-ssl",
            "--config-dir", str(base / "config"), "--work-dir", str(base / "work"),
            "--logs-dir", str(base / "logs"), "--dns-rfc2136",
            "--dns-rfc2136-credentials", str(cred),
            "--dns-rfc2136-propagation-seconds", "1", "-d", domain]
    return subprocess.run(argv, capture_output=True, text=True, timeout=CERTBOT_TIMEOUT), base


def test_certbot_dns_rfc2136_default_setup_with_hmac_md5(pebble, tmp_path):
    srv, directory = pebble
    key = srv.tsig_create("certbot-key", "acme.test", algorithm="hmac-md5")
    assert key.algorithm == "hmac-md5" and "algorithm hmac-md5;" in key.text
    cp, base = _certbot(tmp_path, directory, srv, key, "www.acme.test", "md5")
    assert cp.returncode == 0, "certbot failed:\n%s\n%s\n--- zonecast ---\n%s" % (
        cp.stdout, cp.stderr, srv.log()[-3000:])
    cert = base / "config" / "live" / "www.acme.test" / "fullchain.pem"
    assert cert.exists(), cp.stdout
    from cryptography import x509
    c = x509.load_pem_x509_certificate(cert.read_bytes())
    sans = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["www.acme.test"]
    # certbot removed its challenge record; nothing was refused
    r = srv.query("_acme-challenge.www.acme.test.", "TXT")
    assert not r.answer, r
    assert "tsig:" not in srv.log(), srv.log()


def test_certbot_default_credentials_with_a_sha256_key_fail_and_say_why(pebble, tmp_path):
    """The same default credentials with an hmac-sha256 key: certbot signs
    with HMAC-MD5 anyway, zonecast answers BADKEY, and logs the key, the
    client and the reason."""
    srv, directory = pebble
    key = srv.tsig_create("certbot-sha", "acme.test")
    cp, _ = _certbot(tmp_path, directory, srv, key, "www.acme.test", "sha")
    assert cp.returncode != 0, cp.stdout
    lines = [l for l in srv.log().splitlines() if "tsig_error=" in l]
    assert lines, srv.log()
    # certbot looks for the zone with signed SOA queries, from the name up
    want = (r"info: audit: transfer refused zone=(_acme-challenge\.www\.)?acme\.test\. "
            r"kind=query key=certbot-sha\. client=127\.0\.0\.1#\d+ rcode=NOTAUTH "
            r'tsig_error=BADKEY reason="BADKEY: signed with HMAC-MD5\.SIG-ALG\.REG\.INT\., '
            r'the key is hmac-sha256"$')
    assert all(re.search(want, l) for l in lines), lines
