"""TCP DNS limits: connections per client across workers
(tcp-max-clients-per-ip) and slow clients (only whole messages count as
activity, so a client dripping bytes is closed after tcp-idle-timeout)."""

import os
import socket
import struct
import time

import dns.message
import dns.rcode
import dns.update

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


def _tcp_worker_ticks(pid):
    """CPU ticks (user + system) of the server's TCP worker threads."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if comm == "zc-tcp":
            total += int(fields[11]) + int(fields[12])
    return total


def test_a_client_that_stops_reading_costs_no_cpu(zonecast_factory):
    """A client pipelined queries until its socket blocked and then read
    nothing: the worker's input buffer filled, and the connection, still
    watched for input on a level-triggered epoll, woke the loop at once
    for ever (one TCP worker at 80-90 % of a core, 47,000 epoll_wait a
    second, for every such client until its idle timeout). Input is not
    watched while it cannot be taken now."""
    srv = zonecast_factory(workers=1, options=["tcp-idle-timeout=20"])
    s = connect(srv.port)
    s.setblocking(False)
    wire = query_wire() * 500
    sent = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            sent += s.send(wire)
        except BlockingIOError:
            time.sleep(0.05)
            try:
                sent += s.send(wire)
            except BlockingIOError:
                break
    assert sent > 100000, sent   # the server's buffers filled
    hz = os.sysconf("SC_CLK_TCK")
    before = _tcp_worker_ticks(srv.proc.pid)
    time.sleep(2)
    used = (_tcp_worker_ticks(srv.proc.pid) - before) / hz
    assert used < 0.4, "the TCP worker used %.2f s of CPU in 2 s for an idle client" % used
    assert srv.query(EC, "A").answer   # still serving
    s.close()


def test_an_update_then_half_close_is_answered(zonecast_factory):
    """A client sent an UPDATE over TCP and shut its side (SHUT_WR), as a
    one-shot client may: the UPDATE was applied but its answer, deferred
    to the writer, was dropped when the worker saw the end of the stream.
    The connection stays until what is owed has gone out (knotd answers)."""
    srv = zonecast_factory(options=[("allow-update", "127.0.0.1")])
    for i in range(5):
        u = dns.update.UpdateMessage("example.com.")
        u.add("hc%d.example.com." % i, 300, "A", "192.0.2.%d" % (i + 1))
        w = u.to_wire()
        s = connect(srv.port)
        s.sendall(struct.pack("!H", len(w)) + w + query_wire())
        s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        answers = []
        while len(data) >= 2:
            n = struct.unpack("!H", data[:2])[0]
            answers.append(dns.message.from_wire(data[2:2 + n]))
            data = data[2 + n:]
        assert sorted(m.opcode() for m in answers) == [0, 5], answers
        assert all(m.rcode() == dns.rcode.NOERROR for m in answers), answers
