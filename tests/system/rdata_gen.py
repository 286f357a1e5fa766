"""Random records for the round-trip property (test_roundtrip.py, bench/roundtrip).

Every record is made in wire form, well-formed for its type by the rules
zonecast checks (src/dns/rdata.c) and the RFCs it cites, so that the API
and UPDATE must accept it; its presentation text for the API comes from
dnspython (an independent writer) or, at random, RFC 3597's generic form.
Owner names and names inside rdata hold any octet, the ones that master
files escape ('.', '\\', '"', ';', '(', ')', ' ', '@', '$') and 0x00, 0x01,
0x7f, 0xff at the start, middle and end of labels.
"""

import base64
import ipaddress
import struct

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype

# Octets that stress the text forms, and the position of one in a label.
SPECIAL = b'\x00\x01.\\";() @$*[\t\x7f\xff'

# Types the API takes (api/record_fields.c refuses SOA and the DNSSEC types
# the signer makes), with unknown ones in each range RFC 6895 leaves open.
API_TYPES = [
    "A", "NS", "CNAME", "PTR", "HINFO", "MINFO", "MX", "TXT", "RP", "AFSDB",
    "RT", "SIG", "KEY", "AAAA", "LOC", "SRV", "NAPTR", "KX", "CERT", "DNAME",
    "APL", "DS", "SSHFP", "IPSECKEY", "DHCID", "TLSA", "SMIMEA", "OPENPGPKEY",
    "CSYNC", "ZONEMD", "SVCB", "HTTPS", "SPF", "NID", "L32", "L64", "LP",
    "EUI48", "EUI64", "URI", "CAA", "NULL",
    "TYPE65000", "TYPE65280", "TYPE65534", "TYPE65535", "TYPE300", "TYPE127",
    "TYPE7",
]

# Types whose RRset holds one record (RFC 2181 §10.1, RFC 6672 §2.4).
SINGLETONS = {"CNAME", "DNAME"}


