#!/usr/bin/python3
"""bench/update_batches.d/secondary.py -- UPDATE acknowledged -> secondary answers.

One sample: a TSIG-signed UPDATE adding "P<i>.ZONE. 300 A 10.x.y.z" is sent to
the primary over a kept-open TCP connection; t_ack = its NOERROR response
read. Then the secondary is asked "P<i>.ZONE. A" over UDP until an answer
carries the new address (t_vis): polled every --poll-ms (0.5 ms; each poll is
one query/response round trip, so the resolution is ~0.6 ms). Sample =
t_vis - t_ack. Samples follow one another (the next UPDATE is sent once the
previous record is visible), optionally --gap-ms apart.

  secondary.py --primary 127.0.0.1:P --secondary 127.0.0.1:S --zone Z. --key-file F
               --samples N [--timeout-s 10] [--budget-s 600] [--prefix p] [--out FILE]

--validate (a signed zone): once the clock stopped, the answer is asked
again with DO=1 and its RRSIG checked against the zone's DNSKEY RRset (read
from the secondary at start) with dnspython; a sample whose answer does
not validate counts as an error, and the summary says validated=N/M.

--out gets "i ack_ms visible_ms status" per sample; stdout one summary line
of key=value: samples, ok, timeouts, errors, p50_ms, p90_ms, p99_ms, max_ms,
ack_p50_ms, ack_p99_ms (validated with --validate).
"""
import argparse
import re
import socket
import sys
import time

import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update


def read_key(path):
    text = open(path).read()
    return re.search(r'key\s+"([^"]+)"', text).group(1), re.search(r'secret\s+"([^"]+)"', text).group(1)


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[int(round(p * (len(v) - 1)))]


def check_signed(name, host, port, zone, dnskeys):
    """"ok" when the secondary's A RRset for name comes with an RRSIG that
    validates against the zone's DNSKEYs, else why not."""
    import dns.dnssec
    try:
        r = dns.query.udp(dns.message.make_query(name, "A", want_dnssec=True), host,
                          port=port, timeout=2.0)
        rrset = r.get_rrset(r.answer, name, dns.rdataclass.IN, dns.rdatatype.A)
        sigs = r.get_rrset(r.answer, name, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                           dns.rdatatype.A)
        if rrset is None or sigs is None:
            return "unsigned"
        dns.dnssec.validate(rrset, sigs, {zone: dnskeys})
        return "ok"
    except Exception as e:   # noqa: BLE001 - a sample's outcome
        return "invalid_" + type(e).__name__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--primary", required=True)
    ap.add_argument("--secondary", required=True)
    ap.add_argument("--zone", required=True)
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--budget-s", type=float, default=600.0)
    ap.add_argument("--poll-ms", type=float, default=0.5)
    ap.add_argument("--gap-ms", type=float, default=0.0)
    ap.add_argument("--prefix", default="s")
    ap.add_argument("--out")
    ap.add_argument("--validate", action="store_true")
    a = ap.parse_args()

    ph, pp = a.primary.rsplit(":", 1)
    sh, sp = a.secondary.rsplit(":", 1)
    pp, sp = int(pp), int(sp)
    zone = dns.name.from_text(a.zone)
    kname, secret = read_key(a.key_file)
    keyring = dns.tsigkeyring.from_text({kname: secret})
    keyname = dns.name.from_text(kname)

    tcp = None
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dnskeys = None
    validated = 0
    if a.validate:
        r = dns.query.tcp(dns.message.make_query(zone, "DNSKEY", want_dnssec=True), sh,
                          port=sp, timeout=a.timeout_s)
        dnskeys = r.get_rrset(r.answer, zone, dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        if dnskeys is None:
            print("error=no_DNSKEY_at_the_secondary")
            sys.exit(1)
    out = open(a.out, "w") if a.out else None
    vis, acks = [], []
    timeouts = errors = 0
    t_start = time.monotonic()
    done = 0
    for i in range(a.samples):
        if time.monotonic() - t_start > a.budget_s:
            break
        done += 1
        x = i + 1
        addr = "10.%d.%d.%d" % ((x >> 16) & 255, (x >> 8) & 255, x & 255)
        name = dns.name.from_text("%s%d" % (a.prefix, i), zone)
        up = dns.update.UpdateMessage(zone, keyring=keyring, keyname=keyname,
                                      keyalgorithm=dns.tsig.HMAC_SHA256)
        up.add(name, 300, "A", addr)
        status = "ok"
        ack_ms = vis_ms = float("nan")
        try:
            if tcp is None:
                tcp = socket.create_connection((ph, pp), timeout=a.timeout_s)
                tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t0 = time.monotonic()
            dns.query.send_tcp(tcp, up, time.time() + a.timeout_s)
            r, _ = dns.query.receive_tcp(tcp, time.time() + a.timeout_s, keyring=keyring,
                                         request_mac=up.mac)
            t_ack = time.monotonic()
            ack_ms = (t_ack - t0) * 1e3
            if r.rcode() != dns.rcode.NOERROR:
                status = "rcode_" + dns.rcode.to_text(r.rcode())
        except Exception as e:
            status = "error_" + type(e).__name__
            if tcp is not None:
                tcp.close()
            tcp = None
        if status == "ok":
            acks.append(ack_ms)
            q = dns.message.make_query(name, "A")
            deadline = t_ack + a.timeout_s
            while True:
                try:
                    resp = dns.query.udp(q, sh, port=sp, timeout=1.0, sock=udp)
                    if any(rr.rdtype == dns.rdatatype.A and any(rd.address == addr for rd in rr)
                           for rr in resp.answer):
                        vis_ms = (time.monotonic() - t_ack) * 1e3
                        break
                except dns.exception.Timeout:
                    pass
                except Exception:
                    pass
                if time.monotonic() > deadline:
                    status = "timeout"
                    break
                time.sleep(a.poll_ms / 1e3)
        if status == "ok" and a.validate:
            status = check_signed(name, sh, sp, zone, dnskeys)
            validated += status == "ok"
        if status == "ok":
            vis.append(vis_ms)
        elif status == "timeout":
            timeouts += 1
        else:
            errors += 1
        if out:
            out.write("%d %.3f %.3f %s\n" % (i, ack_ms, vis_ms, status))
            out.flush()
        if a.gap_ms:
            time.sleep(a.gap_ms / 1e3)
    print("samples=%d ok=%d timeouts=%d errors=%d p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f "
          "min_ms=%.2f ack_p50_ms=%.2f ack_p99_ms=%.2f seconds=%.1f%s" % (
              done, len(vis), timeouts, errors, pct(vis, .5), pct(vis, .9), pct(vis, .99),
              max(vis) if vis else float("nan"), min(vis) if vis else float("nan"),
              pct(acks, .5), pct(acks, .99), time.monotonic() - t_start,
              " validated=%d/%d" % (validated, done) if a.validate else ""))
    sys.exit(0 if vis and not errors and not timeouts else 1)


if __name__ == "__main__":
    main()
