#!/usr/bin/python3
"""Check that a server's DO=1 answers are signed and that the signatures validate.

Usage: validate.py PORT ZONE QUERYFILE [--count N] [--expect signed|unsigned]
                   [--failures FILE] [--timeout S]

Sends the first N queries of QUERYFILE ("name type" lines) to 127.0.0.1:PORT
over UDP with DO=1 (TCP when truncated), takes the zone's DNSKEY RRset (it
must validate with itself), and for every answer:
  signed:   every RRset of the answer and authority sections must carry an
            RRSIG by a key of the DNSKEY set that validates now (dnspython);
            the NS set of a referral (no AA flag) is exempt (RFC 4035 3.1.4);
            a name that does not exist must come with a signed NSEC.
  unsigned: no RRSIG, NSEC or DNSKEY anywhere in the response.
Prints one summary line:
  "ok|FAIL queries=Q answered=A rrsets=R validated=V unsigned=U bad=B
   servfail=F nsec=N no_answer=T rcodes=..."
and exits 1 when anything failed. Details of the failures go to FILE.
"""
import argparse
import collections
import sys
import time

import dns.dnssec
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype


def ask(port, qname, qtype, timeout):
    q = dns.message.make_query(qname, qtype, want_dnssec=True, payload=1232)
    q.flags &= ~dns.flags.RD
    r = dns.query.udp(q, "127.0.0.1", port=port, timeout=timeout)
    if r.flags & dns.flags.TC:
        r = dns.query.tcp(q, "127.0.0.1", port=port, timeout=timeout)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port", type=int)
    ap.add_argument("zone")
    ap.add_argument("queries")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--expect", choices=("signed", "unsigned"), default="signed")
    ap.add_argument("--failures", default=None)
    ap.add_argument("--timeout", type=float, default=2.0)
    a = ap.parse_args()
    zone = dns.name.from_text(a.zone)
    fails = []
    st = collections.Counter()
    rcodes = collections.Counter()
    now = time.time()

    keys = None
    try:
        r = ask(a.port, zone, "DNSKEY", a.timeout)
        dnskey = r.get_rrset(r.answer, zone, dns.rdataclass.IN, dns.rdatatype.DNSKEY)
        if a.expect == "signed":
            sig = r.get_rrset(r.answer, zone, dns.rdataclass.IN, dns.rdatatype.RRSIG,
                              dns.rdatatype.DNSKEY)
            if dnskey is None or sig is None:
                fails.append("DNSKEY: missing DNSKEY or its RRSIG:\n%s" % r)
            else:
                keys = {zone: dnskey}
                dns.dnssec.validate(dnskey, sig, keys, now=now)
        elif dnskey is not None:
            fails.append("DNSKEY present in an unsigned zone:\n%s" % r)
    except Exception as e:  # noqa: BLE001 - report anything
        fails.append("DNSKEY: %s: %s" % (type(e).__name__, e))
        keys = None

    lines = []
    with open(a.queries) as f:
        for line in f:
            if line.strip():
                lines.append(line.split()[:2])
            if len(lines) >= a.count:
                break
    for qname, qtype in lines:
        st["queries"] += 1
        try:
            r = ask(a.port, qname, qtype, a.timeout)
        except Exception as e:  # noqa: BLE001
            st["no_answer"] += 1
            fails.append("%s %s: no answer (%s)" % (qname, qtype, e))
            continue
        st["answered"] += 1
        rcodes[dns.rcode.to_text(r.rcode())] += 1
        aa = bool(r.flags & dns.flags.AA)
        if r.rcode() == dns.rcode.SERVFAIL:
            st["servfail"] += 1
            fails.append("%s %s: SERVFAIL:\n%s" % (qname, qtype, r))
        if a.expect == "unsigned":
            for sec in (r.answer, r.authority, r.additional):
                for rr in sec:
                    if rr.rdtype in (dns.rdatatype.RRSIG, dns.rdatatype.NSEC, dns.rdatatype.DNSKEY):
                        st["bad"] += 1
                        fails.append("%s %s: DNSSEC record in an unsigned answer: %s" % (qname, qtype, rr))
            continue
        q_has_nsec = False
        for secname, sec in (("answer", r.answer), ("authority", r.authority)):
            sigs = {}
            for rr in sec:
                if rr.rdtype == dns.rdatatype.RRSIG:
                    sigs[(rr.name, rr.covers)] = rr
            for rr in sec:
                if rr.rdtype == dns.rdatatype.RRSIG:
                    continue
                if rr.rdtype == dns.rdatatype.NSEC:
                    q_has_nsec = True
                    st["nsec"] += 1
                if secname == "authority" and rr.rdtype == dns.rdatatype.NS and not aa:
                    continue        # referral NS set: not authoritative, not signed
                st["rrsets"] += 1
                sig = sigs.get((rr.name, rr.rdtype))
                if sig is None:
                    st["unsigned"] += 1
                    fails.append("%s %s: %s %s %s has no RRSIG" % (
                        qname, qtype, secname, rr.name, dns.rdatatype.to_text(rr.rdtype)))
                    continue
                if keys is None:
                    continue
                try:
                    dns.dnssec.validate(rr, sig, keys, now=now)
                    st["validated"] += 1
                except Exception as e:  # noqa: BLE001
                    st["bad"] += 1
                    fails.append("%s %s: %s %s %s: RRSIG does not validate (%s)\n%s" % (
                        qname, qtype, secname, rr.name, dns.rdatatype.to_text(rr.rdtype), e, r))
        if (r.rcode() == dns.rcode.NXDOMAIN or (aa and not r.answer)) and not q_has_nsec:
            st["bad"] += 1
            fails.append("%s %s: negative answer without NSEC:\n%s" % (qname, qtype, r))
    ok = not fails
    print("%s queries=%d answered=%d rrsets=%d validated=%d unsigned=%d bad=%d servfail=%d nsec=%d "
          "no_answer=%d rcodes=%s" % (
        "ok" if ok else "FAIL", st["queries"], st["answered"], st["rrsets"], st["validated"],
        st["unsigned"], st["bad"], st["servfail"], st["nsec"], st["no_answer"],
        ",".join("%s:%d" % kv for kv in sorted(rcodes.items()))))
    if a.failures:
        with open(a.failures, "w") as f:
            f.write("\n\n".join(fails) + ("\n" if fails else ""))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
