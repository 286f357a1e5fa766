"""ACME clients against zonecast, as an operator runs them.

pebble (Debian's ACME test server, RFC 8555) runs with a TLS certificate
made here for 127.0.0.1 and checks every DNS-01 challenge by asking
zonecast (`-dnsserver`); the clients write their challenge records into
zonecast and remove them afterwards:

- certbot with python3-certbot-dns-rfc2136: signed UPDATEs (HMAC-SHA256);
- certbot with python3-certbot-dns-cloudflare: zonecast's HTTP API, reached
  through python3-cloudflare's CF_API_URL;
- lego's rfc2136 provider: signed UPDATEs, lego's own resolver pointed at
  zonecast (its cloudflare provider is left out of Debian's lego).

Each run gets its own directories and account, so nothing (accounts,
authorizations) carries over from one run to the next. Used by
test_acme.py and by bench/acme (docs/benchmarks.md, "ACME clients").
"""

import datetime
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import time

import servers

ZONE = "acme.test."
ZONE_TEXT = """$ORIGIN acme.test.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
@    NS  ns1
ns1  A   192.0.2.53
@    A   192.0.2.80
www  A   192.0.2.80
api  A   192.0.2.81
"""
# Several names and a wildcard in one order: the apex and the wildcard
# both put a TXT record at _acme-challenge.acme.test, at the same time.
DOMAINS = ["acme.test", "www.acme.test", "api.acme.test", "*.acme.test"]
CHALLENGE_NAMES = ["_acme-challenge.acme.test", "_acme-challenge.www.acme.test",
                   "_acme-challenge.api.acme.test"]
CLIENT_TIMEOUT = 300 * servers.TIMEOUT_SCALE


