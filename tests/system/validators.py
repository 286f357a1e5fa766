"""Validating resolvers and helpers for the DNSSEC system tests.

`Unbound` runs Debian's unbound (foreground, `unbound -d -c CONF`) in a
throw-away directory as a validating resolver on a free loopback port: one
`stub-zone:` per zone to ask (zone -> 127.0.0.1@port of the server under
test), `trust-anchor:` lines given by the test (the DS records printed by
`zonecast dnssec ds`), `module-config: "validator iterator"`,
`do-not-query-localhost: no`, `val-log-level: 2` (the reason of every bogus
answer in its log), qname minimisation off and the `harden-*` options left
at their defaults (`harden-dnssec-stripped: yes`: an unsigned answer under a
trust anchor is bogus). It does not drop privileges or chroot, writes no
pidfile outside its directory and knows nothing of the Debian service (which
the tests never use). `stop()` returns a list of problems like servers.py.

`delv()` runs BIND's delv against a server with a trust-anchors file
(`trust-anchors { ZONE static-ds ...; };`) and `+root=ZONE`.

`CorruptingProxy` is a UDP/TCP forwarder in front of a server that flips a
byte in the signature of chosen RRSIGs, to show a validator rejects a
signature that is present but wrong.
"""

import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdatatype
import dns.rrset

import servers

START_TIMEOUT = 10.0


def unbound_bin():
    return os.environ.get("UNBOUND_BIN", shutil.which("unbound") or "/usr/sbin/unbound")


def delv_bin():
    return os.environ.get("DELV_BIN", shutil.which("delv") or "/usr/bin/delv")


