#!/usr/bin/python3
"""bench/update_batches.d/batches.py -- the published experiment's client.

N TSIG-signed (hmac-sha256) A-record additions sent as RFC 2136 UPDATE
messages of B records each, one after the other, over ONE TCP connection
(dnspython: dns.query.send_tcp / receive_tcp on a reused socket). The clock
runs from before the first message is built to the last response; the
client's own cost (building and signing with dnspython) is included, as in
the published experiment. Then the zone's SOA serial is queried.

  batches.py --server 127.0.0.1:PORT --zone ZONE. --key-file FILE
             --records N --batch B [--prefix P] [--budget-s S] [--timeout-s T]

Prints one line of key=value: records, batch, messages, ok_messages,
seconds, updates_per_s, msgs_per_s, serial_at_ack (SOA serial queried right
after the last response), last_visible_ms (until the last record sent is
answered over UDP; -1: not within 10 s), serial (queried after that), errors,
rcodes, status (ok | incomplete | error). Exit status 0 only when every message got NOERROR.
"""
import argparse
import collections
import re
import socket
import sys
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update


def read_key(path):
    text = open(path).read()
    name = re.search(r'key\s+"([^"]+)"', text)
    secret = re.search(r'secret\s+"([^"]+)"', text)
    alg = re.search(r'algorithm\s+([A-Za-z0-9-]+)', text)
    if not name or not secret:
        raise SystemExit("%s: not a key file" % path)
    if alg and alg.group(1).lower() != "hmac-sha256":
        raise SystemExit("%s: algorithm %s, expected hmac-sha256" % (path, alg.group(1)))
    return name.group(1), secret.group(1)


def soa_serial(host, port, zone, timeout=3.0):
    q = dns.message.make_query(zone, "SOA")
    for _ in range(3):
        try:
            r = dns.query.udp(q, host, port=port, timeout=timeout)
            for rrset in r.answer:
                if rrset.rdtype == dns.rdatatype.SOA:
                    return rrset[0].serial
            return None
        except Exception:
            continue
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--zone", required=True)
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--records", type=int, default=40000)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prefix", default="u")
    ap.add_argument("--ttl", type=int, default=300)
    ap.add_argument("--budget-s", type=float, default=600.0,
                    help="stop sending after this many seconds (status incomplete)")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="per-message timeout")
    a = ap.parse_args()

    host, port = a.server.rsplit(":", 1)
    port = int(port)
    zone = dns.name.from_text(a.zone)
    kname, secret = read_key(a.key_file)
    keyring = dns.tsigkeyring.from_text({kname: secret})
    keyname = dns.name.from_text(kname)

    rcodes = collections.Counter()
    ok = sent = 0
    status = "ok"
    err = ""
    n_msgs = (a.records + a.batch - 1) // a.batch
    sock = socket.create_connection((host, port), timeout=a.timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    deadline = t0 + a.budget_s
    try:
        for m in range(n_msgs):
            if time.perf_counter() > deadline:
                status = "incomplete"
                break
            up = dns.update.UpdateMessage(zone, keyring=keyring, keyname=keyname,
                                          keyalgorithm=dns.tsig.HMAC_SHA256)
            for i in range(m * a.batch, min((m + 1) * a.batch, a.records)):
                x = i + 1
                up.add("%s%d" % (a.prefix, i), a.ttl, "A",
                       "10.%d.%d.%d" % ((x >> 16) & 255, (x >> 8) & 255, x & 255))
            dns.query.send_tcp(sock, up, time.time() + a.timeout_s)
            sent += 1
            r, _ = dns.query.receive_tcp(sock, time.time() + a.timeout_s,
                                         keyring=keyring, request_mac=up.mac)
            rc = r.rcode()
            rcodes[dns.rcode.to_text(rc)] += 1
            if rc == dns.rcode.NOERROR:
                ok += 1
    except Exception as e:  # connection closed, timeout, bad TSIG...
        status = "error"
        err = "%s: %s" % (type(e).__name__, str(e).replace(" ", "_")[:120])
    secs = time.perf_counter() - t0
    sock.close()
    ok_records = a.records if ok == n_msgs else ok * a.batch
    # right after the last acknowledgement: the serial, then how long until
    # the last record sent is answered (an acknowledged change not yet served
    # shows here), then the serial again
    t_end = time.perf_counter()
    serial_at_ack = soa_serial(host, port, zone)
    last_vis = -1.0
    if sent:
        i = min(sent * a.batch, a.records) - 1
        x = i + 1
        want = "10.%d.%d.%d" % ((x >> 16) & 255, (x >> 8) & 255, x & 255)
        q = dns.message.make_query(dns.name.from_text("%s%d" % (a.prefix, i), zone), "A")
        while time.perf_counter() - t_end < 10:
            try:
                r = dns.query.udp(q, host, port=port, timeout=1.0)
                if any(rd.address == want for rr in r.answer if rr.rdtype == dns.rdatatype.A for rd in rr):
                    last_vis = (time.perf_counter() - t_end) * 1e3
                    break
            except Exception:
                pass
            time.sleep(0.0002)
    serial = soa_serial(host, port, zone)
    errors = (n_msgs - ok)
    if status == "ok" and errors:
        status = "error"
    fields = [
        ("records", a.records), ("batch", a.batch), ("messages", n_msgs), ("sent", sent),
        ("ok_messages", ok), ("seconds", "%.3f" % secs),
        ("updates_per_s", "%.0f" % (ok_records / secs if secs > 0 else 0)),
        ("msgs_per_s", "%.0f" % (ok / secs if secs > 0 else 0)),
        ("serial_at_ack", serial_at_ack if serial_at_ack is not None else "none"),
        ("last_visible_ms", "%.2f" % last_vis),
        ("serial", serial if serial is not None else "none"),
        ("errors", errors),
        ("rcodes", ",".join("%s:%d" % kv for kv in sorted(rcodes.items())) or "none"),
        ("status", status),
    ]
    if err:
        fields.append(("error", err))
    print(" ".join("%s=%s" % kv for kv in fields))
    sys.exit(0 if status == "ok" else 1)


if __name__ == "__main__":
    main()
