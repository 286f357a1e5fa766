"""Standard secondaries (BIND `named`, `knotd`, NSD) of a zonecast primary.

Each wrapper runs its server in the foreground on a free loopback port, in a
throw-away directory with a config of its own: the given zones as secondary
zones transferred from the primary at 127.0.0.1:PRIMARY_PORT (with a TSIG
key when one is given, else unsigned: the primary must then allow transfers
from 127.0.0.1 by address), NOTIFY accepted from 127.0.0.1 (only signed
with the key when `notify_key` is set: the usual way NSD and Knot are set
up), and AXFR from the secondary allowed to anybody (so a test can compare
what it serves).
The port is chosen at construction, before start(), so that the primary can
be started first with `-o notify=127.0.0.1:PORT`.

They share DnsServer's client side (.query(), .exchange()) and its stop()
contract (a list of problems: crash, unclean exit). `.xfr_log()` gives the
log lines about incoming transfers, `.ixfr_count()` / `.axfr_count()` how
many of each completed, from the server's own log.
"""

import os
import re
import shutil
import time

import dns.query
import dns.rcode

from servers import DnsServer, free_port, START_TIMEOUT


def named_bin():
    return os.environ.get("NAMED_BIN", shutil.which("named") or "/usr/sbin/named")


def named_record_limits():
    """The options lifting BIND's limits on records of one RRset and types
    at one name (100 each by default since 9.18.28: a zone over them is
    refused whole), for the BIND at hand; none before 9.18.28. zonecast
    takes RRsets up to one DNS message and 504 types a name (docs/api.md);
    test_signed_secondaries.py transfers an RRset of 600."""
    import subprocess
    out = subprocess.run([named_bin(), "-v"], capture_output=True, text=True).stdout
    m = re.search(r"BIND (\d+)\.(\d+)\.(\d+)", out)
    if m is None or tuple(int(x) for x in m.groups()) < (9, 18, 28):
        return []
    return ["    max-records-per-type 0;", "    max-types-per-name 0;"]


class Secondary(DnsServer):
    def __init__(self, workdir, primary_port, zones, key=None, notify_key=False):
        """zones: zone names (with or without the final dot); key: a
        servers.TsigKey to sign SOA queries and transfers with, or None;
        notify_key: accept NOTIFY only when signed with that key."""
        os.makedirs(workdir, exist_ok=True)
        super().__init__(workdir)
        self.primary_port = primary_port
        self.zones = [z.rstrip(".") + "." for z in zones]
        self.key = key
        self.notify_key = notify_key
        self.port = free_port()

    def serial(self, zone):
        """The SOA serial the secondary serves, or None (no zone yet, no answer)."""
        try:
            r = self.query(zone, "SOA", timeout=0.5)
        except Exception:
            return None
        if r.rcode() != dns.rcode.NOERROR or not r.answer:
            return None
        return r.answer[0][0].serial

    def wait_serial(self, zone, serial, timeout=20.0):
        """Until the secondary serves `serial` (or newer, RFC 1982); returns
        the last serial seen (the caller asserts)."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.serial(zone)
            if s is not None and (s == serial or 0 < (s - serial) % 2**32 < 2**31):
                return s
            if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                return s
            time.sleep(0.05)

    def axfr(self, zone, timeout=5.0):
        """The zone as the secondary serves it, via AXFR (dns.zone.Zone)."""
        import dns.zone
        zone = zone.rstrip(".") + "."
        return dns.zone.from_xfr(dns.query.xfr(self.host, zone, port=self.port, relativize=False,
                                               timeout=timeout, lifetime=timeout * 4),
                                 relativize=False)

    def start(self):
        assert self.key is not None or not self.notify_key, "notify_key needs a key"
        self.write_config()
        self._spawn(self.argv())
        self._wait_listening()
        return self

    def _wait_listening(self, timeout=START_TIMEOUT):
        """Until the server answers anything on its port (REFUSED or SERVFAIL
        for a zone not transferred yet is fine)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s during startup:\n%s"
                                   % (self.kind, self.proc.returncode, self.log()))
            try:
                self.query(self.zones[0], "SOA", timeout=0.2)
            except Exception:
                pass
            else:
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("%s does not answer on port %d:\n%s"
                                   % (self.kind, self.port, self.log()))
            time.sleep(0.05)
        # and on TCP: BIND keeps running with UDP alone when its TCP port is
        # another listener's, and a transfer from it then times out later.
        # A connection reset is tried again: NSD restarts its server
        # processes once its first transfer is in, closing what they held
        # (a CI run: "answers UDP but not TCP ... Connection reset by peer").
        deadline = time.monotonic() + 10
        while True:
            try:
                self.query(self.zones[0], "SOA", tcp=True, timeout=5.0)
                break
            except (ConnectionResetError, EOFError) as e:
                if time.monotonic() < deadline and self.proc.poll() is None:
                    time.sleep(0.1)
                    continue
                err = e
            except Exception as e:   # noqa: BLE001 - reported below
                err = e
            self.stop()
            raise RuntimeError("%s answers UDP but not TCP on port %d (%r):\n%s"
                               % (self.kind, self.port, err, self.log()))

    def restart(self):
        """Start again on the same port and directory, keeping the zones
        already transferred (after stop()), with the config written again
        (so a test may change key or notify_key in between)."""
        assert self.proc is None, "stop() first"
        self.write_config()
        self._spawn(self.argv())
        self._wait_listening()
        return self

    def stop(self, timeout=10.0):
        problems = super().stop(timeout)
        # the log keeps growing over restarts: forget what check() had seen
        self._checked = len(self.log())
        return problems

    # what the log says about transfers; overridden per implementation
    def xfr_log(self):
        return [l for l in self.log().splitlines() if re.search(self.XFR_LINE, l)]

    def ixfr_count(self, zone=None):
        return sum(1 for l in self.xfr_log() if re.search(self.IXFR_DONE, l)
                   and (zone is None or zone.rstrip(".") in l))

    def axfr_count(self, zone=None):
        return sum(1 for l in self.xfr_log() if re.search(self.AXFR_DONE, l)
                   and (zone is None or zone.rstrip(".") in l))