def parse_ds(text):
    """DS RRs out of `zonecast dnssec ds` output (zone-file lines; comments
    and blank lines ignored): a list of (owner text, dns.rdata DS)."""
    out = []
    for line in text.splitlines():
        line = line.split(";", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        # OWNER [TTL] [CLASS] DS tag alg digest-type digest...
        try:
            i = tokens.index("DS")
        except ValueError:
            continue
        owner = tokens[0]
        rd = dns.rdata.from_text("IN", "DS", " ".join(tokens[i + 1:]))
        out.append((dns.name.from_text(owner).to_text(), rd))
    return out


class Unbound:
    """unbound as a validating resolver (see the module docstring)."""

    kind = "unbound"
    host = "127.0.0.1"

    def __init__(self, workdir, stubs, anchors=(), insecure=(), extra=()):
        """stubs: {zone: port or [ports]} (127.0.0.1@port); anchors: trust
        anchor lines ("zone. 3600 IN DS ..."); insecure: zones given as
        `domain-insecure:`; extra: more `server:` lines."""
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.stubs = dict(stubs)
        self.anchors = list(anchors)
        self.insecure = list(insecure)
        self.extra = list(extra)
        self.port = None
        self.proc = None
        self.log_path = os.path.join(workdir, "unbound.log")
        self.conf_path = os.path.join(workdir, "unbound.conf")

    def config_text(self):
        d = self.workdir
        lines = [
            "server:",
            "    verbosity: 1",
            "    interface: 127.0.0.1",
            "    port: %d" % self.port,
            "    do-ip4: yes",
            "    do-ip6: no",
            "    do-udp: yes",
            "    do-tcp: yes",
            '    username: ""',
            '    chroot: ""',
            '    directory: "%s"' % d,
            '    pidfile: "%s"' % os.path.join(d, "unbound.pid"),
            '    logfile: ""',
            "    use-syslog: no",
            "    log-servfail: yes",
            "    access-control: 127.0.0.0/8 allow",
            "    do-not-query-localhost: no",
            '    module-config: "validator iterator"',
            "    qname-minimisation: no",
            "    val-log-level: 2",
            "    num-threads: 1",
            "    outgoing-range: 64",
            "    num-queries-per-thread: 32",
            "    so-reuseport: no",
            "    prefetch: no",
            "    serve-expired: no",
            "    minimal-responses: no",
            # No root priming: every name the tests ask is under a stub.
            # test. and the like are RFC 6761 names unbound answers itself.
            '    local-zone: "test." nodefault',
            '    local-zone: "invalid." nodefault',
            "    edns-buffer-size: 1232",
            "    infra-host-ttl: 1",
    "    trust-anchor-signaling: no",
        ]
        for a in self.anchors:
            lines.append('    trust-anchor: "%s"' % a.strip())
        for z in self.insecure:
            lines.append('    domain-insecure: "%s"' % z)
        lines += ["    " + e for e in self.extra]
        lines += ["remote-control:", "    control-enable: no"]
        for zone, ports in self.stubs.items():
            if isinstance(ports, int):
                ports = [ports]
            lines += ["stub-zone:", '    name: "%s"' % zone]
            for p in ports:
                lines.append("    stub-addr: 127.0.0.1@%d" % p)
        return "\n".join(lines) + "\n"

    def start(self):
        if not os.access(unbound_bin(), os.X_OK):
            raise RuntimeError("unbound not installed (%s)" % unbound_bin())
        self.port = servers.free_port()
        with open(self.conf_path, "w") as f:
            f.write(self.config_text())
        self._logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([unbound_bin(), "-d", "-c", self.conf_path],
                                     stdin=subprocess.DEVNULL, stdout=self._logf,
                                     stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("unbound exited with %s during startup:\n%s\n--- config ---\n%s"
                                   % (self.proc.returncode, self.log(), self.config_text()))
            try:
                # localhost. is one of unbound's own local zones: no upstream.
                r = self.query("localhost.", "A", timeout=0.2, do=False)
                if r.rcode() == dns.rcode.NOERROR:
                    return self
            except Exception:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("unbound did not answer within %.0fs:\n%s"
                                   % (START_TIMEOUT, self.log()))
            time.sleep(0.02)

    def query(self, name, rdtype="A", do=True, cd=False, timeout=5.0, tcp=False):
        """A recursive query (RD, EDNS, DO by default) to this unbound."""
        q = servers.make_query(name, rdtype, do=do, rd=True, payload=4096)
        if cd:
            q.flags |= dns.flags.CD
        if tcp:
            return dns.query.tcp(q, self.host, port=self.port, timeout=timeout)
        r = dns.query.udp(q, self.host, port=self.port, timeout=timeout)
        if r.flags & dns.flags.TC:
            r = dns.query.tcp(q, self.host, port=self.port, timeout=timeout)
        return r

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=3000):
        return self.log()[-n:]

    def check(self):
        problems = []
        if self.proc is not None and self.proc.poll() is not None:
            problems.append("unbound exited unexpectedly with status %s" % self.proc.returncode)
        return problems

    def stop(self, timeout=10.0):
        problems = []
        if self.proc is None:
            return problems
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append("unbound did not exit within %.0fs of SIGTERM" % timeout)
        else:
            problems.append("unbound had exited with status %s" % self.proc.returncode)
        rc = self.proc.returncode
        if rc is not None and rc < 0 and rc != -signal.SIGTERM:
            problems.append("unbound killed by signal %d" % -rc)
        elif rc is not None and rc > 0:
            problems.append("unbound exit status %d" % rc)
        self.proc = None
        self._logf.close()
        return problems


# ---------------------------------------------------------------- delv

def anchors_file(path, ds_list):
    """Write a delv/named trust-anchors file: ds_list of (owner, DS rdata)."""
    lines = ["trust-anchors {"]
    for owner, ds in ds_list:
        lines.append('    %s static-ds %d %d %d "%s";'
                     % (owner, ds.key_tag, ds.algorithm, ds.digest_type, ds.digest.hex().upper()))
    lines.append("};")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def delv(port, anchor_path, root, name, rdtype="A", extra=(), timeout=20):
    """delv @127.0.0.1 -p PORT -a ANCHORS +root=ROOT -q NAME -t TYPE; returns the
    CompletedProcess (stdout+stderr text in .out)."""
    # -q and -t: a name may start with '-' (any octet is legal in a label).
    argv = [delv_bin(), "@127.0.0.1", "-p", str(port), "-4", "-a", anchor_path,
            "+root=%s" % root, "-q", name, "-t", rdtype] + list(extra)
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    cp.out = cp.stdout + cp.stderr
    cp.argv = argv
    return cp


# ---------------------------------------------------------------- a corrupting proxy

class CorruptingProxy:
    """Forwards DNS over UDP and TCP from 127.0.0.1:port to a server and, in
    its answers, flips one byte of the signature of every RRSIG that
    `should_corrupt(rrsig_owner, type_covered)` selects. Messages are
    re-written by dnspython (compression may differ; content does not)."""

    def __init__(self, upstream_port, should_corrupt):
        self.upstream_port = upstream_port
        self.should_corrupt = should_corrupt
        self.port = None
        self.corrupted = 0
        self._stop = threading.Event()
        self._threads = []

    def _rewrite(self, wire):
        try:
            msg = dns.message.from_wire(wire)
        except Exception:
            return wire
        changed = False
        for section in (msg.answer, msg.authority, msg.additional):
            for i, rrset in enumerate(section):
                if rrset.rdtype != dns.rdatatype.RRSIG:
                    continue
                new = []
                touched = False
                for rd in rrset:
                    if self.should_corrupt(rrset.name, rd.type_covered):
                        sig = bytearray(rd.signature)
                        sig[len(sig) // 2] ^= 0x5A
                        rd = rd.replace(signature=bytes(sig))
                        touched = True
                    new.append(rd)
                if touched:
                    rs = dns.rrset.RRset(rrset.name, rrset.rdclass, rrset.rdtype, rrset.covers)
                    for rd in new:
                        rs.add(rd, rrset.ttl)
                    section[i] = rs
                    changed = True
        if not changed:
            return wire
        self.corrupted += 1
        return msg.to_wire(max_size=65535)

    def start(self):
        self.port = servers.free_port()
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", self.port))
        self._udp.settimeout(0.2)
        self._tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._tcp.bind(("127.0.0.1", self.port))
        self._tcp.listen(16)
        self._tcp.settimeout(0.2)
        for fn in (self._udp_loop, self._tcp_loop):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _udp_loop(self):
        while not self._stop.is_set():
            try:
                wire, addr = self._udp.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                return
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as up:
                up.settimeout(2.0)
                up.sendto(wire, ("127.0.0.1", self.upstream_port))
                try:
                    resp = up.recv(65535)
                except socket.timeout:
                    continue
            try:
                self._udp.sendto(self._rewrite(resp), addr)
            except OSError:
                pass

    def _tcp_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._tcp_conn, args=(conn,), daemon=True).start()

    def _tcp_conn(self, conn):
        with conn:
            conn.settimeout(3.0)
            try:
                while not self._stop.is_set():
                    (ln,) = struct.unpack("!H", servers.recv_exact(conn, 2))
                    wire = servers.recv_exact(conn, ln)
                    with socket.create_connection(("127.0.0.1", self.upstream_port),
                                                  timeout=3.0) as up:
                        up.sendall(struct.pack("!H", ln) + wire)
                        (rl,) = struct.unpack("!H", servers.recv_exact(up, 2))
                        resp = self._rewrite(servers.recv_exact(up, rl))
                    conn.sendall(struct.pack("!H", len(resp)) + resp)
            except (OSError, ConnectionError, struct.error):
                return

    def stop(self):
        self._stop.set()
        for s in (self._udp, self._tcp):
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(2.0)
        return []
