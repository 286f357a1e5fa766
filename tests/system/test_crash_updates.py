"""SIGKILL during a stream of RFC 2136 UPDATEs, 20 times (issue 4's "nothing
acknowledged is ever lost", a first part of issue 6's crash tests).

Two client threads send UPDATEs over TCP, each adding one A record with a
unique name, and note every name whose UPDATE was answered NOERROR (the
server answers after the commit's fsync). At a random moment the server is
killed with SIGKILL and restarted on the same data directory; then every
acknowledged name must be answered by DNS, the serial must cover every
acknowledged UPDATE, and `zonecast verify` must find the edge store equal
to the records store (the builder resumed from the change log).
"""

import random
import socket
import struct
import threading
import time

import dns.message
import dns.rcode
import dns.update

ZONE = "example.net."
ROUNDS = 20
SEED = 20261202


class Sender(threading.Thread):
    """Adds names over one TCP connection until the server goes away."""

    def __init__(self, port, tag):
        super().__init__(daemon=True)
        self.port, self.tag = port, tag
        self.acked = []          # names whose UPDATE got NOERROR
        self.errors = []

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return
        i = 0
        try:
            while True:
                name = "%s-%d.%s" % (self.tag, i, ZONE)
                u = dns.update.UpdateMessage(ZONE)
                u.add(name, 300, "A", "192.0.2.%d" % (1 + i % 250))
                wire = u.to_wire()
                s.sendall(struct.pack("!H", len(wire)) + wire)
                head = s.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return       # killed: this one was not acknowledged
                (n,) = struct.unpack("!H", head)
                body = s.recv(n, socket.MSG_WAITALL)
                if len(body) < n:
                    return
                r = dns.message.from_wire(body)
                if r.id != u.id:
                    self.errors.append("%s: response id %d for %d" % (name, r.id, u.id))
                    return
                if r.rcode() != dns.rcode.NOERROR:
                    self.errors.append("%s: %s" % (name, dns.rcode.to_text(r.rcode())))
                    return
                self.acked.append(name)
                i += 1
        except (OSError, ConnectionError):
            return           # the kill: whatever was in flight is unknown
        finally:
            s.close()


def served(srv, name):
    try:
        r = srv.query(name, "A", timeout=0.5)
    except Exception:
        return False
    return r.rcode() == dns.rcode.NOERROR and any(rr.rdtype == 1 for rr in r.answer)


def soa_serial(srv):
    r = srv.query(ZONE, "SOA", timeout=1.0)
    return r.answer[0][0].serial if r.answer else None


def test_sigkill_during_updates_loses_nothing_acknowledged(zonecast_api_factory):
    rng = random.Random(SEED)
    srv = zonecast_api_factory(options=[("allow-update", "127.0.0.1")])
    start_serial = soa_serial(srv)
    acked = []
    for round_ in range(ROUNDS):
        senders = [Sender(srv.port, "r%dt%d" % (round_, t)) for t in range(2)]
        for s in senders:
            s.start()
        # Killed mid-stream, once it is flowing: a server slow to take
        # its first UPDATE after a restart (sanitizers, a loaded machine,
        # PostgreSQL's first statements) would otherwise be killed before
        # any, and the round would test nothing.
        deadline = time.monotonic() + 10
        while not any(s.acked for s in senders) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.2))
        srv.kill9()
        for s in senders:
            s.join(10)
            assert not s.is_alive(), "a sender did not notice the kill"
        errors = [e for s in senders for e in s.errors]
        assert not errors, "\n".join(errors)
        acked += [n for s in senders for n in s.acked]
        srv.restart()
        # every acknowledged UPDATE so far is served after the restart
        deadline = time.monotonic() + 10
        missing = [n for n in acked if not served(srv, n)]
        while missing and time.monotonic() < deadline:
            time.sleep(0.05)
            missing = [n for n in missing if not served(srv, n)]
        assert not missing, "round %d: %d acknowledged names not served after restart: %s" % (
            round_, len(missing), missing[:5])
    assert len(acked) >= ROUNDS, "only %d UPDATEs acknowledged in %d rounds" % (len(acked), ROUNDS)
    # one serial per acknowledged message at least (unacknowledged ones in
    # flight at a kill may have committed too)
    serial = soa_serial(srv)
    assert (serial - start_serial) % 2**32 >= len(acked), (start_serial, serial, len(acked))
    cp = srv.verify()
    assert cp.returncode == 0, "zonecast verify after %d kills:\n%s%s" % (
        ROUNDS, cp.stdout, cp.stderr)
    print("%d kills, %d UPDATEs acknowledged and served, serial %d -> %d"
          % (ROUNDS, len(acked), start_serial, serial))