def missing_tools():
    """What this machine lacks to run the clients (dev/deps test)."""
    missing = [t for t in ("pebble", "certbot", "lego") if shutil.which(t) is None]
    for module, package in (("certbot_dns_rfc2136", "python3-certbot-dns-rfc2136"),
                            ("certbot_dns_cloudflare", "python3-certbot-dns-cloudflare")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    return missing


def tls_pair(dirpath):
    """A self-signed certificate for pebble's HTTPS listener, valid for
    127.0.0.1 and localhost; (cert path, key path). lego trusts it through
    LEGO_CA_CERTIFICATES; certbot is told --no-verify-ssl."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pebble test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(san, False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cpath, kpath = os.path.join(dirpath, "pebble-cert.pem"), os.path.join(dirpath, "pebble-key.pem")
    with open(cpath, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(kpath, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()))
    return cpath, kpath


class Pebble:
    """pebble on free loopback ports, validating DNS-01 through dns_port."""

    def __init__(self, workdir, dns_port):
        self.workdir = workdir
        self.dns_port = dns_port
        self.port = servers.free_port()
        self.proc = None
        self.cert, self.key = tls_pair(workdir)
        self.logpath = os.path.join(workdir, "pebble.log")

    @property
    def directory(self):
        return "https://127.0.0.1:%d/dir" % self.port

    def start(self, timeout=15):
        cfg = {"pebble": {"listenAddress": "127.0.0.1:%d" % self.port,
                          "managementListenAddress": "127.0.0.1:%d" % servers.free_port(),
                          "certificate": self.cert, "privateKey": self.key,
                          "httpPort": servers.free_port(), "tlsPort": servers.free_port(),
                          "ocspResponderURL": "", "externalAccountBindingRequired": False}}
        path = os.path.join(self.workdir, "pebble.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        # No random sleep before validating, no reuse of authorizations,
        # no bad nonces thrown in: each run does its own challenges, at once.
        env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_AUTHZREUSE="0",
                   PEBBLE_WFE_NONCEREJECT="0")
        env.pop("PEBBLE_VA_ALWAYS_VALID", None)
        self._log = open(self.logpath, "wb")
        self.proc = subprocess.Popen(["pebble", "-config", path, "-dnsserver",
                                      "127.0.0.1:%d" % self.dns_port],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("pebble did not start:\n" + self.log())
                time.sleep(0.05)

    def log(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self._log.close()


class Result:
    """One client run: its process, how long it took from start to
    certificate (seconds), and the certificate's DNS names."""

    def __init__(self, cp, seconds, cert_path):
        self.returncode, self.stdout, self.stderr = cp.returncode, cp.stdout, cp.stderr
        self.seconds = seconds
        self.cert_path = cert_path
        self.names = None
        if cp.returncode == 0 and cert_path and os.path.exists(cert_path):
            from cryptography import x509
            with open(cert_path, "rb") as f:
                cert = x509.load_pem_x509_certificate(f.read())
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            self.names = sorted(sans.get_values_for_type(x509.DNSName))

    def describe(self):
        return "exit %d after %.1f s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            self.returncode, self.seconds, self.stdout[-4000:], self.stderr[-6000:])


def _run(argv, env, cert_path):
    start = time.monotonic()
    cp = subprocess.run(argv, capture_output=True, text=True, env=env,
                        timeout=CLIENT_TIMEOUT)
    return Result(cp, time.monotonic() - start, cert_path)


def _certbot(workdir, pebble, tag, plugin_args, domains, env=None):
    base = os.path.join(workdir, "certbot-" + tag)
    argv = ["certbot", "certonly", "--non-interactive", "--agree-tos",
            "--register-unsafely-without-email", "--server", pebble.directory,
            "--no-verify-ssl", "--config-dir", base + "/config", "--work-dir", base + "/work",
            "--logs-dir", base + "/logs", "--cert-name", "acme"] + plugin_args
    for d in domains:
        argv += ["-d", d]
    cert = os.path.join(base, "config", "live", "acme", "fullchain.pem")
    return _run(argv, dict(os.environ, **(env or {})), cert)


def certbot_rfc2136(workdir, pebble, dns_port, key, domains=DOMAINS, propagation=0,
                    tag="rfc2136"):
    """certbot certonly --dns-rfc2136 with key (servers.TsigKey); propagation:
    --dns-rfc2136-propagation-seconds (None: certbot's default, 60)."""
    cred = os.path.join(workdir, "rfc2136-%s.ini" % tag)
    with open(cred, "w") as f:
        f.write("dns_rfc2136_server = 127.0.0.1\n"
                "dns_rfc2136_port = %d\n"
                "dns_rfc2136_name = %s\n"
                "dns_rfc2136_secret = %s\n"
                "dns_rfc2136_algorithm = %s\n" % (dns_port, key.name + ".", key.secret,
                                                  key.algorithm.upper()))
    os.chmod(cred, 0o600)
    args = ["--dns-rfc2136", "--dns-rfc2136-credentials", cred]
    if propagation is not None:
        args += ["--dns-rfc2136-propagation-seconds", str(propagation)]
    return _certbot(workdir, pebble, tag, args, domains)


def certbot_cloudflare(workdir, pebble, api_url, token, domains=DOMAINS, propagation=0,
                       tag="cloudflare"):
    """certbot certonly --dns-cloudflare with an API token, python3-cloudflare
    sent to zonecast by CF_API_URL; propagation: --dns-cloudflare-propagation-
    seconds (None: certbot's default, 10)."""
    cred = os.path.join(workdir, "cloudflare-%s.ini" % tag)
    with open(cred, "w") as f:
        f.write("dns_cloudflare_api_token = %s\n" % token)
    os.chmod(cred, 0o600)
    home = os.path.join(workdir, "home-" + tag)   # no ~/.cloudflare.cfg of the caller's
    os.makedirs(home, exist_ok=True)
    args = ["--dns-cloudflare", "--dns-cloudflare-credentials", cred]
    if propagation is not None:
        args += ["--dns-cloudflare-propagation-seconds", str(propagation)]
    env = {"CF_API_URL": api_url, "HOME": home}
    return _certbot(workdir, pebble, tag, args, domains, env=env)


# lego's rfc2136 waits at its defaults: RFC2136_SEQUENCE_INTERVAL 60 s
# between two challenges (it solves them one at a time), and
# RFC2136_POLLING_INTERVAL 2 s before its first propagation check and
# between checks (for up to RFC2136_PROPAGATION_TIMEOUT, 60 s).
LEGO_NO_WAIT = {"RFC2136_SEQUENCE_INTERVAL": "0", "RFC2136_POLLING_INTERVAL": "0"}


def lego_rfc2136(workdir, pebble, dns_port, key, domains=DOMAINS, disable_cp=True,
                 tag="lego", env_extra=LEGO_NO_WAIT):
    """lego --dns rfc2136 with key; lego finds the zone by asking its
    resolver (zonecast) for the SOA. disable_cp: --dns.disable-cp, no check
    of the record on the zone's authoritative servers (which lego asks on
    port 53); env_extra: lego's settings (default: no waits; None: lego's
    own defaults)."""
    path = os.path.join(workdir, "lego-" + tag)
    env = dict(os.environ, LEGO_CA_CERTIFICATES=pebble.cert,
               RFC2136_NAMESERVER="127.0.0.1:%d" % dns_port,
               RFC2136_TSIG_KEY=key.name, RFC2136_TSIG_SECRET=key.secret,
               RFC2136_TSIG_ALGORITHM=key.algorithm + ".", **(env_extra or {}))
    argv = ["lego", "--server", pebble.directory, "--email", "acme@example.org",
            "--accept-tos", "--path", path, "--dns", "rfc2136",
            "--dns.resolvers", "127.0.0.1:%d" % dns_port]
    if disable_cp:
        argv.append("--dns.disable-cp")
    for d in domains:
        argv += ["-d", d]
    argv.append("run")
    first = domains[0].replace("*", "_")
    return _run(argv, env, os.path.join(path, "certificates", first + ".crt"))
