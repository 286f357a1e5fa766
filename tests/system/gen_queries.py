"""Deterministic query corpus for the differential test (zonecast vs knotd).

Reads the zone files in zones/ and produces, from a fixed seed, a list of
`Query` objects: every existing name and empty non-terminal crossed with many
QTYPEs, plus random names that do not exist, that fall under wildcards, under
zone cuts and under DNAMEs, DS at cuts and apexes, ANY, large RRsets that
truncate, names outside every zone, near-maximum-length names and a few odd
QTYPE/QCLASS values. Each query carries its own transport and EDNS variant (no
EDNS = 512 octets, EDNS0 with various payload sizes, DO on/off, RD on/off) and
a 0x20 case-randomized QNAME about half of the time. `Query.wire()` gives the
exact bytes sent to both servers (same message ID, same QNAME case).

Run `/usr/bin/python3 tests/system/gen_queries.py [--count N] [--seed S]` to
print the corpus, one query per line.
"""

import argparse
import random
import sys

import dns.flags
import dns.message
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.zone

try:
    from servers import DEFAULT_ZONES
except ImportError:  # run as a script from another directory
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    from servers import DEFAULT_ZONES

DEFAULT_SEED = 20240101
DEFAULT_COUNT = 12000

# Types crossed with every existing name.
QTYPES = ["A", "AAAA", "NS", "SOA", "CNAME", "DNAME", "MX", "TXT", "SRV", "PTR",
          "HINFO", "CAA", "TLSA", "DS", "NAPTR", "SVCB", "HTTPS", "SSHFP", "LOC",
          "RP", "URI", "SPF", "TYPE65000", "TYPE65001", "TYPE65002", "ANY",
          "RRSIG", "NSEC", "DNSKEY", "NULL"]
COMMON_QTYPES = ["A", "AAAA", "TXT", "MX", "NS", "SOA", "CNAME", "ANY", "DS", "HTTPS"]
ODD_QTYPES = ["MAILA", "MAILB", "TKEY", "NSEC3", "NSEC3PARAM", "CDS", "TYPE0", "TYPE65535"]
OUT_OF_ZONE = ["example.org.", "com.", ".", "test.", "example.com.evil.", "xample.com.",
               "example.co.", "net.", "www.example.org.", "localhost.", "arpa.",
               "1.0.0.127.in-addr.arpa.", "exampleXcom.", "sub-example.com."]
LARGE = ["mid.example.com.", "big.example.com.", "bigtxt.example.com.", "example.com.",
         "_sip._udp.example.com.", "types.example.com."]
PAYLOADS = [512, 1232, 1232, 1232, 1400, 4096, 65535]


class Query:
    __slots__ = ("idx", "qname", "qtype", "qclass", "edns", "payload", "do", "rd",
                 "tcp", "category")

    def __init__(self, idx, qname, qtype, qclass, edns, payload, do, rd, tcp, category):
        self.idx, self.qname, self.qtype, self.qclass = idx, qname, qtype, qclass
        self.edns, self.payload, self.do, self.rd = edns, payload, do, rd
        self.tcp, self.category = tcp, category

    def message(self):
        q = dns.message.make_query(self.qname, self.qtype, self.qclass,
                                   flags=dns.flags.RD if self.rd else 0, id=self.idx & 0xFFFF)
        if self.edns is None:
            q.use_edns(False)
        else:
            q.use_edns(self.edns, ednsflags=dns.flags.DO if self.do else 0,
                       payload=self.payload)
        return q

    def wire(self):
        return self.message().to_wire()

    def describe(self):
        edns = "noedns" if self.edns is None else "edns%d/%d%s" % (
            self.edns, self.payload, "/DO" if self.do else "")
        cls = "" if self.qclass == dns.rdataclass.IN else dns.rdataclass.to_text(self.qclass) + " "
        return "#%d %s %s%s %s %s%s [%s]" % (
            self.idx, self.qname.to_text(), cls, dns.rdatatype.to_text(self.qtype),
            "tcp" if self.tcp else "udp", edns, " RD" if self.rd else "", self.category)


class ZoneFacts:
    """Names of interest extracted from the zone files."""

    def __init__(self, zones=None):
        zones = zones or DEFAULT_ZONES
        self.apexes, self.names, self.ents = [], set(), set()
        self.wildcard_parents, self.cuts, self.dnames = set(), set(), set()
        for origin, path in zones.items():
            apex = dns.name.from_text(origin)
            self.apexes.append(apex)
            z = dns.zone.from_file(path, origin=apex, relativize=False)
            for name, node in z.nodes.items():
                self.names.add(name)
                types = {rds.rdtype for rds in node.rdatasets}
                if name.is_wild():
                    self.wildcard_parents.add(name.parent())
                if dns.rdatatype.NS in types and name != apex:
                    self.cuts.add(name)
                if dns.rdatatype.DNAME in types:
                    self.dnames.add(name)
                n = name
                while n != apex and len(n) > 1:
                    n = n.parent()
                    self.ents.add(n)
        self.ents -= self.names
        self.apexes.sort()
        for attr in ("names", "ents", "wildcard_parents", "cuts", "dnames"):
            setattr(self, attr, sorted(getattr(self, attr)))