class BindSecondary(Secondary):
    """BIND 9 `named -g` (foreground, log on stderr) as a secondary."""

    kind = "named"
    # BIND 9.18 at severity info, category xfer-in:
    #   transfer of 'z/IN' from 127.0.0.1#P: Transfer status: success
    #   transfer of 'z/IN' from 127.0.0.1#P: Transfer completed: ... (serial N)
    # and, before it, whether the answer was incremental (debug 1 on
    # 9.18, so named runs with -d 3):
    #   transfer of 'z/IN' from 127.0.0.1#P: got incremental response
    #   transfer of 'z/IN' from 127.0.0.1#P: got nonincremental response
    XFR_LINE = r"transfer of '|xfrin|IXFR|AXFR"
    IXFR_DONE = r"got incremental response"
    AXFR_DONE = r"got nonincremental response"

    def argv(self):
        return [named_bin(), "-g", "-d", "3", "-4", "-n", "1",
                "-c", os.path.join(self.workdir, "named.conf")]

    def write_config(self):
        d = self.workdir
        lines = [
            "options {",
            '    directory "%s";' % d,
            '    pid-file "%s";' % os.path.join(d, "named.pid"),
            '    session-keyfile "%s";' % os.path.join(d, "session.key"),
            '    managed-keys-directory "%s";' % d,
            "    listen-on port %d { 127.0.0.1; };" % self.port,
            "    listen-on-v6 { none; };",
            "    recursion no;",
            "    notify no;",
            "    dnssec-validation no;",
            "    allow-query { any; };",
            "    allow-transfer { any; };",
            "    serial-query-rate 1000;",
            "    transfers-in 10;",
            "    transfers-per-ns 10;",
        ] + named_record_limits() + [
            "};",
            "controls { };",
        ]
        keyref = ""
        if self.key is not None:
            lines += ['key "%s" {' % self.key.name, "    algorithm %s;" % self.key.algorithm,
                      '    secret "%s";' % self.key.secret, "};"]
            keyref = ' key "%s"' % self.key.name
        for z in self.zones:
            lines += [
                'zone "%s" {' % z,
                "    type secondary;",
                '    file "%s";' % os.path.join(d, z + "db"),
                "    primaries port %d { 127.0.0.1%s; };" % (self.primary_port, keyref),
                "    allow-notify { %s; };" % (
                    'key "%s"' % self.key.name if self.notify_key else "127.0.0.1"),
                "    request-ixfr yes;",
                "};",
            ]
        with open(os.path.join(d, "named.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")


class KnotSecondary(Secondary):
    """knotd as a secondary (zone kept in its journal, so a restart resumes
    from the serial it had and asks for IXFR)."""

    kind = "knotd-secondary"
    # Knot 3.2:
    #   [z.] IXFR, incoming, remote 127.0.0.1@P, started
    #   [z.] IXFR, incoming, remote 127.0.0.1@P, finished, 0.00 seconds, ...
    #   [z.] AXFR, incoming, remote 127.0.0.1@P, finished, ...
    #   [z.] IXFR, incoming, remote ..., receiving AXFR-style IXFR   (fallback)
    XFR_LINE = r"XFR, incoming"
    IXFR_DONE = r"IXFR, incoming.*finished"
    AXFR_DONE = r"AXFR, incoming.*finished|receiving AXFR-style IXFR"

    def argv(self):
        from servers import knotd_bin
        return [knotd_bin(), "-c", os.path.join(self.workdir, "knot.conf")]

    def write_config(self):
        d = self.workdir
        for sub in ("run", "db", "zones"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        lines = [
            "server:",
            "    rundir: %s" % os.path.join(d, "run"),
            "    user: root:root",
            "    listen: 127.0.0.1@%d" % self.port,
            "    udp-workers: 1",
            "    tcp-workers: 1",
            "    background-workers: 1",
            "log:",
            "  - target: stderr",
            "    any: info",
            "database:",
            "    storage: %s" % os.path.join(d, "db"),
        ]
        remote = ["remote:", "  - id: primary", "    address: 127.0.0.1@%d" % self.primary_port]
        if self.key is not None:
            lines += ["key:", "  - id: %s" % self.key.name,
                      "    algorithm: %s" % self.key.algorithm,
                      "    secret: %s" % self.key.secret]
            remote.append("    key: %s" % self.key.name)
        lines += remote
        lines += [
            "acl:",
            "  - id: from_primary",
            "    address: 127.0.0.1",
            "    action: notify",
        ] + (["    key: %s" % self.key.name] if self.notify_key else []) + [
            "  - id: anyone_transfers",
            "    address: 0.0.0.0/0",
            "    action: transfer",
            "template:",
            "  - id: default",
            "    storage: %s" % os.path.join(d, "zones"),
            "    zonefile-sync: -1",
            "    zonefile-load: none",
            "    journal-content: all",
            "    semantic-checks: off",
            "    master: primary",
            "    acl: [from_primary, anyone_transfers]",
            "zone:",
        ]
        for z in self.zones:
            lines.append("  - domain: %s" % z)
        with open(os.path.join(d, "knot.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")


def nsd_bin():
    return os.environ.get("NSD_BIN", shutil.which("nsd") or "/usr/sbin/nsd")


class NsdSecondary(Secondary):
    """NSD (`nsd -d`, foreground, log on stderr) as a secondary. No zone
    database: what NSD transferred lives in memory and in the zone file it
    writes at exit, which a restart reads back (then asks for IXFR)."""

    kind = "nsd"
    # NSD 4.6 at verbosity 2 (it does not say IXFR or AXFR):
    #   xfrd: zone z committed "received update to serial N at ... from
    #     127.0.0.1@P TSIG verified with key K"
    #   notify for z. from 127.0.0.1 serial N
    #   notify for z. from 127.0.0.1 refused, no acl matches.
    XFR_LINE = r"xfrd: zone .* committed|received update to serial"
    IXFR_DONE = r"(?!)"
    AXFR_DONE = r"(?!)"

    def argv(self):
        return [nsd_bin(), "-d", "-c", os.path.join(self.workdir, "nsd.conf")]

    def write_config(self):
        d = self.workdir
        lines = [
            "server:",
            "    ip-address: 127.0.0.1",
            "    port: %d" % self.port,
            "    do-ip6: no",
            "    server-count: 1",
            '    username: ""',
            '    chroot: ""',
            '    zonesdir: "%s"' % d,
            '    database: ""',
            '    zonelistfile: "%s"' % os.path.join(d, "zone.list"),
            '    xfrdfile: "%s"' % os.path.join(d, "xfrd.state"),
            '    xfrdir: "%s"' % d,
            '    pidfile: "%s"' % os.path.join(d, "nsd.pid"),
            "    verbosity: 2",
            "    xfrd-reload-timeout: 0",
            "    zonefiles-write: 0",
            "remote-control:",
            "    control-enable: no",
        ]
        keyname = "NOKEY"
        if self.key is not None:
            lines += ["key:", "    name: %s" % self.key.name,
                      "    algorithm: %s" % self.key.algorithm,
                      '    secret: "%s"' % self.key.secret]
            keyname = self.key.name
        for z in self.zones:
            lines += [
                "zone:",
                "    name: %s" % z,
                '    zonefile: "%s"' % os.path.join(d, z + "db"),
                "    allow-notify: 127.0.0.1 %s" % (keyname if self.notify_key else "NOKEY"),
                "    request-xfr: 127.0.0.1@%d %s" % (self.primary_port, keyname),
                "    provide-xfr: 0.0.0.0/0 NOKEY",
            ]
        with open(os.path.join(d, "nsd.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")