def label(rnd, min_len=1, max_len=12):
    """A label with special octets at chosen positions (first, middle, last)."""
    n = rnd.randint(min_len, max_len)
    out = bytearray(rnd.choice(b"abcXYZ019-_") for _ in range(n))
    for _ in range(rnd.randint(0, 3)):
        pos = rnd.choice((0, n // 2, n - 1, rnd.randrange(n)))
        out[pos] = rnd.choice(SPECIAL) if rnd.random() < 0.7 else rnd.randrange(256)
    return bytes(out)


def name(rnd, origin=None, max_labels=3):
    labels = [label(rnd) for _ in range(rnd.randint(0 if origin else 1, max_labels))]
    base = list(origin.labels) if origin is not None else [b"example", b""]
    if origin is None and rnd.random() < 0.1:
        return dns.name.root
    return dns.name.Name(labels + base)


def wname(n):
    return n.to_wire()


def string(rnd, max_len=40):
    n = rnd.choice((0, 1, rnd.randint(0, max_len), rnd.randint(0, 255))) \
        if rnd.random() < 0.3 else rnd.randint(0, max_len)
    return bytes(rnd.choice(SPECIAL + b"abc") if rnd.random() < 0.5 else rnd.randrange(256)
                 for _ in range(n))


def cstr(data):
    return bytes([len(data)]) + data


def rbytes(rnd, lo, hi):
    return bytes(rnd.randrange(256) for _ in range(rnd.randint(lo, hi)))


def bitmap(rnd, avoid=(10, 24)):
    """An RFC 4034 §4.1.2 type bitmap (NULL and SIG left out: libzscanner
    has no name for them in a bitmap)."""
    types = sorted({t for t in (rnd.choice((1, 2, 5, 6, 15, 16, 28, 33, 46, 99, 257, 300,
                                            1000, 65000, 65534))
                                for _ in range(rnd.randint(0, 6))) if t not in avoid})
    out = b""
    for window in sorted({t >> 8 for t in types}):
        bits = bytearray(32)
        for t in types:
            if t >> 8 == window:
                bits[(t & 0xff) // 8] |= 0x80 >> (t % 8)
        length = max(i for i in range(32) if bits[i]) + 1
        out += bytes([window, length]) + bytes(bits[:length])
    return out


def loc(rnd):
    def size():
        return 0 if rnd.random() < 0.1 else rnd.randint(1, 9) << 4 | rnd.randint(0, 9)
    lat = (1 << 31) + rnd.randint(-90 * 3600000, 90 * 3600000)
    lon = (1 << 31) + rnd.randint(-180 * 3600000, 180 * 3600000)
    alt = rnd.randint(0, 0xffffffff)
    return struct.pack("!BBBBIII", 0, size(), size(), size(), lat, lon, alt)


def apl(rnd):
    out = b""
    for _ in range(rnd.randint(0, 3)):
        family = rnd.choice((1, 2))
        size = 4 if family == 1 else 16
        prefix = rnd.randint(0, size * 8)
        addr = rbytes(rnd, size, size)[:(prefix + 7) // 8].rstrip(b"\0")
        out += struct.pack("!HBB", family, prefix, len(addr) | (0x80 if rnd.random() < 0.3 else 0))
        out += addr
    return out


def svcb(rnd):
    params = {}
    if rnd.random() < 0.5:
        # Protocol ids as registered ones look ("h2", "http/1.1"):
        # libknot writes some others in a form libzscanner reads otherwise.
        params[1] = b"".join(cstr(rnd.choice((b"h2", b"h3", b"http/1.1", b"dot", b"xmpp")) +
                                  bytes(rnd.choice(b"abc0123456789") for _ in range(rnd.randint(0, 3))))
                             for _ in range(rnd.randint(1, 3)))
        if rnd.random() < 0.3:
            params[2] = b""
    if rnd.random() < 0.4:
        params[3] = struct.pack("!H", rnd.randrange(65536))
    if rnd.random() < 0.3:
        params[4] = rbytes(rnd, 4, 4) * rnd.randint(1, 2)
    if rnd.random() < 0.3:
        params[5] = rbytes(rnd, 1, 20)
    if rnd.random() < 0.3:
        params[6] = rbytes(rnd, 16, 16) * rnd.randint(1, 2)
    if rnd.random() < 0.2:
        params[7] = rnd.choice((b"/dns-query{?dns}", b"/q{?dns,x}", b"/a/b%41{?dns}"))
    for _ in range(rnd.randint(0, 2)):
        params[rnd.choice((8, 9, 100, 65000, 65534))] = string(rnd, 10)
    if params and rnd.random() < 0.3:
        keys = [k for k in params if k not in (0, 2)]
        if keys:
            params[0] = b"".join(struct.pack("!H", k) for k in sorted(rnd.sample(keys, 1)))
    out = struct.pack("!H", rnd.randint(1, 3) if params else rnd.randint(0, 3))
    out += wname(name(rnd))
    for k in sorted(params):
        out += struct.pack("!HH", k, len(params[k])) + params[k]
    return out


def naptr(rnd):
    regexp = b""
    if rnd.random() < 0.5:
        d = rnd.choice(b"!/#~")
        regexp = bytes([d]) + b"^.*$" + bytes([d]) + rnd.choice(
            (b"sip:x@y", b"mailto:a@b", b"\\\\1")) + bytes([d]) + rnd.choice((b"", b"i"))
    return (struct.pack("!HH", rnd.randrange(65536), rnd.randrange(65536)) +
            cstr(rnd.choice((b"", b"u", b"S", b"a"))) + cstr(string(rnd, 10)) + cstr(regexp) +
            wname(name(rnd)))


def rdata_wire(rnd, rtype):
    """Well-formed rdata of type rtype (a mnemonic or TYPEnnn)."""
    u16 = lambda: struct.pack("!H", rnd.randrange(65536))
    t = rtype
    if t == "A":
        return rbytes(rnd, 4, 4)
    if t == "AAAA":
        return bytes(rnd.randrange(256) if rnd.random() < 0.5 else 0 for _ in range(16))
    if t in ("NS", "CNAME", "PTR", "DNAME", "TYPE7"):  # TYPE7: MB (RFC 1035 §3.3.3).
        return wname(name(rnd))
    if t in ("MX", "KX", "RT", "AFSDB", "LP"):
        return u16() + wname(name(rnd))
    if t in ("MINFO", "RP"):
        return wname(name(rnd)) + wname(name(rnd))
    if t == "HINFO":
        return cstr(string(rnd)) + cstr(string(rnd))
    if t in ("TXT", "SPF"):
        return b"".join(cstr(string(rnd)) for _ in range(rnd.randint(1, 4)))
    if t == "SRV":
        return u16() + u16() + u16() + wname(name(rnd))
    if t == "NAPTR":
        return naptr(rnd)
    if t == "SIG":
        return rbytes(rnd, 18, 18) + wname(name(rnd)) + rbytes(rnd, 1, 30)
    if t in ("KEY", "DNSKEY"):
        flags = rnd.randrange(65536)
        if t == "KEY" and flags & 0xc000 == 0xc000:  # "No key" (RFC 2535 §3.1.2).
            return struct.pack("!HBB", flags, 3, rnd.choice((8, 13, 15)))
        return struct.pack("!HBB", flags, 3, rnd.choice((8, 13, 15))) + rbytes(rnd, 1, 40)
    if t == "LOC":
        return loc(rnd)
    if t == "CERT":
        return u16() + u16() + bytes([rnd.randrange(256)]) + rbytes(rnd, 1, 40)
    if t == "APL":
        return apl(rnd)
    if t == "DS":
        digest_type = rnd.choice((1, 2, 4, 5, 200))
        size = {1: 20, 2: 32, 4: 48}.get(digest_type, rnd.randint(1, 40))
        return u16() + bytes([rnd.choice((8, 13)), digest_type]) + rbytes(rnd, size, size)
    if t == "SSHFP":
        fp_type = rnd.choice((1, 2, 3))
        size = {1: 20, 2: 32}.get(fp_type, rnd.randint(1, 40))
        return bytes([rnd.randint(1, 4), fp_type]) + rbytes(rnd, size, size)
    if t == "IPSECKEY":
        gw_type = rnd.randint(0, 3)
        gw = {0: b"", 1: rbytes(rnd, 4, 4), 2: rbytes(rnd, 16, 16)}.get(gw_type) \
            if gw_type != 3 else wname(name(rnd))
        return bytes([rnd.randrange(256), gw_type, rnd.randint(1, 3)]) + gw + rbytes(rnd, 1, 40)
    if t in ("DHCID", "OPENPGPKEY"):
        return rbytes(rnd, 1, 40)
    if t in ("TLSA", "SMIMEA"):
        return bytes([rnd.randint(0, 3), rnd.randint(0, 1), rnd.randint(0, 2)]) + rbytes(rnd, 1, 40)
    if t == "CSYNC":
        return struct.pack("!IH", rnd.randrange(1 << 32), rnd.randint(0, 3)) + bitmap(rnd)
    if t == "ZONEMD":
        hash_alg = rnd.choice((1, 2, 240))
        size = {1: 48, 2: 64}.get(hash_alg, rnd.randint(12, 40))
        return struct.pack("!IBB", rnd.randrange(1 << 32), 1, hash_alg) + rbytes(rnd, size, size)
    if t in ("SVCB", "HTTPS"):
        return svcb(rnd)
    if t in ("NID", "L64"):
        return u16() + rbytes(rnd, 8, 8)
    if t == "L32":
        return u16() + rbytes(rnd, 4, 4)
    if t == "EUI48":
        return rbytes(rnd, 6, 6)
    if t == "EUI64":
        return rbytes(rnd, 8, 8)
    if t == "URI":
        return u16() + u16() + string(rnd, 30)
    if t == "CAA":
        tag = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyzABCXYZ0123456789")
                    for _ in range(rnd.randint(1, 15)))
        if rnd.random() < 0.5:
            tag = rnd.choice((b"issue", b"issuewild", b"iodef", b"ISSUE", b"tbs"))
        return bytes([rnd.choice((0, 128))]) + cstr(tag) + string(rnd)
    if t == "NULL":  # Opaque, but not empty (libknot's parser).
        return rbytes(rnd, 1, 30)
    return rbytes(rnd, 0, 30)  # Unknown types: opaque.


def rdtype(t):
    return dns.rdatatype.from_text(t)


def to_rdata(t, wire):
    """A dnspython rdata of the wire (GenericRdata where dnspython has no
    class for the type or reads the wire otherwise)."""
    rt = rdtype(t)
    try:
        rd = dns.rdata.from_wire(dns.rdataclass.IN, rt, wire, 0, len(wire))
        if rd.to_wire() == wire:
            return rd
    except Exception:  # dnspython refuses: keep the octets as they are
        pass
    return dns.rdata.GenericRdata(dns.rdataclass.IN, rt, wire)


def generic_text(wire):
    return "\\# %d %s" % (len(wire), wire.hex()) if wire else "\\# 0"


# libzscanner reads letters, digits and "-_/*" raw in names and wants any
# other punctuation escaped (as libknot writes names); dnspython escapes
# only '"().;\\@$'. Its writer escapes the rest while we make content.
_ZSCANNER_ESCAPED = bytes(c for c in range(0x21, 0x7f)
                          if not (chr(c).isalnum() or chr(c) in "-_/*"))


def dnspython_text(rd):
    saved = dns.name._escaped, dns.name._escaped_text
    dns.name._escaped = _ZSCANNER_ESCAPED
    dns.name._escaped_text = _ZSCANNER_ESCAPED.decode()
    try:
        return rd.to_text()
    finally:
        dns.name._escaped, dns.name._escaped_text = saved


def presentation(rnd, t, wire):
    """The API's content for a record: dnspython's text, or generic."""
    rd = to_rdata(t, wire)
    if isinstance(rd, dns.rdata.GenericRdata) or t == "CERT":
        if t == "MINFO":
            n1, n2 = dns.name.from_wire(wire, 0)[0], None
            n2 = dns.name.from_wire(wire, len(n1.to_wire()))[0]
            return "%s %s" % (dnspython_text(n1), dnspython_text(n2))
        if t == "CERT":  # dnspython writes mnemonics libzscanner lacks.
            ctype, tag, alg = struct.unpack("!HHB", wire[:5])
            return "%d %d %d %s" % (ctype, tag, alg, base64.b64encode(wire[5:]).decode())
        if t == "KEY" and len(wire) > 4:
            flags, proto, alg = struct.unpack("!HBB", wire[:4])
            return "%d %d %d %s" % (flags, proto, alg, base64.b64encode(wire[4:]).decode())
        return generic_text(wire)
    if rnd.random() < 0.15:
        return generic_text(wire)
    try:
        text = dnspython_text(rd)
        # dnspython's own reading of its text (URI targets and the like
        # are written without escapes): where it is not exact, generic.
        back = dns.rdata.from_text(dns.rdataclass.IN, rd.rdtype, text)
        raw = any(ord(c) < 0x20 or ord(c) > 0x7e for c in text)
        return text if back.to_wire() == rd.to_wire() and not raw else generic_text(wire)
    except Exception:
        return generic_text(wire)


def api_fields(rnd, t, wire, name_text, ttl):
    """The JSON body of an API write: Cloudflare's shape, with MX/SRV/URI
    priority split off and name targets without their final dot at times,
    and plain (unquoted) TXT for printable single strings at times."""
    content = presentation(rnd, t, wire)
    body = {"type": t, "name": name_text, "ttl": ttl}
    if t in ("MX", "SRV", "URI") and not content.startswith("\\#") and rnd.random() < 0.5:
        prio, content = content.split(" ", 1)
        body["priority"] = int(prio)
    if (t in ("CNAME", "NS", "PTR", "DNAME", "MX", "SRV") and content.endswith(".")
            and content != "." and not content.startswith("\\#") and rnd.random() < 0.5):
        content = content[:-1]
    if t == "TXT" and wire[0] == len(wire) - 1 and rnd.random() < 0.5:
        text = wire[1:]
        if text and text[0:1] != b'"' and all(0x20 <= c < 0x7f for c in text):
            content = text.decode()
    body["content"] = content
    return body


def api_name(n):
    return n.to_text().rstrip(".") if n != dns.name.root else "."
