"""CHAOS-class identification (RFC 4892): TXT for id.server. and
hostname.bind. gives the server's identity (the `identity` key, else the
NSID, else the host name), version.server. and version.bind. its version
(`version`, else "zonecast X.Y"), as NSD and Knot answer them: TTL 0, class
CH, AA clear. `hide-identity` / `hide-version` and every other CH question get
REFUSED, as knotd gives with an empty identity or version. Checked with dig
and kdig, and side by side with knotd and NSD configured alike.
"""

import os
import re
import socket
import subprocess

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import pytest

import secondaries
import servers

IDENTITY_NAMES = ("id.server.", "hostname.bind.")
VERSION_NAMES = ("version.server.", "version.bind.")


def ch(srv, name, rdtype="TXT", tcp=False, edns=True):
    q = dns.message.make_query(name, rdtype, "CH", use_edns=0 if edns else False)
    f = dns.query.tcp if tcp else dns.query.udp
    return f(q, srv.host, port=srv.port, timeout=3)


def txt_of(r):
    """(rcode, aa, [(name, ttl, class, text)])"""
    rrs = [(rr.name.to_text().lower(), rr.ttl, rr.rdclass,
            b"".join(rd.strings).decode()) for rr in r.answer for rd in rr]
    return r.rcode(), bool(r.flags & dns.flags.AA), rrs


def zonecast_version():
    out = subprocess.run([servers.zonecast_bin(), "--version"], capture_output=True,
                         text=True).stdout
    return out.strip()


@pytest.mark.parametrize("tcp", [False, True])
def test_identity_defaults_to_the_nsid_version_to_zonecasts(zonecast, tcp):
    for edns in (True, False):
        for name in IDENTITY_NAMES:
            assert txt_of(ch(zonecast, name, tcp=tcp, edns=edns)) == (
                dns.rcode.NOERROR, False, [(name, 0, dns.rdataclass.CH, zonecast.nsid)])
        for name in VERSION_NAMES:
            assert txt_of(ch(zonecast, name, tcp=tcp, edns=edns)) == (
                dns.rcode.NOERROR, False, [(name, 0, dns.rdataclass.CH, zonecast_version())])
    assert zonecast_version().startswith("zonecast ")


def test_other_chaos_questions_are_refused(zonecast):
    for name, rdtype in (("id.server.", "A"), ("version.bind.", "ANY"), ("foo.bind.", "TXT"),
                         ("authors.bind.", "TXT"), ("example.com.", "SOA"),
                         ("x.id.server.", "TXT")):
        r = ch(zonecast, name, rdtype)
        assert r.rcode() == dns.rcode.REFUSED and not r.answer, (name, rdtype, r)
    # case does not matter; the answer keeps the question's case
    r = ch(zonecast, "ID.Server.")
    assert r.rcode() == dns.rcode.NOERROR and r.answer[0].name.to_text() == "ID.Server."


def test_dig_and_kdig(zonecast):
    for tool, extra in (("dig", ["+short"]), ("kdig", ["+short"])):
        for name, want in (("id.server", zonecast.nsid), ("hostname.bind", zonecast.nsid),
                           ("version.bind", zonecast_version())):
            cp = subprocess.run([tool, "@127.0.0.1", "-p", str(zonecast.port), "CH", "TXT",
                                 name] + extra, capture_output=True, text=True, timeout=10)
            assert cp.stdout.strip() == '"%s"' % want, (tool, name, cp.stdout, cp.stderr)


def test_configured_hidden_and_host_name(zonecast_factory):
    conf = zonecast_factory(options=[("identity", "ns1.example.net"),
                                     ("version", "a name server")])
    assert txt_of(ch(conf, "hostname.bind."))[2][0][3] == "ns1.example.net"
    assert txt_of(ch(conf, "version.server."))[2][0][3] == "a name server"
    hidden = zonecast_factory(options=[("hide-identity", "yes"), ("hide-version", "yes")])
    for name in IDENTITY_NAMES + VERSION_NAMES:
        r = ch(hidden, name)
        assert r.rcode() == dns.rcode.REFUSED and not r.answer, name
    plain = zonecast_factory(nsid=None)          # no NSID: the host name
    assert txt_of(ch(plain, "id.server."))[2][0][3] == socket.gethostname()


class _KnotWithIdentity(servers.KnotServer):
    def config_text(self):
        return (super().config_text()
                .replace('    identity: ""', '    identity: "ns1.example.net"')
                .replace('    version: ""', '    version: "a name server"'))


def test_same_answers_as_knotd_and_nsd(zonecast_factory, tmp_path):
    """knotd and NSD set up with the same identity and version answer every
    identification question exactly as zonecast does (rcode, AA, TTL, class,
    text), and REFUSED for the same other CH questions as knotd."""
    if not os.access(servers.knotd_bin(), os.X_OK) or not os.access(secondaries.nsd_bin(),
                                                                     os.X_OK):
        pytest.skip("knotd or nsd not installed")
    zc = zonecast_factory(options=[("identity", "ns1.example.net"),
                                   ("version", "a name server")])
    knot = _KnotWithIdentity(str(tmp_path / "knot"))
    os.makedirs(knot.workdir, exist_ok=True)
    nsd = _Nsd(str(tmp_path / "nsd"))
    try:
        knot.start()
        nsd.start()
        for name in IDENTITY_NAMES + VERSION_NAMES:
            for tcp in (False, True):
                want = txt_of(ch(zc, name, tcp=tcp))
                assert txt_of(ch(knot, name, tcp=tcp)) == want, ("knotd", name)
                assert txt_of(ch(nsd, name, tcp=tcp)) == want, ("nsd", name)
        for name, rdtype in (("id.server.", "A"), ("foo.bind.", "TXT")):
            assert ch(knot, name, rdtype).rcode() == ch(zc, name, rdtype).rcode() == \
                dns.rcode.REFUSED
    finally:
        assert knot.stop() == []
        assert nsd.stop() == []


class _Nsd(servers.DnsServer):
    """NSD with no zones, identity and version set (as NSD's own keys)."""
    kind = "nsd"

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        self.port = servers.free_port()
        d = self.workdir
        conf = os.path.join(d, "nsd.conf")
        with open(conf, "w") as f:
            f.write("\n".join([
                "server:", "    ip-address: 127.0.0.1", "    port: %d" % self.port,
                "    do-ip6: no", "    server-count: 1", '    username: ""', '    chroot: ""',
                '    zonesdir: "%s"' % d, '    database: ""',
                '    zonelistfile: "%s"' % os.path.join(d, "zone.list"),
                '    xfrdfile: "%s"' % os.path.join(d, "xfrd.state"),
                '    pidfile: "%s"' % os.path.join(d, "nsd.pid"),
                '    identity: "ns1.example.net"', '    version: "a name server"',
                "remote-control:", "    control-enable: no", ""]))
        self._spawn([secondaries.nsd_bin(), "-d", "-c", conf])
        import time
        deadline = time.monotonic() + servers.START_TIMEOUT
        while True:
            try:
                ch(self, "id.server.")
                return self
            except Exception:   # noqa: BLE001 - not listening yet
                assert self.proc.poll() is None and time.monotonic() < deadline, self.log()
                time.sleep(0.05)