def randomize_case(rng, name):
    labels = []
    for label in name.labels:
        labels.append(bytes(c ^ 0x20 if (65 <= c <= 90 or 97 <= c <= 122) and rng.random() < 0.5
                            else c for c in label))
    return dns.name.Name(labels)


def random_label(rng, lo=1, hi=12):
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
    s = "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))).strip("-")
    return s or "x"


def prepend(rng, base, nlabels=1):
    labels = [random_label(rng) for _ in range(nlabels)]
    try:
        return dns.name.Name([l.encode() for l in labels] + list(base.labels))
    except dns.name.NameTooLong:
        return base


def long_name(rng, base):
    """A name of 250..255 octets under base."""
    labels = list(base.labels)
    while True:
        room = 255 - sum(len(l) + 1 for l in labels) - 1
        if room < 2:
            break
        n = min(63, room - 1)
        labels.insert(0, (random_label(rng, 1, 1) * n).encode()[:n])
    return dns.name.Name(labels)


def generate(seed=DEFAULT_SEED, count=DEFAULT_COUNT, zones=None):
    rng = random.Random(seed)
    facts = ZoneFacts(zones)
    items = []  # (qname, qtype, qclass, category)

    for name in facts.names + facts.ents:
        for t in QTYPES:
            items.append((name, t, "IN", "existing" if name in facts.names else "ent"))
    for name in facts.cuts + facts.apexes:
        items.append((name, "DS", "IN", "ds"))

    generators = [
        (15, "nxdomain", lambda: (prepend(rng, rng.choice(facts.names + facts.apexes)),
                                  rng.choice(COMMON_QTYPES))),
        (15, "wildcard", lambda: (prepend(rng, rng.choice(facts.wildcard_parents), rng.randint(1, 3)),
                                  rng.choice(QTYPES))),
        (10, "below-cut", lambda: (prepend(rng, rng.choice(facts.cuts), rng.randint(1, 2)),
                                   rng.choice(COMMON_QTYPES))),
        (4, "at-cut", lambda: (rng.choice(facts.cuts), rng.choice(QTYPES))),
        (8, "dname", lambda: (prepend(rng, rng.choice(facts.dnames), rng.randint(1, 2)),
                              rng.choice(COMMON_QTYPES))),
        (10, "existing", lambda: (rng.choice(facts.names), rng.choice(QTYPES))),
        (3, "ent", lambda: (rng.choice(facts.ents), rng.choice(COMMON_QTYPES))),
        (5, "out-of-zone", lambda: (prepend(rng, dns.name.from_text(rng.choice(OUT_OF_ZONE)),
                                            rng.randint(0, 1)) if rng.random() < 0.5
                                    else dns.name.from_text(rng.choice(OUT_OF_ZONE)),
                                    rng.choice(COMMON_QTYPES))),
        (1, "long", lambda: (long_name(rng, rng.choice(facts.dnames + facts.wildcard_parents
                                                       + facts.apexes)), rng.choice(COMMON_QTYPES))),
        (3, "large", lambda: (dns.name.from_text(rng.choice(LARGE)), rng.choice(["A", "TXT", "ANY"]))),
        (1, "odd-type", lambda: (rng.choice(facts.names), rng.choice(ODD_QTYPES))),
    ]
    weights = [g[0] for g in generators]
    while len(items) < count:
        _, category, fn = rng.choices(generators, weights)[0]
        name, qtype = fn()
        items.append((name, qtype, "IN", category))
    for _ in range(max(20, count // 400)):  # other classes: REFUSED expected
        items.append((rng.choice(facts.apexes + facts.names), rng.choice(["SOA", "A", "TXT"]),
                      rng.choice(["CH", "HS"]), "class"))

    rng.shuffle(items)
    queries = []
    for idx, (name, qtype, qclass, category) in enumerate(items):
        if rng.random() < 0.5:
            name = randomize_case(rng, name)
        edns = None if rng.random() < 0.25 else 0
        payload = rng.choice(PAYLOADS) if edns is not None else 512
        do = edns is not None and rng.random() < 0.3
        rd = rng.random() < 0.5
        tcp = rng.random() < 0.07
        queries.append(Query(idx, name, dns.rdatatype.from_text(qtype),
                             dns.rdataclass.from_text(qclass), edns, payload, do, rd, tcp,
                             category))
    return queries


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT)
    args = ap.parse_args()
    for q in generate(args.seed, args.count):
        print(q.describe())


if __name__ == "__main__":
    main()
