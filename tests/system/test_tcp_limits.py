"""TCP DNS limits: connections per client across workers
(tcp-max-clients-per-ip) and slow clients (only whole messages count as
activity, so a client dripping bytes is closed after tcp-idle-timeout)."""

import socket
import struct
import time

import dns.message
import dns.rcode

EC = "www.example.com."


def query_wire(name=EC):
    w = dns.message.make_query(name, "A").to_wire()
    return struct.pack("!H", len(w)) + w


def served(sock):
    """True when one query on the connection gets its answer."""
    try:
        sock.sendall(query_wire())
        sock.settimeout(2)
        head = sock.recv(2)
        if len(head) < 2:
            return False
        n = struct.unpack("!H", head)[0]
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                return False
            data += chunk
        return dns.message.from_wire(data).rcode() == dns.rcode.NOERROR
    except OSError:
        return False


def connect(port, source="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def test_connections_per_client_across_workers(zonecast_factory):
    srv = zonecast_factory(workers=2, options=["tcp-max-clients-per-ip=5"])
    conns = [connect(srv.port) for _ in range(12)]
    time.sleep(0.2)  # Let the workers accept (and close the excess).
    ok = sum(served(s) for s in conns)
    assert ok == 5, "%d of 12 connections from one client served" % ok
    # Another client is not affected.
    other = connect(srv.port, "127.0.0.2")
    assert served(other)
    # Closing frees the slots.
    for s in conns + [other]:
        s.close()
    time.sleep(0.2)
    again = [connect(srv.port) for _ in range(5)]
    assert all(served(s) for s in again)
    for s in again:
        s.close()


def test_slow_drip_closed(zonecast_factory):
    srv = zonecast_factory(options=["tcp-idle-timeout=1"])
    s = connect(srv.port)
    assert served(s)  # A whole message first: the connection works.
    wire = query_wire()
    start = time.monotonic()
    closed_after = None
    for b in wire * 20:
        try:
            s.sendall(bytes([b]))
        except OSError:
            closed_after = time.monotonic() - start
            break
        s.settimeout(0.3)
        try:
            data = s.recv(4096)
            if data == b"":
                closed_after = time.monotonic() - start
                break
        except socket.timeout:
            pass
        if time.monotonic() - start > 6:
            break
    s.close()
    assert closed_after is not None and closed_after < 4, closed_after
    assert srv.query(EC, "A").answer  # Still serving.
