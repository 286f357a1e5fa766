#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes seeds with every octet value at every position of a name into
the corpora of the targets that read names: query, update, api_request
and zonefile (fuzz/corpus/TARGET/names-*; rerun to regenerate them, old
ones are removed first).

A name here has three labels of five octets above a name of the fuzz zone
(fuzz_zone.h: example., and below its wildcard, delegation, DNAME and
empty non-terminal), so it has nine slots: the first, middle and last
octet of the first, middle and last label. Name k of a set puts octet
(k + 57 * slot) mod 256 in each slot: over k = 0..255 every octet lands
in every slot exactly once, and each name mixes nine different octets.
A query holds one name, so the query target gets 256 seeds; the other
formats hold many names, so their seeds carry 16 names each (16 seeds
per set).
"""
import json
import os
import struct
import urllib.parse

import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.update

HERE = os.path.dirname(os.path.abspath(__file__))
ZONE = dns.name.from_text("example.")
SUFFIXES = ["example.", "wild.example.", "sub.example.", "dn.example.",
            "b.ent.example.", "ns.example."]
SLOTS = 9
PER_SEED = 16


def octets(k):
    """The nine octets of name k, one per slot."""
    return [(k + 57 * slot) % 256 for slot in range(SLOTS)]


def name(k, variant=0):
    """Name k: slot 3 * label + position holds octets(k)[slot]; variant
    picks another suffix (for rdata names that differ from the owner)."""
    o = octets(k)
    labels = []
    for label in range(3):
        first, middle, last = o[3 * label:3 * label + 3]
        labels.append(bytes([first, ord("m"), middle, ord("m"), last]))
    suffix = dns.name.from_text(SUFFIXES[(k + variant) % len(SUFFIXES)])
    return dns.name.Name(labels + list(suffix.labels))


def text(n):
    """Presentation form with every octet other than letters, digits and
    '-' escaped (\\DDD), which every master-file reader takes."""
    out = []
    for label in n.labels[:-1]:
        out.append("".join(chr(c) if chr(c).isalnum() and c < 0x80 or c == 0x2d
                           else "\\%03d" % c for c in label))
    return ".".join(out) + "."


def clear(target):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("names-"):
            os.unlink(os.path.join(d, f))
    return d


def write(d, fname, data):
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)


def queries():
    d = clear("query")
    types = ["A", "TXT", "MX", "ANY", "AAAA", "NS", "DS", "CNAME"]
    for k in range(256):
        q = dns.message.make_query(name(k), types[k % len(types)],
                                   use_edns=(k % 3 != 0), want_dnssec=(k % 2 == 0))
        write(d, "names-q%03d" % k, q.to_wire())


def groups():
    for g in range(256 // PER_SEED):
        yield g, range(g * PER_SEED, (g + 1) * PER_SEED)


def updates():
    """Adds at the names (TXT, and MX and CNAME whose targets are names of
    the set too), deletes of some, and a prerequisite on one."""
    d = clear("update")
    for g, ks in groups():
        u = dns.update.UpdateMessage(ZONE)
        ks = list(ks)
        u.present(name(ks[0], 1))
        for i, k in enumerate(ks):
            owner = name(k)
            kind = i % 4
            if kind == 0:
                u.add(owner, 300, "TXT", '"x"')
            elif kind == 1:
                u.add(owner, 300, dns.rdata.from_text(
                    "IN", "MX", "10 " + text(name(k, 1))))
            elif kind == 2:
                u.add(owner, 300, dns.rdata.from_text(
                    "IN", "CNAME", text(name(k, 2))))
            else:
                u.delete(owner)
        write(d, "names-u%02d" % g, u.to_wire())


def api_requests():
    """Batches of records at the names (as the API writes names: text
    without the final dot), and reads filtered by a name."""
    d = clear("api_request")
    base = "/client/v4/zones/00000000000000000000000000000001/dns_records"
    for g, ks in groups():
        posts = []
        for i, k in enumerate(ks):
            owner = text(name(k))[:-1]
            if i % 3 == 0:
                posts.append({"name": owner, "type": "TXT", "content": "x"})
            elif i % 3 == 1:
                posts.append({"name": owner, "type": "MX", "priority": 10,
                              "content": text(name(k, 1))[:-1]})
            else:
                posts.append({"name": owner, "type": "CNAME",
                              "content": text(name(k, 2))})
        body = json.dumps({"posts": posts}).encode()
        write(d, "names-b%02d" % g, b"POST\n%s/batch\n\n%s" % (base.encode(), body))
        k = ks[0]
        url = "%s?name=%s" % (base, urllib.parse.quote(text(name(k))[:-1], safe=""))
        write(d, "names-g%02d" % g, b"GET\n%s\n\n" % url.encode())


def zonefiles():
    """Records at the names with CNAME and MX targets among them, escaped
    as libknot writes names; and the same names with their printable
    octets raw, which the scanner must take or refuse cleanly."""
    d = clear("zonefile")
    for g, ks in groups():
        escaped, raw = [b"$TTL 300\n"], [b"$TTL 300\n"]
        for i, k in enumerate(ks):
            owner = name(k)
            target = text(name(k, 1)).encode()
            rdata = [b'TXT "x"', b"CNAME " + target, b"MX 10 " + target][i % 3]
            escaped.append(text(owner).encode() + b" " + rdata + b"\n")
            raw_owner = b".".join(bytes(c if 0x20 < c < 0x7f else 0x61 for c in label)
                                  for label in owner.labels[:-1]) + b"."
            raw.append(raw_owner + b" " + rdata + b"\n")
        write(d, "names-z%02d" % g, b"".join(escaped))
        write(d, "names-r%02d" % g, b"".join(raw))


if __name__ == "__main__":
    queries()
    updates()
    api_requests()
    zonefiles()
